"""What a large ComputeFeedforward request costs the controller path of the same feed-forward node.

rclpy converts a service request into Python objects before the node's callback sees it, so ``max_points``
can refuse a request only after it was received, deserialized and converted: what the node can bound is the
largest request it *accepts* (``max_points``, default 1,000,000 points), and what a request above it costs
before the refusal. This benchmark measures both on the path a controller depends on.

Setup (real processes over DDS on loopback, ROS_DOMAIN_ID 150..199):

- the feedforward node, installed executable, ``config/feedforward.yaml`` with a UR5 model artifact
  (``bench_feedforward.make_model``) and ``reference_topic`` / ``command_topic`` set, so its reference path
  runs on a thread of its own while the service runs on the main thread;
- a controller process (``ros_bench.py controller``): ``JointState`` references at 500 Hz, the arrival time of
  every ``Float64MultiArray`` command recorded;
- this process: after a quiet second (the baseline), ``ComputeFeedforward`` requests of growing size, one at a
  time with a second between them: up to the default ``max_points``, at the largest ``max_points`` accepted
  (the node runs with it) and one a point above it (refused).

For each request: its round trip, and the longest gap between two commands the controller received from the
request's sending to its response plus 0.2 s, against the longest gap in the quiet second; the node's peak
resident memory (VmHWM) at the end.
"""
from __future__ import annotations

import gc
import re
import shutil
import tempfile
import time
from pathlib import Path

import bench_feedforward
import machine
import ros_bench

NAME = "request_size"
CONFIG = machine.REPOSITORY / "config" / "feedforward.yaml"
RATE = 500.0            # [Hz] controller references
SETTLE = 1.0            # [s] between requests, and the quiet baseline before the first
AFTER = 0.2             # [s] counted after a response
GAP_GOAL = 100.0        # [ms] longest command gap while the largest accepted request is served
SIZES = (1_000, 10_000)


def _vm_hwm(pid: int) -> float:
    """Peak resident memory [MB] of process ``pid``."""
    text = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", text).group(1)) / 1024


def _longest_gap(arrived, start_ns: int, end_ns: int) -> float:
    """Longest interval [ms] between consecutive command arrivals in [start, end] (the window's ends count as
    arrivals' bounds: a window with no arrival is one gap)."""
    import numpy as np
    inside = arrived[(arrived >= start_ns) & (arrived <= end_ns)]
    times = np.concatenate([[start_ns], inside, [end_ns]])
    return float(np.diff(times).max()) * 1e-6


