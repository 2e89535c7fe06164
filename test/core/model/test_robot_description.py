"""Robot descriptions: shipped configs, DH kinematics, URDF loading and validation messages."""
import copy
import glob
import math
import os

import numpy as np
import pinocchio as pin
import pytest
import yaml

from robot_dynid.errors import RobotDescriptionError
from robot_dynid.model.joint_chains import joint_motion_subspace
from robot_dynid.model.robot_description import (DHRow, JointLimits, RobotDescription, build_pinocchio_model,
                                                 link_frame_placements, xml_or_file)
from robot_dynid.model.robot_loader import load_robot, robot_from_dict
from robot_dynid.model.urdf import robot_from_urdf
from robot_dynid.package_files import find_package_file
from repo_paths import ROBOTS as ROBOTS_PATH, TEST_DATA

ROBOTS, DATA = str(ROBOTS_PATH), str(TEST_DATA)
CONFIGS = sorted(glob.glob(os.path.join(ROBOTS, "*.yaml")))
DH_CONFIGS = [path for path in CONFIGS if "urdf:" not in open(path).read()]


def _rot_x(angle):
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1.0]])


def _rot_z(angle):
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])


def _translation(x, y, z):
    matrix = np.eye(4)
    matrix[:3, 3] = x, y, z
    return matrix


def _dh_forward(robot, q):
    """Homogeneous transforms of the DH frames 1..n, straight from the textbook products."""
    convention = robot.dh_convention

    def row_matrix(row, angle):
        if convention == "standard":
            return (_rot_z(angle + row.theta) @ _translation(0, 0, row.d)
                    @ _translation(row.a, 0, 0) @ _rot_x(row.alpha))
        return (_rot_x(row.alpha) @ _translation(row.a, 0, 0) @ _rot_z(angle + row.theta)
                @ _translation(0, 0, row.d))

    transform = np.eye(4) if robot.base is None else row_matrix(robot.base, 0.0)
    frames = []
    for row, angle in zip(robot.dh, q):
        transform = transform @ row_matrix(row, angle)
        frames.append(transform)
    return frames


def _link_frames_world(robot, q):
    model = build_pinocchio_model(robot)
    data = model.createData()
    pin.framesForwardKinematics(model, data, np.asarray(q, dtype=float))
    return [data.oMf[model.getFrameId(f"{name}_link")].homogeneous for name in robot.joint_names]


@pytest.mark.parametrize("path", CONFIGS, ids=os.path.basename)
def test_shipped_config_loads_and_round_trips(path):
    robot = load_robot(path)
    assert robot.n_joints == (7 if "panda" in path or "track" in path else 6)
    assert robot_from_dict(robot.to_dict()) == robot
    assert build_pinocchio_model(robot).nq == robot.n_joints


@pytest.mark.parametrize("path", DH_CONFIGS, ids=os.path.basename)
def test_link_frames_follow_the_dh_products(path):
    robot = load_robot(path)
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = [rng.uniform(*limit.position) for limit in robot.limits]
        for expected, actual in zip(_dh_forward(robot, q), _link_frames_world(robot, q)):
            np.testing.assert_allclose(actual, expected, atol=1e-12)


def test_ur5_zero_pose_is_the_published_stretched_pose():
    # UR5 at q = 0: flange at (a2 + a3, -(d4 + d6), d1 - d5) in the base frame
    robot = load_robot(os.path.join(ROBOTS, "ur5.yaml"))
    flange = _link_frames_world(robot, np.zeros(6))[-1][:3, 3]
    np.testing.assert_allclose(flange, [-0.425 - 0.39225, -(0.10915 + 0.0823),
                                        0.089159 - 0.09465], atol=1e-12)


def test_panda_zero_pose_is_franka_straight_up_pose():
    # Franka's kinematics at q = 0: frame 7 at x = a4 - a5 + a7 = 0.088, z = d1 + d3 + d5
    robot = load_robot(os.path.join(ROBOTS, "panda.yaml"))
    frame7 = _link_frames_world(robot, np.zeros(7))[-1][:3, 3]
    np.testing.assert_allclose(frame7, [0.088, 0.0, 0.333 + 0.316 + 0.384], atol=1e-12)


