"""Waiting on a ROS 2 graph in tests: spin until a condition holds, with generous timeouts, never sleep."""
from __future__ import annotations

import math
import os
import pathlib
import signal
import subprocess
import sys
import time
import weakref

import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.srv import DescribeParameters, GetParameters, SetParameters
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter

from robot_dynid.msg import ExperimentStage, IdentificationStatus, IdentifiedModel
from robot_dynid.nodes.node_runtime import MODEL_QOS, call_service, spin_until
from robot_dynid.srv import ComputeFeedforward

DISCOVERY_TIMEOUT = 20.0  # s; discovery across processes is mostly < 1 s, outliers of several seconds
# queries: sending one twice changes nothing
READ_ONLY_SERVICES = (ComputeFeedforward, DescribeParameters, GetParameters)
RESEND_AFTER = 2.0  # s without an answer before a query is sent again
SETTLE = 0.3  # s of spinning between a client's first sight of a service and its first state-changing request


class RosTestGraph:
    """An rclpy context with one test node and an executor, torn down on close()."""

    def __init__(self, node_name="robot_dynid_test"):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(node_name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._settled = weakref.WeakSet()  # clients that have had their SETTLE

    def spin_until(self, condition, timeout=DISCOVERY_TIMEOUT, what="condition"):
        """Spin until ``condition()`` is true; raise TimeoutError naming ``what`` otherwise."""
        spin_until(self.executor, condition, timeout, what)

    def call(self, client, request, timeout=DISCOVERY_TIMEOUT):
        """Wait for the service, call it, and return the response.

        A query (a service in READ_ONLY_SERVICES) is sent again every RESEND_AFTER seconds without an
        answer (see node_runtime.call_service); a request that changes state is sent once, after the
        client's first sight of the service has been given SETTLE seconds of spinning for the server to
        match the client's response reader too.
        """
        if client.srv_type in READ_ONLY_SERVICES:
            return call_service(self.executor, client, request, timeout, resend_after=RESEND_AFTER)
        if client not in self._settled:
            spin_until(self.executor, client.service_is_ready, timeout, f"service {client.srv_name}")
            settle = time.monotonic() + SETTLE
            spin_until(self.executor, lambda: time.monotonic() > settle, 2 * SETTLE, "the server to match")
            self._settled.add(client)
        return call_service(self.executor, client, request, timeout)

    def wait_until_spinning(self, node, timeout=DISCOVERY_TIMEOUT):
        """Wait until the node named ``node`` (fully qualified) answers its parameter service.

        A node's subscriptions are in the graph as soon as its constructor creates them, before it
        spins: only an answer proves that its executor takes messages off the queues.
        """
        client = self.node.create_client(GetParameters, f"{node}/get_parameters")
        try:
            self.call(client, GetParameters.Request(names=["use_sim_time"]), timeout)
        finally:
            self.node.destroy_client(client)

    def set_parameters(self, node, timeout=DISCOVERY_TIMEOUT, **values):
        """``ros2 param set`` over DDS: the SetParameters results of ``values`` on the node ``node`` (fully
        qualified), one per parameter, in order."""
        client = self.node.create_client(SetParameters, f"{node}/set_parameters")
        try:
            request = SetParameters.Request(parameters=[Parameter(name, value=value).to_parameter_msg()
                                                        for name, value in values.items()])
            return list(self.call(client, request, timeout).results)
        finally:
            self.node.destroy_client(client)

    def get_parameters(self, node, *names, timeout=DISCOVERY_TIMEOUT):
        """The values of parameters ``names`` of the node ``node`` (fully qualified), in order."""
        client = self.node.create_client(GetParameters, f"{node}/get_parameters")
        try:
            values = self.call(client, GetParameters.Request(names=list(names)), timeout).values
            return [Parameter.from_parameter_msg(ParameterMsg(name=name, value=value)).value
                    for name, value in zip(names, values)]
        finally:
            self.node.destroy_client(client)

    def describe_parameters(self, node, *names, timeout=DISCOVERY_TIMEOUT):
        """``ros2 param describe``: the ParameterDescriptors of ``names`` on the node ``node`` (fully qualified)."""
        client = self.node.create_client(DescribeParameters, f"{node}/describe_parameters")
        try:
            return list(self.call(client, DescribeParameters.Request(names=list(names)), timeout).descriptors)
        finally:
            self.node.destroy_client(client)

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def installed_executable(name):
    """Path of ``lib/robot_dynid/<name>`` installed by the colcon build into this interpreter's prefix."""
    path = pathlib.Path(sys.prefix) / "lib" / "robot_dynid" / name
    if not path.exists():
        raise FileNotFoundError(f"{path} is not installed: run tools/bootstrap.sh (colcon build)")
    return path


STARTED = []
"""Every node process started by :func:`start_node`; test/conftest.py kills those still running when
the session ends, so that a failed test's node does not live on in the domain the next run claims."""


def start_node(name, *ros_args, log_path=None):
    """Start an installed node executable in its own process with ``--ros-args`` ``ros_args``."""
    command = [str(installed_executable(name))]
    if ros_args:
        command += ["--ros-args", *ros_args]
    log = open(log_path, "wb") if log_path else subprocess.DEVNULL
    # PYTHONFAULTHANDLER: a node that hangs dumps every thread's stack on SIGABRT (:func:`wait_for_exit`)
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                               env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    process.log_path = pathlib.Path(log_path) if log_path else None
    STARTED.append(process)
    return process


def wait_for_exit(process, timeout):
    """The exit code of a node started by :func:`start_node`, within ``timeout`` s; a node still running then
    is aborted (its Python stacks go to its log) and the test fails with that log."""
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)
        try:
            process.wait(timeout=10.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log = process.log_path.read_text(errors="replace") if process.log_path else "(no log)"
        raise AssertionError(f"{process.args[0]} still running after {timeout} s; its log and stacks:\n{log}")


def kill_started_nodes():
    """Kill the node processes started here that are still running; return how many there were."""
    running = [process for process in STARTED if process.poll() is None]
    for process in running:
        process.kill()
        process.wait()
    return len(running)


def stop_node(process, timeout=10.0):
    """SIGINT, then wait; return the exit code (kill after ``timeout`` s)."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def stop_nodes(processes, directory):
    """:func:`stop_node` each of ``processes`` (name -> process); every one must exit 0, else the assertion
    gives the exit codes and their logs ``directory/<name>.log``."""
    codes = {name: stop_node(process) for name, process in processes.items()}
    logs = {name: (directory / f"{name}.log").read_text() for name in processes}
    assert all(code == 0 for code in codes.values()), f"exit codes {codes}; logs {logs}"


def plan_listeners(graph, namespace):
    """Lists of the stage markers (every one: reliable, depth 1000) and the identified models received on
    ``<namespace>/experiment_stage`` and ``<namespace>/identified_model``."""
    stages, models = [], []
    graph.node.create_subscription(ExperimentStage, f"{namespace}/experiment_stage", stages.append,
                                   QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    graph.node.create_subscription(IdentifiedModel, f"{namespace}/identified_model", models.append, MODEL_QOS)
    return stages, models


def play_plan(graph, namespace, directory, plan_stages, listeners, processes, stage_subscribers, *parameters,
              what):
    """Once ``stage_subscribers`` nodes subscribe to ``/<namespace>/experiment_stage`` and a node publishes
    joint states there (``what`` names them), an experiment_runner (added to ``processes``) plays
    ``directory/plan.yaml`` with ``parameters``; returns when :func:`plan_listeners`' ``listeners`` hold every
    marker of ``plan_stages`` and a model."""
    stages, models = listeners
    graph.spin_until(lambda: graph.node.count_subscribers(f"/{namespace}/experiment_stage") >= stage_subscribers
                     and graph.node.count_publishers(f"/{namespace}/joint_states") >= 1, what=what)
    processes["experiment_runner"] = start_node(
        "experiment_runner", "-p", f"plan_file:={directory / 'plan.yaml'}", "-p", "autostart:=true",
        "-p", "start_delay:=3.0",   # s from ready to motion: the runner's stage publisher meets their subscriptions
        *parameters, log_path=directory / "experiment_runner.log")
    graph.spin_until(lambda: len(stages) == 2 * len(plan_stages), timeout=plan_stages[-1].end_time + 30.0,
                     what="every stage marker of the plan")
    graph.spin_until(lambda: models, what="an IdentifiedModel after the excitation")


def start_identifier(name, prefix, log_path, *parameters):
    """An identifier node ``name`` on the topics ``<prefix>/joint_states``, ``<prefix>/experiment_stage``,
    ``<prefix>/identified_model`` and ``<prefix>/identification_status``."""
    return start_node("identifier", "-r", f"__node:={name}", "-p", f"joint_states_topic:={prefix}/joint_states",
                      "-p", f"stage_topic:={prefix}/experiment_stage", "-p", f"model_topic:={prefix}/identified_model",
                      "-p", f"status_topic:={prefix}/identification_status", *parameters, log_path=log_path)


def identifier_topics(graph, prefix, status=True):
    """(joint state and stage publishers, lists of the models and statuses received) on the topics of
    :func:`start_identifier` (``prefix`` "": an identifier's default topics in the root namespace), once the
    identifier subscribes (and, with ``status``, has published one)."""
    models, statuses = [], []
    graph.node.create_subscription(IdentifiedModel, f"{prefix}/identified_model", models.append, MODEL_QOS)
    graph.node.create_subscription(IdentificationStatus, f"{prefix}/identification_status", statuses.append, 10)
    states = graph.node.create_publisher(JointState, f"{prefix}/joint_states", QoSProfile(depth=5000))
    stages = graph.node.create_publisher(ExperimentStage, f"{prefix}/experiment_stage", QoSProfile(depth=10))
    graph.spin_until(lambda: states.get_subscription_count() > 0 and stages.get_subscription_count() > 0
                     and (statuses or not status), what=f"the identifier on {prefix}/ subscribing")
    return states, stages, models, statuses


def stamped(message, seconds):
    """``message`` with its header stamped ``seconds`` [s]."""
    message.header.stamp.sec = math.floor(seconds)
    message.header.stamp.nanosec = round((seconds - math.floor(seconds)) * 1e9)
    return message


def publish_joint_states(graph, publisher, names, stamps, q, qd, tau):
    """JointStates of ``names`` stamped ``stamps`` [s] (N,) with the rows of q [rad], qd [rad/s] and tau [N m]
    (N, n), published at about 1 kHz: the receiving node's reader history never overflows."""
    t0 = time.monotonic()
    for k in range(len(stamps)):
        publisher.publish(stamped(JointState(name=list(names), position=list(q[k]), velocity=list(qd[k]),
                                             effort=list(tau[k])), stamps[k]))
        if k % 50 == 0:
            graph.spin_until(lambda: time.monotonic() > t0 + k / 1000.0, what="pacing")


def node_class(name):
    module = __import__(f"robot_dynid.nodes.{name}", fromlist=["main"])
    return next(value for key, value in vars(module).items() if key.endswith("Node") and key != "Node")


def construct_node(name, context, tmp_path, **overrides):
    """The node ``name`` built with ``overrides`` (and a bag path under ``tmp_path`` for the recorder),
    destroyed (closed first, if it has close()) before returning it."""
    if name == "recorder":
        overrides.setdefault("bag_path", str(tmp_path / "bag"))
    if name == "hydraulic_identifier":   # it needs cylinders to start
        overrides = {"cylinder_names": ["boom"], "piston_masses": [10.0], "damping": [100.0], "areas_a": [1e-3],
                     "areas_b": [5e-4], **overrides}
    parameters = [Parameter(key, value=value) for key, value in overrides.items()]
    node = node_class(name)(context=context, parameter_overrides=parameters)
    close = getattr(node, "close", None)
    if close is not None:
        close()
    node.destroy_node()
    return node
