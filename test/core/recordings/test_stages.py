"""Stage segmentation: marker pairing and per-sample labels, and detection from velocities
against synthetic protocols whose stage boundaries are known by construction."""
import logging
import math
import re

import numpy as np
import pytest

from robot_dynid.errors import DataError, DynIdError
from robot_dynid.experiment.trajectories import VelocityLadder, ladder_ramp
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.recording import Recording
from robot_dynid.recordings.stage_detection import (default_rest_threshold, detect_stages,
                                                    label_from_motion, select_stages)
from robot_dynid.recordings.recording import intervals_from_labels
from robot_dynid.recordings.stages import (STAGE_KINDS, StageInterval, StageMarker, StampOrder, join_sub_stages,
                                           kind_code, kind_name, label_samples, parse_cycle_list, stage_intervals)

# Detected boundaries must lie this close to the constructed ones [s].
BOUNDARY_TOLERANCE = 0.1
SAMPLE_RATE = 500.0
LIMITS = np.array([2.0, 1.5, 3.0])
FRACTIONS = (0.05, 0.2, 0.4, 0.6, 0.8, 1.0)
ACCELERATION = 5.0
REST_THRESHOLD = 0.02


def marker(stamp, kind, start, cycle=0, **fields):
    return StageMarker(stamp=stamp, kind=kind, cycle=cycle, start=start, **fields)


def test_markers_pair_into_nested_intervals_in_any_order():
    markers = [
        marker(9.0, "friction", False, joint_name="j2"),
        marker(1.0, "friction", True),
        marker(4.0, "friction", True, joint_name="j2", speed_fraction=0.2, direction=1),
        marker(6.0, "friction", False, joint_name="j2"),
        marker(6.0, "friction", True, joint_name="j2", speed_fraction=0.4, direction=-1),
        marker(10.0, "friction", False),
        marker(10.0, "custom", True, label="lift", cycle=1),
        marker(12.0, "custom", False, label="lift", cycle=1),
    ]
    intervals = stage_intervals(markers)
    assert [(i.kind, i.start_time, i.end_time, i.joint, i.speed_fraction, i.direction, i.cycle)
            for i in intervals] == [
        ("friction", 1.0, 10.0, None, 0.0, 0, 0),
        ("friction", 4.0, 6.0, "j2", 0.2, 1, 0),
        ("friction", 6.0, 9.0, "j2", 0.4, -1, 0),
        ("custom", 10.0, 12.0, None, 0.0, 0, 1)]
    assert intervals[-1].stage_label == "custom:lift"
    assert intervals[0].duration == 9.0


def test_unmatched_markers_are_logged_and_open_stages_last_to_the_end(caplog):
    with caplog.at_level(logging.WARNING, logger="robot_dynid.recordings.stages"):
        intervals = stage_intervals([
            marker(0.5, "rest", False),
            marker(1.0, "excitation", True),
            marker(2.0, "excitation", True),
        ])
    assert [(i.start_time, i.end_time) for i in intervals] == [(1.0, 2.0), (2.0, math.inf)]
    assert "has no start; ignored" in caplog.text
    assert "started again" in caplog.text
    assert "has no end marker" in caplog.text


def brute_force_labels(time, intervals):
    """Innermost (latest-starting) interval holding each sample, by direct search."""
    stage, cycle = [], []
    for t in time:
        holding = [i for i in intervals if i.start_time <= t <= i.end_time]
        best = max(holding, key=lambda i: (i.start_time, -i.end_time), default=None)
        stage.append("" if best is None else best.stage_label)
        cycle.append(-1 if best is None else best.cycle)
    return stage, cycle


def test_label_samples_agrees_with_direct_search():
    rng = np.random.default_rng(2)
    time = np.sort(np.concatenate([rng.uniform(0, 20, 400), [3.0, 8.0, 12.5, 18.0]]))
    intervals = [StageInterval("excitation", 3.0, 8.0, cycle=0),
                 StageInterval("friction", 8.0, 18.0, cycle=0),
                 StageInterval("friction", 10.0, 12.5, joint="a", cycle=0),
                 StageInterval("custom", 12.5, 13.0, cycle=1, label="hold"),
                 StageInterval("rest", 19.0, math.inf, cycle=2)]
    stage, cycle = label_samples(time, intervals)
    expected_stage, expected_cycle = brute_force_labels(time, intervals)
    assert stage.tolist() == expected_stage
    assert cycle.tolist() == expected_cycle
    at = {float(t): str(label) for t, label in zip(time, stage) if t in (3.0, 8.0, 12.5, 18.0)}
    assert at == {3.0: "excitation", 8.0: "friction", 12.5: "custom:hold", 18.0: "friction"}


