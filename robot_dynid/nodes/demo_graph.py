"""The demo's ROS graph in one process, for where ``ros2 launch`` is not available (pip installs).

:class:`DemoGraph` starts the nodes of ``launch/demo.launch.py`` (sim_robot, experiment_runner,
recorder, identifier, feedforward) as real rclpy nodes on one executor in a private context, and
gives them their parameters as the launch file does: every node reads ``config/<node>.yaml``, then
the given parameter files in order (``--params-file`` arguments of the context, so each file's
section for a node applies to that node only; later files win). Communication goes over DDS as
between processes. ``robot-dynid demo`` (:mod:`robot_dynid.cli.demo`) drives it.

:class:`ClosedLoopGraph` is one run of ``robot-dynid demo --closed-loop``: a feedforward node serving a model and
sim_robot arms in ``mode: control`` (each in a namespace of its own), with the demo's node playing the reference
as a controller's trajectory source would: the whole trajectory once on ``joint_trajectory`` (the arms' PD
reference), a JointState reference (positions [rad], velocities [rad/s], stamped now) at ``reference_rate`` into
the feedforward node's ``reference_topic`` (whose Float64MultiArray on ``feedforward_effort`` the forward command
arms add), and short JointTrajectory chunks into its ``trajectory_topic`` (whose copies with efforts, on
``trajectory_with_effort``, the trajectory arms follow). It spins on the EventsExecutor where the distro has one.
"""
from __future__ import annotations

import array
import dataclasses
import io
import pathlib
import signal
import sys
import time

import numpy as np
import rclpy
from rclpy.duration import Duration
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.time import Time
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynid.errors import DataError, DynIdError
from robot_dynid.experiment.closed_loop import join_samples
from robot_dynid.experiment.trajectory_following import TrajectoryFollower
from robot_dynid.msg import ExperimentStage, IdentifiedModel
from robot_dynid.nodes.experiment_runner import ExperimentRunnerNode
from robot_dynid.nodes.feedforward import FeedforwardNode
from robot_dynid.nodes.identifier import IdentifierNode
from robot_dynid.nodes.node_runtime import (MODEL_QOS, STAGE_MARKERS_IN, call_service, events_executor,
                                            float64_array, seconds, spin_until)
from robot_dynid.nodes.recorder import RecorderNode
from robot_dynid.nodes.sim_robot import SimRobotNode
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.stages import kind_name
from robot_dynid.srv import ComputeFeedforward, ResetWarmup, SetPayload
from robot_dynid.yaml_files import parameter_file_node, read_yaml

__all__ = ["NODE_CLASSES", "SERVICE_TIMEOUT", "INTERRUPTIONS", "parameter_file_values", "check_parameters_applied",
           "DemoGraph", "CLOSED_LOOP_FILES", "CHUNK_PERIOD", "CHUNK_HORIZON", "low_latency_executor", "ClosedLoopRun",
           "ClosedLoopGraph"]

# sim_robot last: its clock starts when it is made, and the others take a while to start
NODE_CLASSES = {"recorder": RecorderNode, "identifier": IdentifierNode, "feedforward": FeedforwardNode,
                "experiment_runner": ExperimentRunnerNode, "sim_robot": SimRobotNode}
SERVICE_TIMEOUT = 20.0  # s; one process, so discovery is quick, but the machine may be loaded
INTERRUPTIONS = (KeyboardInterrupt, ExternalShutdownException)  # Ctrl-C / SIGTERM while the graph spins


def parameter_file_values(files):
    """{node: {parameter: (value, file)}} of ROS 2 parameter files, later files winning; DataError naming
    the file when one is not YAML, not ``node: {ros__parameters: {...}}``, or names a node not in the demo."""
    expected = {}
    for path in map(pathlib.Path, files):
        sections = read_yaml(path, DataError, "parameter file") or {}
        for key, section in (sections.items() if isinstance(sections, dict) else [(None, sections)]):
            node = parameter_file_node(key) if key is not None else None
            if node not in NODE_CLASSES:
                raise DataError(f"parameter file {path}: {node!r} is not one of the demo's nodes {list(NODE_CLASSES)}")
            parameters = section.get("ros__parameters") if isinstance(section, dict) else None
            if not isinstance(parameters, dict):
                raise DataError(f"parameter file {path}: {node} needs a mapping 'ros__parameters: {{name: value}}'")
            expected.setdefault(node, {}).update({name: (value, path) for name, value in parameters.items()})
    return expected


