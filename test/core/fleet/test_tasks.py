"""A worker's identification of one recording: a model when the data are good, otherwise a failed outcome
whose reason names the cause (never an exception): the quality gate, data that leave parameters
unidentifiable, torques refused by the torque check on the samples identify would be given."""
import dataclasses
import re

import numpy as np
import pytest

from real_world import excitation, with_rests
from robot_dynid.errors import DataError
from robot_dynid.estimation.identification import identify
from robot_dynid.estimation.torque_scale import slow_samples
from robot_dynid.fleet.task_options import TaskOptions
from robot_dynid.fleet.tasks import identify_entry
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.recordings.conditioning import Conditioning
from robot_dynid.recordings.csv_io import write_csv
from robot_dynid.recordings.pipeline import run
from simulated_fleet import arm_recording, COULOMB, ROBOT
import torque_cases
from torque_cases import write_description


@pytest.fixture(scope="module")
def recording():
    return arm_recording(load_robot(ROBOT), arm=0, week=0, rate=100.0)


def test_a_good_recording_gives_a_model_whose_friction_is_the_simulated_one(recording, tmp_path):
    write_csv(tmp_path / "a.csv", recording)
    outcome = identify_entry(str(tmp_path / "a.csv"), str(ROBOT), None, TaskOptions(report=False),
                             {"fleet": {"robot_id": "arm0"}})
    assert outcome.status == "identified" and outcome.reason == "" and outcome.peak_memory > 0
    model = DynamicModel.from_yaml(outcome.model_yaml)
    fc = np.array([model.values[model.base.names.index(f"fc{j}")] for j in range(1, 7)])
    np.testing.assert_allclose(fc, COULOMB, rtol=0.05)
    assert model.provenance["fleet"] == {"robot_id": "arm0"}
    assert model.metrics["holdout"]["rsd"] == pytest.approx(outcome.holdout_rsd) and outcome.holdout_rsd < 0.1


def test_the_quality_gate_rejects_with_its_reason(recording, tmp_path):
    write_csv(tmp_path / "a.csv", recording)
    outcome = identify_entry(str(tmp_path / "a.csv"), str(ROBOT), None, TaskOptions(max_condition=2.0, report=False))
    assert outcome.status == "failed" and outcome.model_yaml is None and outcome.cacheable
    assert outcome.reason.startswith("rejected by the quality gate: condition number ")
    assert "is not below max_condition = 2 (poorly excited data)" in outcome.reason


def test_a_joint_that_never_moves_leaves_its_parameters_unidentifiable(recording, tmp_path):
    fields = {name: getattr(recording, name).copy() for name in ("q", "qd", "qdd")}
    for values in fields.values():
        values[:, 5] = 0.0
    still = dataclasses.replace(recording, **fields)
    write_csv(tmp_path / "still.csv", still)
    outcome = identify_entry(str(tmp_path / "still.csv"), str(ROBOT), None, TaskOptions(report=False))
    assert outcome.status == "failed" and outcome.model_yaml is None
    assert outcome.reason.startswith("regressor is rank deficient")
    assert "(fc6, fv6) are not identifiable" in outcome.reason


def test_a_recordings_validation_stage_comes_back_as_its_motion(recording, tmp_path):
    """The rows labelled validation (the CSV's stage column), in the robot's joint order: the wear indicators'
    reference motion (estimation.wear.validation_motion); a recording without them gives none."""
    stage = np.where(np.arange(recording.n_samples) < 1200, "excitation", "validation")
    write_csv(tmp_path / "a.csv", recording.with_labels(stage))
    outcome = identify_entry(str(tmp_path / "a.csv"), str(ROBOT), "excitation", TaskOptions(report=False))
    assert outcome.status == "identified"
    q, qd, qdd = outcome.validation_motion
    np.testing.assert_allclose(q, recording.q[1200::2], atol=1e-9)          # 401 samples thinned to 201
    assert qd.shape == qdd.shape == (201, 6)
    write_csv(tmp_path / "b.csv", recording)
    assert identify_entry(str(tmp_path / "b.csv"), str(ROBOT), None, TaskOptions(report=False)).validation_motion \
        is None


