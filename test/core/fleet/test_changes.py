"""Multiple comparisons (Holm, Benjamini-Hochberg) against hand computations from their definitions
(METHODS.md section 10), and the family-wise error rate they promise on simulated null p-values; wear verdicts on
real-world fleets (below), judged against the simulation's truth."""
import datetime
import os

import numpy as np
import pytest

from robot_dynid.errors import DynIdError
from robot_dynid.fleet.changes import analyse_fleet, benjamini_hochberg, correct, FleetRecord, holm, two_sided_p
from robot_dynid.fleet.task_options import TaskOptions
from robot_dynid.fleet.tasks import identify_entry
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.recordings.csv_io import write_csv
from simulated_fleet import arm_links, COULOMB, FIRST_DAY, real_world_arm_recording, ROBOT, VISCOUS, Wear


def test_holm_steps_down_and_stops_at_the_first_p_value_above_its_threshold():
    # sorted 0.005 <= 0.05/4, 0.01 <= 0.05/3, 0.03 > 0.05/2: stop (0.04 <= 0.05/1 is not reached)
    adjusted, rejected = holm([0.01, 0.04, 0.03, 0.005], 0.05)
    assert rejected.tolist() == [True, False, False, True]
    # adjusted: running max of (m - k + 1) p_(k) = 0.02, 0.03, 0.06, max(0.06, 0.04)
    np.testing.assert_allclose(adjusted, [0.03, 0.06, 0.06, 0.02])


def test_benjamini_hochberg_steps_up_past_a_p_value_above_its_own_threshold():
    # k = 3: 0.039 > 3 * 0.05 / 4 = 0.0375, but k = 4: 0.04 <= 0.05, so all four are rejected; Holm stops at 0.02
    adjusted, rejected = benjamini_hochberg([0.01, 0.02, 0.039, 0.04], 0.05)
    assert rejected.all()
    np.testing.assert_allclose(adjusted, [0.04, 0.04, 0.04, 0.04])   # min over j >= k of 4 p_(j) / j
    assert holm([0.01, 0.02, 0.039, 0.04], 0.05)[1].tolist() == [True, False, False, False]
    assert benjamini_hochberg([0.001, 0.2, 0.03, 0.04], 0.05)[1].tolist() == [True, False, False, False]


def test_two_sided_p_of_the_normal_quantiles():
    np.testing.assert_allclose(two_sided_p([1.959963984540054, -2.5758293035489, 0.0, np.inf]),
                               [0.05, 0.01, 1.0, 0.0], atol=1e-12)


@pytest.mark.parametrize("method", ["holm", "bh"])
def test_an_unchanged_fleet_raises_a_flag_at_most_at_the_stated_rate(method):
    """2000 fleets of 384 true null hypotheses: the share with any flag stays at the level (within three binomial
    standard deviations), where the uncorrected tests flag almost every fleet."""
    rng = np.random.default_rng(7)
    level, fleets, tests = 0.05, 2000, 384
    any_flag = np.array([correct(rng.uniform(size=tests), level, method)[1].any() for _ in range(fleets)])
    assert any_flag.mean() <= level + 3 * np.sqrt(level * (1 - level) / fleets)
    assert np.mean(rng.uniform(size=(fleets, tests)).min(axis=1) <= level) > 0.99


def test_bad_levels_and_p_values_are_refused():
    with pytest.raises(DynIdError, match=r"significance level must be finite and in \(0, 1\), got 1.5"):
        holm([0.1], 1.5)
    with pytest.raises(DynIdError, match=r"p-values must lie in \[0, 1\]"):
        benjamini_hochberg([0.1, np.nan])
    with pytest.raises(DynIdError, match=r"correction must be one of \['holm', 'bh'\], got 'bonferroni'"):
        correct([0.1], 0.05, "bonferroni")


# Wear verdicts on real-world fleets: UR5 arms whose torques come from pinocchio's RNEA with exact Coulomb and
# viscous friction, per-joint AR(1) noise (rho 0.9), a different excitation trajectory per recording; each recording
# identified as a fleet worker does (tasks.identify_entry on a CSV file), no Dask. WEAR_REPETITIONS sets how many
# fleets are drawn (the counts are printed; run with -s to see them).
REPETITIONS = int(os.environ.get("WEAR_REPETITIONS", "4"))
ARMS, RECORDINGS = 6, 3
WORN = Wear(arm=1, joint=2, rise=0.3, week=2)        # elbow_joint friction +30 % from the third recording on


def _record(robot_id, index, path, hours=0):
    outcome = identify_entry(str(path), str(ROBOT), None, TaskOptions(report=False))
    assert outcome.status == "identified", outcome.reason
    moment = (FIRST_DAY + datetime.timedelta(weeks=index, hours=hours)).isoformat()
    return FleetRecord(robot_id, moment, path.name, "identified", "", DynamicModel.from_yaml(outcome.model_yaml))


@pytest.fixture(scope="module")
def real_world_fleets(tmp_path_factory):
    """Per repetition: (unchanged fleet's histories, the same fleet with arm 1 worn)."""
    robot = load_robot(ROBOT)
    directory = tmp_path_factory.mktemp("real_world_fleets")
    fleets = []
    for repetition in range(REPETITIONS):
        unchanged, worn = {}, {}
        for arm in range(ARMS):
            for index in range(RECORDINGS):
                path = directory / f"r{repetition}_arm{arm}_{index}.csv"
                write_csv(path, real_world_arm_recording(robot, arm, index, repetition=repetition))
                record = _record(f"arm{arm}", index, path, arm)
                unchanged.setdefault(record.robot_id, []).append(record)
                if arm == WORN.arm and index >= WORN.week:
                    path = directory / f"r{repetition}_arm{arm}_{index}_worn.csv"
                    write_csv(path, real_world_arm_recording(robot, arm, index, WORN, repetition=repetition))
                    record = _record(f"arm{arm}", index, path, arm)
                worn.setdefault(record.robot_id, []).append(record)
        fleets.append((unchanged, worn))
    return fleets


