"""The identifier node from its installed executable, over real DDS, fed simulated joint states.

One excitation stage (12 s at 200 Hz of a Fourier trajectory, torques of
:class:`~robot_dynid.experiment.simulation.SimulatedRobot` with 0.2 N m noise) is published with stamps and
ExperimentStage markers; the model that comes back must predict the simulator's noise-free
torques on a different trajectory. Expected prediction error: the parameter error of
~2000 x 6 samples with 0.2 N m noise is a few 1e-2 N m in torque, so 0.1 N m RMS per joint
leaves room for the Savitzky-Golay accelerations.
"""
import math
import re
import time

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from robot_dynid.experiment.simulation import SimulatedRobot, simulation_parameters
from robot_dynid.experiment.trajectories import FourierTrajectory, time_grid
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.msg import ExperimentStage, IdentificationStatus, IdentifiedModel
from robot_dynid.nodes.node_runtime import MODEL_QOS
from ros_graph import identifier_topics, start_identifier, start_node, stop_node
import torque_cases
from torque_cases import write_description

RATE = 200.0  # Hz
TOLERANCE = 0.1  # N m, RMS per joint on held-out motion


@pytest.fixture(scope="module")
def simulator(er3a_robot):
    robot = er3a_robot
    regressor = Regressor(robot, friction_model("coulomb_viscous"))
    return robot, SimulatedRobot(regressor, simulation_parameters(regressor, seed=5), noise_std=0.2)


def motion_at(robot, seed, stamps):
    """q, qd, qdd (N, 6) of a random Fourier trajectory at ``stamps`` [s]."""
    rng = np.random.default_rng(seed)
    scale = 0.1 * np.array([limit.velocity for limit in robot.limits])[:, None]
    trajectory = FourierTrajectory(robot.joint_names, period=6.0, q0=np.zeros(6),
                                   a=rng.normal(size=(6, 4)) * scale, b=rng.normal(size=(6, 4)) * scale)
    return trajectory.evaluate(stamps)


def motion(robot, seed, duration):
    t = time_grid(duration, dt=1.0 / RATE)
    return (t, *motion_at(robot, seed, t))


@pytest.fixture(scope="module")
def identifier(tmp_path_factory, graph):
    directory = tmp_path_factory.mktemp("identifier")
    process = start_node("identifier", "-p", f"model_file:={directory / 'model.yaml'}",
                         log_path=directory / "node.log")
    yield graph, process, directory
    assert stop_node(process) == 0, (directory / "node.log").read_text()


def stamp_of(seconds):
    sec = math.floor(seconds)
    return {"sec": sec, "nanosec": round((seconds - sec) * 1e9)}


def joint_state(names, stamp, position, velocity, effort):
    message = JointState(name=names, position=list(position), velocity=list(velocity), effort=list(effort))
    message.header.stamp.sec, message.header.stamp.nanosec = stamp_of(stamp).values()
    return message


def pace(graph, t0, k):
    """Publish at ~1 kHz so the node's reader history never overflows."""
    if k % 50 == 0:
        graph.spin_until(lambda: time.monotonic() > t0 + k / 1000.0, what="pacing")


def stage_marker(start, seconds=None):
    """An excitation boundary stamped ``seconds`` (None: unstamped, i.e. at its arrival)."""
    marker = ExperimentStage(experiment_id="test", kind=ExperimentStage.KIND_EXCITATION, start=start)
    if seconds is not None:
        marker.header.stamp.sec, marker.header.stamp.nanosec = stamp_of(seconds).values()
    return marker


