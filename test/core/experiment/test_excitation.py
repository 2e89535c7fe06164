"""Trajectory checks against limits and papers' tables; excitation criteria and optimisation."""
import json
import math
import time

import numpy as np
import pytest
import yaml

from robot_dynid.errors import DataError, TrajectoryError
from robot_dynid.experiment.excitation import (criterion_and_gradient, optimize_excitation,
                                               random_excitation)
from robot_dynid.experiment.trajectories import CycloidalMove, FourierTrajectory, load_trajectory
from robot_dynid.experiment.trajectory_checks import check_trajectory
from robot_dynid.model.friction import friction_model
from robot_dynid.model.robot_loader import robot_from_dict
from robot_dynid.package_files import find_package_file
from reference_tables import reference_file


def planar_robot(n_joints=2, velocity=3.0, acceleration=10.0):
    """Planar arm of 0.4 m links turned so that gravity acts in its plane."""
    joints = [{"name": f"j{i + 1}", "a": 0.4, "alpha": 0.0, "d": 0.0,
               "position_limits": [-2.5, 2.5], "velocity_limit": velocity,
               "acceleration_limit": acceleration} for i in range(n_joints)]
    return robot_from_dict({"name": "planar", "dh_convention": "standard",
                            "base": {"a": 0.0, "alpha": math.pi / 2, "d": 0.0, "theta": 0.0},
                            "joints": joints})


def walker_robot():
    """The Walker arm has no published model: 7 joints with generous limits."""
    joints = [{"name": f"j{i + 1}", "a": 0.1, "alpha": math.pi / 2, "d": 0.1,
               "position_limits": [-6.5, 6.5], "velocity_limit": 20.0,
               "acceleration_limit": 50.0} for i in range(7)]
    return robot_from_dict({"name": "walker", "dh_convention": "standard", "joints": joints})


def test_thesis_table_4_1_is_within_the_er3a_limits_and_starts_at_rest(er3a_robot):
    robot = er3a_robot
    trajectory = load_trajectory(find_package_file("config", "trajectories", "er3a_table_4_1.yaml"))
    check = check_trajectory(robot, trajectory, dt=0.001, tolerance=1e-3)
    assert check.ok, check.format_table()
    printed = yaml.safe_load(open(reference_file("er3a_thesis.yaml")))["limits"]
    for joint, limits in zip(check.joints, printed):
        low, high = np.radians(limits["position_deg"])
        assert low < joint.q_min < joint.q_max < high
        assert joint.qd_peak < np.radians(limits["velocity_deg_s"])
        assert joint.qdd_peak < np.radians(limits["acceleration_deg_s2"])
        np.testing.assert_allclose(joint.start, 0.0, atol=1e-3)
    # Rounded to 4 decimals, the printed table is not at rest to 1e-6.
    strict = check_trajectory(robot, trajectory, tolerance=1e-6)
    assert {v.kind for v in strict.violations} <= {"start_velocity", "start_acceleration",
                                                   "end_velocity", "end_acceleration"}
    assert not strict.ok


def test_walker_table_1_starts_with_zero_speed_but_not_zero_acceleration():
    printed = yaml.safe_load(open(reference_file("walker_redundant_arm.yaml")))["excitation_table_1"]
    wf = 2 * math.pi / printed["period_s"]
    orders = np.arange(1, 6)[:, None]
    start_speed = np.sum(printed["a"], axis=0)                      # a[l][joint]
    start_acceleration = wf * np.sum(orders * np.array(printed["b"]), axis=0)
    tolerance = 1e-3
    assert np.all(np.abs(start_speed) < tolerance)
    expected = {f"j{j + 1}" for j in np.nonzero(np.abs(start_acceleration) > tolerance)[0]}
    assert len(expected) == 7

    trajectory = load_trajectory(find_package_file("config", "trajectories", "walker_table_1.yaml"))
    check = check_trajectory(walker_robot(), trajectory, tolerance=tolerance)
    assert not check.ok
    kinds = {}
    for violation in check.violations:
        kinds.setdefault(violation.kind, set()).add(violation.joint)
    assert kinds["start_acceleration"] == expected == kinds["end_acceleration"]
    assert "start_velocity" not in kinds and "end_velocity" not in kinds
    for violation in check.violations:
        if violation.kind == "start_acceleration":
            joint = int(violation.joint[1:]) - 1
            assert violation.value == pytest.approx(start_acceleration[joint])
            assert violation.limit == tolerance


