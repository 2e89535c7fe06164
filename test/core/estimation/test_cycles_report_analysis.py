"""The analyses behind robot-dynid report and compare (estimation.cycles, friction_stages, comparison), on a
simulated test with known friction drift."""
import collections

import numpy as np
from scipy import stats
import pytest

from robot_dynid.errors import DynIdError
from robot_dynid.estimation.identification import IdentificationSettings, identify
from robot_dynid.model.friction import friction_model
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.estimation import friction_stages
from robot_dynid.estimation.comparison import compare_models
from robot_dynid.estimation import cycles as per_cycle
from simulated_test import simulate_test

ROBOT = load_robot(find_package_file("config", "robots", "er3a.yaml"))
DRIFT = (0.5, 6.0, 0.5, 1.5)       # b, t1 [min], c, t2 [min]


@pytest.fixture(scope="module")
def long_test():
    """24 cycles (about 21 min) of friction ladders at 60 % speed, friction drifting as DRIFT."""
    return simulate_test(ROBOT, cycles=24, speed_fractions=(0.6,), noise=0.01, drift=DRIFT)


@pytest.fixture(scope="module")
def friction(long_test):
    _, recording, intervals, _, _ = long_test
    return friction_stages.friction_analysis([recording], [intervals], ROBOT)


def test_time_fit_recovers_the_simulated_time_constants_within_10_percent(friction):
    drifts = friction_stages.friction_drift(friction, 0.6)
    assert [d.joint for d in drifts] == list(ROBOT.joint_names)
    for drift in drifts:
        assert drift.level == 0.6 and len(drift.friction) == 24
        assert drift.fit.t1 == pytest.approx(DRIFT[1], rel=0.1), drift.joint
        assert drift.fit.t2 == pytest.approx(DRIFT[3], rel=0.1), drift.joint


def test_extraction_finds_every_joint_level_direction_stroke_of_the_plan():
    plan, recording, intervals, _, _ = simulate_test(ROBOT, cycles=2, speed_fractions=(0.2, 0.6), noise=0.05)
    expected = collections.Counter((row.cycle, row.joint, round(row.speed_fraction, 3), row.direction)
                                   for row in plan.stages if row.kind == "friction" and row.label == "stroke")
    assert len(expected) == 2 * 6 * 2 * 2
    segments, notes = friction_stages.extract_friction_segments(recording, intervals)
    assert notes == []
    assert collections.Counter((s.cycle, s.joint, s.level, s.direction) for s in segments) == expected
    for segment in segments:      # the plateau is at the commanded speed, inside its stroke
        limit = ROBOT.limits[ROBOT.joint_names.index(segment.joint)].velocity
        assert segment.speed == pytest.approx(segment.direction * segment.speed_fraction * limit, rel=0.02)
        assert segment.n_samples >= 20


def test_gravity_removal_recovers_the_friction_of_a_joint_moving_against_gravity(long_test, friction):
    _, _, _, regressor, parameters = long_test
    coefficients = parameters[regressor.slices["friction"]].reshape(ROBOT.n_joints, -1)   # fc, fv per joint
    j2 = [s for s in friction.segments if s.joint == "j2"]
    fit = next(f for f in friction.fits if f.joint == "j2")
    assert fit.gravity_removed and not fit.horizontal
    b, t1, c, t2 = DRIFT
    minutes = np.array([s.elapsed_minutes for s in j2])
    speed = np.array([s.speed for s in j2])
    true = (coefficients[1, 0] * np.sign(speed) + coefficients[1, 1] * speed) \
        * (1.0 + b * np.exp(-minutes / t1) + c * np.exp(-minutes / t2))
    measured = np.array([s.friction for s in j2])
    np.testing.assert_allclose(measured, true, atol=0.01 * np.abs(true).max())
    raw = np.array([s.torque for s in j2])
    assert np.abs(raw - true).max() > 10 * 0.01 * np.abs(true).max()   # gravity is there to remove
    # joint 1's axis is vertical in the ER3A: no gravity terms are fitted
    assert next(f for f in friction.fits if f.joint == "j1").horizontal


