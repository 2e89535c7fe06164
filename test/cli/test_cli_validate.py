"""robot-dynid validate: what its numbers were computed on is said with them. A model identified with --lowpass
is scored against the filtered measured torques (as its training torques were) and against the raw ones, both
labelled in the text, the JSON and the report page; the conditioning of the data is stated.

Data: torque_cases' UR5 with white torque noise of a known std per joint, so the raw residual cannot fall below
that noise (it is in the measured torques), while the filtered one can."""
import dataclasses
import json

import numpy as np
import pytest

from robot_dynid.recordings.csv_io import write_csv
from cli_output import run
import torque_cases
from torque_cases import write_description

CUTOFF = 5.0    # Hz: keeps a tenth of the band of 100 Hz samples


@pytest.fixture(scope="module")
def lowpass_model(tmp_path_factory):
    directory = tmp_path_factory.mktemp("validate")
    effects = dataclasses.replace(torque_cases.EFFECTS, rho=0.0)
    robot = write_description(torque_cases.described(), directory / "ur5_prior.yaml")
    for name, seed in (("train", 2), ("test", 7)):
        write_csv(directory / f"{name}.csv", torque_cases.run(effects=effects, seed=seed, source=f"{name}.csv")
                  .recording)
    model = directory / "model.yaml"
    assert run("identify", "--robot", robot, "--data", directory / "train.csv", "--lowpass", CUTOFF, "--out",
               model).returncode == 0
    return {"dir": directory, "robot": robot, "model": model, "test": directory / "test.csv", "noise": effects.noise}


def test_a_lowpass_model_is_scored_against_filtered_and_raw_torques_both_labelled(lowpass_model):
    result = run("validate", "--model", lowpass_model["model"], "--data", lowpass_model["test"], "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["lowpass"] == CUTOFF
    assert summary["scored_against"] == (f"measured torques low-pass filtered at {CUTOFF:g} Hz, as the model's "
                                         "training torques were")
    assert summary["raw"]["scored_against"] == "raw measured torques (unfiltered)"
    joints = list(summary["joints"])
    filtered = np.array([summary["joints"][joint]["rms"] for joint in joints])
    raw = np.array([summary["raw"]["joints"][joint]["rms"] for joint in joints])
    # the measured torques hold white noise of a known std: no model's raw residual is below it; the filter
    # removes nine tenths of its power from both sides
    assert np.all(raw >= lowpass_model["noise"]), (raw, lowpass_model["noise"])
    assert np.all(filtered < raw) and summary["mean_nrms"] < summary["raw"]["mean_nrms"]

    text = run("validate", "--model", lowpass_model["model"], "--data", lowpass_model["test"]).stdout
    assert f"against measured torques low-pass filtered at {CUTOFF:g} Hz, as the model's training torques were:" \
        in text
    assert "against the raw measured torques (unfiltered):" in text
    assert text.count("mean NRMS over joints with an effort limit") == 2
    assert f"{summary['raw']['mean_nrms']:.4g}" in text and f"{summary['mean_nrms']:.4g}" in text


def test_the_text_states_how_the_data_were_conditioned(lowpass_model):
    text = run("validate", "--model", lowpass_model["model"], "--data", lowpass_model["test"]).stdout
    first = next(line for line in text.splitlines() if line.startswith("validation on "))
    assert "conditioned as the model's training data: " in first and f"low-pass {CUTOFF:g} Hz" in first, first
    raw = run("validate", "--model", lowpass_model["model"], "--data", lowpass_model["test"], "--raw").stdout
    first = next(line for line in raw.splitlines() if line.startswith("validation on "))
    assert "conditioned raw: " in first and "against measured torques:" in raw and "unfiltered" not in raw


def test_the_report_page_of_a_lowpass_model_gives_both_tables(lowpass_model, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "report"
    assert run("report", "--robot", lowpass_model["robot"], "--data", lowpass_model["test"], "--model",
               lowpass_model["model"], "--validate", lowpass_model["test"], "--out", out).returncode == 0
    page = (out / "index.html").read_text()
    assert page.count(f"against measured torques low-pass filtered at {CUTOFF:g} Hz") == 2     # identification,
    assert page.count("against raw measured torques (unfiltered)") == 2                          # held-out
    summary = json.loads((out / "summary.json").read_text())
    assert all(fit["raw"] is not None for fit in summary["torque_fits"])