def test_curtain_wall_arm_moves_in_a_vertical_plane():
    # base row alpha = 90 deg turns all (parallel) joint axes horizontal: every link frame
    # stays in the world x-z plane, and its axis is the world -y / +y direction
    robot = load_robot(os.path.join(ROBOTS, "curtain_wall_arm.yaml"))
    rng = np.random.default_rng(0)
    q = [rng.uniform(*limit.position) for limit in robot.limits]
    for frame in _link_frames_world(robot, q):
        assert abs(frame[1, 3]) < 1e-12
        assert abs(abs(frame[1, 2]) - 1.0) < 1e-12


def test_er3a_keeps_gear_ratios_and_converts_degrees(er3a_robot):
    robot = er3a_robot
    assert [drive.gear_ratio for drive in robot.drives] == [121.0, 121.0, 101.0, 75.48, 81.0, 50.0]
    assert robot.drives[2].rated_motor_torque == 0.318
    assert robot.limits[0].velocity == pytest.approx(math.radians(230), abs=1e-4)
    assert robot.dh[1].theta == pytest.approx(math.pi / 2)


def test_motor_currents_become_joint_torques_with_each_joints_drive(er3a_robot):
    data = yaml.safe_load(open(os.path.join(ROBOTS, "er3a.yaml"), encoding="utf-8"))
    constants = [0.5, 0.5, 0.4, -0.3, 0.2, 0.2]       # N m/A; joint 4 counts current backwards
    for joint, constant in zip(data["joints"], constants):
        joint["torque_constant"] = constant
    robot = robot_from_dict(data)
    current = np.array([[1.0, -2.0, 0.5, 1.0, 0.0, 3.0], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]])
    ratios = np.array([121.0, 121.0, 101.0, 75.48, 81.0, 50.0])     # from er3a.yaml
    np.testing.assert_allclose(robot.torque_from_current(current),
                               current * np.array(constants) * ratios, rtol=1e-15)
    assert robot_from_dict(robot.to_dict()) == robot
    with pytest.raises(RobotDescriptionError,
                       match=r"joint 'j1' has no torque_constant \[N m/A\] in robot 'er3a'"):
        er3a_robot.torque_from_current(current)
    data["joints"][2]["torque_constant"] = 0.0
    with pytest.raises(RobotDescriptionError, match=r"joints\[2\] \(j3\)\.torque_constant must be non-zero "
                                                    r"\[N m/A\], got 0\.0$"):
        robot_from_dict(data)


def test_urdf_robots_take_drives_per_joint_name():
    data = yaml.safe_load(open(os.path.join(DATA, "planar_gripper.yaml"), encoding="utf-8"))
    data["urdf"] = os.path.join(DATA, data["urdf"])
    data.update(gear_ratios={"shoulder": 100.0, "elbow": 50.0, "wrist": 30.0},
                torque_constants={"shoulder": 0.2, "elbow": 0.1, "wrist": 0.05})
    robot = robot_from_dict(data)
    np.testing.assert_allclose(robot.torque_from_current([[1.0, 2.0, 4.0]]), [[20.0, 10.0, 6.0]])
    assert robot_from_dict(robot.to_dict()) == robot
    data["torque_constants"] = {"finger": 0.1}
    with pytest.raises(RobotDescriptionError, match=r"torque_constants: joint 'finger' is not one "
                                                    r"of the selected joints"):
        robot_from_dict(data)


def _world_joint_frames(model, q):
    data = model.createData()
    pin.forwardKinematics(model, data, q)
    return [data.oMi[j] for j in range(1, model.njoints)]


def test_ur5_urdf_has_the_kinematics_of_the_dh_table():
    dh = build_pinocchio_model(load_robot(os.path.join(ROBOTS, "ur5.yaml")))
    urdf = build_pinocchio_model(load_robot(os.path.join(ROBOTS, "ur5_urdf.yaml")))
    base_turn = np.diag([-1.0, -1.0, 1.0])            # base_link_inertia is Rz(pi)
    q = np.random.default_rng(1).uniform(-3, 3, 6)
    for joint_id, (frame_dh, frame_urdf) in enumerate(zip(_world_joint_frames(dh, q),
                                                          _world_joint_frames(urdf, q)), start=1):
        np.testing.assert_allclose(frame_urdf.translation, base_turn @ frame_dh.translation,
                                   atol=1e-12)
        axis_dh = frame_dh.rotation @ joint_motion_subspace(dh, joint_id)[3:]
        axis_urdf = frame_urdf.rotation @ joint_motion_subspace(urdf, joint_id)[3:]
        np.testing.assert_allclose(axis_urdf, base_turn @ axis_dh, atol=1e-12)


