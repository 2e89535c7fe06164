"""min_speed: each joint's equations of the samples where it moves slowly are left out of the fit.

The reference is a friction the identification's model family does not contain (:mod:`real_world`: pre-sliding,
``fc tanh(qd / v_p)``) with rigid-body torques from pinocchio's RNEA: above a few ``v_p`` it is the family's
``fc sgn(qd) + fv qd`` (``1 - tanh(5) < 1e-4``), below it no member follows it.
"""
import dataclasses

import numpy as np
import pytest

from real_world import Effects, excitation, simulate, with_rests, with_true_accelerations
from repo_paths import ROBOTS
from robot_dynid.errors import DataError, DynIdError
from robot_dynid.estimation.estimators import LeastSquaresAccumulator
from robot_dynid.estimation.identification import (IdentificationSettings, identify, recording_equations,
                                                   settings_from_options)
from robot_dynid.estimation.normal_equations import accumulate_recording, slow_equations
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.friction import friction_model
from robot_dynid.model.robot_loader import load_robot

PRESLIDING = 0.05       # rad/s


@pytest.fixture(scope="module")
def presliding_arm():
    """The ER3A with rests along a Fourier excitation, 60 s at 200 Hz, friction with pre-sliding, true
    accelerations (the test is not about differentiation)."""
    robot = load_robot(ROBOTS / "er3a.yaml")
    motion = with_rests(excitation(robot, seed=4, period=12.0), [(3.0, 0.5, 1.0), (20.0, 0.5, 1.5), (41.0, 0.5, 1.0)])
    simulated = simulate(robot, motion, 60.0, 200.0, Effects(presliding=PRESLIDING, noise_fraction=0.01), seed=2)
    return robot, with_true_accelerations(simulated), simulated.truth


def _friction_errors(model, truth):
    """(Coulomb, viscous) errors over their std, per joint."""
    names = list(model.base.names)
    errors = []
    for values, field in ((truth.coulomb, "fc"), (truth.viscous, "fv")):
        index = [names.index(f"{field}{j + 1}") for j in range(model.robot.n_joints)]
        errors.append((model.values[index] - values) / model.std[index])
    return errors


def test_slow_equations_leave_out_joint_by_joint_and_keep_all_at_zero():
    qd = np.array([[0.0, 0.3], [0.05, -0.2], [-0.3, 0.01]])
    np.testing.assert_array_equal(slow_equations(qd, 0.1), [[False, True], [False, True], [True, False]])
    assert slow_equations(qd, 0.0) is None
    assert slow_equations(np.full((3, 2), 0.5), 0.1) is None


def test_min_speed_takes_friction_to_its_values_above_the_presliding_where_every_equation_biases_it(presliding_arm):
    robot, recording, truth = presliding_arm
    friction = friction_model("coulomb_viscous")
    every = identify(recording, robot, IdentificationSettings(friction=friction))
    coulomb, viscous = _friction_errors(every, truth)
    assert np.all(coulomb < -3.0) and np.all(viscous > 0.0), (coulomb, viscous)
    fast = identify(recording, robot, IdentificationSettings(friction=friction, min_speed=5.0 * PRESLIDING))
    coulomb, viscous = _friction_errors(fast, truth)
    assert np.all(np.abs(coulomb) < 4.0) and np.all(np.abs(viscous) < 4.0), (coulomb, viscous)
    left_out = fast.metrics["slow_equations"]["left_out"]
    speed = np.abs(recording.qd) < 5.0 * PRESLIDING
    assert left_out == {name: int(count) for name, count in zip(robot.joint_names, speed.sum(axis=0))}
    residual = fast.torque(recording.q, recording.qd, recording.qdd) - recording.tau
    for j, name in enumerate(robot.joint_names):       # the RMS residual over the joint's own equations
        kept = residual[~speed[:, j], j]
        assert fast.metrics["residual_rms"][name] == pytest.approx(np.sqrt(np.mean(kept**2)), rel=1e-6)


