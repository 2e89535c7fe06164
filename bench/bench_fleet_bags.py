"""robot-dynid fleet on rosbag2 MCAP bags: 200 ten-minute 1 kHz recordings on a local Dask cluster of 2 workers.

Issue 35's fleet goal: "A fleet of 200 ten-minute recordings on 2 local workers within 10 minutes", the
recordings as the product's recorder writes them (rosbag2 MCAP bags). The fleet benchmark (bench_fleet.py) runs
one-minute 500 Hz CSV files; this one runs the goal's size.

Workload: 20 simulated UR5 arms x 10 weekly recordings (test/simulated_fleet.py's fleet: the same excitation,
pinocchio RNEA torques with the arms' links 1-3 % apart, hand-written Coulomb and viscous friction, 0.3 N m white
noise seeded by arm and week, so every recording's content differs), each 600 s at 1 kHz (600 001 samples) of
``sensor_msgs/msg/JointState`` (position, velocity, effort of the 6 joints, stamped from the recording's
``recorded_at``, received 150 us after the stamp) in an MCAP bag directory written by rosbags' Writer (not by the
recorder), the message bytes patched from one serialised message per sample (bench_files.joint_state_rows,
checked against rosbags' serialiser on a hundred messages per block). The RNEA torques are computed once per link
set (arm modulo 4) per generating process, the noise per recording; two generating processes run at ``nice 19``.

Timed: ``run_fleet`` (robot_dynid.fleet.run) over the manifest on a fresh local cluster of 2 worker processes (one
thread each; cluster start-up timed apart) into an empty database, TaskOptions(report=False): wall time, mean task
time and each worker's peak resident memory. Before it, the load average is checked: above MAX_LOAD the run
waits (up to LOAD_WAIT) for the machine to quieten. Also, in this process, :func:`identify_entry` on the first
recordings (no Dask: the work of one recording).

Cross-checks (AssertionError): every recording is identified, and a recording's model from the cluster has the
same base parameters as the one made in this process to 1e-9 (relative).

The bags (about 45 GB) are written under a temporary folder and deleted at the end, also when the run fails.

    .venv/bin/python bench/bench_fleet_bags.py [--quick] [--out BENCHMARKS.md]
"""
from __future__ import annotations

import concurrent.futures
import datetime
import multiprocessing
import os
import pathlib
import re
import shutil
import signal
import sys
import tempfile
import time

import numpy as np

import machine
sys.path.insert(0, str(machine.REPOSITORY / "test"))     # the simulated fleet of the tests

from bench_files import GENERATE_CHUNK, joint_state_rows, RECEIVE_DELAY_NS, TOPIC     # noqa: E402
from robot_dynid.fleet.manifest import read_manifest                                  # noqa: E402
from robot_dynid.fleet.task_options import TaskOptions                                # noqa: E402
from robot_dynid.fleet.tasks import fingerprint, identify_entry                                    # noqa: E402
from robot_dynid.model.dynamic_model import DynamicModel                              # noqa: E402
from simulated_fleet import FIRST_DAY, ROBOT                                          # noqa: E402

NAME = "fleet_bags"
RATE = 1000.0                 # Hz
DURATION = 600.0              # s
ARMS, WEEKS = 20, 10
WORKERS = 2
GOAL_WALL = 600.0             # s
GOAL_PEAK = 1e9               # bytes, the fleet benchmark's target per worker
MAX_LOAD = 1.5
"""Load average (1 min) above which the timed run waits for the machine to quieten ..."""
LOAD_WAIT = 600.0
"""... for at most this long [s], then runs anyway (the load is in the machine line)."""
GENERATORS = 2
"""Processes writing bags (at nice 19)."""
TEMPORARY_PREFIX = "robot_dynid_bench_fleet_bags_"


# --------------------------------------------------------------------------- the bags

_MOTION: dict = {}


def _motion(duration: float):
    """(robot, t, q, qd, qdd, {link set: rigid-body + friction torques}) of the fleet, once per process."""
    if duration not in _MOTION:
        from rnea_reference import rnea_torques
        from robot_dynid.experiment.trajectories import time_grid
        from robot_dynid.model.robot_loader import load_robot
        from simulated_fleet import arm_links, COULOMB, excitation, MASS_OFFSETS, VISCOUS
        robot = load_robot(ROBOT)
        t = time_grid(duration, dt=1.0 / RATE)
        q, qd, qdd = excitation(robot).evaluate(t)
        friction = COULOMB * np.sign(qd) + VISCOUS * qd
        torques = {links: rnea_torques(robot, arm_links(robot, links), q, qd, qdd) + friction
                   for links in range(len(MASS_OFFSETS))}
        _MOTION.clear()
        _MOTION[duration] = robot, t, q, qd, qdd, torques
    return _MOTION[duration]


