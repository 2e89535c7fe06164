"""The feedforward node, started from its installed executable in its own process, over real DDS.

The model is the ER3A (modified DH, so pinocchio's joint frames are the DH link frames) with
plausible inertial parameters and no friction: its torques must equal pinocchio's RNEA with
the same inertias, an independent implementation of the dynamics.
"""
import math
import re
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml
from builtin_interfaces.msg import Duration
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.robot_loader import load_robot, robot_from_dict
from robot_dynid.msg import FeedforwardStatus, IdentifiedModel
from robot_dynid.nodes.feedforward import STATUS_QOS
from robot_dynid.nodes.node_runtime import MODEL_QOS, float64_array
from robot_dynid.srv import ComputeFeedforward
from rnea_reference import rnea_torques
from ros_graph import STARTED, RosTestGraph, start_node, stop_node, wait_for_exit
from repo_paths import REPO


@pytest.fixture(scope="module")
def er3a(er3a_robot):
    robot = er3a_robot
    parameters = plausible_parameters(robot, seed=3)
    model = DynamicModel.from_standard(robot, parameters)
    return model, parameters


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    """The feedforward node's directory: its model file and log (node.log)."""
    return tmp_path_factory.mktemp("feedforward")


@pytest.fixture(scope="module")
def feedforward_node(er3a, directory, graph):
    model, _ = er3a
    model_file = model.save(directory / "model.yaml")
    process = start_node("feedforward", "-p", f"model_file:={model_file}",
                         "-p", "reference_topic:=desired_joint_states",
                         "-p", "command_topic:=effort_commands",
                         "-p", "trajectory_topic:=reference_trajectory",
                         "-p", "trajectory_out_topic:=trajectory_with_effort", log_path=directory / "node.log")
    yield graph, process
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
    (set_item("joint_names", 0, "elbow"), "joint_names lists unknown joint(s) ['elbow']; the model has ['j1', 'j2', "
                                          "'j3', 'j4', 'j5', 'j6']"),
    (lambda r: r.joint_names.pop(), "joint_names is missing joint(s) ['j6']; the model needs ['j1', 'j2', 'j3', "
                                    "'j4', 'j5', 'j6']"),
    (lambda r: setattr(r, "positions", []), "no points given (positions is empty)"),
    (set_item("positions", 6 + 2, 1e308), "point 1: positions of joint j3 is 1e+308 rad, beyond its limits "
                                          "[-1.2217, 1.7453] rad by more than position_margin 0.1 rad"),
    (set_item("positions", 4, -2.05), "point 0: positions of joint j5 is -2.05 rad, beyond its limits "
                                      "[-1.9199, 1.9199] rad by more than position_margin 0.1 rad"),
    # the 1e6 rad/s, once answered with 3e12 N m and success: true
    (set_item("velocities", 6 + 3, 1e6), "point 1: velocities of joint j4 is 1000000.0 rad/s, beyond its velocity "
                                         "limit 5.5851 rad/s times velocity_margin 1.1"),
    (set_item("accelerations", 1, -13.0), "point 0: accelerations of joint j2 is -13.0 rad/s^2, beyond its "
                                          "acceleration limit 8.6394 rad/s^2 times acceleration_margin 1.5"),
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


def reference_command(graph, reference_topic, command_topic, reference):
    """The first non-zero effort command on ``command_topic`` for the JointState ``reference`` published on
    ``reference_topic`` (again until one comes: zeros come while no reference has come)."""
    received = []
    graph.node.create_subscription(Float64MultiArray, command_topic, received.append, 10)
    publisher = graph.node.create_publisher(JointState, reference_topic, 10)
    graph.spin_until(lambda: publisher.get_subscription_count() > 0, what=f"feedforward subscribing to "
                     f"{reference_topic}")

    def publish_and_check():
        publisher.publish(reference)
        return any(np.any(msg.data) for msg in received)

    graph.spin_until(publish_and_check, what=f"a Float64MultiArray on {command_topic}")
    return next(msg.data for msg in received if np.any(msg.data))


def test_reference_joint_state_gives_effort_commands(feedforward_node, er3a):
    graph, _ = feedforward_node
    model, parameters = er3a
    q = np.array([0.1, -0.4, 0.3, 0.2, -0.5, 0.6])
    qd = np.array([0.2, 0.1, -0.3, 0.0, 0.4, -0.1])
    names = list(reversed(model.joint_names)) + ["gripper"]
    message = JointState(name=names, position=list(q[::-1]) + [0.0], velocity=list(qd[::-1]) + [0.0])
    command = reference_command(graph, "desired_joint_states", "effort_commands", message)
    expected = rnea_torques(model.robot, parameters, q, qd, np.zeros(6))
    np.testing.assert_allclose(command, expected, rtol=1e-9, atol=1e-9)