def test_stage_end_publishes_a_model_that_predicts_held_out_motion(identifier, simulator):
    graph, process, directory = identifier
    robot, sim = simulator
    node = graph.node
    late_models = []
    states, stages, models, statuses = identifier_topics(graph, "")     # the node's default topics

    stages.publish(stage_marker(start=True))
    graph.spin_until(lambda: any(s.state == IdentificationStatus.STATE_COLLECTING for s in statuses),
                     what="identifier collecting")
    names = list(reversed(robot.joint_names)) + ["gripper"]
    states.publish(JointState(name=names[1:], position=[0.0] * 6, velocity=[0.0] * 6, effort=[0.0] * 6))
    t, q, qd, qdd = motion(robot, seed=1, duration=12.0)
    tau = sim.torques(q, qd, qdd, rng=1)
    t0 = time.monotonic()
    for k in range(len(t)):
        if k == len(t) - 100:  # the end marker overtakes the stage's last 100 samples; its stamp still counts
            stages.publish(stage_marker(start=False, seconds=1000.0 + t[-1] + 0.5 / RATE))
        states.publish(joint_state(names, 1000.0 + t[k], list(q[k, ::-1]) + [0.0], list(qd[k, ::-1]) + [0.0],
                                   list(tau[k, ::-1]) + [0.0]))
        if k == 1000:  # a NaN sample between two others: dropped and counted
            states.publish(joint_state(names, 1000.0 + t[k] + 0.5 / RATE, [math.nan] * 7, [0.0] * 7, [0.0] * 7))
        pace(graph, t0, k)
    graph.spin_until(lambda: models, timeout=30.0, what="an IdentifiedModel after the stage end")

    msg = models[0]
    assert process.poll() is None
    assert msg.version == 1 and msg.method == "ols" and msg.robot_name == robot.name
    assert list(msg.joint_names) == list(robot.joint_names)
    assert len(msg.base_parameter_values) == len(msg.base_parameter_names) == len(msg.base_parameter_std)
    # every sample stamped up to the end marker's stamp is in the stage; 20 % of them are held out
    assert msg.n_samples == len(t) - round(0.2 * len(t)) and len(msg.residual_rms) == 6
    model = DynamicModel.from_yaml(msg.artifact_yaml)
    np.testing.assert_allclose(model.values, msg.base_parameter_values)
    # the robust std over the stage's time blocks, as the artifact says, and the status says which in words
    assert msg.std_method == model.std_method == "block" and msg.interval_dof == model.interval_dof >= 4
    graph.spin_until(lambda: statuses[-1].std_description.startswith("std: robust: jackknife over time blocks"),
                     what="the status saying what its std are")
    assert DynamicModel.load(directory / "model.yaml").values.tolist() == model.values.tolist()
    _, q2, qd2, qdd2 = motion(robot, seed=9, duration=6.0)
    error = model.torque(q2, qd2, qdd2) - sim.torques(q2, qd2, qdd2, noise=False)
    assert np.sqrt(np.mean(error**2, axis=0)).max() < TOLERANCE

    graph.spin_until(lambda: statuses[-1].samples_dropped >= 1, what="the NaN sample counted as dropped")
    node.create_subscription(IdentifiedModel, "identified_model", late_models.append, MODEL_QOS)
    graph.spin_until(lambda: late_models, what="the model for a late (transient-local) subscriber")
    assert late_models[0].version == 1

    response = graph.call(node.create_client(Trigger, "identifier/identify"), Trigger.Request())
    assert response.success, response.message
    assert "version 2" in response.message
    graph.spin_until(lambda: len(models) == 2, what="model version 2 after ~/identify")
    assert models[1].version == 2 and process.poll() is None


@pytest.fixture()
def fresh_identifier(tmp_path, graph):
    """A second identifier on its own topics, with no model yet, making physically consistent fits with
    armature columns, accelerations over 0.065 s."""
    process = start_identifier("identifier_fresh", "fresh", tmp_path / "node.log", "-p", "consistent:=true",
                               "-p", "armature:=true", "-p", "derivative_window:=0.065")
    states, stages, models, statuses = identifier_topics(graph, "fresh")
    yield graph, states, stages, {"models": models, "statuses": statuses}
    assert stop_node(process) == 0, (tmp_path / "node.log").read_text()


def play_stage(graph, states, stages, stamps, q, qd, tau, extra=lambda k: []):
    """One excitation stage: start marker, the samples (plus ``extra(k)`` messages), end marker."""
    stages.publish(stage_marker(start=True, seconds=stamps[0] - 0.001))
    t0 = time.monotonic()
    names = [f"j{j + 1}" for j in range(q.shape[1])]
    for k in range(len(stamps)):
        states.publish(joint_state(names, stamps[k], q[k], qd[k], tau[k]))
        for message in extra(k):
            states.publish(message)
        pace(graph, t0, k)
    stages.publish(stage_marker(start=False, seconds=stamps[-1] + 0.001))


