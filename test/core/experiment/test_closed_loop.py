"""The closed loop (a MuJoCo arm under a 1 kHz PD plus feed-forward) against what must hold whatever our code does:
MuJoCo's own inverse dynamics as feed-forward leaves next to no tracking error, PD alone sags by ``g(q) / kp`` with
``g`` from pinocchio's RNEA, and the hold-last-value rule, the trajectory efforts and the metrics on constructed
signals. Not collected without mujoco (test/conftest.py)."""
import dataclasses
import math

import numpy as np
import pytest

from robot_dynid.errors import DataError, DynIdError
from robot_dynid.experiment.closed_loop import (
    ControlledArm, ControlledSamples, ControlSettings, EffortSchedule, FeedforwardHold, feedforward_latency,
    join_samples, recovery_time, tracking_metrics, true_parameter_model, windowed_rms)
from robot_dynid.experiment.excitation import random_excitation
from robot_dynid.experiment.mujoco_engine import MUJOCO_REVERSAL_LEAD, MujocoRobot
from robot_dynid.experiment.trajectories import time_grid
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.friction import friction_model
from robot_dynid.model.payload import Payload
from robot_dynid.model.robot_description import JointSimulation
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from rnea_reference import rnea_torques

FRICTION = friction_model("coulomb_viscous_lead", reversal_lead=MUJOCO_REVERSAL_LEAD)


def er3a_mujoco(friction_loss=True):
    """config/robots/er3a_mujoco.yaml, or without its friction loss (whose dead band leaves a pose at rest
    anywhere within it)."""
    robot = load_robot(find_package_file("config", "robots", "er3a_mujoco.yaml"))
    return robot if friction_loss else dataclasses.replace(robot, simulation=tuple(
        JointSimulation(entry.armature, entry.damping, 0.0) for entry in robot.simulation))


def play(arm, points, q, qd, qdd, start, end, feedforward=None, efforts=None, batch=20):
    """Command the trajectory (points at ``start + points``), stream ``feedforward(times) -> (N, n)`` as one
    forward command per cycle (arriving just before the cycle), integrate up to ``end`` [s]; the joined samples."""
    arm.command(arm.follower.joint_names, points, q, qd, qdd, efforts if efforts is not None else (),
                start_time=start, received_time=0.0)
    cycles = np.arange(round(end * arm.settings.control_rate)) / arm.settings.control_rate
    values = feedforward(cycles) if feedforward is not None else None
    batches = []
    for k, t in enumerate(cycles):
        if values is not None:
            arm.feedforward.receive(t - 1e-6, values[k])
        if k % batch == batch - 1:
            batches.append(arm.advance(t))
    return join_samples(batches)


@pytest.mark.parametrize("path", ["forward", "trajectory"])
def test_mujocos_own_inverse_dynamics_as_feedforward_tracks_next_to_perfectly_at_low_gains(path):
    """At 1 Hz (gains 25x below the default) PD alone misses by 0.15 to 0.5 rad RMS on the joints gravity loads;
    MuJoCo's inverse dynamics of the reference as feed-forward (either path: a forward command every cycle, or the
    efforts of 1 ms trajectory points) leaves only what the torque held over each 1 ms cycle (semi-implicit Euler)
    lets drift and the weak PD corrects slowly: seen 0.12 to 0.37 mrad RMS, 500 to 2000 times less."""
    robot = er3a_mujoco()
    simulator = MujocoRobot(robot, FRICTION, seed=2)
    trajectory = random_excitation(robot, harmonics=3, period=3.0, amplitude_fraction=0.4, seed=5)
    points = time_grid(3.0, dt=0.001 if path == "trajectory" else 0.01)
    q, qd, qdd = trajectory.evaluate(points)
    settings = ControlSettings(bandwidth=1.0)
    errors = {}
    for case in ("pd", "inverse dynamics"):
        arm = ControlledArm(MujocoRobot(robot, FRICTION, seed=2), 1000.0, initial_positions=q[0], settings=settings)
        truth = (lambda times: simulator.torques(*arm.follower.sample(times), noise=False))
        if case == "pd":
            samples = play(arm, points, q, qd, qdd, 0.5, 3.6)
        elif path == "forward":
            samples = play(arm, points, q, qd, qdd, 0.5, 3.6, feedforward=truth)
        else:
            samples = play(arm, points, q, qd, qdd, 0.5, 3.6, efforts=simulator.torques(q, qd, qdd, noise=False))
        errors[case] = tracking_metrics(samples, 0.5, 3.5).rms_error
    assert np.all(errors["inverse dynamics"] < 6e-4)
    assert np.all(errors["pd"][1:] > 0.1) and np.all(errors["pd"][1:] > 300 * errors["inverse dynamics"][1:])


