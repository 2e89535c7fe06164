"""Experiment schedule: windows, stage events and deviations checked against the plan itself; the start
(refusals, approach move) checked against the robot's limits on a dense grid of its own."""
import math

import numpy as np
import pytest

from robot_dynid.errors import DataError, TrajectoryError
from robot_dynid.experiment.excitation import random_excitation
from robot_dynid.experiment.protocol import build_protocol
from robot_dynid.experiment.schedule import (MAX_LATENESS, MAX_REFERENCE_SAMPLES, ExperimentRun, ExperimentSchedule,
                                             FeedbackWatchdog, NotReady, ReferenceLate, StartRefused, approach_move,
                                             positions_in_order, stage_events)
from robot_dynid.experiment.trajectories import CycloidalMove
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file

RATE = 50.0
# KIND_* constants of msg/ExperimentStage.msg
MSG_KINDS = {"rest": 0, "excitation": 1, "friction": 2, "warmup": 3, "validation": 4, "custom": 5}


@pytest.fixture(scope="module")
def robot(er3a_robot):
    return er3a_robot


@pytest.fixture(scope="module")
def limits(robot):
    """Velocity [rad/s] and acceleration [rad/s^2] limits per joint, read from the description."""
    return (np.array([limit.velocity for limit in robot.limits]),
            np.array([limit.acceleration for limit in robot.limits]))


@pytest.fixture(scope="module")
def plan(robot):
    excitation = random_excitation(robot, harmonics=3, period=2.0, amplitude_fraction=0.1, seed=0)
    return build_protocol(robot, cycles=2, excitation=excitation, excitation_periods=1,
                          speed_fractions=[0.1], warmup_duration=3.0, rest_duration=0.5,
                          warmup_range_fraction=0.1,
                          friction_range_fraction=0.1, cycloid_range_fraction=0.1,
                          transition_speed_fraction=1.0, friction_min_plateau=0.1)


@pytest.fixture(scope="module")
def schedule(plan):
    return ExperimentSchedule(plan, RATE, window_duration=1.3)


FAR = np.array([0.0, 0.6, 0.0, -0.3, 0.0, 0.2])   # [rad] from the plan's start pose; j2 the farthest


@pytest.fixture(scope="module")
def approached(schedule, robot):
    """(run, RunStart) of a run started at FAR from the plan's start pose, approaching at 0.2 of the limits."""
    run = ExperimentRun(schedule, 0.5, robot, approach_speed_fraction=0.2)
    return run, run.start(schedule.start_pose + FAR, command_subscribers=1)


def test_events_are_the_start_and_end_of_every_plan_row_in_order(plan, schedule):
    events = schedule.events
    assert events == stage_events(plan)
    assert len(events) == 2 * len(plan.stages)
    assert {row.kind for row in plan.stages} >= {"rest", "excitation", "friction", "warmup"}
    assert {row.cycle for row in plan.stages} == {0, 1}
    for index, row in enumerate(plan.stages):
        start, end = events[2 * index], events[2 * index + 1]
        assert (start.start, end.start) == (True, False)
        assert (start.stamp, end.stamp) == (row.start_time, row.end_time)
        for event in (start, end):
            assert (event.kind, event.kind_code, event.cycle, event.label, event.direction) == \
                   (row.kind, MSG_KINDS[row.kind], row.cycle, row.label, row.direction)
            if row.kind == "friction":
                assert event.joint_name == (row.joint or "")
                assert event.speed_fraction == (row.speed_fraction or 0.0)
            else:
                assert (event.joint_name, event.speed_fraction) == ("", 0.0)
    assert all(a.stamp <= b.stamp for a, b in zip(events, events[1:]))
    assert events[-1].stamp == pytest.approx(plan.duration)


def test_windows_concatenate_to_the_sampled_plan(plan, schedule):
    t, q, qd, qdd, _, _ = plan.sample(RATE)
    size = round(1.3 * RATE)
    assert len(schedule.windows) == math.ceil(t.size / size)
    assert all(w.t.size == size for w in schedule.windows[:-1])
    np.testing.assert_array_equal(np.concatenate([w.t for w in schedule.windows]), t)
    for mine, theirs in ((lambda w: w.q, q), (lambda w: w.qd, qd), (lambda w: w.qdd, qdd)):
        np.testing.assert_array_equal(np.concatenate([mine(w) for w in schedule.windows]), theirs)


