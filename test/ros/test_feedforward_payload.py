"""The feedforward node's payload: payload_file at start, ~/set_payload and ~/clear_payload at run time, the
payload in FeedforwardStatus (installed executable, own process, real DDS).

The model is the UR5 URDF arm with plausible link parameters and no friction; expected torques are pinocchio's
RNEA of a model from pinocchio's own URDF parser with the payload appended as a body at the URDF frame
(``rnea_reference.rnea_urdf_with_payload``), independent of robot_dynid's frame lookup and parameter maps.
"""
import numpy as np
import pytest
import yaml
from rclpy.duration import Duration
from scipy.interpolate import BPoly
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from std_srvs.srv import Trigger

from rnea_reference import rnea_urdf_with_payload
from robot_dynid.msg import FeedforwardStatus
from robot_dynid.nodes.feedforward import STATUS_QOS
from robot_dynid.nodes.node_runtime import float64_array
from robot_dynid.srv import ComputeFeedforward, SetPayload
from ros_graph import start_node, stop_node, wait_for_exit

URDF_ORDER = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
GRIPPER = ("tool0", 1.2, [0.0, 0.03, 0.06], [[0.004, 0.0, 0.0], [0.0, 0.005, 0.0], [0.0, 0.0, 0.003]])
TORCH = ("tool0", 2.8, [0.01, -0.02, 0.08], [[0.01, 0.001, -0.002], [0.001, 0.012, 0.0005], [-0.002, 0.0005, 0.008]])


def as_file(body):
    frame, mass, com, inertia = body
    return {"frame": frame, "mass": mass, "com": com, "inertia": [inertia[i][j] for i, j in URDF_ORDER]}


def set_request(body):
    fields = as_file(body)
    return SetPayload.Request(frame=fields["frame"], mass=fields["mass"], com=fields["com"], inertia=fields["inertia"])


@pytest.fixture(scope="module")
def node(tmp_path_factory, graph, ur5_arm):
    directory = tmp_path_factory.mktemp("feedforward_payload")
    robot, parameters, arm = ur5_arm
    model_file = arm.save(directory / "arm.yaml")
    payload_file = directory / "gripper.yaml"
    payload_file.write_text(yaml.safe_dump(as_file(GRIPPER)))
    log = directory / "node.log"
    # reference_topic set: the reference path runs on a thread of its own beside the service and the model
    # path (payload services), which is where the swap must be atomic
    process = start_node("feedforward", "-r", "__ns:=/tool", "-p", f"model_file:={model_file}",
                         "-p", f"payload_file:={payload_file}", "-p", "reference_topic:=reference",
                         "-p", "trajectory_topic:=trajectory", "-p", "trajectory_out_topic:=trajectory_with_effort",
                         log_path=log)
    statuses = []
    graph.node.create_subscription(FeedforwardStatus, "/tool/feedforward_status", statuses.append, STATUS_QOS)
    clients = {name: graph.node.create_client(kind, f"/tool/{path}") for name, kind, path in (
        ("compute", ComputeFeedforward, "compute_feedforward"), ("set", SetPayload, "feedforward/set_payload"),
        ("clear", Trigger, "feedforward/clear_payload"))}
    yield {"graph": graph, "robot": robot, "parameters": parameters, "clients": clients, "statuses": statuses,
           "payload_file": payload_file, "log": log, "process": process}
    assert stop_node(process) == 0, log.read_text()


