"""Payloads: the body, its torques, the artifact section, its identification with the arm's model fixed.

Expected torques come from pinocchio's RNEA on a model built by pinocchio's own URDF parser with the payload
added as a body at the URDF frame (``rnea_reference.rnea_urdf_with_payload``): not from our regressor, our
frame lookup or our parameter maps. The arm is the UR5 URDF with plausible link parameters; the tool is
2.8 kg at ``tool0`` (the payload of the issue's real recordings), centre of mass 8 cm out.
"""
import dataclasses
import re

import numpy as np
import pinocchio as pin
import pytest

from rnea_reference import rnea_urdf_with_payload
from robot_dynid.errors import DataError, ModelFileError, PayloadError, RobotDescriptionError, TrajectoryError
from robot_dynid.estimation.payload import PayloadSettings, identify_payload
from robot_dynid.estimation.streaming import StreamingIdentifier, StreamingSettings
from robot_dynid.experiment.excitation import optimize_payload_excitation, random_excitation
from robot_dynid.experiment.protocol import build_payload_protocol
from robot_dynid.experiment.trajectories import FourierTrajectory
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.link_inertials import pseudo_inertia
from robot_dynid.model.payload import Payload, load_payload, payload_frames, plausibility_warnings
from robot_dynid.model.robot_description import build_pinocchio_model, link_frame_placements
from robot_dynid.model.robot_loader import load_robot, robot_from_dict
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.recording import Recording

RATE = 500.0        # Hz
DURATION = 60.0     # s: a minute, as industrial controllers take
INERTIA = np.array([[0.01, 0.001, -0.002], [0.001, 0.012, 0.0005], [-0.002, 0.0005, 0.008]])  # kg m^2 about the com
TOOL = ("tool0", 2.8, np.array([0.01, -0.02, 0.08]), INERTIA)
URDF_ORDER = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]


def tool_payload(frame="tool0"):
    return Payload(frame, TOOL[1], tuple(TOOL[2]), tuple(INERTIA[i, j] for i, j in URDF_ORDER))


@pytest.fixture(scope="module")
def ur5():
    """The UR5 URDF robot, its link parameters and the arm's model (no friction), exact."""
    robot = load_robot(find_package_file("config", "robots", "ur5_urdf.yaml"))
    parameters = plausible_parameters(robot, seed=1)
    return robot, parameters, DynamicModel.from_standard(robot, parameters, std=1e-3)


def recording(robot, parameters, payload, trajectory, noise=0.01, seed=1):
    """A minute at 500 Hz of ``trajectory``; torques of pinocchio's RNEA with ``payload`` (or None) and Gaussian
    noise of ``noise`` times each joint's torque RMS."""
    t = np.arange(0.0, DURATION, 1.0 / RATE)
    q, qd, qdd = trajectory.evaluate(t)
    tau = rnea_urdf_with_payload(robot.urdf, parameters, payload, q, qd, qdd)
    tau = tau + np.random.default_rng(seed).normal(size=tau.shape) * noise * np.sqrt(np.mean(tau**2, axis=0))
    return Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau, source="rnea")


def excitation(robot, seed=3):
    fourier = random_excitation(robot, harmonics=5, period=10.0, amplitude_fraction=0.5, seed=seed)
    return dataclasses.replace(fourier, duration=DURATION)


# --------------------------------------------------------------------------- the body and its torques

def test_a_model_with_a_payload_gives_pinocchios_rnea_of_the_loaded_arm(ur5):
    robot, parameters, arm = ur5
    loaded = arm.with_payload(tool_payload())
    q, qd, qdd = np.random.default_rng(0).uniform(-1.5, 1.5, (3, 20, 6))
    expected = rnea_urdf_with_payload(robot.urdf, parameters, TOOL, q, qd, qdd)
    np.testing.assert_allclose(loaded.torque(q, qd, qdd), expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())
    unloaded = rnea_urdf_with_payload(robot.urdf, parameters, None, q, qd, qdd)
    assert np.abs(expected - unloaded).max() > 1.0      # the payload matters: N m, not rounding
    np.testing.assert_allclose(loaded.without_payload().torque(q, qd, qdd), unloaded, rtol=1e-9,
                               atol=1e-9 * np.abs(unloaded).max())


