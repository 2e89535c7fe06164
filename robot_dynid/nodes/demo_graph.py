"""The demo's ROS graph in one process, for where ``ros2 launch`` is not available (pip installs).

:class:`DemoGraph` starts the nodes of ``launch/demo.launch.py`` (sim_robot, experiment_runner,
recorder, identifier, feedforward) as real rclpy nodes on one executor in a private context, and
gives them their parameters as the launch file does: every node reads ``config/<node>.yaml``, then
the given parameter files in order (``--params-file`` arguments of the context, so each file's
section for a node applies to that node only; later files win). Communication goes over DDS as
between processes. ``robot-dynid demo`` (:mod:`robot_dynid.cli.demo`) drives it.
"""
from __future__ import annotations

import array
import pathlib
import signal

import numpy as np
import rclpy
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

from robot_dynid.errors import DataError, DynIdError
from robot_dynid.msg import ExperimentStage, IdentifiedModel
from robot_dynid.nodes.experiment_runner import ExperimentRunnerNode
from robot_dynid.nodes.feedforward import FeedforwardNode
from robot_dynid.nodes.identifier import IdentifierNode
from robot_dynid.nodes.node_runtime import (MODEL_QOS, STAGE_MARKERS_IN, call_service, float64_array, seconds,
                                            spin_until)
from robot_dynid.nodes.recorder import RecorderNode
from robot_dynid.nodes.sim_robot import SimRobotNode
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.stages import kind_name
from robot_dynid.srv import ComputeFeedforward
from robot_dynid.yaml_files import parameter_file_node, read_yaml

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
