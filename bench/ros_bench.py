"""What the ROS 2 node benchmarks share: a loopback ROS environment, /proc sampling of a process,
and the helper processes that play the other side of a benchmarked node.

Library part (imported by ``bench_recorder.py``, ``bench_identifier.py`` and ``bench_feedforward.py``):

- :func:`setup_ros_environment`: DDS traffic on loopback, a ROS_DOMAIN_ID of its own in
  150..199 (the tests take 1..100), one OpenBLAS thread for every process started afterwards;
- :class:`ProcessSample` / :func:`sample_process`: CPU time and resident memory of a process;
  :func:`machine_cpu_ticks` / :func:`steal_percent`: CPU time the hypervisor gave to other guests;
- :func:`start_helper`: one of the roles below in its own process;
- ``RosTestGraph``, ``start_node``, ``stop_node``, ``installed_executable`` of
  ``test/ros_graph.py``, re-exported so that tests and benchmarks start nodes the same way, and
  :class:`EventsGraph`, a RosTestGraph spun by rclpy's EventsExecutor (a lean timing client).

Helper processes, ``python bench/ros_bench.py ROLE ...`` (each an rclpy process that lives
through :func:`robot_dynid.nodes.node_runtime.spin_node` like the product's nodes, i.e. the same
executor and SIGINT handling; the services process spins as the feedforward node does):

- ``publisher``: ``sensor_msgs/JointState`` on a strict schedule, optionally a robot's motion after a
  stage marker (see :func:`publish_joint_states`);
- ``counter``: a raw subscription that only counts messages, the recorder's baseline;
- ``controller``: a controller's side of the feed-forward node's topic path: ``JointState`` references at a
  fixed rate out, the ``Float64MultiArray`` commands' arrival times in (see :func:`run_controller`);
- ``services``: a ``ComputeFeedforward`` that echoes the request (efforts = positions), an empty
  ``std_srvs/Trigger`` and a topic relay (``JointState`` on ``bench_reference`` in, its positions as
  ``Float64MultiArray`` on ``bench_command`` out), the feedforward node's transport baselines.
"""
from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import machine  # noqa: F401  (puts the repository root first on sys.path)

BENCH_DIRECTORY = Path(__file__).resolve().parent
TEST_DIRECTORY = BENCH_DIRECTORY.parent / "test"
if str(TEST_DIRECTORY) not in sys.path:
    sys.path.insert(0, str(TEST_DIRECTORY))

from ros_domain import claim_ros_domain  # noqa: E402
from ros_graph import (DISCOVERY_TIMEOUT, RosTestGraph, installed_executable,  # noqa: E402,F401
                       start_node, stop_node)

DOMAIN_IDS = range(150, 200)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")      # [ticks/s] of utime / stime in /proc/<pid>/stat


# --------------------------------------------------------------------------- environment

def setup_ros_environment() -> int:
    """Keep ROS traffic of this process and its children on loopback; return the domain id.

    Sets ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``, ``OPENBLAS_NUM_THREADS=1`` (unless set),
    ``PYTHONPATH`` with the repository first (the installed node executables then run the source
    tree's modules, as the benchmark process does, new files and built extensions included) and
    ``ROS_DOMAIN_ID`` to the first id of :data:`DOMAIN_IDS` not locked by another benchmark
    process (lock files in ``$TMPDIR/robot_dynid_bench_domains``, held until this process ends).
    Call it before ``rclpy.init`` and before starting nodes.
    """
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(machine.REPOSITORY) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(machine.REPOSITORY), *paths])
    domain_id = claim_ros_domain(DOMAIN_IDS, "robot_dynid_bench_domains")
    os.environ["ROS_DOMAIN_ID"] = str(domain_id)
    return domain_id


