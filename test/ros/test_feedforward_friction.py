"""The feedforward node serving friction that drifts (installed executable, own process, real DDS): a
temperature model is nominal until fresh temperatures come and says so, stale temperatures are not used, a time
model runs from cold_start_stamp and ~/reset_warmup sets it, with use_sim_time from the first /clock message.

Expected torques: pinocchio's RNEA of the link parameters plus the friction written out by hand
(``(fc + fc_dT (T - T_ref)) sgn(v) + (fv + fv_dT (T - T_ref)) v``, ``(fc + fc_cold exp(-t / t_w)) sgn(v) + ...``).
"""
import math

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Temperature

from rnea_reference import rnea_torques
from robot_dynid.experiment.simulation import simulation_parameters
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.msg import FeedforwardStatus, JointTemperatures
from robot_dynid.nodes.feedforward import STATUS_QOS
from robot_dynid.nodes.node_runtime import float64_array
from robot_dynid.package_files import find_package_file
from robot_dynid.srv import ComputeFeedforward, ResetWarmup
from ros_graph import RosTestGraph, start_node, stop_node

T_REF, MAX_AGE, T_W = 20.0, 1.0, 600.0


def model_file(directory, friction):
    robot = load_robot(find_package_file("config", "robots", "er3a.yaml"))
    regressor = Regressor(robot, friction)
    parameters = simulation_parameters(regressor, seed=2)
    base = compute_base_parameters(regressor)
    path = DynamicModel(robot, friction, False, False, base, base.projection @ parameters, np.zeros(base.rank),
                        standard=parameters).save(directory / f"{friction.drift}.yaml")
    coefficients = parameters[regressor.slices["friction"]].reshape(robot.n_joints, -1)
    return path, robot, parameters[regressor.slices["inertial"]], coefficients


def start(tmp_path_factory, friction, name, *parameters):
    directory = tmp_path_factory.mktemp(name)
    path, robot, inertial, coefficients = model_file(directory, friction)
    log = directory / "node.log"
    process = start_node("feedforward", "-r", f"__ns:=/{name}", "-p", f"model_file:={path}",
                         "-p", "status_period:=0.2", *parameters, log_path=log)
    graph = RosTestGraph()
    statuses = []
    graph.node.create_subscription(FeedforwardStatus, f"/{name}/feedforward_status", statuses.append, STATUS_QOS)
    client = graph.node.create_client(ComputeFeedforward, f"/{name}/compute_feedforward")
    return {"graph": graph, "robot": robot, "inertial": inertial, "coefficients": coefficients, "client": client,
            "statuses": statuses, "log": log, "process": process, "name": name}


def stop(node):
    node["graph"].close()
    assert stop_node(node["process"]) == 0, node["log"].read_text()


@pytest.fixture(scope="module")
def temperature_node(tmp_path_factory):
    friction = friction_model("coulomb_viscous", drift="temperature", reference_temperature=T_REF)
    node = start(tmp_path_factory, friction, "warm", "-p", "temperature_topic_prefix:=temperatures",
                 "-p", "joint_temperatures_topic:=joint_temperatures", "-p", f"max_temperature_age:={MAX_AGE}")
    yield node
    stop(node)


@pytest.fixture(scope="module")
def time_node(tmp_path_factory):
    friction = friction_model("coulomb_viscous", drift="time", warmup_time_constant=T_W)
    graph = RosTestGraph()
    cold_start = graph.node.get_clock().now().nanoseconds * 1e-9 - 300.0      # cold 5 min ago
    graph.close()
    node = start(tmp_path_factory, friction, "cold", "-p", f"cold_start_stamp:={cold_start!r}")
    yield node
    stop(node)


STATE = np.array([[0.3, -0.4, 0.5, 0.2, -0.1, 0.4], [0.4, 0.5, -0.3, -0.6, 0.5, -0.2], [0.0] * 6])


def request_of(node):
    """The ComputeFeedforward request of STATE."""
    q, qd, qdd = STATE
    return ComputeFeedforward.Request(joint_names=list(node["robot"].joint_names), positions=float64_array(q),
                                      velocities=float64_array(qd), accelerations=float64_array(qdd))


def served(node):
    response = node["graph"].call(node["client"], request_of(node))
    assert response.success, response.message
    return response


def expected(node, fc, fv):
    q, qd, qdd = STATE
    return rnea_torques(node["robot"], node["inertial"], q, qd, qdd) + fc * np.sign(qd) + fv * qd


def after_warmup(node, elapsed):
    """The torques of STATE at ``elapsed`` [s] since the cold start."""
    fc, fv, fc_cold, fv_cold = node["coefficients"].T
    factor = math.exp(-elapsed / T_W)
    return expected(node, fc + fc_cold * factor, fv + fv_cold * factor)


