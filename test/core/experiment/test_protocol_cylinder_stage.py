"""The cylinder excitation stage: the paper's x = A sin(w t) as joint motion q = center + (A / r) sin(w t),
planned (durations and amplitudes against closed forms), sampled, and segmented again by the bag reader
from the runner's markers in a real rosbag2 file."""
import math
import re

import numpy as np
import pytest

from robot_dynid.errors import TrajectoryError
from robot_dynid.experiment.excitation import random_excitation
from robot_dynid.experiment.protocol import (CylinderExcitation, CylinderStage, build_protocol,
                                             cylinder_stage_from_dict, load_plan, save_plan)
from robot_dynid.experiment.schedule import stage_events
from robot_dynid.experiment.trajectories import RampedSine, trajectory_from_dict
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.bag_io import BagWriter, read_bag
from robot_dynid.recordings.stages import STAGE_KINDS

RATE = 50.0   # Hz, the paper's sampling
W = 0.5       # rad/s (the paper's 0.05 rad/s gives 126 s periods; the closed forms are the same)
A = 0.006     # m
CYLINDERS = (CylinderExcitation("boom", "j2", 0.12), CylinderExcitation("wrist", "j5", -0.05, center=0.1))


@pytest.fixture(scope="module")
def robot():
    return load_robot(find_package_file("config", "robots", "curtain_wall_arm.yaml"))


@pytest.fixture(scope="module")
def plan(robot):
    excitation = random_excitation(robot, harmonics=2, period=20.0, amplitude_fraction=0.1, seed=0)
    return build_protocol(robot, cycles=1, excitation=excitation, excitation_periods=1, speed_fractions=[0.5],
                          warmup_duration=0.0, cylinder_stage=CylinderStage(A, W, CYLINDERS, cycles=2),
                          friction_range_fraction=0.2, cycloid_range_fraction=0.2)


def test_the_stage_is_the_paper_sine_of_each_cylinder_in_turn(plan, robot):
    rows = [row for row in plan.cycle_stages if row.kind == "cylinder"]
    assert [(row.label, row.joint) for row in rows] == [
        (name, joint) for joint in ("j2", "j5") for name in ("transition", "ramp", "sine", "ramp")]
    assert plan.cycle_stages[:len(rows)] == tuple(rows)           # before the excitation stage
    period = 2.0 * math.pi / W
    for joint, arm, center in (("j2", 0.12, None), ("j5", -0.05, 0.1)):
        transition, ramp_in, sine, ramp_out = (row for row in rows if row.joint == joint)
        assert ramp_in.duration == pytest.approx(period / 2) and ramp_out.duration == pytest.approx(period / 2)
        assert sine.duration == pytest.approx(2 * period)
        j = robot.joint_names.index(joint)
        lower, upper = robot.limit_arrays()[:2]
        middle = 0.5 * (lower[j] + upper[j]) if center is None else center
        # on the pure sine: q_j = center + (A / r) sin(w tau), the other joints still
        tau = np.linspace(0.0, sine.duration, 401)
        q, qd, qdd = plan.trajectory.evaluate(sine.start_time + tau)
        np.testing.assert_allclose(q[:, j], middle + A / arm * np.sin(W * tau), atol=1e-9)
        np.testing.assert_allclose(qd[:, j], A / arm * W * np.cos(W * tau), atol=1e-9)
        np.testing.assert_allclose(qdd[:, j], -A / arm * W**2 * np.sin(W * tau), atol=1e-9)
        others = np.delete(np.arange(robot.n_joints), j)
        assert np.ptp(q[:, others], axis=0).max() < 1e-12
        # rest at the center at both ends of the ramps
        q, qd, qdd = plan.trajectory.evaluate(np.array([ramp_in.start_time, ramp_out.end_time]))
        np.testing.assert_allclose(q[:, j], middle, atol=1e-12)
        np.testing.assert_allclose(np.hstack([qd, qdd]), 0.0, atol=1e-12)


def test_ramped_sine_derivatives_match_finite_differences_and_its_file_form():
    sine = RampedSine(("a", "b"), [0.1, -0.2], [0.05, 0.0], angular_frequency=2.0, cycles=1, ramp_duration=0.7)
    assert sine.duration == pytest.approx(1.4 + math.pi)
    t = np.linspace(0.01, sine.duration - 0.01, 300)
    h = 1e-6
    q, qd, qdd = sine.evaluate(t)
    np.testing.assert_allclose(qd, (sine.evaluate(t + h)[0] - sine.evaluate(t - h)[0]) / (2 * h), atol=1e-7)
    np.testing.assert_allclose(qdd, (sine.evaluate(t + h)[1] - sine.evaluate(t - h)[1]) / (2 * h), atol=1e-6)
    again = trajectory_from_dict(sine.to_dict())
    np.testing.assert_array_equal(again.evaluate(t)[0], q)
    with pytest.raises(TrajectoryError, match="cycles must be an integer >= 1, got 0"):
        RampedSine(("a",), [0.0], [0.1], 1.0, 0, 1.0)


