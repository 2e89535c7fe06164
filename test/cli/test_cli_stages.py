"""Stages of recordings without markers, detected from the motion, against a protocol plan's design.

A short thesis protocol for the PUMA 560 (robot_dynid.experiment.protocol: rest, excitation, friction ladders
at 5, 50 and 100 % of the velocity limits, a 30 s warm-up) is sampled, its torques simulated with
noise, and written as a rosbag2 of joint states only (no ExperimentStage markers). The expected
stages come from the plan's own stage table and trajectory, not from the detector:

- rest: the plan's rest row, and the second of rest recorded after the plan ends;
- friction: each stroke's constant-speed part, the stroke row shortened at both ends by the ramp
  the plan designed (``trajectories.ladder_ramp`` with the plan's acceleration and jerk settings);
- excitation: every stretch of multi-joint motion: the excitation and warm-up stages and the
  transitions into each friction pose (each moves two or more joints, checked below; the detector
  cannot tell them from excitation), consecutive rows merged.

Tolerances (stated here, checked in the tests):

- friction plateau ends: ``JERK_DURATION + SMOOTHING / 2`` = 0.15 s. The last raised-cosine jerk phase
  of a ramp (0.1 s) already lies within the plateau's 5 % speed band, and the detector's moving
  average (0.1 s) moves a crossing by at most half its window.
- ends of multi-joint motion (and of the rests next to them): the plan's transitions are quintic
  rest-to-rest moves, whose speed near either end is ``30 |D| t^2 / T^3``; the motion is detected
  from the first joint above the rest threshold ``r`` to the last, so it misses
  ``sqrt(r T^3 / (30 |D|max))`` of each end. The tolerance of each boundary is that of its transition
  (``T`` and ``D`` from the plan) plus half the smoothing window and a sample interval: 0.09-0.3 s
  here.
"""
import json
import math

import numpy as np
import pytest

from cli_output import run
from robot_dynid.cli import main
from robot_dynid.errors import DataError
from robot_dynid.estimation.identification import IdentificationSettings, identify
from robot_dynid.experiment.excitation import random_excitation
from robot_dynid.experiment.protocol import build_protocol
from robot_dynid.experiment.simulation import SimulatedRobot, simulation_parameters
from robot_dynid.experiment.trajectories import ladder_ramp
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.bag_io import BagWriter
from robot_dynid.recordings.csv_io import write_csv
from robot_dynid.recordings.conditioning import Conditioning
from robot_dynid.recordings.pipeline import read_recording
from robot_dynid.recordings.recording import Recording
from robot_dynid.recordings.stage_detection import select_stages

ROBOT = find_package_file("config", "robots", "puma560.yaml")
RATE = 200.0               # Hz, joint states
T0_NS = 1_700_000_000_000_000_000
REST_AFTER = 1.0           # s of rest recorded after the plan ends
TORQUE_NOISE = 0.3         # N m
VELOCITY_NOISE = 0.003     # rad/s, measured joint velocities
REST_THRESHOLD = 0.02      # rad/s: the default for the PUMA 560 (its limits are 2 and 4 rad/s)
SMOOTHING = 0.1            # s, detect_stages' default moving average
MIN_REST = 0.5             # s, detect_stages' default shortest rest
JERK_DURATION = 0.1        # s, the protocol's default ramp jerk phase (checked against the plan below)
FRICTION_TOLERANCE = JERK_DURATION + SMOOTHING / 2


def quintic_lag(duration, displacements):
    """Time [s] at either end of a quintic rest-to-rest move of ``duration`` T [s] and joint
    ``displacements`` D [rad] during which every joint is slower than the rest threshold:
    ``sqrt(r T^3 / (30 max |D|))``."""
    return math.sqrt(REST_THRESHOLD * duration**3 / (30.0 * np.max(np.abs(displacements))))


