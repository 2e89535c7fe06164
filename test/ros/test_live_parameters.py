"""``ros2 param set`` on a running node, over DDS: a change takes effect or is refused with a reason.

Every node reads most parameters once, at its start: those are read-only, and a set is refused naming
the parameter (before, the set succeeded and changed nothing). Parameters a node can take while it runs
are refused outside their descriptor's range by rclpy, then checked like at the start (refused with the
same message), and take effect: each node's test watches a behaviour that changes (a timer's period, the
noise of a simulated torque, a message's reason). Integers are taken for double parameters, at the start and
live, as ``ros2 param set`` sends them. Every node also starts as ``python -m robot_dynid.nodes.<node>
--ros-args ...`` (a pip venv has no ``ros2 run``). The identifier's quality gate: test_identifier_node; the
experiment runner's safety bounds during a run: test_experiment_runner_node.
"""
import contextlib
import math
import subprocess
import sys

import pytest
from rcl_interfaces.msg import Log
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from robot_dynid.msg import FeedforwardStatus, HydraulicCylinderEstimates, IdentificationStatus
from ros_graph import STARTED, start_node, stop_node

CYLINDER = ("-p", "cylinder_names:=[boom]", "-p", "piston_masses:=[10.0]", "-p", "damping:=[100.0]",
            "-p", "areas_a:=[0.001]", "-p", "areas_b:=[0.0005]")
# node: (arguments it needs to start, a read-only parameter, a value of its type within its range)
READ_ONLY = {
    "experiment_runner": ((), "rate_hz", 250.0),
    "sim_robot": ((), "rate", 250.0),
    "feedforward": ((), "service_queue_depth", 50),
    "recorder": ((), "queue_depth", 500),
    "identifier": ((), "max_samples", 30000),
    "hydraulic_identifier": (CYLINDER, "forgetting", 0.99),
}
HOUR = "3600.0"     # s: a period that does not come during a test


def assert_taken(results):
    """Every SetParametersResult of ``results`` successful."""
    assert all(result.successful for result in results), [result.reason for result in results]


def taken_at_once(graph, path, received, what, **values):
    """Set ``values`` on ``path`` (a period among them), then wait for three more messages in ``received``
    (a list, or a function giving one) than there were."""
    count = received if callable(received) else (lambda: received)
    assert_taken(graph.set_parameters(path, **values))
    known = len(count())
    graph.spin_until(lambda: len(count()) >= known + 3, what=what)


@contextlib.contextmanager
def running(graph, node, arguments, tmp_path):
    """The node ``node`` started in /live_<node> with ``arguments``, spinning: its fully qualified name; stopped
    after, with exit code 0."""
    namespace = f"/live_{node}"
    if node == "recorder":
        arguments = (*arguments, "-p", f"bag_path:={tmp_path / 'bag'}")
    log = tmp_path / f"{node}.log"
    process = start_node(node, "-r", f"__ns:={namespace}", *arguments, log_path=log)
    try:
        graph.wait_until_spinning(f"{namespace}/{node}")
        yield f"{namespace}/{node}"
    finally:
        assert stop_node(process) == 0, log.read_text()


@pytest.mark.parametrize("node", READ_ONLY)
def test_a_parameter_read_at_the_start_is_refused_naming_it_and_keeps_its_value(graph, node, tmp_path):
    arguments, name, value = READ_ONLY[node]
    with running(graph, node, arguments, tmp_path) as path:
        before = graph.get_parameters(path, name)
        [result] = graph.set_parameters(path, **{name: value})
        assert not result.successful and result.reason == f"Trying to set a read-only parameter: {name}.", result
        assert graph.get_parameters(path, name) == before


def test_descriptors_carry_the_range_read_only_and_the_reason(graph, tmp_path):
    with running(graph, "feedforward", (), tmp_path) as path:
        margin, depth, topic = graph.describe_parameters(path, "velocity_margin", "service_queue_depth", "model_topic")
        assert not margin.read_only
        assert [(r.from_value, r.to_value) for r in margin.floating_point_range] == [(0.0, 10.0)]
        assert depth.read_only and [(r.from_value, r.to_value, r.step) for r in depth.integer_range] == [(1, 10000, 1)]
        assert depth.description.endswith("read at start: the service's QoS")
        assert topic.read_only and topic.description.endswith("; read at start") and not topic.floating_point_range