def start_helper(role: str, *arguments, log_path=None, stdout=None) -> subprocess.Popen:
    """This file as ``ROLE arguments...`` in its own process (this interpreter, this environment).

    Output goes to ``log_path`` if given, else to ``stdout`` (e.g. ``subprocess.PIPE``), else is
    discarded.
    """
    command = [sys.executable, str(Path(__file__).resolve()), role, *map(str, arguments)]
    if log_path is not None:
        stdout = open(log_path, "wb")
    return subprocess.Popen(command, stdout=stdout if stdout is not None else subprocess.DEVNULL,
                            stderr=subprocess.STDOUT, env=dict(os.environ))


def wait_for_log(path: Path, pattern: str, timeout: float, process=None) -> re.Match:
    """Poll the text file ``path`` until ``pattern`` matches it; the last match.

    Raises TimeoutError after ``timeout`` [s], RuntimeError when ``process`` exits first.
    """
    deadline = time.monotonic() + timeout
    while True:
        text = path.read_text(errors="replace") if path.exists() else ""
        found = list(re.finditer(pattern, text))
        if found:
            return found[-1]
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited with {process.returncode} before "
                               f"{pattern!r} appeared in {path}:\n{text[-2000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{pattern!r} did not appear in {path} within {timeout} s:\n"
                               f"{text[-2000:]}")
        time.sleep(0.05)


class EventsGraph(RosTestGraph):
    """:class:`RosTestGraph` whose executor is rclpy's EventsExecutor, the one with the least
    overhead per callback: a client that adds as little as possible to the round trips it times."""

    def __init__(self, node_name="robot_dynid_bench"):
        from robot_dynid.nodes.node_runtime import events_executor
        super().__init__(node_name)
        executor = events_executor(self.context)
        if executor is None:
            raise RuntimeError("this rclpy has no EventsExecutor (Humble): the timing client needs one")
        self.executor.remove_node(self.node)
        self.executor.shutdown()
        self.executor = executor
        self.executor.add_node(self.node)


def read_line(process: subprocess.Popen, timeout: float) -> str | None:
    """The next stdout line of ``process`` within ``timeout`` [s], else None."""
    import select
    ready, _, _ = select.select([process.stdout], [], [], max(timeout, 0.0))
    if not ready:
        return None
    line = process.stdout.readline().decode(errors="replace")
    if not line and process.poll() is not None:
        raise RuntimeError(f"the publisher exited with {process.returncode}")
    return line.strip()


def sample_until_published(publisher: subprocess.Popen, watched: dict, count: int, duration: float,
                           period: float = 1.0, also=None) -> tuple[dict, list]:
    """Sample the ``watched`` processes (name -> pid) while ``publisher`` (the ``publisher`` role, stdout
    piped) publishes ``count`` messages over ``duration`` [s]: from its ``publishing`` line to its
    ``published`` line, every ``period`` [s] and at both ends, calling ``also()`` at each sample too.

    Returns ``({name: [ProcessSample]}, [also() results])``. RuntimeError when the publisher does not start
    or reports an error, TimeoutError when it has not finished after ``1.5 duration + 60`` s.
    """
    line = read_line(publisher, DISCOVERY_TIMEOUT + 30.0)
    if line is None or not line.startswith("publishing"):
        raise RuntimeError(f"publisher did not start: {line!r}")
    samples = {name: [sample_process(pid)] for name, pid in watched.items()}
    extra = [also()] if also else []
    deadline = time.monotonic() + duration * 1.5 + 60.0
    next_sample = time.monotonic() + period
    while True:
        line = read_line(publisher, next_sample - time.monotonic())
        if line is not None and line.startswith("published"):
            break
        if line is not None and line.startswith("error"):
            raise RuntimeError(f"publisher: {line}")
        if time.monotonic() >= next_sample:
            for name, pid in watched.items():
                samples[name].append(sample_process(pid))
            if also:
                extra.append(also())
            next_sample += period
        if time.monotonic() > deadline:
            raise TimeoutError(f"the publisher did not finish {count} messages in time")
    for name, pid in watched.items():
        samples[name].append(sample_process(pid))
    if also:
        extra.append(also())
    return samples, extra