def designed_stages(plan, robot):
    """Expected detection from the plan's stage table (see the module docstring).

    Returns a list of ``(kind, start, end, joint, speed_fraction, direction, start_tolerance,
    end_tolerance)``, times [s] since the plan's start."""
    _, _, velocity, acceleration, _ = robot.limit_arrays()
    assert plan.settings["jerk_duration"] == JERK_DURATION
    stages = []
    for row in plan.stages:
        if row.kind == "rest":
            stages.append(["rest", row.start_time, row.end_time, None, 0.0, 0, None, None])
        elif row.label == "stroke":
            j = robot.joint_names.index(row.joint)
            ramp, _ = ladder_ramp(row.speed_fraction * velocity[j],
                                  plan.settings["friction_acceleration_fraction"] * acceleration[j],
                                  plan.settings["jerk_duration"])
            stages.append(["friction", row.start_time + ramp, row.end_time - ramp, row.joint, row.speed_fraction,
                           row.direction, FRICTION_TOLERANCE, FRICTION_TOLERANCE])
        elif row.label == "hold":
            assert row.duration < MIN_REST, row   # too short to be a rest: no stage
        else:   # excitation, warm-up and transitions
            q_start, q_end = plan.trajectory.evaluate(np.array([row.start_time, row.end_time]))[0]
            lag = None
            if row.label == "transition":
                assert np.sum(np.abs(q_end - q_start) > 1e-6) >= 2, f"{row}: moves a single joint"
                lag = quintic_lag(row.duration, q_end - q_start) + SMOOTHING / 2 + 1 / RATE
            if stages and stages[-1][0] == "excitation" and abs(stages[-1][2] - row.start_time) < 1e-9:
                stages[-1][2], stages[-1][7] = row.end_time, lag
            else:
                stages.append(["excitation", row.start_time, row.end_time, None, 0.0, 0, lag, lag])
    stages.append(["rest", plan.duration, plan.duration + REST_AFTER, None, 0.0, 0, None, None])
    for index, stage in enumerate(stages):   # a rest ends / starts where the motion next to it does
        if stage[0] == "rest":
            stage[6] = stages[index - 1][7] if index else 1 / RATE
            stage[7] = stages[index + 1][6] if index + 1 < len(stages) else 1 / RATE
    return [tuple(stage) for stage in stages]


@pytest.fixture(scope="module")
def protocol_run(tmp_path_factory):
    """The plan, the simulated samples and an unmarked bag of them (joint states only)."""
    robot = load_robot(ROBOT)
    excitation = random_excitation(robot, harmonics=3, period=4.0, amplitude_fraction=0.5, seed=0)
    plan = build_protocol(robot, cycles=1, excitation=excitation, excitation_periods=1,
                          speed_fractions=(0.05, 0.5, 1.0), warmup_duration=30.0, rest_duration=1.0)
    t, q, qd, qdd, _, _ = plan.sample(RATE)
    hold = int(REST_AFTER * RATE)
    t = np.concatenate([t, t[-1] + np.arange(1, hold + 1) / RATE])
    q = np.vstack([q, np.repeat(q[-1:], hold, axis=0)])            # at rest in the home pose
    qd, qdd = (np.vstack([x, np.zeros((hold, x.shape[1]))]) for x in (qd, qdd))
    regressor = Regressor(robot, friction_model("coulomb_viscous"))
    simulator = SimulatedRobot(regressor, simulation_parameters(regressor, seed=3), TORQUE_NOISE)
    # the velocities jitter around the plan's and the torques follow them, so the model holds exactly
    # and the torque noise is the only error (a sign flip of the Coulomb term at noisy near-zero
    # velocities would otherwise bias fits that include samples at rest, unrelated to detection)
    qd_measured = qd + VELOCITY_NOISE * np.random.default_rng(5).standard_normal(qd.shape)
    tau = simulator.torques(q, qd_measured, qdd, rng=4)
    directory = tmp_path_factory.mktemp("stages")
    bag = directory / "unmarked"
    with BagWriter(bag) as writer:
        for k in range(t.size):
            writer.write_joint_state(T0_NS + round(t[k] * 1e9), robot.joint_names, q[k], qd_measured[k], tau[k])
    return robot, plan, bag, directory, (t, q, qd_measured, tau)