@pytest.mark.parametrize("joint, expected", [
    (pin.JointModelRX(), [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]),
    (pin.JointModelRUBZ(), [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]),
    (pin.JointModelRevoluteUnaligned(np.array([0.0, 0.6, 0.8])), [0.0, 0.0, 0.0, 0.0, 0.6, 0.8]),
    (pin.JointModelPY(), [0.0, 1.0, 0.0, 0.0, 0.0, 0.0]),
])
def test_joint_motion_subspace_is_read_from_any_pinocchio(joint, expected):
    """Behind a rotated, moving parent joint: S is the joint's own, in its own frame."""
    model = pin.Model()
    parent = model.addJoint(0, pin.JointModelRZ(), pin.SE3(pin.rpy.rpyToMatrix(0.3, -0.2, 0.5), np.ones(3)), "parent")
    joint_id = model.addJoint(parent, joint, pin.SE3(pin.rpy.rpyToMatrix(-0.4, 0.1, 0.2), np.zeros(3)), "joint")
    np.testing.assert_allclose(joint_motion_subspace(model, joint_id), expected, atol=1e-15)


@pytest.mark.parametrize("urdf_file, joints", [
    (os.path.join(ROBOTS, "ur5.urdf"), None),
    (os.path.join(DATA, "planar_gripper.urdf"), ["shoulder", "elbow", "wrist"]),
])
def test_urdf_joint_frames_match_pinocchio_urdf_parser(urdf_file, joints):
    with open(urdf_file, encoding="utf-8") as stream:
        text = stream.read()
    ours = build_pinocchio_model(robot_from_urdf(text, joints=joints))
    reference = pin.buildModelFromXML(text)
    rng = np.random.default_rng(2)
    q = rng.uniform(-1, 1, ours.nq)
    reference_q = pin.neutral(reference)
    reference_data = reference.createData()
    for j, name in enumerate(ours.names[1:]):
        joint = reference.joints[reference.getJointId(name)]
        if joint.nq == 2:                                  # continuous: (cos, sin)
            reference_q[joint.idx_q:joint.idx_q + 2] = math.cos(q[j]), math.sin(q[j])
        else:
            reference_q[joint.idx_q] = q[j]
    pin.forwardKinematics(reference, reference_data, reference_q)
    for j, frame in enumerate(_world_joint_frames(ours, q)):
        expected = reference_data.oMi[reference.getJointId(ours.names[j + 1])]
        np.testing.assert_allclose(frame.homogeneous, expected.homogeneous, atol=1e-12)


def test_urdf_config_selects_joints_and_applies_overrides():
    robot = load_robot(os.path.join(DATA, "planar_gripper.yaml"))
    assert robot.joint_names == ("shoulder", "elbow", "wrist")
    assert robot.limits[0] == JointLimits((-1.5, 1.5), 2.0, 4.0, 40.0)
    assert robot.limits[2].position == (-3.0, 3.0)
    assert robot.limits[2].acceleration == pytest.approx(5.0 * 4.0)   # default 5 x velocity
    assert robot_from_dict(robot.to_dict()) == robot


def test_urdf_continuous_joint_defaults_to_plus_minus_pi():
    with open(os.path.join(DATA, "planar_gripper.urdf"), encoding="utf-8") as stream:
        robot = robot_from_urdf(stream.read(), joints=["shoulder", "elbow", "wrist"])
    assert robot.limits[2].position == (-math.pi, math.pi)
    assert robot.name == "planar_gripper"
    assert robot.continuous == (False, False, True)


def test_urdf_link_frames_are_joint_frames():
    model = build_pinocchio_model(load_robot(os.path.join(DATA, "planar_gripper.yaml")))
    for placement in link_frame_placements(model):
        assert placement.isIdentity()


def _puma_dict():
    with open(os.path.join(ROBOTS, "puma560.yaml"), encoding="utf-8") as stream:
        return yaml.safe_load(stream)


def _with(change):
    data = copy.deepcopy(_puma_dict())
    change(data)
    return data


def _set_joint(index, key, value):
    return lambda data: data["joints"][index].__setitem__(key, value)