def test_a_reference_acceleration_window_adds_the_inertial_torque_of_the_planned_motion(feedforward_node, er3a):
    """reference_acceleration_window set live to 0.01 s: a 500 Hz reference q = q0 + A sin(w t) (positions and
    velocities, header stamps on its plan's clock) gets the torque RNEA(q, qd, qdd) of its analytic acceleration,
    to within what 5 % of qdd changes (the estimate's end-point error is far below that); set back to 0, qdd = 0.
    command_lead then set live to 4 ms: the next reference's command is RNEA of the plan 4 ms after its stamp."""
    graph, _ = feedforward_node
    model, parameters = er3a
    [result] = graph.set_parameters("/feedforward", reference_acceleration_window=0.01)
    assert result.successful, result.reason
    received = []
    graph.node.create_subscription(Float64MultiArray, "effort_commands", received.append, 100)
    publisher = graph.node.create_publisher(JointState, "desired_joint_states", 100)
    graph.spin_until(lambda: publisher.get_subscription_count() > 0, what="feedforward subscribing to the reference")
    q0, amplitude, omega = np.full(6, 0.2), np.array([0.3, 0.2, 0.25, 0.4, 0.5, 0.3]), 3.0
    try:
        for k in range(40):
            t = 100.0 + 0.002 * k
            q, qd = q0 + amplitude * np.sin(omega * t), amplitude * omega * np.cos(omega * t)
            message = JointState(name=list(model.joint_names), position=q.tolist(), velocity=qd.tolist())
            message.header.stamp.sec, message.header.stamp.nanosec = int(t), int(round((t % 1.0) * 1e9))
            count = len(received)
            publisher.publish(message)
            graph.spin_until(lambda: len(received) > count, what=f"the command of reference {k}")
        qdd = -amplitude * omega**2 * np.sin(omega * t)
        exact = rnea_torques(model.robot, parameters, q, qd, qdd)
        without = rnea_torques(model.robot, parameters, q, qd, np.zeros(6))
        slack = np.abs(rnea_torques(model.robot, parameters, q, qd, 1.05 * qdd) - exact) + 1e-9
        assert np.all(np.abs(np.array(received[-1].data) - exact) <= slack), (received[-1].data, exact)
        assert np.max(np.abs(exact - without)) > 10.0 * np.max(slack)
        [result] = graph.set_parameters("/feedforward", command_lead=0.004)
        assert result.successful, result.reason
        t += 0.002
        q, qd = q0 + amplitude * np.sin(omega * t), amplitude * omega * np.cos(omega * t)
        message = JointState(name=list(model.joint_names), position=q.tolist(), velocity=qd.tolist())
        message.header.stamp.sec, message.header.stamp.nanosec = int(t), int(round((t % 1.0) * 1e9))
        count = len(received)
        publisher.publish(message)
        graph.spin_until(lambda: len(received) > count, what="the command of a reference with the lead")
        later = t + 0.004
        ahead = rnea_torques(model.robot, parameters, q0 + amplitude * np.sin(omega * later),
                             amplitude * omega * np.cos(omega * later), -amplitude * omega**2 * np.sin(omega * later))
        now = rnea_torques(model.robot, parameters, q, qd, -amplitude * omega**2 * np.sin(omega * t))
        error = np.abs(np.array(received[-1].data) - ahead)
        assert np.max(error) < 0.1 * np.max(np.abs(ahead - now)), (received[-1].data, ahead, now)
    finally:
        results = graph.set_parameters("/feedforward", reference_acceleration_window=0.0, command_lead=0.0)
        assert all(result.successful for result in results), [result.reason for result in results]


def test_joints_parameter_orders_the_effort_commands_as_the_controller_does(er3a, directory, graph):
    """A forward_command_controller with joints [j4, j2, j6] gets those torques in that order."""
    model, parameters = er3a
    process = start_node("feedforward", "-r", "__ns:=/ordered", "-p", f"model_file:={directory / 'model.yaml'}",
                         "-p", "reference_topic:=desired_joint_states", "-p", "joints:=[j4, j2, j6]",
                         log_path=directory / "ordered.log")
    q = np.array([0.3, -0.2, 0.5, -0.4, 0.1, 0.7])
    qd = np.array([-0.1, 0.3, 0.2, 0.5, -0.6, 0.1])
    try:
        command = reference_command(graph, "/ordered/desired_joint_states", "/ordered/feedforward_effort",
                                    JointState(name=list(model.joint_names), position=list(q), velocity=list(qd)))
    finally:
        assert stop_node(process) == 0, (directory / "ordered.log").read_text()
    expected = rnea_torques(model.robot, parameters, q, qd, np.zeros(6))
    np.testing.assert_allclose(command, expected[[3, 1, 5]], rtol=1e-9, atol=1e-9)


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
               f"base_parameters.table[3].value must be finite, got nan")
    graph.spin_until(lambda: ignored in log.read_text(), what="the feedforward node logging the ignored model")
    [line] = [line for line in log.read_text().splitlines() if ignored in line]
    assert line.endswith("base_parameters.table[3].value must be finite, got nan")
    after = graph.call(client, request(model.joint_names, q))
    assert after.success, after.message
    assert after.model_version == before.model_version
    assert np.isfinite(after.efforts).all()
    np.testing.assert_array_equal(after.efforts, before.efforts)