def test_limit_violations_report_closed_form_peaks():
    robot = planar_robot(velocity=3.0, acceleration=10.0)
    move = CycloidalMove(robot.joint_names, [-2.0, 0.0], [3.0, 2.0], 1.0)  # 2 d / T, 2 pi d / T^2
    check = check_trajectory(robot, move, n_points=4001)
    found = {(v.joint, v.kind): v for v in check.violations}
    assert set(found) == {("j1", "velocity"), ("j1", "acceleration"), ("j2", "velocity"),
                          ("j2", "acceleration")}
    assert found["j1", "velocity"].value == pytest.approx(6.0)
    assert found["j1", "velocity"].time == pytest.approx(0.5)
    assert found["j1", "acceleration"].value == pytest.approx(2 * math.pi * 3.0, rel=1e-6)
    assert found["j2", "velocity"].limit == 3.0
    assert check.joint("j1").qd_fraction == pytest.approx(2.0)
    out_of_range = check_trajectory(robot, CycloidalMove(robot.joint_names, [1.0, 0.0],
                                                         [2.0, -3.0], 10.0))
    kinds = {(v.joint, v.kind) for v in out_of_range.violations}
    assert kinds == {("j1", "position_max"), ("j2", "position_min")}
    assert out_of_range.joint("j1").position_fraction == pytest.approx(3.0 / 2.5)


def test_check_report_forms():
    robot = planar_robot()
    check = check_trajectory(robot, CycloidalMove(robot.joint_names, [0.0, 0.0], [3.0, 0.1], 1.0))
    data = json.loads(json.dumps(check.to_dict()))
    assert data["ok"] is False
    assert [joint["name"] for joint in data["joints"]] == ["j1", "j2"]
    assert {"joint", "kind", "value", "limit", "time"} == set(data["violations"][0])
    table = check.format_table()
    assert "j1" in table and "violation(s)" in table and "velocity" in table


def test_check_rejects_unknown_joints():
    trajectory = CycloidalMove(("j1", "elbow"), [0, 0], [1, 1], 2.0)
    with pytest.raises(DataError, match=r"unknown joint\(s\) \['elbow'\]; robot 'planar' has"):
        check_trajectory(planar_robot(), trajectory)


def test_random_excitation_is_rest_to_rest_within_the_fraction(er3a_robot):
    robot = er3a_robot
    trajectory = random_excitation(robot, harmonics=4, period=8.0, amplitude_fraction=0.5, seed=3)
    check = check_trajectory(robot, trajectory, n_points=4001, tolerance=1e-12)
    assert check.ok
    for joint in check.joints:
        assert joint.position_fraction <= 0.5 + 1e-3
        assert max(joint.qd_fraction, joint.qdd_fraction) <= 0.5 + 1e-3
        assert max(joint.position_fraction, joint.qd_fraction, joint.qdd_fraction) > 0.49


@pytest.mark.parametrize("ill_conditioned", [False, True])
@pytest.mark.parametrize("criterion", ["cond", "frobenius", "logdet"])
def test_criterion_gradient_matches_finite_differences(criterion, ill_conditioned):
    """Against numpy's cond / pinv / a QR determinant and central differences; the ill-conditioned case
    (two nearly equal columns, cond ~1e7) takes the SVD path instead of the Gram matrix."""
    rng = np.random.default_rng(4)
    W = rng.normal(size=(30, 5)) * np.array([1.0, 10.0, 0.1, 3.0, 1.0])
    step = 1e-6
    if ill_conditioned:
        W[:, 4] = W[:, 0] + 1e-7 * rng.normal(size=30)
        step = 1e-11
    value, gradient = criterion_and_gradient(W, criterion)
    direction = rng.normal(size=W.shape)
    numeric = (criterion_and_gradient(W + step * direction, criterion)[0]
               - criterion_and_gradient(W - step * direction, criterion)[0]) / (2 * step)
    assert np.sum(gradient * direction) == pytest.approx(numeric, rel=1e-3)
    scaled = W / np.linalg.norm(W, axis=0)
    if criterion == "cond":
        assert math.exp(value) == pytest.approx(np.linalg.cond(scaled), rel=1e-6)
    elif criterion == "frobenius":
        expected = np.linalg.norm(scaled) * np.linalg.norm(np.linalg.pinv(scaled, rcond=1e-15))
        assert math.exp(value) == pytest.approx(expected, rel=1e-6)
    else:
        diagonal = np.diag(np.linalg.qr(W, mode="r"))       # det(W^T W) = prod R_ii^2
        expected = -np.sum(np.log(diagonal**2 / W.shape[0]))
        assert value == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("criterion", ["cond", "logdet"])
