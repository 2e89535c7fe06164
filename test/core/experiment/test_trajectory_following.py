"""Trajectory following against closed forms; the simulated arm against pinocchio's RNEA."""
import numpy as np
import pytest
from numpy.polynomial import Polynomial

from robot_dynid.errors import DataError
from robot_dynid.experiment.simulation import SimulatedRobot, simulation_parameters
from robot_dynid.experiment.trajectory_following import SimulatedArm, TrajectoryFollower
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from rnea_reference import rnea_torques

JOINTS = ("a", "b", "c")


def polynomials(seed, degree=5):
    rng = np.random.default_rng(seed)
    return [Polynomial(rng.uniform(-1.0, 1.0, degree + 1)) for _ in JOINTS]


def evaluate(polys, s):
    return tuple(np.column_stack([p.deriv(order)(s) if order else p(s) for p in polys]) for order in range(3))


def test_quintic_through_a_quintic_polynomial_reproduces_it():
    polys = polynomials(1)
    knots = np.array([0.0, 0.3, 0.45, 1.1, 1.6])
    q, qd, qdd = evaluate(polys, knots)
    follower = TrajectoryFollower(JOINTS)
    follower.command(JOINTS, knots, q, qd, qdd, start_time=10.0)
    s = np.random.default_rng(2).uniform(0.0, 1.6, 200)
    for got, expected in zip(follower.sample(10.0 + s), evaluate(polys, s)):
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)


def test_cubic_hermite_of_a_sine_is_within_the_interpolation_bound():
    omega, h = 2.0, 0.25
    knots = np.arange(0.0, 3.0 + h / 2, h)
    follower = TrajectoryFollower(["a"])
    follower.command(["a"], knots, np.sin(omega * knots)[:, None], omega * np.cos(omega * knots)[:, None])
    t = np.linspace(0.0, 3.0, 2001)
    q, qd, qdd = follower.sample(t)
    error = np.max(np.abs(q[:, 0] - np.sin(omega * t)))
    bound = omega**4 * h**4 / 384.0   # |f - H| <= max|f''''| h^4 / 384
    assert bound / 10 < error <= bound
    inner = knots[:-1]  # the arm rests from the last point on
    knot_q, knot_qd, _ = follower.sample(inner)
    np.testing.assert_allclose(knot_q[:, 0], np.sin(omega * inner), atol=1e-12)
    np.testing.assert_allclose(knot_qd[:, 0], omega * np.cos(omega * inner), atol=1e-12)


def test_positions_only_interpolate_linearly():
    knots = np.array([0.0, 1.0, 1.5, 3.0])
    positions = np.array([[0.0, 1.0], [2.0, -1.0], [1.0, 0.0], [1.0, 4.0]])
    follower = TrajectoryFollower(["x", "y"])
    follower.command(["x", "y"], knots, positions, start_time=5.0)
    t = np.linspace(0.0, 2.99, 300)
    q, qd, qdd = follower.sample(5.0 + t)
    for j in range(2):
        np.testing.assert_allclose(q[:, j], np.interp(t, knots, positions[:, j]), atol=1e-12)
        slopes = np.diff(positions[:, j]) / np.diff(knots)
        np.testing.assert_allclose(qd[:, j], slopes[np.searchsorted(knots, t, side="right") - 1], atol=1e-12)
    np.testing.assert_array_equal(qdd, 0.0)


def test_rests_at_the_initial_positions_and_after_the_last_point():
    follower = TrajectoryFollower(JOINTS, initial_positions=[0.1, 0.2, 0.3])
    q, qd, qdd = follower.sample([-5.0, 0.0, 7.0])
    np.testing.assert_array_equal(q, np.tile([0.1, 0.2, 0.3], (3, 1)))
    np.testing.assert_array_equal(qd, 0.0)
    follower.command(JOINTS, [1.0], [[1.0, 2.0, 3.0]], [[0.5, 0.5, 0.5]], [[1.0, 1.0, 1.0]], start_time=2.0)
    q, qd, qdd = follower.sample([3.0, 3.5, 100.0])
    np.testing.assert_allclose(q, np.tile([1.0, 2.0, 3.0], (3, 1)), atol=1e-12)
    np.testing.assert_array_equal(qd[1:], 0.0)
    np.testing.assert_array_equal(qdd[1:], 0.0)
    assert follower.end_time == 3.0


