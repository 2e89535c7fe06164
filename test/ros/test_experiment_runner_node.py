"""The experiment_runner node driving sim_robot, both from their installed executables, over real DDS.

A 5.5 s plan of five stage rows (rest, excitation, two friction strokes of j2, warmup) is
written here from closed-form quintic moves; the markers must be the rows of that plan file and
the simulated arm must follow its trajectory; ``~/abort`` and a tracking error stop the run.
"""
import os

import numpy as np
import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from builtin_interfaces.msg import Duration

from robot_dynid.msg import ExperimentStage
from robot_dynid.protocol import PlanStage, ProtocolPlan, load_plan, save_plan
from robot_dynid.trajectories import Hold, PointToPoint, Sequence
from ros_graph import RosTestGraph, start_node, stop_node

NAMESPACE = f"experiment_runner_test_{os.getpid()}"
JOINTS = ("j1", "j2", "j3", "j4", "j5", "j6")
KINDS = {"rest": ExperimentStage.KIND_REST, "excitation": ExperimentStage.KIND_EXCITATION,
         "friction": ExperimentStage.KIND_FRICTION, "warmup": ExperimentStage.KIND_WARMUP}
HOME = np.zeros(6)
A = np.array([0.2, -0.2, 0.2, 0.0, 0.1, 0.0])
B = A + np.array([0.0, 0.4, 0.0, 0.0, 0.0, 0.0])
START_DELAY = 2.0   # s; discovery of the test's subscriptions happens meanwhile
QOS = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)


def write_plan(path):
    segments = [Hold(JOINTS, HOME, 0.5), PointToPoint(JOINTS, HOME, A, 1.5), PointToPoint(JOINTS, A, B, 1.0),
                PointToPoint(JOINTS, B, A, 1.0), PointToPoint(JOINTS, A, HOME, 1.5)]
    rows = [("rest", "hold", None, None, 0), ("excitation", "fourier", None, None, 0),
            ("friction", "stroke", "j2", 0.2, 1), ("friction", "stroke", "j2", 0.2, -1),
            ("warmup", "oscillation", None, None, 0)]
    ends = np.cumsum([s.duration for s in segments])
    stages = tuple(PlanStage(0, kind, name, joint, fraction, direction, float(end - s.duration), float(end))
                   for (kind, name, joint, fraction, direction), s, end in zip(rows, segments, ends))
    save_plan(ProtocolPlan("ER3A", JOINTS, Sequence(segments), 1, stages, {}), path)
    return load_plan(path)


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    directory = tmp_path_factory.mktemp("experiment_runner")
    plan = write_plan(directory / "plan.yaml")
    sim = start_node("sim_robot", "-p", "noise_std:=0.0", "-r", f"__ns:=/{NAMESPACE}",
                     log_path=directory / "sim.log")
    graph = RosTestGraph()
    states, stages = [], []
    graph.node.create_subscription(JointState, f"{NAMESPACE}/joint_states", states.append, QOS)
    stage_subscription = graph.node.create_subscription(ExperimentStage, f"{NAMESPACE}/experiment_stage",
                                                        stages.append, QOS)
    intruder = graph.node.create_publisher(JointTrajectory, f"{NAMESPACE}/joint_trajectory", 10)
    graph.spin_until(lambda: states, what="sim_robot publishing joint_states")
    yield graph, plan, directory, states, stages, stage_subscription, intruder
    graph.close()
    assert stop_node(sim) == 0, (directory / "sim.log").read_text()


def start_runner(arm, name, *parameters):
    graph, plan, directory, states, stages, stage_subscription, _ = arm
    graph.spin_until(lambda: stage_subscription.get_publisher_count() == 0, what="the previous runner leaving")
    stages.clear()
    log = directory / f"{name}.log"
    process = start_node("experiment_runner", "-p", f"plan_file:={directory / 'plan.yaml'}", "-p", "rate_hz:=100.0",
                         "-p", "window_duration:=1.0", "-p", "lookahead:=0.5", "-p", f"start_delay:={START_DELAY}",
                         *parameters, "-r", f"__ns:=/{NAMESPACE}", log_path=log)
    graph.spin_until(lambda: stage_subscription.get_publisher_count() > 0, what="experiment_runner's stage publisher")
    return process, log


def seconds(msg):
    return Time.from_msg(msg.header.stamp).nanoseconds * 1e-9