@pytest.mark.parametrize("arguments, named", [
    (lambda directory, model: ["-p", f"model_file:={directory / 'absent.yaml'}"], "absent.yaml"),
    (lambda directory, model: ["-p", f"model_file:={write(directory / 'nan.yaml', with_nan_value(model))}"],
     "nan.yaml: base_parameters.table[3].value must be finite, got nan"),
    (lambda directory, model: ["-p", "position_margin:=.nan"], "parameter position_margin must be finite"),
    (lambda directory, model: ["-p", f"model_file:={model.save(directory / 'model.yaml')}",
                               "-p", "joints:=[j2, gripper]"], "unknown joint(s) ['gripper']"),
    # a UR5 model a million times too heavy; a PUMA 560 model where a UR-like robot with its joint names is expected
    (lambda directory, model: ["-p", f"model_file:={heavy_ur5(directory)}"],
     "heavy.yaml refused: at the limits of motion (velocities and accelerations at their limits) the model needs"),
    (lambda directory, model: ["-p", f"model_file:={puma(directory)}", "-p", f"robot_file:={ur_like_file(directory)}"],
     "puma.yaml refused: the model is not of robot_file"),
    (lambda directory, model: ["-p", f"model_file:={write(directory / 'nested.yaml', '[' * 100000)}"], "nested.yaml"),
    (lambda directory, model: ["-p", "reference_timeout:=0.0"],
     "parameter reference_timeout must be finite and in (0, 60] [s], got 0.0"),
    (lambda directory, model: ["-p", "service_queue_depth:=0"], "parameter service_queue_depth must be an integer"),
])
def test_a_bad_model_file_or_margin_is_a_one_line_error(tmp_path, er3a, arguments, named):
    process = start_node("feedforward", *arguments(tmp_path, er3a[0]), log_path=tmp_path / "node.log")
    assert wait_for_exit(process, 30) == 2
    log = (tmp_path / "node.log").read_text()
    assert "Traceback" not in log
    [line] = [line for line in log.splitlines() if "error" in line]
    assert named in line, log


def write(path, text):
    path.write_text(text)
    return path


# --- Limits, models refused, poison messages, reference timeout: a node for a UR-like robot -----------------


def renamed_robot(robot, name, joint_names):
    """``robot`` (a DH robot) under another name with other joint names: the same arm, limits and kinematics."""
    data = robot.to_dict()
    return robot_from_dict({**data, "name": name, "joints": [
        {**joint, "name": joint_name} for joint, joint_name in zip(data["joints"], joint_names)]})


def plausible_model(robot, seed=3, factor=1.0):
    """A model of ``robot`` without friction, ``factor`` times plausible inertial parameters: (model, parameters)."""
    parameters = factor * plausible_parameters(robot, seed=seed)
    return DynamicModel.from_standard(robot, parameters), parameters


@pytest.fixture(scope="module")
def ur_like(tmp_path_factory, graph):
    """A UR5 whose joints are named j1..j6 (as the PUMA 560's are): its robot file, a model of it, and
    a node in /ur configured with both, a reference topic and a short reference_timeout."""
    directory = tmp_path_factory.mktemp("ur_like")
    robot = renamed_robot(load_robot(REPO / "config" / "robots" / "ur5.yaml"), "ur5", [f"j{i}" for i in range(1, 7)])
    robot_file = directory / "ur_like.yaml"
    robot_file.write_text(yaml.safe_dump(robot.to_dict(), sort_keys=False))
    model, parameters = plausible_model(robot)
    model_file = model.save(directory / "model.yaml")
    log = directory / "node.log"
    process = start_node("feedforward", "-r", "__ns:=/ur", "-p", f"robot_file:={robot_file}",
                         "-p", f"model_file:={model_file}", "-p", "reference_topic:=reference",
                         "-p", "reference_timeout:=0.3", "-p", "effort_margin:=1.0", log_path=log)
    status = []
    graph.node.create_subscription(FeedforwardStatus, "/ur/feedforward_status", status.append, STATUS_QOS)
    yield {"graph": graph, "process": process, "robot": robot, "model": model, "parameters": parameters,
           "robot_file": robot_file, "directory": directory, "log": log, "status": status}
    assert stop_node(process) == 0, log.read_text()