@pytest.mark.parametrize("fields, message", [
    (dict(kind="cooldown"), r"stage marker kind must be one of \[.*\], got 'cooldown'"),
    (dict(cycle=-1), "cycle must be >= 0"),
    (dict(direction=2), "direction must be -1, 0 or 1, got 2"),
    (dict(stamp=math.nan), "stamp must be finite"),
])
def test_marker_validation(fields, message):
    values = dict(stamp=0.0, kind="rest", cycle=0, start=True)
    values.update(fields)
    with pytest.raises(DataError, match=message):
        StageMarker(**values)


class Profile:
    """Velocities built from segments of constant acceleration, with the expected stages."""

    def __init__(self):
        self.pieces = []
        self.expected = []
        self.end = 0.0

    def hold(self, duration, kind=None, joint=None, fraction=0.0, direction=0):
        if kind is not None:
            self.expected.append((kind, self.end, self.end + duration, joint, fraction, direction))
        self.pieces.append((self.end, duration, np.zeros(3)))
        self.end += duration

    def ramp(self, joint, change):
        acceleration = np.zeros(3)
        acceleration[joint] = math.copysign(ACCELERATION, change)
        duration = abs(change) / ACCELERATION
        self.pieces.append((self.end, duration, acceleration))
        self.end += duration

    def velocities(self, time):
        qd = np.zeros((time.size, 3))
        for start, duration, acceleration in self.pieces:
            qd += np.clip(time - start, 0.0, duration)[:, None] * acceleration
        return qd


def friction_protocol_then_sinusoids():
    profile = Profile()
    profile.hold(1.0, "rest")
    for joint in (0, 2):
        for fraction in FRACTIONS:
            speed = fraction * LIMITS[joint]
            for direction in (1, -1):
                profile.ramp(joint, direction * speed)
                profile.hold(1.0, "friction", f"joint{joint + 1}", fraction, direction)
                profile.ramp(joint, -direction * speed)
                profile.hold(0.2)
            rest_start = profile.end - 0.2
            profile.hold(0.8)
            profile.expected.append(("rest", rest_start, profile.end, None, 0.0, 0))
    sine_start = profile.end
    duration = 4.0
    profile.expected.append(("excitation", sine_start, sine_start + duration, None, 0.0, 0))
    profile.expected.append(("rest", sine_start + duration, sine_start + duration + 1.0, None,
                             0.0, 0))
    time = np.arange(0.0, sine_start + duration + 1.0, 1.0 / SAMPLE_RATE)
    qd = profile.velocities(time)
    # all three sinusoids start and end at zero velocity: 0.5, 0.75, 1 Hz over 4 s
    in_sine = (time >= sine_start) & (time <= sine_start + duration)
    frequencies, amplitudes = np.array([0.5, 0.75, 1.0]), np.array([1.0, 0.8, 1.5])
    qd[in_sine] = amplitudes * np.sin(2 * np.pi * frequencies * (time[in_sine, None] - sine_start))
    return time, qd, profile.expected


@pytest.mark.parametrize("noise_std", [0.0, 0.004])
def test_detects_rest_friction_plateaus_and_excitation(noise_std):
    time, qd, expected = friction_protocol_then_sinusoids()
    qd = qd + noise_std * np.random.default_rng(1).standard_normal(qd.shape)
    stages = detect_stages(time, qd, LIMITS, REST_THRESHOLD)
    assert [s.kind for s in stages] == [e[0] for e in expected]
    for stage, (kind, start, end, joint, fraction, direction) in zip(stages, expected):
        assert abs(stage.start_time - start) < BOUNDARY_TOLERANCE, (stage, start)
        assert abs(min(stage.end_time, time[-1]) - min(end, time[-1])) < BOUNDARY_TOLERANCE, \
            (stage, end)
        assert stage.joint == joint
        assert stage.direction == direction
        assert stage.speed_fraction == pytest.approx(fraction, abs=0.005)
        assert stage.cycle == -1