def test_feedforward_takes_a_status_period_at_once_and_refuses_bad_values_naming_them(graph, tmp_path):
    statuses = []
    graph.node.create_subscription(FeedforwardStatus, "/live_feedforward/feedforward_status", statuses.append,
                                   QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                                              durability=DurabilityPolicy.TRANSIENT_LOCAL))
    with running(graph, "feedforward", ("-p", f"status_period:={HOUR}"), tmp_path) as path:
        graph.spin_until(lambda: statuses, what="the status published at the start")
        taken_at_once(graph, path, statuses, "FeedforwardStatus every status_period", status_period=0.05)
        [refused] = graph.set_parameters(path, status_period=1e-9)     # would spin a core on statuses
        assert refused.reason == "parameter status_period must be finite and in [0.01, 3600] [s], got 1e-09"

        [refused] = graph.set_parameters(path, standstill_velocity=5.0)     # outside the descriptor's range
        assert not refused.successful
        assert refused.reason == "Parameter standstill_velocity out of range Min: 0.0, Max: 1.0, value: 5.0"
        [refused] = graph.set_parameters(path, standstill_velocity=0.0)     # the open end: the start's check
        assert refused.reason == "parameter standstill_velocity must be finite and in (0, 1] [rad/s], got 0.0"
        [refused] = graph.set_parameters(path, velocity_margin=math.nan)
        assert not refused.successful and "velocity_margin" in refused.reason, refused.reason
        assert graph.get_parameters(path, "standstill_velocity", "velocity_margin") == [0.01, 1.1]
        assert_taken(graph.set_parameters(path, standstill_velocity=0.05, velocity_margin=2.0))
        assert graph.get_parameters(path, "standstill_velocity", "velocity_margin") == [0.05, 2.0]
        # SetParameters (ros2 param set, several at once) takes each on its own: the live one, not the other
        results = graph.set_parameters(path, standstill_velocity=0.02, service_queue_depth=10)
        assert [result.successful for result in results] == [True, False], results
        assert graph.get_parameters(path, "standstill_velocity", "service_queue_depth") == [0.02, 100]


def test_identifier_takes_a_status_period_at_once(graph, tmp_path):
    statuses = []
    graph.node.create_subscription(IdentificationStatus, "/live_identifier/identification_status", statuses.append,
                                   10)
    with running(graph, "identifier", ("-p", f"status_period:={HOUR}"), tmp_path) as path:
        [refused] = graph.set_parameters(path, status_period=0.0)
        assert refused.reason == "parameter status_period must be finite and in [0.01, 3600] [s], got 0.0"
        assert statuses == []
        taken_at_once(graph, path, statuses, "IdentificationStatus every status_period", status_period=0.05,
                      stage_latency=0.1, model_file=str(tmp_path / "model.yaml"))
        [refused] = graph.set_parameters(path, model_file=str(tmp_path))
        assert refused.reason == f"parameter model_file: {tmp_path}: is a directory; give a file name for the file"


def test_hydraulic_identifier_takes_a_publish_period_and_the_convergence_test(graph, tmp_path):
    estimates = []
    graph.node.create_subscription(HydraulicCylinderEstimates, "/live_hydraulic_identifier/hydraulic_estimates",
                                   estimates.append, 10)
    with running(graph, "hydraulic_identifier", (*CYLINDER, "-p", f"publish_period:={HOUR}"), tmp_path) as path:
        [refused] = graph.set_parameters(path, min_samples=3)
        assert refused.reason == "Parameter min_samples out of range. Min: 5, Max: 10000000, value: 3"
        [refused] = graph.set_parameters(path, convergence_band=0.0)
        assert refused.reason == "parameter convergence_band must be finite and in (0, 1], got 0.0"
        [refused] = graph.set_parameters(path, publish_period=1e-9)
        assert refused.reason == "parameter publish_period must be finite and in [0.01, 3600] [s], got 1e-09"
        assert estimates == []
        taken_at_once(graph, path, estimates, "HydraulicCylinderEstimates every publish_period", publish_period=0.05,
                      convergence_band=0.1, min_samples=50)
        assert graph.get_parameters(path, "convergence_band", "min_samples") == [0.1, 50]


def test_recorder_turns_its_status_log_on_while_it_runs_and_refuses_bad_values(graph, tmp_path):
    logs = []
    graph.node.create_subscription(Log, "/rosout", logs.append,
                                   QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))

    def status_logs():
        return [entry for entry in logs if entry.name.endswith("recorder") and "no message recorded yet" in entry.msg]

    with running(graph, "recorder", ("-p", "status_period:=0.0"), tmp_path) as path:
        [refused] = graph.set_parameters(path, status_period=0.001)
        assert refused.reason == "parameter status_period must be finite and in [0.01, 3600] [s], got 0.001"
        [refused] = graph.set_parameters(path, flush_period=0.0)
        assert refused.reason == "Parameter flush_period out of range Min: 0.01, Max: 3600.0, value: 0.0"
        assert status_logs() == []
        taken_at_once(graph, path, status_logs, "the recorder's status log every status_period", status_period=0.05,
                      flush_period=0.5, min_free_space=1.0, silent_topic_delay=1.0)