def test_jittered_stamps_lost_and_bad_messages_still_give_a_good_model(fresh_identifier, simulator):
    """A real driver: stamps 20 % off the grid, 2 % of the messages lost, one corrupt torque, one message
    with a missing effort value. The bad ones are counted by reason; the model still predicts."""
    graph, states, stages, topics = fresh_identifier
    robot, sim = simulator
    rng = np.random.default_rng(3)
    stamps = np.cumsum(rng.uniform(0.8, 1.2, int(12.0 * RATE))) / RATE
    stamps = stamps[rng.random(stamps.size) >= 0.02]
    q, qd, qdd = motion_at(robot, seed=1, stamps=stamps)
    tau = sim.torques(q, qd, qdd, rng=1)
    names = list(robot.joint_names)

    def bad_messages(k):
        if k == 700:
            return [joint_state(names, 2000.0 + stamps[k] + 0.0002, q[k], qd[k], [0, 0, 1e300, 0, 0, 0]),
                    joint_state(names, 2000.0 + stamps[k] + 0.0003, q[k], qd[k], [0, 0, 0, 0, 0])]
        return []

    play_stage(graph, states, stages, 2000.0 + stamps, q, qd, tau, bad_messages)
    graph.spin_until(lambda: topics["models"], timeout=30.0, what="an IdentifiedModel from jittered stamps")
    model = DynamicModel.from_yaml(topics["models"][0].artifact_yaml)
    assert model.standard is not None and model.metrics["plausibility"]["consistent"] is True   # consistent:=true
    assert model.armature                                                                         # armature:=true
    derivatives = model.provenance["conditioning"]["recordings"]["stream"]["derivatives"]   # derivative_window:=0.065
    assert derivatives["window_samples"] in (11, 13, 15), derivatives     # 13 steps of 1/RATE, +-20 % jitter
    assert abs(derivatives["window_s"] - 0.065) < 1.2 / RATE, derivatives
    assert model.provenance["conditioning"]["settings"]["accelerations_from_positions"] is True
    _, q2, qd2, qdd2 = motion(robot, seed=9, duration=6.0)
    error = model.torque(q2, qd2, qdd2) - sim.torques(q2, qd2, qdd2, noise=False)
    assert np.sqrt(np.mean(error**2, axis=0)).max() < TOLERANCE
    graph.spin_until(lambda: topics["statuses"][-1].samples_dropped == 2, what="the two bad messages counted")
    warning = topics["statuses"][-1].warnings[-1]
    assert "array lengths differ from the names: 1" in warning and "|torque| of j3 above" in warning, warning


def test_the_first_model_is_not_published_when_it_fails_the_quality_gate(fresh_identifier, simulator):
    graph, states, stages, topics = fresh_identifier
    robot, sim = simulator
    t, q, qd, qdd = motion(robot, seed=1, duration=12.0)
    scrambled = np.random.default_rng(0).permutation(sim.torques(q, qd, qdd, rng=1))  # torques that fit nothing
    play_stage(graph, states, stages, 3000.0 + t, q, qd, scrambled)
    graph.spin_until(lambda: "rejected" in topics["statuses"][-1].message, timeout=30.0,
                     what="the rejection in IdentificationStatus")
    assert "hold-out RSD" in topics["statuses"][-1].message and "no model in use yet" in topics["statuses"][-1].message
    assert topics["statuses"][-1].state == IdentificationStatus.STATE_IDLE   # never CONVERGED without a model
    deadline = time.monotonic() + 1.0   # a model would have been published before the status
    graph.spin_until(lambda: time.monotonic() > deadline, what="a second to pass")
    assert topics["models"] == []

    # a good stage after the rejection: accepted and published (the node logs it at another severity than
    # the rejection, from the same place; rclpy refuses a call site whose severity changes)
    play_stage(graph, states, stages, 3100.0 + t, q, qd, sim.torques(q, qd, qdd, rng=2))
    graph.spin_until(lambda: topics["models"], timeout=30.0, what="a model from the good stage after the rejection")
    assert topics["models"][0].version == 1
    graph.spin_until(lambda: "version 1 accepted" in topics["statuses"][-1].message, what="the acceptance status")
    assert topics["statuses"][-1].state == IdentificationStatus.STATE_CONVERGED