def test_constant_velocity_with_another_joint_moving_is_not_friction():
    time = np.arange(0.0, 6.0, 0.002)
    qd = np.zeros((time.size, 3))
    qd[:, 0] = 1.0
    qd[:, 1] = 0.5 * np.sin(2 * np.pi * 0.3 * time) + 0.6
    stages = detect_stages(time, qd, LIMITS, REST_THRESHOLD, joint_names=["a", "b", "c"])
    assert [(s.kind, s.start_time, s.end_time) for s in stages] == [
        ("excitation", 0.0, time[-1])]


def test_time_gap_splits_a_rest():
    time = np.concatenate([np.arange(0.0, 2.0, 0.01), np.arange(5.0, 7.0, 0.01)])
    stages = detect_stages(time, np.zeros((time.size, 1)), [1.0], 0.01)
    assert [(s.kind, s.start_time, s.end_time) for s in stages] == [
        ("rest", 0.0, time[199]), ("rest", 5.0, time[-1])]


def test_detection_input_validation():
    time = np.arange(0.0, 1.0, 0.01)
    qd = np.zeros((time.size, 2))
    with pytest.raises(DataError, match=r"^velocity_limits must be a scalar or have shape \(2 joints,\), got \(3,\)$"):
        detect_stages(time, qd, [1.0, 1.0, 1.0])
    with pytest.raises(DataError, match=r"^rest_threshold must be > 0 \[rad/s\], got 0.0$"):
        detect_stages(time, qd, [1.0, 1.0], rest_threshold=0.0)
    with pytest.raises(DataError, match=r"^qd must have shape \(99 samples, joints\), got \(100, 2\)$"):
        detect_stages(time[:-1], qd, [1.0, 1.0])
    with pytest.raises(DataError, match=r"^min_plateau_duration must be finite and > 0 \[s\], got -1.0$"):
        detect_stages(time, qd, [1.0, 1.0], min_plateau_duration=-1.0)
    with pytest.raises(DataError, match=r"^qd must be finite \[rad/s\], got nan at sample 3, joint b$"):
        detect_stages(time, np.where((np.arange(100) == 3)[:, None] & (np.arange(2) == 1), np.nan, qd), [1.0, 1.0],
                      joint_names=["a", "b"])
    with pytest.raises(DataError, match=r"joint_names has 1 names, expected 2"):
        detect_stages(time, qd, [1.0, 1.0], joint_names=["a"])
    backwards = time.copy()
    backwards[50] = backwards[49]
    with pytest.raises(DataError, match=r"time\[50\]"):
        detect_stages(backwards, qd, [1.0, 1.0])


def test_motion_extends_over_a_joint_starting_early_and_bridges_one_joint_moving_alone():
    """Designed at 500 Hz: rest 0-1 s; joint a moves alone 1-2 s (not on a plateau), both
    2-4 s, a alone again 4-6 s (longer than a rest may be), both 6-8 s, b alone 8-9 s; rest to
    10 s. One excitation 1-9 s: the single-joint stretches at its ends and in its middle are
    the same motion."""
    time = np.arange(0.0, 10.0, 1.0 / SAMPLE_RATE)
    qd = np.zeros((time.size, 2))
    a_moves = (time >= 1.0) & (time < 8.0)
    b_moves = ((time >= 2.0) & (time < 4.0)) | ((time >= 6.0) & (time < 9.0))
    # 0.1-0.5 rad/s, never still, varying by more than 5 % over any 0.2 s: never a plateau
    qd[a_moves, 0] = 0.3 + 0.2 * np.sin(6.0 * time[a_moves])
    qd[b_moves, 1] = -0.3 + 0.2 * np.cos(6.0 * time[b_moves])
    stages = detect_stages(time, qd, [2.0, 2.0], REST_THRESHOLD, joint_names=["a", "b"])
    assert [s.kind for s in stages] == ["rest", "excitation", "rest"]
    for detected, (start, end) in zip(stages, [(0.0, 1.0), (1.0, 9.0), (9.0, 10.0)]):
        assert detected.start_time == pytest.approx(start, abs=BOUNDARY_TOLERANCE)
        assert detected.end_time == pytest.approx(min(end, time[-1]), abs=BOUNDARY_TOLERANCE)


