"""What a Dask worker runs for one recording of a fleet: its fingerprint, its identification.

Both are plain functions of picklable arguments returning picklable results, importable on every
worker (robot-dynid installed there). A worker reads the recording and the robot description at
the paths of the manifest and writes nothing: the model and the report come back in the result
and the client stores them.

- :func:`fingerprint`: the SHA-256 of a recording's bytes (a bag directory: of its files' names
  and bytes), the content half of the key under which results are kept.
- :func:`identify_entry`: read, select the row's stage, check the selected samples' torques against the
  description's inertial data as ``identify`` checks the samples it is given
  (:func:`~robot_dynid.estimation.torque_scale.check_torque_scale`, unless the identification option
  ``check_torque_scale`` is off: ``--no-torque-check``, a row's ``torque_check`` false), hold the last
  ``holdout_fraction`` of the samples out, identify from the rest
  (:func:`~robot_dynid.estimation.identification.identify`),
  pass the identifier node's quality gate on the held-out samples
  (:func:`~robot_dynid.estimation.quality_gate.gate_rejection`) and, if asked, write the recording's
  report (:func:`~robot_dynid.reports.report.make_report`). Bad data, a rank-deficient or rejected
  fit end in a failed outcome naming the reason, never in an exception.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import pathlib
import resource
import socket
import tempfile
import time

import numpy as np

from robot_dynid.errors import DataError, DynIdError, one_line
from robot_dynid.estimation.identification import identify, settings_from_options
from robot_dynid.estimation.quality_gate import gate_rejection
from robot_dynid.estimation.streaming import holdout_residual
from robot_dynid.estimation.torque_scale import check_torque_scale
from robot_dynid.estimation.wear import validation_motion
from robot_dynid.fleet.task_options import READING_DEFAULTS, TaskOptions
from robot_dynid.input_files import check_input_file, MAX_RECORDING_BYTES
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.robot_description import RobotDescription
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.recordings.data_files import BAG_SUFFIXES, stage_table
from robot_dynid.recordings.conditioning import Conditioning
from robot_dynid.recordings.pipeline import run
from robot_dynid.recordings.stages import label_samples

__all__ = ["Fingerprint", "RecordingOutcome", "recording_files", "fingerprint", "identify_entry"]

logger = logging.getLogger(__name__)

_CHUNK = 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Fingerprint:
    """The content hash of a recording, or why it could not be read (``content_hash`` None)."""

    content_hash: str | None
    reason: str = ""
    size: int = 0


@dataclasses.dataclass(frozen=True)
class RecordingOutcome:
    """What :func:`identify_entry` gives back.

    Attributes
    ----------
    status : {"identified", "failed"}
    reason : str
        Why it failed ('' when identified).
    model_yaml : str or None
        The model artifact's text.
    report_files : dict
        File name -> bytes of the recording's report (index.html, summary.json, PNG figures).
    report_note : str
        Why there is no report, when there is none.
    holdout_rsd, condition : float
        The quality gate's figures [1].
    seconds : float
        Wall time of the task on the worker [s].
    worker : str
        ``host:pid`` of the worker process.
    peak_memory : int
        Peak resident memory of the worker process so far [bytes].
    cacheable : bool
        The result follows from the data and settings alone (a DynIdError or a model), so the same
        content and settings need not be identified again; False for anything else (a bug, a
        library missing on the worker).
    validation_motion : tuple or None
        ``(q, qd, qdd)`` of the recording's validation stage, where it has one
        (:func:`~robot_dynid.estimation.wear.validation_motion`): the wear indicators' reference motion.
    """

    status: str
    reason: str = ""
    model_yaml: str | None = None
    report_files: dict = dataclasses.field(default_factory=dict)
    report_note: str = ""
    holdout_rsd: float = float("nan")
    condition: float = float("nan")
    seconds: float = 0.0
    worker: str = ""
    peak_memory: int = 0
    cacheable: bool = True
    validation_motion: tuple | None = None


def _worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _peak_memory() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def recording_files(path) -> tuple[pathlib.Path, list[pathlib.Path]]:
    """(what is hashed, the regular files that make it up): a bag directory (given or the folder of a
    .mcap / .db3 file) and its files in name order, or one file."""
    path = pathlib.Path(path)
    if path.suffix in BAG_SUFFIXES and not path.is_dir():
        path = path.parent
    if path.is_dir():
        return path, sorted(item for item in path.rglob("*") if item.is_file())
    return path, [path]


def fingerprint(path) -> Fingerprint:
    """SHA-256 of the recording at ``path``: of each file's name (relative) and bytes, in name order."""
    try:
        root, files = recording_files(path)
        digest, size = hashlib.sha256(), 0
        for item in files:
            check_input_file(item, "recording", DynIdError, MAX_RECORDING_BYTES)
            digest.update(str(item.relative_to(root) if item != root else item.name).encode() + b"\0")
            with open(item, "rb") as stream:
                while chunk := stream.read(_CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
        if not files:
            return Fingerprint(None, f"{path}: an empty directory, not a recording")
        return Fingerprint(digest.hexdigest(), size=size)
    except DynIdError as error:
        return Fingerprint(None, str(error))
    except OSError as error:
        return Fingerprint(None, f"{error.filename or path}: cannot read it: {error.strerror or error}")


_ROBOTS: dict = {}
_BASES: dict = {}


def _robot(path) -> RobotDescription:
    """The description at ``path``, loaded once per worker process (again when the file changes)."""
    status = os.stat(path)
    key = (os.fspath(path), status.st_mtime_ns, status.st_size)
    if key not in _ROBOTS:
        _ROBOTS.clear()
        _ROBOTS[key] = load_robot(path)
    return _ROBOTS[key]


def _base(robot: RobotDescription, settings):
    """Base parameters of ``robot`` with ``settings``' regressor, computed once per worker process."""
    key = json.dumps([robot.to_dict(), repr(settings.friction), settings.armature, settings.offset,
                      settings.friction_side], sort_keys=True, default=str)
    if key not in _BASES:
        if len(_BASES) > 16:
            _BASES.clear()
        _BASES[key] = compute_base_parameters(settings.regressor(robot))
    return _BASES[key]


def identify_entry(data: str, robot_path: str, stage: str | None, options: TaskOptions,
                   provenance: dict | None = None) -> RecordingOutcome:
    """Identify the recording ``data`` of a fleet (module docstring); never raises for bad data."""
    start = time.perf_counter()
    package_logger = logging.getLogger("robot_dynid")
    level = package_logger.level
    # warnings (poorly excited parameters, ...) go into the model's metrics; logged by hundreds of tasks
    # they would bury the run's output
    package_logger.setLevel(logging.ERROR)
    try:
        outcome = _identify(data, robot_path, stage, options, provenance or {})
    except DynIdError as error:
        outcome = RecordingOutcome("failed", one_line(error))
    except OSError as error:
        outcome = RecordingOutcome("failed", f"{error.filename or data}: {error.strerror or error}", cacheable=False)
    except MemoryError:
        outcome = RecordingOutcome("failed", "out of memory on the worker", cacheable=False)
    except Exception as error:  # a bug: reported with the others, tried again next run
        logger.exception("identification of %s failed", data)
        outcome = RecordingOutcome("failed", f"internal error ({one_line(error)})", cacheable=False)
    finally:
        package_logger.setLevel(level)
    return dataclasses.replace(outcome, seconds=time.perf_counter() - start, worker=_worker_name(),
                               peak_memory=_peak_memory())


def _identify(data, robot_path, stage, options: TaskOptions, provenance) -> RecordingOutcome:
    robot = _robot(robot_path)
    settings = settings_from_options(options.identification, robot)
    reading = {**READING_DEFAULTS, **options.reading}
    topics = {"joint_states_topic": reading["joint_states_topic"], "effort_topic": reading["effort_topic"]}

    def torques(recording):
        if recording.tau is None:
            raise DataError(f"{data}: no torques [N m] to identify from (a bag: the effort of "
                            f"{reading['joint_states_topic']}; a CSV: tau columns)")
        return recording

    conditioning = Conditioning(resample=reading["resample"], derive=reading["derive"], velocity_at_rest="measured")
    read = run(data, robot, conditioning, stage=[stage] if stage else None, adjust=torques, **topics)
    recording, selected = read.recording, read.selection.recording
    if settings.check_torque_scale:      # the samples identify would be given, before the hold-out is split off
        check_torque_scale(selected, robot)
    n_holdout = int(round(options.holdout_fraction * selected.n_samples))
    if n_holdout < 1 or selected.n_samples - n_holdout < 2:
        return RecordingOutcome("failed", f"{data}: {selected.n_samples} samples"
                                + (f" of stage {stage}" if stage else "") + " are too few to identify and hold "
                                f"{options.holdout_fraction:.0%} out")
    order = np.argsort(selected.time, kind="stable")
    fit, holdout = selected.take(np.sort(order[:-n_holdout])), selected.take(np.sort(order[-n_holdout:]))
    segments = {"stage": stage or "all", "held_out_fraction": options.holdout_fraction}
    model = identify(fit, robot, dataclasses.replace(settings, check_torque_scale=False), base=_base(robot, settings),
                     provenance={"data_source": str(data), "segments": segments, **provenance})
    rms, rsd = holdout_residual(model, holdout.reorder(robot.joint_names))
    condition = float(model.metrics["condition_number"])
    model.metrics["holdout"] = {"samples": holdout.n_samples, "rms": rms, "rsd": rsd}
    rejection = gate_rejection(rms, rsd, condition, options.max_holdout_rsd, options.max_condition)
    if rejection:
        return RecordingOutcome("failed", f"rejected by the quality gate: {rejection}", holdout_rsd=rsd,
                                condition=condition)
    files, note = {}, ""
    if options.report:
        files, note = _report(data, robot, recording, stage, model, holdout, topics)
    return RecordingOutcome("identified", model_yaml=model.to_yaml(), report_files=files, report_note=note,
                            holdout_rsd=rsd, condition=condition,
                            validation_motion=validation_motion(recording, robot.joint_names))


def _report(data, robot, recording, stage, model, holdout, topics) -> tuple[dict, str]:
    """The files of the recording's report (:func:`~robot_dynid.reports.report.make_report`) and '' , or
    no files and why. Its torques are not checked again: :func:`_identify` checked the selection, or was told not
    to."""
    from robot_dynid.reports.report import ReportOptions, make_report
    velocity = robot.limit_arrays(recording.joint_names).velocity
    try:
        table = stage_table(recording, data, velocity, **topics)
        if recording.stage is None:
            recording = recording.with_labels(label_samples(recording.time, table.stages)[0], None)
        stages = (stage,) if stage else tuple(sorted(set(recording.stage.tolist())))
        with tempfile.TemporaryDirectory(prefix="robot_dynid_fleet_") as directory:
            make_report(directory, robot, [recording], [table.stages], model=model, validation=[holdout],
                        check_torques=False,
                        options=ReportOptions(stage=stages), sources=[str(data)])
            return {item.name: item.read_bytes() for item in sorted(pathlib.Path(directory).iterdir())
                    if item.is_file()}, ""
    except DynIdError as error:
        return {}, f"no report: {one_line(error)}"