def reference_states(plan, schedule, t):
    """q, qd, qdd at plan times ``t``: the approach's before 0, the plan's from 0."""
    states = plan.trajectory.evaluate(np.maximum(t, 0.0))
    if schedule.approach is not None:
        before = t < 0
        for state, approach in zip(states, schedule.approach.evaluate(t[before] + schedule.approach_duration)):
            state[before] = approach
    return states


@pytest.mark.parametrize("lookahead", [0.0, 0.45, 2.0])
@pytest.mark.parametrize("with_approach", [False, True], ids=["plan", "approach"])
def test_a_chunk_repeats_the_reference_from_its_send_time_to_its_window_end(plan, schedule, approached, lookahead,
                                                                            with_approach):
    if with_approach:
        schedule = approached[0].schedule
    for window in schedule.windows:
        chunk = schedule.chunk(window.index, lookahead)
        times = chunk.start_time + chunk.time_from_start
        assert chunk.time_from_start[0] == 0.0 and np.all(np.diff(times) > 0)
        assert chunk.send_time == pytest.approx(window.t[0] - lookahead)
        assert times[0] <= max(chunk.send_time, -schedule.approach_duration) + 1e-12
        assert times[0] > chunk.send_time - 1.0 / RATE
        assert times[-1] == pytest.approx(window.t[-1], abs=1e-12)
        np.testing.assert_allclose(times, np.arange(round(times[0] * RATE), round(times[-1] * RATE) + 1) / RATE,
                                   rtol=0, atol=1e-12)
        q, qd, qdd = reference_states(plan, schedule, times)
        np.testing.assert_allclose(chunk.q, q, atol=1e-12)
        np.testing.assert_allclose(chunk.qd, qd, atol=1e-12)
        np.testing.assert_allclose(chunk.qdd, qdd, atol=1e-12)


def test_deviation_names_the_worst_joint_against_the_trajectory(plan, schedule):
    t = np.linspace(0.0, plan.duration, 37)
    measured = plan.trajectory.evaluate(t)[0]
    measured[10, 2] += 0.05
    measured[20, 4] -= 0.03
    deviation = schedule.deviation(t, measured, threshold=0.04)
    np.testing.assert_allclose(deviation.max_error, [0, 0, 0.05, 0, 0.03, 0], atol=1e-12)
    assert (deviation.joint, deviation.time) == (plan.joint_names[2], t[10])
    assert deviation.error == pytest.approx(0.05) and deviation.exceeded
    assert f"joint {plan.joint_names[2]} deviates 0.05 rad" in deviation.describe()
    assert not schedule.deviation(t, measured, threshold=0.06).exceeded
    home = plan.trajectory.evaluate([0.0])[0]
    assert not schedule.deviation([-1.0], home, threshold=1e-9).exceeded


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_measured_position_exceeds_any_threshold_naming_the_joint(plan, schedule, bad):
    """``|NaN - q_ref| > threshold`` is false: a NaN must not pass as a small error."""
    t = np.linspace(0.5, 2.0, 16)
    measured = plan.trajectory.evaluate(t)[0]
    measured[9, 4] += 0.5                  # a larger finite error elsewhere, later
    measured[6, 1] = bad
    measured[12, 3] = np.nan
    deviation = schedule.deviation(t, measured, threshold=1.0)
    assert deviation.exceeded and not deviation.finite
    assert (deviation.joint, deviation.time) == (plan.joint_names[1], t[6])
    assert deviation.describe() == (f"joint {plan.joint_names[1]} reports position {bad!r} rad at t = {t[6]:.3f} s: "
                                    "the arm's pose is unknown (driver fault?)")
    assert np.isnan(deviation.max_error[[1, 3]]).all()
    np.testing.assert_allclose(deviation.max_error[[0, 2, 4, 5]], [0, 0, 0.5, 0], atol=1e-12)
    alone = schedule.deviation(t[6:7], measured[6:7], threshold=1.0)   # the only measurement, no other error
    assert alone.exceeded and alone.joint == plan.joint_names[1]
    assert schedule.deviation(t[:6], measured[:6], threshold=1.0).finite


