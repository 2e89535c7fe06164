"""Recorder node: 12-joint JointState at 1 kHz for 10 minutes, every message in the bag, CPU and memory.

Setup (all real processes over DDS on loopback, ROS_DOMAIN_ID 150..199):

- the recorder node, installed executable, parameters of ``config/recorder.yaml`` (MCAP, reliable,
  depth 1000, flush every 1 s) with ``bag_path`` set and ``status_period`` 1 s (its message-count
  log is how the benchmark sees it has caught up);
- baseline: a counter process (``ros_bench.py counter``) with the same raw subscription and QoS
  that only counts messages, so its CPU is the bare cost of receiving them through rclpy;
- a publisher process (``ros_bench.py publisher``) that waits until both subscriptions are matched,
  then publishes ``sensor_msgs/JointState`` (12 joints; position, velocity, effort) on an absolute
  1 kHz schedule, message ``k`` carrying ``header.frame_id = k`` and ``position[0] = k``.

While the publisher runs, /proc of the recorder, the counter and the publisher is sampled every
second (CPU time utime + stime, VmRSS, VmHWM), and so is every other process's CPU time, so that
the CPU taken by other processes (which can starve the recorder on a small machine) is reported,
in particular around the messages lost, if any. After the last message the benchmark waits until
the recorder has logged every message (at most 30 s), stops it with SIGINT and reads the bag.

Before the run, in this process: what the recorder's check of each message costs (decode the
CDR bytes, select and check the joints: ``JointStateDecoder`` with the names remembered, then
``JointStateSelector.select``) against the same check after rclpy's ``deserialize_message`` and
after rosbags' ``deserialize_cdr`` (best of 5 x 5,000 calls on one 12-joint message).

Cross-checks (AssertionError): ``read_bag`` (what ``robot-dynid identify`` uses) returns one
sample per message found by the raw reader, with ``position[0]`` equal to its ``frame_id``, and
the header stamps the publisher sent. Messages lost (a FAIL, not an error) are the published
sequence numbers missing from the bag.
"""
from __future__ import annotations

import ast
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import machine
import ros_bench

NAME = "recorder"
CONFIG = machine.REPOSITORY / "config" / "recorder.yaml"
TOPIC = "joint_states"
BAG_TOPIC = "/joint_states"
N_JOINTS = 12
RATE = 1000.0                  # [Hz]
FULL_DURATION = 600.0          # [s]
QUICK_DURATION = 5.0           # [s]
SAMPLE_PERIOD = 1.0            # [s] between /proc samples
RATE_TOLERANCE = 0.005         # the publisher's mean rate must be within 0.5 % of RATE
MEMORY_GROWTH_GOAL = 20.0      # [MB/h] resident-memory slope after warm-up
WARM_UP_FRACTION = 0.1         # of the run, excluded from the memory slope
CATCH_UP_TIMEOUT = 30.0        # [s] for the recorder to log every message after the last one
STATUS = r"recorded (\{[^}]*\}) messages"


def _recorded(log: Path) -> int:
    """Messages on /joint_states in the recorder's last status line (0 before the first)."""
    text = log.read_text(errors="replace") if log.exists() else ""
    lines = re.findall(STATUS, text)
    return ast.literal_eval(lines[-1]).get(BAG_TOPIC, 0) if lines else 0


def _counted(log: Path) -> int:
    text = log.read_text(errors="replace") if log.exists() else ""
    lines = [line for line in text.splitlines() if line.startswith("count ")]
    return int(lines[-1].split()[1]) if lines else 0