def test_a_payload_on_a_standard_dh_robot_is_taken_about_the_last_dh_link_frame():
    """The UR5's DH table: the payload's frame is DH frame 6 (link frame of the last link), which standard DH
    puts at the tip; pinocchio adds the body there (the link frame's placement in the last joint's frame)."""
    robot = load_robot(find_package_file("config", "robots", "ur5.yaml"))
    parameters = plausible_parameters(robot, seed=2)
    arm = DynamicModel.from_standard(robot, parameters, std=1e-3)
    assert list(payload_frames(robot)) == [f"{robot.joint_names[-1]}_link"]
    loaded = arm.with_payload(tool_payload(f"{robot.joint_names[-1]}_link"))
    model = build_pinocchio_model(robot)
    placements = link_frame_placements(model)
    for joint_id, placement in enumerate(placements, start=1):
        model.inertias[joint_id] = placement.act(
            pin.Inertia.FromDynamicParameters(parameters[10 * joint_id - 10:10 * joint_id]))
    model.appendBodyToJoint(model.njoints - 1, pin.Inertia(TOOL[1], TOOL[2], INERTIA), placements[-1])
    data = model.createData()
    q, qd, qdd = np.random.default_rng(1).uniform(-1.5, 1.5, (3, 10, 6))
    expected = np.array([pin.rnea(model, data, *state) for state in zip(q, qd, qdd)])
    np.testing.assert_allclose(loaded.torque(q, qd, qdd), expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())


@pytest.mark.parametrize("fields, message", [
    ({"mass": -1.0}, r"not physically consistent: mass -1.0 kg must be > 0"),
    ({"mass": 0.0}, r"mass 0.0 kg must be > 0"),
    ({"inertia": (1.0, 0.0, 0.0, 1.0, 0.0, 3.0)},
     r"principal moments about the centre of mass \(1, 1, 3 kg m\^2\) violate the triangle inequality: the "
     r"largest exceeds the sum of the other two by 1 kg m\^2"),
    ({"inertia": (-0.1, 0.0, 0.0, 1.0, 0.0, 1.0)}, r"has a negative principal moment \(-0.1, 1, 1 kg m\^2\)"),
    ({"com": (0.0, float("nan"), 0.0)}, r"payload com\[1\] must be finite, got nan"),
    ({"inertia": (1.0, 0.0, 0.0)}, r"payload inertia must be a list of 6 numbers \[kg m\^2\]"),
    ({"mass": 2e5}, r"payload mass 200000.0 kg is above 100000 kg \(grams given as kilograms\?\)"),
    ({"frame": ""}, r"payload frame must be a non-empty string"),
    ({"mass": 5e-324}, r"payload mass 5e-324 kg is below 0.001 kg \(1 g\)"),
    ({"com": (1e308, 0.0, 0.0)},
     r"payload com \[1e\+308, 0.0, 0.0\] m is 1e\+308 m from frame 'tool0', more than 10 m"),
    ({"inertia": (1e308, 0.0, 0.0, 1e308, 0.0, 1e308)}, r"has an entry above 1e\+07 kg m\^2"),
    ({"mass": 0.01, "inertia": (2.0, 0.0, 0.0, 2.0, 0.0, 2.0)},
     r"an entry of 2 kg m\^2 needs a body over 10 m across for its 0.01 kg"),
])
def test_a_payload_no_body_can_have_is_refused_naming_why(fields, message):
    good = {"frame": "tool0", "mass": 2.0, "com": (0.0, 0.0, 0.1), "inertia": (0.01, 0.0, 0.0, 0.01, 0.0, 0.01)}
    with pytest.raises(PayloadError, match=message):
        Payload(**{**good, **fields})


