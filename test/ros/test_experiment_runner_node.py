"""The experiment_runner node driving sim_robot, both from their installed executables, over real DDS.

A 5.5 s plan of five stage rows (rest, excitation, two friction strokes of j2, warmup) is
written here from closed-form quintic moves; the markers must be the rows of that plan file and
the simulated arm must follow its trajectory; ``~/abort``, a tracking error, a NaN joint state and
a driver that stops publishing stop the run, holding a finite pose.
Nothing moves before ``~/start`` (or ``autostart``); a start is refused without a joint state or
from one older than ``max_joint_state_age``, and for an arm far from the plan's start pose when the
approach is disabled; with the approach, the commands received here (not the runner's own numbers)
stay within the fraction of the limits of config/robots/er3a.yaml and end at the plan's start pose.
"""
import os
import re
import signal
import time

import numpy as np
import pytest
import yaml
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from builtin_interfaces.msg import Duration

from robot_dynid.experiment.protocol import ProtocolPlan, load_plan, save_plan
from robot_dynid.experiment.trajectories import Hold, PointToPoint, Sequence
from robot_dynid.msg import ExperimentStage
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.stages import StageInterval
from ros_graph import start_node, stop_node

NAMESPACE = f"experiment_runner_test_{os.getpid()}"
JOINTS = ("j1", "j2", "j3", "j4", "j5", "j6")
KINDS = {"rest": ExperimentStage.KIND_REST, "excitation": ExperimentStage.KIND_EXCITATION,
         "friction": ExperimentStage.KIND_FRICTION, "warmup": ExperimentStage.KIND_WARMUP}
HOME = np.zeros(6)
A = np.array([0.2, -0.2, 0.2, 0.0, 0.1, 0.0])
B = A + np.array([0.0, 0.4, 0.0, 0.0, 0.0, 0.0])
FAR = np.array([0.1, 0.6, -0.2, 0.0, 0.0, 0.3])   # [rad] from HOME, the plan's start pose; j2 the farthest
START_DELAY = 1.0   # s from an accepted start to the first motion
QUIET = 3.0         # s without commands before ~/start
SIM_RATE = 500.0    # Hz, the simulated driver's joint states
DELIVERY_SLACK = 0.1   # s one message may reach two subscribers apart on a loaded machine
QOS = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)


def write_plan(path, final_rest=0.0):
    """The 5.5 s plan of the tests, then ``final_rest`` [s] at HOME (a rest stage) when given."""
    segments = [Hold(JOINTS, HOME, 0.5), PointToPoint(JOINTS, HOME, A, 1.5), PointToPoint(JOINTS, A, B, 1.0),
                PointToPoint(JOINTS, B, A, 1.0), PointToPoint(JOINTS, A, HOME, 1.5)]
    rows = [("rest", "hold", None, None, 0), ("excitation", "fourier", None, None, 0),
            ("friction", "stroke", "j2", 0.2, 1), ("friction", "stroke", "j2", 0.2, -1),
            ("warmup", "oscillation", None, None, 0)]
    if final_rest:
        segments.append(Hold(JOINTS, HOME, final_rest))
        rows.append(("rest", "hold", None, None, 0))
    ends = np.cumsum([s.duration for s in segments])
    stages = tuple(StageInterval(kind, float(end - s.duration), float(end), joint, fraction, direction, 0, name)
                   for (kind, name, joint, fraction, direction), s, end in zip(rows, segments, ends))
    save_plan(ProtocolPlan("ER3A", JOINTS, Sequence(segments), 1, stages, {}), path)
    return load_plan(path)


