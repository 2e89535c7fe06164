"""The feedforward node, started from its installed executable in its own process, over real DDS.

The model is the ER3A (modified DH, so pinocchio's joint frames are the DH link frames) with
plausible inertial parameters and no friction: its torques must equal pinocchio's RNEA with
the same inertias, an independent implementation of the dynamics.
"""
import math
import pathlib

import numpy as np
import pytest
import yaml
from builtin_interfaces.msg import Duration
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.friction import FrictionModel
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_description import load_robot
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
def directory(tmp_path_factory):
    """The feedforward node's directory: its model file and log (node.log)."""
    return tmp_path_factory.mktemp("feedforward")


@pytest.fixture(scope="module")
def feedforward_node(er3a, directory):
    model, _ = er3a
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


def request(joint_names, q, qd=None, qdd=None):
    """ComputeFeedforward request of the rows of q, qd, qdd (N, m) [rad, rad/s, rad/s^2] in
    ``joint_names`` order: point k, joint j at k * m + j (qd, qdd None: left empty)."""
    return ComputeFeedforward.Request(
        joint_names=list(joint_names), positions=np.ravel(q).tolist(),
        velocities=[] if qd is None else np.ravel(qd).tolist(),
        accelerations=[] if qdd is None else np.ravel(qdd).tolist())


def test_service_torques_equal_rnea_for_points_in_any_joint_order(feedforward_node, er3a):
    graph, _ = feedforward_node
    model, parameters = er3a
    client = graph.node.create_client(ComputeFeedforward, "compute_feedforward")
    rng = np.random.default_rng(7)
    q, qd, qdd = rng.uniform(-1.0, 1.0, (3, 20, 6))
    order = [5, 2, 0, 4, 1, 3]
    names = [model.joint_names[i] for i in order]
    response = graph.call(client, request(names, q[:, order], qd[:, order], qdd[:, order]))
    assert response.success, response.message
    assert response.message == ""
    assert response.model_version == 1
    assert len(response.efforts) == 20 * 6
    expected = [rnea_torques(model.robot, parameters, *state)[order] for state in zip(q, qd, qdd)]
    np.testing.assert_allclose(np.reshape(response.efforts, (20, 6)), expected, rtol=1e-9, atol=1e-9)


def test_empty_velocities_and_accelerations_are_zero(feedforward_node, er3a):
    graph, _ = feedforward_node
    model, parameters = er3a
    client = graph.node.create_client(ComputeFeedforward, "compute_feedforward")
    q = np.random.default_rng(8).uniform(-1.0, 1.0, (3, 6))
    response = graph.call(client, request(model.joint_names, q))
    assert response.success, response.message
    expected = [rnea_torques(model.robot, parameters, row, np.zeros(6), np.zeros(6)) for row in q]
    np.testing.assert_allclose(np.reshape(response.efforts, (3, 6)), expected, rtol=1e-9, atol=1e-9)


def set_item(field, index, value):
    return lambda r: getattr(r, field).__setitem__(index, value)


@pytest.mark.parametrize("mutate, message", [
    (lambda r: r.positions.pop(), "positions has 11 values, not a multiple of the 6 joints in joint_names "
                                  "(point k, joint j at k * 6 + j)"),
    (set_item("velocities", 6 + 2, math.nan), "point 1: velocities of joint j3 is nan"),
    (set_item("accelerations", 5, -math.inf), "point 0: accelerations of joint j6 is -inf"),
    (lambda r: r.velocities.extend([0.0] * 6), "velocities has 18 values, expected 12 (2 point(s) x 6 joints, "
                                               "as positions) or none (all zero)"),
    (set_item("joint_names", 0, "elbow"), "unknown joint(s) ['elbow']; the model has ['j1', 'j2', 'j3', 'j4', "
                                          "'j5', 'j6']"),
    (lambda r: r.joint_names.pop(), "joint_names is missing ['j6']; the model needs ['j1', 'j2', 'j3', 'j4', "
                                    "'j5', 'j6']"),
    (lambda r: setattr(r, "positions", []), "no points given (positions is empty)"),
    (set_item("positions", 6 + 2, 1e308), "point 1: positions of joint j3 is 1e+308 rad, beyond its limits "
                                          "[-1.2217, 1.7453] rad by more than position_margin 0.1 rad"),
    (set_item("positions", 4, -2.05), "point 0: positions of joint j5 is -2.05 rad, beyond its limits "
                                      "[-1.9199, 1.9199] rad by more than position_margin 0.1 rad"),
    (set_item("velocities", 6 + 3, 1e200), "point 1: the effort of joint j1 is nan: the point's values are too "
                                           "large for the model to evaluate"),
])
def test_malformed_requests_get_a_message_and_the_node_survives(feedforward_node, er3a, mutate, message):
    graph, process = feedforward_node
    model, _ = er3a
    client = graph.node.create_client(ComputeFeedforward, "compute_feedforward")
    req = request(model.joint_names, np.zeros((2, 6)), np.zeros((2, 6)), np.zeros((2, 6)))
    mutate(req)
    response = graph.call(client, req)
    assert not response.success
    assert response.message == message
    assert len(response.efforts) == 0
    assert process.poll() is None
    assert graph.call(client, request(model.joint_names, np.zeros((1, 6)))).success   # still serving


