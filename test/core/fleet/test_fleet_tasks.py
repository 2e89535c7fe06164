"""A worker's identification of one recording: a model when the data are good, otherwise a failed outcome
whose reason names the cause (never an exception): the quality gate, data that leave parameters
unidentifiable."""
import dataclasses

import numpy as np
import pytest

from robot_dynid.fleet.tasks import identify_entry, TaskOptions
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.recordings.csv_io import write_csv
from simulated_fleet import arm_recording, COULOMB, ROBOT


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