def started_run(schedule, robot, pose=None, **settings):
    run = ExperimentRun(schedule, 0.5, robot, **settings)
    run.start(schedule.start_pose if pose is None else pose, command_subscribers=1)
    return run


def play_until(run, t, step=0.07):
    """Call ``run.due`` every ``step`` s (< lookahead, as the node's timer) up to plan time ``t``; return
    every chunk and event handed out."""
    chunks, events = [], []
    for now in [*np.arange(-run.schedule.approach_duration - 1.0, t, step), t]:
        new_chunks, new_events = run.due(now)
        chunks += new_chunks
        events += new_events
    return chunks, events


def test_a_run_hands_out_every_chunk_and_event_once_in_order(schedule, robot):
    run = started_run(schedule, robot)
    chunks, events = [], []
    for t in np.arange(-1.0, schedule.duration + 0.05, 0.07):
        new_chunks, new_events = run.due(t)
        assert all(c.send_time <= t for c in new_chunks) and all(e.stamp <= t for e in new_events)
        chunks += new_chunks
        events += new_events
    assert run.state == "done"
    assert [c.window for c in chunks] == list(range(len(schedule.windows)))
    assert events == list(schedule.events)
    assert run.due(1e9) == ([], []) and run.abort(1e9) is None


def test_abort_ends_the_stage_playing_and_stops_the_run(plan, schedule, robot):
    run = started_run(schedule, robot)
    row = plan.stages[3]
    t = 0.5 * (row.start_time + row.end_time)
    play_until(run, t)
    end = run.abort(t)
    assert (end.start, end.stamp, end.label, end.kind, end.cycle) == (False, t, row.label, row.kind, row.cycle)
    assert run.state == "aborted" and run.due(plan.duration) == ([], [])
    assert started_run(schedule, robot).abort(-0.2) is None


def test_a_window_due_after_its_start_is_not_sent_and_the_run_can_abort(plan, schedule, robot):
    run = started_run(schedule, robot)
    windows = schedule.windows
    chunks, _ = play_until(run, windows[2].start - 0.5)     # window 2's send time, lookahead 0.5 s
    assert [c.window for c in chunks] == [0, 1, 2]
    assert [c.window for c in run.due(windows[3].start + 0.9 * MAX_LATENESS)[0]] == [3]   # late, within the tolerance
    late = windows[4].start + 0.3
    with pytest.raises(ReferenceLate, match=rf"plan time {windows[4].start:.3f} to {windows[4].t[-1]:.3f} s was due "
                                            r"0\.5 s before it starts and is 0\.300 s past its start"):
        run.due(late)
    hold = run.hold_pose(late)      # where the controller ran out of reference
    assert hold.source == "the last commanded point"
    np.testing.assert_array_equal(hold.pose, windows[3].q[-1])
    assert run.state == "running" and run.abort(late) is not None and run.state == "aborted"


def test_the_watchdog_fires_on_silence_over_two_checks_not_on_a_stall_of_its_own_caller():
    watchdog = FeedbackWatchdog(0.5)
    assert watchdog.check(100.0) is None                     # nothing received yet: the start checks that
    watchdog.state_received(10.0)
    assert [watchdog.check(t) for t in (10.2, 10.5)] == [None, None]
    assert watchdog.check(12.0) is None                      # the caller stalled 1.5 s: first check after it ...
    watchdog.state_received(12.001)                          # ... and a queued state taken before the next
    assert watchdog.check(12.01) is None and watchdog.check(12.4) is None
    assert watchdog.check(12.6) is None                      # silent: 0.6 s, one check
    assert watchdog.check(12.61) == pytest.approx(0.609)     # silent over two checks in a row
    with pytest.raises(TrajectoryError, match=r"joint state timeout must be finite and > 0 \[s\]"):
        FeedbackWatchdog(0.0)


