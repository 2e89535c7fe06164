"""Wear indicators against pinocchio's RNEA and hand-written friction (a model whose base parameters are the
projection of known link parameters and friction), their std against finite differences of the model's own
torques, and the null's statistics on draws of known spread."""
import dataclasses

import numpy as np
import pytest
from scipy import stats

from rnea_reference import rnea_torques
from robot_dynid.errors import DynIdError
from robot_dynid.estimation.wear import (between_recording_spread, builtin_reference_motion, change_statistics,
                                         MOTION_SPEED_FRACTION, practical_thresholds, reference_conditions,
                                         REFERENCE_SPEED_FRACTIONS, validation_motion, wear_indicators)
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.recordings.recording import Recording
from simulated_fleet import arm_links, COULOMB, ROBOT, VISCOUS


@pytest.fixture(scope="module")
def robot():
    return load_robot(ROBOT)


@pytest.fixture(scope="module")
def true_model(robot):
    """The UR5 of arm 0 with the fleet's friction: base values projected from the true standard parameters."""
    friction = friction_model("coulomb_viscous")
    base = compute_base_parameters(Regressor(robot, friction))
    standard = np.concatenate([arm_links(robot, 0), np.column_stack([COULOMB, VISCOUS]).ravel()])
    std = np.random.default_rng(3).uniform(0.005, 0.05, base.rank)
    return DynamicModel(robot, friction, False, False, base, base.projection @ standard, std)


def _by_kind(indicators, kind):
    return [(k, item) for k, item in enumerate(indicators.indicators) if item.kind == kind]


def test_friction_indicators_are_the_true_friction_at_the_reference_speeds(robot, true_model):
    reference = reference_conditions(robot)
    indicators = wear_indicators(true_model, reference)
    friction = _by_kind(indicators, "friction")
    assert len(friction) == len(REFERENCE_SPEED_FRACTIONS) * robot.n_joints
    for k, item in friction:
        j = robot.joint_names.index(item.joint)
        assert np.min(np.abs(item.speed - np.array(REFERENCE_SPEED_FRACTIONS) * 3.15)) < 1e-12   # UR5: 3.15 rad/s
        assert indicators.values[k] == pytest.approx(COULOMB[j] + VISCOUS[j] * item.speed, rel=1e-9)
        assert item.unit == "N m" and item.name == f"{item.joint} friction at {item.speed:.3g} rad/s"


def test_gravity_indicators_are_rneas_torques_at_rest_and_structural_zeros_are_left_out(robot, true_model):
    reference = reference_conditions(robot)
    indicators = wear_indicators(true_model, reference)
    poses = reference.poses
    truth = rnea_torques(robot, arm_links(robot, 0), poses, np.zeros_like(poses), np.zeros_like(poses))
    gravity = _by_kind(indicators, "gravity")
    for k, item in gravity:
        assert indicators.values[k] == pytest.approx(truth[item.pose, robot.joint_names.index(item.joint)],
                                                     abs=1e-9 * np.abs(truth).max())
    # the UR5's first axis is vertical: its gravity torque is zero at every pose and is no indicator
    assert "shoulder_pan_joint" not in {item.joint for _, item in gravity}
    assert {item.joint for _, item in gravity if item.pose == 1} >= {"shoulder_lift_joint", "elbow_joint"}


def test_motion_indicators_are_the_rms_of_rnea_and_friction_along_the_reference_motion(robot, true_model):
    reference = reference_conditions(robot)
    q, qd, qdd = reference.motion
    truth = rnea_torques(robot, arm_links(robot, 0), q, qd, qdd) + COULOMB * np.sign(qd) + VISCOUS * qd
    indicators = wear_indicators(true_model, reference)
    motion = _by_kind(indicators, "motion")
    assert [item.joint for _, item in motion] == list(robot.joint_names)
    np.testing.assert_allclose([indicators.values[k] for k, _ in motion], np.sqrt(np.mean(truth**2, axis=0)),
                               rtol=1e-9)