def test_pd_alone_holds_a_static_pose_below_it_by_gravity_over_kp():
    """No friction loss; after 3 s at rest the PD's torque ``kp (q_d - q)`` balances gravity at the pose reached,
    ``g(q)`` from pinocchio's RNEA with the inertials MuJoCo simulates: the sag is ``g(q) / kp`` within 5 % on every
    joint gravity loads."""
    robot = er3a_mujoco(friction_loss=False)
    simulator = MujocoRobot(robot, friction_model("coulomb_viscous"), seed=4)
    pose = np.array([0.3, -0.6, 0.5, 0.4, 0.8, 0.0])
    kp = np.array([3000.0, 2500.0, 900.0, 120.0, 60.0, 20.0])
    kd = 2.0 * np.sqrt(kp * np.array([4.0, 3.5, 1.0, 0.11, 0.063, 0.018]))
    settings = ControlSettings(kp=tuple(kp), kd=tuple(kd))
    arm = ControlledArm(simulator, 1000.0, initial_positions=pose, settings=settings)
    samples = arm.advance(3.0)
    q = samples.q[-1]
    assert np.max(np.abs(samples.qd[-1])) < 1e-6                # at rest
    gravity = rnea_torques(robot, simulator.parameters[:60], q, np.zeros(6), np.zeros(6))
    loaded = np.abs(gravity) > 0.5
    assert loaded.sum() >= 3
    np.testing.assert_allclose((pose - q)[loaded], (gravity / kp)[loaded], rtol=0.05)


def test_a_forward_command_is_held_for_the_timeout_then_zero_and_a_delay_shifts_it():
    hold = FeedforwardHold(2, timeout=0.05, delay=0.01, keep_history=True)
    hold.receive(0.100, [1.0, 2.0])
    hold.receive(0.120, [3.0, 4.0])
    hold.receive(0.119, [5.0, 6.0])         # arrived out of order: applied after the one before it
    times = np.array([0.105, 0.110, 0.129, 0.130, 0.179, 0.181, 0.300])
    values, age = hold.sample(times)
    np.testing.assert_array_equal(values, [[0, 0], [1, 2], [1, 2], [5, 6], [5, 6], [0, 0], [0, 0]])
    np.testing.assert_allclose(age, [math.nan, 0.0, 0.019, 0.0, 0.049, math.nan, math.nan], atol=1e-12)
    assert [round(arrival, 9) for arrival, _ in hold.history] == [0.110, 0.130, 0.130]
    with pytest.raises(DataError, match=r"feed-forward must have shape \(2 joints,\), got \(3,\)"):
        hold.receive(0.4, [1.0, 2.0, 3.0])
    with pytest.raises(DataError, match=r"feed-forward must be finite \[N m\], got nan at joint 1"):
        hold.receive(0.4, [1.0, math.nan])


