"""The recorder node, started from its installed executable in its own process, over real DDS.

Every expectation comes from what the test itself published (stamps, values, marker times) or
designed (the stage boundaries of an unmarked trajectory), read back with bag_io's reader.
"""
import pathlib
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml
from rosbags.highlevel import AnyReader
from sensor_msgs.msg import JointState

from robot_dynid.experiment.simulation import SimulatedRobot, simulation_parameters
from robot_dynid.experiment.trajectories import load_trajectory
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.msg import ExperimentStage, HydraulicCylinderState
from robot_dynid.recordings.bag_io import read_bag, read_stage_markers
from robot_dynid.recordings.stage_detection import detect_stages
from robot_dynid.srv import MarkStage
from ros_graph import kill_started_nodes, start_node, stop_node
from repo_paths import REPO

JOINTS = ("j1", "j2", "j3")
T0_NS = 1_700_000_000_000_000_000
STATUS = re.compile(r"(?:recorded ((?:\d+ on \S+, )*\d+ on \S+)|no message recorded yet) to ")


@pytest.fixture(autouse=True)
def no_recorder_outlives_its_test():
    """A failed test must not leave its recorder subscribed to the next test's publishers (it slowed
    them down until messages were lost)."""
    yield
    kill_started_nodes()


class Recorder:
    """A recorder process writing ``<directory>/bag``, its log, and test publishers to it."""

    def __init__(self, graph, directory, *parameters, log=None):
        self.graph, self.bag, self.log = graph, directory / "bag", log or directory / "recorder.log"
        arguments = [f"bag_path:={self.bag}", "status_period:=0.05", *parameters]
        self.process = start_node("recorder", *[a for p in arguments for a in ("-p", p)], log_path=self.log)
        self.joint_states = graph.node.create_publisher(JointState, "joint_states", 2000)
        self.stages = graph.node.create_publisher(ExperimentStage, "experiment_stage", 100)
        for publisher in (self.joint_states, self.stages):
            graph.spin_until(lambda p=publisher: p.get_subscription_count() > 0,
                             what=f"recorder subscribing to {publisher.topic_name}")
        graph.wait_until_spinning("/recorder")

    def counts(self):
        lines = STATUS.findall(self.log.read_text()) if self.log.exists() else []
        return {topic: int(count) for count, topic in (part.split(" on ") for part in lines[-1].split(", "))} \
            if lines and lines[-1] else {}

    def wait_for(self, expected):
        self.graph.spin_until(lambda: all(self.counts().get(t, 0) >= n for t, n in expected.items()),
                              what=f"recorder reporting {expected}")

    def stop(self, sig=signal.SIGINT, status=0):
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout=10.0)
        finally:
            stop_node(self.process)
        log = self.log.read_text()
        assert self.process.returncode == status, log
        assert "[FATAL]" not in log and "Traceback" not in log, log
        for publisher in (self.joint_states, self.stages):
            self.graph.node.destroy_publisher(publisher)


def joint_state(stamp_ns, names, position, velocity=None):
    message = JointState(name=list(names), position=[float(v) for v in position])
    if velocity is not None:
        message.velocity = [float(v) for v in velocity]
    message.header.stamp.sec, message.header.stamp.nanosec = divmod(int(stamp_ns), 1_000_000_000)
    return message


def stage(stamp_ns, kind, cycle, start):
    message = ExperimentStage(kind=kind, cycle=cycle, start=start)
    message.header.stamp.sec, message.header.stamp.nanosec = divmod(int(stamp_ns), 1_000_000_000)
    return message