def test_a_point_mass_and_a_thin_rod_are_bodies():
    """The boundary of consistency: zero inertia about the com, and moments (0, a, a) (a + 0 = a)."""
    Payload("tool0", 1.0, (0.0, 0.0, 0.1), (0.0,) * 6)
    Payload("tool0", 1.0, (0.0, 0.0, 0.1), (0.0, 0.0, 0.0, 0.02, 0.0, 0.02))


def test_an_unknown_frame_is_refused_naming_the_frames_there_are(ur5):
    _, _, arm = ur5
    with pytest.raises(ModelFileError, match=r"payload.frame: payload frame 'flange' is not fixed to the last link of "
                                             r"robot 'ur5_urdf'; its frames are \['wrist_3_link', 'tool0'\]"):
        arm.with_payload(tool_payload("flange"))


def test_implausible_payloads_are_reported():
    assert plausibility_warnings(tool_payload(), rated_payload=5.0) == []
    heavy = dataclasses.replace(tool_payload(), mass=11.0)
    assert plausibility_warnings(heavy, rated_payload=5.0) == [
        "implausible payload: mass 11 kg is more than 2 times the robot's rated payload of 5 kg"]
    assert plausibility_warnings(heavy) == []       # no rated payload known: not checked
    far = Payload("tool0", 1.0, (0.0, 1.2, 0.5), (0.0,) * 6)
    assert plausibility_warnings(far) == ["implausible payload: centre of mass 1.3 m from frame 'tool0', farther "
                                          "than 1 m"]
    assert plausibility_warnings(far, max_com_distance=1.5) == []


# --------------------------------------------------------------------------- the artifact

def test_the_payload_section_round_trips_and_a_model_without_one_keeps_its_bytes(ur5, tmp_path):
    _, _, arm = ur5
    plain = arm.to_yaml()
    assert "payload" not in arm.to_dict()
    loaded = arm.with_payload(tool_payload(), {"source": "test"})
    text = loaded.to_yaml()
    keys = list(loaded.to_dict())
    assert keys.index("links") < keys.index("payload") < keys.index("metrics")
    back = DynamicModel.load(loaded.save(tmp_path / "arm_tool.yaml"))
    assert back.payload == tool_payload() and back.metrics["payload"] == {"source": "test"}
    assert back.to_yaml() == text
    assert back.without_payload().to_yaml() == plain          # detached: the arm's file, byte for byte
    q = np.random.default_rng(2).uniform(-1.0, 1.0, (3, 6))
    np.testing.assert_array_equal(back.torque(*q), loaded.torque(*q))


@pytest.mark.parametrize("change, message", [
    (lambda p: p.update(mass=-2.8), r"arm_tool.yaml: payload: payload at 'tool0' is not physically consistent: "
                                    r"mass -2.8 kg must be > 0"),
    (lambda p: p.update(frame="flange"), r"arm_tool.yaml: payload.frame: payload frame 'flange' is not fixed"),
    (lambda p: p.update(inertia=[0.01, 0.0, 0.0, 0.01, 0.0, 0.05]), r"violate the triangle inequality"),
    (lambda p: p.update(colour="red"), r"arm_tool.yaml: payload: unknown key 'colour'"),
    (lambda p: p.pop("com"), r"arm_tool.yaml: payload: missing key 'com'"),
])
def test_a_model_file_with_a_bad_payload_is_one_line(ur5, tmp_path, change, message):
    _, _, arm = ur5
    data = arm.with_payload(tool_payload()).to_dict()
    change(data["payload"])
    path = tmp_path / "arm_tool.yaml"
    path.write_text(__import__("yaml").safe_dump(data))
    with pytest.raises(ModelFileError, match=message):
        DynamicModel.load(path)