def test_a_model_file_that_cannot_be_written_is_a_status_warning_and_the_model_is_still_published(
        tmp_path, simulator, graph):
    """A directory takes model_file's place after the start: the accepted model cannot be written there. The
    node says so in one log line and in IdentificationStatus, publishes the model and goes on."""
    model_file = tmp_path / "model.yaml"
    process = start_identifier("identifier_unwritable", "unwritable", tmp_path / "node.log",
                               "-p", f"model_file:={model_file}")
    try:
        states, stages, models, statuses = identifier_topics(graph, "unwritable")
        model_file.mkdir()
        robot, sim = simulator
        t, q, qd, qdd = motion(robot, seed=1, duration=12.0)
        play_stage(graph, states, stages, 4000.0 + t, q, qd, sim.torques(q, qd, qdd, rng=1))
        graph.spin_until(lambda: models, timeout=30.0, what="the model, published though its file is not written")
        graph.spin_until(lambda: "not written to model_file" in statuses[-1].message, what="the status saying so")
        status = statuses[-1]
        assert status.state == IdentificationStatus.STATE_CONVERGED and models[0].version == 1
        assert any(f"model version 1 not written to model_file {model_file}: " in warning and "Is a directory" in
                   warning for warning in status.warnings), status.warnings
        assert process.poll() is None and model_file.is_dir()
    finally:
        stopped = stop_node(process)
    log = (tmp_path / "node.log").read_text()
    assert stopped == 0 and "Traceback" not in log, log
    assert len([line for line in log.splitlines() if "not written to model_file" in line]) == 1, log


def test_a_quality_gate_set_while_the_node_runs_applies_to_the_next_identification(fresh_identifier, simulator):
    """``ros2 param set /identifier_fresh max_holdout_rsd ...``: out of range, refused with the start's
    message; within, the next identification is judged by it (and again after a second change)."""
    graph, states, stages, topics = fresh_identifier
    robot, sim = simulator
    [refused] = graph.set_parameters("/identifier_fresh", max_holdout_rsd=0.0)
    assert not refused.successful
    assert refused.reason == "parameter max_holdout_rsd must be finite and in (0, 1] [1], got 0.0"
    assert graph.set_parameters("/identifier_fresh", max_holdout_rsd=1e-4)[0].successful
    t, q, qd, qdd = motion(robot, seed=1, duration=12.0)
    play_stage(graph, states, stages, 4000.0 + t, q, qd, sim.torques(q, qd, qdd, rng=1))
    graph.spin_until(lambda: "rejected" in topics["statuses"][-1].message, timeout=30.0,
                     what="the rejection by the gate set at run time")
    assert "is not below max_holdout_rsd = 0.0001" in topics["statuses"][-1].message, topics["statuses"][-1].message
    assert topics["models"] == []
    assert graph.set_parameters("/identifier_fresh", max_holdout_rsd=0.5)[0].successful
    response = graph.call(graph.node.create_client(Trigger, "/identifier_fresh/identify"), Trigger.Request())
    assert response.success, response.message
    graph.spin_until(lambda: topics["models"], timeout=30.0, what="the model the restored gate accepts")