def test_sim_robot_takes_a_noise_std_and_refuses_a_burst_its_history_cannot_hold(graph, tmp_path):
    measured, true = {}, {}

    def keep(store):
        return lambda msg: store.__setitem__((msg.header.stamp.sec, msg.header.stamp.nanosec), list(msg.effort))

    def noise_free():
        return [stamp for stamp in measured if stamp in true and measured[stamp] == true[stamp]]

    qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    graph.node.create_subscription(JointState, "/live_sim_robot/joint_states", keep(measured), qos)
    graph.node.create_subscription(JointState, "/live_sim_robot/sim_robot/true_effort", keep(true), qos)
    with running(graph, "sim_robot", ("-p", "noise_std:=0.5"), tmp_path) as path:
        graph.spin_until(lambda: len(set(measured) & set(true)) >= 10, what="joint states with and without noise")
        assert noise_free() == []
        [refused] = graph.set_parameters(path, max_lag=2.0)   # rate 500 Hz, batch_period 0.02 s: a history of 510
        assert refused.reason == ("parameter max_lag 2 s refused: (max_lag 2 s + batch_period 0.02 s) at 500 Hz is "
                                  "1010 samples, more than the publishers' history of 510 set at start")
        assert_taken(graph.set_parameters(path, noise_std=0.0, batch_period=0.01))
        graph.spin_until(lambda: len(noise_free()) >= 10, what="joint states without noise after noise_std 0")


def test_integers_are_taken_for_double_parameters_at_the_start_and_live_and_still_range_checked(graph, tmp_path):
    """``-p status_period:=3600`` and ``ros2 param set ... velocity_margin 2`` send integers; rclpy alone
    refuses them ("Wrong parameter type, expected 'Type.DOUBLE' got 'Type.INTEGER'")."""
    with running(graph, "feedforward", ("-p", "status_period:=3600"), tmp_path) as path:
        assert graph.get_parameters(path, "status_period") == [3600.0]
        assert_taken(graph.set_parameters(path, velocity_margin=2))
        [margin] = graph.get_parameters(path, "velocity_margin")
        assert margin == 2.0 and isinstance(margin, float)
        [refused] = graph.set_parameters(path, velocity_margin=11)
        assert refused.reason == "Parameter velocity_margin out of range Min: 0.0, Max: 10.0, value: 11.0"
        [refused] = graph.set_parameters(path, standstill_velocity=0)       # the open end: the start's check
        assert refused.reason == "parameter standstill_velocity must be finite and in (0, 1] [rad/s], got 0.0"
        [refused] = graph.set_parameters(path, service_queue_depth=10)      # an integer parameter stays one
        assert refused.reason == "Trying to set a read-only parameter: service_queue_depth."


@pytest.mark.parametrize("node", READ_ONLY)
def test_each_node_runs_as_a_python_module_with_ros_arguments(graph, node, tmp_path):
    arguments, name, _ = READ_ONLY[node]
    namespace = f"/module_{node}"
    if node == "recorder":
        arguments = (*arguments, "-p", f"bag_path:={tmp_path / 'bag'}")
    log = tmp_path / f"{node}.log"
    with open(log, "wb") as output:
        process = subprocess.Popen([sys.executable, "-m", f"robot_dynid.nodes.{node}", "--ros-args",
                                    "-r", f"__ns:={namespace}", *arguments],
                                   stdout=output, stderr=subprocess.STDOUT)
    STARTED.append(process)
    try:
        graph.wait_until_spinning(f"{namespace}/{node}")
        [described] = graph.describe_parameters(f"{namespace}/{node}", name)
        assert described.read_only and described.description
    finally:
        assert stop_node(process) == 0, log.read_text()


@pytest.mark.parametrize("node, parameter, arguments", [
    ("identifier", "model_file", ()), ("hydraulic_identifier", "results_file", CYLINDER)])
def test_a_live_path_parameter_given_a_hostile_path_is_refused_naming_it_and_the_node_lives_on(
        graph, tmp_path, node, parameter, arguments):
    """A name over 255 bytes killed the node (the live check raised OSError), losing what it had collected;
    /dev/zero and a read-only file system were taken, and the file then written nowhere."""
    from small_disk import small_disk
    kept = str(tmp_path / "kept.yaml")
    with small_disk(tmp_path / "read_only", "1m") as disk, \
            running(graph, node, (*arguments, "-p", f"{parameter}:={kept}"), tmp_path) as path:
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        hostile = {str(tmp_path / ("n" * 300 + ".yaml")): "File name too long",
                   "/dev/zero": "is a special file (a device, FIFO or socket), not a regular file",
                   str(disk / "f.yaml"): "read-only file system", str(tmp_path): "is a directory"}
        for value, reason in hostile.items():
            [refused] = graph.set_parameters(path, **{parameter: value})
            assert not refused.successful and refused.reason.startswith(f"parameter {parameter}: "), refused.reason
            assert reason in refused.reason, refused.reason
        assert graph.get_parameters(path, parameter) == [kept]