def test_a_payload_file_with_undetermined_values_is_refused_naming_them(tmp_path, ur5):
    robot, _, _ = ur5
    path = tmp_path / "payload.yaml"
    path.write_text("frame: tool0\nmass: 2.0\ncom: [0.0, 0.0, 0.1]\ninertia: [null, 0.0, 0.0, 0.01, 0.0, 0.01]\n")
    with pytest.raises(PayloadError, match=r"payload.yaml: inertia not determined \(null\)"):
        load_payload(path, robot)
    path.write_text("frame: tool0\nmass: 2.0\ncom: [0.0, 0.0, 0.1]\ninertia: [0.01, 0.0, 0.0, 0.01, 0.0, 0.01]\n"
                    "robot: puma560\n")
    with pytest.raises(PayloadError, match=r"identified on robot 'puma560', not 'ur5_urdf'"):
        load_payload(path, robot)


# --------------------------------------------------------------------------- identification

@pytest.fixture(scope="module")
def loaded_estimate(ur5):
    robot, parameters, arm = ur5
    return identify_payload(arm, recording(robot, parameters, TOOL, excitation(robot)), PayloadSettings(frame="tool0"))


def test_a_minute_of_rnea_torques_with_1_percent_noise_gives_the_payload(loaded_estimate):
    estimate = loaded_estimate
    assert estimate.undetermined == () and estimate.warnings == ()
    payload = estimate.payload
    assert payload.frame == "tool0"
    assert abs(payload.mass - TOOL[1]) < 0.01 * TOOL[1]
    assert np.linalg.norm(np.subtract(payload.com, TOOL[2])) < 0.005
    inertia = np.array(payload.inertia)
    std = np.array(estimate.field_std[4:])
    truth = np.array([INERTIA[i, j] for i, j in URDF_ORDER])
    assert np.all(np.abs(inertia - truth) <= 3.0 * std), (inertia - truth) / std
    assert std.max() < 0.003                                  # informative: well below the moments (~0.01)
    after, before = estimate.residual_after, estimate.residual_before
    assert all(after[joint] < 0.1 * before[joint] for joint in before)


def test_an_unloaded_recording_gives_a_mass_within_3_std_of_zero(ur5):
    robot, parameters, arm = ur5
    estimate = identify_payload(arm, recording(robot, parameters, None, excitation(robot), seed=4),
                                PayloadSettings(frame="tool0"))
    mass, std = estimate.fields[0], estimate.field_std[0]
    assert 0.0 < std < 0.01 and abs(mass) <= 3.0 * std
    assert estimate.payload is None and estimate.fields[1:4] == (None, None, None)   # no com of no mass


def test_the_consistent_fit_is_a_body_where_least_squares_is_not(ur5):
    """Unloaded: least squares fits noise with a pseudo-inertia that no body has; the consistent fit stays
    positive semidefinite (METHODS.md section 9)."""
    robot, parameters, arm = ur5
    data = recording(robot, parameters, None, excitation(robot), seed=1)
    least_squares = identify_payload(arm, data, PayloadSettings(frame="tool0", consistent=False))
    consistent = identify_payload(arm, data, PayloadSettings(frame="tool0"))
    assert np.linalg.eigvalsh(pseudo_inertia(least_squares.parameters))[0] < -1e-4
    assert np.linalg.eigvalsh(pseudo_inertia(consistent.parameters))[0] >= 0.0


def test_a_known_mass_leaves_nine_parameters(ur5):
    robot, parameters, arm = ur5
    estimate = identify_payload(arm, recording(robot, parameters, TOOL, excitation(robot, seed=5), seed=2),
                                PayloadSettings(frame="tool0", mass=2.8))
    assert estimate.known_mass and estimate.fields[0] == 2.8 and estimate.field_std[0] == 0.0
    assert estimate.parameter_std[0] == 0.0
    assert np.linalg.norm(np.subtract(estimate.payload.com, TOOL[2])) < 0.005


def slow_wrist(robot):
    """Joints 1 to 3 creeping (a 60 s period), the wrist still."""
    fast = excitation(robot)
    scale = np.array([0.05, 0.05, 0.05, 0.0, 0.0, 0.0])[:, None]
    return FourierTrajectory(robot.joint_names, 60.0, fast.q0, fast.a * scale, fast.b * scale, duration=DURATION)


