"""The feedforward node, started from its installed executable in its own process, over real DDS.

The model is the ER3A (modified DH, so pinocchio's joint frames are the DH link frames) with
plausible inertial parameters and no friction: its torques must equal pinocchio's RNEA with
the same inertias, an independent implementation of the dynamics.
"""
import math
import pathlib
import re

import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynid.base_parameters import compute_base_parameters
from robot_dynid.friction import FrictionModel
from robot_dynid.model import DynamicModel
from robot_dynid.regressor import Regressor
from robot_dynid.robot_description import load_robot
from robot_dynid.simulation import plausible_parameters
from robot_dynid.msg import IdentifiedModel
from robot_dynid.nodes.feedforward import MODEL_QOS
from robot_dynid.srv import ComputeFeedforward
from rnea_reference import rnea_torques
from ros_graph import RosTestGraph, start_node, stop_node


REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def er3a():
    robot = load_robot(REPO / "config" / "robots" / "er3a.yaml")
    regressor = Regressor(robot, FrictionModel())
    base = compute_base_parameters(regressor)
    parameters = plausible_parameters(robot, seed=3)
    model = DynamicModel(robot, FrictionModel(), False, False, base, base.projection @ parameters,
                         np.zeros(base.rank))
    return model, parameters


@pytest.fixture(scope="module")
def feedforward_node(er3a, tmp_path_factory):
    model, _ = er3a
    directory = tmp_path_factory.mktemp("feedforward")
    model_file = model.save(directory / "model.yaml")
    process = start_node("feedforward", "-p", f"model_file:={model_file}",
                         "-p", "reference_topic:=desired_joint_states",
                         "-p", "command_topic:=effort_commands",
                         "-p", "trajectory_topic:=reference_trajectory",
                         "-p", "trajectory_out_topic:=trajectory_with_effort", log_path=directory / "node.log")
    graph = RosTestGraph()
    yield graph, process
    graph.close()
    assert stop_node(process) == 0, (directory / "node.log").read_text()


def request(joint_names, rows):
    req = ComputeFeedforward.Request()
    req.joint_names = list(joint_names)
    for index, (q, qd, qdd) in enumerate(rows):
        req.points.append(JointTrajectoryPoint(positions=list(q), velocities=list(qd), accelerations=list(qdd),
                                               time_from_start=Duration(sec=index)))
    return req


def test_service_torques_equal_rnea_for_points_in_any_joint_order(feedforward_node, er3a):
    graph, _ = feedforward_node
    model, parameters = er3a
    client = graph.node.create_client(ComputeFeedforward, "compute_feedforward")
    rng = np.random.default_rng(7)
    rows = [rng.uniform(-1.0, 1.0, (3, 6)) for _ in range(20)]
    order = [5, 2, 0, 4, 1, 3]
    names = [model.joint_names[i] for i in order]
    response = graph.call(client, request(names, [(q[order], qd[order], qdd[order]) for q, qd, qdd in rows]))
    assert response.success, response.message
    assert len(response.points) == 20
    for index, ((q, qd, qdd), point) in enumerate(zip(rows, response.points)):
        expected = rnea_torques(model.robot, parameters, q, qd, qdd)[order]
        np.testing.assert_allclose(point.effort, expected, rtol=1e-9, atol=1e-9)
        assert point.time_from_start.sec == index
        np.testing.assert_array_equal(point.positions, q[order])


@pytest.mark.parametrize("mutate, message", [
    (lambda r: r.points[0].positions.pop(), r"point 0: positions has 5 values, expected 6"),
    (lambda r: r.points[1].velocities.__setitem__(2, math.nan), r"point 1: velocities of joint j3 is nan"),
    (lambda r: r.joint_names.__setitem__(0, "elbow"), r"unknown joint\(s\) \['elbow'\]"),
    (lambda r: r.points.clear(), r"no points given"),
])
def test_malformed_requests_get_a_message_and_the_node_survives(feedforward_node, er3a, mutate, message):
    graph, process = feedforward_node
    model, _ = er3a
    client = graph.node.create_client(ComputeFeedforward, "compute_feedforward")
    req = request(model.joint_names, [(np.zeros(6), np.zeros(6), np.zeros(6))] * 2)
    mutate(req)
    response = graph.call(client, req)
    assert not response.success
    assert re.search(message, response.message), response.message
    assert process.poll() is None