def test_per_cycle_statistics_and_cross_verification():
    _, recording, _, _, _ = simulate_test(ROBOT, cycles=3, speed_fractions=(0.6,), noise=0.2)
    segments = per_cycle.cycle_segments([recording], "excitation")
    assert [s.label for s in segments] == ["cycle 0", "cycle 1", "cycle 2"]
    model = identify(recording.select(stage="excitation"), ROBOT,
                     IdentificationSettings(friction=friction_model("coulomb_viscous")))
    cycles = per_cycle.identify_cycles(segments, model, skip=1)
    separate = [identify(s.recording, ROBOT, IdentificationSettings(friction=model.friction), base=model.base)
                for s in segments]
    np.testing.assert_allclose(cycles.values, [m.values for m in separate])
    np.testing.assert_allclose(cycles.statistics.mean, np.mean(cycles.values, axis=0))
    np.testing.assert_allclose(cycles.warm_statistics.maximum, np.max(cycles.values[1:], axis=0))
    cross = per_cycle.cross_verification(list(zip(cycles.labels, cycles.models)), segments, 0.05)
    # the diagonal is each cycle's own fit: its RMS is the fit's own residual
    for k, m in enumerate(cycles.models):
        np.testing.assert_allclose(cross.reports[k][k].rms, list(m.metrics["residual_rms"].values()), rtol=1e-6)


def test_compare_flags_a_5_sigma_change_and_not_a_half_sigma_one():
    _, recording, _, _, _ = simulate_test(ROBOT, cycles=1, speed_fractions=(0.6,), noise=0.2)
    model = identify(recording.select(stage="excitation"), ROBOT,
                     IdentificationSettings(friction=friction_model("coulomb_viscous")))
    values = model.values.copy()
    values[3] += 5.0 * np.sqrt(2.0) * model.std[3]       # 5 combined std (both models have std)
    values[7] += 0.5 * np.sqrt(2.0) * model.std[7]
    changed = type(model)(model.robot, model.friction, model.armature, model.offset, model.base, values, model.std)
    comparison = compare_models([model, changed], ["a", "b"], level=0.05)
    assert comparison.t[0, 3] == pytest.approx(5.0) and comparison.t[0, 7] == pytest.approx(0.5)
    # a's block std has nu = blocks - 1 degrees of freedom, b's (white) none: Welch gives (2 s^2)^2 / (s^4 / nu)
    nu = 4.0 * model.interval_dof
    assert comparison.dof[0, 3] == pytest.approx(nu)
    assert comparison.z[0, 3] == pytest.approx(stats.norm.isf(stats.t.sf(5.0, nu)))
    assert comparison.significant[0].tolist() == [k == 3 for k in range(model.base.rank)]
    assert comparison.critical == pytest.approx(1.959964, rel=1e-6)
    with pytest.raises(DynIdError, match="at least two models"):
        compare_models([model], ["a"])
    assert comparison.payloads == ("none", "none") and comparison.payload_note == ""


def test_compare_names_the_payloads_two_models_carry():
    """The same arm with and without a 2 kg tool: the comparison says which model carries which payload, since the
    last link's differences are the tool's."""
    from robot_dynid.model.payload import Payload, default_frame
    _, recording, _, _, _ = simulate_test(ROBOT, cycles=1, speed_fractions=(0.6,), noise=0.2)
    arm = identify(recording.select(stage="excitation"), ROBOT,
                   IdentificationSettings(friction=friction_model("coulomb_viscous")))
    tool = Payload(default_frame(ROBOT), 2.0, (0.0, 0.0, 0.08), (0.004, 0.0, 0.0, 0.004, 0.0, 0.002))
    comparison = compare_models([arm, arm.with_payload(tool)], ["arm", "tool"])
    assert comparison.payloads[0] == "none"
    assert comparison.payloads[1] == f"2 kg at {tool.frame!r}, centre of mass [0, 0, 0.08] m"
    assert comparison.payload_note.startswith(f"the models carry different payloads (arm: none; tool: 2 kg at "
                                              f"{tool.frame!r}")


def test_plateau_is_the_longest_constant_velocity_run():
    speed = np.concatenate([np.linspace(0, 1, 10), np.full(30, 1.0), np.linspace(1, 0, 10)])
    found = friction_stages.plateau(speed, 1)
    assert (found.start, found.stop) == (9, 41)
    assert friction_stages.plateau(-speed, 1) is None