def test_trajectory_efforts_are_linear_between_points_and_replaced_from_receipt():
    schedule = EffortSchedule(("a", "b", "c"))
    table = schedule.table(("c", "a"), [[1.0, 10.0], [3.0, 20.0], []][:2])
    np.testing.assert_array_equal(table, [[10.0, 0.0, 1.0], [20.0, 0.0, 3.0]])     # b not named: 0
    schedule.replace([1.0, 2.0], table, received_time=0.5)
    schedule.replace([3.0, 4.0], None, received_time=1.75)         # a trajectory without efforts
    out = schedule.sample(np.array([0.0, 0.6, 1.5, 1.74, 1.8, 5.0]))
    np.testing.assert_allclose(out[:, 0], [0.0, 10.0, 15.0, 17.4, 0.0, 0.0])
    np.testing.assert_allclose(out[:, 2], [0.0, 1.0, 2.0, 2.48, 0.0, 0.0])
    with pytest.raises(DataError, match="point 1: effort has 1 values, expected 2"):
        schedule.table(("a", "b"), [[1.0, 2.0], [3.0]])
    with pytest.raises(DataError, match="'z'"):
        schedule.table(("z",), [[1.0]])


def test_bad_control_settings_are_one_line_each(er3a_robot):
    simulator = MujocoRobot(er3a_mujoco(), FRICTION, seed=0)
    with pytest.raises(DynIdError, match=r"control_rate 1000 Hz must be a whole multiple of the sample rate 300 Hz"):
        ControlledArm(simulator, 300.0)
    with pytest.raises(DynIdError, match=r"kp must have shape \(6 joints,\), got \(2,\)"):
        ControlledArm(simulator, 500.0, settings=ControlSettings(kp=(1.0, 2.0)))
    with pytest.raises(DynIdError, match=r"kd .*>= 0"):
        ControlledArm(simulator, 500.0, settings=ControlSettings(kd=(1.0, -2.0, 1.0, 1.0, 1.0, 1.0)))
    with pytest.raises(DynIdError, match=r"feedforward_timeout must be finite and in \(0, 60\] \[s\], got 0"):
        ControlSettings(feedforward_timeout=0.0)
    with pytest.raises(DynIdError, match=r"bandwidth must be finite and in \(0, 50\] \[Hz\]"):
        ControlSettings(bandwidth=100.0)
    arm = ControlledArm(simulator, 500.0)
    with pytest.raises(DynIdError, match="payload frame 'tool0' is not fixed to the last link"):
        arm.attach_payload(Payload("tool0", 1.0, (0.0, 0.0, 0.0), (0.01, 0.0, 0.0, 0.01, 0.0, 0.01)), 1.0)


def test_a_payload_attached_mid_run_is_the_model_with_it():
    """PD alone, no friction loss: the torque the arm needs at rest once the payload is fixed to it (at 0.5 s) is
    the model of the true parameters with the payload attached: MuJoCo's physics and the regressor's payload
    columns agree."""
    robot = er3a_mujoco(friction_loss=False)
    simulator = MujocoRobot(robot, friction_model("coulomb_viscous"), seed=1)
    arm = ControlledArm(simulator, 1000.0, initial_positions=np.full(6, 0.3))
    payload = Payload("j6_link", 2.0, (0.02, 0.0, 0.05), (0.004, 0.0, 0.0, 0.004, 0.0, 0.003))
    arm.attach_payload(payload, 0.5)
    samples = arm.advance(3.0)
    regressor = simulator.regressor
    base = compute_base_parameters(regressor)
    truth = DynamicModel(robot, regressor.friction, True, False, base, base.projection @ simulator.parameters,
                         np.zeros(base.rank))
    loaded = truth.with_payload(payload).torque(samples.q[-1], np.zeros(6), np.zeros(6))
    np.testing.assert_allclose(samples.torque[-1], loaded, atol=1e-3 * np.abs(loaded).max())
    assert samples.time[np.argmax(np.abs(samples.torque[:, 1] - samples.torque[0, 1]) > 1.0)] >= 0.5
    assert arm.payload_times == [0.5]
    np.testing.assert_allclose(true_parameter_model(truth, simulator.parameters).values, truth.values)