def ur_call(ur_like, req):
    client = ur_like["graph"].node.create_client(ComputeFeedforward, "/ur/compute_feedforward")
    return ur_like["graph"].call(client, req)


def test_the_robot_files_velocity_and_effort_limits_bound_the_service(ur_like):
    """The issue's request (qd = 100 rad/s, qdd = 1e4 rad/s^2: 71,833 N m on a 150 N m joint) is refused;
    stretched out with the shoulder accelerating at -14 rad/s^2 needs about 161 N m (RNEA), beyond 150 N m."""
    robot, parameters = ur_like["robot"], ur_like["parameters"]
    response = ur_call(ur_like, request(robot.joint_names, np.zeros(6), np.full(6, 100.0), np.full(6, 1e4)))
    assert not response.success
    assert response.message == ("point 0: velocities of joint j1 is 100.0 rad/s, beyond its velocity limit 3.15 rad/s "
                                "times velocity_margin 1.1")
    qdd = np.array([0.0, -14.0, 0.0, 0.0, 0.0, 0.0])
    expected = rnea_torques(robot, parameters, np.zeros(6), np.zeros(6), qdd)
    assert abs(expected[1]) > 150.0
    response = ur_call(ur_like, request(robot.joint_names, np.zeros((2, 6)), None, np.stack([np.zeros(6), qdd])))
    assert not response.success and len(response.efforts) == 0
    assert re.fullmatch(r"point 1: the effort of joint j2 is -[0-9.]+ N m, beyond its effort limit 150.0 N m times "
                        r"effort_margin 1.0", response.message), response.message
    within = ur_call(ur_like, request(robot.joint_names, np.zeros(6), None, qdd / 2.0))
    assert within.success, within.message
    np.testing.assert_allclose(within.efforts, rnea_torques(robot, parameters, np.zeros(6), np.zeros(6), qdd / 2.0),
                               rtol=1e-9, atol=1e-9)


def publish_model(ur_like, version, artifact, robot_name="ur5"):
    """Publish an IdentifiedModel to /ur and wait for the node to log that it ignored it; return the reason.
    The publisher lives on, so the message stays on the transient local topic for nodes started later."""
    graph = ur_like["graph"]
    if "model_publisher" not in ur_like:
        ur_like["model_publisher"] = graph.node.create_publisher(IdentifiedModel, "/ur/identified_model", MODEL_QOS)
    publisher = ur_like["model_publisher"]
    graph.spin_until(lambda: publisher.get_subscription_count() > 0, what="the node subscribing to models")
    publisher.publish(IdentifiedModel(robot_name=robot_name, version=version, artifact_yaml=artifact))
    prefix = f"ignoring IdentifiedModel version {version}: "
    graph.spin_until(lambda: prefix in ur_like["log"].read_text(), what=f"the node ignoring model version {version}")
    [line] = [line for line in ur_like["log"].read_text().splitlines() if prefix in line]
    return line.split(prefix, 1)[1]


def still_serving_model_1(ur_like):
    robot, parameters = ur_like["robot"], ur_like["parameters"]
    q = np.array([0.3, -0.2, 0.5, 0.1, 0.4, -0.6])
    response = ur_call(ur_like, request(robot.joint_names, q))
    assert response.success, response.message
    assert response.model_version == 1
    np.testing.assert_allclose(response.efforts, rnea_torques(robot, parameters, q, np.zeros(6), np.zeros(6)),
                               rtol=1e-9, atol=1e-9)
    assert ur_like["process"].poll() is None


def test_a_model_a_million_times_heavier_is_refused_from_the_topic(ur_like):
    heavy, _ = plausible_model(ur_like["robot"], factor=1e6)
    reason = publish_model(ur_like, 50, heavy.to_yaml())
    assert re.fullmatch(r"at the limits of motion \(velocities and accelerations at their limits\) the model needs "
                        r"[0-9.e+]+ N m at joint j\d, more than model_effort_margin 3.0 times its effort limit "
                        r"(150|28).0 N m", reason), reason
    still_serving_model_1(ur_like)
    graph = ur_like["graph"]
    graph.spin_until(lambda: any(s.models_refused and "version 50" in s.last_refused_model for s in ur_like["status"]),
                     what="a status naming the refused model")


def test_a_puma_560_model_is_refused_by_a_node_for_a_ur_like_robot_with_the_same_joint_names(ur_like):
    puma, _ = plausible_model(load_robot(REPO / "config" / "robots" / "puma560.yaml"))
    assert puma.joint_names == ur_like["robot"].joint_names
    reason = publish_model(ur_like, 51, puma.to_yaml(), robot_name="puma560")
    assert reason == f"the model is not of robot_file {ur_like['robot_file']}: its robot is 'puma560', not 'ur5'"
    still_serving_model_1(ur_like)