def test_positions_are_reordered_by_name(plan):
    names = list(reversed(plan.joint_names))
    np.testing.assert_array_equal(positions_in_order(names, [6, 5, 4, 3, 2, 1], plan.joint_names),
                                  [1, 2, 3, 4, 5, 6])


def test_invalid_inputs_are_rejected_naming_the_field(plan, schedule, robot):
    with pytest.raises(TrajectoryError, match=r"window_duration must be finite and > 0 \[s\], got 0"):
        ExperimentSchedule(plan, RATE, window_duration=0)
    with pytest.raises(TrajectoryError, match=r"lookahead must be finite and >= 0 \[s\], got -1"):
        ExperimentRun(schedule, -1, robot)
    with pytest.raises(TrajectoryError, match=r"window 99 is not in 0\.\."):
        schedule.chunk(99, 0.5)
    with pytest.raises(TrajectoryError, match=r"deviation threshold must be finite and > 0 \[rad\]"):
        schedule.deviation([0.0], np.zeros((1, 6)), threshold=float("nan"))
    with pytest.raises(DataError, match=r"^measured positions must have shape \(2 stamps, 6 joints\), got \(2, 5\)$"):
        schedule.deviation([0.0, 1.0], np.zeros((2, 5)), threshold=0.1)
    missing = r"joint state is missing joint\(s\) \['j6'\]; the plan needs \['j1', 'j2', 'j3', 'j4', 'j5', 'j6'\]"
    with pytest.raises(DataError, match=missing):
        positions_in_order(["j1", "j2", "j3", "j4", "j5"], [0.0] * 5, plan.joint_names)
    with pytest.raises(DataError, match="joint state has 6 names but 5 positions"):
        positions_in_order(plan.joint_names, [0.0] * 5, plan.joint_names)
    with pytest.raises(TrajectoryError, match=r"start_tolerance must be finite and >= 0 \[rad\], got -0\.1"):
        ExperimentRun(schedule, 0.5, robot, start_tolerance=-0.1)
    with pytest.raises(TrajectoryError, match=r"approach_speed_fraction must be <= 1, got 2"):
        ExperimentRun(schedule, 0.5, robot, approach_speed_fraction=2)
    with pytest.raises(TrajectoryError, match=r"start_tolerance 0\.2 rad is above deviation_threshold 0\.1 rad: a "
                                              r"start that far .* would abort at once"):
        ExperimentRun(schedule, 0.5, robot, start_tolerance=0.2, deviation_threshold=0.1)
    ExperimentRun(schedule, 0.5, robot, start_tolerance=0.1, deviation_threshold=0.1)
    with pytest.raises(DataError, match=r"joint_names lists unknown joint\(s\) \['j1'.*; robot 'ur5' has"):
        ExperimentRun(schedule, 0.5, load_robot(find_package_file("config", "robots", "ur5.yaml")))


def test_a_run_does_nothing_until_started(schedule, robot):
    run = ExperimentRun(schedule, 0.5, robot)
    assert run.state == "idle"
    assert run.due(1e9) == ([], []) and run.abort(1e9) is None and run.state == "idle"


def test_a_start_is_refused_until_ready_and_once_started_naming_the_reason(schedule, robot):
    run = ExperimentRun(schedule, 0.5, robot)
    with pytest.raises(NotReady, match="no joint state has arrived yet"):
        run.start(None, command_subscribers=1)
    with pytest.raises(NotReady, match="nothing subscribes to the command topic: no controller"):
        run.start(schedule.start_pose, command_subscribers=0)
    nan = schedule.start_pose.copy()
    nan[4] = np.nan
    with pytest.raises(StartRefused, match=r"joint\(s\) \['j5'\] is not finite"):
        run.start(nan, command_subscribers=1)
    assert run.state == "idle"
    started = run.start(schedule.start_pose + np.array([0, 0, 0.04, 0, 0, 0]), command_subscribers=1)
    assert run.state == "running" and started.approach is None and run.schedule is schedule
    assert started.describe() == (f"at the plan's start pose (largest offset j3 0.04 rad, within 0.05 rad): "
                                  f"playing the {schedule.duration:.0f} s plan")
    over = started_run(schedule, robot)
    play_until(over, schedule.duration + 1.0)
    aborted = started_run(schedule, robot)
    aborted.abort(0.0)
    for finished, reason in ((run, "the run already started"), (over, "the run already finished"),
                             (aborted, "the run was aborted")):
        with pytest.raises(StartRefused, match=f"{reason}; restart the node") as refused:
            finished.start(schedule.start_pose, command_subscribers=1)
        assert not isinstance(refused.value, NotReady)   # autostart retries only NotReady