def recorded_at(arm: int, week: int) -> datetime.datetime:
    return FIRST_DAY + datetime.timedelta(weeks=week, hours=arm)


def write_arm_bag(path: str, arm: int, week: int, duration: float) -> tuple[float, int]:
    """Arm ``arm``'s recording of week ``week`` (simulated_fleet.arm_recording's torques and noise at RATE) as an
    MCAP bag directory written by rosbags' Writer: (seconds taken, bytes on disk)."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore
    from simulated_fleet import MASS_OFFSETS, NOISE
    start = time.perf_counter()
    robot, t, q, qd, _, torques = _motion(duration)
    tau = torques[arm % len(MASS_OFFSETS)] + np.random.default_rng([arm, week]).normal(0.0, NOISE, q.shape)
    first_ns = int(recorded_at(arm, week).timestamp()) * 10**9
    stamps = first_ns + np.arange(len(t), dtype=np.int64) * int(round(1e9 / RATE))
    typestore = get_typestore(Stores.ROS2_JAZZY)
    with Writer(pathlib.Path(path), version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection(TOPIC, "sensor_msgs/msg/JointState", typestore=typestore)
        for block in range(0, len(t), GENERATE_CHUNK):
            rows = slice(block, block + GENERATE_CHUNK)
            patched = joint_state_rows(typestore, robot.joint_names, stamps[rows], q[rows], qd[rows], tau[rows])
            for receive_ns, row in zip((stamps[rows] + RECEIVE_DELAY_NS).tolist(), patched):
                writer.write(connection, receive_ns, row.tobytes())
    size = sum(item.stat().st_size for item in pathlib.Path(path).iterdir())
    return time.perf_counter() - start, size


def write_fleet_bags(directory: pathlib.Path, arms: int, weeks: int, duration: float):
    """The fleet's bags (GENERATORS processes at nice 19) and its manifest: (manifest, seconds per bag, bytes)."""
    rows = ["robot_id,recorded_at,data"]
    jobs = []
    for week in range(weeks):
        for arm in range(arms):
            name = f"arm{arm:02d}_week{week:02d}"
            jobs.append((os.fspath(directory / name), arm, week, duration))
            rows.append(f"arm{arm:02d},{recorded_at(arm, week).isoformat()},{name}")
    pool = concurrent.futures.ProcessPoolExecutor(GENERATORS, mp_context=multiprocessing.get_context("spawn"),
                                                  initializer=os.nice, initargs=(19,))
    try:
        done = list(pool.map(write_arm_bag, *zip(*jobs)))
    finally:                    # stopped: the bags being written are finished, the others not started
        pool.shutdown(wait=True, cancel_futures=True)
    manifest = directory / "fleet.csv"
    manifest.write_text("\n".join(rows) + "\n")
    return manifest, [seconds for seconds, _ in done], sum(size for _, size in done)


# --------------------------------------------------------------------------- the machine

def wait_for_quiet(limit: float) -> tuple[float, float]:
    """Wait (at most ``limit`` s) until the 1-minute load average is at most MAX_LOAD: (load at first, seconds
    waited)."""
    first = os.getloadavg()[0]
    start = time.perf_counter()
    while os.getloadavg()[0] > MAX_LOAD and time.perf_counter() - start < limit:
        time.sleep(15.0)
    return first, time.perf_counter() - start


def disk_read_bytes() -> int | None:
    """Bytes read from block devices since boot, by every process (``pgpgin`` of /proc/vmstat, KiB)."""
    return _proc_kib("/proc/vmstat", r"^pgpgin (\d+)$")


def page_cache_bytes() -> int | None:
    """The kernel's page cache now (``Cached`` of /proc/meminfo) [bytes]."""
    return _proc_kib("/proc/meminfo", r"^Cached:\s*(\d+) kB")


def _proc_kib(path: str, pattern: str) -> int | None:
    """The KiB count ``pattern`` (one group) finds in the /proc file ``path``, in bytes; None without it."""
    try:
        found = re.search(pattern, pathlib.Path(path).read_text(), re.MULTILINE)
    except OSError:
        return None
    return int(found.group(1)) * 1024 if found else None