POISON = {
    "nested": "[" * 1000 + "]" * 1000,                         # RecursionError in a recursive YAML composer
    "huge integer": "schema_version: " + "9" * 5000,           # ValueError: beyond int's 4300 digits
}


@pytest.mark.parametrize("kind", POISON)
def test_a_poison_model_message_is_logged_in_one_line_and_no_node_dies_of_it(ur_like, kind, tmp_path):
    """The node goes on serving; a node started while the message is still on the (transient local)
    topic ignores it too, and answers."""
    version = 60 + list(POISON).index(kind)
    reason = publish_model(ur_like, version, POISON[kind])
    assert "\n" not in reason and "Traceback" not in ur_like["log"].read_text()
    still_serving_model_1(ur_like)
    late_log = tmp_path / "late.log"
    late = start_node("feedforward", "-r", "__ns:=/late", "-r", "identified_model:=/ur/identified_model",
                      "-p", f"model_file:={ur_like['directory'] / 'model.yaml'}", log_path=late_log)
    try:
        graph = ur_like["graph"]
        graph.spin_until(lambda: f"ignoring IdentifiedModel version {version}: " in late_log.read_text(),
                         what="the late node ignoring the poison message")
        client = graph.node.create_client(ComputeFeedforward, "/late/compute_feedforward")
        response = graph.call(client, request(ur_like["robot"].joint_names, np.zeros(6)))
        assert response.success and response.model_version == 1, response.message
        assert late.poll() is None
    finally:
        assert stop_node(late) == 0, late_log.read_text()
    assert "Traceback" not in late_log.read_text()


def test_after_the_reference_stops_or_turns_nan_zero_feed_forward_is_published(ur_like):
    """reference_timeout 0.3 s: the controller topic gets the model's torque while references come,
    zeros once they stop, nothing for NaN references and then zeros again; the status says each."""
    graph, robot, parameters = ur_like["graph"], ur_like["robot"], ur_like["parameters"]
    commands = []
    graph.node.create_subscription(Float64MultiArray, "/ur/feedforward_effort",
                                   lambda msg: commands.append((time.monotonic(), np.array(msg.data))), 100)
    publisher = graph.node.create_publisher(JointState, "/ur/reference", 10)
    graph.spin_until(lambda: publisher.get_subscription_count() > 0, what="the node subscribing to references")
    q, qd = np.array([0.1, -0.4, 0.3, 0.2, -0.5, 0.6]), np.array([0.2, 0.1, -0.3, 0.0, 0.4, -0.1])
    expected = rnea_torques(robot, parameters, q, qd, np.zeros(6))
    valid = JointState(name=list(robot.joint_names), position=list(q), velocity=list(qd))

    def publish_until(message, condition):
        def step():
            publisher.publish(message)
            return condition()
        graph.spin_until(step, what="the node's answer to the references")

    publish_until(valid, lambda: any(np.allclose(data, expected, rtol=1e-9, atol=1e-9) for _, data in commands))
    graph.spin_until(lambda: ur_like["status"] and ur_like["status"][-1].state == FeedforwardStatus.STATE_OK,
                     what="status ok")
    stopped = time.monotonic()
    graph.spin_until(lambda: any(t > stopped and not data.any() for t, data in commands), timeout=10.0,
                     what="zero feed-forward after the references stopped")
    first_zero = min(t for t, data in commands if t > stopped and not data.any())
    assert first_zero - stopped > 0.2                             # not before reference_timeout (0.3 s)
    assert all(len(data) == 6 for _, data in commands)
    graph.spin_until(lambda: ur_like["status"][-1].state == FeedforwardStatus.STATE_REFERENCE_TIMEOUT,
                     what="status reference timeout")
    assert "publishing zero feed-forward" in ur_like["status"][-1].message

    publish_until(valid, lambda: ur_like["status"][-1].state == FeedforwardStatus.STATE_OK)
    nan_reference = JointState(name=list(robot.joint_names), position=[0.1, math.nan, 0.3, 0.2, -0.5, 0.6],
                               velocity=list(qd))
    publish_until(nan_reference, lambda: ur_like["status"][-1].state == FeedforwardStatus.STATE_REFERENCE_REFUSED)
    assert ur_like["status"][-1].message == ("reference refused, nothing new published: point 0: positions of joint "
                                             "j2 is nan")
    refused_since = time.monotonic()
    publish_until(nan_reference, lambda: ur_like["status"][-1].state == FeedforwardStatus.STATE_REFERENCE_TIMEOUT)
    assert ur_like["status"][-1].message.endswith("the last reference was refused: point 0: positions of joint j2 is "
                                                  "nan")
    graph.spin_until(lambda: any(t > refused_since + 0.1 and not data.any() for t, data in commands),
                     what="zero feed-forward while references are refused")
    assert all(not data.any() or np.allclose(data, expected, rtol=1e-9, atol=1e-9) for _, data in commands)
    assert ur_like["status"][-1].references_refused > 0