def test_reference_joint_state_gives_effort_commands(feedforward_node, er3a):
    graph, _ = feedforward_node
    model, parameters = er3a
    received = []
    graph.node.create_subscription(Float64MultiArray, "effort_commands", received.append, 10)
    publisher = graph.node.create_publisher(JointState, "desired_joint_states", 10)
    graph.spin_until(lambda: publisher.get_subscription_count() > 0, what="feedforward subscribing to the reference")
    q = np.array([0.1, -0.4, 0.3, 0.2, -0.5, 0.6])
    qd = np.array([0.2, 0.1, -0.3, 0.0, 0.4, -0.1])
    names = list(reversed(model.joint_names)) + ["gripper"]
    message = JointState(name=names, position=list(q[::-1]) + [0.0], velocity=list(qd[::-1]) + [0.0])

    def publish_and_check():
        publisher.publish(message)
        return bool(received)

    graph.spin_until(publish_and_check, what="a Float64MultiArray on effort_commands")
    expected = rnea_torques(model.robot, parameters, q, qd, np.zeros(6))
    np.testing.assert_allclose(received[0].data, expected, rtol=1e-9, atol=1e-9)


def test_joint_trajectory_is_forwarded_with_efforts(feedforward_node, er3a):
    graph, _ = feedforward_node
    model, parameters = er3a
    received = []
    graph.node.create_subscription(JointTrajectory, "trajectory_with_effort", received.append, 10)
    publisher = graph.node.create_publisher(JointTrajectory, "reference_trajectory", 10)
    graph.spin_until(lambda: publisher.get_subscription_count() > 0, what="feedforward subscribing to trajectories")
    rng = np.random.default_rng(3)
    rows = [rng.uniform(-1.0, 1.0, (3, 6)) for _ in range(4)]
    order = [3, 1, 5, 0, 2, 4]
    trajectory = JointTrajectory(joint_names=[model.joint_names[i] for i in order], points=[
        JointTrajectoryPoint(positions=list(q[order]), velocities=list(qd[order]), accelerations=list(qdd[order]))
        for q, qd, qdd in rows])

    def publish_and_check():
        publisher.publish(trajectory)
        return bool(received)

    graph.spin_until(publish_and_check, what="a JointTrajectory with efforts")
    for (q, qd, qdd), point in zip(rows, received[0].points):
        np.testing.assert_allclose(point.effort, rnea_torques(model.robot, parameters, q, qd, qdd)[order],
                                   rtol=1e-9, atol=1e-9)


def test_a_published_model_replaces_the_one_in_use(feedforward_node, er3a):
    graph, _ = feedforward_node
    model, parameters = er3a
    heavier = DynamicModel(model.robot, model.friction, False, False, model.base,
                           model.base.projection @ (2.0 * parameters), model.std)
    publisher = graph.node.create_publisher(IdentifiedModel, "identified_model", MODEL_QOS)
    publisher.publish(IdentifiedModel(robot_name=model.robot.name, version=7, artifact_yaml=heavier.to_yaml()))
    client = graph.node.create_client(ComputeFeedforward, "compute_feedforward")
    q, qd, qdd = np.full(6, 0.3), np.full(6, -0.2), np.full(6, 0.5)
    holder = {}

    def switched():
        holder["response"] = graph.call(client, request(model.joint_names, [(q, qd, qdd)]))
        return holder["response"].model_version == 7

    graph.spin_until(switched, what="the feedforward node switching to model version 7")
    expected = rnea_torques(model.robot, 2.0 * parameters, q, qd, qdd)
    np.testing.assert_allclose(holder["response"].points[0].effort, expected, rtol=1e-9, atol=1e-9)


def test_a_missing_model_file_is_a_clean_error(tmp_path):
    process = start_node("feedforward", "-p", f"model_file:={tmp_path / 'absent.yaml'}",
                         log_path=tmp_path / "node.log")
    assert process.wait(timeout=30) == 2
    log = (tmp_path / "node.log").read_text()
    assert "absent.yaml" in log and "Traceback" not in log