@pytest.mark.parametrize("speed", [0.2, 0.4, 1.0, 3.0])
def test_friction_strokes_with_the_protocols_shortest_cruise_are_found(speed):
    """A velocity ladder (robot_dynid.experiment.trajectories, as the protocol builds them: 9 rad/s^2, 0.1 s
    jerk phases) whose strokes cruise for the protocol's shortest plateau, 0.3 s, sampled at
    200 Hz with 0.003 rad/s of velocity noise: both strokes are found, their ends within 0.15 s
    of the designed constant-speed part (the ramps' last 0.1 s jerk phase lies within the
    plateau band; the moving average shifts an edge by up to 0.05 s)."""
    ramp, _ = ladder_ramp(speed, 9.0, 0.1)
    ladder = VelocityLadder(("a", "b"), [0.0, 0.0], "a", [speed], level_duration=2 * (2 * ramp + 0.3),
                            stroke=3.0, acceleration=9.0, jerk_duration=0.1, min_plateau=0.3)
    strokes = ladder.strokes
    assert [s.plateau[1] - s.plateau[0] for s in strokes] == pytest.approx([0.3, 0.3])
    time = np.arange(-1.0, ladder.duration + 1.0, 1.0 / 200.0)   # at rest 1 s before and after
    playing = (time >= 0.0) & (time <= ladder.duration)
    qd = ladder.evaluate(np.clip(time, 0.0, ladder.duration))[1] * playing[:, None]
    qd += 0.003 * np.random.default_rng(2).standard_normal(qd.shape)
    stages = [s for s in detect_stages(time, qd, [4.0, 4.0], REST_THRESHOLD, joint_names=["a", "b"])
              if s.kind == "friction"]
    assert len(stages) == len(strokes)
    for stage, stroke in zip(stages, strokes):
        assert (stage.joint, stage.direction) == ("a", stroke.direction)
        assert stage.speed_fraction == pytest.approx(speed / 4.0, abs=0.005)
        assert stage.start_time == pytest.approx(stroke.plateau[0], abs=0.15)
        assert stage.end_time == pytest.approx(stroke.plateau[1], abs=0.15)


def test_default_rest_threshold_is_capped_by_the_velocity_limit():
    # 0.02 rad/s, or 2 % of the limit when smaller: 2 % of 0.2 rad/s is 0.004 rad/s
    np.testing.assert_allclose(default_rest_threshold([0.2, 1.0, 4.0]), [0.004, 0.02, 0.02])


def labelled_recording(stage=None, cycle=None, with_qd=True):
    """4 s at 100 Hz, two joints: rest 0-1 s, j1 alone at 0.5 rad/s 1-3 s, rest 3-4 s."""
    time = np.arange(400) / 100.0
    qd = np.zeros((time.size, 2))
    qd[(time >= 1.0) & (time < 3.0), 0] = 0.5
    q = np.cumsum(qd, axis=0) / 100.0
    return Recording(("j1", "j2"), time, q, qd if with_qd else None, stage=stage, cycle=cycle,
                     source="run.csv")


def test_select_stages_detects_only_without_labels():
    unlabelled = labelled_recording()
    selection = select_stages(unlabelled, "friction", velocity_limits=[1.0, 1.0])
    assert selection.note.startswith("no stage markers or stage column in run.csv: stages "
                                     "detected from the motion (rest below 0.02 rad/s; 2 rest, "
                                     "1 friction, 0 excitation;")
    assert [(s.kind, s.joint, s.direction) for s in selection.detected] == [
        ("rest", None, 0), ("friction", "j1", 1), ("rest", None, 0)]
    assert selection.recording.time[0] == pytest.approx(1.0, abs=0.1)
    assert selection.recording.time[-1] == pytest.approx(3.0, abs=0.1)
    assert selection.recording.cycle is None

    # labels of the recording win, even where the motion says otherwise
    stage = np.where(np.arange(400) < 200, "excitation", "rest")
    labelled = labelled_recording(stage=stage, cycle=np.zeros(400, int))
    selection = select_stages(labelled, "excitation", cycles=[0], velocity_limits=[1.0, 1.0])
    assert (selection.note, selection.detected) == ("", None)
    np.testing.assert_array_equal(selection.recording.time, labelled.time[:200])