def stamp_seconds(status):
    return status.header.stamp.sec + 1e-9 * status.header.stamp.nanosec


# --- The controller path cannot be starved ------------------------------------------------------------------


@pytest.fixture
def own_node(er3a, tmp_path):
    """A feedforward node in /own (ER3A model, reference desired_joint_states -> effort_commands) and a
    graph of its own for this test, so nothing other tests left in their graph loads it."""
    model, _ = er3a
    log = tmp_path / "node.log"
    process = start_node("feedforward", "-r", "__ns:=/own", "-p", f"model_file:={model.save(tmp_path / 'model.yaml')}",
                         "-p", "reference_topic:=desired_joint_states", "-p", "command_topic:=effort_commands",
                         "-p", f"max_points:={LARGE_REQUEST}", log_path=log)
    graph = RosTestGraph()
    yield graph
    graph.close()
    assert stop_node(process) == 0, log.read_text()


def states_within_the_limits(robot, n_points, seed):
    """q, qd, qdd (n_points, n) uniform within half the limits [rad, rad/s, rad/s^2]."""
    limits = robot.limit_arrays()
    rng = np.random.default_rng(seed)
    middle, half = (limits.lower + limits.upper) / 2.0, (limits.upper - limits.lower) / 4.0
    return (rng.uniform(middle - half, middle + half, (n_points, robot.n_joints)),
            rng.uniform(-0.5, 0.5, (n_points, robot.n_joints)) * limits.velocity,
            rng.uniform(-0.5, 0.5, (n_points, robot.n_joints)) * limits.acceleration)


def flat_request(joint_names, q, qd, qdd):
    return ComputeFeedforward.Request(joint_names=list(joint_names), positions=float64_array(q),
                                      velocities=float64_array(qd), accelerations=float64_array(qdd))


LARGE_REQUEST = 1_000_000   # points, positions only: the largest max_points; seconds of computing on this machine
REFERENCE_PERIOD = 0.01     # s: a 100 Hz reference


REFERENCE_DRIVER = """
import sys
import rclpy
from sensor_msgs.msg import JointState
rclpy.init()
node = rclpy.create_node("reference_driver")
publisher = node.create_publisher(JointState, sys.argv[1], 10)
message = JointState(name=sys.argv[2].split(","), position=[float(v) for v in sys.argv[3].split(",")],
                     velocity=[float(v) for v in sys.argv[4].split(",")])
node.create_timer(float(sys.argv[5]), lambda: publisher.publish(message))
try:
    rclpy.spin(node)
except KeyboardInterrupt:
    pass
"""