def test_positions_within_the_limits_plus_the_margin_are_served(feedforward_node, er3a):
    graph, _ = feedforward_node
    model, parameters = er3a
    client = graph.node.create_client(ComputeFeedforward, "compute_feedforward")
    q = np.array([2.5, -2.3, 1.8, 3.2, -1.99, 6.3])       # each joint up to 0.09 rad beyond its limits
    response = graph.call(client, request(model.joint_names, q))
    assert response.success, response.message
    np.testing.assert_allclose(response.efforts, rnea_torques(model.robot, parameters, q, np.zeros(6), np.zeros(6)),
                               rtol=1e-9, atol=1e-9)


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


def test_joints_parameter_orders_the_effort_commands_as_the_controller_does(er3a, directory):
    """A forward_command_controller with joints [j4, j2, j6] gets those torques in that order."""
    model, parameters = er3a
    process = start_node("feedforward", "-r", "__ns:=/ordered", "-p", f"model_file:={directory / 'model.yaml'}",
                         "-p", "reference_topic:=desired_joint_states", "-p", "joints:=[j4, j2, j6]",
                         log_path=directory / "ordered.log")
    graph = RosTestGraph()
    try:
        received = []
        graph.node.create_subscription(Float64MultiArray, "/ordered/feedforward_effort", received.append, 10)
        publisher = graph.node.create_publisher(JointState, "/ordered/desired_joint_states", 10)
        graph.spin_until(lambda: publisher.get_subscription_count() > 0, what="feedforward subscribing")
        q = np.array([0.3, -0.2, 0.5, -0.4, 0.1, 0.7])
        qd = np.array([-0.1, 0.3, 0.2, 0.5, -0.6, 0.1])

        def publish_and_check():
            publisher.publish(JointState(name=list(model.joint_names), position=list(q), velocity=list(qd)))
            return bool(received)

        graph.spin_until(publish_and_check, what="a Float64MultiArray on /ordered/feedforward_effort")
    finally:
        graph.close()
        assert stop_node(process) == 0, (directory / "ordered.log").read_text()
    expected = rnea_torques(model.robot, parameters, q, qd, np.zeros(6))
    np.testing.assert_allclose(received[0].data, expected[[3, 1, 5]], rtol=1e-9, atol=1e-9)


def test_joint_trajectory_is_forwarded_with_efforts(feedforward_node, er3a):
    graph, _ = feedforward_node
    model, parameters = er3a
    received = []
    graph.node.create_subscription(JointTrajectory, "trajectory_with_effort", received.append, 10)
    publisher = graph.node.create_publisher(JointTrajectory, "reference_trajectory", 10)
    graph.spin_until(lambda: publisher.get_subscription_count() > 0, what="feedforward subscribing to trajectories")
    rng = np.random.default_rng(3)
    rows = [rng.uniform(-1.0, 1.0, (3, 6)) for _ in range(4)]
    rows[2][2] = 0.0                    # point 2 leaves its accelerations empty: zero
    order = [3, 1, 5, 0, 2, 4]
    trajectory = JointTrajectory(joint_names=[model.joint_names[i] for i in order], points=[
        JointTrajectoryPoint(positions=list(q[order]), velocities=list(qd[order]),
                             accelerations=[] if index == 2 else list(qdd[order]),
                             time_from_start=Duration(sec=index, nanosec=500))
        for index, (q, qd, qdd) in enumerate(rows)])

    def publish_and_check():
        publisher.publish(trajectory)
        return bool(received)

    graph.spin_until(publish_and_check, what="a JointTrajectory with efforts")
    assert list(received[0].joint_names) == trajectory.joint_names
    assert len(received[0].points) == 4
    for index, ((q, qd, qdd), point) in enumerate(zip(rows, received[0].points)):
        np.testing.assert_allclose(point.effort, rnea_torques(model.robot, parameters, q, qd, qdd)[order],
                                   rtol=1e-9, atol=1e-9)
        np.testing.assert_array_equal(point.positions, q[order])
        assert (point.time_from_start.sec, point.time_from_start.nanosec) == (index, 500)