def cpu_rows(samples: dict, labels: dict, baseline: str = "counter") -> list[list[str]]:
    """Table rows ``[label, CPU [% of one core], vs baseline, CPU time [s], VmRSS at end]`` of the processes
    ``labels`` names (name -> label), from their samples (name -> [ProcessSample], first to last)."""
    cpu = {name: cpu_percent(values[0], values[-1]) for name, values in samples.items()}
    return [[label, f"{cpu[name]:.1f}", f"{cpu[name] / cpu[baseline]:.2f}x",
             f"{samples[name][-1].cpu - samples[name][0].cpu:.1f}", machine.megabytes(samples[name][-1].rss)]
            for name, label in labels.items()]


# --------------------------------------------------------------------------- /proc sampling

@dataclasses.dataclass(frozen=True)
class ProcessSample:
    """One look at a process through /proc.

    Attributes
    ----------
    time : float
        ``time.monotonic()`` of the sample [s].
    cpu : float
        User + system CPU time used since the process started [s] (10 ms resolution).
    rss : int
        Resident memory now (VmRSS) [bytes].
    peak_rss : int
        Highest resident memory so far (VmHWM) [bytes].
    """

    time: float
    cpu: float
    rss: int
    peak_rss: int


def sample_process(pid: int) -> ProcessSample:
    """CPU time and resident memory of ``pid`` from /proc/<pid>/stat and /proc/<pid>/status."""
    now = time.monotonic()
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()     # fields[0] is field 3 (state) of proc(5)
    cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS   # utime (14) + stime (15)
    status = Path(f"/proc/{pid}/status").read_text()
    memory = {key: int(value) * 1024 for key, value in
              re.findall(r"^(VmRSS|VmHWM):\s*(\d+) kB", status, re.MULTILINE)}
    return ProcessSample(now, cpu, memory["VmRSS"], memory["VmHWM"])


def cpu_percent(first: ProcessSample, last: ProcessSample) -> float:
    """CPU use between two samples of one process [% of one core]."""
    return 100.0 * (last.cpu - first.cpu) / (last.time - first.time)


def machine_cpu_ticks() -> tuple[int, int]:
    """(steal, total) CPU ticks of the whole machine since boot, from the ``cpu`` line of
    /proc/stat (proc(5): user nice system idle iowait irq softirq steal ...; guest time is already
    in user). Steal is time a virtual machine's CPUs were runnable but ran other guests."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return fields[7], sum(fields)


def steal_percent(first: tuple[int, int], last: tuple[int, int]) -> float:
    """Stolen CPU time between two :func:`machine_cpu_ticks` [% of the machine's CPU time]."""
    total = last[1] - first[1]
    return 100.0 * (last[0] - first[0]) / total if total > 0 else 0.0


def percentiles(values, quantiles=(50, 99)) -> dict:
    """``{"p50": ..., "p99": ..., "max": ..., "mean": ...}`` of ``values`` (numpy's default
    linear interpolation)."""
    import numpy as np
    values = np.asarray(values, dtype=float)
    result = {f"p{q:g}": float(np.percentile(values, q)) for q in quantiles}
    result.update(max=float(values.max()), mean=float(values.mean()), n=int(values.size))
    return result


# --------------------------------------------------------------------------- helper processes

def _reliable_qos(depth: int):
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)


def robot_motion(robot_file: Path, rate: float, count: int):
    """(joint names, q, qd, tau (count, n)) of the UR5-like workload at ``rate`` [Hz]: the excitation
    trajectory of ``bench_identification`` and the noise-free torques of physically consistent
    parameters with coulomb_viscous friction (``machine.physical_parameters``, seed 23)."""
    import numpy as np
    import bench_identification
    from robot_dynid.model.friction import friction_model
    from robot_dynid.model.regressor import Regressor
    from robot_dynid.model.robot_loader import load_robot
    regressor = Regressor(load_robot(robot_file), friction_model("coulomb_viscous"))
    rng = np.random.default_rng(23)
    trajectory = bench_identification.excitation_trajectory(regressor.robot, rng)
    q, qd, qdd = trajectory.evaluate(np.arange(count) / rate)
    return regressor.robot.joint_names, q, qd, regressor.torque(machine.physical_parameters(regressor, rng), q, qd, qdd)