# --------------------------------------------------------------------------- the run

def run(quick: bool = False) -> machine.BenchmarkResult:
    from bench_fleet import cluster_run          # the fleet benchmark's timed run (a sibling script, not a library)
    arms, weeks, duration = (3, 2, 20.0) if quick else (ARMS, WEEKS, DURATION)
    n_baseline = 2 if quick else 3
    options = TaskOptions(report=False)
    directory = pathlib.Path(tempfile.mkdtemp(prefix=TEMPORARY_PREFIX))
    try:
        started = time.perf_counter()
        manifest, bag_seconds, size = write_fleet_bags(directory, arms, weeks, duration)
        generation = time.perf_counter() - started
        entries = read_manifest(manifest)
        n = len(entries)

        # the first bags written: out of the page cache in the full run (the later ones fill it)
        cold = time.perf_counter()
        machine.require(fingerprint(entries[n_baseline].data).content_hash is not None, "no fingerprint")
        cold_fingerprint = time.perf_counter() - cold
        baseline = [identify_entry(entry.data, os.fspath(ROBOT), None, options)
                    for entry in entries[:n_baseline]]
        machine.require(all(outcome.status == "identified" for outcome in baseline),
                        f"in-process identification failed: {[outcome.reason for outcome in baseline]}")
        serial = float(np.mean([outcome.seconds for outcome in baseline[1:]]))   # the first loads the robot
        warm = identify_entry(entries[1].data, os.fspath(ROBOT), None, options).seconds   # now in the page cache

        load_before, waited = wait_for_quiet(0.0 if quick else LOAD_WAIT)
        description = machine.describe_machine()                # the load average at the start of the run
        cached, read_before = page_cache_bytes(), disk_read_bytes()
        startup, wall, results = cluster_run(entries, options, directory / "out", WORKERS)
        load_after, read = os.getloadavg()[0], disk_read_bytes()
        read = None if read is None or read_before is None else read - read_before
        failed = [f"{result.entry.data}: {result.reason}" for result in results if result.status != "identified"]
        machine.require(len(results) == n and not failed, f"{len(failed)} of {n} recordings failed: {failed[:5]}")
        task_seconds = np.array([result.outcome.seconds for result in results])
        peaks: dict = {}
        for result in results:
            peaks[result.outcome.worker] = max(peaks.get(result.outcome.worker, 0), result.outcome.peak_memory)

        checked = next(result for result in results if result.entry.key == entries[1].key)
        cluster_model = DynamicModel.load(directory / "out" / checked.model_file)
        local_model = DynamicModel.from_yaml(baseline[1].model_yaml)
        nonzero = local_model.values != 0.0
        agreement = float(np.max(np.abs(cluster_model.values - local_model.values)[nonzero]
                                 / np.abs(local_model.values[nonzero])))
        machine.require(np.allclose(cluster_model.values, local_model.values, rtol=1e-9, atol=0.0),
                        f"the cluster's model of {checked.entry.data} differs from the one made in this process "
                        f"({agreement:.1e} relative)")
    finally:
        shutil.rmtree(directory, ignore_errors=True)

    task = float(task_seconds.mean())
    peak = max(peaks.values())
    overhead = wall * WORKERS / n - task
    length = "ten-minute" if duration == DURATION else f"{duration:g} s"
    goals = (
        machine.Goal(f"{n} {length} 1 kHz MCAP recordings, {WORKERS} workers: wall", "< 10 min",
                     f"{wall / 60:.1f} min ({wall:.0f} s)",
                     wall < GOAL_WALL),
        machine.Goal("peak memory per worker", "< 1 GB",
                     ", ".join(machine.megabytes(value) for value in sorted(peaks.values())), peak < GOAL_PEAK),
    )
    rows = [["in this process, no Dask (the first bags written)", "-", "-", f"{serial:.2f} s", "-", "-", "-"],
            ["in this process, no Dask (one of them again: in the page cache)", "-", "-", f"{warm:.2f} s", "-", "-",
             "-"],
            [f"local cluster, {WORKERS} workers", f"{startup:.1f} s", f"{wall:.1f} s", f"{task:.2f} s",
             f"{n / wall:.2f}", f"{overhead:.3f} s", machine.megabytes(peak)]]
    samples = int(round(duration * RATE)) + 1
    wait_note = (f"; it was {load_before:.2f} when the bags were written, and the run waited {waited:.0f} s for it"
                 if waited >= 1.0 else "")
    details = (
        f"{n} recordings ({arms} arms x {weeks} weeks), each {duration:g} s at {RATE:g} Hz ({samples} JointState "
        f"messages of 6 joints, {size / n / 1e6:.0f} MB of MCAP; {size / 1e9:.1f} GB in all); UR5, coulomb_viscous "
        f"friction, 48 base parameters, no reports. Writing the bags (rosbags' Writer, {GENERATORS} processes at "
        f"nice 19, not timed with the run) took {generation / 60:.1f} min, {np.mean(bag_seconds):.1f} s per bag "
        f"in one process (the slowest {max(bag_seconds):.1f} s: a process's first bag includes the motion and its "
        "RNEA torques).\n\n"
        + machine.markdown_table(["path", "cluster start", "wall", "mean task", "recordings/s",
                                  "overhead per task", "peak memory per worker"], rows)
        + f"\nLoad average (1 min) at the start of the cluster run: {description['load_average']:.2f}{wait_note}. "
          f"Page cache at its start: {machine.megabytes(cached)} (of {size / 1e9:.1f} GB of bags); read from "
          f"disk during the run (every process, /proc/vmstat): {_gigabytes(read)}"
          + ("" if read is None else f", {read / wall / 1e6:.0f} MB/s on average")
          + f". Load average (1 min) at its end: {load_after:.2f}. "
          f"In this process, the fingerprint (SHA-256) of a bag read from disk took {cold_fingerprint:.2f} s. "
          f"Cross-check: the cluster's model of {pathlib.Path(checked.entry.data).name} and the one made in this "
          f"process agree to {agreement:.1e} (relative, largest over the base parameters).\n")
    notes = (
        "Overhead per task = wall x workers / N - mean task time: what a worker spends per recording outside the "
        "identification. Here it includes the fingerprint task (SHA-256 of the bag's bytes) besides Dask's "
        "scheduling and the client's writes.",
        "Peak memory is each worker process's resident high-water mark (ru_maxrss), imports included.",
        "In this process numpy's BLAS runs with its default threads, on the cluster one thread per worker; the "
        "cluster's tasks also share the 2 cores with the client, the scheduler and each other's reads.",
        "The bags outgrow the page cache (the RAM): the first ones written are no longer in it when the run starts, "
        "and most are read from disk once, by their fingerprint; the identification, which run_fleet queues ahead "
        "of the fingerprints still waiting, reads the bag again from the page cache.",
        "The 2-core machine is shared with other jobs; the load average at the start is in the machine line. The "
        "first run (2026-11-30 00:22 UTC, source bace9e0, load 1.48 at the start; three processes of another job at "
        "nice 10 from about 3 of its 5.6 minutes on) measured a wall of 334 s, a mean task of 2.93 s (1.09 s in "
        "process from disk), peaks of 618 MB per worker and generation in 5.1 min. The second (00:38 UTC, source "
        "9c9c9a7, load 1.20 at the start, 5.00 at the end) 384 s, a mean task of 3.31 s (1.60 s in process), 619 "
        "MB, and 87.5 GB read from disk: every fingerprint ran before the first identification, which then read "
        "each bag from disk again. Since source 9b727ba identifications go ahead of the queued fingerprints: "
        "44.0 GB read (each bag once) and 242 s at 01:08 UTC (load 1.31 at the start; the machine quieter too: "
        "1.06 s a task in process against 1.60 s).",
    )
    values = {"n": n, "generation": generation, "bag_seconds": bag_seconds, "bytes": size, "serial": serial,
              "warm": warm, "cold_fingerprint": cold_fingerprint, "disk_read": read, "load_after": load_after,
              "startup": startup, "wall": wall, "task": task, "overhead": overhead, "peaks": peaks,
              "agreement": agreement, "load_before": load_before, "waited": waited, "page_cache": cached}
    return machine.BenchmarkResult(
        name=NAME, title="Fleet: 200 ten-minute MCAP bags at 1 kHz on a local Dask cluster", goals=goals,
        details=details, notes=notes, machine=description, quick=quick, values=values)


def _gigabytes(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 1e9:.1f} GB"


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))     # a killed run deletes its bags too (finally)
    sys.exit(machine.benchmark_main(run, __doc__.splitlines()[0]))