def test_first_point_is_reached_from_rest_along_the_minimum_jerk_quintic():
    follower = TrajectoryFollower(["a"], initial_positions=[0.5])
    follower.command(["a"], [2.0], [[1.5]], [[0.0]], [[0.0]], start_time=1.0, received_time=0.5)
    t = np.linspace(0.5, 3.0, 51)
    tau = (t - 0.5) / 2.5
    expected = 0.5 + 1.0 * (10 * tau**3 - 15 * tau**4 + 6 * tau**5)
    np.testing.assert_allclose(follower.sample(t)[0][:, 0], expected, atol=1e-12)


def test_a_new_trajectory_takes_over_at_receipt_continuously_and_keeps_the_history():
    first, second = polynomials(3), polynomials(4)
    knots = np.linspace(0.0, 4.0, 9)
    follower = TrajectoryFollower(JOINTS)
    follower.command(JOINTS, knots, *evaluate(first, knots))
    received = 1.7
    later = np.linspace(0.0, 1.0, 5)
    follower.command(JOINTS, later, *evaluate(second, later), start_time=2.5, received_time=received)

    before = np.linspace(1.0, received - 1e-6, 20)
    np.testing.assert_allclose(follower.sample(before)[0], evaluate(first, before)[0], atol=1e-9)
    at_receipt = follower.sample([received])
    for got, expected in zip(at_receipt, evaluate(first, np.array([received]))):
        np.testing.assert_allclose(got, expected, atol=1e-9)
    after = np.linspace(2.5, 3.49, 30)
    for got, expected in zip(follower.sample(after), evaluate(second, after - 2.5)):
        np.testing.assert_allclose(got, expected, atol=1e-9)


def test_a_late_trajectory_is_joined_where_it_is_at_receipt():
    polys = polynomials(5)
    knots = np.linspace(0.0, 2.0, 5)
    follower = TrajectoryFollower(JOINTS)
    follower.command(JOINTS, knots, *evaluate(polys, knots), start_time=10.0, received_time=11.2)
    t = np.array([11.2, 11.9])
    np.testing.assert_allclose(follower.sample(t)[0], evaluate(polys, t - 10.0)[0], atol=1e-9)


def test_joints_are_matched_by_name_and_unnamed_joints_hold():
    follower = TrajectoryFollower(JOINTS, initial_positions=[0.1, 0.2, 0.3])
    follower.command(["c", "a"], [1.0, 2.0], [[3.0, 1.0], [4.0, 2.0]])
    q, qd, _ = follower.sample([1.0, 1.5, 2.0])
    np.testing.assert_allclose(q, [[1.0, 0.2, 3.0], [1.5, 0.2, 3.5], [2.0, 0.2, 4.0]], atol=1e-12)
    np.testing.assert_allclose(qd[:, 1], 0.0)


@pytest.mark.parametrize("arguments, message", [
    (dict(joint_names=["a", "elbow"]),
     r"joint_names lists unknown joint\(s\) \['elbow'\]; the arm has \['a', 'b', 'c'\]"),
    (dict(joint_names=["a", "a"], positions=[[0, 0]] * 2),
     r"joint_names lists joint\(s\) \['a'\] more than once; the arm has \['a', 'b', 'c'\]$"),
    (dict(time_from_start=[]), r"no points given"),
    (dict(time_from_start=[0.0, 1.0, 1.0]), r"point 2 at 1.0 s is not after point 1 at 1.0 s"),
    (dict(time_from_start=[-1.0, 1.0, 2.0]), r"^time_from_start must be >= 0 \[s\], got -1.0 at point 0$"),
    (dict(positions=[[0, 0, 0]] * 2), r"positions has 2 points, time_from_start has 3"),
    (dict(positions=[[0, 0, 0], [0, 0], [0, 0, 0]]), r"point 1: positions has 2 values, expected 3"),
    (dict(velocities=[[0, 0, 0], [], [0, 0, 0]]), r"point 1: velocities has 0 values, expected 3"),
    (dict(velocities=[[0, 0, 0], [0, np.nan, 0], [0, 0, 0]]),
     r"^velocities must be finite, got nan at point 1, joint b$"),
    (dict(accelerations=[[0, 0, 0]] * 3), r"accelerations are given without velocities"),
    (dict(start_time=np.inf), r"start_time \[s\] must be finite, got inf"),
])
def test_malformed_trajectories_are_rejected_by_name(arguments, message):
    command = dict(joint_names=JOINTS, time_from_start=[0.0, 1.0, 2.0], positions=[[0, 0, 0]] * 3)
    command.update(arguments)
    with pytest.raises(DataError, match=message):
        TrajectoryFollower(JOINTS).command(**command)