def test_each_indicators_std_is_that_of_the_models_std_through_finite_differences(robot, true_model):
    """``sqrt(c^T diag(std^2) c)`` against the indicator recomputed with each base value moved by 1e-6 of its
    std, through the model's own torque and friction_torque (not the indicators' regressor rows)."""
    reference = reference_conditions(robot)
    indicators = wear_indicators(true_model, reference)
    q, qd, qdd = reference.motion

    def recomputed(model):
        friction = [model.friction_torque(item.joint, [item.speed])[0] for _, item in
                    _by_kind(indicators, "friction")]
        poses = reference.poses
        still = model.torque(poses, np.zeros_like(poses), np.zeros_like(poses))
        gravity = [still[item.pose, robot.joint_names.index(item.joint)] for _, item in
                   _by_kind(indicators, "gravity")]
        return np.concatenate([friction, gravity, np.sqrt(np.mean(model.torque(q, qd, qdd)**2, axis=0))])

    step = 1e-6
    centre = recomputed(true_model)
    effects = []
    for i in range(true_model.base.rank):
        values = true_model.values.copy()
        values[i] += step * true_model.std[i]
        effects.append((recomputed(dataclasses.replace(true_model, values=values)) - centre) / step)
    np.testing.assert_allclose(indicators.std, np.sqrt(np.sum(np.square(effects), axis=0)), rtol=1e-4)


def test_the_builtin_motion_stays_within_a_fraction_of_the_limits_and_has_the_derivatives_of_its_positions(robot):
    q, qd, qdd = builtin_reference_motion(robot, samples=4000)
    limits = robot.limit_arrays()
    assert np.all(np.abs(qd).max(axis=0) <= MOTION_SPEED_FRACTION * limits.velocity + 1e-12)
    assert np.all((q >= limits.lower) & (q <= limits.upper))
    step = 4.0 / 4000
    np.testing.assert_allclose(np.gradient(q, step, axis=0)[1:-1], qd[1:-1], atol=1e-4)
    np.testing.assert_allclose(np.gradient(qd, step, axis=0)[1:-1], qdd[1:-1], atol=1e-3)


def test_the_validation_stage_is_the_reference_motion_where_recorded(robot, true_model):
    """The first run of samples labelled validation, in the robot's joint order, thinned; the model's RMS along it
    is the RMS of its torques on those samples."""
    n, samples = robot.n_joints, 1000
    t = np.arange(samples) * 0.01
    q = 0.3 * np.sin(np.outer(t, np.arange(1, n + 1)))
    qd = 0.3 * np.cos(np.outer(t, np.arange(1, n + 1))) * np.arange(1, n + 1)
    qdd = -q * np.arange(1, n + 1) ** 2
    stage = np.array(["excitation"] * 200 + ["validation"] * 500 + ["rest"] * 100 + ["validation"] * 200)
    order = list(reversed(robot.joint_names))
    recording = Recording.from_arrays(order, t, q[:, ::-1], qd[:, ::-1], qdd[:, ::-1], np.zeros((samples, n)),
                                      stage=stage)
    motion = validation_motion(recording, robot.joint_names)
    np.testing.assert_array_equal(motion[0], q[200:700:2])             # 500 samples thinned to 250 (<= 400)
    np.testing.assert_array_equal(motion[2], qdd[200:700:2])
    assert validation_motion(recording.with_labels(None), robot.joint_names) is None
    reference = reference_conditions(robot, motion, "validation stage of r1")
    indicators = wear_indicators(true_model, reference)
    rms = np.sqrt(np.mean(true_model.torque(*motion)**2, axis=0))
    np.testing.assert_allclose(indicators.values[-n:], rms, rtol=1e-9)
    assert reference.motion_source == "validation stage of r1" and reference.key != reference_conditions(robot).key


def test_practical_thresholds_are_a_fraction_of_each_joints_fastest_friction(robot, true_model):
    indicators = wear_indicators(true_model, reference_conditions(robot))
    thresholds = practical_thresholds(indicators.indicators, indicators.values, 0.15)
    fastest = COULOMB + VISCOUS * max(REFERENCE_SPEED_FRACTIONS) * 3.15
    for item, threshold in zip(indicators.indicators, thresholds):
        assert threshold == pytest.approx(0.15 * fastest[robot.joint_names.index(item.joint)])


