"""A long recording read with its fields in files (stored_columns), against the same recording held in
memory: the same numbers from every command, and identify never reads more than a piece of a field at once.

The files are a rosbags-written MCAP bag (not our recorder) and a numpy-written CSV of an arm recorded as hardware
does (test/real_world.py: RNEA torques with per-joint AR(1) noise and an unmodelled ripple, receive-time stamps
jittering about the sensor's clock, lost samples, repeated rows, quantised positions, rests), with a torque spike
beyond the robot's limit, a message with a NaN effort and a gap of lost messages longer than the derivative
window. The thresholds are lowered so that a one-minute recording takes the paths of a shift's: every field in a
file, pieces of 4,096 rows, the recording-wide noise and motion estimates from blocks.
"""
import json

import numpy as np
import pytest
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from cli_output import run
from real_world import Effects, excitation, simulate, with_rests
from robot_dynid.estimation.derivative_window import FOLDS, MAX_SAMPLES
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid import stored_columns
from robot_dynid.recordings import conditioning, signal_processing

ROBOT = find_package_file("config", "robots", "ur5.yaml")
PIECE = 4096
RATE = 1000.0
DURATION = 60.0


def arm_recording(velocity):
    robot = load_robot(ROBOT)
    motion = with_rests(excitation(robot, seed=3), [(12.0, 0.5, 1.5), (40.0, 0.3, 0.8)])
    effects = Effects(noise=np.linspace(0.2, 0.6, 6), rho=0.9, ripple=0.3, quantum=2e-6, velocity=velocity,
                      velocity_noise=1e-3, stamps="receive", jitter=0.2, drop=0.003, repeat=0.002)
    recording = simulate(robot, motion, DURATION, RATE, effects, seed=5).recording
    keep = (recording.time < 30.0) | (recording.time > 30.08)       # 80 ms of lost messages
    tau = np.array(recording.tau[keep])
    tau[5000, 2] = 10.0 * robot.limit_arrays().effort[2]            # beyond any plausible torque: dropped
    qd = None if recording.qd is None else recording.qd[keep]
    return robot.joint_names, recording.time[keep], recording.q[keep], qd, tau