def test_left_out_equations_give_the_sums_and_noise_of_the_rows_removed_by_hand(presliding_arm):
    robot, recording, _ = presliding_arm
    settings = IdentificationSettings(friction=friction_model("coulomb_viscous"), min_speed=0.2)
    regressor = settings.regressor(robot)
    base = compute_base_parameters(regressor)
    kept = np.abs(recording.qd) >= 0.2
    Y = base.select(regressor.compute(recording.q, recording.qd, recording.qdd))
    gram = np.stack([Y[kept[:, j], j].T @ Y[kept[:, j], j] for j in range(robot.n_joints)])
    fused = accumulate_recording(LeastSquaresAccumulator(robot.n_joints, base.rank), regressor, base, recording,
                                 min_speed=0.2)
    explicit = recording_equations([recording], regressor, base, settings, offsets=True).accumulate()  # by Y
    for accumulator in (fused, explicit):
        r = accumulator.gram_.shape[1]
        got = accumulator.gram_ if r == base.rank else accumulator.gram_[:, :base.rank, :base.rank]
        np.testing.assert_allclose(got, gram, rtol=1e-10, atol=1e-10 * np.max(np.abs(gram)))
        np.testing.assert_array_equal(accumulator.equations_, kept.sum(axis=0))
        assert accumulator.n_samples == recording.n_samples
    result = fused.solve()
    stacked = np.concatenate([Y[kept[:, j], j] for j in range(robot.n_joints)])
    torques = np.concatenate([recording.tau[kept[:, j], j] for j in range(robot.n_joints)])
    theta = np.linalg.lstsq(stacked, torques, rcond=None)[0]
    np.testing.assert_allclose(result.theta, theta, rtol=1e-7, atol=1e-9)
    for j in range(robot.n_joints):
        residual = Y[kept[:, j], j] @ theta - recording.tau[kept[:, j], j]
        active = np.count_nonzero(np.any(Y[:, j] != 0.0, axis=0))
        np.testing.assert_allclose(result.noise_std[j], np.sqrt(residual @ residual / (kept[:, j].sum() - active)),
                                   rtol=1e-6)
        np.testing.assert_allclose(result.residual_rms[j], np.sqrt(residual @ residual / kept[:, j].sum()), rtol=1e-6)


def test_a_min_speed_above_a_joints_motion_names_the_joint(presliding_arm):
    robot, recording, _ = presliding_arm
    still = dataclasses.replace(recording, qd=recording.qd * np.r_[np.ones(robot.n_joints - 1), 0.0])
    settings = IdentificationSettings(friction=friction_model("coulomb_viscous"), min_speed=0.1,
                                      check_torque_scale=False)
    with pytest.raises(DataError, match=rf"min_speed = 0.1 rad/s leaves out every sample of joint\(s\) "
                                        rf"\['{robot.joint_names[-1]}'\]"):
        identify(still, robot, settings)


@pytest.mark.parametrize("value", [-0.1, float("nan"), float("inf")])
def test_min_speed_refuses_what_is_not_a_speed(value):
    with pytest.raises(DynIdError, match="min_speed"):
        IdentificationSettings(min_speed=value)
    robot = load_robot(ROBOTS / "er3a.yaml")
    with pytest.raises(DynIdError, match="min_speed"):
        settings_from_options({"min_speed": value}, robot)


def test_a_min_speed_at_or_above_a_joint_velocity_limit_is_refused_naming_the_joint():
    """ER3A's velocity limits: j1 and j2 4.0143 rad/s, j3 4.3633 (its robot file); at or above a joint's limit
    every equation of it would be left out."""
    robot = load_robot(ROBOTS / "er3a.yaml")
    with pytest.raises(DynIdError) as refused:
        settings_from_options({"min_speed": 4.2}, robot, label=lambda option: f"parameter {option}")
    assert str(refused.value).startswith("parameter min_speed = 4.2 rad/s is at or above the velocity limit of "
                                         "joint(s) j1 (4.0143 rad/s), j2 (4.0143 rad/s): it would leave out every "
                                         "equation of such a joint"), str(refused.value)
    assert settings_from_options({"min_speed": 0.02}, robot).min_speed == 0.02