def test_unchanged_fleets_on_different_trajectories_raise_no_wear_flag(real_world_fleets):
    """The null: at most the nominal share of unchanged fleets has any significant indicator (Holm over the fleet:
    any false flag with probability at most 5 %), and the practical threshold leaves none as wear. (The parameter
    comparison, printed for contrast, flagged nearly every fleet with the white-noise std; with the block std it
    flags fewer, but it still measures the trajectory as well as the robot.)"""
    old, significant, flagged = 0, 0, 0
    for unchanged, _ in real_world_fleets:
        analysis = analyse_fleet(unchanged)
        old += any(changes.flagged_names for changes in analysis.robots.values())
        significant += any(changes.wear.significant.any() for changes in analysis.robots.values())
        flagged += any(changes.wear.flagged.any() for changes in analysis.robots.values())
        assert all(verdict.startswith(f"{robot_id}: no change beyond") for robot_id, verdict in
                   analysis.verdicts.items())
        assert analysis.n_wear_tests == ARMS * (RECORDINGS - 1) * 32        # 12 friction, 14 gravity, 6 motion
    print(f"\n{REPETITIONS} unchanged fleets of {ARMS} arms x {RECORDINGS} recordings: with any flagged parameter "
          f"{old}, with any significant indicator {significant}, with any wear flag {flagged}")
    assert flagged == 0
    assert significant <= max(1, round(0.05 * REPETITIONS + 3 * np.sqrt(0.05 * 0.95 * REPETITIONS)))


def test_a_30_percent_friction_rise_is_flagged_on_its_joint_with_its_sign_and_size(real_world_fleets):
    """The expected change is the truth's: 30 % of the elbow's Coulomb plus viscous friction at each reference speed
    (2 N m + 1.5 N m s/rad * v), met within three of the change's own std (the fastest speed, 1.58 rad/s, lies
    beyond most of the excitations' speeds: its friction is extrapolated); only the worn arm is flagged, only on the
    elbow's friction."""
    for _, worn in real_world_fleets:
        analysis = analyse_fleet(worn)
        findings = analysis.robots["arm1"].findings
        assert findings
        assert {(finding["joint"], finding["kind"]) for finding in findings} == {("elbow_joint", "friction")}
        for finding in findings:
            expected = WORN.rise * (COULOMB[WORN.joint] + VISCOUS[WORN.joint] * finding["speed"])
            assert abs(finding["change"] - expected) <= 3 * finding["combined_std"]
            assert finding["since"].startswith("2026-03-16")
        assert analysis.verdicts["arm1"].startswith("arm1: elbow_joint friction +")
        assert analysis.verdicts["arm1"].endswith("since 2026-03-16")
        assert all(verdict.startswith(f"{robot_id}: no change beyond") for robot_id, verdict in
                   analysis.verdicts.items() if robot_id != "arm1")


def test_one_unchanged_robot_recorded_with_four_excitations_raises_no_wear_flag(tmp_path):
    robot = load_robot(ROBOT)
    records = []
    for index in range(4):
        path = tmp_path / f"r{index}.csv"
        write_csv(path, real_world_arm_recording(robot, 2, index, repetition=7))
        records.append(_record("cobot", index, path))
    analysis = analyse_fleet({"cobot": records})
    changes = analysis.robots["cobot"]
    print(f"\none robot, four excitations: {len(changes.flagged_names)} of {len(changes.names)} base parameters "
          f"flagged, {int(changes.wear.significant.sum())} of {changes.wear.n_tests} indicator tests significant")
    assert not changes.wear.flagged.any() and not changes.findings
    assert analysis.verdicts["cobot"] == "cobot: no change beyond the fleet's spread (4 recordings)"


def test_verdicts_of_robots_without_a_comparison_say_why():
    robot = load_robot(ROBOT)
    model = _model_of(robot)
    day = FIRST_DAY.isoformat()
    analysis = analyse_fleet({
        "lone": [FleetRecord("lone", day, "a.csv", "identified", "", model)],
        "broken": [FleetRecord("broken", day, "b.csv", "failed", "truncated")],
    })
    assert analysis.verdicts == {"lone": "lone: one recording (2026-03-02): nothing to compare with yet",
                                 "broken": "broken: no recording identified (1 failed)"}
    given = analyse_fleet({"lone": [FleetRecord("lone", day, "a.csv", "identified", "", model)]}, baseline=model)
    assert given.verdicts["lone"] == ("lone: not tested (1 recordings): no recording-to-recording spread in the "
                                      "fleet yet")


def _model_of(robot):
    from robot_dynid.model.base_parameters import compute_base_parameters
    from robot_dynid.model.friction import friction_model
    from robot_dynid.model.regressor import Regressor
    friction = friction_model("coulomb_viscous")
    base = compute_base_parameters(Regressor(robot, friction))
    standard = np.concatenate([arm_links(robot, 0), np.column_stack([COULOMB, VISCOUS]).ravel()])
    return DynamicModel(robot, friction, False, False, base, base.projection @ standard, np.full(base.rank, 0.01))