def test_every_stage_marker_arrives_in_order_and_the_arm_follows_the_plan(arm):
    graph, plan, directory, states, stages, _, _ = arm
    process, log = start_runner(arm, "full_run", "-p", "deviation_threshold:=0.01", "-p", "experiment_id:=sim_test")
    graph.spin_until(lambda: len(stages) == 2 * len(plan.stages), timeout=30.0, what="every stage marker")
    t0 = seconds(stages[0])
    graph.spin_until(lambda: seconds(states[-1]) > t0 + plan.duration + 0.5, what="joint_states past the plan")
    running = process.poll() is None
    assert stop_node(process) == 0, log.read_text()
    assert running, log.read_text()

    expected = [(KINDS[row.kind], row.cycle, row.joint or "", start, row.name, row.direction)
                for row in plan.stages for start in (True, False)]
    assert [(m.kind, m.cycle, m.joint_name, m.start, m.label, m.direction) for m in stages] == expected
    assert {m.experiment_id for m in stages} == {"sim_test"}
    assert [m.speed_fraction for m in stages] == [0, 0, 0, 0, 0.2, 0.2, 0.2, 0.2, 0, 0]
    boundaries = [t for row in plan.stages for t in (row.start, row.end)]
    np.testing.assert_allclose([seconds(m) - t0 for m in stages], boundaries, atol=2e-6)

    t = np.array([seconds(m) for m in states]) - t0
    q = np.array([m.position for m in states])
    during = (t >= 0.0) & (t <= plan.duration)
    assert during.sum() > 0.8 * 500 * plan.duration
    reference = plan.trajectory.evaluate(t[during])[0]
    assert np.abs(q[during] - reference).max() < 1e-4
    assert np.abs(reference - A).min(axis=0).max() < 1e-3       # the arm did go through A
    np.testing.assert_allclose(q[t > plan.duration], np.tile(HOME, ((t > plan.duration).sum(), 1)), atol=1e-9)
    assert "plan done" in log.read_text()


def test_abort_ends_the_current_stage_and_the_arm_holds(arm):
    graph, plan, directory, states, stages, _, _ = arm
    process, log = start_runner(arm, "abort", "-p", "deviation_threshold:=0.01")
    graph.spin_until(lambda: len(stages) >= 5, timeout=30.0, what="the start of the first friction stroke")
    client = graph.node.create_client(Trigger, f"{NAMESPACE}/experiment_runner/abort")
    response = graph.call(client, Trigger.Request())
    assert response.success, response.message
    abort_time = graph.node.get_clock().now().nanoseconds * 1e-9
    graph.spin_until(lambda: seconds(states[-1]) > abort_time + 2.0, what="joint_states 2 s after the abort")
    assert not graph.call(client, Trigger.Request()).success
    running = process.poll() is None
    assert stop_node(process) == 0, log.read_text()
    assert running, log.read_text()

    assert [(m.kind, m.start) for m in stages] == [
        (ExperimentStage.KIND_REST, True), (ExperimentStage.KIND_REST, False),
        (ExperimentStage.KIND_EXCITATION, True), (ExperimentStage.KIND_EXCITATION, False),
        (ExperimentStage.KIND_FRICTION, True), (ExperimentStage.KIND_FRICTION, False)]
    assert (stages[-1].joint_name, stages[-1].direction) == ("j2", 1)
    t0 = seconds(stages[0])
    assert plan.stages[2].start < seconds(stages[-1]) - t0 < plan.stages[2].end

    t = np.array([seconds(m) for m in states])
    q = np.array([m.position for m in states])
    held = q[t > abort_time + 0.5]
    assert held.shape[0] > 500
    np.testing.assert_allclose(held, np.tile(held[0], (held.shape[0], 1)), atol=1e-9)
    assert plan.trajectory.evaluate([plan.stages[2].start])[0][0][1] - 1e-6 < held[0][1] \
        < plan.trajectory.evaluate([plan.stages[2].end])[0][0][1] + 1e-6   # j2 stopped inside its stroke
    assert np.abs(held[-1] - B).max() > 0.01      # it never finished the plan


def test_a_tracking_error_aborts_the_run_naming_the_joint(arm):
    graph, plan, directory, states, stages, _, intruder = arm
    process, log = start_runner(arm, "deviation", "-p", "deviation_threshold:=0.05")
    graph.spin_until(lambda: len(stages) >= 3, timeout=30.0, what="the start of the excitation")
    push = JointTrajectory(joint_names=["j3"])
    push.points = [JointTrajectoryPoint(positions=[-0.5], time_from_start=Duration(nanosec=300_000_000))]
    intruder.publish(push)
    push_time = graph.node.get_clock().now().nanoseconds * 1e-9
    graph.spin_until(lambda: seconds(states[-1]) > push_time + 1.5, what="joint_states after the abort")
    running = process.poll() is None
    assert stop_node(process) == 0, log.read_text()
    assert running, log.read_text()
    assert "joint j3 deviates" in log.read_text()
    assert [(m.kind, m.start) for m in stages] == [
        (ExperimentStage.KIND_REST, True), (ExperimentStage.KIND_REST, False),
        (ExperimentStage.KIND_EXCITATION, True), (ExperimentStage.KIND_EXCITATION, False)]
    t0 = seconds(stages[0])
    assert plan.stages[1].start < seconds(stages[-1]) - t0 < plan.stages[1].end   # ended early, by the abort