@pytest.mark.parametrize("change, message", [
    (lambda d: d.__setitem__("joint", []),
     r"<dict>: robot description: unknown key 'joint'; allowed keys: name, dh_convention, "
     r"joints, gravity, base"),
    (lambda d: d.pop("dh_convention"), r"robot description: missing key 'dh_convention'"),
    (lambda d: d.__setitem__("dh_convention", "craig"),
     r"dh_convention must be one of \['standard', 'modified'\], got 'craig'"),
    (_set_joint(1, "velocity", 2.0), r"joints\[1\] \(j2\): unknown key 'velocity'; allowed keys"),
    (lambda d: d["joints"][0].pop("a"), r"joints\[0\] \(j1\): missing key 'a'"),
    (_set_joint(0, "a", "0.1"), r"joints\[0\] \(j1\)\.a must be a number, got str '0.1'"),
    (_set_joint(0, "d", True), r"joints\[0\] \(j1\)\.d must be a number, got bool"),
    (_set_joint(3, "position_limits", [-1.0]),
     r"joints\[3\] \(j4\)\.position_limits must be a list of 2 numbers \[rad\]"),
    (_set_joint(2, "velocity_limit", 230.0),
     r"joints\[2\] \(j3\)\.velocity_limit = 230.0 rad/s looks like degrees"),
    (_set_joint(0, "position_limits", [-160, 160]),
     r"joints\[0\] \(j1\)\.position_limits = \[-160.0, 160.0\] rad looks like degrees"),
    (_set_joint(0, "alpha", 90), r"joints\[0\] \(j1\)\.alpha = 90.0 rad looks like degrees"),
    (_set_joint(1, "theta_offset", -90), r"joints\[1\] \(j2\)\.theta_offset = -90.0 rad looks"),
    (_set_joint(1, "a", 431.8), r"joints\[1\] \(j2\)\.a = 431.8 m looks like millimetres"),
    (_set_joint(4, "position_limits", [1.0, 1.0]),
     r"joints\[4\] \(j5\)\.position_limits = \[1.0, 1.0\] rad: lower must be < upper"),
    (_set_joint(4, "acceleration_limit", 0.0),
     r"joints\[4\] \(j5\)\.acceleration_limit = 0.0 rad/s\^2 must be > 0"),
    (_set_joint(5, "effort_limit", -1.0), r"joints\[5\] \(j6\)\.effort_limit = -1.0 N m must be"),
    (_set_joint(5, "name", "j5"), r"joints\[5\]\.name 'j5' is a duplicate"),
    (_set_joint(5, "gear_ratio", 0.0), r"joints\[5\] \(j6\)\.gear_ratio must be finite and > 0, got 0.0$"),
    (lambda d: d.__setitem__("gravity", [0.0, -9.81]),
     r"gravity must be a list of 3 numbers \[m/s\^2\]"),
    (lambda d: d.__setitem__("base", {"a": 0.0, "alpha": 1.0, "d": 0.0}),
     r"base: missing key 'theta'"),
    (lambda d: d.__setitem__("base", {"a": 0.0, "alpha": 90.0, "d": 0.0, "theta": 0.0}),
     r"base\.alpha = 90.0 rad looks like degrees"),
    (lambda d: d.__setitem__("joints", []), r"joints must be a non-empty list"),
    (_set_joint(5, "effort_limit", None), r"joints\[5\] \(j6\)\.effort_limit must be a number, got NoneType"),
    (_set_joint(2, "torque_constant", None), r"joints\[2\] \(j3\)\.torque_constant must be a number"),
    (lambda d: d.__setitem__("base", None), r"base must be a mapping, got NoneType"),
])
def test_invalid_dh_descriptions_name_the_field(change, message):
    with pytest.raises(RobotDescriptionError, match=message):
        robot_from_dict(_with(change))


@pytest.mark.parametrize("gravity, message", [
    ([0, 0, -9810], r"/arm\.yaml: gravity \[0, 0, -9810\] has norm 9810 m/s\^2; expected about 9\.81 \(SI: 9\.5 "
                    r"to 10\.1 m/s\^2\) or 0 \(looks like mm/s\^2\)$"),
    ([0, -32.17, 0], r"/arm\.yaml: gravity \[0, -32\.17, 0\] has norm 32\.17 m/s\^2; expected about 9\.81 \(SI: "
                     r"9\.5 to 10\.1 m/s\^2\) or 0$"),
    ([0, 0, -1.0], r"gravity \[0, 0, -1\] has norm 1 m/s\^2"),
    ([9.0, 0, 0], r"gravity \[9, 0, 0\] has norm 9 m/s\^2"),
])
def test_gravity_of_the_wrong_size_is_refused(tmp_path, gravity, message):
    data = _with(lambda d: d.__setitem__("gravity", gravity))
    path = tmp_path / "arm.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(RobotDescriptionError, match=message):
        load_robot(path)


