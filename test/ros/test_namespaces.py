"""Every node started as a launch file starts it: in a namespace, with a remapped joint-state topic,
use_sim_time and a best-effort joint-state QoS, from the installed executables over real DDS.

What is checked is what the ROS graph reports (endpoint names, namespaces and QoS, parameters
read over their services) and what the recorder wrote (bag times from the test's /clock, the QoS the
test's publishers offered, the distribution named in $ROS_DISTRO), not the nodes' own logs.
"""
import os
import time

import pytest
import yaml
from rcl_interfaces.srv import GetParameters
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosbags.highlevel import AnyReader
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState

from robot_dynid.msg import ExperimentStage
from robot_dynid.srv import MarkStage
from robot_dynid.nodes.node_runtime import RCLPY_DISTROS, ros_distro
from ros_graph import kill_started_nodes, start_node, stop_node

NAMESPACE = f"/robot_ns_test_{os.getpid()}"
DRIVER_TOPIC = f"/driver_{os.getpid()}/joint_states"       # the driver's, outside the namespace
SUBSCRIBERS = ("recorder", "identifier", "experiment_runner")
CLOCK_S = 1234.5                                             # [s] the simulated time the test publishes
PRE_CLOCK_S = 0.5                                            # [s] of joint states published before any /clock
PRE_CLOCK_POSITION = 0.1                                     # [rad] their position


@pytest.fixture(scope="module")
def nodes(tmp_path_factory, graph):
    directory = tmp_path_factory.mktemp("namespaces")
    previous = os.environ.get("ROS_DISTRO")
    os.environ["ROS_DISTRO"] = "jazzy"      # what a sourced Jazzy install sets; the recorder writes it
    common = ["-r", f"__ns:={NAMESPACE}", "-r", f"joint_states:={DRIVER_TOPIC}", "-p", "use_sim_time:=true"]
    started = {name: start_node(name, *common, "-p", "joint_states_qos:=best_effort",
                                *(["-p", f"bag_path:={directory / 'bag'}", "-p", "status_period:=0.05"]
                                  if name == "recorder" else []),
                                log_path=directory / f"{name}.log")
               for name in SUBSCRIBERS}
    started["feedforward"] = start_node("feedforward", *common, log_path=directory / "feedforward.log")
    if previous is None:
        del os.environ["ROS_DISTRO"]
    else:
        os.environ["ROS_DISTRO"] = previous
    states = graph.node.create_publisher(JointState, DRIVER_TOPIC, QoSProfile(
        depth=10, reliability=ReliabilityPolicy.BEST_EFFORT))
    clock = graph.node.create_publisher(Clock, "/clock", 10)
    try:
        graph.spin_until(
            lambda: endpoints(graph.node.get_subscriptions_info_by_topic(DRIVER_TOPIC))
            >= {(NAMESPACE, name) for name in SUBSCRIBERS if name != "recorder"}
            and graph.node.count_subscribers(f"{NAMESPACE}/identified_model"),
            timeout=60.0, what="the nodes subscribing (their names known) in the namespace")   # names come later
        # before any /clock: joint states at PRE_CLOCK_POSITION; the recorder must not write them (they have no time)
        mark = graph.node.create_client(MarkStage, f"{NAMESPACE}/recorder/mark_stage")
        refused = graph.call(mark, MarkStage.Request(kind=ExperimentStage.KIND_REST, start=True))
        assert not refused.success and "/clock" in refused.message
        graph.spin_until(lambda: "no message recorded yet (use_sim_time: waiting for the first /clock message)" in
                         (directory / "recorder.log").read_text(), what="the recorder's status saying why it waits")
        until = time.monotonic() + PRE_CLOCK_S
        graph.spin_until(lambda: states.publish(JointState(name=["j1"], position=[PRE_CLOCK_POSITION]))
                         or time.monotonic() > until, what="joint states published before any /clock")
        tick = Clock()
        tick.clock.sec, tick.clock.nanosec = int(CLOCK_S), int(CLOCK_S % 1 * 1e9)
        graph.spin_until(
            lambda: clock.publish(tick) or (NAMESPACE, "recorder") in endpoints(
                graph.node.get_subscriptions_info_by_topic(DRIVER_TOPIC)),
            timeout=60.0, what="the recorder subscribing once /clock runs")
    except (TimeoutError, AssertionError) as error:
        seen = endpoints(graph.node.get_subscriptions_info_by_topic(DRIVER_TOPIC))
        logs = "\n".join(f"--- {name} (exit {process.poll()}):\n{(directory / f'{name}.log').read_text()}"
                         for name, process in started.items())
        raise AssertionError(f"{error}; subscribers of {DRIVER_TOPIC}: {seen}\n{logs}") from None
    yield graph, started, directory, clock, states, tick
    for process in started.values():
        stop_node(process)
    kill_started_nodes()