def test_a_start_from_a_stale_joint_state_is_not_ready_and_retried(schedule, robot):
    run = ExperimentRun(schedule, 0.5, robot, max_pose_age=0.25)
    for age in (0.26, float("nan")):
        with pytest.raises(NotReady, match=r"the last joint state arrived \S+ s ago, more than max_joint_state_age "
                                           r"0\.25 s: the arm's pose is not known now"):
            run.start(schedule.start_pose, command_subscribers=1, pose_age=age)
    assert run.state == "idle"
    run.start(schedule.start_pose, command_subscribers=1, pose_age=0.25)
    assert run.state == "running"
    with pytest.raises(TrajectoryError, match=r"max_pose_age"):
        ExperimentRun(schedule, 0.5, robot, max_pose_age=0.0)


def test_a_far_pose_is_refused_naming_the_joint_when_the_approach_is_disabled(schedule, robot):
    run = ExperimentRun(schedule, 0.5, robot, start_tolerance=0.1, approach_speed_fraction=0.0)
    with pytest.raises(StartRefused, match=r"joint j2 is 0\.6 rad from the plan's start pose, beyond start_tolerance "
                                           r"0\.1 rad, and the approach is disabled") as refused:
        run.start(schedule.start_pose + FAR, command_subscribers=1)
    assert not isinstance(refused.value, NotReady) and run.state == "idle"
    run.start(schedule.start_pose + 0.1, command_subscribers=1)    # at the tolerance: no approach needed
    assert run.state == "running" and run.schedule.approach is None


@pytest.mark.parametrize("fraction", [0.1, 0.25, 1.0])
def test_the_approach_is_the_shortest_cycloidal_move_within_the_fraction_of_the_limits(robot, limits, fraction):
    velocity, acceleration = limits
    start = np.zeros(6)
    end = np.array([0.3, -0.8, 0.5, 1.2, 0.05, 2.0])
    move = approach_move(robot, robot.joint_names, start, end, fraction)
    t = np.linspace(0.0, move.duration, 20001)      # T / 4 and T / 2 on the grid
    q, qd, qdd = move.evaluate(t)
    np.testing.assert_allclose(q[[0, -1]], [start, end], atol=1e-12)
    np.testing.assert_allclose(np.concatenate([qd[[0, -1]], qdd[[0, -1]]]), 0.0, atol=1e-12)   # rest to rest
    distance = np.abs(end - start)
    # a cycloidal move's analytic peaks: speed 2 D / T at T / 2, acceleration 2 pi D / T^2 at T / 4
    np.testing.assert_allclose(np.abs(qd).max(axis=0), 2 * distance / move.duration, rtol=1e-9)
    np.testing.assert_allclose(np.abs(qdd).max(axis=0), 2 * np.pi * distance / move.duration**2, rtol=1e-6)
    share = np.maximum(np.abs(qd).max(axis=0) / (fraction * velocity),
                       np.abs(qdd).max(axis=0) / (fraction * acceleration))
    assert share.max() == pytest.approx(1.0, abs=1e-6)      # within the fraction, and one joint uses all of it
    faster = CycloidalMove(robot.joint_names, start, end - start, 0.99 * move.duration)
    _, qd, qdd = faster.evaluate(0.99 * t)
    assert (np.any(np.abs(qd).max(axis=0) > fraction * velocity)
            or np.any(np.abs(qdd).max(axis=0) > fraction * acceleration))


