"""The sim_robot node, started from its installed executable in its own process, over real DDS.

It follows a JointTrajectory whose points lie on known quintic polynomials, so the published
positions must equal the polynomials at the message stamps; its noise-free torques must equal
pinocchio's RNEA with the simulator's inertias plus Coulomb and viscous friction written out here.
"""
import os
import time

import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from numpy.polynomial import Polynomial
from rclpy.duration import Duration as RclpyDuration
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynid.experiment.simulation import simulation_parameters
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from rnea_reference import rnea_torques
from ros_graph import start_node, stop_node, wait_for_exit

RATE = 500.0     # Hz
NOISE = 0.3      # N m
SEED = 5
DURATION = 2.0   # s of trajectory
LEAD = 0.5       # s from sending to the trajectory's start stamp
NAMESPACE = f"sim_robot_test_{os.getpid()}"   # keeps other tests' joint_states out


@pytest.fixture(scope="module")
def sim_robot(tmp_path_factory, graph):
    log = tmp_path_factory.mktemp("sim_robot") / "node.log"
    process = start_node("sim_robot", "-p", f"rate:={RATE}", "-p", f"noise_std:={NOISE}", "-p", f"seed:={SEED}",
                         "-p", "command_topic:=arm/joint_trajectory", "-r", f"__ns:=/{NAMESPACE}", log_path=log)
    qos = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)
    states, truths = [], []
    graph.node.create_subscription(JointState, f"{NAMESPACE}/joint_states", states.append, qos)
    graph.node.create_subscription(JointState, f"{NAMESPACE}/sim_robot/true_effort", truths.append, qos)
    publisher = graph.node.create_publisher(JointTrajectory, f"{NAMESPACE}/arm/joint_trajectory", 10)
    graph.spin_until(lambda: publisher.get_subscription_count() > 0 and states,
                     what="sim_robot subscribing to arm/joint_trajectory and publishing joint_states")
    yield graph, process, publisher, states, truths
    assert stop_node(process) == 0, log.read_text()


def stamp_ns(msg):
    return Time.from_msg(msg.header.stamp).nanoseconds


def polynomials(n):
    rng = np.random.default_rng(11)
    return [Polynomial(rng.uniform(-0.4, 0.4, 6) / np.arange(1, 7)) for _ in range(n)]


def rnea_with_friction(robot, q, qd, qdd):
    regressor = Regressor(robot, friction_model("coulomb_viscous"))
    parameters = simulation_parameters(regressor, SEED)
    rigid = rnea_torques(robot, parameters, q, qd, qdd)
    fc, fv = parameters[60::2], parameters[61::2]
    return rigid + fc * np.sign(qd) + fv * qd


def test_follows_a_trajectory_with_noisy_and_true_torques_at_the_rate(sim_robot, er3a_robot):
    graph, process, publisher, states, truths = sim_robot
    robot = er3a_robot
    polys = polynomials(robot.n_joints)
    order = list(reversed(range(robot.n_joints)))
    knots = np.linspace(0.0, DURATION, 9)
    start = graph.node.get_clock().now() + RclpyDuration(nanoseconds=int(LEAD * 1e9))
    msg = JointTrajectory(joint_names=[robot.joint_names[j] for j in order])
    msg.header.stamp = start.to_msg()
    for t in knots:
        msg.points.append(JointTrajectoryPoint(
            positions=[polys[j](t) for j in order], velocities=[polys[j].deriv()(t) for j in order],
            accelerations=[polys[j].deriv(2)(t) for j in order],
            time_from_start=Duration(sec=int(t), nanosec=int(round((t % 1) * 1e9)))))
    publisher.publish(msg)
    first_count, first_time = len(states), time.monotonic()
    end_ns = start.nanoseconds + int((DURATION + 0.2) * 1e9)
    graph.spin_until(lambda: states and truths and stamp_ns(states[-1]) > end_ns
                     and stamp_ns(truths[-1]) >= stamp_ns(states[-1]), what="joint_states past the trajectory's end")
    wall_rate = (len(states) - first_count) / (time.monotonic() - first_time)
    assert process.poll() is None
    # the two subscriptions matched at different moments: the states from the first true effort on
    states = [m for m in states if stamp_ns(m) >= stamp_ns(truths[0])]

    stamps = np.array([stamp_ns(m) for m in states])
    assert list(states[0].name) == list(robot.joint_names)
    q = np.array([m.position for m in states])
    qd = np.array([m.velocity for m in states])
    s = (stamps - start.nanoseconds) * 1e-9
    inside = (s >= 0.0) & (s < DURATION)
    assert inside.sum() > 0.8 * DURATION * RATE
    expected_q = np.column_stack([p(s[inside]) for p in polys])
    np.testing.assert_allclose(q[inside], expected_q, rtol=0, atol=1e-7)
    np.testing.assert_allclose(qd[inside], np.column_stack([p.deriv()(s[inside]) for p in polys]), rtol=0, atol=1e-6)
    after = s > DURATION
    np.testing.assert_allclose(q[after], np.tile([p(DURATION) for p in polys], (after.sum(), 1)), atol=1e-9)

    truth_by_stamp = {stamp_ns(m): np.array(m.effort) for m in truths}
    true_effort = np.array([truth_by_stamp[k] for k in stamps])
    noise = np.array([m.effort for m in states]) - true_effort
    np.testing.assert_allclose(np.std(noise, axis=0), NOISE, rtol=0.2)
    assert abs(np.mean(noise)) < 5 * NOISE / np.sqrt(noise.size)

    qdd = np.column_stack([p.deriv(2)(s[inside]) for p in polys])
    expected_tau = rnea_with_friction(robot, q[inside], qd[inside], qdd)
    np.testing.assert_allclose(true_effort[inside], expected_tau, rtol=0, atol=1e-5)

    # Stamps lie on the exact 1/rate grid; a starved node skips overdue samples (max_lag), which
    # shows as a gap of whole periods, never as jitter or a repeated stamp.
    periods = np.diff(stamps) / (1e9 / RATE)
    np.testing.assert_allclose(periods, np.round(periods), atol=1e-6)
    assert periods.min() >= 1 and np.mean(periods == 1) > 0.9
    # never ahead of its clock (a load can only slow it down, which the periods above bound in stamps, not wall time)
    assert wall_rate < 1.5 * RATE


def test_a_malformed_trajectory_is_ignored_and_the_node_keeps_publishing(sim_robot):
    graph, process, publisher, states, _ = sim_robot
    msg = JointTrajectory(joint_names=["elbow"])
    msg.points.append(JointTrajectoryPoint(positions=[1.0], time_from_start=Duration(sec=1)))
    publisher.publish(msg)
    count = len(states)
    graph.spin_until(lambda: len(states) > count + 50, what="joint_states after a malformed trajectory")
    assert process.poll() is None
    np.testing.assert_allclose(states[-1].velocity, 0.0)


def test_a_parameter_of_the_wrong_type_is_a_clean_error(tmp_path):
    """rclpy refuses a list for a float parameter (an integer is taken as the double it means); the node says so
    in one line and exits 2."""
    process = start_node("sim_robot", "-p", "noise_std:=[1.0]", log_path=tmp_path / "node.log")
    assert wait_for_exit(process, 30) == 2
    log = (tmp_path / "node.log").read_text()
    assert "noise_std" in log and "DOUBLE" in log and "Traceback" not in log