def endpoints(infos):
    return {(info.node_namespace, info.node_name) for info in infos}


def test_topics_are_in_the_namespace_and_joint_states_remapped_with_the_chosen_qos(nodes):
    graph = nodes[0]
    subscribers = graph.node.get_subscriptions_info_by_topic(DRIVER_TOPIC)
    assert endpoints(subscribers) >= {(NAMESPACE, name) for name in SUBSCRIBERS}
    assert {info.qos_profile.reliability for info in subscribers} == {ReliabilityPolicy.BEST_EFFORT}
    assert graph.node.count_subscribers(f"{NAMESPACE}/joint_states") == 0      # remapped away
    assert graph.node.count_subscribers("/joint_states") == 0
    publishers = {topic: endpoints(graph.node.get_publishers_info_by_topic(f"{NAMESPACE}/{topic}"))
                  for topic in ("experiment_stage", "identified_model", "identification_status")}
    assert (NAMESPACE, "experiment_runner") in publishers["experiment_stage"]
    assert (NAMESPACE, "identifier") in publishers["identified_model"]
    assert (NAMESPACE, "identifier") in publishers["identification_status"]
    assert (NAMESPACE, "feedforward") in endpoints(
        graph.node.get_subscriptions_info_by_topic(f"{NAMESPACE}/identified_model"))
    wanted = {f"{NAMESPACE}/compute_feedforward", f"{NAMESPACE}/experiment_runner/start",
              f"{NAMESPACE}/recorder/mark_stage"}
    graph.spin_until(lambda: wanted <= {name for name, _ in graph.node.get_service_names_and_types()},
                     what=f"the services {sorted(wanted)} discovered")    # services arrive after topics
    services = {name for name, _ in graph.node.get_service_names_and_types()}
    assert not {"/compute_feedforward", "/experiment_stage"} & (services | {
        name for name, _ in graph.node.get_topic_names_and_types()})


def test_use_sim_time_reaches_every_node(nodes):
    graph = nodes[0]
    for name in (*SUBSCRIBERS, "feedforward"):
        client = graph.node.create_client(GetParameters, f"{NAMESPACE}/{name}/get_parameters")
        response = graph.call(client, GetParameters.Request(names=["use_sim_time"]))
        assert response.values[0].bool_value is True, name


def test_the_bag_has_sim_time_the_offered_qos_and_the_distribution(nodes):
    graph, started, directory, clock, states, tick = nodes
    markers = graph.node.create_publisher(ExperimentStage, f"{NAMESPACE}/experiment_stage", QoSProfile(
        depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    graph.spin_until(lambda: clock.get_subscription_count() >= 4 and markers.get_subscription_count() >= 2,
                     what="the nodes subscribing /clock and the markers")
    log = directory / "recorder.log"

    def recorded():     # best effort: publish until the recorder reports a message on each topic
        clock.publish(tick)
        states.publish(JointState(name=["j1"], position=[0.5]))
        markers.publish(ExperimentStage(kind=ExperimentStage.KIND_REST, start=True))
        text = log.read_text()
        return " on /joint_states" in text and " on /experiment_stage" in text
    graph.spin_until(recorded, what="the recorder recording both topics")
    assert stop_node(started["recorder"]) == 0, log.read_text()

    info = yaml.safe_load((directory / "bag" / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["ros_distro"] == "jazzy"
    offered = {entry["topic_metadata"]["name"]: yaml.safe_load(entry["topic_metadata"]["offered_qos_profiles"])
               for entry in info["topics_with_message_count"]}
    assert [profile["reliability"] for profile in offered["/joint_states"]] == [2]      # best effort (rmw 2)
    assert 1 in [profile["durability"] for profile in offered["/experiment_stage"]]      # transient local (rmw 1)
    with AnyReader([directory / "bag"]) as reader:
        times = [t for _, t, _ in reader.messages()]
        positions = {reader.deserialize(raw, connection.msgtype).position[0]
                     for connection, _, raw in reader.messages() if connection.topic == "/joint_states"}
    assert min(times) == pytest.approx(CLOCK_S * 1e9, abs=1e6)        # receive times from /clock, not the wall
    assert positions == {0.5}       # none of those published before the first /clock (they had no time)


def test_the_distribution_is_known_without_ros_distro(monkeypatch):
    """Pip wheels set no $ROS_DISTRO: the distribution then comes from rclpy's version."""
    monkeypatch.delenv("ROS_DISTRO", raising=False)
    assert ros_distro() in RCLPY_DISTROS.values()