def test_markers_carry_the_joint_and_the_bag_reader_segments_the_stage(plan, tmp_path):
    events = stage_events(plan)
    cylinder_events = [event for event in events if event.kind == "cylinder"]
    assert cylinder_events and all(event.joint_name in ("j2", "j5") for event in cylinder_events)
    assert STAGE_KINDS.index("cylinder") == 6
    t, q, qd, _, labels, _ = plan.sample(RATE)
    t0 = 1_000_000_000_000
    with BagWriter(tmp_path / "bag") as writer:
        for event in events:
            writer.write_stage(t0 + round(event.stamp * 1e9), event.kind, event.cycle, event.start,
                               label=event.label, joint_name=event.joint_name)
        for k in range(t.size):
            writer.write_joint_state(t0 + round(t[k] * 1e9), plan.joint_names, q[k], qd[k], np.zeros(q.shape[1]))
    recording = read_bag(tmp_path / "bag")
    cylinder_rows = [row for row in plan.stages if row.kind == "cylinder"]
    start, end = cylinder_rows[0].start_time, cylinder_rows[-1].end_time
    # every sample stamped in [start, end) of the plan's cylinder rows, and no other, is labelled cylinder
    inside = (t >= start - 1e-9) & (t < end - 1e-9)
    np.testing.assert_array_equal(recording.stage == "cylinder", inside)
    np.testing.assert_array_equal(labels == "cylinder", inside)
    selected = recording.select(stage="cylinder")
    assert selected.time.size == int(inside.sum())


def test_stage_file_form_and_its_mistakes():
    stage = cylinder_stage_from_dict({"amplitude": 0.006, "frequency": 0.05 / (2 * math.pi), "cycles": 3,
                                      "centers": {"wrist": 0.2}}, CYLINDERS, "s.yaml")
    assert stage.angular_frequency == pytest.approx(0.05) and stage.cycles == 3
    assert stage.ramp_duration == pytest.approx(math.pi / 0.05)
    assert [c.center for c in stage.cylinders] == [None, 0.2]
    assert stage.joint_amplitude(stage.cylinders[1]) == pytest.approx(-0.12)
    for data, message in (
            ({"amplitude": 6.0, "angular_frequency": 0.05}, "s.yaml: cylinder stage amplitude 6 m is larger than "
                                                            r"0.5 m \(millimetres\?\)"),
            ({"amplitude": 0.006}, "s.yaml: give exactly one of angular_frequency"),
            ({"amplitude": 0.006, "angular_frequency": 0.05, "frequency": 1.0}, "give exactly one of"),
            ({"amplitude": 0.006, "angular_frequency": 0.05, "period": 3}, "s.yaml: unknown key 'period'"),
            ({"amplitude": 0.006, "angular_frequency": 0.05, "centers": {"arm": 0.1}},
             re.escape("s.yaml: centers lists unknown cylinder(s) ['arm']; the configuration has ['boom', 'wrist']")),
            ({"amplitude": 0.006, "angular_frequency": -1.0}, r"angular_frequency must be finite and > 0 \[rad/s\]")):
        with pytest.raises(TrajectoryError, match=message):
            cylinder_stage_from_dict(data, CYLINDERS, "s.yaml")
    with pytest.raises(TrajectoryError, match="cylinder boom: moment_arm must not be 0"):
        CylinderExcitation("boom", "j2", 0.0)
    with pytest.raises(TrajectoryError, match="joint 'j2' appears more than once"):
        CylinderStage(A, W, (CYLINDERS[0], CylinderExcitation("arm", "j2", 0.1)))


def test_a_plan_with_the_stage_survives_its_file_and_names_a_joint_the_robot_lacks(plan, robot, tmp_path):
    save_plan(plan, tmp_path / "plan.yaml")
    again = load_plan(tmp_path / "plan.yaml")
    assert again.stages == plan.stages
    wrist = {"name": "wrist", "joint": "j5", "moment_arm": -0.05, "center": 0.1}
    assert again.settings["cylinder_stage"]["cylinders"][1] == wrist
    message = ("cylinder stage: cylinder x lists unknown joint(s) ['j9']; the robot has "
               "['j1', 'j2', 'j3', 'j4', 'j5', 'j6']")
    with pytest.raises(TrajectoryError, match=re.escape(message)):
        build_protocol(robot, cycles=1, cylinder_stage=CylinderStage(A, W, (CylinderExcitation("x", "j9", 0.1),)))
    # an amplitude the joint's range cannot hold is a limit violation named by stage and joint
    with pytest.raises(TrajectoryError, match="in stage cylinder/"):
        build_protocol(robot, cycles=1, cylinder_stage=CylinderStage(0.2, W, (CylinderExcitation("x", "j4", 0.1),)))