def test_select_stages_refuses_what_cannot_be_detected():
    unlabelled = labelled_recording()
    with pytest.raises(DataError, match=r"^cannot select cycles \[2\]: run.csv has no cycle labels "
                                        r"\(no stage markers or cycle column\), and cycles cannot be "
                                        r"detected from the motion$"):
        select_stages(unlabelled, "friction", cycles=[2], velocity_limits=[1.0, 1.0])
    with pytest.raises(DataError, match=r"cannot select cycles 0: .* cannot be detected"):
        select_stages(labelled_recording(stage=np.full(400, "rest")), cycles=0,
                      velocity_limits=[1.0, 1.0])
    with pytest.raises(DataError, match=r"^cannot select stage\(s\) \['validation'\] from run.csv: "
                                        r"it has no stage markers or stage column, and detection from "
                                        r"the motion gives only \['rest', 'friction', 'excitation'\] "
                                        r"\(warm-up and validation motion is detected as excitation\)$"):
        select_stages(unlabelled, ["friction", "validation"], velocity_limits=[1.0, 1.0])
    with pytest.raises(DataError, match="unknown stage label 'frcition'"):
        select_stages(unlabelled, "frcition", velocity_limits=[1.0, 1.0])
    with pytest.raises(DataError, match=r"^run.csv has no joint velocities \(qd\): stages cannot be "
                                        r"detected from the motion$"):
        label_from_motion(labelled_recording(with_qd=False), [1.0, 1.0])
    with pytest.raises(DataError, match=r"^rest_threshold must be > 0 \[rad/s\], got -1.0$"):
        select_stages(unlabelled, "rest", velocity_limits=[1.0, 1.0], rest_threshold=-1.0)


def test_intervals_from_labels_are_the_runs_of_a_stage_column():
    stage = np.array([""] * 50 + ["excitation"] * 150 + ["custom:lift"] * 100 + ["rest"] * 100)
    cycle = np.array([-1] * 50 + [0] * 100 + [1] * 50 + [1] * 100 + [1] * 100)
    intervals = intervals_from_labels(labelled_recording(stage=stage, cycle=cycle))
    assert [(i.kind, i.label, i.cycle, i.start_time, i.end_time) for i in intervals] == [
        ("excitation", "", 0, 0.5, 1.49), ("excitation", "", 1, 1.5, 1.99),
        ("custom", "lift", 1, 2.0, 2.99), ("rest", "", 1, 3.0, 3.99)]


def test_stage_marker_converts_kind_and_back_to_message_fields():
    marker = StageMarker.from_fields(1_700_000_000.25, 2, 3, True, joint_name="j2", speed_fraction=0.25, direction=-1)
    assert (marker.kind, marker.cycle, marker.start, marker.joint_name) == ("friction", 3, True, "j2")
    assert marker.stamp == pytest.approx(1_700_000_000.25, abs=1e-6)
    assert StageMarker.from_fields(0.0, 5, 0, False, label="payload").kind == "custom"
    assert StageMarker.from_fields(0.0, 7, 0, True).kind == "payload"
    assert marker.message_fields() == {"experiment_id": "", "cycle": 3, "kind": 2, "label": "", "start": True,
                                       "joint_name": "j2", "speed_fraction": 0.25, "direction": -1}


@pytest.mark.parametrize("fields, message", [
    ({"kind": 8}, r"stage kind 8 is not a KIND_\* value 0..7"),
    ({"kind": 5}, r"label must be set for kind KIND_CUSTOM"),
    ({"speed_fraction": 1.5}, r"^stage marker speed_fraction must be in \[0, 1\], got 1.5$"),
    ({"direction": 2}, r"direction must be -1, 0 or 1, got 2"),
])
def test_stage_marker_rejects_bad_fields(fields, message):
    arguments = {"stamp": 0.0, "kind": 1, "cycle": 0, "start": True, "require_custom_label": True, **fields}
    with pytest.raises(DataError, match=message):
        StageMarker.from_fields(**arguments)