def test_stages_detected_in_an_unmarked_bag_agree_with_the_plan(protocol_run, capsys):
    robot, plan, bag, _, _ = protocol_run
    expected = designed_stages(plan, robot)
    tolerances = [tolerance for stage in expected for tolerance in stage[6:]]
    assert max(tolerances) < 0.4, tolerances   # the quintic bound is meaningful for this plan
    code, out, err = run("stages", "--robot", ROBOT, "--data", bag, "--json")
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert report["origin"] == "motion"
    assert report["time_origin"] == pytest.approx(T0_NS * 1e-9)
    assert report["note"].startswith(f"no stage markers or stage column in {bag}: stages detected from the motion")
    assert report["rest_threshold"] == {name: REST_THRESHOLD for name in robot.joint_names}
    detected = report["stages"]
    assert [s["kind"] for s in detected] == [e[0] for e in expected]
    assert sum(e[0] == "friction" for e in expected) == 6 * 3 * 2   # every stroke of every joint and level
    for stage, (kind, start, end, joint, fraction, direction, start_tolerance, end_tolerance) in \
            zip(detected, expected):
        assert stage["start"] == pytest.approx(start, abs=start_tolerance), (stage, start)
        assert stage["end"] == pytest.approx(end, abs=end_tolerance), (stage, end)
        assert stage["duration"] == pytest.approx(stage["end"] - stage["start"])
        assert stage["cycle"] is None
        if kind == "friction":
            assert (stage["joint"], stage["direction"]) == (joint, direction)
            assert stage["speed_fraction"] == pytest.approx(fraction, abs=0.005)
        else:
            assert (stage["joint"], stage["speed_fraction"], stage["direction"]) == (None, None, None)


def test_friction_selected_from_an_unmarked_recording_lies_on_the_designed_plateaus(protocol_run):
    robot, plan, bag, _, _ = protocol_run
    expected = designed_stages(plan, robot)
    recording = read_recording(bag, joint_names=robot.joint_names)
    selection = select_stages(recording, "friction", velocity_limits=robot.limit_arrays().velocity)
    assert selection.note.startswith(f"no stage markers or stage column in {bag}: stages detected")
    elapsed = selection.recording.time - T0_NS * 1e-9
    plateaus = np.array([(start, end) for kind, start, end, *_ in expected if kind == "friction"])
    inside = ((elapsed[:, None] >= plateaus[:, 0] - FRICTION_TOLERANCE)
              & (elapsed[:, None] <= plateaus[:, 1] + FRICTION_TOLERANCE)).any(axis=1)
    assert inside.all(), elapsed[~inside][:5]
    # and it covers the plateaus: at least their designed length less the tolerance at both ends
    designed = np.sum(plateaus[:, 1] - plateaus[:, 0] - 2 * FRICTION_TOLERANCE)
    assert selection.recording.n_samples / RATE > designed