def at_temperature(node, temperature):
    fc, fv, fc_dT, fv_dT = node["coefficients"].T
    return expected(node, fc + fc_dT * (temperature - T_REF), fv + fv_dT * (temperature - T_REF))


def latest_status(node, condition, what):
    node["graph"].spin_until(lambda: node["statuses"] and condition(node["statuses"][-1]), what=what)
    return node["statuses"][-1]


def stamp(seconds):
    return Time(sec=int(seconds), nanosec=int((seconds % 1.0) * 1e9))


def test_without_temperatures_the_nominal_friction_is_served_and_said(temperature_node):
    node = temperature_node
    response = served(node)
    assert response.friction_state == ComputeFeedforward.Response.FRICTION_NOMINAL
    assert list(response.friction_temperatures) == [T_REF] * 6 and math.isnan(response.friction_elapsed)
    np.testing.assert_allclose(response.efforts, at_temperature(node, T_REF), rtol=1e-9, atol=1e-9)
    status = latest_status(node, lambda s: s.friction_state == FeedforwardStatus.FRICTION_NOMINAL, "nominal status")
    assert "no temperature received for joint j1" in status.friction_message, status.friction_message


def test_a_stale_temperature_is_not_used(temperature_node):
    node = temperature_node
    publisher = node["graph"].node.create_publisher(JointTemperatures, "/warm/joint_temperatures", 10)
    names = list(node["robot"].joint_names)
    node["graph"].spin_until(lambda: publisher.get_subscription_count() > 0, what="the node's subscription")
    now = node["graph"].node.get_clock().now().nanoseconds * 1e-9
    old = JointTemperatures(name=names, temperature=[60.0] * 6)
    old.header.stamp = stamp(now - 10.0)                        # 10 s old, max_temperature_age 1 s
    publisher.publish(old)
    fresh_first = JointTemperatures(name=names[:1], temperature=[60.0])    # stamp 0: when received
    publisher.publish(fresh_first)
    status = latest_status(node, lambda s: "joint j2" in s.friction_message, "j1 fresh, j2 stale")
    assert status.friction_state == FeedforwardStatus.FRICTION_NOMINAL
    assert "the temperature of joint j2 is" in status.friction_message and "s old" in status.friction_message
    response = served(node)
    assert response.friction_state == ComputeFeedforward.Response.FRICTION_NOMINAL
    np.testing.assert_allclose(response.efforts, at_temperature(node, T_REF), rtol=1e-9, atol=1e-9)


def test_fresh_temperatures_per_joint_are_served_then_age_out(temperature_node):
    node = temperature_node
    publishers = [node["graph"].node.create_publisher(Temperature, f"/warm/temperatures/{name}", 10)
                  for name in node["robot"].joint_names]
    node["graph"].spin_until(lambda: all(p.get_subscription_count() > 0 for p in publishers), what="subscriptions")

    def publish_all():
        for publisher in publishers:
            publisher.publish(Temperature(temperature=45.0))         # stamp 0: when received

    publish_all()
    node["graph"].spin_until(lambda: (publish_all() or True) and node["statuses"]
                             and node["statuses"][-1].friction_state == FeedforwardStatus.FRICTION_TEMPERATURE,
                             what="a temperature status")
    publish_all()
    response = served(node)
    assert response.friction_state == ComputeFeedforward.Response.FRICTION_TEMPERATURE
    assert list(response.friction_temperatures) == [45.0] * 6
    np.testing.assert_allclose(response.efforts, at_temperature(node, 45.0), rtol=1e-9, atol=1e-9)
    # no more temperatures: after max_temperature_age the nominal friction again
    latest_status(node, lambda s: s.friction_state == FeedforwardStatus.FRICTION_NOMINAL, "nominal after aging")


def test_a_time_model_runs_from_cold_start_stamp_and_reset_warmup_sets_it(time_node):
    node = time_node
    response = served(node)
    assert response.friction_state == ComputeFeedforward.Response.FRICTION_WARMUP
    assert 300.0 <= response.friction_elapsed < 360.0
    np.testing.assert_allclose(response.efforts, after_warmup(node, response.friction_elapsed), rtol=1e-9, atol=1e-9)
    reset = node["graph"].node.create_client(ResetWarmup, "/cold/feedforward/reset_warmup")
    answer = node["graph"].call(reset, ResetWarmup.Request(elapsed=0.0))
    assert answer.success and answer.elapsed < 5.0, answer.message
    assert served(node).friction_elapsed < 60.0
    refused = node["graph"].call(reset, ResetWarmup.Request(elapsed=-1.0))
    assert not refused.success and "elapsed must be finite and >= 0" in refused.message