def test_the_approach_duration_rounds_up_to_the_sample_grid_and_checks_the_positions(robot, schedule):
    start, end = np.zeros(6), np.array([0.0, 0.77, 0.0, 0.0, 0.0, 0.0])
    shortest = approach_move(robot, robot.joint_names, start, end, 0.1).duration
    on_grid = approach_move(robot, robot.joint_names, start, end, 0.1, time_step=0.01).duration
    assert shortest <= on_grid < shortest + 0.01 and on_grid / 0.01 == pytest.approx(round(on_grid / 0.01), abs=1e-9)
    with pytest.raises(TrajectoryError, match="nothing to do"):
        approach_move(robot, robot.joint_names, start, start, 0.1)
    with pytest.raises(TrajectoryError, match=r"approach speed fraction must be <= 1, got 1\.5"):
        approach_move(robot, robot.joint_names, start, end, 1.5)
    outside = schedule.start_pose.copy()
    outside[1] = 1.6     # j2's upper limit is 1.5708 rad
    with pytest.raises(StartRefused,
                       match=r"cannot approach the plan's start pose: .*joint j2: position max 1\.6 beyond"):
        ExperimentRun(schedule, 0.5, robot).start(outside, command_subscribers=1)


def test_the_approach_precedes_the_plan_on_its_grid_and_belongs_to_no_stage(plan, schedule, robot, limits, approached):
    run, started = approached
    duration = started.approach.duration
    assert started.describe() == (f"approaching the plan's start pose in {duration:.1f} s (largest move j2 0.6 rad), "
                                  f"then playing the {plan.duration:.0f} s plan")
    assert run.schedule.approach_duration == duration and schedule.approach is None
    t = np.concatenate([w.t for w in run.schedule.windows])
    q = np.concatenate([w.q for w in run.schedule.windows])
    np.testing.assert_allclose(t, (np.arange(t.size) - round(duration * RATE)) / RATE, atol=1e-9)
    plan_t, plan_q = plan.sample(RATE)[:2]
    np.testing.assert_array_equal(t[t >= 0], plan_t)
    np.testing.assert_array_equal(q[t >= 0], plan_q)
    np.testing.assert_allclose(q[0], schedule.start_pose + FAR, atol=1e-12)
    assert [w.index for w in run.schedule.windows] == list(range(len(run.schedule.windows)))
    assert np.shares_memory(run.schedule.windows[-1].q, schedule.windows[-1].q)    # the plan's samples, not a copy
    # within 0.2 of the limits, from finite differences of the sampled positions (approach and first plan sample)
    velocity, acceleration = limits
    speed = np.diff(q[t <= 0], axis=0) * RATE
    assert np.all(np.abs(speed).max(axis=0) <= 0.2 * velocity)
    assert np.all(np.abs(np.diff(speed, axis=0)).max(axis=0) * RATE <= 0.2 * acceleration * 1.01)
    assert run.schedule.events == schedule.events and run.schedule.events[0].stamp == 0.0
    chunks, events = play_until(run, -1e-9)     # everything due before plan time 0: approach windows, no marker
    assert chunks and events == [] and chunks[0].start_time == pytest.approx(-duration)
    approach_t = t[t < 0]
    assert not run.schedule.deviation(approach_t, q[t < 0], threshold=1e-9).exceeded
    held = run.schedule.deviation(approach_t, np.tile(q[0], (approach_t.size, 1)), threshold=0.1)   # the arm stays put
    assert held.exceeded and held.joint == "j2"


def sample_at_or_before(trajectory, t, rate=RATE, start=0.0):
    """The trajectory sampled on the grid ``start + k / rate`` at the last grid time <= ``t``."""
    k = math.floor((t - start) * rate + 1e-9)
    return trajectory.evaluate([start + k / rate])[0][0]


def test_a_joint_state_is_checked_inside_the_reference_and_always_when_not_finite(schedule, robot):
    run = ExperimentRun(schedule, 0.5, robot)
    pose, unknown = schedule.start_pose, schedule.start_pose.copy()
    unknown[2] = np.nan
    assert not run.monitored(1.0, unknown)                    # idle: the start checks the pose
    run.start(pose, command_subscribers=1)
    assert run.monitored(0.0, pose) and run.monitored(schedule.duration, pose)
    assert not run.monitored(-0.5, pose) and not run.monitored(schedule.duration + 0.1, pose)
    assert run.monitored(-0.5, unknown) and run.monitored(schedule.duration + 0.1, unknown)
    run.abort(1.0)
    assert not run.monitored(1.0, unknown)


