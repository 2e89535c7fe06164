"""Experiment schedule: windows, stage events and deviations checked against the plan itself."""
import math

import numpy as np
import pytest

from robot_dynid.errors import DataError, TrajectoryError
from robot_dynid.excitation import random_excitation
from robot_dynid.experiment_schedule import (ExperimentRun, ExperimentSchedule, positions_in_order,
                                             stage_events)
from robot_dynid.package_files import find_package_file
from robot_dynid.protocol import build_protocol
from robot_dynid.robot_description import load_robot

RATE = 50.0
# KIND_* constants of msg/ExperimentStage.msg
MSG_KINDS = {"rest": 0, "excitation": 1, "friction": 2, "warmup": 3, "validation": 4, "custom": 5}


@pytest.fixture(scope="module")
def plan():
    robot = load_robot(find_package_file("config", "robots", "er3a.yaml"))
    excitation = random_excitation(robot, harmonics=3, period=2.0, amplitude_fraction=0.1, seed=0)
    return build_protocol(robot, cycles=2, excitation=excitation, excitation_periods=1,
                          speed_fractions=[0.1], warmup_duration=3.0, rest_duration=0.5,
                          warmup_range_fraction=0.1,
                          friction_range_fraction=0.1, cycloid_range_fraction=0.1,
                          transition_speed_fraction=1.0, friction_min_plateau=0.1)


@pytest.fixture(scope="module")
def schedule(plan):
    return ExperimentSchedule(plan, RATE, window_duration=1.3)


def test_events_are_the_start_and_end_of_every_plan_row_in_order(plan, schedule):
    events = schedule.events
    assert events == stage_events(plan)
    assert len(events) == 2 * len(plan.stages)
    assert {row.kind for row in plan.stages} >= {"rest", "excitation", "friction", "warmup"}
    assert {row.cycle for row in plan.stages} == {0, 1}
    for index, row in enumerate(plan.stages):
        start, end = events[2 * index], events[2 * index + 1]
        assert (start.start, end.start) == (True, False)
        assert (start.time, end.time) == (row.start, row.end)
        for event in (start, end):
            assert (event.kind, event.kind_code, event.cycle, event.name, event.direction) == \
                   (row.kind, MSG_KINDS[row.kind], row.cycle, row.name, row.direction)
            if row.kind == "friction":
                assert event.joint == (row.joint or "")
                assert event.speed_fraction == (row.speed_fraction or 0.0)
            else:
                assert (event.joint, event.speed_fraction) == ("", 0.0)
    assert all(a.time <= b.time for a, b in zip(events, events[1:]))
    assert events[-1].time == pytest.approx(plan.duration)


def test_windows_concatenate_to_the_sampled_plan(plan, schedule):
    t, q, qd, qdd, _, _ = plan.sample(RATE)
    size = round(1.3 * RATE)
    assert len(schedule.windows) == math.ceil(t.size / size)
    assert all(w.t.size == size for w in schedule.windows[:-1])
    np.testing.assert_array_equal(np.concatenate([w.t for w in schedule.windows]), t)
    for mine, theirs in ((lambda w: w.q, q), (lambda w: w.qd, qd), (lambda w: w.qdd, qdd)):
        np.testing.assert_array_equal(np.concatenate([mine(w) for w in schedule.windows]), theirs)


@pytest.mark.parametrize("lookahead", [0.0, 0.45, 2.0])
def test_a_chunk_repeats_the_reference_from_its_send_time_to_its_window_end(plan, schedule, lookahead):
    for window in schedule.windows:
        chunk = schedule.chunk(window.index, lookahead)
        times = chunk.start_time + chunk.time_from_start
        assert chunk.time_from_start[0] == 0.0 and np.all(np.diff(times) > 0)
        assert chunk.send_time == pytest.approx(window.t[0] - lookahead)
        assert times[0] <= max(chunk.send_time, 0.0) + 1e-12
        assert times[0] > chunk.send_time - 1.0 / RATE
        assert times[-1] == window.t[-1]
        np.testing.assert_allclose(times, np.arange(round(times[0] * RATE), round(times[-1] * RATE) + 1) / RATE,
                                   rtol=0, atol=1e-12)
        q, qd, qdd = plan.trajectory.evaluate(times)
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


def test_a_run_hands_out_every_chunk_and_event_once_in_order(schedule):
    run = ExperimentRun(schedule, lookahead=0.5)
    chunks, events = [], []
    for t in np.arange(-1.0, schedule.duration + 0.05, 0.07):
        new_chunks, new_events = run.due(t)
        assert all(c.send_time <= t for c in new_chunks) and all(e.time <= t for e in new_events)
        chunks += new_chunks
        events += new_events
    assert run.state == "done"
    assert [c.window for c in chunks] == list(range(len(schedule.windows)))
    assert events == list(schedule.events)
    assert run.due(1e9) == ([], []) and run.abort(1e9) is None


def test_abort_ends_the_stage_playing_and_stops_the_run(plan, schedule):
    run = ExperimentRun(schedule, lookahead=0.5)
    row = plan.stages[3]
    t = 0.5 * (row.start + row.end)
    run.due(t)
    end = run.abort(t)
    assert (end.start, end.time, end.stage_index, end.kind, end.cycle) == (False, t, 3, row.kind, row.cycle)
    assert run.state == "aborted" and run.due(plan.duration) == ([], [])
    assert ExperimentRun(schedule, lookahead=0.5).abort(-0.2) is None


def test_positions_are_reordered_by_name(plan):
    names = list(reversed(plan.joint_names))
    np.testing.assert_array_equal(positions_in_order(names, [6, 5, 4, 3, 2, 1], plan.joint_names),
                                  [1, 2, 3, 4, 5, 6])


def test_invalid_inputs_are_rejected_naming_the_field(plan, schedule):
    with pytest.raises(TrajectoryError, match=r"window_duration must be a finite number > 0 \[s\], got 0"):
        ExperimentSchedule(plan, RATE, window_duration=0)
    with pytest.raises(TrajectoryError, match=r"lookahead must be a finite number >= 0 \[s\], got -1"):
        ExperimentRun(schedule, lookahead=-1)
    with pytest.raises(TrajectoryError, match=r"window 99 is not in 0\.\."):
        schedule.chunk(99, 0.5)
    with pytest.raises(TrajectoryError, match=r"deviation threshold must be a finite number > 0 \[rad\]"):
        schedule.deviation([0.0], np.zeros((1, 6)), threshold=float("nan"))
    with pytest.raises(DataError, match=r"must have shape \(2, 6\) for 2 stamps .* got \(2, 5\)"):
        schedule.deviation([0.0, 1.0], np.zeros((2, 5)), threshold=0.1)
    with pytest.raises(DataError, match=r"joint state lacks joint\(s\) \['j6'\]"):
        positions_in_order(["j1", "j2", "j3", "j4", "j5"], [0.0] * 5, plan.joint_names)
    with pytest.raises(DataError, match="joint state has 6 names but 5 positions"):
        positions_in_order(plan.joint_names, [0.0] * 5, plan.joint_names)