def test_identify_excitation_of_an_unmarked_bag_matches_the_plan_boundaries(protocol_run, capsys):
    """Identifying the detected excitation gives the parameters of identifying the samples inside the
    plan's multi-joint motion (same bag, same reader, same settings).

    The detected samples are the plan's less the slow ends of its 14 motion boundaries (within the
    tolerances above). For nested least-squares fits with the same noise, the difference of the
    estimates has covariance ``cov_small - cov_large``, so per parameter a standard deviation of
    ``sqrt(|std_detected^2 - std_plan^2|)`` (0-25 % of the reported std here, the most for the
    Coulomb terms, which the slow samples inform). Tolerance: 4 of these, plus 5 % of the reported
    std for the few samples at rest the detector's smoothing adds and the two fits' different
    residual variances."""
    robot, plan, bag, directory, _ = protocol_run
    expected = designed_stages(plan, robot)
    model_path = directory / "detected.yaml"
    # velocities as measured (the simulated friction follows their noisy sign at rest, see protocol_run);
    # accelerations from the exact positions (the simulated torques follow the plan's accelerations)
    code, out, err = run("identify", "--robot", ROBOT, "--data", bag, "--stage", "excitation",
                         "--velocity-at-rest", "measured", "--accelerations-from", "positions",
                         "--out", model_path)
    assert (code, err) == (0, "")
    assert out.startswith(f"no stage markers or stage column in {bag}: stages detected from the motion "
                          f"(rest below {REST_THRESHOLD:g} rad/s; ")
    detected = DynamicModel.load(model_path)
    assert detected.provenance["stage_detection"] == out.splitlines()[0]

    recording = read_recording(bag, joint_names=robot.joint_names,
                               conditioning=Conditioning(velocity_at_rest="measured",
                                                         accelerations_from_positions=True))   # as the CLI reads
    elapsed = recording.time - T0_NS * 1e-9
    motion = np.array([(start, end) for kind, start, end, *_ in expected if kind == "excitation"])
    in_motion = ((elapsed[:, None] >= motion[:, 0]) & (elapsed[:, None] <= motion[:, 1])).any(axis=1)
    by_plan = identify(recording.take(in_motion), robot,
                       IdentificationSettings(friction=friction_model("coulomb_viscous")))
    assert detected.base.names == by_plan.base.names
    assert 0.9 * in_motion.sum() < detected.metrics["n_samples"] <= in_motion.sum()
    difference_std = np.sqrt(np.abs(detected.std**2 - by_plan.std**2))
    bound = 4.0 * difference_std + 0.05 * by_plan.std
    excess = np.abs(detected.values - by_plan.values) / bound
    assert np.all(excess < 1.0), dict(zip(by_plan.base.names, np.round(excess, 2)))


def test_cycles_of_an_unmarked_recording_cannot_be_selected(protocol_run, capsys):
    robot, _, bag, directory, _ = protocol_run
    code, out, err = run("identify", "--robot", ROBOT, "--data", bag, "--stage", "excitation",
                         "--cycles", "0,1", "--out", directory / "never.yaml")
    assert (code, out) == (2, "")
    assert err == (f"robot-dynid identify: error: cannot select cycles [0, 1]: {bag} has no cycle labels "
                   "(no stage markers or cycle column), and cycles cannot be detected from the motion\n")
    assert not (directory / "never.yaml").exists()
    recording = read_recording(bag, joint_names=robot.joint_names)
    with pytest.raises(DataError, match=r"^cannot select cycles 3: .* cycles cannot be detected from the motion$"):
        select_stages(recording, cycles=3, velocity_limits=robot.limit_arrays().velocity)


def test_stages_that_detection_cannot_give_are_refused_by_name(protocol_run, capsys):
    robot, _, bag, directory, _ = protocol_run
    code, out, err = run("identify", "--robot", ROBOT, "--data", bag, "--stage", "warmup",
                         "--out", directory / "never.yaml")
    assert (code, out) == (2, "")
    assert err == (f"robot-dynid identify: error: cannot select stage(s) ['warmup'] from {bag}: it has no stage "
                   "markers or stage column, and detection from the motion gives only ['rest', 'friction', "
                   "'excitation'] (warm-up and validation motion is detected as excitation)\n")