def _wait_until(condition, timeout: float) -> bool:
    """Poll ``condition()`` every 0.1 s for at most ``timeout`` [s]; its last value."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _raw_bag(path: Path):
    """(sequence numbers, header stamps [ns], bag receive times [ns]) of every /joint_states
    message, parsed from the raw CDR (header.stamp, then header.frame_id), and the message count
    in metadata.yaml."""
    import numpy as np
    from rosbags.highlevel import AnyReader
    from robot_dynid.recordings.bag_files import make_typestore
    sequence, stamps, receive = [], [], []
    with AnyReader([path], default_typestore=make_typestore()) as reader:
        connections = [c for c in reader.connections if c.topic == BAG_TOPIC]
        metadata_count = sum(c.msgcount for c in connections)
        for _, receive_ns, raw in reader.messages(connections=connections):
            order = "<" if raw[1] == 1 else ">"
            sec, nanosec, length = struct.unpack_from(order + "iII", raw, 4)
            sequence.append(int(raw[16:16 + length - 1]))
            stamps.append(sec * 1_000_000_000 + nanosec)
            receive.append(receive_ns)
    return (np.array(sequence, np.int64), np.array(stamps, np.int64), np.array(receive, np.int64),
            metadata_count)


def _machine_sample(exclude) -> tuple[float, dict, int, int]:
    """(monotonic time [s], CPU seconds utime + stime of every process but ``exclude`` (pids)
    by pid, steal and total CPU ticks of the machine from /proc/stat).

    Other processes are summed from their own /proc/<pid>/stat (scheduler times; a process that
    starts and ends between two samples is missed): the machine-wide busy ticks of /proc/stat
    were found up to 30 % off over a few seconds on this kind of virtual machine."""
    now = time.monotonic()
    cpu = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in exclude:
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:   # ended meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        cpu[int(entry.name)] = (int(fields[11]) + int(fields[12])) / ros_bench.CLOCK_TICKS
    steal, total = ros_bench.machine_cpu_ticks()
    return now, cpu, steal, total


def _machine_load(machine_samples, lost_times) -> tuple[dict, str]:
    """CPU of the processes other than the benchmark's over the publishing window [cores],
    overall and around the lost messages (published at ``lost_times``, monotonic [s]): numbers
    and a Markdown paragraph."""
    import numpy as np
    times = np.array([sample[0] for sample in machine_samples])
    dt = np.diff(times)
    others = np.array([sum(cpu - before[1][pid] for pid, cpu in after[1].items()
                           if pid in before[1])
                       for before, after in zip(machine_samples[:-1], machine_samples[1:])]) / dt
    span = times[-1] - times[0]
    others_mean = float(np.sum(others * dt) / span)
    steal = ros_bench.steal_percent(machine_samples[0][2:], machine_samples[-1][2:])
    values = {"others_mean_cores": others_mean, "others_max_cores": float(others.max()),
              "steal_percent": steal,
              "load_end": os.getloadavg()[0] if hasattr(os, "getloadavg") else None}
    text = (f"Other processes of the machine (all but these three, from /proc/<pid>/stat every "
            f"second) used {100 * others_mean:.0f} % of one core on average over the publishing "
            f"window, at most {100 * others.max():.0f} % over a 1-s interval; CPU steal "
            f"{steal:.1f} %" + (f"; load average {values['load_end']:.2f} at the end"
                                if values["load_end"] is not None else "") + ".")
    if len(lost_times):
        first, last = float(np.min(lost_times)), float(np.max(lost_times))
        # the recorder fell 1 s (its queue) behind before the first loss: look 10 s further back
        around = (times[1:] >= first - 10.0) & (times[:-1] <= last)
        inside = float(np.sum(others[around] * dt[around]) / max(np.sum(dt[around]), 1e-9))
        outside = (float(np.sum(others[~around] * dt[~around]) / np.sum(dt[~around]))
                   if np.any(~around) else float("nan"))
        seconds = np.unique(np.floor(np.asarray(lost_times) - times[0])).size
        values.update(lost_first=first - times[0], lost_last=last - times[0],
                      others_around_loss_cores=inside, others_elsewhere_cores=outside)
        text += (f" The {len(lost_times):,} lost messages were published between "
                 f"{first - times[0]:.0f} s and {last - times[0]:.0f} s of the run, in {seconds} "
                 f"distinct seconds; from 10 s before the first to the last, other processes used "
                 f"{100 * inside:.0f} % of one core on average, {100 * outside:.0f} % over the "
                 "rest of the run.")
    return values, text


def _slope_mb_per_hour(samples, first_time: float) -> float:
    """Least-squares slope of VmRSS over the samples after ``first_time`` [MB/h]."""
    import numpy as np
    later = [s for s in samples if s.time >= first_time]
    if len(later) < 3:
        return float("nan")
    t = np.array([s.time for s in later])
    rss = np.array([s.rss for s in later]) / 1e6
    return float(np.polyfit(t - t[0], rss, 1)[0] * 3600.0)


def _message_check_costs() -> list[list[str]]:
    """Per-message cost [us] of the recorder's JointState check, and of the same check on the
    message decoded by rclpy and by rosbags (module docstring)."""
    import timeit

    import numpy as np
    from rclpy.serialization import deserialize_message, serialize_message
    from sensor_msgs.msg import JointState

    from robot_dynid.recordings.bag_files import make_typestore
    from robot_dynid.recordings.bag_io import JOINT_STATE_TYPE
    from robot_dynid.recordings.bag_layout import JointStateDecoder
    from robot_dynid.recordings.joint_states import JointStateSelector

    message = JointState(name=[f"joint_{j}" for j in range(N_JOINTS)])
    message.position, message.velocity, message.effort = (list(np.linspace(-1.0, 1.0, N_JOINTS)),) * 3
    data = serialize_message(message)
    decoder, selector, typestore = JointStateDecoder(), JointStateSelector(message.name), make_typestore("jazzy")

    def ours():
        stamp_ns, names, *fields = decoder(data)
        return selector.select(names, *fields)

    def by_rclpy():
        decoded = deserialize_message(data, JointState)
        return selector.select(decoded.name, decoded.position, decoded.velocity, decoded.effort)

    def by_rosbags():
        decoded = typestore.deserialize_cdr(data, JOINT_STATE_TYPE)
        return selector.select(decoded.name, decoded.position, decoded.velocity, decoded.effort)

    results = {}
    for name, check in (("ours", ours), ("rclpy", by_rclpy), ("rosbags", by_rosbags)):
        values = check()
        assert not isinstance(values, str), f"{name}: {values}"
        np.testing.assert_array_equal(values.effort, message.effort)
        results[name] = min(timeit.repeat(check, number=5000, repeat=5)) / 5000 * 1e6
    labels = {"ours": "`JointStateDecoder` (names remembered) + select: what the recorder runs",
              "rclpy": "rclpy `deserialize_message` + select",
              "rosbags": "rosbags `deserialize_cdr` + select"}
    return [[labels[name], f"{cost:.1f}", f"{cost / results['ours']:.2f}x", f"{cost * RATE / 1e4:.1f}"]
            for name, cost in results.items()]


def run(quick: bool = False) -> machine.BenchmarkResult:
    """Record, stop, read back and report (see the module docstring)."""
    import numpy as np
    from robot_dynid.recordings.bag_io import read_bag

    check_rows = _message_check_costs()

    domain_id = ros_bench.setup_ros_environment()
    machine_description = machine.describe_machine()
    duration = QUICK_DURATION if quick else FULL_DURATION
    count = int(round(duration * RATE))
    directory = Path(tempfile.mkdtemp(prefix="robot_dynid_bench_recorder_"))
    bag = directory / "bag"
    recorder_log, counter_log = directory / "recorder.log", directory / "counter.log"
    processes = []
    try:
        recorder = ros_bench.start_node(
            "recorder", "--params-file", str(CONFIG), "-p", f"bag_path:={bag}",
            "-p", "status_period:=1.0", log_path=recorder_log)
        processes.append(recorder)
        counter = ros_bench.start_helper("counter", "--topic", TOPIC, "--depth", 1000,
                                         "--status-period", 1.0, log_path=counter_log)
        processes.append(counter)
        ros_bench.wait_for_log(recorder_log, r"recording to ", ros_bench.DISCOVERY_TIMEOUT, recorder)
        ros_bench.wait_for_log(counter_log, r"count \d+", ros_bench.DISCOVERY_TIMEOUT, counter)
        send_file = directory / "sent.npz"
        publisher = ros_bench.start_helper(
            "publisher", "--topic", TOPIC, "--joints", N_JOINTS, "--rate", RATE, "--count", count,
            "--subscribers", 2, "--depth", 1000, "--out", send_file, stdout=subprocess.PIPE)
        processes.append(publisher)
        watched = {"recorder": recorder.pid, "counter": counter.pid, "publisher": publisher.pid}

        exclude = {*watched.values(), os.getpid()}
        samples, machine_samples = ros_bench.sample_until_published(
            publisher, watched, count, duration, SAMPLE_PERIOD, also=lambda: _machine_sample(exclude))
        published_at = time.monotonic()

        acknowledged = ros_bench.read_line(publisher, 70.0)
        publisher.wait(timeout=30.0)
        caught_up = _wait_until(lambda: _recorded(recorder_log) >= count, CATCH_UP_TIMEOUT)
        catch_up_seconds = time.monotonic() - published_at
        _wait_until(lambda: _counted(counter_log) >= count, CATCH_UP_TIMEOUT)

        final_recorder = ros_bench.sample_process(recorder.pid)
        clock = time.monotonic()
        exit_code = ros_bench.stop_node(recorder, timeout=30.0)
        close_seconds = time.monotonic() - clock
        ros_bench.stop_node(counter)
        counted = _counted(counter_log)
        log_text = recorder_log.read_text(errors="replace")
        has_metadata = (bag / "metadata.yaml").exists()

        sent = np.load(send_file)
        bag_bytes = sum(f.stat().st_size for f in bag.rglob("*") if f.is_file())
        sequence, stamps, receive, metadata_count = _raw_bag(bag)
        clock = time.monotonic()
        recording = read_bag(bag, stage_topic=None)
        read_seconds = time.monotonic() - clock
    finally:
        for process in processes:
            ros_bench.stop_node(process)

    # ---------------------------------------------------------------- cross-checks
    machine.require(recording.n_samples == sequence.size,
                    f"read_bag returned {recording.n_samples} samples, the raw reader found "
                    f"{sequence.size} messages")
    order = np.argsort(sequence)
    machine.require(np.array_equal(np.sort(recording.q[:, 0]), sequence[order].astype(float)),
                    "read_bag's position[0] differs from the frame_id sequence numbers")
    unique = np.unique(sequence)
    machine.require(np.all((unique >= 0) & (unique < count)),
                    f"the bag holds sequence numbers outside 0..{count - 1}")
    machine.require(np.array_equal(stamps, sent["stamp"][sequence]),
                    "header stamps in the bag differ from those the publisher sent")
    lost = count - unique.size
    missing = np.setdiff1d(np.arange(count), unique)
    duplicates = sequence.size - unique.size
    shutil.rmtree(directory, ignore_errors=True)

    # ---------------------------------------------------------------- numbers
    sent_ns, due_ns = sent["sent"], sent["due"]
    publish_seconds = (sent_ns[-1] - sent_ns[0]) * 1e-9
    publish_rate = (count - 1) / publish_seconds
    lateness = ros_bench.percentiles((sent_ns - due_ns) * 1e-6)           # [ms]
    window = np.bincount(((sent_ns - sent_ns[0]) // 1_000_000_000).astype(int))
    full_windows = window[:-1] if window.size > 1 else window
    latency = ros_bench.percentiles((receive - stamps) * 1e-6)            # [ms]
    cpu = {name: ros_bench.cpu_percent(s[0], s[-1]) for name, s in samples.items()}
    load, load_text = _machine_load(machine_samples, sent_ns[missing] * 1e-9)
    rss = samples["recorder"]
    start_time = rss[0].time
    slope = _slope_mb_per_hour(rss, start_time + WARM_UP_FRACTION * duration)
    max_rss = max(final_recorder.peak_rss, max(s.peak_rss for s in rss))
    closed_cleanly = (exit_code == 0 and has_metadata
                      and metadata_count == sequence.size and "closed bag" in log_text)
    rate_ok = publish_rate >= RATE * (1.0 - RATE_TOLERANCE)

    goals = (
        machine.Goal("messages lost (published, not in the bag)", "0",
                     f"{lost:,} of {count:,}" + (f" ({duplicates} duplicates)" if duplicates else ""),
                     lost == 0 and duplicates == 0),
        machine.Goal("publisher rate (mean over the run)", f">= {RATE * (1 - RATE_TOLERANCE):,.0f} Hz",
                     f"{publish_rate:,.1f} Hz over {publish_seconds:.1f} s", rate_ok),
        machine.Goal("bag closed cleanly on SIGINT (exit 0, metadata.yaml counts every message)",
                     "yes", f"exit {exit_code}, {close_seconds:.2f} s, metadata {metadata_count:,}",
                     closed_cleanly),
        machine.Goal("recorder CPU while recording", "info",
                     f"{cpu['recorder']:.1f} % of one core "
                     f"({cpu['recorder'] / cpu['counter']:.1f}x the counting subscriber)", None),
        machine.Goal("recorder resident memory growth after warm-up", f"< {MEMORY_GROWTH_GOAL:g} MB/h",
                     f"{slope:+.1f} MB/h (start {machine.megabytes(rss[0].rss)}, end "
                     f"{machine.megabytes(rss[-1].rss)}, max {machine.megabytes(max_rss)})",
                     bool(slope < MEMORY_GROWTH_GOAL)),
    )

    cpu_rows = ros_bench.cpu_rows(samples, {
        "recorder": "recorder node (raw subscription + bag writing)",
        "counter": "baseline: counting subscriber (same raw subscription and QoS)",
        "publisher": "publisher (rclpy, builds and publishes every message)"})
    step = 60.0 if duration >= 120.0 else 1.0
    memory_rows, next_time = [], 0.0
    for sample in rss:
        elapsed = sample.time - start_time
        if elapsed + 0.5 * SAMPLE_PERIOD >= next_time or (
                sample is rss[-1] and elapsed - (next_time - step) > 0.5 * SAMPLE_PERIOD):
            memory_rows.append([f"{elapsed:.0f}", machine.megabytes(sample.rss),
                                machine.megabytes(sample.peak_rss)])
            next_time += step
    memory_rows.append(["after catching up, before SIGINT", machine.megabytes(final_recorder.rss),
                        machine.megabytes(final_recorder.peak_rss)])
    details = (
        f"{count:,} messages of {N_JOINTS} joints (position, velocity, effort) at {RATE:,.0f} Hz, "
        f"{duration:.0f} s; reliable, keep-last 1000 on both sides; MCAP bag of "
        f"{bag_bytes / 1e6:.0f} MB ({bag_bytes / max(sequence.size, 1):.0f} bytes per message); "
        f"ROS_DOMAIN_ID {domain_id}, loopback.\n\n"
        "CPU over the publishing window (utime + stime from /proc/<pid>/stat):\n\n"
        + machine.markdown_table(["Process", "CPU [% of one core]", "vs baseline", "CPU time [s]",
                                  "VmRSS at end"], cpu_rows)
        + "\nThe recorder's check of each message (decode, select the joints, finite values), in "
          "this process:\n\n"
        + machine.markdown_table(["Path", "us per message", "vs the recorder's", "% of a core at 1 kHz"],
                                 check_rows)
        + "\nRecorder resident memory (VmRSS; VmHWM = highest so far), from the first message:\n\n"
        + machine.markdown_table(["t [s]", "VmRSS", "VmHWM"], memory_rows)
        + "\nDelivery:\n\n"
        + machine.markdown_table(["Quantity", "p50", "p99", "max"], [
            ["publisher lateness behind its 1 kHz schedule [ms]", f"{lateness['p50']:.3f}",
             f"{lateness['p99']:.3f}", f"{lateness['max']:.1f}"],
            ["header stamp to recorder receive time (bag time) [ms]", f"{latency['p50']:.3f}",
             f"{latency['p99']:.3f}", f"{latency['max']:.1f}"],
        ])
        + f"\nMessages per 1-s window of the publisher: min {full_windows.min():,}, max "
          f"{full_windows.max():,}. The recorder had logged "
          f"{'every message' if caught_up else 'NOT every message'} {catch_up_seconds:.1f} s after "
          f"the last one; the counting subscriber received {counted:,}. SIGINT to exit: "
          f"{close_seconds:.2f} s. Reading the bag back with `read_bag`: {read_seconds:.1f} s "
          f"({recording.n_samples:,} samples).\n\n" + load_text + "\n")
    notes = (
        "The recorder, the counter and the publisher run at the same time on the same messages, so "
        "the CPU ratio is measured under the same load; the publisher and both subscribers share "
        "the machine's cores with whatever else runs (see the load average and the other "
        "processes' CPU above). When other processes take a core of a 2-core machine, the three "
        "processes together need more than what is left and the busiest falls "
        "behind; more than 1 s behind, the keep-last queues (depth 1000) drop the oldest "
        "messages.",
        "The recorder spins rclpy's EventsExecutor where the distro has one (Jazzy, Kilted; "
        "`spin_node(low_latency=True)`), the counter the default single-threaded executor. On the default "
        "executor (source 44474d4, 2026-11-23) the recorder took 69.8 % of one core, 1.5x the counter: "
        "most of it was rclpy's executor dispatching each message in Python, not the bag writing.",
        "A late publisher catches up in a burst (nothing is skipped), so lateness shows stalls of "
        "the publishing process; the reliable queues (depth 1000 = 1 s) absorb them.",
        "`status_period` is set to 1 s (10 s in config/recorder.yaml) so the benchmark sees "
        "promptly that the recorder has written every message; it is one log line per period.",
    )
    return machine.BenchmarkResult(
        name=NAME, title=f"Recorder node ({N_JOINTS}-joint JointState at 1 kHz, "
                         f"{duration / 60:.0f} min)" if duration >= 60 else
                         f"Recorder node ({N_JOINTS}-joint JointState at 1 kHz, {duration:.0f} s)",
        goals=goals, details=details, notes=notes, machine=machine_description, quick=quick,
        values={"count": count, "lost": lost, "duplicates": duplicates, "cpu_percent": cpu,
                "publish_rate": publish_rate, "rss_start": rss[0].rss, "rss_end": rss[-1].rss,
                "rss_max": max_rss, "rss_slope_mb_per_hour": slope, "close_seconds": close_seconds,
                "exit_code": exit_code, "latency_ms": latency, "lateness_ms": lateness,
                "acknowledged": acknowledged, "machine_load": load})


if __name__ == "__main__":
    sys.exit(machine.benchmark_main(run, __doc__.splitlines()[0]))