def test_a_trajectory_beyond_the_limits_is_not_forwarded(feedforward_node, er3a, directory):
    graph, _ = feedforward_node
    model, _ = er3a
    publisher = graph.node.create_publisher(JointTrajectory, "reference_trajectory", 10)
    graph.spin_until(lambda: publisher.get_subscription_count() > 0, what="feedforward subscribing to trajectories")
    q = np.zeros((2, 6))
    q[1, 2] = 1.9                                           # j3: limits [-1.2217, 1.7453] rad
    publisher.publish(JointTrajectory(joint_names=list(model.joint_names), points=[
        JointTrajectoryPoint(positions=list(row), time_from_start=Duration(sec=index)) for index, row in enumerate(q)]))
    warning = ("point 1: positions of joint j3 is 1.9 rad, beyond its limits [-1.2217, 1.7453] rad by more than "
               "position_margin 0.1 rad")
    graph.spin_until(lambda: warning in (directory / "node.log").read_text(),
                     what="the feedforward node warning about the trajectory")


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
        holder["response"] = graph.call(client, request(model.joint_names, q, qd, qdd))
        return holder["response"].model_version == 7

    graph.spin_until(switched, what="the feedforward node switching to model version 7")
    expected = rnea_torques(model.robot, 2.0 * parameters, q, qd, qdd)
    np.testing.assert_allclose(holder["response"].efforts, expected, rtol=1e-9, atol=1e-9)


def with_nan_value(model, row=3):
    """``model``'s artifact with ``.nan`` as the value of base parameter ``row``."""
    data = yaml.safe_load(model.to_yaml())
    data["base_parameters"]["table"][row]["value"] = math.nan
    return yaml.safe_dump(data, sort_keys=False, width=1000)


def test_a_published_model_that_is_not_finite_is_ignored(feedforward_node, er3a, directory):
    graph, _ = feedforward_node
    model, _ = er3a
    client = graph.node.create_client(ComputeFeedforward, "compute_feedforward")
    q = np.array([0.3, -0.2, 0.5, 0.1, 0.4, -0.6])
    before = graph.call(client, request(model.joint_names, q))
    assert before.success, before.message
    publisher = graph.node.create_publisher(IdentifiedModel, "identified_model", MODEL_QOS)
    publisher.publish(IdentifiedModel(robot_name=model.robot.name, version=before.model_version + 10,
                                      artifact_yaml=with_nan_value(model)))
    log = directory / "node.log"
    ignored = (f"ignoring IdentifiedModel version {before.model_version + 10}: IdentifiedModel.artifact_yaml: "
               f"base_parameters.table[3].value is nan")
    graph.spin_until(lambda: ignored in log.read_text(), what="the feedforward node logging the ignored model")
    [line] = [line for line in log.read_text().splitlines() if ignored in line]
    assert line.endswith("base_parameters.table[3].value is nan")
    after = graph.call(client, request(model.joint_names, q))
    assert after.success, after.message
    assert after.model_version == before.model_version
    assert np.isfinite(after.efforts).all()
    np.testing.assert_array_equal(after.efforts, before.efforts)


@pytest.mark.parametrize("arguments, named", [
    (lambda directory, model: ["-p", f"model_file:={directory / 'absent.yaml'}"], "absent.yaml"),
    (lambda directory, model: ["-p", f"model_file:={write(directory / 'nan.yaml', with_nan_value(model))}"],
     "nan.yaml: base_parameters.table[3].value is nan"),
    (lambda directory, model: ["-p", "position_margin:=.nan"], "position_margin is nan"),
    (lambda directory, model: ["-p", f"model_file:={model.save(directory / 'model.yaml')}",
                               "-p", "joints:=[j2, gripper]"], "unknown joint(s) ['gripper']"),
])
def test_a_bad_model_file_or_margin_is_a_one_line_error(tmp_path, er3a, arguments, named):
    process = start_node("feedforward", *arguments(tmp_path, er3a[0]), log_path=tmp_path / "node.log")
    assert process.wait(timeout=30) == 2
    log = (tmp_path / "node.log").read_text()
    assert "Traceback" not in log
    [line] = [line for line in log.splitlines() if "error" in line]
    assert named in line, log


def write(path, text):
    path.write_text(text)
    return path