@pytest.fixture(scope="module")
def arm(tmp_path_factory, graph):
    directory = tmp_path_factory.mktemp("experiment_runner")
    plan = write_plan(directory / "plan.yaml")
    sim = start_node("sim_robot", "-p", "noise_std:=0.0", "-p", f"rate:={SIM_RATE}", "-r", f"__ns:=/{NAMESPACE}",
                     log_path=directory / "sim.log")
    SIM.append(sim)
    states, stages, commands = [], [], []
    graph.node.create_subscription(JointState, f"{NAMESPACE}/joint_states", states.append, QOS)
    stage_subscription = graph.node.create_subscription(   # transient local: markers sent before it matched
        ExperimentStage, f"{NAMESPACE}/experiment_stage", stages.append,
        QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    graph.node.create_subscription(JointTrajectory, f"{NAMESPACE}/joint_trajectory", commands.append, QOS)
    intruder = graph.node.create_publisher(JointTrajectory, f"{NAMESPACE}/joint_trajectory", 10)
    graph.spin_until(lambda: states, what="sim_robot publishing joint_states")
    yield graph, plan, directory, states, stages, stage_subscription, intruder, commands
    assert stop_node(sim) == 0, (directory / "sim.log").read_text()


RUNNERS = []   # (process, log) of every runner started here
SIM = []       # the sim_robot process


@pytest.fixture(autouse=True)
def runner_stopped_after_each_test():
    """A test that fails with its runner running stops it, so that the next test does not wait for it."""
    yield
    while RUNNERS:
        stop_node(RUNNERS.pop()[0])


def start_runner(arm, name, *parameters):
    """Start a runner (after the previous one has left) once the test sees its stage publisher, its
    joint state subscription and sim_robot subscribing to its commands; clears stages and commands."""
    graph, plan, directory, states, stages, stage_subscription, _, commands = arm
    graph.spin_until(lambda: stage_subscription.get_publisher_count() == 0, what="the previous runner leaving")
    stages.clear()
    commands.clear()
    log = directory / f"{name}.log"
    process = start_node("experiment_runner", "-p", f"plan_file:={directory / 'plan.yaml'}", "-p", "rate_hz:=100.0",
                         "-p", "window_duration:=1.0", "-p", "lookahead:=0.5", "-p", f"start_delay:={START_DELAY}",
                         *parameters, "-r", f"__ns:=/{NAMESPACE}", log_path=log)
    RUNNERS.append((process, log))
    graph.spin_until(lambda: stage_subscription.get_publisher_count() > 0
                     and graph.node.count_subscribers(f"/{NAMESPACE}/joint_states") >= 2
                     and graph.node.count_publishers(f"/{NAMESPACE}/joint_trajectory") >= 2,
                     what="experiment_runner's stage and command publishers and joint state subscription")
    return process, log


def wait_for_markers(graph, stages, count, log, what):
    """Spin until ``count`` stage markers arrived; on a timeout, say which and show the runner's log."""
    try:
        graph.spin_until(lambda: len(stages) >= count, timeout=30.0, what=what)
    except TimeoutError as error:
        received = [(m.label, "start" if m.start else "end") for m in stages]
        raise AssertionError(f"{error}; received {received}; runner log:\n{log.read_text()}") from None


def runner_service(graph, name):
    return graph.node.create_client(Trigger, f"{NAMESPACE}/experiment_runner/{name}")


def start_when_ready(graph):
    """Call ~/start until the runner has a joint state and a controller (it refuses as not ready before);
    return the first other response."""
    client, responses = runner_service(graph, "start"), []

    def answered():
        responses.append(graph.call(client, Trigger.Request()))
        return not re.search("joint state has arrived|joint state arrived|nothing subscribes", responses[-1].message)

    graph.spin_until(answered, what="the runner to be ready for ~/start")
    return responses[-1]


def spin_for(graph, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        graph.executor.spin_once(timeout_sec=0.05)


def move_arm(arm, pose):
    """Command sim_robot to ``pose`` (1 s) and spin until it rests there and the test's own command
    subscription has the command (so that it does not arrive among the runner's)."""
    graph, _, _, states, _, _, intruder, commands = arm
    command = JointTrajectory(joint_names=list(JOINTS))
    command.points = [JointTrajectoryPoint(positions=list(pose), velocities=[0.0] * 6, accelerations=[0.0] * 6,
                                           time_from_start=Duration(sec=1))]
    intruder.publish(command)
    graph.spin_until(lambda: command in commands and np.abs(np.array(states[-1].position) - pose).max() < 1e-9
                     and np.abs(states[-1].velocity).max() < 1e-9, what=f"sim_robot resting at {pose}")


def stop_runner(process, log):
    running = process.poll() is None
    assert stop_node(process) == 0, log.read_text()
    assert running, log.read_text()
    return log.read_text()


def seconds(msg):
    return Time.from_msg(msg.header.stamp).nanoseconds * 1e-9


def commanded_reference(commands):
    """Times [s], positions, velocities, accelerations of every commanded point, later messages
    replacing the points of earlier ones at the same time (they repeat the reference). Times are
    summed in integer nanoseconds: an absolute time in float seconds resolves only 0.24 us."""
    points, first = {}, None
    for msg in commands:
        for point in msg.points:
            ns = (Time.from_msg(msg.header.stamp).nanoseconds + 1_000_000_000 * point.time_from_start.sec
                  + point.time_from_start.nanosec)
            first = ns if first is None else first
            points[round((ns - first) / 100_000)] = (ns * 1e-9, point.positions, point.velocities,
                                                     point.accelerations)   # 0.1 ms bins around the points
    t, q, qd, qdd = zip(*(points[key] for key in sorted(points)))
    return np.array(t), np.array(q), np.array(qd), np.array(qdd)


def test_start_is_refused_without_a_joint_state(arm):
    graph, _, directory, _, stages, _, _, commands = arm
    log = directory / "no_joint_state.log"
    process = start_node("experiment_runner", "-p", f"plan_file:={directory / 'plan.yaml'}", "-p",
                         "joint_states_topic:=nobody_publishes", "-r", f"__ns:=/{NAMESPACE}", log_path=log)
    response = graph.call(runner_service(graph, "start"), Trigger.Request())
    assert not response.success
    assert response.message == "not starting: no joint state has arrived yet: the arm's pose is unknown"
    assert graph.call(runner_service(graph, "abort"), Trigger.Request()).message == "not started"
    stop_runner(process, log)
    assert commands == [] and stages == []


def test_start_with_use_sim_time_is_refused_until_the_first_clock_message(arm):
    """Simulated time reads 0 until /clock runs: a plan started then would jump ahead when it does."""
    graph, _, directory, _, stages, _, _, commands = arm
    log = directory / "sim_time.log"
    process = start_node("experiment_runner", "-p", f"plan_file:={directory / 'plan.yaml'}", "-p",
                         "joint_states_topic:=nobody_publishes", "-p", "use_sim_time:=true", "-r",
                         f"__ns:=/{NAMESPACE}", log_path=log)
    start = runner_service(graph, "start")
    response = graph.call(start, Trigger.Request())
    assert not response.success
    assert response.message == ("not starting: use_sim_time is true and no /clock message has arrived: the plan's "
                                "time would jump when the first one does")
    clock = graph.node.create_publisher(Clock, "/clock", 10)
    tick = Clock()
    tick.clock.sec = 100
    responses = []

    def clock_taken():
        clock.publish(tick)
        responses.append(graph.call(start, Trigger.Request()))
        return "/clock" not in responses[-1].message
    graph.spin_until(clock_taken, what="the runner taking /clock")
    assert responses[-1].message == "not starting: no joint state has arrived yet: the arm's pose is unknown"
    graph.node.destroy_publisher(clock)
    stop_runner(process, log)
    assert commands == [] and stages == []


def test_start_is_refused_from_a_joint_state_older_than_max_joint_state_age(arm):
    """A driver that stopped publishing: the last pose is not where the arm is now."""
    graph, _, directory, _, stages, _, _, commands = arm
    log = directory / "stale_joint_state.log"
    topic = f"/{NAMESPACE}/stale_joint_states"
    process = start_node("experiment_runner", "-p", f"plan_file:={directory / 'plan.yaml'}", "-p",
                         f"joint_states_topic:={topic}", "-p", "max_joint_state_age:=0.5", "-r", f"__ns:=/{NAMESPACE}",
                         log_path=log)
    publisher = graph.node.create_publisher(JointState, topic, QOS)
    graph.spin_until(lambda: publisher.get_subscription_count() > 0, what="the runner subscribing to joint states")
    graph.wait_until_spinning(f"/{NAMESPACE}/experiment_runner")
    publisher.publish(JointState(name=list(JOINTS), position=HOME.tolist()))
    published = time.monotonic()
    spin_for(graph, 1.0)
    response = graph.call(runner_service(graph, "start"), Trigger.Request())
    age = time.monotonic() - published
    match = re.fullmatch(r"not starting: the last joint state arrived (\S+) s ago, more than max_joint_state_age "
                         r"0.5 s: the arm's pose is not known now \(has the driver stopped publishing\?\)",
                         response.message)
    assert not response.success and match, response.message
    assert 1.0 - 0.1 < float(match.group(1)) < age + 0.1
    graph.node.destroy_publisher(publisher)
    stop_runner(process, log)
    assert commands == [] and stages == []


def test_autostart_plays_every_stage_marker_in_order_and_the_arm_follows_the_plan(arm):
    graph, plan, directory, states, stages, _, _, _ = arm
    move_arm(arm, HOME)
    process, log = start_runner(arm, "full_run", "-p", "autostart:=true", "-p", "start_delay:=2.0",
                                "-p", "deviation_threshold:=0.01", "-p", "start_tolerance:=0.005",
                                "-p", "experiment_id:=sim_test")
    wait_for_markers(graph, stages, 2 * len(plan.stages), log, "every stage marker")
    t0 = seconds(stages[0])
    graph.spin_until(lambda: seconds(states[-1]) > t0 + plan.duration + 0.5, what="joint_states past the plan")
    text = stop_runner(process, log)
    assert "starting in 2 s: at the plan's start pose" in text and "plan done" in text

    expected = [(KINDS[row.kind], row.cycle, row.joint or "", start, row.label, row.direction)
                for row in plan.stages for start in (True, False)]
    assert [(m.kind, m.cycle, m.joint_name, m.start, m.label, m.direction) for m in stages] == expected
    assert {m.experiment_id for m in stages} == {"sim_test"}
    assert [m.speed_fraction for m in stages] == [0, 0, 0, 0, 0.2, 0.2, 0.2, 0.2, 0, 0]
    boundaries = [t for row in plan.stages for t in (row.start_time, row.end_time)]
    np.testing.assert_allclose([seconds(m) - t0 for m in stages], boundaries, atol=2e-6)

    t = np.array([seconds(m) for m in states]) - t0
    q = np.array([m.position for m in states])
    during = (t >= 0.0) & (t <= plan.duration)
    assert during.sum() > 0.8 * 500 * plan.duration
    reference = plan.trajectory.evaluate(t[during])[0]
    assert np.abs(q[during] - reference).max() < 1e-4
    assert np.abs(reference - A).min(axis=0).max() < 1e-3       # the arm did go through A
    np.testing.assert_allclose(q[t > plan.duration], np.tile(HOME, ((t > plan.duration).sum(), 1)), atol=1e-9)


def run_into_the_excitation(arm, name, *parameters):
    """A runner started from HOME with ``parameters``, once the excitation stage has begun."""
    graph, stages = arm[0], arm[4]
    move_arm(arm, HOME)
    process, log = start_runner(arm, name, *parameters)
    response = start_when_ready(graph)
    assert response.success, response.message
    wait_for_markers(graph, stages, 3, log, "the start of the excitation")
    return process, log


def test_a_runner_stalled_longer_than_lookahead_aborts_and_holds_where_the_controller_holds(arm):
    """SIGSTOP the runner mid-plan (just after window 2 went out, at plan time 1.5 s) for 2.5 s, five
    lookaheads: on SIGCONT window 3 (from 3 s) is 1 s past its start; the runner sends no late
    window (which would make the reference jump) but a hold at the last point it had sent."""
    graph, plan, directory, states, stages, _, _, commands = arm
    process, log = run_into_the_excitation(arm, "stalled", "-p", "deviation_threshold:=1.0")   # the maximum
    graph.spin_until(lambda: len(commands) >= 3, what="three windows")
    process.send_signal(signal.SIGSTOP)
    try:
        stopped = len(commands)
        spin_for(graph, 2.5)
    finally:
        process.send_signal(signal.SIGCONT)
    graph.spin_until(lambda: "aborting: the reference window for plan time" in log.read_text(),
                     what="the runner aborting after the stall")
    resumed = graph.node.get_clock().now().nanoseconds * 1e-9
    graph.spin_until(lambda: seconds(states[-1]) > resumed + 1.0, what="joint_states 1 s after the stall")
    stop_runner(process, log)

    after = commands[stopped:]
    assert [len(c.points) for c in after] == [1], "only the hold follows the stall"
    last_sent = commands[stopped - 1].points[-1]
    np.testing.assert_allclose(after[0].points[0].positions, last_sent.positions, atol=1e-12)
    assert (stages[-1].start, stages[-1].kind) == (False, ExperimentStage.KIND_EXCITATION)
    t = np.array([seconds(m) for m in states])
    q = np.array([m.position for m in states])
    late = t > resumed - 2.6
    assert np.abs(np.diff(q[late], axis=0)).max() < 0.01      # 500 Hz: no jump, before or after the hold
    np.testing.assert_allclose(q[-1], last_sent.positions, atol=1e-9)


def now(graph):
    return graph.node.get_clock().now().nanoseconds * 1e-9


def assert_holds_a_commanded_point(commands, hold, earliest, latest):
    """``hold`` (one JointTrajectory point) is finite and equal to a reference point of ``commands``
    (the windows before it) due between plan times ``earliest`` and ``latest`` [s, absolute]: the
    controller's reference when the run aborted, not a measured pose."""
    assert np.isfinite(hold.positions).all() and np.isfinite(hold.velocities).all(), hold
    t, q, _, _ = commanded_reference(commands)
    times = t[np.all(q == np.array(hold.positions), axis=1)]
    assert np.any((earliest <= times) & (times <= latest)), \
        f"the hold equals the commanded points at {times - earliest} s from {latest - earliest:.3f} s long a window"


def test_joint_states_that_stop_mid_run_abort_it(arm):
    """SIGSTOP sim_robot (the driver) mid-plan until the runner, its deviation check blind, aborts
    after max_joint_state_age and ends the stage playing. The last measured pose is older than
    max_joint_state_age then: the hold is the reference point due at the abort, where the
    controller is."""
    graph, plan, directory, states, stages, _, _, commands = arm
    process, log = run_into_the_excitation(arm, "silent_driver", "-p", "max_joint_state_age:=0.5")
    received = len(states)
    graph.spin_until(lambda: len(states) > received, what="a joint state just before the stop")
    stopped = now(graph)
    SIM[0].send_signal(signal.SIGSTOP)
    try:
        graph.spin_until(lambda: "aborting: no joint state for" in log.read_text(), timeout=5.0,
                         what="the runner aborting while the driver is stopped")
        aborted = now(graph)
    finally:
        SIM[0].send_signal(signal.SIGCONT)
    graph.spin_until(lambda: not stages[-1].start and len(commands[-1].points) == 1,
                     what="the end marker of the excitation and the hold")
    text = stop_runner(process, log)
    silence = float(re.search(r"aborting: no joint state for (\S+) s \(max_joint_state_age 0.5 s\): the arm moves "
                              r"unmonitored; holding the last commanded point", text).group(1))
    # at least the age it waits for; at most the time from this test's last joint state before SIGSTOP to its
    # sight of the abort's log line, however late a loaded machine made both (plus DELIVERY_SLACK: the runner
    # may have had that state earlier than this test)
    assert 0.5 < silence <= aborted - stopped + DELIVERY_SLACK
    assert (stages[-1].start, stages[-1].kind) == (False, ExperimentStage.KIND_EXCITATION)
    assert [len(c.points) for c in commands].count(1) == 1
    assert_holds_a_commanded_point(commands[:-1], commands[-1].points[0], stopped, aborted)


def test_a_joint_state_turning_nan_mid_plan_aborts_at_once_and_holds_the_last_commanded_point(arm):
    """A driver reports position[j2] = NaN mid-plan (a test publisher beside sim_robot): ``|NaN - q_ref|
    > threshold`` is false, yet the run must abort at once, naming the joint, hold the reference
    point due then (finite; the NaN state is the last measured one), end the stage playing and send
    no further window."""
    graph, plan, directory, states, stages, _, _, commands = arm
    driver = graph.node.create_publisher(JointState, f"{NAMESPACE}/joint_states", QOS)
    try:
        process, log = run_into_the_excitation(arm, "nan_driver")
        graph.spin_until(lambda: driver.get_subscription_count() >= 2 and len(commands) >= 2,
                         what="the runner subscribing to the test's joint states, two windows")
        sent = len(commands)
        state = JointState(name=list(JOINTS), position=list(states[-1].position), velocity=[0.0] * 6)
        state.position[1] = float("nan")
        injected = now(graph)
        state.header.stamp = graph.node.get_clock().now().to_msg()
        driver.publish(state)
        graph.spin_until(lambda: any(len(c.points) == 1 for c in commands[sent:]), timeout=10.0,
                         what="the hold after the NaN joint state")
        held = now(graph)
        hold_index = next(k for k in range(sent, len(commands)) if len(commands[k].points) == 1)
        graph.spin_until(lambda: seconds(states[-1]) > held + 1.5, what="joint_states 1.5 s after the hold")
        text = stop_runner(process, log)
    finally:
        graph.node.destroy_publisher(driver)
        states[:] = [m for m in states if np.isfinite(m.position).all()]    # the next tests read sim_robot's
    print(f"NaN joint state to hold received: {held - injected:.3f} s")
    assert held - injected < 1.0
    assert re.search(r"aborting: joint j2 reports position nan rad at t = \S+ s: the arm's pose is unknown "
                     r"\(driver fault\?\); holding the last commanded point", text), text
    assert hold_index == len(commands) - 1, "no window after the hold"
    assert hold_index - sent <= 1, "at most one window between the NaN state and the hold (sent before it arrived)"
    assert_holds_a_commanded_point(commands[:hold_index], commands[hold_index].points[0], injected - 0.011, held)
    assert (stages[-1].start, stages[-1].kind) == (False, ExperimentStage.KIND_EXCITATION)
    t0 = seconds(stages[0])
    assert plan.stages[1].start_time < seconds(stages[-1]) - t0 < plan.stages[1].end_time
    np.testing.assert_allclose(states[-1].position, commands[hold_index].points[0].positions, atol=1e-9)


def test_nothing_moves_until_start_and_abort_ends_the_current_stage(arm):
    graph, plan, directory, states, stages, _, _, commands = arm
    move_arm(arm, HOME)
    process, log = start_runner(arm, "abort", "-p", "deviation_threshold:=0.01", "-p", "start_tolerance:=0.005")
    spin_for(graph, QUIET)          # ready (a joint state and sim_robot subscribing) but not started
    assert commands == [] and stages == []
    start, abort = runner_service(graph, "start"), runner_service(graph, "abort")
    response = graph.call(start, Trigger.Request())
    assert response.success, response.message
    assert response.message.startswith(f"starting in {START_DELAY:g} s: at the plan's start pose (largest offset")
    graph.spin_until(lambda: commands, what="the first trajectory window after ~/start")
    wait_for_markers(graph, stages, 5, log, "the start of the first friction stroke")
    again = graph.call(start, Trigger.Request())
    assert (again.success, again.message) == (False, "not starting: the run already started; restart the node "
                                                     "to run again")
    response = graph.call(abort, Trigger.Request())
    assert response.success, response.message
    abort_time = graph.node.get_clock().now().nanoseconds * 1e-9
    graph.spin_until(lambda: seconds(states[-1]) > abort_time + 2.0, what="joint_states 2 s after the abort")
    assert not graph.call(abort, Trigger.Request()).success
    assert "the run was aborted" in graph.call(start, Trigger.Request()).message
    stop_runner(process, log)

    assert [(m.kind, m.start) for m in stages] == [
        (ExperimentStage.KIND_REST, True), (ExperimentStage.KIND_REST, False),
        (ExperimentStage.KIND_EXCITATION, True), (ExperimentStage.KIND_EXCITATION, False),
        (ExperimentStage.KIND_FRICTION, True), (ExperimentStage.KIND_FRICTION, False)]
    assert (stages[-1].joint_name, stages[-1].direction) == ("j2", 1)
    t0 = seconds(stages[0])
    assert plan.stages[2].start_time < seconds(stages[-1]) - t0 < plan.stages[2].end_time

    t = np.array([seconds(m) for m in states])
    q = np.array([m.position for m in states])
    held = q[t > abort_time + 0.5]
    assert held.shape[0] > 500
    np.testing.assert_allclose(held, np.tile(held[0], (held.shape[0], 1)), atol=1e-9)
    assert plan.trajectory.evaluate([plan.stages[2].start_time])[0][0][1] - 1e-6 < held[0][1] \
        < plan.trajectory.evaluate([plan.stages[2].end_time])[0][0][1] + 1e-6   # j2 stopped inside its stroke
    assert np.abs(held[-1] - B).max() > 0.01      # it never finished the plan


def test_a_tracking_error_aborts_the_run_naming_the_joint(arm):
    graph, plan, directory, states, stages, _, intruder, _ = arm
    move_arm(arm, HOME)
    process, log = start_runner(arm, "deviation", "-p", "deviation_threshold:=0.05")
    assert start_when_ready(graph).success
    wait_for_markers(graph, stages, 3, log, "the start of the excitation")
    push = JointTrajectory(joint_names=["j3"])
    push.points = [JointTrajectoryPoint(positions=[-0.5], time_from_start=Duration(nanosec=300_000_000))]
    intruder.publish(push)
    push_time = graph.node.get_clock().now().nanoseconds * 1e-9
    graph.spin_until(lambda: seconds(states[-1]) > push_time + 1.5, what="joint_states after the abort")
    assert "joint j3 deviates" in stop_runner(process, log)
    assert [(m.kind, m.start) for m in stages] == [
        (ExperimentStage.KIND_REST, True), (ExperimentStage.KIND_REST, False),
        (ExperimentStage.KIND_EXCITATION, True), (ExperimentStage.KIND_EXCITATION, False)]
    t0 = seconds(stages[0])
    assert plan.stages[1].start_time < seconds(stages[-1]) - t0 < plan.stages[1].end_time   # ended early, by the abort


def test_a_far_pose_is_refused_naming_the_joint_when_the_approach_is_disabled(arm):
    graph, _, _, _, stages, _, _, commands = arm
    move_arm(arm, FAR)
    process, log = start_runner(arm, "far", "-p", "approach_speed_fraction:=0.0", "-p", "autostart:=true")
    refusal = ("joint j2 is 0.6 rad from the plan's start pose, beyond start_tolerance 0.05 rad, and the approach "
               "is disabled (approach_speed_fraction 0)")
    graph.spin_until(lambda: refusal in log.read_text(), what="autostart refusing the far pose")
    response = start_when_ready(graph)
    assert not response.success and response.message.startswith(f"not starting: {refusal}"), response.message
    spin_for(graph, 1.0)
    text = stop_runner(process, log)
    assert text.count(f"autostart: not starting: {refusal}") == 1      # logged once; idle
    assert commands == [] and stages == []


def test_a_far_pose_is_approached_within_the_fraction_of_the_limits_before_the_plan(arm):
    graph, plan, _, states, stages, _, _, commands = arm
    move_arm(arm, FAR)
    process, log = start_runner(arm, "approach", "-p", "approach_speed_fraction:=0.25")
    response = start_when_ready(graph)
    assert response.success, response.message
    found = re.fullmatch(rf"starting in {START_DELAY:g} s: approaching the plan's start pose in ([\d.]+) s "
                         rf"\(largest move j2 0\.6 rad\), then playing the {plan.duration:.0f} s plan",
                         response.message)
    assert found, response.message
    wait_for_markers(graph, stages, 2 * len(plan.stages), log, "every stage marker")
    stop_runner(process, log)

    t, q, qd, qdd = commanded_reference(commands)
    t0 = seconds(stages[0])                    # plan time 0: the first marker comes after the approach
    assert t0 - t[0] == pytest.approx(float(found.group(1)), abs=0.051)
    np.testing.assert_allclose(q[0], FAR, atol=1e-9)               # from the measured pose
    np.testing.assert_allclose(q[np.argmin(np.abs(t - t0))], HOME, atol=1e-9)   # to the plan's start pose
    robot = yaml.safe_load(find_package_file("config", "robots", "er3a.yaml").read_text())
    velocity = 0.25 * np.array([joint["velocity_limit"] for joint in robot["joints"]])
    acceleration = 0.25 * np.array([joint["acceleration_limit"] for joint in robot["joints"]])
    approach = t <= t0 + 1e-6
    dt = np.diff(t[approach])
    speed = np.diff(q[approach], axis=0) / dt[:, None]
    fd_acceleration = np.diff(speed, axis=0) / dt[1:, None]
    assert np.all(np.abs(speed).max(axis=0) <= velocity * (1 + 1e-6))
    assert np.all(np.abs(fd_acceleration).max(axis=0) <= acceleration * (1 + 1e-6))
    assert np.all(np.abs(qd[approach]).max(axis=0) <= velocity * (1 + 1e-9))
    assert np.all(np.abs(qdd[approach]).max(axis=0) <= acceleration * (1 + 1e-9))
    # the shortest such move: one joint uses (nearly: the duration is rounded up to the 100 Hz grid) all of it
    share = np.maximum(np.abs(qd[approach]).max(axis=0) / velocity, np.abs(qdd[approach]).max(axis=0) / acceleration)
    assert share.max() > 0.97
    arrived = np.array([m.position for m in states if t0 - 0.01 < seconds(m) < t0 + 0.4])   # the plan's first hold
    assert arrived.shape[0] > 100
    np.testing.assert_allclose(arrived, np.tile(HOME, (arrived.shape[0], 1)), atol=1e-4)  # the arm followed it there


def test_a_safety_bound_set_while_the_plan_plays_is_taken_lower_and_refused_higher(arm):
    """``ros2 param set`` on the runner: before the start any value in range (deviation_threshold not under
    start_tolerance); while the plan plays a lower deviation_threshold is taken and aborts the run on a push
    the plan's own threshold lets pass, a higher one and a start parameter are refused with the reason; after
    the run every change is refused."""
    graph, plan, directory, states, stages, _, intruder, _ = arm
    move_arm(arm, HOME)
    # a plan that still plays when the push comes, however long the parameter calls before it take (the tests'
    # 5.5 s plan was over first once in CI, and the run ended done, not aborted)
    write_plan(directory / "long_plan.yaml", final_rest=60.0)
    process, log = start_runner(arm, "live", "-p", "deviation_threshold:=0.5",
                                "-p", f"plan_file:={directory / 'long_plan.yaml'}")
    path = f"/{NAMESPACE}/experiment_runner"
    [refused] = graph.set_parameters(path, deviation_threshold=0.04)
    assert refused.reason == ("parameter deviation_threshold: start_tolerance 0.05 rad is above deviation_threshold "
                              "0.04 rad: a start that far from the plan's start pose (no approach) would abort at "
                              "once; lower start_tolerance")
    [refused] = graph.set_parameters(path, deviation_threshold=0.0)
    assert refused.reason == "parameter deviation_threshold must be finite and in (0, 1] [rad], got 0.0"
    assert graph.set_parameters(path, deviation_threshold=1.0)[0].successful     # before the start: higher too
    assert start_when_ready(graph).success
    wait_for_markers(graph, stages, 1, log, "the start of the plan")
    same, start_delay = graph.set_parameters(path, deviation_threshold=1.0, start_delay=0.5)
    assert same.successful      # the value in use: loosens nothing
    assert start_delay.reason == "parameter start_delay cannot change while a plan plays; it can before the start"
    [loosened] = graph.set_parameters(path, max_joint_state_age=5.0)
    assert loosened.reason == ("parameter max_joint_state_age 5 would loosen the safety bound in use (1) while a "
                               "plan plays: refused; a lower value is taken at once, a higher one before the start")
    assert graph.set_parameters(path, deviation_threshold=0.3)[0].successful
    [loosened] = graph.set_parameters(path, deviation_threshold=0.6)
    assert loosened.reason == ("parameter deviation_threshold 0.6 would loosen the safety bound in use (0.3) while a "
                               "plan plays: refused; a lower value is taken at once, a higher one before the start")
    push = JointTrajectory(joint_names=["j3"])    # j3 pushed 0.7 rad and more off the plan, within 1 rad of it
    push.points = [JointTrajectoryPoint(positions=[-0.7], time_from_start=Duration(nanosec=300_000_000))]
    intruder.publish(push)
    over = "parameter start_delay cannot change: the run is over (aborted) and the node plays one run; restart it " \
           "for another"
    graph.spin_until(lambda: graph.set_parameters(path, start_delay=0.5)[0].reason == over, timeout=30.0,
                     what="the run to be over")
    text = stop_runner(process, log)
    assert re.search(r"aborting: joint j3 deviates [0-9.]+ rad from the reference at t = [0-9.]+ s \(threshold 0\.3 "
                     r"rad\)", text), text