def test_an_abort_holds_the_recent_finite_measured_pose_else_the_last_commanded_point(plan, schedule, robot):
    start = schedule.start_pose + np.array([0.0, 0.01, 0.0, -0.02, 0.0, 0.0])   # within start_tolerance
    run = ExperimentRun(schedule, 0.5, robot, max_pose_age=0.25)
    with pytest.raises(TrajectoryError, match=r"no pose to hold at plan time 0\.000 s: the run has not started"):
        run.hold_pose(0.0)
    run.start(start, command_subscribers=1)
    unknown = schedule.start_pose.copy()
    unknown[1] = np.nan
    play_until(run, -0.3)             # window 0 handed out, its first sample not yet due
    for measured, age in ((unknown, 0.0), (None, math.inf)):
        hold = run.hold_pose(-0.3, measured, age)
        assert hold.source == "the last commanded point"
        np.testing.assert_array_equal(hold.pose, start)        # the controller holds where the arm was
    t = 0.5 * (plan.stages[2].start_time + plan.stages[2].end_time)
    play_until(run, t)
    measured = plan.trajectory.evaluate([t])[0][0] + 0.003
    hold = run.hold_pose(t, measured, 0.25)
    assert hold.source == "the measured pose"
    np.testing.assert_array_equal(hold.pose, measured)
    for measured, age in ((unknown, 0.0), (measured, 0.26), (measured, math.nan), (None, 0.0)):
        hold = run.hold_pose(t, measured, age)
        assert hold.source == "the last commanded point"
        np.testing.assert_allclose(hold.pose, sample_at_or_before(plan.trajectory, t), atol=1e-12)
        assert np.isfinite(hold.pose).all()
    assert t + 0.01 < run.schedule.windows[run.next_window - 1].t[-1]   # on the grid, not the window's end


def test_an_abort_during_the_approach_holds_its_last_commanded_point(schedule, robot):
    run = ExperimentRun(schedule, 0.5, robot, approach_speed_fraction=0.2)
    started = run.start(schedule.start_pose + FAR, command_subscribers=1)
    t = -0.6 * started.approach.duration
    play_until(run, t)
    unknown = schedule.start_pose + FAR
    unknown[0] = np.inf
    hold = run.hold_pose(t, unknown, 0.0)
    expected = sample_at_or_before(started.approach, t + started.approach.duration, start=0.0)
    np.testing.assert_allclose(hold.pose, expected, atol=1e-12)
    assert np.abs(hold.pose - (schedule.start_pose + FAR)).max() > 0.05    # on its way, not at either end
    assert np.abs(hold.pose - schedule.start_pose).max() > 0.05


def test_a_schedule_refuses_a_non_finite_rate_and_more_than_its_maximum_of_samples(plan):
    rate = MAX_REFERENCE_SAMPLES / plan.duration * 1.01
    with pytest.raises(TrajectoryError, match=rf"the plan of {plan.duration:.6g} s \(2 cycle\(s\)\) at rate_hz "
                                              rf"{rate:g} Hz is 2\.02e\+06 reference samples, more than 2,000,000 "
                                              r"\(the whole plan is held in memory\): lower rate_hz"):
        ExperimentSchedule(plan, rate)
    for bad in (math.nan, 0.0, -RATE):
        with pytest.raises(TrajectoryError, match=r"rate_hz must be finite and > 0 \[Hz\]"):
            ExperimentSchedule(plan, bad)


def test_a_run_refuses_a_non_finite_deviation_threshold(schedule, robot):
    with pytest.raises(TrajectoryError, match=r"deviation_threshold must be finite and > 0 \[rad\], got nan"):
        ExperimentRun(schedule, 0.5, robot, deviation_threshold=math.nan)