def test_recovery_time_is_the_settling_time_of_the_error_ratio():
    """Loaded error ``(1 + 9 exp(-(t - 1) / 0.05))`` times the unloaded after an event at 1 s: within 1.5x once
    ``9 exp(-x / 0.05) <= 0.5``, ``x = 0.05 ln 18 = 0.1445 s`` (to the window's smoothing)."""
    time = np.arange(0.0, 3.0, 1e-3)
    unloaded = 1e-3 * (1.0 + 0.5 * np.sin(7.0 * time))[:, None] * np.ones((1, 2))
    factor = np.where(time >= 1.0, 1.0 + 9.0 * np.exp(-(time - 1.0) / 0.05), 1.0)[:, None]

    def samples(error):
        zeros = np.zeros_like(error)
        return ControlledSamples(time, zeros, zeros, zeros, zeros, zeros, q_desired=error, qd_desired=zeros,
                                 feedforward=zeros, feedforward_age=np.zeros(time.size))

    recovery = recovery_time(samples(unloaded * factor), samples(unloaded), 1.0, [0, 1], window=0.002)
    assert recovery == pytest.approx(0.05 * math.log(18.0), abs=0.003)
    assert recovery_time(samples(unloaded * 2.0), samples(unloaded), 1.0, [0]) == math.inf
    assert recovery_time(samples(unloaded), samples(unloaded), 1.0, [0]) == 0.0
    trailing = windowed_rms(time, np.ones((time.size, 1)) * np.arange(time.size)[:, None] % 2, 0.0095)
    assert trailing[-1, 0] == pytest.approx(np.sqrt(5 / 10))
    with pytest.raises(DataError, match="no samples between the event at 4 s"):
        recovery_time(samples(unloaded), samples(unloaded), 4.0, [0])


def test_latency_matches_each_command_to_the_reference_it_was_computed_for():
    """References every ms; commands computed from some of them arrive 0.4 to 2.6 ms later (one dropped, one
    equal to two references: ambiguous); the cycles at whole ms apply them."""
    stamps = np.arange(10) * 1e-3
    expected = np.column_stack([np.arange(10.0), -np.arange(10.0)])
    expected[6] = expected[5]
    taken = [0, 1, 3, 4, 5, 8]
    delays = [0.4e-3, 0.9e-3, 2.6e-3, 0.5e-3, 1.0e-3, 0.7e-3]
    arrivals = stamps[taken] + np.array(delays)
    latency = feedforward_latency(stamps, expected, arrivals, expected[taken], 1000.0)
    assert latency.unmatched == 1          # the value of references 5 and 6
    np.testing.assert_allclose(latency.delivered, [0.4e-3, 0.9e-3, 2.6e-3, 0.5e-3, 0.7e-3])
    np.testing.assert_allclose(latency.applied, [1e-3, 1e-3, 3e-3, 1e-3, 1e-3])
    summary = latency.summary()
    assert summary["matched"] == 5 and summary["applied"]["max"] == pytest.approx(3e-3)


def test_samples_slower_than_the_controller_never_integrate_a_cycle_before_its_feedforward_could_arrive():
    """Samples at 100 Hz, the controller at 1 kHz: advancing to any time integrates no cycle after it, so a
    command received 0.4 ms after an advance acts from the next cycle, as on a controller reading its command
    each cycle (integrating a sample's ten cycles from its grid time on would hold the old command for up to 9 ms)."""
    robot = er3a_mujoco(friction_loss=False)
    arm = ControlledArm(MujocoRobot(robot, FRICTION, seed=1), 100.0, max_lag=10.0, keep_history=True)
    arm.feedforward.receive(0.0, np.zeros(robot.n_joints))
    step = np.arange(1, robot.n_joints + 1, dtype=float)
    for now in (0.0123, 0.0261, 0.0307, 0.0499):
        arm.advance(now)
        assert (arm.cycles - 1) / arm.settings.control_rate <= now + 1e-9, (now, arm.cycles)    # the last cycle
        arm.feedforward.receive(now + 0.0004, step * now)
    arm.advance(0.2)
    samples = join_samples(arm.history)
    for now in (0.0123, 0.0261, 0.0307, 0.0499):
        after = samples.time >= now + 0.0004
        first = np.flatnonzero(after)[0]
        np.testing.assert_array_equal(samples.feedforward[first], step * now)
        assert samples.time[first] - (now + 0.0004) < 1e-3