def test_the_spread_is_the_inflation_of_the_estimation_std_and_ignores_a_worn_robots_step():
    """300 robots of 3 recordings whose indicators scatter by 2.5 times their (varied) estimation std; one robot
    steps by 100 std: the measured inflation is 2.5 within its sampling error, whatever the step."""
    rng = np.random.default_rng(5)
    std = rng.uniform(0.5, 2.0, (300, 3, 2))
    values = 10.0 + 2.5 * std * rng.normal(size=std.shape)
    values[7, 2] += 100.0 * std[7, 2]
    spread = between_recording_spread(list(zip(values, std)))
    np.testing.assert_allclose(spread.measured, 2.5, rtol=0.08)
    assert np.all(spread.kept >= 595) and np.all(spread.kept < spread.total) and np.all(spread.total == 600)
    calm = between_recording_spread([(np.full((3, 1), 1.0), np.full((3, 1), 0.1))])
    assert calm.inflation[0] == 1.0 and calm.measured[0] == 0.0          # never below the estimation std
    assert np.isnan(between_recording_spread([(np.ones((1, 2)), np.ones((1, 2)))]).inflation).all()


def test_the_spread_by_hand():
    """Values 0, 1, 0, 6 of variances 0.5: differences 1, -1, 6 of variances 1 standardise to themselves; the first
    scale is 1.4826 median(1, 1, 6) = 1.4826, so 6 lies beyond 3.5 scales and is left out: kappa = sqrt((1 + 1) / 2)
    = 1; the difference's robust std is 1.4826 [unit of the values]."""
    values = np.array([[0.0], [1.0], [0.0], [6.0]])
    std = np.full((4, 1), np.sqrt(0.5))
    spread = between_recording_spread([(values, std)])
    assert spread.kept[0] == 2 and spread.total[0] == 3
    assert spread.measured[0] == pytest.approx(1.0) and spread.difference[0] == pytest.approx(1.4826)


def test_unchanged_recordings_give_uniform_p_values_under_the_measured_null():
    """Robots whose recordings scatter by 3 times their std: tested against their first recording with the
    spread pooled from 40 robots, 5 % of the p-values fall below 0.05 (within three binomial std)."""
    rng = np.random.default_rng(11)
    below, count = 0, 0
    for _ in range(100):
        std = rng.uniform(0.5, 2.0, (40, 3, 4))
        values = 3.0 * std * rng.normal(size=std.shape)
        spread = between_recording_spread(list(zip(values, std)))
        for x, s in zip(values, std):
            p = change_statistics(x[0], s[0], x[1:], s[1:], spread).p
            below += np.count_nonzero(p < 0.05)
            count += p.size
    # the two comparisons of a robot share its baseline: fewer independent tests than p-values, hence 5 std
    assert abs(below / count - 0.05) < 5 * np.sqrt(0.05 * 0.95 / (count / 2))


def test_a_change_is_measured_in_its_unit_and_its_t_follows_the_inflated_std():
    spread = between_recording_spread([(np.array([[0.0], [2.0], [0.0], [2.0], [0.0]]), np.ones((5, 1)))])
    assert spread.inflation[0] == pytest.approx(np.sqrt(2.0))       # differences of 2 with variances of 2
    result = change_statistics([1.0], [1.0], [[5.0]], [[1.0]], spread)
    assert result.difference[0, 0] == 4.0 and result.combined_std[0, 0] == pytest.approx(2.0)
    assert result.t[0, 0] == pytest.approx(2.0) and result.dof[0, 0] == 4.0
    assert result.p[0, 0] == pytest.approx(2 * stats.t.sf(2.0, 4))
    assert result.band(0.95)[0, 0] == pytest.approx(stats.t.ppf(0.975, 4) * 2.0)


def test_bad_inputs_are_one_line(robot, true_model):
    other = load_robot(ROBOT.parent / "er3a.yaml")
    with pytest.raises(DynIdError, match=r"the model's joints \['shoulder_pan_joint', .*\] are not in the reference "
                                         r"conditions' order \['j1'"):
        wear_indicators(true_model, reference_conditions(other))
    q = np.zeros((5, 6))
    with pytest.raises(DynIdError, match=r"reference motion qd must have shape \(samples, 6 joints\), got \(5, 5\)"):
        reference_conditions(robot, (q, np.zeros((5, 5)), q))
    no_spread = between_recording_spread([(np.ones((1, 1)), np.ones((1, 1)))])
    with pytest.raises(DynIdError, match="no recording-to-recording spread to test against"):
        change_statistics([0.0], [1.0], [[1.0]], [[1.0]], no_spread)
    with pytest.raises(DynIdError, match=r"histories of different indicator counts \[1, 2\]"):
        between_recording_spread([(np.ones((2, 1)), np.ones((2, 1))), (np.ones((2, 2)), np.ones((2, 2)))])