# ------------------------------------------------------------------------------------------------ torque check
@pytest.fixture(scope="module")
def described(tmp_path_factory):
    """The UR5 with inertial data 5 % heavy (torque_cases), as a file."""
    return write_description(torque_cases.described(), tmp_path_factory.mktemp("robot") / "ur5_prior.yaml")


def test_a_good_unloaded_run_resting_where_gravity_vanishes_is_identified(tmp_path):
    """The false "motor currents passed as torques" fleet raised on a run identify accepts: its only slow samples
    are a rest where the shoulder's gravity torque nearly vanishes (torque_cases.zero_gravity_rest)."""
    robot, _, motion = torque_cases.zero_gravity_rest()
    description = write_description(robot, tmp_path / "ur5_cad.yaml")
    write_csv(tmp_path / "run.csv", torque_cases.run(motion=motion).recording)
    outcome = identify_entry(str(tmp_path / "run.csv"), str(description), None, TaskOptions(report=False))
    assert outcome.status == "identified", outcome.reason


def test_torques_are_checked_on_the_selection_identify_gets_before_the_hold_out_is_split_off(described, tmp_path):
    """Currents whose only slow samples lie in the last 20 % of the run (the fleet's hold-out): identify refuses
    them on the selection, and so does the fleet, whose check once saw only the part left for the fit."""
    motion = with_rests(excitation(torque_cases.ROBOT, seed=3), [(52.0, 1.0, 3.0)])
    write_csv(tmp_path / "currents.csv", torque_cases.run(currents=True, motion=motion).recording)
    robot = load_robot(described)
    selection = run(tmp_path / "currents.csv", robot, Conditioning(velocity_at_rest="measured")).selection.recording
    assert np.all(selection.time[slow_samples(selection, robot)] > 0.8 * selection.time[-1])
    with pytest.raises(DataError, match="motor currents"):
        identify(selection, robot)
    outcome = identify_entry(str(tmp_path / "currents.csv"), str(described), None, TaskOptions(report=False))
    assert outcome.status == "failed" and outcome.cacheable
    assert re.search(r"currents\.csv: joint (shoulder_lift|elbow)_joint: the recorded torques are 0\.0\d+ times .* "
                     r"motor currents \[A\] passed as torques", outcome.reason), outcome.reason
    # a row whose torque_check is false: identified (its model is off by the torque constants, as asked)
    unchecked = TaskOptions(report=False).for_entry(torque_check=False)
    assert identify_entry(str(tmp_path / "currents.csv"), str(described), None, unchecked).status == "identified"
    assert unchecked.settings_key(robot, None) != TaskOptions(report=False).settings_key(robot, None)


def test_a_bug_fails_the_entry_with_its_type_and_message_on_one_line_and_is_not_cached(monkeypatch, tmp_path):
    import robot_dynid.fleet.tasks as tasks

    def broken(*arguments):
        raise ValueError("joint\n  j7 missing")
    monkeypatch.setattr(tasks, "_identify", broken)
    outcome = identify_entry(str(tmp_path / "a.csv"), str(ROBOT), None, TaskOptions(report=False))
    assert outcome.status == "failed" and not outcome.cacheable
    assert outcome.reason == "internal error (ValueError: joint j7 missing)"


def test_a_report_that_fails_leaves_the_model_and_says_why_on_one_line(recording, tmp_path, monkeypatch):
    import robot_dynid.fleet.tasks as tasks

    def refused(*arguments, **options):
        raise DataError("stage markers\n  unreadable")
    monkeypatch.setattr(tasks, "stage_table", refused)
    write_csv(tmp_path / "a.csv", recording)
    outcome = identify_entry(str(tmp_path / "a.csv"), str(ROBOT), None, TaskOptions(report=True))
    assert outcome.status == "identified" and outcome.model_yaml is not None and outcome.report_files == {}
    assert outcome.report_note == "no report: stage markers unreadable"