def write_bag(path, names, time, q, qd, tau):
    typestore = get_typestore(Stores.ROS2_JAZZY)
    types = typestore.types
    stamps_ns = np.round((1.7e9 + time) * 1e9).astype(np.int64)
    with Writer(path, version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=typestore)
        for k, stamp in enumerate(stamps_ns.tolist()):
            header = types["std_msgs/msg/Header"](
                stamp=types["builtin_interfaces/msg/Time"](sec=stamp // 10**9, nanosec=stamp % 10**9), frame_id="")
            effort = tau[k].copy()
            if k == 7000:
                effort[1] = np.nan          # a message the reader skips
            message = types["sensor_msgs/msg/JointState"](
                header=header, name=list(names), position=q[k], velocity=np.empty(0) if qd is None else qd[k],
                effort=effort)
            writer.write(connection, stamp + 150_000, typestore.serialize_cdr(message, "sensor_msgs/msg/JointState"))
    return path


def write_csv(path, names, time, q, qd, tau):
    fields = [("q", q), ("qd", qd), ("tau", tau)]
    header = ",".join(["time"] + [f"{field}.{name}" for field, values in fields if values is not None
                                  for name in names])
    table = np.column_stack([time] + [values for _, values in fields if values is not None])
    np.savetxt(path, table, fmt="%.17g", delimiter=",", header=header, comments="")
    return path


@pytest.fixture(scope="module", params=["recorded", None], ids=["velocities", "no-velocities"])
def files(request, tmp_path_factory):
    directory = tmp_path_factory.mktemp(f"stored_{request.param}")
    names, time, q, qd, tau = arm_recording(request.param)
    return {"mcap": write_bag(directory / "bag", names, time, q, qd, tau),
            "csv": write_csv(directory / "arm.csv", names, time, q, qd, tau)}


class Reads:
    """The rows of every whole read of a stored column (``np.asarray``) while it is installed."""

    def __init__(self, monkeypatch):
        self.rows = []
        original = stored_columns.StoredColumn.__array__

        def counted(column, dtype=None, copy=None):
            self.rows.append(column.shape[0])
            return original(column, dtype, copy)
        monkeypatch.setattr(stored_columns.StoredColumn, "__array__", counted)


def stored(monkeypatch, on: bool):
    """Fields in files (selections of more than PIECE rows too, pieces of PIECE rows) or in memory."""
    monkeypatch.setattr(conditioning, "ESTIMATE_SAMPLES", 5 * PIECE)       # from blocks, as of a long recording
    monkeypatch.setattr(stored_columns, "SPILL_BYTES", 0 if on else 10**15)
    monkeypatch.setattr(stored_columns, "IN_MEMORY_BYTES", 8 * 6 * PIECE if on else 10**15)
    for module, name in ((stored_columns, "PIECE_ROWS"), (signal_processing, "DERIVATIVE_PIECE"),
                         (conditioning, "REST_PIECE")):
        monkeypatch.setattr(module, name, PIECE if on else 10**9)


def identify(path, out, *extra):
    outcome = run("identify", "--robot", ROBOT, "--data", path, "--friction", "coulomb_viscous", "--out", out,
                  "--json", *extra)
    assert outcome.returncode == 0, outcome.stderr
    return DynamicModel.load(out), json.loads(outcome.stdout)


@pytest.mark.parametrize("kind", ["mcap", "csv"])
def test_identify_from_stored_fields_gives_the_model_of_the_fields_in_memory(files, kind, tmp_path, monkeypatch):
    """The model (values, std, residuals, noise, the dropped samples by reason, the derivative window chosen by
    cross-validation, the conditioning record) is that of the in-memory reading to 1e-10; no read of a stored
    field takes more than a few pieces' rows (the recording is 60,000)."""
    stored(monkeypatch, False)
    memory, memory_summary = identify(files[kind], tmp_path / "memory.yaml")
    stored(monkeypatch, True)
    reads = Reads(monkeypatch)
    model, summary = identify(files[kind], tmp_path / "stored.yaml")
    assert reads.rows, "no field was stored"
    # the window choice's excerpts are read whole, each a fixed size however long the recording
    assert max(reads.rows) <= max(2 * PIECE, MAX_SAMPLES // FOLDS), f"a read of {max(reads.rows)} rows"
    np.testing.assert_allclose(model.values, memory.values, rtol=1e-10, atol=0.0)
    np.testing.assert_allclose(model.std, memory.std, rtol=1e-10, atol=0.0)
    for key in ("rsd", "residual_rms", "noise_std"):
        np.testing.assert_allclose(list(model.metrics[key].values()), list(memory.metrics[key].values()),
                                   rtol=1e-10)
    assert model.metrics["dropped"] == memory.metrics["dropped"]
    assert any("torque" in reason for reason in model.metrics["dropped"])     # the spike
    assert model.provenance["conditioning"] == memory.provenance["conditioning"]
    assert summary["stamps"] == memory_summary["stamps"]


def numbers(value):
    """The numbers of a JSON document in order (strings and keys left out)."""
    if isinstance(value, dict):
        return [number for item in value.values() for number in numbers(item)]
    if isinstance(value, list):
        return [number for item in value for number in numbers(item)]
    return [float("nan") if value is None else value] if isinstance(value, (int, float)) or value is None else []


@pytest.fixture(scope="module")
def model_file(files, tmp_path_factory):
    out = tmp_path_factory.mktemp("stored_model") / "model.yaml"
    outcome = run("identify", "--robot", ROBOT, "--data", files["csv"], "--friction", "coulomb_viscous", "--out", out)
    assert outcome.returncode == 0, outcome.stderr
    return out


@pytest.mark.parametrize("kind", ["mcap", "csv"])
def test_validate_and_predict_on_stored_fields_say_what_they_say_in_memory(
        files, model_file, kind, tmp_path, monkeypatch):
    """validate's metrics (RMS, RSD, residual std, relative RMSD over moving samples, the range warnings) equal
    those of the in-memory reading to 1e-10, and predict writes the same CSV to the byte; neither reads more than
    a few pieces of a field at once (the torques predicted go to a file too)."""
    outputs = {}
    for on in (False, True):
        stored(monkeypatch, on)
        reads = Reads(monkeypatch)
        validated = run("validate", "--model", model_file, "--data", files[kind], "--json")
        assert validated.returncode == 0, validated.stderr
        predicted = run("predict", "--model", model_file, "--data", files[kind], "--out", tmp_path / f"{on}.csv")
        assert predicted.returncode == 0, predicted.stderr
        outputs[on] = json.loads(validated.stdout), (tmp_path / f"{on}.csv").read_bytes()
        if on:
            assert reads.rows and max(reads.rows) <= max(2 * PIECE, MAX_SAMPLES // FOLDS), max(reads.rows)
    (memory, memory_csv), (from_files, files_csv) = outputs[False], outputs[True]
    assert from_files["warnings"] == memory["warnings"]
    np.testing.assert_allclose(numbers(from_files["joints"]), numbers(memory["joints"]), rtol=1e-10)
    assert files_csv == memory_csv


def test_stages_detected_from_stored_velocities_are_those_of_the_velocities_in_memory(files, tmp_path, monkeypatch):
    """Without markers, `stages` detects the rests, friction plateaus and excitation from the velocities: from
    stored fields the same stages (kinds and times), and identify's selection of a detected stage the same model;
    the smoothed speeds go to a file too, so no read takes more than a few pieces."""
    outputs = {}
    for on in (False, True):
        stored(monkeypatch, on)
        reads = Reads(monkeypatch)
        detected = run("stages", "--robot", ROBOT, "--data", files["mcap"], "--json")
        assert detected.returncode == 0, detected.stderr
        model, _ = identify(files["mcap"], tmp_path / f"{on}.yaml", "--stage", "excitation")
        outputs[on] = json.loads(detected.stdout), model
        if on:
            assert reads.rows and max(reads.rows) <= max(2 * PIECE, MAX_SAMPLES // FOLDS), max(reads.rows)
    (memory, memory_model), (from_files, model) = outputs[False], outputs[True]
    assert from_files == memory
    assert {stage["kind"] for stage in memory["stages"]} >= {"rest", "excitation"}
    np.testing.assert_allclose(model.values, memory_model.values, rtol=1e-10, atol=0.0)


def test_report_from_stored_fields_gives_the_summary_of_the_fields_in_memory(files, tmp_path, monkeypatch):
    """report (identification, torque-fit metrics and figure, detected stages) from stored fields: summary.json's
    numbers equal the in-memory ones to 1e-10, and its torque-fit figure reads only the rows it plots."""
    summaries = {}
    for on in (False, True):
        stored(monkeypatch, on)
        reads = Reads(monkeypatch)
        outcome = run("report", "--robot", ROBOT, "--data", files["mcap"], "--friction", "coulomb_viscous",
                      "--out", tmp_path / f"report_{on}")
        assert outcome.returncode == 0, outcome.stderr
        summaries[on] = json.loads((tmp_path / f"report_{on}" / "summary.json").read_text())
        if on:
            assert reads.rows and max(reads.rows) <= max(2 * PIECE, MAX_SAMPLES // FOLDS), max(reads.rows)
    assert summaries[True].keys() == summaries[False].keys()
    memory, from_files = (numbers({key: value for key, value in summaries[on].items() if key != "provenance"})
                          for on in (False, True))
    np.testing.assert_allclose(from_files, memory, rtol=1e-10)


def test_a_fleet_task_on_stored_fields_identifies_the_model_of_the_fields_in_memory(files, monkeypatch):
    """A fleet task (fleet.tasks.identify_entry: its 20 % held out, the quality gate, the validation motion)
    from stored fields: the same model to 1e-10, the same hold-out RSD, reads bounded."""
    from robot_dynid.fleet.task_options import TaskOptions
    from robot_dynid.fleet.tasks import identify_entry
    outcomes = {}
    for on in (False, True):
        stored(monkeypatch, on)
        reads = Reads(monkeypatch)
        outcomes[on] = identify_entry(str(files["mcap"]), str(ROBOT), None, TaskOptions(report=False))
        assert outcomes[on].status == "identified", outcomes[on].reason
        if on:
            assert reads.rows and max(reads.rows) <= max(2 * PIECE, MAX_SAMPLES // FOLDS), max(reads.rows)
    memory, from_files = (DynamicModel.from_yaml(outcomes[on].model_yaml) for on in (False, True))
    np.testing.assert_allclose(from_files.values, memory.values, rtol=1e-10, atol=0.0)
    np.testing.assert_allclose(outcomes[True].holdout_rsd, outcomes[False].holdout_rsd, rtol=1e-10)
    assert outcomes[True].validation_motion == outcomes[False].validation_motion


def test_payload_identify_on_stored_fields_gives_the_payload_of_the_fields_in_memory(
        files, model_file, tmp_path, monkeypatch):
    """payload identify with the arm's model fixed (here on the arm's own recording: what it finds is the model's
    error, the same either way) from stored fields: the payload file's numbers equal the in-memory ones to 1e-10,
    reads bounded."""
    outputs = {}
    for on in (False, True):
        stored(monkeypatch, on)
        reads = Reads(monkeypatch)
        outcome = run("payload", "identify", "--model", model_file, "--data", files["mcap"], "--json",
                      "--out", tmp_path / f"payload_{on}.yaml")
        assert outcome.returncode == 0, outcome.stderr
        outputs[on] = json.loads(outcome.stdout)
        if on:
            assert reads.rows and max(reads.rows) <= max(2 * PIECE, MAX_SAMPLES // FOLDS), max(reads.rows)
    assert outputs[True].keys() == outputs[False].keys()
    np.testing.assert_allclose(numbers(outputs[True]), numbers(outputs[False]), rtol=1e-10)