@pytest.mark.parametrize("sig, storage", [(signal.SIGINT, "mcap"), (signal.SIGTERM, "sqlite3")])
def test_every_message_sent_before_the_signal_is_in_the_bag(graph, tmp_path, sig, storage):
    recorder = Recorder(graph, tmp_path, f"storage:={storage}", "joint_names:=[j1,j2,j3,j4]")
    rng = np.random.default_rng(11)
    n_samples = 400
    stamps = T0_NS + np.arange(n_samples) * 2_000_000 + rng.integers(0, 1_000_000, n_samples)
    q = rng.uniform(-3.0, 3.0, (n_samples, 3))
    qd = rng.uniform(-1.0, 1.0, (n_samples, 3))
    excitation = (stamps[100], stamps[299])
    recorder.stages.publish(stage(excitation[0], ExperimentStage.KIND_EXCITATION, 2, True))
    for k in rng.permutation(n_samples):
        order = list(rng.permutation(3))
        names = [JOINTS[j] for j in order] + ["gripper"]
        recorder.joint_states.publish(joint_state(stamps[k], names, list(q[k, order]) + [0.5],
                                                  list(qd[k, order]) + [0.0]))
    recorder.stages.publish(stage(excitation[1], ExperimentStage.KIND_EXCITATION, 2, False))
    recorder.wait_for({"/joint_states": n_samples, "/experiment_stage": 2})
    recorder.stop(sig)

    recording = read_bag(recorder.bag, joint_names=JOINTS)
    np.testing.assert_allclose(recording.time - T0_NS * 1e-9, (np.sort(stamps) - T0_NS) * 1e-9, rtol=0, atol=1e-6)
    order = np.argsort(stamps)
    np.testing.assert_array_equal(recording.q, q[order])
    np.testing.assert_array_equal(recording.qd, qd[order])
    inside = (stamps[order] >= excitation[0]) & (stamps[order] <= excitation[1])
    np.testing.assert_array_equal(recording.stage, np.where(inside, "excitation", ""))
    np.testing.assert_array_equal(recording.cycle, np.where(inside, 2, -1))
    log = recorder.log.read_text()
    assert log.count("lacks joint(s) ['j4']") == 1, log
    assert "closed bag" in log


def test_a_signal_in_the_middle_of_a_callback_waits_for_it_and_loses_nothing(graph, tmp_path):
    """SIGINT while timers (status and flush every 10 ms) and subscriptions run: the callback it lands in ends
    first (KeyboardInterrupt there was logged by the executor as a fatal error with its traceback, and could cut
    a write half way). Five recorders, each stopped while 1 kHz joint states arrive; every message the recorder
    had received (its last status line before the signal, its closing line after) is in the bag. A message
    published just before the signal may still be in flight: not having received it is no loss."""
    for attempt in range(5):
        (tmp_path / str(attempt)).mkdir()
        recorder = Recorder(graph, tmp_path / str(attempt), "status_period:=0.01", "flush_period:=0.01")
        q = np.random.default_rng(attempt).uniform(-1.0, 1.0, (400, 3))
        for k in range(200):
            recorder.joint_states.publish(joint_state(T0_NS + k * 1_000_000, JOINTS, q[k]))
        recorder.wait_for({"/joint_states": 200})
        sent = 200
        while sent < 200 + 20 * attempt:
            recorder.joint_states.publish(joint_state(T0_NS + sent * 1_000_000, JOINTS, q[sent]))
            sent += 1
            time.sleep(0.001)
        received_before = recorder.counts()["/joint_states"]
        process = recorder.process
        process.send_signal(signal.SIGINT)
        while sent < 400 and process.poll() is None:
            recorder.joint_states.publish(joint_state(T0_NS + sent * 1_000_000, JOINTS, q[sent]))
            sent += 1
            time.sleep(0.001)
        process.wait(timeout=10.0)
        recorder.stop()     # (no second signal: it has exited) asserts exit 0 and no fatal error or traceback
        closed = re.search(r"closed bag \S+: \{'/joint_states': (\d+)", recorder.log.read_text())
        assert closed, recorder.log.read_text()
        recorded = read_bag(recorder.bag, joint_names=JOINTS).q
        assert len(recorded) == int(closed.group(1)) >= received_before >= 200, (attempt, len(recorded))
        np.testing.assert_array_equal(recorded, q[:len(recorded)])