def _stage_start(node, stage: str, stamp_ns: int) -> bool:
    """Publish the start marker of an ``ExperimentStage`` of kind ``stage`` stamped ``stamp_ns`` once a
    subscriber is matched (False if none within the discovery timeout)."""
    from robot_dynid.msg import ExperimentStage
    from robot_dynid.nodes.node_runtime import STAGE_MARKERS_OUT
    from robot_dynid.recordings.stages import StageMarker
    publisher = node.create_publisher(ExperimentStage, "experiment_stage", STAGE_MARKERS_OUT)
    deadline = time.monotonic() + DISCOVERY_TIMEOUT
    while publisher.get_subscription_count() < 1:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    marker = StageMarker(stamp=stamp_ns * 1e-9, kind=stage, cycle=0, start=True)
    message = ExperimentStage(**marker.message_fields())
    message.header.stamp.sec, message.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    publisher.publish(message)
    return True


def publish_joint_states(topic: str, n_joints: int, rate: float, count: int, subscribers: int,
                         depth: int, out: Path, robot: Path | None = None, stage: str | None = None) -> int:
    """Publish ``count`` JointState messages at ``rate`` [Hz] once ``subscribers`` are matched.

    Message ``k`` (k = 0, 1, ...) is due at ``start + k / rate`` on the monotonic clock; the loop
    sleeps until then, or publishes at once when late (no message is skipped, so a stall is
    followed by a burst that catches up). Each message carries ``n_joints`` joints
    ``joint_1..``, with position, velocity and effort; ``position[0] = k`` [rad] and
    ``header.frame_id = str(k)`` identify it, ``header.stamp`` is the wall time of publishing.
    With ``robot`` (a robot file) the messages carry that robot's joints on :func:`robot_motion`
    instead (``header.frame_id = str(k)`` still; ``position[0]`` is the motion's) and ``header.stamp``
    is the schedule, ``wall start + k / rate``, as a driver's fixed-rate loop stamps them; with
    ``stage`` an ``ExperimentStage`` start marker of that kind, stamped 10 ms before the first
    message, goes out on ``experiment_stage`` first.

    Prints ``publishing <monotonic ns>`` before the first and ``published <monotonic ns>`` after
    the last message (the benchmark reads both to time its CPU window), waits until every
    subscriber acknowledged every message (reliable QoS), and writes ``out`` (``.npz``):
    ``due`` and ``sent`` (monotonic [ns] of schedule and of the ``publish`` call), ``stamp``
    (header stamps [ns]). Returns the exit code.
    """
    import numpy as np
    import rclpy
    from rclpy.duration import Duration
    from sensor_msgs.msg import JointState

    rclpy.init()
    node = rclpy.create_node("bench_joint_state_publisher")
    try:
        publisher = node.create_publisher(JointState, topic, _reliable_qos(depth))
        deadline = time.monotonic() + DISCOVERY_TIMEOUT
        while publisher.get_subscription_count() < subscribers:   # matched subscriptions (DDS)
            if time.monotonic() > deadline:
                print(f"error: {publisher.get_subscription_count()} of {subscribers} subscribers "
                      f"matched on {topic} after {DISCOVERY_TIMEOUT} s", flush=True)
                return 1
            time.sleep(0.01)
        message = JointState(name=[f"joint_{j + 1}" for j in range(n_joints)])
        phases = np.linspace(0.0, np.pi, n_joints)
        if robot is not None:
            names, *motion = robot_motion(robot, rate, count)
            message.name = list(names)
            motion = [values.tolist() for values in motion]
        period_ns = round(1e9 / rate)
        due = np.empty(count, np.int64)
        sent = np.empty(count, np.int64)
        stamp = np.empty(count, np.int64)
        wall_start = time.time_ns() + 50_000_000
        if stage is not None and not _stage_start(node, stage, wall_start - 10_000_000):
            print(f"error: no subscriber of the stage markers after {DISCOVERY_TIMEOUT} s", flush=True)
            return 1
        start = time.monotonic_ns() + 50_000_000
        print(f"publishing {start}", flush=True)
        for k in range(count):
            due[k] = start + k * period_ns
            wait = due[k] - time.monotonic_ns()
            if wait > 0:
                time.sleep(wait * 1e-9)
            if robot is None:
                angle = np.sin(phases + k * 1e-3)
                message.position = [float(k), *angle[1:].tolist()]
                message.velocity = (0.5 * angle).tolist()
                message.effort = (10.0 * angle).tolist()
            else:
                message.position, message.velocity, message.effort = (values[k] for values in motion)
            message.header.frame_id = str(k)
            wall = time.time_ns() if robot is None else wall_start + k * period_ns
            message.header.stamp.sec, message.header.stamp.nanosec = divmod(wall, 1_000_000_000)
            sent[k] = time.monotonic_ns()
            publisher.publish(message)
            stamp[k] = wall
        print(f"published {time.monotonic_ns()}", flush=True)
        acked = publisher.wait_for_all_acked(Duration(seconds=60))
        np.savez(out, due=due, sent=sent, stamp=stamp)
        print(f"acknowledged {acked}", flush=True)
        return 0
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