@pytest.mark.parametrize("arguments, message", [
    (dict(joint_names=[]), r"joint_names is empty"),
    (dict(initial_positions=[0.0, 1.0]), r"^initial_positions must have shape \(3 joints,\), got \(2,\)$"),
    (dict(history=-1.0), r"history must be >= 0 \[s\], got -1.0"),
])
def test_malformed_follower_settings_are_rejected(arguments, message):
    with pytest.raises(DataError, match=message):
        TrajectoryFollower(**{"joint_names": JOINTS, **arguments})


@pytest.fixture(scope="module")
def er3a_simulator(er3a_robot):
    robot = er3a_robot
    regressor = Regressor(robot, friction_model("coulomb_viscous"))
    parameters = simulation_parameters(regressor, seed=2)
    return SimulatedRobot(regressor, parameters, noise_std=0.4, cold_excess=0.5, warmup_time_constant=2.0)


def rnea_with_friction_by_hand(simulator, t, q, qd, qdd):
    """pinocchio RNEA with the simulator's inertias, plus (fc sgn v + fv v)(1 + 0.5 exp(-t / 2))."""
    parameters = simulator.parameters
    rigid = rnea_torques(simulator.regressor.robot, parameters, q, qd, qdd)
    fc, fv = parameters[60:72:2], parameters[61:72:2]
    return rigid + (fc * np.sign(qd) + fv * qd) * (1.0 + 0.5 * np.exp(-t / 2.0))[:, None]


def test_simulated_arm_torques_equal_rnea_with_warming_friction(er3a_simulator):
    arm = SimulatedArm(er3a_simulator, rate=100.0, seed=3)
    knots = np.linspace(0.0, 3.0, 7)
    rng = np.random.default_rng(4)
    arm.follower.command(arm.follower.joint_names, knots, rng.uniform(-1, 1, (7, 6)), rng.uniform(-1, 1, (7, 6)),
                         rng.uniform(-1, 1, (7, 6)), start_time=0.5, received_time=0.0)
    samples = arm.samples(np.linspace(0.0, 4.0, 120))
    expected = rnea_with_friction_by_hand(er3a_simulator, samples.time, samples.q, samples.qd, samples.qdd)
    np.testing.assert_allclose(samples.torque, expected, rtol=0, atol=1e-9)
    noise = samples.measured_torque - samples.torque
    assert abs(np.std(noise) / 0.4 - 1.0) < 0.1


def test_advance_returns_each_grid_sample_once_and_skips_beyond_the_lag(er3a_simulator):
    arm = SimulatedArm(er3a_simulator, rate=50.0, seed=1, max_lag=0.2)
    first = arm.advance(0.1)
    np.testing.assert_allclose(first.time, np.arange(6) / 50.0)
    assert arm.advance(0.115) is None
    second = arm.advance(0.15)
    np.testing.assert_allclose(second.time, [0.12, 0.14])
    late = arm.advance(2.0)
    np.testing.assert_allclose(late.time, np.arange(91, 101) / 50.0)
    assert (late.n_skipped, second.n_skipped) == (91 - 8, 0)


@pytest.mark.parametrize("arguments, message", [
    (dict(rate=0.0), r"rate must be finite and > 0 \[Hz\], got 0.0"),
    (dict(max_lag=np.nan), r"max_lag must be finite and > 0 \[s\], got nan"),
    (dict(simulator="robot"), r"simulator must be a SimulatedRobot, got str"),
])
def test_malformed_arm_settings_are_rejected(er3a_simulator, arguments, message):
    with pytest.raises(DataError, match=message):
        SimulatedArm(**{"simulator": er3a_simulator, "rate": 100.0, **arguments})