def test_stage_kinds_are_the_kind_constants_of_the_message():
    """STAGE_KINDS index = KIND_* value, read from msg/ExperimentStage.msg itself."""
    text = find_package_file("msg", "ExperimentStage.msg").read_text()
    constants = dict(re.findall(r"^uint8 KIND_(\w+)\s*=\s*(\d+)", text, re.M))
    assert {name.lower(): int(value) for name, value in constants.items()} == \
        {kind: code for code, kind in enumerate(STAGE_KINDS)}
    assert [kind_code(kind) for kind in STAGE_KINDS] == list(range(len(STAGE_KINDS)))
    assert [kind_name(code) for code in range(len(STAGE_KINDS))] == list(STAGE_KINDS)
    with pytest.raises(DataError, match=r"stage kind 8 is not a KIND_\* value"):
        kind_name(8)


def test_stamp_order_releases_by_stamp_and_a_boundary_sample_goes_to_the_next_stage():
    next_start, end = StageMarker(1.05, "excitation", 1, True), StageMarker(1.05, "excitation", 0, False)
    late, unstamped = StageMarker(0.5, "rest", 0, True), StageMarker(0.0, "rest", 0, False)
    order = StampOrder(latency=0.1)
    assert order.add_sample(1.00, "s1.00") == []
    assert order.add_marker(next_start) == []
    assert order.add_marker(end) == []                         # overtook the samples up to 1.05
    assert order.add_sample(1.05, "s1.05") == []
    assert order.add_sample(1.10, "s1.10") == [("sample", "s1.00")]
    # at 1.05: the end of one stage, the start of the next, then the sample on the boundary
    assert order.add_sample(1.16, "s1.16") == [("marker", end), ("marker", next_start), ("sample", "s1.05")]
    assert order.add_marker(late) == [("marker", late)]         # > latency late: applied now
    assert order.add_marker(unstamped) == []                    # = just after the newest sample (1.16)
    assert order.add_sample(1.16 + 1e-9, "s1.16+") == []
    assert order.pending == 4 and order.released_until == 1.05
    assert order.flush() == [("sample", "s1.10"), ("sample", "s1.16"), ("marker", unstamped),
                             ("sample", "s1.16+")]
    with pytest.raises(DynIdError, match=r"^latency must be finite and >= 0 \[s\], got -1$"):
        StampOrder(-1)


def test_sub_stages_of_one_stage_and_cycle_are_joined_but_cycles_are_not():
    def marker(kind, start, cycle, stamp):
        return "marker", StageMarker(stamp, kind, cycle, start)

    boundary = [marker("excitation", False, 0, 2.0), marker("excitation", True, 0, 2.0)]
    next_cycle = [marker("excitation", False, 0, 5.0), marker("excitation", True, 1, 5.0)]
    next_kind = [marker("excitation", False, 1, 8.0), marker("friction", True, 1, 8.0)]
    items = ([marker("excitation", True, 0, 1.0), ("sample", 1)] + boundary + [("sample", 2)]
             + next_cycle + next_kind + [("sample", 3)])
    assert join_sub_stages(items) == ([marker("excitation", True, 0, 1.0), ("sample", 1), ("sample", 2)]
                                      + next_cycle + next_kind + [("sample", 3)])
    # an end and a start of the same stage at different stamps (a pause between them) stay apart
    apart = [marker("excitation", False, 0, 2.0), marker("excitation", True, 0, 2.5)]
    assert join_sub_stages(apart) == apart


@pytest.mark.parametrize("text, cycles", [
    ("3,9,16", [3, 9, 16]), ("0-5", [0, 1, 2, 3, 4, 5]), (" 0-2 , 7,", [0, 1, 2, 7]), ("5-5", [5]),
    ("0-9999", list(range(10_000))),
])
def test_cycle_lists(text, cycles):
    assert parse_cycle_list(text) == cycles


@pytest.mark.parametrize("text, message", [
    ("0-1000000000", r"^the cycle list '0-1000000000' selects more than 10000 cycles$"),
    ("0-9999,10000", r"selects more than 10000 cycles"),
    ("9" * 5000, r"is not a cycle number \(an integer >= 0\) or a range like 3-5"),
    ("-1", r"'-1' is not a cycle number"), ("5-3", r"'5-3' is not a cycle number"),
    ("1.5", r"'1.5' is not a cycle number"), ("a-b", r"'a-b' is not a cycle number"), (",", r"names no cycle"),
])
def test_bad_cycle_lists_are_one_line_before_anything_is_listed(text, message):
    with pytest.raises(DataError, match=message):
        parse_cycle_list(text)