def test_with_use_sim_time_a_time_model_runs_from_the_first_clock_message(tmp_path_factory):
    """ROS time reads 0 until /clock runs: a warm-up clock started then would count the first /clock time as
    running time (a node started at 0 s, /clock at 1000 s: warm for 1000 s), and a cold_start_stamp of simulated
    time would be after the node's start. Before /clock: refused, FRICTION_UNKNOWN saying why; after it, the running
    time since cold_start_stamp at the /clock time (which stands still here): exactly 10 s."""
    friction = friction_model("coulomb_viscous", drift="time", warmup_time_constant=T_W)
    node = start(tmp_path_factory, friction, "simulated", "-p", "use_sim_time:=true", "-p", "cold_start_stamp:=990.0")
    graph = node["graph"]
    try:
        request = request_of(node)
        refused = graph.call(node["client"], request)
        assert not refused.success
        assert refused.message == ("use_sim_time is true and no /clock message has arrived: the friction of this "
                                   "model drifts with time, known only on ROS time")
        status = latest_status(node, lambda s: s.friction_state == FeedforwardStatus.FRICTION_UNKNOWN, "unknown")
        assert status.friction_message == refused.message and math.isnan(status.friction_elapsed)
        reset = graph.node.create_client(ResetWarmup, "/simulated/feedforward/reset_warmup")
        answer = graph.call(reset, ResetWarmup.Request(elapsed=0.0))
        assert not answer.success and "/clock" in answer.message and math.isnan(answer.elapsed)
        clock = graph.node.create_publisher(Clock, "/clock", 10)
        responses = []

        def served_on_clock():
            clock.publish(Clock(clock=stamp(1000.0)))
            responses.append(graph.call(node["client"], request))
            return responses[-1].success
        graph.spin_until(served_on_clock, what="the node serving once /clock runs")
        response = responses[-1]
        assert response.friction_state == ComputeFeedforward.Response.FRICTION_WARMUP
        assert response.friction_elapsed == pytest.approx(10.0, abs=1e-9)
        np.testing.assert_allclose(response.efforts, after_warmup(node, 10.0), rtol=1e-9, atol=1e-9)
        latest_status(node, lambda s: s.friction_state == FeedforwardStatus.FRICTION_WARMUP, "warm-up status")
        answer = graph.call(reset, ResetWarmup.Request(elapsed=2.5))
        assert answer.success and answer.elapsed == pytest.approx(2.5, abs=1e-9), answer.message
        graph.node.destroy_publisher(clock)
    finally:
        stop(node)


def test_with_use_sim_time_a_cold_start_after_the_first_clock_message_waits_for_reset_warmup(tmp_path_factory):
    """cold_start_stamp 2000 s, first /clock 1000 s: the running time is unknown (refused, saying so) until
    ~/reset_warmup sets it; then served from the running time set (the clock stands still: exactly it)."""
    friction = friction_model("coulomb_viscous", drift="time", warmup_time_constant=T_W)
    node = start(tmp_path_factory, friction, "ahead", "-p", "use_sim_time:=true", "-p", "cold_start_stamp:=2000.0")
    graph = node["graph"]
    try:
        request = request_of(node)
        clock = graph.node.create_publisher(Clock, "/clock", 10)
        responses = []

        def clock_taken():
            clock.publish(Clock(clock=stamp(1000.0)))
            responses.append(graph.call(node["client"], request))
            return "no /clock message" not in responses[-1].message
        graph.spin_until(clock_taken, what="the node taking /clock")
        assert not responses[-1].success
        assert responses[-1].message == ("parameter cold_start_stamp (2000.0 s) is after the first /clock time "
                                         "(1000 s): the running time is unknown until ~/reset_warmup sets it")
        status = latest_status(node, lambda s: s.friction_message == responses[-1].message, "the reason in the status")
        assert status.friction_state == FeedforwardStatus.FRICTION_UNKNOWN
        reset = graph.node.create_client(ResetWarmup, "/ahead/feedforward/reset_warmup")
        answer = graph.call(reset, ResetWarmup.Request(elapsed=30.0))
        assert answer.success and answer.elapsed == pytest.approx(30.0, abs=1e-9), answer.message
        response = graph.call(node["client"], request)
        assert response.success and response.friction_elapsed == pytest.approx(30.0, abs=1e-9), response.message
        np.testing.assert_allclose(response.efforts, after_warmup(node, 30.0), rtol=1e-9, atol=1e-9)
        graph.node.destroy_publisher(clock)
    finally:
        stop(node)