def check_parameters_applied(nodes, expected):
    """A node ignores a parameter it does not declare, or a value of another type: say which instead."""
    for node, parameters in expected.items():
        for name, (value, path) in parameters.items():
            if not nodes[node].has_parameter(name):
                raise DataError(f"parameter file {path}: {node} has no parameter {name!r}")
            actual = nodes[node].get_parameter(name).value
            if (list(actual) if isinstance(actual, (list, tuple, array.array)) else actual) != value:
                raise DataError(f"parameter file {path}: {node}.{name} = {value!r} was not applied ({node} "
                                f"keeps {actual!r}: another type?)")


class DemoGraph:
    """The demo's nodes on one executor; use as a context manager (``close()`` writes the bag's end).

    Parameters
    ----------
    parameter_files : sequence of path
        Applied after every node's ``config/<node>.yaml``, in order.
    namespace : str
        Namespace of every node ("" = the root); topics and services are relative, so they follow.
    """

    def __init__(self, parameter_files, namespace=""):
        files = [find_package_file("config", f"{name}.yaml") for name in NODE_CLASSES] + list(parameter_files)
        expected = parameter_file_values(files)
        self.context = rclpy.Context()
        rclpy.init(context=self.context,
                   args=["robot-dynid", "--ros-args", *(a for f in files for a in ("--params-file", str(f))),
                         *(["-r", f"__ns:=/{namespace.strip('/')}"] if namespace.strip("/") else [])])
        self.nodes = {}
        try:
            for name, node_class in NODE_CLASSES.items():
                try:
                    self.nodes[name] = node_class(context=self.context)
                except ParameterException as error:   # e.g. an integer given for a float parameter
                    raise DataError(f"{name}: {error} (parameter files: {', '.join(map(str, files))})") from None
            check_parameters_applied(self.nodes, expected)
        except BaseException:
            self.close()
            raise
        self.node = rclpy.create_node("demo", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        for node in (*self.nodes.values(), self.node):
            self.executor.add_node(node)
        self.models = []
        self.node.create_subscription(IdentifiedModel, self.topic("identifier", "model_topic"),
                                      self.models.append, MODEL_QOS)
        self.stages = []
        self.node.create_subscription(ExperimentStage, self.topic("experiment_runner", "stage_topic"),
                                      self.stages.append, STAGE_MARKERS_IN)
        self.feedforward = self.node.create_client(ComputeFeedforward, "compute_feedforward")

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def topic(self, node, parameter):
        return self.nodes[node].get_parameter(parameter).value

    @property
    def simulator(self):
        """The sim_robot node's :class:`~robot_dynid.experiment.simulation.SimulatedRobot` (its true parameters)."""
        return self.nodes["sim_robot"].arm.simulator

    @property
    def bag_path(self):
        return self.nodes["recorder"].writer.path

    @property
    def robot_file(self):
        """The robot description the simulator, runner and identifier use."""
        return self.nodes["sim_robot"].robot_file

    def run_plan(self, progress=None):
        """Spin until the runner has played its plan and its markers have arrived; ``progress(text)``
        whenever a stage of another kind or cycle starts. DynIdError if the run was aborted (the
        runner logged why)."""
        runner = self.nodes["experiment_runner"]
        seen = {"markers": 0, "stage": None}

        def finished():
            for marker in self.stages[seen["markers"]:]:
                stage = (kind_name(marker.kind), marker.cycle)
                if marker.start and stage != seen["stage"]:
                    seen["stage"] = stage
                    if progress is not None:
                        progress(f"   cycle {marker.cycle}: {stage[0]}")
            seen["markers"] = len(self.stages)
            return runner.run.state != "running" and len(self.stages) >= runner.run.next_event

        spin_until(self.executor, lambda: runner.run.state != "idle" or runner.autostart_refusal, SERVICE_TIMEOUT,
                   "the experiment runner to start (autostart: true in config/demo.yaml)")
        if runner.run.state == "idle":
            raise DynIdError(f"the experiment runner did not start: {runner.autostart_refusal}")
        spin_until(self.executor, finished,
                   runner.start_delay + runner.run.schedule.approach_duration + runner.schedule.duration + 60.0,
                   "the experiment runner to play its plan")
        if runner.run.state != "done":
            raise DynIdError(f"the experiment was {runner.run.state}; see the experiment_runner log above")

    def identified_model(self, timeout=SERVICE_TIMEOUT):
        """The identifier's latest accepted IdentifiedModel once it has applied the plan's last marker."""
        identifier = self.nodes["identifier"]
        end = seconds(self.stages[-1].header.stamp)
        spin_until(self.executor, lambda: identifier.order.released_until >= end, timeout,
                   "the identifier to apply the plan's last stage marker")
        if identifier.session.version == 0:
            raise DynIdError("the identifier accepted no model; see its log above")
        spin_until(self.executor, lambda: self.models and self.models[-1].version == identifier.session.version,
                   timeout, f"IdentifiedModel version {identifier.session.version}")
        return self.models[-1]

    def compute_feedforward(self, joint_names, q, qd, qdd, version, timeout=SERVICE_TIMEOUT):
        """Feed-forward torques (N, n) [N m] for q (N, n) [rad], qd [rad/s], qdd [rad/s^2] from the
        feedforward node's ComputeFeedforward service, once it serves model ``version``."""
        request = ComputeFeedforward.Request(joint_names=list(joint_names), positions=float64_array(q),
                                             velocities=float64_array(qd), accelerations=float64_array(qdd))
        response = None

        def served():
            nonlocal response
            response = call_service(self.executor, self.feedforward, request, timeout, resend_after=2.0)
            return response.success and response.model_version >= version

        spin_until(self.executor, served, timeout, f"the feedforward node to serve model version {version}")
        return np.frombuffer(response.efforts, dtype=np.float64).reshape(len(q), len(joint_names))

    def close(self):
        """Close the bag (recorder), destroy the nodes, shut the context down."""
        recorder = self.nodes.get("recorder")
        if recorder is not None:
            handlers = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
            try:
                recorder.close()
            finally:  # the recorder ignores signals while it closes the bag; the process goes on afterwards
                for number, handler in handlers.items():
                    if handler is not None:
                        signal.signal(number, handler)
        for node in self.nodes.values():
            node.destroy_node()
        self.nodes = {}
        if getattr(self, "node", None) is not None:
            self.executor.shutdown()
            self.node.destroy_node()
            self.node = None
        rclpy.try_shutdown(context=self.context)


CLOSED_LOOP_FILES = ("sim_robot", "feedforward")     # config/<node>.yaml read by the closed-loop graph
CHUNK_PERIOD = 0.02         # s between the trajectory chunks the demo's node sends
# s of trajectory each chunk covers ahead: a stall of the process shorter than this does not leave the trajectory
# arms at a chunk's last point
CHUNK_HORIZON = 0.5


def low_latency_executor(context):
    """rclpy's EventsExecutor of ``context`` where the distro has one, else a SingleThreadedExecutor. The
    EventsExecutor enables faulthandler on ``sys.stderr``, which fails where that stream has no file descriptor
    (a redirected stream, pytest's capture): the process's own stderr is lent to it meanwhile."""
    lent = sys.stderr
    try:
        sys.stderr = sys.__stderr__ or lent
        executor = events_executor(context)
    except (io.UnsupportedOperation, ValueError):      # no file descriptor at all
        executor = None
    finally:
        sys.stderr = lent
    return executor or SingleThreadedExecutor(context=context)


@dataclasses.dataclass
class ClosedLoopRun:
    """What a :meth:`ClosedLoopGraph.run` measured; times [s] from the trajectory's start.

    Attributes
    ----------
    arms : dict of str to ControlledSamples
        Every controller cycle of each arm.
    arrivals : dict of str to (ndarray (M,), ndarray (M, n))
        Per arm, when each forward command arrived (after any ``feedforward_delay``) and its values [N m].
    reference_stamps : ndarray, shape (R,)
        The stamps of the JointState references sent.
    reference_q, reference_qd : ndarray, shape (R, n)
        Their positions [rad] and velocities [rad/s].
    reference_header_seconds : ndarray, shape (R,)
        Their header stamps as a node reads them [s] (``node_runtime.seconds``: what the feedforward node's
        reference accelerations are estimated on).
    events : dict of str to float
        When each event was sent (``<name>``) and answered (``<name>_done``), and when it took effect
        (``<name>_at``) for an action that says so (:meth:`attach_payload`).
    wall, cpu : float
        Wall time of the run and the process's CPU time in it [s].
    skipped : int
        Samples the arms skipped for falling behind (``max_lag``).
    """

    arms: dict
    arrivals: dict
    reference_stamps: np.ndarray
    reference_q: np.ndarray
    reference_qd: np.ndarray
    reference_header_seconds: np.ndarray
    events: dict
    wall: float
    cpu: float
    skipped: int


class ClosedLoopGraph:
    """A feedforward node and controlled sim_robot arms in one process (module docstring); a context manager.

    Parameters
    ----------
    feedforward : dict
        The feedforward node's parameters beyond config/feedforward.yaml (e.g. ``model_file``).
    arms : dict of str to dict
        Each arm's name (its namespace below the graph's) and sim_robot parameters beyond config/sim_robot.yaml;
        ``command_topic`` and ``feedforward_topic`` are names below the graph's namespace (``joint_trajectory``,
        ``trajectory_with_effort``; ``feedforward_effort`` or '').
    namespace : str
        Of the whole graph.
    """

    def __init__(self, feedforward: dict, arms: dict, namespace: str = "closed_loop"):
        self.namespace = "/" + namespace.strip("/")
        files = [find_package_file("config", f"{name}.yaml") for name in CLOSED_LOOP_FILES]
        self.context = rclpy.Context()
        rclpy.init(context=self.context, args=["robot-dynid", "--ros-args",
                                               *(a for f in files for a in ("--params-file", str(f)))])
        self.feedforward = self.node = None
        self.arms = {}
        try:
            self.feedforward = FeedforwardNode(context=self.context, namespace=self.namespace, parameter_overrides=[
                Parameter(name, value=value) for name, value in {
                    "reference_topic": "reference", "command_topic": "feedforward_effort", "model_topic": "",
                    "trajectory_topic": "reference_trajectory", "trajectory_out_topic": "trajectory_with_effort",
                    **feedforward}.items()])
            for name, parameters in arms.items():
                parameters = {**parameters, "mode": "control"}
                for topic in ("command_topic", "feedforward_topic"):
                    if parameters.get(topic):
                        parameters[topic] = f"{self.namespace}/{parameters[topic]}"
                self.arms[name] = SimRobotNode(context=self.context, namespace=f"{self.namespace}/{name}",
                                               parameter_overrides=[Parameter(key, value=value)
                                                                    for key, value in parameters.items()])
                self.arms[name].arm.history = []
                self.arms[name].arm.feedforward.history = []
        except BaseException:
            self.close()
            raise
        self.node = rclpy.create_node("demo", namespace=self.namespace, context=self.context)
        self.epoch = self.node.get_clock().now().nanoseconds     # ROS time [ns] of the graph's start
        self.clients = {}
        self.executor = low_latency_executor(self.context)
        for node in (self.feedforward, *self.arms.values(), self.node):
            self.executor.add_node(node)
        self.trajectory_publisher = self.node.create_publisher(JointTrajectory, "joint_trajectory", 10)
        self.reference_publisher = self.node.create_publisher(JointState, "reference", 10)
        self.chunk_publisher = self.node.create_publisher(JointTrajectory, "reference_trajectory", 10)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def now(self) -> float:
        """ROS time [s] since :attr:`epoch` (whole seconds of the epoch would cost float64 its sub-microsecond
        digits)."""
        return (self.node.get_clock().now().nanoseconds - self.epoch) * 1e-9

    def client(self, node, service_type, name):
        """A client of ``node``'s service ``~/<name>`` (made once)."""
        key = (node.get_namespace(), node.get_name(), name)
        if key not in self.clients:
            self.clients[key] = self.node.create_client(service_type,
                                                        f"{node.get_namespace().rstrip('/')}/{node.get_name()}/{name}")
        return self.clients[key]

    def call_all(self, calls):
        """Send every ``(node, service type, name, request)`` of ``calls`` at once and spin until all are
        answered; DynIdError naming the first that refused."""
        clients = [self.client(node, service_type, name) for node, service_type, name, _ in calls]
        spin_until(self.executor, lambda: all(client.service_is_ready() for client in clients), SERVICE_TIMEOUT,
                   "the closed-loop graph's services")
        futures = [client.call_async(request) for client, (_, _, _, request) in zip(clients, calls)]
        spin_until(self.executor, lambda: all(future.done() for future in futures), SERVICE_TIMEOUT,
                   "the closed-loop graph's services to answer")
        for (node, _, name, _), future in zip(calls, futures):
            if not future.result().success:
                raise DynIdError(f"{node.get_namespace()}/{node.get_name()} ~/{name}: {future.result().message}")

    def reset_warmup(self):
        """Every arm and the feedforward node cold now (``~/reset_warmup`` with running time 0, sent at once)."""
        self.call_all([(node, ResetWarmup, "reset_warmup", ResetWarmup.Request(elapsed=0.0))
                       for node in (*self.arms.values(), self.feedforward)])

    def attach_payload(self, payload, notice: float = 0.0) -> float:
        """``payload`` (:class:`~robot_dynid.model.payload.Payload`) fixed to every arm (``~/attach_payload``) and
        served (the feedforward node's ``~/set_payload``) ``notice`` [s] from now, the requests sent at once with
        that stamp (0: no stamp, each takes effect when it is handled); returns when it takes effect [s since
        :attr:`epoch`]."""
        request = SetPayload.Request(frame=payload.frame, mass=payload.mass, com=list(payload.com),
                                     inertia=list(payload.inertia))
        at = self.now() + notice
        if notice:
            request.stamp = Time(nanoseconds=self.epoch + round(at * 1e9)).to_msg()
        self.call_all([(node, SetPayload, "attach_payload", request) for node in self.arms.values()]
                      + [(self.feedforward, SetPayload, "set_payload", request)])
        return at

    def run(self, joint_names, times, positions, velocities, accelerations, settle: float, reference_rate: float,
            events=()) -> ClosedLoopRun:
        """Play a trajectory (points at ``times`` (M,) [s] from its start, ``positions``, ``velocities``,
        ``accelerations`` (M, n) [rad, rad/s, rad/s^2]) starting ``settle`` s from now, and measure it.

        ``events``: ``(time [s] from the start, name, action)``, each ``action(graph)`` called when due, in order.
        """
        joint_names = list(joint_names)
        times = np.asarray(times, dtype=float)
        self._wait_for_graph()
        start = self.now() + settle
        follower = TrajectoryFollower(joint_names, positions[0])
        follower.command(joint_names, times, positions, velocities, accelerations, start_time=start)
        points = [JointTrajectoryPoint(positions=positions[k].tolist(), velocities=velocities[k].tolist(),
                                       accelerations=accelerations[k].tolist(),
                                       time_from_start=Duration(nanoseconds=round(times[k] * 1e9)).to_msg())
                  for k in range(times.size)]
        stamp = Time(nanoseconds=self.epoch + round(start * 1e9)).to_msg()
        message = JointTrajectory(joint_names=joint_names, points=points)
        message.header.stamp = stamp
        self.trajectory_publisher.publish(message)
        log = {"stamp": [], "q": [], "qd": [], "header": []}
        timers = [self._reference_timer(follower, joint_names, reference_rate, log),
                  self._chunk_timer(joint_names, times, points, stamp, start)]
        pending = sorted(events, key=lambda event: event[0])
        wall, cpu = time.monotonic(), time.process_time()
        try:
            happened = self._spin_with_events(pending, start, start + times[-1] + 0.2)
        finally:
            for timer in timers:
                self.node.destroy_timer(timer)
        wall, cpu = time.monotonic() - wall, time.process_time() - cpu
        n = len(joint_names)
        arms, arrivals, skipped = self._measured(n, start)
        return ClosedLoopRun(arms, arrivals, np.array(log["stamp"]) - start, np.array(log["q"]).reshape(-1, n),
                             np.array(log["qd"]).reshape(-1, n), np.array(log["header"]), happened, wall, cpu,
                             skipped)

    def _wait_for_graph(self):
        """Spin until every arm and the feedforward node serve their warm-up and payload services and every
        publisher of the trajectory, the reference and the feed-forward has its subscribers."""
        topics = [arm.get_parameter(name).value.rsplit("/", 1)[-1] for arm in self.arms.values()
                  for name in ("command_topic", "feedforward_topic")]
        feedforward = self.feedforward
        wanted = ((self.trajectory_publisher, topics.count("joint_trajectory")), (self.reference_publisher, 1),
                  (self.chunk_publisher, 1), (feedforward.command_publisher, topics.count("feedforward_effort")),
                  (feedforward.trajectory_publisher, topics.count("trajectory_with_effort")))
        clients = [self.client(node, service_type, name) for node in (*self.arms.values(), self.feedforward)
                   for service_type, name in ((ResetWarmup, "reset_warmup"),
                                              (SetPayload, "set_payload" if node is self.feedforward
                                               else "attach_payload"))]
        spin_until(self.executor, lambda: all(client.service_is_ready() for client in clients) and all(
                   publisher.get_subscription_count() >= count for publisher, count in wanted), SERVICE_TIMEOUT,
                   "the closed-loop graph's subscriptions and services")

    def _reference_timer(self, follower, joint_names, rate: float, log: dict):
        """A timer publishing ``follower``'s state now as the reference JointState at ``rate`` [Hz]; each one's
        time [s since the epoch], q, qd and header stamp [s] appended to ``log``."""
        def reference():
            now = self.node.get_clock().now()
            t = (now.nanoseconds - self.epoch) * 1e-9
            q, qd, _ = follower.sample([t])
            state = JointState(name=joint_names, position=q[0].tolist(), velocity=qd[0].tolist())
            state.header.stamp = now.to_msg()
            self.reference_publisher.publish(state)
            log["stamp"].append(t)
            log["q"].append(q[0])
            log["qd"].append(qd[0])
            log["header"].append(seconds(state.header.stamp))

        return self.node.create_timer(1.0 / rate, reference)

    def _chunk_timer(self, joint_names, times, points, stamp, start: float):
        """A timer publishing every :data:`CHUNK_PERIOD` the trajectory's ``points`` from the one before now to
        :data:`CHUNK_HORIZON` ahead, stamped ``stamp`` (the trajectory's start, ``start`` [s since the epoch])."""
        def chunk():
            now = self.now() - start
            first = max(0, int(np.searchsorted(times, now, side="right")) - 1)
            last = max(first + 1, int(np.searchsorted(times, now + CHUNK_HORIZON, side="right")))
            piece = JointTrajectory(joint_names=joint_names, points=points[first:last + 1])
            piece.header.stamp = stamp
            self.chunk_publisher.publish(piece)

        return self.node.create_timer(CHUNK_PERIOD, chunk)

    def _spin_with_events(self, pending: list, start: float, end: float) -> dict:
        """Spin until ``end`` [s since the epoch], calling each of ``pending`` (``(time from start, name,
        action)`` in time order) when due; returns when each began, ended and took effect [s from ``start``]."""
        happened = {}
        while self.now() < end:
            if pending and self.now() >= start + pending[0][0]:
                _, name, action = pending.pop(0)
                happened[name] = self.now() - start
                effective = action(self)
                happened[f"{name}_done"] = self.now() - start
                if effective is not None:
                    happened[f"{name}_at"] = effective - start
            self.executor.spin_once(timeout_sec=0.005)
        return happened

    def _measured(self, n: int, start: float):
        """Each arm's controller cycles and its forward commands' arrivals (times [s from ``start``], values
        (K, ``n``) [N m]), and the samples the arms skipped in all."""
        arms, arrivals, skipped = {}, {}, 0
        for name, node in self.arms.items():
            offset = (node.start.nanoseconds - self.epoch) * 1e-9 - start
            samples = join_samples(node.arm.history)
            arms[name] = dataclasses.replace(samples, time=samples.time + offset)
            history = node.arm.feedforward.history
            arrivals[name] = (np.array([entry[0] + offset for entry in history]),
                              np.array([entry[1] for entry in history]).reshape(len(history), n))
            skipped += node.arm.skipped
        return arms, arrivals, skipped

    def close(self):
        """Destroy the nodes, shut the context down."""
        for node in (self.feedforward, *self.arms.values(), self.node):
            if node is not None:
                node.destroy_node()
        if getattr(self, "executor", None) is not None:
            self.executor.shutdown()
        self.arms, self.feedforward, self.node = {}, None, None
        rclpy.try_shutdown(context=self.context)