def run_controller(reference: str, command: str, robot: Path, rate: float, duration: float, out: Path) -> int:
    """Publish ``JointState`` references of ``robot``'s :func:`robot_motion` on ``reference`` at ``rate`` [Hz] for
    ``duration`` [s] (schedule as :func:`publish_joint_states`) and record the monotonic time [ns] each
    ``Float64MultiArray`` arrives on ``command`` (a single-threaded executor on a thread of its own, as a
    controller's subscription). Waits until both ends are matched; prints ``publishing <ns>`` and
    ``published <ns>``; writes ``out`` (``.npz``: ``sent``, ``arrived``)."""
    import threading

    import numpy as np
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    rclpy.init()
    node = rclpy.create_node("bench_controller")
    arrived = []
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spinning = threading.Thread(target=executor.spin, daemon=True)
    try:
        publisher = node.create_publisher(JointState, reference, 10)
        node.create_subscription(Float64MultiArray, command, lambda _msg: arrived.append(time.monotonic_ns()), 10)
        spinning.start()
        deadline = time.monotonic() + DISCOVERY_TIMEOUT
        while publisher.get_subscription_count() < 1 or node.count_publishers(command) < 1:
            if time.monotonic() > deadline:
                print(f"error: {reference} or {command} not matched after {DISCOVERY_TIMEOUT} s", flush=True)
                return 1
            time.sleep(0.01)
        count = int(duration * rate)
        names, positions, velocities, _ = robot_motion(robot, rate, count)
        message = JointState(name=list(names))
        period_ns = round(1e9 / rate)
        sent = np.empty(count, np.int64)
        start = time.monotonic_ns() + 50_000_000
        print(f"publishing {start}", flush=True)
        for k in range(count):
            wait = start + k * period_ns - time.monotonic_ns()
            if wait > 0:
                time.sleep(wait * 1e-9)
            message.position, message.velocity = positions[k].tolist(), velocities[k].tolist()
            message.header.stamp.sec, message.header.stamp.nanosec = divmod(time.time_ns(), 1_000_000_000)
            sent[k] = time.monotonic_ns()
            publisher.publish(message)
        time.sleep(0.2)
        print(f"published {time.monotonic_ns()}", flush=True)
        np.savez(out, sent=sent, arrived=np.array(arrived, np.int64))
        return 0
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()


def _counter_node_class(topic: str, depth: int, status_period: float):
    from rclpy.node import Node
    from sensor_msgs.msg import JointState

    class CounterNode(Node):
        """Raw JointState subscription (as the recorder's) that only counts; prints
        ``count N`` every ``status_period`` [s] and at the end."""

        def __init__(self):
            super().__init__("bench_counter")
            self.count = 0
            self.create_subscription(JointState, topic, self.on_message, _reliable_qos(depth), raw=True)
            self.create_timer(status_period, self.report)

        def on_message(self, _data):
            self.count += 1

        def report(self):
            print(f"count {self.count}", flush=True)

        def close(self):
            self.report()

    return CounterNode