def test_a_bag_that_cannot_be_finished_is_one_error_line_and_keeps_its_messages(graph, tmp_path):
    """metadata.yaml.tmp taken by a directory: on SIGINT the recorder closes the bag but cannot put its
    distribution into metadata.yaml; it says so in one line (no traceback), exits 1, and the bag holds every
    message sent."""
    recorder = Recorder(graph, tmp_path)
    q = np.random.default_rng(5).uniform(-1.0, 1.0, (50, 3))
    for k in range(50):
        recorder.joint_states.publish(joint_state(T0_NS + k * 2_000_000, JOINTS, q[k]))
    recorder.wait_for({"/joint_states": 50})
    (recorder.bag / "metadata.yaml.tmp").mkdir()
    recorder.stop(status=1)
    log = recorder.log.read_text()
    errors = [line for line in log.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and "RecorderNode: error while closing:" in errors[0], log
    assert "metadata.yaml.tmp" in errors[0] and "Traceback" not in log, log
    np.testing.assert_array_equal(read_bag(recorder.bag, joint_names=JOINTS).q, q)


def test_bad_joint_states_are_recorded_warned_once_per_reason_and_skipped_by_the_reader(graph, tmp_path):
    recorder = Recorder(graph, tmp_path)
    good, bad = [], {
        "array lengths differ from the names": dict(name=["j1", "j2", "j3"], position=[0.0, 0.0]),
        "empty joint names": dict(name=[], position=[]),
        "duplicate joint names": dict(name=["j1", "j1", "j2"], position=[0.0, 0.0, 0.0]),
        "non-finite values": dict(name=["j1", "j2", "j3"], position=[0.0, float("nan"), 0.0]),
    }
    for k in range(30):
        message = joint_state(T0_NS + k * 2_000_000, JOINTS, [0.1 * k] * 3)
        if k % 3 == 1 and k < 24:
            message = JointState(header=message.header, **bad[list(bad)[(k // 3) % 4]])
        else:
            good.append(k)
        recorder.joint_states.publish(message)
    recorder.wait_for({"/joint_states": 30})
    recorder.stop()
    log = recorder.log.read_text()
    for reason in bad:
        assert log.count(reason) == 1, (reason, log)
    recording = read_bag(recorder.bag, joint_names=JOINTS)
    np.testing.assert_allclose(recording.q[:, 0], 0.1 * np.array(good))
    assert {reason.split(": ", 1)[1]: entry.count for reason, entry in recording.dropped.items()} == \
        {reason: 2 for reason in bad}


def test_mark_stage_service_writes_one_marker_and_republishes_it(graph, tmp_path):
    recorder = Recorder(graph, tmp_path)
    seen = []
    subscription = graph.node.create_subscription(ExperimentStage, "experiment_stage", seen.append, 10)
    client = graph.node.create_client(MarkStage, "/recorder/mark_stage")
    graph.spin_until(lambda: graph.node.count_publishers("/experiment_stage") >= 2,
                     what="the recorder's stage publisher")
    request = MarkStage.Request(kind=ExperimentStage.KIND_FRICTION, cycle=4, start=True,
                                joint_name="j2", speed_fraction=0.25, direction=-1, experiment_id="robot2_test1")
    before_ns = graph.node.get_clock().now().nanoseconds
    response = graph.call(client, request)
    after_ns = graph.node.get_clock().now().nanoseconds
    assert response.success, response.message
    rejected = graph.call(client, MarkStage.Request(kind=ExperimentStage.KIND_CUSTOM, start=True))
    assert not rejected.success
    assert "label must be set for kind KIND_CUSTOM" in rejected.message
    graph.spin_until(lambda: bool(seen), what="the marker republished on experiment_stage")
    recorder.joint_states.publish(joint_state(before_ns, JOINTS, [0.0, 0.0, 0.0]))
    recorder.wait_for({"/joint_states": 1})
    recorder.stop()
    graph.node.destroy_subscription(subscription)

    markers = read_stage_markers(recorder.bag)
    assert len(markers) == 1
    marker = markers[0]
    assert (marker.kind, marker.cycle, marker.start, marker.joint_name, marker.direction, marker.experiment_id) == \
        ("friction", 4, True, "j2", -1, "robot2_test1")
    assert marker.speed_fraction == 0.25
    assert before_ns * 1e-9 - 1e-6 <= marker.stamp <= after_ns * 1e-9 + 1e-6
    assert seen[0].joint_name == "j2" and seen[0].kind == ExperimentStage.KIND_FRICTION


def test_stages_of_an_unmarked_recording_are_detected_from_the_motion(graph, tmp_path):
    """Designed at 100 Hz: rest 0-1 s, j1 alone at -0.5 rad/s 1-2.5 s, rest 2.5-3.5 s, both joints
    moving sinusoidally 3.5-5.5 s, rest to 6.5 s; velocity steps at the boundaries."""
    recorder = Recorder(graph, tmp_path)
    time = np.arange(651) * 0.01
    qd = np.zeros((time.size, 2))
    qd[(time >= 1.0) & (time < 2.5), 0] = -0.5
    moving = (time >= 3.5) & (time < 5.5)
    qd[moving, 0] = 0.4 + 0.3 * np.sin(2.0 * np.pi * time[moving])
    qd[moving, 1] = 0.6 + 0.3 * np.cos(3.0 * np.pi * time[moving])
    q = np.cumsum(qd, axis=0) * 0.01
    for k in range(time.size):
        recorder.joint_states.publish(joint_state(T0_NS + round(time[k] * 1e9), ("a", "b"), q[k], qd[k]))
    recorder.wait_for({"/joint_states": time.size})
    recorder.stop()

    recording = read_bag(recorder.bag)
    assert recording.stage is None
    stages = detect_stages(recording.time - T0_NS * 1e-9, recording.qd, velocity_limits=[2.0, 2.0],
                           rest_threshold=0.05, joint_names=recording.joint_names)
    designed = [("rest", 0.0, 1.0), ("friction", 1.0, 2.5), ("rest", 2.5, 3.5), ("excitation", 3.5, 5.5),
                ("rest", 5.5, 6.5)]
    assert [s.kind for s in stages] == [kind for kind, _, _ in designed]
    for detected, (_, start, end) in zip(stages, designed):
        assert detected.start_time == pytest.approx(start, abs=0.1)
        assert detected.end_time == pytest.approx(end, abs=0.1)
    assert (stages[1].joint, stages[1].direction) == ("a", -1)
    assert stages[1].speed_fraction == pytest.approx(0.25, abs=0.01)


def test_effort_current_temperature_and_hydraulic_topics_go_to_their_bag_topics(graph, tmp_path):
    recorder = Recorder(graph, tmp_path, "effort_topic:=measured_efforts", "temperature_topic:=motor_temperatures",
                        "hydraulic_topic:=cylinders", "current_topic:=drive_currents")
    publishers = {name: graph.node.create_publisher(kind, name, 100) for name, kind in
                  [("measured_efforts", JointState), ("motor_temperatures", JointState),
                   ("cylinders", HydraulicCylinderState), ("drive_currents", JointState)]}
    for publisher in publishers.values():
        graph.spin_until(lambda p=publisher: p.get_subscription_count() > 0, what=f"recorder on {publisher.topic_name}")
    stamps = T0_NS + np.arange(5) * 10_000_000
    tau = np.arange(15.0).reshape(5, 3) - 7.0
    for k, stamp in enumerate(stamps):
        recorder.joint_states.publish(joint_state(stamp, JOINTS, [0.1 * k] * 3))
        effort = joint_state(stamp, JOINTS[::-1], [0.0] * 3)
        effort.effort = list(tau[k, ::-1])
        publishers["measured_efforts"].publish(effort)
        current = joint_state(stamp, JOINTS, [0.0] * 3)
        current.effort = list(tau[k] / 50.0)
        publishers["drive_currents"].publish(current)
    for stamp, celsius in [(stamps[0], 30.0), (stamps[4], 34.0)]:
        temperature = joint_state(stamp, JOINTS, [0.0] * 3)
        temperature.effort = [celsius] * 3
        publishers["motor_temperatures"].publish(temperature)
    publishers["cylinders"].publish(HydraulicCylinderState(name=["boom"], position=[0.2]))
    recorder.wait_for({"/joint_states": 5, "/joint_efforts": 5, "/joint_temperatures": 2,
                       "/hydraulic_cylinder_states": 1, "/motor_currents": 5})
    recorder.stop()
    for publisher in publishers.values():
        graph.node.destroy_publisher(publisher)

    recording = read_bag(recorder.bag, effort_topic="/joint_efforts", temperature_topic="/joint_temperatures")
    np.testing.assert_array_equal(recording.tau, tau)
    from_currents = read_bag(recorder.bag, current_topic="/motor_currents",
                             torque_from_current=lambda current: 50.0 * current)
    np.testing.assert_allclose(from_currents.tau, tau, rtol=1e-15)
    np.testing.assert_allclose(recording.temperature[:, 0], [30.0, 31.0, 32.0, 33.0, 34.0], atol=1e-9)


def test_a_driver_with_jittered_stamps_and_lost_messages_identifies_like_an_exact_grid(graph, tmp_path):
    """The path users came for: record beside a real driver, identify later. A plain publisher of
    JointState at 500 Hz whose stamps are 1.6-2.4 ms apart and which loses 2 % of its messages, against
    the same motion stamped on an exact grid: both bags identify (robot-dynid identify, derivatives from
    the recorded stamps) to the simulator's parameters and to each other within their std."""
    robot_file = REPO / "config" / "robots" / "er3a.yaml"
    robot = load_robot(robot_file)
    regressor = Regressor(robot, friction_model("coulomb_viscous"))
    simulator = SimulatedRobot(regressor, simulation_parameters(regressor, seed=3), noise_std=0.5)
    excitation = load_trajectory(REPO / "config" / "trajectories" / "er3a_table_4_1.yaml")
    period = float(np.max(excitation.period))
    rng = np.random.default_rng(12)
    grids = {"exact": np.arange(int(period * 500)) / 500.0}
    jittered = np.cumsum(rng.uniform(0.8, 1.2, grids["exact"].size)) / 500.0
    grids["jittered"] = jittered[rng.random(jittered.size) >= 0.02]
    models = {}
    for name, t in grids.items():
        q, qd, qdd = excitation.evaluate(t % period)
        tau = simulator.torques(q, qd, qdd, rng=7)
        directory = tmp_path / name
        directory.mkdir()
        recorder = Recorder(graph, directory)
        start = time.monotonic()
        for k in range(t.size):
            message = joint_state(T0_NS + round(t[k] * 1e9), robot.joint_names, q[k], qd[k])
            message.effort = tau[k].tolist()
            recorder.joint_states.publish(message)
            if k % 50 == 0:       # about 800 Hz: the recorder (a Python executor) keeps up on a loaded 2-core machine
                graph.spin_until(lambda: time.monotonic() > start + k / 800.0, what="pacing")
        recorder.wait_for({"/joint_states": t.size})
        recorder.stop()
        result = subprocess.run([str(pathlib.Path(sys.prefix) / "bin" / "robot-dynid"), "identify",
                                 "--robot", str(robot_file), "--data", str(recorder.bag),
                                 "--out", str(directory / "model.yaml")],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        models[name] = DynamicModel.load(directory / "model.yaml")
    truth = models["exact"].base.projection @ simulator.parameters
    for name, model in models.items():
        z = (model.values - truth) / model.std
        assert np.abs(z).max() < 4.5 and np.sqrt(np.mean(z**2)) < 1.5, (name, dict(zip(model.base.names, z.round(1))))
    exact, jittered = models["exact"], models["jittered"]
    z = (jittered.values - exact.values) / np.hypot(jittered.std, exact.std)
    assert np.abs(z).max() < 4.0 and np.sqrt(np.mean(z**2)) < 1.5, dict(zip(exact.base.names, z.round(1)))


@pytest.mark.parametrize("storage, min_free_space, disk_size, stop", [
    ("mcap", 0.0, "2m", "disk full"), ("sqlite3", 0.0, "2m", "disk full"),
    ("mcap", 2.0, "4m", r"only 1\.\d\d MB free on its file system, less than the minimum of 2 MB")])
def test_a_full_disk_stops_recording_the_node_stays_up_and_the_bag_is_closed_whole(
        graph, tmp_path, storage, min_free_space, disk_size, stop):
    """A real small file system (tmpfs) filled by joint states of 40 joints: without a minimum the disk fills
    (ENOSPC), with min_free_space 2 MB the recorder stops before, having warned at the start (less than twice
    that free). Either way: one error line, ~/mark_stage answers why, the node lives until Ctrl-C (exit 0), and
    the bag is closed with metadata counting exactly its messages, published ones in order."""
    from small_disk import small_disk
    names = [f"j{j}" for j in range(40)]
    with small_disk(tmp_path / "disk", disk_size) as disk:
        recorder = Recorder(graph, disk, f"storage:={storage}", f"min_free_space:={min_free_space}",
                            "flush_period:=0.1", log=tmp_path / "recorder.log")
        client = graph.node.create_client(MarkStage, "/recorder/mark_stage")
        sent, start = 0, time.monotonic()
        while sent % 50 or "recording stopped" not in recorder.log.read_text():
            assert sent < 30_000, recorder.log.read_text()
            recorder.joint_states.publish(joint_state(T0_NS + sent * 1_000_000, names, np.full(40, float(sent))))
            sent += 1
            if sent % 50 == 0:
                graph.spin_until(lambda: time.monotonic() > start + sent / 500.0, what="pacing")
        for _ in range(50):  # after the stop: these arrive and are not recorded
            recorder.joint_states.publish(joint_state(T0_NS + sent * 1_000_000, names, np.full(40, float(sent))))
            sent += 1
        response = graph.call(client, MarkStage.Request(kind=ExperimentStage.KIND_EXCITATION, start=True))
        assert not response.success and re.search(f"recording stopped: {stop}", response.message), response.message
        graph.spin_until(lambda: re.search(r"[1-9]\d* messages arrived since and were not recorded",
                                           recorder.log.read_text()),
                         what="the status log saying recording stopped")
        assert recorder.process.poll() is None
        recorder.stop()
        metadata = yaml.safe_load((recorder.bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
        claimed = metadata["message_count"]
        with AnyReader([recorder.bag]) as reader:
            assert sum(1 for _ in reader.messages()) == claimed == sum(c.msgcount for c in reader.connections)
        recorded = read_bag(recorder.bag, stage_topic=None).q[:, 0]
        # what was published, in order (a keep-last queue may lose messages while a loaded machine stalls the node)
        assert recorded.size == claimed and recorded[0] == 0 and np.all(np.diff(recorded) > 0)
        assert np.array_equal(recorded, np.round(recorded)) and 1000 < claimed < sent
    log = recorder.log.read_text()
    errors = [line for line in log.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and re.search(f"recording stopped: {stop}", errors[0]), log
    assert f"bag closed with {claimed} messages (/joint_states {claimed})" in errors[0] and "Traceback" not in log
    warnings = [line for line in log.splitlines() if "recording stops when less than" in line]
    assert len(warnings) == (1 if min_free_space else 0), log


def test_an_effort_topic_that_never_delivers_is_warned_once_and_identify_names_it(graph, tmp_path, capsys):
    """effort_topic set to a topic nobody publishes: after silent_topic_delay (0.5 s) of joint states the recorder
    warns once, the bag holds /joint_efforts with no message, and identify on the bag says that topic recorded
    nothing (not the velocity hint it gave before)."""
    from robot_dynid.cli import main
    robot_file = REPO / "config" / "robots" / "er3a.yaml"
    robot = load_robot(robot_file)
    recorder = Recorder(graph, tmp_path, "effort_topic:=silent_efforts", "silent_topic_delay:=0.5")
    start = time.monotonic()
    k = 0
    while k < 400 or "delivered no message" not in recorder.log.read_text():
        assert time.monotonic() < start + 30.0, recorder.log.read_text()
        recorder.joint_states.publish(joint_state(T0_NS + k * 5_000_000, robot.joint_names, np.full(6, 1e-3 * k),
                                                  np.full(6, 0.2)))
        k += 1
        graph.spin_until(lambda: time.monotonic() > start + k / 200.0, what="pacing")
    recorder.wait_for({"/joint_states": k})
    recorder.stop()
    log = recorder.log.read_text()
    warnings = [line for line in log.splitlines() if "delivered no message" in line]
    assert len(warnings) == 1, log
    assert "effort_topic /silent_efforts (recorded as /joint_efforts) delivered no message in 0.5 s of joint states; " \
           "it has 0 publisher(s): check that the driver publishes it" in warnings[0], warnings[0]

    assert main(["identify", "--robot", str(robot_file), "--data", str(recorder.bag),
                 "--out", str(tmp_path / "model.yaml")]) == 2
    error = capsys.readouterr().err
    assert "the joint states on /joint_states carry no effort, and the bag's effort topic /joint_efforts recorded " \
           "no message" in error, error


def test_motor_states_go_to_their_bag_topic_and_identify_reads_them_by_default(graph, tmp_path, capsys):
    """A driver of the coupled-wrist ER3A publishing only motor-side states (motors m1..m6: angles, speeds and
    torques at the motor, computed here by the robot file's rows, qm6 = 50 (q5 + q6), and by solving tau = T^T taum
    by hand): the recorder's motor_states_topic goes to /motor_states, and robot-dynid identify, with its default
    options, identifies from that bag the model a joint-side CSV of the same samples gives."""
    from robot_dynid.cli import main
    from robot_dynid.recordings.bag_io import ns_to_seconds
    from robot_dynid.recordings.csv_io import write_csv
    from robot_dynid.recordings.recording import Recording
    robot_file = REPO / "config" / "robots" / "er3a_coupled_wrist.yaml"
    robot = load_robot(robot_file)
    regressor = Regressor(robot, friction_model("coulomb_viscous"))
    simulator = SimulatedRobot(regressor, simulation_parameters(regressor, seed=3), noise_std=0.2)
    excitation = load_trajectory(REPO / "config" / "trajectories" / "er3a_table_4_1.yaml")
    t = np.arange(2500) / 250.0
    q, qd, qdd = excitation.evaluate(t)
    tau = simulator.torques(q, qd, qdd, rng=7)

    def motor(x):
        return np.column_stack([121 * x[:, 0], 121 * x[:, 1], 101 * x[:, 2], 75.48 * x[:, 3], 81 * x[:, 4],
                                50 * (x[:, 4] + x[:, 5])])

    taum = np.column_stack([tau[:, 0] / 121, tau[:, 1] / 121, tau[:, 2] / 101, tau[:, 3] / 75.48,
                            (tau[:, 4] - tau[:, 5]) / 81, tau[:, 5] / 50])
    qm, qdm = motor(q), motor(qd)
    recorder = Recorder(graph, tmp_path, "motor_states_topic:=drive/motor_states", "queue_depth:=5000")
    publisher = graph.node.create_publisher(JointState, "drive/motor_states", 5000)
    graph.spin_until(lambda: publisher.get_subscription_count() > 0, what="recorder on drive/motor_states")
    stamps = T0_NS + np.round(t * 1e9).astype(np.int64)
    start = time.monotonic()
    for k, stamp in enumerate(stamps):
        message = joint_state(stamp, ["m1", "m2", "m3", "m4", "m5", "m6"], qm[k], qdm[k])
        message.effort = taum[k].tolist()
        publisher.publish(message)
        if k % 50 == 0:
            graph.spin_until(lambda: time.monotonic() > start + k / 800.0, what="pacing")
    recorder.wait_for({"/motor_states": t.size})
    recorder.stop()
    graph.node.destroy_publisher(publisher)

    joint_side = tmp_path / "joint_side.csv"
    write_csv(joint_side, Recording.from_arrays(robot.joint_names, ns_to_seconds(stamps), q, qd, tau=tau))
    models = {}
    for name, data in (("bag", recorder.bag), ("csv", joint_side)):
        assert main(["identify", "--robot", str(robot_file), "--data", str(data),
                     "--out", str(tmp_path / f"{name}.yaml")]) == 0, capsys.readouterr().err
        models[name] = DynamicModel.load(tmp_path / f"{name}.yaml")
    np.testing.assert_allclose(models["bag"].values, models["csv"].values, rtol=1e-6,
                               atol=1e-9 * np.abs(models["csv"].values).max())


def test_recorders_sharing_an_output_directory_each_get_a_bag(graph, tmp_path):
    """Two recorders started together with the same output_directory (timestamped bag names, the same second
    likely): both run, each writes its own bag, both close cleanly on SIGINT."""
    logs = [tmp_path / f"recorder{k}.log" for k in (1, 2)]
    processes = [start_node("recorder", "-r", f"__node:=recorder{k}", "-p", f"output_directory:={tmp_path}",
                            "-p", "status_period:=0.05", log_path=log) for k, log in zip((1, 2), logs)]
    try:
        graph.spin_until(lambda: all(log.exists() and "no message recorded yet" in log.read_text() for log in logs),
                         what="both recorders running")
    finally:
        for process in processes:
            process.send_signal(signal.SIGINT)
        codes = [process.wait(timeout=10.0) for process in processes]
    assert codes == [0, 0], [log.read_text() for log in logs]
    bags = sorted(path.name for path in tmp_path.iterdir() if path.is_dir())
    assert len(bags) == 2 and all(name.startswith("robot_dynid_") for name in bags), bags