def test_optimised_design_beats_its_start_and_passes_a_denser_check(criterion):
    robot = planar_robot()
    updates = []
    design = optimize_excitation(robot, harmonics=3, period=4.0, criterion=criterion,
                                 friction=friction_model("coulomb_viscous"), seed=1, n_starts=1,
                                 n_grid=60, n_samples=60, max_iterations=40,
                                 progress=updates.append)
    assert design.value < design.initial_value
    assert updates and updates[-1].iteration == design.n_iterations
    trajectory = design.trajectory
    assert isinstance(trajectory, FourierTrajectory) and trajectory.harmonics == 3
    denser = check_trajectory(robot, trajectory, n_points=6001, tolerance=1e-6)
    assert denser.ok, denser.format_table()
    np.testing.assert_allclose(design.speed_fractions,
                               [joint.qd_fraction for joint in denser.joints], rtol=1e-3)
    # the reported condition number is that of the scaled base regressor on the samples
    assert design.condition_number >= 1.0


class _CountingProblem:
    """Stands in for the Fourier problem: the criterion of x is sum(x), evaluations counted."""

    def __init__(self):
        self.evaluated = []

    def value_at(self, x):
        self.evaluated.append(np.array(x))
        return float(np.sum(x))


@pytest.mark.parametrize("form", ["intermediate_result", "xk"])
def test_progress_callback_takes_both_scipy_forms(form):
    """scipy >= 1.16 passes SLSQP's callback an OptimizeResult, older scipy the iterate xk."""
    from scipy.optimize import OptimizeResult

    from robot_dynid.experiment.excitation import _iteration_callback
    problem, state, updates = _CountingProblem(), {"iteration": 0, "best": math.inf}, []
    callback = _iteration_callback(problem, 0, 1, state, "logdet", time.monotonic(), None, updates.append)
    for x in ([3.0, 1.0], [1.0, 0.5], [2.0, 2.0]):
        callback(OptimizeResult(x=np.array(x), fun=float(np.sum(x))) if form == "intermediate_result"
                 else np.array(x))
    assert [update.value for update in updates] == [4.0, 1.5, 4.0]
    assert [update.best_value for update in updates] == [4.0, 1.5, 1.5]
    assert [update.iteration for update in updates] == [1, 2, 3]
    np.testing.assert_array_equal(state["x"], [2.0, 2.0])
    assert len(problem.evaluated) == (3 if form == "xk" else 0)


def test_time_limit_stops_the_running_start_at_its_iterate_whatever_the_scipy():
    """The callback raises StopIteration at the limit: scipy >= 1.16 ends minimize with it,
    older scipy lets it out of minimize; either way the first iterate is the design."""
    updates = []
    design = optimize_excitation(planar_robot(), harmonics=2, period=3.0, seed=7, n_starts=3,
                                 n_grid=40, n_samples=40, max_iterations=50, time_limit=0.0,
                                 progress=updates.append)
    assert design.n_starts == 1 and design.n_iterations == 1
    assert [update.iteration for update in updates] == [1]
    assert design.check.ok
    # the design is the iterate the callback saw (shrunk only if the dense check needed it)
    assert design.shrink < 1.0 or design.value == pytest.approx(updates[0].value, rel=1e-9)


def test_optimisation_is_deterministic_and_honours_the_start_pose():
    robot = planar_robot()
    kwargs = dict(harmonics=2, period=3.0, seed=7, n_starts=1, n_grid=40, n_samples=40,
                  max_iterations=10, start_pose=[0.5, -1.0])
    first = optimize_excitation(robot, **kwargs)
    second = optimize_excitation(robot, **kwargs)
    np.testing.assert_array_equal(first.trajectory.a, second.trajectory.a)
    np.testing.assert_allclose(first.trajectory.start_pose, [0.5, -1.0], atol=1e-8)


@pytest.mark.parametrize("kwargs, message", [
    ({"criterion": "aoptimal"}, r"criterion must be one of \['cond', 'logdet', 'frobenius'\], got 'aoptimal'"),
    ({"harmonics": 1}, r"harmonics \(rest to rest needs two\) must be an integer in 2\.\.20, got 1"),
    ({"harmonics": 100_000}, r"harmonics \(rest to rest needs two\) must be an integer in 2\.\.20, got 100000"),
    ({"period": -1.0}, r"period must be finite and in \(0, 3600\] \[s\], got -1.0"),
    ({"period": 1e308}, r"period must be finite and in \(0, 3600\] \[s\], got 1e\+308"),
    ({"n_starts": 0}, r"n_starts must be an integer in 1\.\.1000, got 0"),
    ({"max_iterations": 10 ** 9}, r"max_iterations must be an integer in 1\.\.100000, got 1000000000"),
    ({"n_grid": 10 ** 9}, r"n_grid must be an integer in 4\.\.100000, got 1000000000"),
    ({"limit_fraction": 1.5}, r"limit_fraction must be in \(0, 1\], got 1.5"),
    ({"start_pose": [0.0]}, r"^start_pose must have shape \(2 joints,\), got \(1,\)$"),
])
def test_optimisation_argument_checks(kwargs, message):
    with pytest.raises(TrajectoryError, match=message):
        optimize_excitation(planar_robot(), **kwargs)