def test_a_slow_motion_that_barely_moves_the_wrist_names_what_it_cannot_determine(ur5):
    """Without a prior, gravity gives the mass and centre of mass, but nothing accelerates the tool enough to see
    its inertia, which is reported undetermined, not invented."""
    robot, parameters, arm = ur5
    estimate = identify_payload(arm, recording(robot, parameters, TOOL, slow_wrist(robot)),
                                PayloadSettings(frame="tool0", inertia_prior=None))
    assert {"Ixx", "Iyy", "Izz"} <= set(estimate.undetermined)
    assert estimate.fields[4:] == (None,) * 6 and estimate.payload is None
    assert abs(estimate.fields[0] - TOOL[1]) < 0.01 * TOOL[1]          # what gravity shows is still there
    assert any("inertia[0]" in warning and "Ixx" in warning for warning in estimate.warnings), estimate.warnings


def test_the_solid_body_prior_gives_the_inertia_the_data_do_not_see_and_says_so(ur5):
    """With the default prior the same data give a payload: its inertia is that of the solid cylinder of 1000 kg/m^3
    the mass and centre of mass imply (axis from the frame through the centre of mass, length 2 |c|: m r^2 / 2 about
    its axis, m (3 r^2 + l^2) / 12 across), and the prior's share of each inertia parameter is stated, near 1."""
    robot, parameters, arm = ur5
    estimate = identify_payload(arm, recording(robot, parameters, TOOL, slow_wrist(robot)),
                                PayloadSettings(frame="tool0"))
    assert estimate.payload is not None and estimate.undetermined == ()
    prior = estimate.inertia_prior
    mass, com = prior["from_mass"], np.array(prior["from_com"])      # the first fit's, without the prior
    assert abs(mass - estimate.fields[0]) < 1e-3 * mass
    length = 2.0 * np.linalg.norm(com)
    radius = np.sqrt(mass / (1000.0 * np.pi * length))
    axis = com / np.linalg.norm(com)
    cylinder = (mass * (3 * radius**2 + length**2) / 12.0 * (np.eye(3) - np.outer(axis, axis))
                + 0.5 * mass * radius**2 * np.outer(axis, axis))
    expected = np.array([cylinder[i, j] for i, j in URDF_ORDER])
    assert prior["body"].startswith("solid cylinder of 1000 kg/m^3")
    np.testing.assert_allclose(prior["values"], expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(estimate.payload.inertia, expected, atol=0.1 * prior["std"])
    assert min(prior["prior_share"].values()) > 0.9
    assert any("rest mostly on the prior" in warning for warning in estimate.warnings)
    assert prior["std"] == pytest.approx(0.5 * np.linalg.eigvalsh(cylinder)[-1])


# --------------------------------------------------------------------------- excitation and protocol

def test_a_payload_excitation_moves_the_wrist_holds_the_rest_and_conditions_the_payload_columns(ur5):
    robot, _, _ = ur5
    pose = np.array([0.3, -1.0, 1.2, 0.0, 0.0, 0.0])
    design = optimize_payload_excitation(robot, duration=60.0, period=10.0, harmonics=3, frame="tool0", pose=pose,
                                         n_starts=1, max_iterations=15)
    trajectory = design.trajectory
    assert trajectory.duration == 60.0 and design.n_base_parameters == 10
    t = np.linspace(0.0, 60.0, 601)
    q, qd, _ = trajectory.evaluate(t)
    np.testing.assert_allclose(q[:, :3], np.tile(pose[:3], (t.size, 1)), atol=1e-12)
    assert np.all(np.abs(qd[:, 3:]).max(axis=0) > 0.1)          # the wrist moves
    assert design.condition_number < design.initial_value < np.inf
    assert design.check.ok


def test_payload_moving_joints_are_joints_of_the_robot_named_once(ur5):
    robot, _, _ = ur5
    joints = ("['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint', 'wrist_2_joint', "
              "'wrist_3_joint']")
    for moving, message in ((["wrist_3_joint", "gripper"], "moving joints lists unknown joint(s) ['gripper']"),
                            (["wrist_3_joint"] * 2, "moving joints lists joint(s) ['wrist_3_joint'] more than once")):
        with pytest.raises(TrajectoryError, match=f"^{re.escape(f'{message}; robot {robot.name!r} has {joints}')}$"):
            optimize_payload_excitation(robot, frame="tool0", moving_joints=moving)
    with pytest.raises(TrajectoryError, match="moving joints must be a non-empty list of joints of robot"):
        optimize_payload_excitation(robot, frame="tool0", moving_joints=[])


def test_a_payload_protocol_is_a_stage_of_its_own(ur5):
    robot, _, _ = ur5
    plan = build_payload_protocol(robot, excitation(robot), cycles=2, rest_duration=1.0)
    assert [(row.kind, row.label) for row in plan.cycle_stages] == [("rest", "hold"), ("payload", "fourier")]
    _, _, _, _, labels, cycles = plan.sample(10.0)
    assert set(labels) == {"rest", "payload"} and set(cycles) == {0, 1}
    assert plan.cycle_duration == pytest.approx(61.0)


# --------------------------------------------------------------------------- online

def stream_stage(session, kind, data):
    session.start_stage(kind)
    for k in range(data.n_samples):
        session.add_sample(100.0 + data.time[k], data.q[k], data.qd[k], data.tau[k])
    return session.end_stage(kind)


def test_a_payload_stage_online_publishes_the_arm_with_the_payload(ur5):
    robot, parameters, arm = ur5
    data = recording(robot, parameters, TOOL, excitation(robot)).take(slice(0, 10000))     # 20 s
    settings = StreamingSettings(stages=("excitation", "payload"), max_samples=4000,
                                 payload=PayloadSettings(frame="tool0"))
    outcome = stream_stage(StreamingIdentifier(robot, settings, arm_model=arm), "payload", data)
    assert outcome.accepted, outcome.message
    assert "(payload 2.8" in outcome.message and "kg at tool0) accepted" in outcome.message
    payload = outcome.model.payload
    assert abs(payload.mass - TOOL[1]) < 0.01 * TOOL[1] and np.linalg.norm(np.subtract(payload.com, TOOL[2])) < 0.005
    assert outcome.model.without_payload().to_yaml() == arm.to_yaml()          # the arm is what was fixed
    assert outcome.model.metrics["payload"]["n_samples"] < data.n_samples      # the hold-out was held out


def test_a_payload_stage_without_an_arm_model_is_an_error_naming_it(ur5):
    robot, parameters, _ = ur5
    data = recording(robot, parameters, TOOL, excitation(robot)).take(slice(0, 500))
    session = StreamingIdentifier(robot, StreamingSettings(stages=("payload",)))
    with pytest.raises(DataError, match=r"a payload stage needs the arm's model"):
        stream_stage(session, "payload", data)
    ignored = StreamingIdentifier(robot, StreamingSettings(stages=("excitation",)))
    assert stream_stage(ignored, "payload", data) is None              # not selected: nothing to do


@pytest.mark.parametrize("value, message", [
    (-5.0, r"rated_payload must be finite and in \(0, 5000\] \[kg\], got -5.0"),
    (5e6, r"rated_payload must be finite and in \(0, 5000\] \[kg\], got 5000000.0"),
    ("5 kg", r"rated_payload must be a number, got str '5 kg'"),
])
def test_a_rated_payload_is_kilograms_of_a_real_arm(value, message):
    robot = load_robot(find_package_file("config", "robots", "ur5_urdf.yaml"))
    assert robot.rated_payload == 5.0
    assert robot_from_dict(robot.to_dict()).rated_payload == 5.0
    assert "rated_payload" not in dataclasses.replace(robot, rated_payload=None).to_dict()
    with pytest.raises(RobotDescriptionError, match=message):
        robot_from_dict({**robot.to_dict(), "rated_payload": value})