def run(quick: bool = False) -> machine.BenchmarkResult:
    """Start the node and the controller, send the requests, measure (see the module docstring)."""
    import numpy as np
    from robot_dynid.model.feedforward import DEFAULT_MAX_POINTS, MAX_POINTS_LIMIT
    from robot_dynid.srv import ComputeFeedforward

    ros_bench.setup_ros_environment()
    description = machine.describe_machine()
    default, max_points = (10_000, 100_000) if quick else (DEFAULT_MAX_POINTS, MAX_POINTS_LIMIT)
    sizes = [n for n in SIZES if n < default] + [default, max_points, max_points + 1]
    directory = Path(tempfile.mkdtemp(prefix="robot_dynid_bench_request_size_"))
    model, model_file = bench_feedforward.make_model(directory)
    rng = np.random.default_rng(20261129)
    requests = {}
    for n in sizes:
        q, qd, qdd = machine.random_states(model.robot, n, rng)
        requests[n] = bench_feedforward.feedforward_request(model.joint_names, q, qd, qdd)
    duration = SETTLE * (len(sizes) + 1) + 15.0 * len(sizes)      # ample: the controller outlives the requests
    node = ros_bench.start_node("feedforward", "--params-file", str(CONFIG), "-p", f"model_file:={model_file}",
                                "-p", f"max_points:={max_points}", "-p", "reference_topic:=bench_rs_reference",
                                "-p", "command_topic:=bench_rs_command", "-p", "reference_timeout:=60.0",
                                log_path=directory / "node.log")
    controller_log = directory / "controller.log"
    controller = ros_bench.start_helper("controller", "--reference", "bench_rs_reference", "--command",
                                        "bench_rs_command", "--robot", machine.ROBOTS / "ur5.yaml", "--rate", RATE,
                                        "--duration", duration, "--out", directory / "controller.npz",
                                        log_path=controller_log)
    graph = ros_bench.EventsGraph("bench_request_size_client")
    windows, round_trips, answers = {}, {}, {}
    try:
        client = graph.node.create_client(ComputeFeedforward, "compute_feedforward")
        graph.spin_until(client.service_is_ready, what="service compute_feedforward")
        started = int(ros_bench.wait_for_log(controller_log, r"publishing (\d+)", 120.0, controller).group(1))
        time.sleep(max(0.0, (started - time.monotonic_ns()) * 1e-9) + SETTLE)
        windows["quiet"] = (time.monotonic_ns() - int(SETTLE * 1e9), time.monotonic_ns())
        gc.collect()
        for n in sizes:
            begin = time.monotonic_ns()
            future = client.call_async(requests[n])
            graph.executor.spin_until_future_complete(future, timeout_sec=120.0)
            end = time.monotonic_ns()
            machine.require(future.done(), f"no response to a request of {n} points within 120 s")
            response = future.result()
            round_trips[n] = (end - begin) * 1e-6
            answers[n] = (response.success, response.message)
            windows[n] = (begin, end + int(AFTER * 1e9))
            time.sleep(SETTLE)
        node_peak = _vm_hwm(node.pid)
        ros_bench.wait_for_log(controller_log, r"published (\d+)", duration + 60.0, controller)
        controller.wait(timeout=30)
        arrived = np.load(directory / "controller.npz")["arrived"]
    finally:
        graph.close()
        node_exit = ros_bench.stop_node(node)
        ros_bench.stop_node(controller)
    shutil.rmtree(directory, ignore_errors=True)
    machine.require(all(answers[n][0] for n in sizes[:-1]), f"a request within max_points failed: {answers}")
    machine.require(not answers[sizes[-1]][0] and "max_points" in answers[sizes[-1]][1],
                    f"a request above max_points was not refused by it: {answers[sizes[-1]]}")
    gaps = {key: _longest_gap(arrived, *window) for key, window in windows.items()}
    period = 1e3 / RATE
    largest, above = sizes[-2], sizes[-1]
    goals = (
        machine.Goal(f"longest command gap while a request of the default `max_points` ({default:,} points) is "
                     "served", f"< {GAP_GOAL:g} ms", f"{gaps[default]:.0f} ms (quiet: {gaps['quiet']:.1f} ms)",
                     gaps[default] < GAP_GOAL),
        machine.Goal(f"longest command gap while a request of the largest `max_points` ({largest:,} points) is "
                     "served", "info", f"{gaps[largest]:.0f} ms", None),
        machine.Goal(f"longest command gap while a request of {above:,} points is refused", "info",
                     f"{gaps[above]:.0f} ms", None),
        machine.Goal("feedforward node peak resident memory", "info", f"{node_peak:.0f} MB", None),
    )
    rows = [["quiet second (no request)", "", "", f"{gaps['quiet']:.1f}", f"{gaps['quiet'] / period:.1f}"]]
    for n in sizes:
        success, message = answers[n]
        rows.append([f"{n:,}", f"{n * len(model.joint_names) * 3 * 8 / 2 ** 20:.1f}",
                     f"{round_trips[n]:.0f}", f"{gaps[n]:.1f}", f"{gaps[n] / period:.1f}"
                     + ("" if success else " (refused)")])
    details = (f"UR5, 6 joints, coulomb_viscous; references at {RATE:g} Hz ({period:g} ms apart); the node "
               f"runs with `max_points` {max_points:,} (its default is {default:,}); node exit code {node_exit} "
               "after SIGINT.\n\n"
               + machine.markdown_table(["request points", "request arrays [MiB]", "round trip [ms]",
                                         "longest command gap [ms]", "in reference periods"], rows))
    notes = (
        "rclpy hands a service callback a request it has already deserialized and converted, holding the "
        "interpreter lock; the controller path runs on a thread of its own but waits for the lock, so its gap "
        "grows with the request, and a request above `max_points` is refused only after that conversion. "
        "`max_points` bounds what the node accepts and computes; what a client may send is bounded by no "
        "layer of rclpy or the middleware: a refused request pauses the path as long as its conversion takes "
        "(the last row). Keep the controller's feed-forward node for the controller, large batches on a second "
        "node, and who may call it to the graph's access control (ROS 2 security, domains).",
    )
    return machine.BenchmarkResult(
        name=NAME, title="Large ComputeFeedforward requests against the controller path (UR5, 500 Hz)",
        goals=goals, details=details, notes=notes, machine=description, quick=quick,
        values={"gaps_ms": {str(k): v for k, v in gaps.items()},
                "round_trips_ms": {str(k): v for k, v in round_trips.items()}, "node_peak_mb": node_peak})
