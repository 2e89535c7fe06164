"""A fleet run: every recording of a manifest identified as a task on Dask distributed.

The client (this process) reads the manifest and the robot descriptions, asks the workers for each
recording's fingerprint (:func:`~robot_dynid.fleet.tasks.fingerprint`), reuses what the database
already holds for that content and these settings, and submits an identification
(:func:`~robot_dynid.fleet.tasks.identify_entry`) for the rest, as the fingerprints come in. It
writes every result (model files, reports, database rows) itself as the tasks finish, so the
workers need read access to the recordings and descriptions only. A recording that fails
(unreadable, rank deficient, rejected by the quality gate, a worker lost) is one failed result with
its reason; the others go on.

Clusters (:func:`open_client`): a local one of N worker processes (one thread each), or an
existing scheduler (``dask scheduler`` and ``dask worker`` on other machines; docs/fleets.md).
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import pathlib
from typing import Iterator, Sequence

from robot_dynid.errors import DynIdError, message_line, one_line
from robot_dynid.fleet import tasks
from robot_dynid.fleet.manifest import FleetEntry
from robot_dynid.fleet.store import FleetStore
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.robot_loader import load_robot

__all__ = ["CONNECT_TIMEOUT", "INSTALL_HINT", "quiet_dask", "open_client", "EntryResult", "run_fleet",
           "reference_motions", "store_wear_indicators"]

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT = 30.0
"""[s] to reach a scheduler."""
INSTALL_HINT = 'robot-dynid fleet needs Dask distributed: pip install "robot-dynid[fleet]"'


def _dask():
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError as error:
        raise DynIdError(f"{INSTALL_HINT} ({error})") from None
    quiet_dask()
    return Client, LocalCluster, as_completed


def quiet_dask() -> int:
    """Dask's own logging at WARNING unless this package's log is at INFO (``--verbose``): its INFO lines (about 30
    per run: the scheduler, workers, nannies) would bury the command's output. The level set, for the cluster's
    worker processes too."""
    level = logging.INFO if logger.isEnabledFor(logging.INFO) else logging.WARNING
    for name in ("distributed", "distributed.scheduler", "distributed.nanny", "distributed.worker",
                 "distributed.core", "distributed.http.proxy"):
        logging.getLogger(name).setLevel(level)
    return level


@contextlib.contextmanager
def open_client(scheduler: str | None = None, workers: int | None = None):
    """A Dask client of the scheduler at ``scheduler`` (``tcp://HOST:PORT``), or of a local cluster of
    ``workers`` processes with one thread each (default: one per usable core), closed on exit.

    Raises
    ------
    DynIdError
        Dask is not installed, or the scheduler cannot be reached (naming it).
    """
    Client, LocalCluster, _ = _dask()
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError) as error:
            raise DynIdError(f"cannot reach the Dask scheduler at {scheduler} ({message_line(error)}); start "
                             "one with `dask scheduler` and its workers with `dask worker ADDRESS` (docs/fleets.md)"
                             ) from None
        try:
            yield client
        finally:
            client.close()
        return
    if workers is None:
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    # one BLAS thread per worker: the small products of an identification slow down when threads compete
    # workers log at most errors: the nannies' connection warnings while the cluster closes are not the run's
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                           silence_logs=logging.ERROR if quiet_dask() > logging.INFO else logging.INFO,
                           env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    try:
        client = Client(cluster)
        try:
            yield client
        finally:
            client.close()          # the client first, then the workers and the scheduler it talks to
    finally:
        cluster.close()


@dataclasses.dataclass(frozen=True)
class EntryResult:
    """What became of one manifest entry in a run.

    Attributes
    ----------
    entry : FleetEntry
    status : {"identified", "failed"}
    reason : str
    reused : bool
        Taken from the database (same content and settings seen before), not identified in this run.
    model_file, report : str or None
        Relative to the output folder.
    outcome : RecordingOutcome or None
        The task's result when identified in this run (timing, worker, peak memory).
    """

    entry: FleetEntry
    status: str
    reason: str = ""
    reused: bool = False
    model_file: str | None = None
    report: str | None = None
    outcome: tasks.RecordingOutcome | None = None


def _folder(entry: FleetEntry, content_hash: str, settings_hash: str) -> str:
    """``<robot_id>/<recorded_at>-<hashes>`` (no ':' in file names)."""
    stamp = entry.key[1].replace(":", "").replace("-", "")
    return f"{entry.robot_id}/{stamp}-{content_hash[:10]}-{settings_hash[:6]}"


def run_fleet(client, entries: Sequence[FleetEntry], robot_path, options: tasks.TaskOptions, store: FleetStore,
              out) -> Iterator[EntryResult]:
    """Identify ``entries`` on ``client``'s cluster (module docstring), yielding each entry's result as it
    is known (reused ones first); results are in ``store`` and ``out`` when yielded."""
    _, _, as_completed = _dask()
    out = pathlib.Path(out)
    keys: dict = {}
    pending = []
    for entry in entries:
        path = entry.robot or os.fspath(robot_path)
        row_options = options.for_entry(entry.torque_check)
        try:
            if (path, entry.torque_check) not in keys:
                keys[path, entry.torque_check] = _settings_key(path, row_options, None)
            settings_hash = (_settings_key(path, row_options, entry.stage) if entry.stage
                             else keys[path, entry.torque_check])
        except DynIdError as error:
            store.set_recording(entry, path, "-", None, "failed", one_line(error))
            yield EntryResult(entry, "failed", one_line(error))
            continue
        pending.append((entry, path, settings_hash))
    futures = {}
    by_data: dict = {}      # rows naming one recording share its fingerprint: it is read once per run
    for entry, path, settings_hash in pending:
        by_data.setdefault(entry.data, []).append((entry, path, settings_hash))
    for data, rows in by_data.items():
        futures[client.submit(tasks.fingerprint, data, pure=False)] = ("fingerprint", rows)
    waiting: dict = {}      # (content, settings) -> entries waiting for one identification
    completed = as_completed(list(futures))
    for future in completed:
        kind, job = futures.pop(future)
        if kind == "identify":
            entry, path, content_hash, settings_hash = job
            outcome, error = _result(future)
            if outcome is None:
                outcome = tasks.RecordingOutcome("failed", error, cacheable=False)
            result = _store_outcome(store, out, entry, path, content_hash, settings_hash, outcome)
            for waiter in waiting.pop((content_hash, settings_hash)):
                if waiter is not entry:
                    store.set_recording(waiter, path, settings_hash, content_hash, result.status, result.reason,
                                        store.cached(content_hash, settings_hash)["model_id"] if outcome.cacheable
                                        else None)
                    yield dataclasses.replace(result, entry=waiter, reused=True)
                else:
                    yield result
            continue
        fingerprint, error = _result(future)
        for entry, path, settings_hash in job:
            if fingerprint is None or fingerprint.content_hash is None:
                reason = error or fingerprint.reason
                store.set_recording(entry, path, settings_hash, None, "failed", reason)
                yield EntryResult(entry, "failed", reason)
                continue
            content_hash = fingerprint.content_hash
            cached = store.cached(content_hash, settings_hash)
            if cached is not None:
                store.set_recording(entry, path, settings_hash, content_hash, cached["status"], cached["reason"],
                                    cached["model_id"])
                yield EntryResult(entry, cached["status"], cached["reason"], True, cached["model_file"],
                                  cached["report_dir"])
                continue
            waiting.setdefault((content_hash, settings_hash), []).append(entry)
            if len(waiting[(content_hash, settings_hash)]) > 1:
                continue
            # ahead of the fingerprints still queued: the recording is read again while the page cache holds it
            # (a fleet larger than the memory was read twice from disk)
            identification = client.submit(
                tasks.identify_entry, entry.data, path, entry.stage, options.for_entry(entry.torque_check),
                {"fleet": {"robot_id": entry.robot_id, "recorded_at": entry.key[1]}}, pure=False, priority=1)
            futures[identification] = ("identify", (entry, path, content_hash, settings_hash))
            completed.add(identification)


def _settings_key(path, options: tasks.TaskOptions, stage) -> str:
    from robot_dynid.estimation.identification import settings_from_options
    robot = load_robot(path)
    settings_from_options(options.identification, robot)     # options this robot refuses: the row fails here
    return options.settings_key(robot, stage)


def _result(future):
    """(the task's result, '') or (None, why the cluster could not run it)."""
    try:
        return future.result(), ""
    except Exception as error:   # a worker lost, a task that could not be unpickled there, ...
        return None, f"the task failed on the cluster ({one_line(error)})"


def _store_outcome(store, out, entry, path, content_hash, settings_hash, outcome) -> EntryResult:
    model_file = report = None
    model = None
    if outcome.status == "identified":
        model = DynamicModel.from_yaml(outcome.model_yaml, source=entry.data)
        folder = _folder(entry, content_hash, settings_hash)
        model_file = f"models/{folder}.yaml"
        (out / model_file).parent.mkdir(parents=True, exist_ok=True)
        (out / model_file).write_text(outcome.model_yaml)
        if outcome.report_files:
            report = f"reports/{folder}"
            (out / report).mkdir(parents=True, exist_ok=True)
            for name, content in outcome.report_files.items():
                (out / report / name).write_bytes(content)
    model_id = None
    if outcome.cacheable:
        model_id = store.add_model(content_hash, settings_hash, outcome.status, outcome.reason, model, model_file,
                                   report, outcome.seconds, outcome.worker, outcome.peak_memory,
                                   outcome.holdout_rsd if model is not None else None, outcome.validation_motion)
    store.set_recording(entry, path, settings_hash, content_hash, outcome.status, outcome.reason, model_id)
    return EntryResult(entry, outcome.status, outcome.reason, False, model_file, report, outcome)


def reference_motions(store: FleetStore, results: Sequence[EntryResult]) -> dict:
    """The wear indicators' reference motion per set of joints: joint names (tuple) -> ``(q, qd, qdd, source)``,
    the validation stage of the earliest identified recording (by time, then robot) that has one, as kept in
    ``store`` (:meth:`~robot_dynid.fleet.store.FleetStore.validation_motion`); joints without one are absent
    (the indicators then use the built-in motion)."""
    keys = {result.entry.key for result in results if result.status == "identified"}
    motions: dict = {}
    for row in sorted(store.recordings(keys), key=lambda row: (row["recorded_at"], row["robot_id"])):
        motion = store.validation_motion(row["model_id"]) if row["model_id"] is not None else None
        if motion is not None and motion[0] not in motions:
            motions[motion[0]] = (*motion[1:], f"validation stage of {row['robot_id']} {row['recorded_at']}")
    return motions


def store_wear_indicators(store: FleetStore, analysis) -> None:
    """Keep every compared model's wear indicators of ``analysis``
    (:class:`~robot_dynid.fleet.changes.FleetAnalysis`) in ``store``."""
    model_ids = {(row["robot_id"], row["recorded_at"]): row["model_id"] for row in store.recordings()}
    for robot_id, changes in analysis.robots.items():
        for record, indicators in changes.wear.history:
            model_id = model_ids.get((robot_id, record.recorded_at))
            if model_id is not None:
                store.set_wear_indicators(model_id, indicators.reference_key, indicators)