def test_with_use_sim_time_joint_states_before_the_first_clock_message_wait_for_their_stage_marker(
        tmp_path, simulator, graph):
    """ROS time reads 0 until /clock runs (use_sim_time). Joint states held then (stage_latency 0.5 s) must not
    count as arrived at 0, or the first /clock (1000 s) reads as joint states stopped for 1000 s and releases them
    before their stage's start marker, still on its way though stamped before them: every sample of the stage is
    in the model (before the fix, the first 40 were not)."""
    log = tmp_path / "node.log"
    process = start_identifier("identifier_sim_time", "sim_time", log, "-p", "use_sim_time:=true")
    try:
        states, stages, models, statuses = identifier_topics(graph, "sim_time", status=False)    # none before /clock
        clock = graph.node.create_publisher(Clock, "/clock", 10)
        graph.wait_until_spinning("/identifier_sim_time")

        def tick(seconds):
            clock.publish(Clock(clock=Time(sec=math.floor(seconds), nanosec=round(seconds % 1.0 * 1e9))))

        robot, sim = simulator
        t, q, qd, qdd = motion(robot, seed=1, duration=12.0)
        tau = sim.torques(q, qd, qdd, rng=1)
        stamps, names, early = 100.0 + t, list(robot.joint_names), 40
        for k in range(early):      # 0.2 s of the stage, before any /clock
            states.publish(joint_state(names, stamps[k], q[k], qd[k], tau[k]))
        deadline = time.monotonic() + 0.5       # for the node to take them before the first /clock
        graph.spin_until(lambda: time.monotonic() > deadline, what="half a second")
        deadline = time.monotonic() + 1.0       # /clock at 1000 s for a second, then the marker
        graph.spin_until(lambda: (tick(1000.0), statuses and time.monotonic() > deadline)[1],
                         what="the identifier taking /clock")
        stages.publish(stage_marker(start=True, seconds=stamps[0] - 0.001))
        t0 = time.monotonic()
        for k in range(early, len(t)):
            states.publish(joint_state(names, stamps[k], q[k], qd[k], tau[k]))
            if k % 50 == 0:
                tick(1000.0 + time.monotonic() - t0)
            pace(graph, t0, k - early)
        stages.publish(stage_marker(start=False, seconds=stamps[-1] + 0.001))
        graph.spin_until(lambda: (tick(1000.0 + time.monotonic() - t0), models)[1], timeout=30.0,
                         what="the model of the stage")
        assert models[0].n_samples == len(t) - round(0.2 * len(t))     # 20 % held out
        graph.node.destroy_publisher(clock)
    finally:
        stopped = stop_node(process)
    assert stopped == 0, log.read_text()


def test_the_torque_check_parameter_refuses_currents_or_lets_them_through(tmp_path, graph):
    """Two identifiers of a UR5 whose description carries inertial data (torque_cases): one with the check (the
    default), one with ``check_torque_scale:=false``. A stage of motor currents [A] recorded as efforts: the first
    says why in IdentificationStatus (STATE_ERROR, the check's wording), the second identifies a model from it."""
    robot_file = write_description(torque_cases.described(), tmp_path / "ur5_prior.yaml")
    checked = start_identifier("identifier_checked", "checked", tmp_path / "checked.log", "-p",
                               f"robot_file:={robot_file}")
    unchecked = start_identifier("identifier_unchecked", "unchecked", tmp_path / "unchecked.log", "-p",
                                 f"robot_file:={robot_file}", "-p", "check_torque_scale:=false")
    try:
        topics = {prefix: identifier_topics(graph, prefix) for prefix in ("checked", "unchecked")}
        currents = torque_cases.run(currents=True).recording
        names, stamps = list(currents.joint_names), 5000.0 + currents.time
        for states, stages, _, _ in topics.values():
            stages.publish(stage_marker(start=True, seconds=stamps[0] - 0.001))
        t0 = time.monotonic()
        for k in range(currents.n_samples):
            message = joint_state(names, stamps[k], currents.q[k], currents.qd[k], currents.tau[k])
            for states, _, _, _ in topics.values():
                states.publish(message)
            pace(graph, t0, k)
        for states, stages, _, _ in topics.values():
            stages.publish(stage_marker(start=False, seconds=stamps[-1] + 0.001))
        statuses = topics["checked"][3]
        graph.spin_until(lambda: statuses[-1].state == IdentificationStatus.STATE_ERROR, timeout=30.0,
                         what="the checked identifier refusing the currents")
        assert re.search(r"identification failed: stage excitation of the stream: joint (shoulder_lift|elbow)_joint: "
                         r"the recorded torques are 0\.0\d+ times .* motor currents \[A\] passed as torques",
                         statuses[-1].message), statuses[-1].message
        graph.spin_until(lambda: topics["unchecked"][2], timeout=30.0, what="the unchecked identifier's model")
        assert topics["checked"][2] == []
    finally:
        stopped = [stop_node(process) for process in (checked, unchecked)]
    assert stopped == [0, 0], (tmp_path / "checked.log").read_text() + (tmp_path / "unchecked.log").read_text()