def states(seed, count=20):
    """Positions, velocities, accelerations (count, 6) within the UR5's limits."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-2.0, 2.0, (count, 6)), rng.uniform(-2.5, 2.5, (count, 6)), rng.uniform(-8.0, 8.0, (count, 6))


def computed(node, q, qd, qdd):
    request = ComputeFeedforward.Request(joint_names=list(node["robot"].joint_names), positions=float64_array(q),
                                         velocities=float64_array(qd), accelerations=float64_array(qdd))
    response = node["graph"].call(node["clients"]["compute"], request)
    assert response.success, response.message
    return np.reshape(response.efforts, q.shape)


def assert_rnea(node, payload, seed):
    q, qd, qdd = states(seed)
    expected = rnea_urdf_with_payload(node["robot"].urdf, node["parameters"], payload, q, qd, qdd)
    np.testing.assert_allclose(computed(node, q, qd, qdd), expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())


def latest_status(node, condition, what):
    node["graph"].spin_until(lambda: node["statuses"] and condition(node["statuses"][-1]), what=what)
    return node["statuses"][-1]


def test_the_payload_file_is_served_from_the_start(node):
    assert_rnea(node, GRIPPER, seed=1)
    status = latest_status(node, lambda s: s.payload_frame == "tool0", "a status with the payload")
    assert status.payload_mass == 1.2 and list(status.payload_com) == [0.0, 0.03, 0.06]
    assert list(status.payload_inertia) == [0.004, 0.0, 0.0, 0.005, 0.0, 0.003]
    assert status.payload_source == f"payload_file {node['payload_file']}"


def test_after_set_payload_the_torques_are_rnea_of_the_loaded_arm(node):
    response = node["graph"].call(node["clients"]["set"], set_request(TORCH))
    assert response.success and response.message == "" and response.model_version == 1, response.message
    assert_rnea(node, TORCH, seed=2)
    status = latest_status(node, lambda s: s.payload_mass == 2.8, "a status with the new payload")
    assert status.payload_source == "set_payload" and status.model_version == 1


@pytest.mark.parametrize("body, reason", [
    (("tool0", -1.0, [0.0, 0.0, 0.1], np.diag([0.01, 0.01, 0.01])),
     "payload refused: payload at 'tool0' is not physically consistent: mass -1.0 kg must be > 0"),
    (("tool0", 1.0, [0.0, 0.0, 0.1], np.diag([0.01, 0.01, 0.05])),
     "payload refused: payload at 'tool0' is not physically consistent: principal moments about the centre of mass "
     "(0.01, 0.01, 0.05 kg m^2) violate the triangle inequality"),
    (("tool0", 1.0, [0.0, float("nan"), 0.1], np.diag([0.01, 0.01, 0.01])),
     "payload refused: payload com[1] must be finite, got nan"),
    (("flange", 1.0, [0.0, 0.0, 0.1], np.diag([0.01, 0.01, 0.01])),
     "payload refused: payload.frame: payload frame 'flange' is not fixed to the last link of robot 'ur5_urdf'; "
     "its frames are ['wrist_3_link', 'tool0']"),
])
def test_a_payload_no_body_can_have_is_refused_and_the_one_in_use_stays(node, body, reason):
    assert node["graph"].call(node["clients"]["set"], set_request(TORCH)).success
    response = node["graph"].call(node["clients"]["set"], set_request(body))
    assert not response.success
    assert response.message.startswith(reason), response.message
    assert_rnea(node, TORCH, seed=3)
    assert node["process"].poll() is None


def test_a_payload_stamped_ahead_is_checked_now_and_served_from_its_stamp(node):
    """~/set_payload with a stamp 2 s ahead (a grasp whose time is known): answered at once, the arm alone until
    the stamp, the arm with the torch after it; a body no arm can carry is refused at once, stamp or not."""
    graph = node["graph"]
    assert graph.call(node["clients"]["clear"], Trigger.Request()).success
    clock = graph.node.get_clock()
    at = clock.now() + Duration(seconds=2.0)
    request = set_request(TORCH)
    request.stamp = at.to_msg()
    response = graph.call(node["clients"]["set"], request)
    assert response.success and response.message.startswith("checked; served from"), response.message
    assert_rnea(node, None, seed=7)
    refused = set_request(("tool0", -1.0, [0.0, 0.0, 0.1], np.diag([0.01, 0.01, 0.01])))
    refused.stamp = at.to_msg()
    assert not graph.call(node["clients"]["set"], refused).success
    graph.spin_until(lambda: clock.now() > at + Duration(seconds=0.05), what="the payload's stamp", timeout=10.0)
    assert_rnea(node, TORCH, seed=8)


def test_a_trajectory_across_a_stamped_payload_gets_two_points_around_the_stamp_and_the_load_from_it(node):
    """A trajectory of 21 quintic points 0.1 s apart, the torch stamped 1.0437 s after its start: it comes back
    with 23 points, two added 0.05 ms either side of the stamp on the points' own quintic (scipy's BPoly through the
    same values), the arm alone before the stamp and with the torch after it (RNEA of the points' states)."""
    graph, robot = node["graph"], node["robot"]
    assert graph.call(node["clients"]["clear"], Trigger.Request()).success
    received = []
    graph.node.create_subscription(JointTrajectory, "/tool/trajectory_with_effort", received.append, 10)
    publisher = graph.node.create_publisher(JointTrajectory, "/tool/trajectory", 10)
    graph.spin_until(lambda: publisher.get_subscription_count() > 0, what="feedforward subscribing to trajectories")
    offsets = np.arange(21) * 0.1
    phase = offsets[:, None] + np.arange(6)
    q, qd, qdd = 0.5 * np.sin(phase), 0.5 * np.cos(phase), -0.5 * np.sin(phase)
    start = graph.node.get_clock().now() + Duration(seconds=0.5)
    request = set_request(TORCH)
    request.stamp = (start + Duration(nanoseconds=1_043_700_000)).to_msg()
    response = graph.call(node["clients"]["set"], request)
    assert response.success, response.message
    trajectory = JointTrajectory(joint_names=list(robot.joint_names), points=[
        JointTrajectoryPoint(positions=q[k].tolist(), velocities=qd[k].tolist(), accelerations=qdd[k].tolist(),
                             time_from_start=Duration(nanoseconds=round(offsets[k] * 1e9)).to_msg())
        for k in range(offsets.size)])
    trajectory.header.stamp = start.to_msg()

    def publish_and_check():
        publisher.publish(trajectory)
        return bool(received)

    graph.spin_until(publish_and_check, what="the trajectory with efforts")
    points = received[0].points
    times = np.array([point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec for point in points])
    assert len(points) == 23
    # 0.1 ms apart to the nanosecond, centred on the stamp to the resolution of float64 seconds of ROS time
    # (0.24 us at 1.8e9 s: the stamp and the start are absolute times, their difference carries both roundings)
    np.testing.assert_allclose(times[12] - times[11], 1e-4, atol=2e-9)
    np.testing.assert_allclose(times[11:13].mean(), 1.0437, atol=5e-7)
    np.testing.assert_allclose(np.delete(times, [11, 12]), offsets, atol=1e-9)
    states = [np.array([getattr(point, field) for point in points])
              for field in ("positions", "velocities", "accelerations")]
    spline = BPoly.from_derivatives(offsets, np.stack([q, qd, qdd], axis=1))
    for order, values in enumerate(states):
        np.testing.assert_allclose(values, spline(times, order), rtol=1e-9, atol=1e-9)
    efforts = np.array([point.effort for point in points])
    alone, loaded = (rnea_urdf_with_payload(robot.urdf, node["parameters"], body, *states) for body in (None, TORCH))
    np.testing.assert_allclose(efforts[:12], alone[:12], rtol=1e-9, atol=1e-9 * np.abs(alone).max())
    np.testing.assert_allclose(efforts[12:], loaded[12:], rtol=1e-9, atol=1e-9 * np.abs(loaded).max())
    assert graph.call(node["clients"]["clear"], Trigger.Request()).success


def test_clear_payload_serves_the_arm_alone(node):
    response = node["graph"].call(node["clients"]["clear"], Trigger.Request())
    assert response.success, response.message
    assert_rnea(node, None, seed=4)
    status = latest_status(node, lambda s: s.payload_frame == "", "a status without a payload")
    assert status.payload_mass == 0.0 and status.payload_source == ""


def test_each_request_is_answered_wholly_with_one_payload_while_payloads_change(node):
    """Rounds of a request in flight together with a ~/set_payload that alternates two payloads: every answer
    is RNEA with one of them (or the arm alone, before the first), never a mix within one request."""
    graph, clients = node["graph"], node["clients"]
    assert graph.call(clients["clear"], Trigger.Request()).success
    q, qd, qdd = states(5, count=2000)
    expected = [rnea_urdf_with_payload(node["robot"].urdf, node["parameters"], body, q, qd, qdd)
                for body in (None, GRIPPER, TORCH)]
    request = ComputeFeedforward.Request(joint_names=list(node["robot"].joint_names), positions=float64_array(q),
                                         velocities=float64_array(qd), accelerations=float64_array(qdd))
    matched = []
    for k in range(10):
        answer = clients["compute"].call_async(request)
        switch = clients["set"].call_async(set_request((GRIPPER, TORCH)[k % 2]))
        graph.spin_until(lambda: answer.done() and switch.done(), timeout=60.0, what=f"round {k}")
        assert switch.result().success, switch.result().message
        response = answer.result()
        assert response.success, response.message
        efforts = np.reshape(response.efforts, q.shape)
        matches = [np.allclose(efforts, reference, rtol=1e-9, atol=1e-9 * np.abs(reference).max())
                   for reference in expected]
        assert sum(matches) == 1, [np.abs(efforts - reference).max() for reference in expected]
        matched.append(matches.index(True))
    assert {1, 2} <= set(matched), matched        # answered with both payloads as they changed


def test_a_node_given_a_bad_payload_file_stops_at_start_with_one_line(tmp_path):
    bad = tmp_path / "payload.yaml"
    bad.write_text(yaml.safe_dump({**as_file(GRIPPER), "mass": -3.0}))
    process = start_node("feedforward", "-p", f"payload_file:={bad}", log_path=tmp_path / "node.log")
    assert wait_for_exit(process, 30) == 2
    log = (tmp_path / "node.log").read_text()
    assert "Traceback" not in log
    [line] = [line for line in log.splitlines() if "error" in line]
    assert f"{bad}: payload at 'tool0' is not physically consistent: mass -3.0 kg must be > 0" in line, log


def test_a_payload_before_the_first_model_that_does_not_fit_it_is_refused_then_and_the_model_served(
        graph, tmp_path, ur5_arm):
    """No model_file, no robot_file: ~/set_payload with a frame the robot lacks is kept for the first model; when
    it comes, the payload is refused with the reason in FeedforwardStatus and the model is served alone (torques:
    RNEA of the arm without payload), never blocked."""
    from robot_dynid.msg import IdentifiedModel
    from robot_dynid.nodes.node_runtime import MODEL_QOS
    robot, parameters, arm = ur5_arm
    log = tmp_path / "node.log"
    process = start_node("feedforward", "-r", "__ns:=/early", log_path=log)
    try:
        statuses = []
        graph.node.create_subscription(FeedforwardStatus, "/early/feedforward_status", statuses.append, STATUS_QOS)
        setter = graph.node.create_client(SetPayload, "/early/feedforward/set_payload")
        response = graph.call(setter, set_request(("no_such_frame", 2.0, [0.0, 0.0, 0.05],
                                                   [[0.01, 0.0, 0.0], [0.0, 0.01, 0.0], [0.0, 0.0, 0.01]])))
        assert response.success and "checked against the first model" in response.message, response.message
        publisher = graph.node.create_publisher(IdentifiedModel, "/early/identified_model", MODEL_QOS)
        publisher.publish(IdentifiedModel(robot_name=robot.name, version=3, artifact_yaml=arm.to_yaml()))
        graph.spin_until(lambda: statuses and statuses[-1].model_version == 3, what="the first model served")
        status = statuses[-1]
        assert "2 kg at 'no_such_frame' from set_payload" in status.last_refused_payload, status
        assert "no_such_frame" in status.last_refused_payload and status.payload_frame == ""
        client = graph.node.create_client(ComputeFeedforward, "/early/compute_feedforward")
        q, qd, qdd = states(5)
        request = ComputeFeedforward.Request(joint_names=list(robot.joint_names), positions=float64_array(q),
                                             velocities=float64_array(qd), accelerations=float64_array(qdd))
        answer = graph.call(client, request)
        assert answer.success, answer.message
        expected = rnea_urdf_with_payload(robot.urdf, parameters, None, q, qd, qdd)
        np.testing.assert_allclose(np.reshape(answer.efforts, q.shape), expected, rtol=1e-9,
                                   atol=1e-9 * np.abs(expected).max())
    finally:
        assert stop_node(process) == 0, log.read_text()
