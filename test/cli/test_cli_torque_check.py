"""The torque check through every command that reads torques, on recordings with what real ones have
(torque_cases: a UR5 whose description is 5 % heavy, RNEA torques with exact Coulomb friction, per-joint AR(1)
noise, quantised encoders; the same motion unloaded and with a 3 kg payload; the efforts as motor currents).

A recording identify accepts is accepted everywhere, loaded or not; currents are refused everywhere, in the same
words; ``--no-torque-check`` (a manifest's ``torque_check`` column for fleet) lets them through wherever the check
runs."""
import json
import re

import numpy as np
import pytest
import yaml

from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.recordings.csv_io import write_csv
from cli_output import run
import torque_cases
from torque_cases import write_description

CURRENTS = r"joint (shoulder_lift|elbow)_joint: the recorded torques are 0\.0\d+ times .* motor currents \[A\]"


def refused(result, command):
    """The one error line of a refused ``command``."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, (result.returncode, result.stderr)
    assert lines[-1].startswith(f"robot-dynid {command}: error: ")
    assert re.search(CURRENTS, lines[-1]) and "--no-torque-check" in lines[-1], lines[-1]
    return lines[-1]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The description, the unloaded and loaded runs and their currents as CSV, the arm identified unloaded, the
    payload file of the 3 kg payload and the arm's model with it attached."""
    directory = tmp_path_factory.mktemp("torque_check")
    paths = {"robot": write_description(torque_cases.described(), directory / "ur5_prior.yaml")}
    for loaded in (False, True):
        for currents in (False, True):
            name = ("loaded" if loaded else "unloaded") + ("_currents" if currents else "")
            paths[name] = directory / f"{name}.csv"
            write_csv(paths[name], torque_cases.run(loaded, currents, source=paths[name].name).recording)
    paths["arm"] = directory / "arm.yaml"
    assert run("identify", "--robot", paths["robot"], "--data", paths["unloaded"], "--out",
               paths["arm"]).returncode == 0
    payload = torque_cases.payload()
    paths["payload"] = directory / "payload.yaml"
    paths["payload"].write_text(yaml.safe_dump(payload.to_dict()))
    paths["loaded_model"] = directory / "arm_loaded.yaml"
    assert run("payload", "attach", "--model", paths["arm"], "--payload", paths["payload"], "--out",
               paths["loaded_model"]).returncode == 0
    return paths


def test_identify_accepts_both_runs_and_refuses_their_currents(files, tmp_path):
    for name in ("unloaded", "loaded"):
        assert run("identify", "--robot", files["robot"], "--data", files[name], "--out",
                   tmp_path / "m.yaml").returncode == 0
        result = run("identify", "--robot", files["robot"], "--data", files[f"{name}_currents"], "--out",
                     tmp_path / "m.yaml")
        assert f"{name}_currents.csv: joint" in refused(result, "identify")
        assert run("identify", "--robot", files["robot"], "--data", files[f"{name}_currents"], "--no-torque-check",
                   "--out", tmp_path / "m.yaml").returncode == 0


def test_validate_accepts_the_loaded_run_for_the_model_with_its_payload_and_refuses_currents(files):
    result = run("validate", "--model", files["loaded_model"], "--data", files["loaded"], "--json")
    assert result.returncode == 0, result.stderr
    with_payload = json.loads(result.stdout)
    without = json.loads(run("validate", "--model", files["arm"], "--data", files["loaded"], "--json").stdout)
    # the payload explains the loaded run's extra torque: the arm alone misses it
    for joint in ("shoulder_lift_joint", "elbow_joint"):
        assert with_payload["joints"][joint]["rms"] < 0.5 * without["joints"][joint]["rms"]
    refused(run("validate", "--model", files["loaded_model"], "--data", files["loaded_currents"]), "validate")
    assert run("validate", "--model", files["loaded_model"], "--data", files["loaded_currents"],
               "--no-torque-check").returncode == 0


def test_payload_identify_takes_the_loaded_run_and_refuses_its_currents(files, tmp_path):
    """The loaded run payload identify exists for is accepted (the check allows what a payload of up to twice the
    UR5's rated 5 kg could add); as currents it is refused, unless --no-torque-check."""
    out = tmp_path / "payload.yaml"
    result = run("payload", "identify", "--model", files["arm"], "--data", files["loaded"], "--out", out)
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(out.read_text())["mass"] == pytest.approx(torque_cases.PAYLOAD[0], rel=0.1)
    message = refused(run("payload", "identify", "--model", files["arm"], "--data", files["loaded_currents"],
                          "--out", out), "payload")
    assert "with a payload being identified (up to 10 kg" in message
    assert run("payload", "identify", "--model", files["arm"], "--data", files["loaded_currents"],
               "--no-torque-check", "--out", out).returncode == 0


def test_report_checks_its_data_with_a_given_model_and_its_held_out_files(files, tmp_path):
    refused(run("report", "--robot", files["robot"], "--data", files["unloaded_currents"], "--model", files["arm"],
                "--out", tmp_path / "r1"), "report")
    refused(run("report", "--robot", files["robot"], "--data", files["unloaded"], "--validate",
                files["unloaded_currents"], "--out", tmp_path / "r2"), "report")
    assert run("report", "--robot", files["robot"], "--data", files["unloaded"], "--validate",
               files["unloaded_currents"], "--no-torque-check", "--out", tmp_path / "r3").returncode == 0


def test_predict_uses_no_recorded_torque_and_so_has_nothing_to_check(files, tmp_path):
    """predict computes a model's torques along recorded motion: the currents' efforts are not read into
    anything, so the same motion gives the same prediction."""
    for name in ("unloaded", "unloaded_currents"):
        assert run("predict", "--model", files["arm"], "--data", files[name], "--out",
                   tmp_path / f"{name}.csv").returncode == 0
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "unloaded.csv", delimiter=",", skiprows=1),
                                  np.loadtxt(tmp_path / "unloaded_currents.csv", delimiter=",", skiprows=1))


def test_the_check_has_one_wording_in_every_command(files, tmp_path):
    """The sentence after the file name is the same whichever command reads the currents, but for its numbers:
    each command judges the samples it uses (report: the excitation stage)."""
    messages = [refused(run(*arguments), arguments[0]) for arguments in (
        ("identify", "--robot", files["robot"], "--data", files["unloaded_currents"], "--out", tmp_path / "m.yaml"),
        ("validate", "--model", files["arm"], "--data", files["unloaded_currents"]),
        ("report", "--robot", files["robot"], "--data", files["unloaded_currents"], "--out", tmp_path / "r"))]
    tails = {re.sub(r"\d+(\.\d+)?", "#", message.split("unloaded_currents.csv: ", 1)[1]) for message in messages}
    assert len(tails) == 1, tails
    assert DynamicModel.load(files["arm"]).payload is None


def test_the_poorly_excited_hint_offers_mass_only_when_it_was_not_given(files, tmp_path):
    """The loaded run's rests (the arm still: gravity only) cannot determine the payload's inertia (without the
    solid-body prior, which would fill it in): the hint names --mass as a remedy unless --mass was given."""
    out = tmp_path / "payload.yaml"
    rests = ("payload", "identify", "--model", files["arm"], "--data", files["loaded"], "--stage", "rest",
             "--no-inertia-prior")
    without = run(*rests, "--out", out).stdout
    given = run(*rests, "--mass", torque_cases.PAYLOAD[0], "--out", out).stdout
    assert "excite the wrist more" in without and "or give --mass" in without
    assert "excite the wrist more" in given and "--mass" not in given.split("excite the wrist more")[1]