def test_rest_threshold_option_is_checked_and_used(protocol_run, capsys):
    _, _, bag, _, _ = protocol_run
    with pytest.raises(SystemExit) as exit_info:
        main(["stages", "--robot", str(ROBOT), "--data", str(bag), "--rest-threshold", "-0.1"])
    assert exit_info.value.code == 2
    assert "argument --rest-threshold: '-0.1' is not a speed > 0 [rad/s]" in capsys.readouterr().err
    # a threshold above the 5 % friction level (0.1 rad/s at the 2 rad/s limits of joints 1-3) hides it
    code, out, _ = run("stages", "--robot", ROBOT, "--data", bag, "--json", "--rest-threshold", "0.15")
    assert code == 0
    slow = [s for s in json.loads(out)["stages"] if s["kind"] == "friction" and s["speed_fraction"] < 0.1]
    assert {s["joint"] for s in slow} == {"j4", "j5", "j6"}   # 5 % of 4 rad/s = 0.2 rad/s > 0.15 rad/s


def test_stages_of_a_marked_bag_are_its_markers(protocol_run, capsys):
    robot, plan, _, directory, (t, q, qd, tau) = protocol_run
    bag = directory / "marked"
    every = 2   # 100 Hz is plenty to list markers
    with BagWriter(bag, storage="sqlite3") as writer:
        for row in plan.stages:
            for stamp, start in ((row.start_time, True), (row.end_time, False)):
                writer.write_stage(T0_NS + round(stamp * 1e9), row.kind, row.cycle, start, joint_name=row.joint or "",
                                   speed_fraction=row.speed_fraction or 0.0, direction=row.direction)
        for k in range(0, t.size, every):
            writer.write_joint_state(T0_NS + round(t[k] * 1e9), robot.joint_names, q[k], qd[k], tau[k])
    code, out, err = run("stages", "--robot", ROBOT, "--data", bag, "--json")
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert (report["origin"], report["note"], report["rest_threshold"]) == ("markers", None, None)
    listed = report["stages"]
    assert len(listed) == len(plan.stages)
    for stage, row in zip(listed, plan.stages):
        assert (stage["kind"], stage["cycle"], stage["joint"]) == (row.kind, row.cycle, row.joint)
        assert stage["start"] == pytest.approx(row.start_time, abs=1e-6)
        assert stage["end"] == pytest.approx(row.end_time, abs=1e-6)
        if row.joint is not None:
            assert stage["speed_fraction"] == pytest.approx(row.speed_fraction or 0.0)
            assert stage["direction"] == row.direction

    code, out, _ = run("stages", "--robot", ROBOT, "--data", bag)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == (f"{len(plan.stages)} stages of {bag} from its stage markers; times [s] since the first "
                        f"sample (at {T0_NS * 1e-9:.6f} s)")
    stroke = next(row for row in plan.stages if row.label == "stroke")
    assert any(line.split()[:3] == ["friction", f"{stroke.start_time:.3f}", f"{stroke.end_time:.3f}"]
               and stroke.joint in line.split() for line in lines)


def test_stages_of_a_csv_stage_column_are_its_runs(protocol_run, tmp_path, capsys):
    """A CSV with the plan's per-sample kinds: one listed stage per run of equal kind, which is the
    plan's rows merged by kind, from the first to the last sample inside them."""
    robot, plan, _, _, _ = protocol_run
    t, q, qd, qdd, labels, cycle = plan.sample(20.0)
    path = tmp_path / "labelled.csv"
    write_csv(path, Recording(robot.joint_names, t, q, qd, qdd, stage=labels, cycle=cycle))
    merged = []
    for row in plan.stages:
        if merged and merged[-1][0] == row.kind:
            merged[-1][2] = row.end_time
        else:
            merged.append([row.kind, row.start_time, row.end_time])
    code, out, err = run("stages", "--robot", ROBOT, "--data", path, "--json")
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert report["origin"] == "stage column"
    assert [(s["kind"], s["cycle"]) for s in report["stages"]] == [(kind, 0) for kind, _, _ in merged]
    for stage, (_, start, end) in zip(report["stages"], merged):
        assert start - 1e-9 <= stage["start"] < start + 1 / 20.0
        assert end - 1 / 20.0 - 1e-9 <= stage["end"] <= end + 1e-9