def start_reference_driver(topic, reference, period):
    """A process of its own publishing ``reference`` (a JointState) on ``topic`` every ``period`` s, as a
    controller would: the test process, busy converting a large request, would pause it."""
    process = subprocess.Popen([sys.executable, "-c", REFERENCE_DRIVER, topic, ",".join(reference.name),
                                ",".join(map(repr, reference.position)), ",".join(map(repr, reference.velocity)),
                                repr(period)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    STARTED.append(process)
    return process


def test_a_large_request_does_not_stop_the_100_hz_reference_to_command_path(own_node, er3a):
    """While the service computes a large request, references published at 100 Hz (by a process of
    their own) keep coming back as commands, each the reference's torque: the largest gap between
    two commands stays below 2 s and half the request's time, and no zero comes in between. (With
    one callback group for all, as before issue 26, no command comes while the request is
    computed: 3.6 s of 4.4 s here.) rclpy converts the request to Python holding the interpreter
    lock (about 60 ns per value): that much stops every thread of the node, whatever the callback
    groups, and does not count towards reference_timeout."""
    graph = own_node
    model, parameters = er3a
    arrivals, commands = [], []
    graph.node.create_subscription(Float64MultiArray, "/own/effort_commands",
                                   lambda msg: (arrivals.append(time.monotonic()), commands.append(msg.data)), 100)
    reference = JointState(name=list(model.joint_names), position=[0.1, -0.4, 0.3, 0.2, -0.5, 0.6],
                           velocity=[0.2, 0.1, -0.3, 0.0, 0.4, -0.1])
    expected = rnea_torques(model.robot, parameters, np.array(reference.position), np.array(reference.velocity),
                            np.zeros(6))
    driver = start_reference_driver("/own/desired_joint_states", reference, REFERENCE_PERIOD)
    try:
        graph.spin_until(lambda: sum(np.allclose(data, expected) for data in commands) > 50,
                         what="commands at 100 Hz")
        client = graph.node.create_client(ComputeFeedforward, "/own/compute_feedforward")
        graph.spin_until(client.service_is_ready, what="the service")
        q, _, _ = states_within_the_limits(model.robot, LARGE_REQUEST, seed=1)
        big = ComputeFeedforward.Request(joint_names=list(model.joint_names), positions=float64_array(q))
        future = client.call_async(big)
        start = time.monotonic()
        graph.spin_until(future.done, timeout=300.0, what=f"the response to {LARGE_REQUEST} points")
        end = time.monotonic()
    finally:
        stop_node(driver)
    assert future.result().success, future.result().message
    assert len(future.result().efforts) == 6 * LARGE_REQUEST
    during = [t for t in arrivals if start <= t <= end]
    largest_gap = max(np.diff(during)) if len(during) > 1 else end - start
    print(f"{LARGE_REQUEST} points answered in {end - start:.2f} s; {len(during)} commands meanwhile "
          f"({len(during) / (end - start):.0f} Hz), largest gap {1e3 * largest_gap:.0f} ms")
    assert end - start > 1.0, "the request is too quick on this machine to tell"
    # one thread: one gap of 3.6 s in a 4.4 s request (82 %); MultiThreadedExecutor: 0.2-0.6 s in 4-5 s, 1.4 s in
    # 13 s at load 6.5; the reference group on a thread of its own: 0.1 s in 2.6 s
    assert largest_gap < min(2.0, 0.5 * (end - start)), \
        f"largest gap {largest_gap:.3f} s in a {end - start:.2f} s request"
    assert len(during) > 0.25 * (end - start) / REFERENCE_PERIOD
    during_commands = [data for t, data in zip(arrivals, commands) if start <= t <= end]
    np.testing.assert_allclose(during_commands, np.tile(expected, (len(during_commands), 1)), rtol=1e-9, atol=1e-9)


CLIENTS, REQUESTS_PER_CLIENT = 20, 3
CLIENT_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


def test_twenty_concurrent_clients_get_every_answer(own_node, er3a):
    """20 clients each send 3 requests (1000 points) at once: 60 in flight, beyond the middleware's
    default queue of 10 (which left 26 to 34 of them unanswered here, 30 in issue 26); every one is
    answered, with its own torques. Each client is answered once before: until the node has
    discovered a new client, the middleware drops the responses to it. And each client's response
    queue holds 100: with the default 10, bursts of 60 responses lost some in 4 of 6 runs, though
    each client had only 3 requests in flight."""
    graph = own_node
    model, _ = er3a
    clients = [graph.node.create_client(ComputeFeedforward, "/own/compute_feedforward", qos_profile=CLIENT_QOS)
               for _ in range(CLIENTS)]
    for client in clients:      # one answer each first: the node has discovered the client (its response reader)
        assert graph.call(client, request(model.joint_names, np.zeros(6))).success
    states = [states_within_the_limits(model.robot, 1000, seed) for seed in range(CLIENTS * REQUESTS_PER_CLIENT)]
    futures = [clients[index // REQUESTS_PER_CLIENT].call_async(flat_request(model.joint_names, *state))
               for index, state in enumerate(states)]
    try:
        graph.spin_until(lambda: all(future.done() for future in futures), timeout=60.0, what="every response")
    finally:
        answered = sum(future.done() for future in futures)
        print(f"{answered} of {len(futures)} requests answered")
    assert answered == len(futures)
    for future, state in zip(futures, states):
        assert future.result().success, future.result().message
        np.testing.assert_allclose(np.reshape(future.result().efforts, (1000, 6)), model.torque(*state),
                                   rtol=1e-9, atol=1e-9)


def heavy_ur5(directory):
    model, _ = plausible_model(load_robot(REPO / "config" / "robots" / "ur5.yaml"), factor=1e6)
    return model.save(directory / "heavy.yaml")


def puma(directory):
    model, _ = plausible_model(load_robot(REPO / "config" / "robots" / "puma560.yaml"))
    return model.save(directory / "puma.yaml")


def ur_like_file(directory):
    robot = renamed_robot(load_robot(REPO / "config" / "robots" / "ur5.yaml"), "ur5", [f"j{i}" for i in range(1, 7)])
    return write(directory / "ur_like.yaml", yaml.safe_dump(robot.to_dict(), sort_keys=False))


def test_a_position_margin_set_while_serving_bounds_the_next_request(graph, er3a, directory):
    """``ros2 param set`` position_margin: a point 0.057 rad beyond j1's limit, served with the default 0.1 rad,
    is refused with 0.05 rad and served again with 0.1 rad."""
    model, _ = er3a
    process = start_node("feedforward", "-r", "__ns:=/margins", "-p",
                         f"model_file:={model.save(directory / 'margins_model.yaml')}",
                         log_path=directory / "margins.log")
    try:
        client = graph.node.create_client(ComputeFeedforward, "/margins/compute_feedforward")
        beyond = request(model.joint_names, np.array([[2.5, 0.0, 0.0, 0.0, 0.0, 0.0]]))   # j1 limit 2.4435 rad
        assert graph.call(client, beyond).success
        assert graph.set_parameters("/margins/feedforward", position_margin=0.05)[0].successful
        refused = graph.call(client, beyond)
        assert not refused.success and "j1" in refused.message and "position" in refused.message, refused.message
        assert graph.set_parameters("/margins/feedforward", position_margin=0.1)[0].successful
        assert graph.call(client, beyond).success
    finally:
        assert stop_node(process) == 0, (directory / "margins.log").read_text()


def test_a_model_effort_margin_the_model_in_use_would_fail_is_refused_with_the_reason(ur_like):
    graph = ur_like["graph"]
    [refused] = graph.set_parameters("/ur/feedforward", model_effort_margin=0.001)
    assert re.match(r"parameter model_effort_margin 0\.001 refused: the model in use \(version \d+\) would not be "
                    r"served with it: at the limits of motion", refused.reason), refused.reason
    assert graph.get_parameters("/ur/feedforward", "model_effort_margin") == [3.0]
    assert ur_call(ur_like, request(ur_like["robot"].joint_names, np.zeros((1, 6)))).success


def test_an_effort_margin_too_small_to_hold_the_arm_is_refused_with_the_reason(ur_like):
    """effort_margin 0.05 would refuse every request near poses where holding the arm needs more than 5 % of an
    effort limit: refused live, naming the joint; the model keeps serving with the old margin."""
    graph = ur_like["graph"]
    [refused] = graph.set_parameters("/ur/feedforward", effort_margin=0.05)
    assert re.match(r"parameter effort_margin 0\.05 refused: the model in use \(version \d+\) would not be served "
                    r"with it: holding the arm still within its position limits the model needs up to [0-9.]+ N m at "
                    r"joint \w+", refused.reason), refused.reason
    assert graph.get_parameters("/ur/feedforward", "effort_margin") == [1.0]     # as the fixture started it
    assert ur_call(ur_like, request(ur_like["robot"].joint_names, np.zeros((1, 6)))).success


def test_effort_limits_derived_from_the_first_model_hold_later_models_to_them(graph, tmp_path):
    """A UR-like robot without effort limits: the first model's derived limits (2 x its torques at the limits of
    motion) stay; a model needing 10 times those torques exceeds model_effort_margin 3 x the derived limits (6 x)
    and is refused, the first kept; one needing 2 times them is admitted."""
    data = renamed_robot(load_robot(REPO / "config" / "robots" / "ur5.yaml"), "ur5",
                         [f"j{i}" for i in range(1, 7)]).to_dict()
    data.pop("effort_limits", None)
    data["joints"] = [{key: value for key, value in joint.items() if key != "effort_limit"} for joint in data["joints"]]
    robot = robot_from_dict(data)
    assert all(limit.effort is None for limit in robot.limits)
    first, _ = plausible_model(robot)
    log = tmp_path / "node.log"
    process = start_node("feedforward", "-r", "__ns:=/derived", "-p", f"model_file:={first.save(tmp_path / 'm.yaml')}",
                         log_path=log)
    try:
        statuses = []
        graph.node.create_subscription(FeedforwardStatus, "/derived/feedforward_status", statuses.append, STATUS_QOS)
        publisher = graph.node.create_publisher(IdentifiedModel, "/derived/identified_model", MODEL_QOS)
        heavy, _ = plausible_model(robot, factor=10.0)
        publisher.publish(IdentifiedModel(robot_name=robot.name, version=20, artifact_yaml=heavy.to_yaml()))
        graph.spin_until(lambda: statuses and statuses[-1].models_refused >= 1, what="the heavy model refused")
        assert "model_effort_margin 3.0 times its effort limit" in statuses[-1].last_refused_model
        assert statuses[-1].model_version == 1
        heavier, _ = plausible_model(robot, factor=2.0)
        publisher.publish(IdentifiedModel(robot_name=robot.name, version=21, artifact_yaml=heavier.to_yaml()))
        graph.spin_until(lambda: statuses and statuses[-1].model_version == 21, what="the 2x model served")
    finally:
        assert stop_node(process) == 0, log.read_text()