def _services_node_class():
    from rclpy.node import Node
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from std_srvs.srv import Trigger

    from robot_dynid.srv import ComputeFeedforward

    class ServicesNode(Node):
        """``bench_echo_feedforward`` (ComputeFeedforward: efforts = the request's positions, so
        the response is as large as the feedforward node's), ``bench_trigger``
        (std_srvs/Trigger, empty) and the relay ``bench_reference`` -> ``bench_command``
        (JointState in, its positions out as Float64MultiArray: the feedforward node's topic path
        without a model; depth 10, reliable, as the node's)."""

        def __init__(self):
            super().__init__("bench_services")
            self.create_service(ComputeFeedforward, "bench_echo_feedforward", self.on_echo)
            self.create_service(Trigger, "bench_trigger", self.on_trigger)
            self.command = self.create_publisher(Float64MultiArray, "bench_command", 10)
            self.create_subscription(JointState, "bench_reference", self.on_reference, 10)
            gc.collect()    # as the feedforward node: long-lived objects out of collections
            gc.freeze()

        def on_reference(self, msg):
            self.command.publish(Float64MultiArray(data=msg.position))

        def on_echo(self, request, response):
            response.efforts = request.positions        # array.array('d'): taken as it is
            response.success = True
            return response

        def on_trigger(self, _request, response):
            response.success = True
            return response

    return ServicesNode


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="helper processes of the ROS 2 benchmarks")
    roles = parser.add_subparsers(dest="role", required=True)
    publisher = roles.add_parser("publisher", help="JointState at a fixed rate")
    publisher.add_argument("--topic", default="joint_states")
    publisher.add_argument("--joints", type=int, default=12)
    publisher.add_argument("--rate", type=float, default=1000.0, help="[Hz]")
    publisher.add_argument("--count", type=int, required=True)
    publisher.add_argument("--subscribers", type=int, default=1,
                           help="matched subscriptions to wait for before publishing")
    publisher.add_argument("--depth", type=int, default=1000, help="reliable keep-last depth")
    publisher.add_argument("--out", type=Path, required=True, help=".npz of the send times")
    publisher.add_argument("--robot", type=Path, default=None,
                           help="robot file: its joints on an excitation trajectory (see robot_motion)")
    publisher.add_argument("--stage", default=None, help="ExperimentStage kind to start before publishing")
    counter = roles.add_parser("counter", help="raw subscription that counts messages")
    counter.add_argument("--topic", default="joint_states")
    counter.add_argument("--depth", type=int, default=1000)
    counter.add_argument("--status-period", type=float, default=1.0, help="[s]")
    controller = roles.add_parser("controller", help="references out at a fixed rate, command arrivals in")
    controller.add_argument("--reference", required=True)
    controller.add_argument("--command", required=True)
    controller.add_argument("--robot", type=Path, required=True, help="robot file (its joints and motion)")
    controller.add_argument("--rate", type=float, default=500.0, help="[Hz]")
    controller.add_argument("--duration", type=float, required=True, help="[s]")
    controller.add_argument("--out", type=Path, required=True, help=".npz of send and arrival times")
    roles.add_parser("services", help="echo ComputeFeedforward and empty Trigger services")
    args, ros_arguments = parser.parse_known_args(argv)
    if args.role == "publisher":
        return publish_joint_states(args.topic, args.joints, args.rate, args.count,
                                    args.subscribers, args.depth, args.out, args.robot, args.stage)
    if args.role == "controller":
        return run_controller(args.reference, args.command, args.robot, args.rate, args.duration, args.out)
    from robot_dynid.nodes.node_runtime import spin_node
    if args.role == "counter":
        return spin_node(_counter_node_class(args.topic, args.depth, args.status_period),
                         ros_arguments or None)
    # the same executor as the feedforward node, whose transport these services stand for
    return spin_node(_services_node_class(), ros_arguments or None, low_latency=True)


if __name__ == "__main__":
    sys.exit(main())