@pytest.fixture(scope="module")
def two_point(robot):
    """Cylinders c2 and c4 of the curtain-wall arm, attached at two points (moment arm varying with q)."""
    from robot_dynid.hydraulics.attachment import CylinderGeometry, displacement_function, driven_joint
    from robot_dynid.hydraulics.simulation import curtain_wall_cylinders

    configs = [config for config in curtain_wall_cylinders(robot) if config.name in ("c2", "c4")]
    cylinders = tuple(CylinderExcitation(config.name, driven_joint(robot, config.attachment, config.name), None,
                                         displacement=displacement_function(robot, config.attachment, config.name))
                      for config in configs)
    geometry = CylinderGeometry(robot, [config.attachment for config in configs], [config.name for config in configs])
    excitation = random_excitation(robot, harmonics=2, period=20.0, amplitude_fraction=0.1, seed=0)
    amplitude = 0.03       # [m]: the moment arm changes by tens of percent over the stroke
    plan = build_protocol(robot, cycles=1, excitation=excitation, excitation_periods=1, speed_fractions=[0.5],
                          warmup_duration=0.0, cylinder_stage=CylinderStage(amplitude, W, cylinders, cycles=2),
                          friction_range_fraction=0.2, cycloid_range_fraction=0.2)
    return plan, geometry, cylinders, amplitude


def test_a_two_point_cylinder_displacement_is_the_paper_sine_within_its_limits(robot, two_point, tmp_path):
    """The attachment's own geometry (pinocchio, not the fitted inverse) gives x = x_c + A sin(w tau) on the
    pure sine within 1e-6 m, the moving joint stays inside its limits and the others hold."""
    plan, geometry, cylinders, amplitude = two_point
    rows = [row for row in plan.cycle_stages if row.kind == "cylinder" and row.label == "sine"]
    assert [row.joint for row in rows] == ["j2", "j4"] == [cylinder.joint for cylinder in cylinders]
    lower, upper = robot.limit_arrays()[:2]
    arms = []
    for index, row in enumerate(rows):
        tau = np.linspace(0.0, row.duration, 801)
        q, qd, qdd = plan.trajectory.evaluate(row.start_time + tau)
        assert np.all((q >= lower) & (q <= upper))
        j = robot.joint_names.index(row.joint)
        assert np.ptp(np.delete(q, j, axis=1), axis=0).max() < 1e-12
        motion = geometry.motion(q, qd, qdd)
        x = motion.x[:, index]
        center = x[0]                            # sin(0) = 0 at the start of the pure sine
        np.testing.assert_allclose(x, center + amplitude * np.sin(W * tau), rtol=0, atol=1e-6)
        np.testing.assert_allclose(motion.xd[:, index], amplitude * W * np.cos(W * tau), rtol=0, atol=1e-6)
        np.testing.assert_allclose(motion.xdd[:, index], -amplitude * W**2 * np.sin(W * tau), rtol=0, atol=1e-6)
        arms.append(motion.moment_arms[:, index, j])
    assert max(np.ptp(arm) / np.abs(arm).mean() for arm in arms) > 0.1      # the constant-arm plan would be off
    save_plan(plan, tmp_path / "plan.yaml")
    loaded = load_plan(tmp_path / "plan.yaml")
    t = np.linspace(rows[0].start_time, rows[-1].end_time, 301)
    for expected, actual in zip(plan.trajectory.evaluate(t), loaded.trajectory.evaluate(t)):
        np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-12)


def test_a_two_point_cylinder_beyond_its_reach_is_refused_naming_it(robot, two_point):
    _, _, cylinders, _ = two_point
    with pytest.raises(TrajectoryError, match=r"cylinder stage: cylinder c2 \(joint j2\): x = \S+ -\+ 0\.5 m is not "
                                              r"reachable moving the joint within its limits .* it reaches x in"):
        build_protocol(robot, cycles=1, warmup_duration=0.0, speed_fractions=[0.5],
                       cylinder_stage=CylinderStage(0.5, W, cylinders[:1]))