@pytest.mark.parametrize("gravity", [[0.0, 0.0, 0.0], [0.0, -9.81, 0.0], [0.0, 0.0, 9.78], [6.0, 0.0, -7.9],
                                     [0, 0, -10]])
def test_earth_gravity_in_any_direction_or_none_is_accepted(gravity):
    assert robot_from_dict(_with(lambda d: d.__setitem__("gravity", gravity))).gravity == tuple(gravity)


def test_urdf_gravity_is_checked_too():
    with open(os.path.join(DATA, "planar_gripper.urdf"), encoding="utf-8") as stream:
        text = stream.read()
    with pytest.raises(RobotDescriptionError, match=r"^URDF: gravity \[0, 0, -9810\] has norm 9810 m/s\^2; .*mm/s\^2"):
        robot_from_urdf(text, joints=["shoulder", "elbow"], gravity=(0.0, 0.0, -9810.0))
    with pytest.raises(RobotDescriptionError, match=r"^<dict>: gravity \[0, 0, 981\] has norm 981 m/s\^2"):
        robot_from_dict({"urdf": text, "joints": ["shoulder", "elbow"], "gravity": [0, 0, 981]})


def test_load_robot_names_the_file(tmp_path):
    path = tmp_path / "arm.yaml"
    data = _puma_dict()
    data["joints"][2]["velocity_limit"] = 230.0
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(RobotDescriptionError, match=r"arm\.yaml: joints\[2\] \(j3\)\.velocity"):
        load_robot(path)
    path.write_text("name: [unclosed")
    with pytest.raises(RobotDescriptionError, match=r"arm\.yaml: the robot description is not valid YAML: .*line 1"):
        load_robot(path)
    with pytest.raises(RobotDescriptionError, match=r"missing\.yaml: cannot read the robot description: No such file"):
        load_robot(tmp_path / "missing.yaml")


def test_a_description_names_its_xml_inline_or_as_a_file_relative_to_its_own(tmp_path):
    (tmp_path / "arm.urdf").write_text("<robot name='a'/>")
    assert xml_or_file({"urdf": " <robot name='b'/>"}, "urdf", "URDF", tmp_path) == (" <robot name='b'/>", None)
    file = str(tmp_path / "arm.urdf")
    assert xml_or_file({"urdf": "arm.urdf"}, "urdf", "URDF", tmp_path) == ("<robot name='a'/>", file)
    for value in ("", "  ", None, 3):
        with pytest.raises(RobotDescriptionError, match=rf"^mjcf must be a file path or MJCF XML text, got {value!r}$"):
            xml_or_file({"mjcf": value}, "mjcf", "MJCF", tmp_path)


PLANAR_JOINT_URDF = ("<robot name='x'><link name='a'/><link name='b'/><link name='c'/>"
                     "<joint name='j' type='revolute'><parent link='a'/><child link='b'/>"
                     "<limit lower='-1' upper='1' velocity='1'/></joint>"
                     "<joint name='slider' type='planar'><parent link='b'/><child link='c'/></joint></robot>")


@pytest.mark.parametrize("data, message", [
    ({"urdf": "missing.urdf"}, r"urdf: .*missing\.urdf: cannot read the URDF"),
    ({"urdf": "planar_gripper.urdf", "joints": ["shoulder", "knee"]},
     r"joint 'knee' is not in the URDF; URDF joints: mount, shoulder, elbow, wrist, finger_joint"),
    ({"urdf": PLANAR_JOINT_URDF, "joints": ["j", "slider"]},
     r"joint 'slider' is a URDF 'planar' joint; only revolute, continuous and prismatic"),
    ({"urdf": PLANAR_JOINT_URDF}, r"URDF joint 'slider' is 'planar'; only revolute, continuous and prismatic"),
    ({"urdf": "planar_gripper.urdf", "joints": ["elbow", "shoulder"]},
     r"joint 'elbow': URDF joint is not the next joint below the root; the joints must be listed base to tip"),
    ({"urdf": "planar_gripper.urdf", "joints": ["shoulder", "elbow"],
      "acceleration_limits": {"wrist": 1.0}},
     r"acceleration_limits: joint 'wrist' is not one of the selected joints"),
    ({"urdf": "planar_gripper.urdf", "joints": ["shoulder", "elbow"],
      "velocity_limits": {"elbow": 180.0}},
     r"joint 'elbow'\.velocity_limit = 180.0 rad/s looks like degrees"),
    ({"urdf": "planar_gripper.urdf", "dh_convention": "standard"},
     r"unknown key 'dh_convention'; allowed keys: urdf, name, gravity"),
    ({"urdf": "<robot name='x'><joint name='j' type='revolute'><parent link='a'/>"
              "<child link='b'/><origin xyz='0 0 120'/><limit lower='-1' upper='1' "
              "velocity='1'/></joint></robot>"},
     r"URDF joint 'j' origin xyz = \[0.0, 0.0, 120.0\] m looks like millimetres"),
    ({"urdf": "<robot name='x'><joint name='j' type='revolute'><parent link='a'/>"
              "<child link='b'/><limit lower='-1' upper='1' velocity='0'/></joint></robot>"},
     r"joint 'j' has no <limit velocity> > 0 in the URDF and no velocity_limits override"),
    ({"urdf": "<robot><joint"}, r"invalid URDF XML"),
])
def test_invalid_urdf_descriptions_name_the_joint(data, message):
    with pytest.raises(RobotDescriptionError, match=message):
        robot_from_dict(data, base_dir=DATA)


def test_robot_description_rejects_inconsistent_fields():
    limits = (JointLimits((-1.0, 1.0), 1.0, 1.0),)
    with pytest.raises(RobotDescriptionError, match=r"exactly one of a DH table \(dh\), urdf text and mjcf text"):
        RobotDescription(name="arm", joint_names=("j1",), limits=limits)
    with pytest.raises(RobotDescriptionError,
                       match=r"dh has 2 rows, expected one per joint \(1\)"):
        RobotDescription(name="arm", joint_names=("j1",), limits=limits,
                         dh_convention="standard", dh=(DHRow(0, 0, 0), DHRow(0, 0, 0)))


@pytest.mark.parametrize("section, message", [
    ({"j3": {"damping": -1.0}}, r"^arm.yaml: simulation.j3.damping must be finite and >= 0 \[N m s/rad\], got -1.0$"),
    ({"j9": {"armature": 0.1}},
     r"arm.yaml: simulation lists unknown joint\(s\) \['j9'\]; the robot has \['j1', 'j2', 'j3', 'j4', 'j5', 'j6'\]$"),
    ({"j1": {"dampng": 0.1}}, r"arm.yaml: simulation.j1: unknown key 'dampng'; allowed keys: armature, damping, "
                              r"friction_loss"),
    ({"j2": {"friction_loss": "2 N m"}}, r"^arm.yaml: simulation.j2.friction_loss must be finite and >= 0 "
                                         r"\[N m\], got '2 N m'$"),
    ({"j2": {"armature": float("nan")}}, r"simulation.j2.armature must be finite and >= 0 \[kg m\^2\], got nan$"),
    ({"j1": None}, r"simulation.j1 is null"),
    ([0.1], r"simulation must be a mapping joint name -> \{armature \[kg m\^2\]"),
])
def test_simulation_section_errors_name_the_joint_and_key(section, message, er3a_robot):
    data = er3a_robot.to_dict()
    data["simulation"] = section
    with pytest.raises(RobotDescriptionError, match=message):
        robot_from_dict(data, source="arm.yaml")


def test_simulation_section_round_trips_in_both_forms_and_in_prismatic_units():
    mujoco = load_robot(find_package_file("config", "robots", "er3a_mujoco.yaml"))
    assert mujoco.simulation[0].friction_loss == 3.9 and mujoco.simulation[5].armature == 0.015
    assert robot_from_dict(mujoco.to_dict()) == mujoco
    track = load_robot(find_package_file("config", "robots", "ur5_on_linear_track.yaml")).to_dict()
    track["simulation"] = {"track": {"damping": 20.0}, "elbow_joint": {"friction_loss": 2.0}}
    robot = robot_from_dict(track)
    assert robot.simulation[0].damping == 20.0 and robot.simulation[0].friction_loss is None
    assert robot.simulation[3].friction_loss == 2.0 and robot.simulation[1].damping is None
    assert robot_from_dict(robot.to_dict()) == robot
    track["simulation"] = {"track": {"damping": -2.0}}
    with pytest.raises(RobotDescriptionError,
                       match=r"simulation.track.damping must be finite and >= 0 \[N s/m\], got -2.0$"):
        robot_from_dict(track)


def test_a_description_of_no_form_names_the_three_it_could_be():
    with pytest.raises(RobotDescriptionError, match=r"x\.yaml: robot description: none of its three forms \(keys "
                                                    r"\['name'\]\): give 'urdf' .* 'mjcf' .* 'dh_convention' with "
                                                    r"'joints'"):
        robot_from_dict({"name": "x"}, source="x.yaml")
