"""Link inertials: mass, centre of mass and inertia <-> the regressor's 10 parameters, and the priors
of URDF <inertial> elements (checked against pinocchio's own URDF parser, which merges fixed links)
and of DH inertial: entries."""
import copy
import dataclasses

import numpy as np
import pinocchio as pin
import pytest
import yaml

from robot_dynid.errors import DynIdError, RobotDescriptionError
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.model.link_inertials import (inertial_from_parameters, link_inertials, link_names,
                                              parameters_from_inertial, prior_parameters)
from robot_dynid.model.regressor import Regressor, inertia_parameter_map
from robot_dynid.model.robot_description import LinkInertial, build_pinocchio_model, link_frame_placements
from robot_dynid.model.robot_loader import load_robot, robot_from_dict
from robot_dynid.model.link_inertials import link_bodies
from robot_dynid.model.urdf import robot_from_urdf
from robot_dynid.package_files import find_package_file
from urdf_samples import (PLANAR_GRIPPER_URDF, UR5_JOINTS, UR5_URDF, configuration, pinocchio_model,
                          with_fixed_links, with_inertials)

ER3A = find_package_file("config", "robots", "er3a.yaml")


def test_parameters_and_inertials_convert_both_ways_as_pinocchio_does():
    rng = np.random.default_rng(0)
    parameters = plausible_parameters(load_robot(ER3A), seed=3)
    for link in parameters.reshape(-1, 10):
        inertial = inertial_from_parameters(link)
        np.testing.assert_allclose(parameters_from_inertial(inertial), link, rtol=1e-12, atol=1e-15)
        xx, xy, xz, yy, yz, zz = inertial.inertia
        body = pin.Inertia(inertial.mass, np.array(inertial.com), np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]))
        np.testing.assert_allclose(body.toDynamicParameters(), link, rtol=1e-12, atol=1e-15)
        placement = pin.SE3(pin.rpy.rpyToMatrix(*rng.uniform(-3, 3, 3)), rng.uniform(-1, 1, 3))
        np.testing.assert_allclose(parameters_from_inertial(inertial, placement),
                                   placement.act(body).toDynamicParameters(), rtol=1e-12, atol=1e-14)


def test_a_massless_link_without_first_moment_is_a_body_others_are_not():
    massless = inertial_from_parameters([0, 0, 0, 0, 1e-3, 0, 1e-3, 0, 0, 2e-3])
    assert massless == LinkInertial(0.0, (0.0, 0.0, 0.0), (1e-3, 0.0, 0.0, 1e-3, 0.0, 2e-3))
    for parameters, message in (([-1.0, 0, 0, 0, 1, 0, 1, 0, 0, 1], r"^link 2 has mass -1.0 kg"),
                                ([0.0, 0.1, 0, 0, 1, 0, 1, 0, 0, 1],
                                 r"mass 0.0 kg and first moment \[0.1, 0.0, 0.0\]")):
        with pytest.raises(DynIdError, match=message):
            inertial_from_parameters(parameters, "link 2")


def robot_and_pinocchio(urdf_text, joints):
    """robot_dynid's robot of the URDF and pinocchio's model of it, unselected joints locked at 0."""
    return robot_from_urdf(urdf_text, joints=joints), pinocchio_model(urdf_text, joints)


URDF_CASES = {
    # every link has an inertial: world, base_link and base_link_inertia (before the first joint)
    # are ignored, tool0 (fixed to wrist_3_link) is merged into wrist_3_link
    "ur5": lambda: (with_inertials(UR5_URDF.read_text(), seed=1), UR5_JOINTS),
    # two fixed links (rpy origins) below the forearm, the prismatic finger (not selected) merged at 0
    "planar_gripper": lambda: (with_inertials(with_fixed_links(PLANAR_GRIPPER_URDF.read_text(), "fore"), seed=2),
                               ("shoulder", "elbow", "wrist")),
    # elbow not selected: the forearm (and its fixed links) move with the shoulder, held at 0
    "planar_gripper_without_elbow": lambda: (
        with_inertials(with_fixed_links(PLANAR_GRIPPER_URDF.read_text(), "fore"), seed=3), ("shoulder", "wrist")),
}


@pytest.mark.parametrize("case", URDF_CASES)
def test_urdf_prior_equals_pinocchios_inertias_about_its_joint_frames(case):
    urdf, joints = URDF_CASES[case]()
    robot, model = robot_and_pinocchio(urdf, joints)
    prior = prior_parameters(robot)
    assert prior.shape == (10 * len(joints),)
    assert [model.names[j] for j in range(1, model.njoints)] == list(joints)
    for joint_id, link_frame in enumerate(link_frame_placements(build_pinocchio_model(robot)), start=1):
        in_joint_frame = inertia_parameter_map(link_frame.rotation, link_frame.translation) \
            @ prior[10 * joint_id - 10:10 * joint_id]
        np.testing.assert_allclose(in_joint_frame, model.inertias[joint_id].toDynamicParameters(),
                                   rtol=1e-10, atol=1e-12, err_msg=f"{case}: joint {joints[joint_id - 1]}")


@pytest.mark.parametrize("case", URDF_CASES)
def test_urdf_prior_through_the_regressor_gives_pinocchios_rnea(case):
    urdf, joints = URDF_CASES[case]()
    robot, model = robot_and_pinocchio(urdf, joints)
    model.gravity = pin.Motion(np.array(robot.gravity), np.zeros(3))
    data = model.createData()
    rng = np.random.default_rng(4)
    q, qd, qdd = rng.uniform(-1, 1, (3, 6, len(joints)))
    tau = Regressor(robot).torque(prior_parameters(robot), q, qd, qdd)
    expected = np.array([pin.rnea(model, data, configuration(model, q[k]), qd[k], qdd[k]) for k in range(6)])
    np.testing.assert_allclose(tau, expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())


def test_link_bodies_name_the_links_that_move_with_each_joint():
    urdf, joints = URDF_CASES["planar_gripper"]()
    groups = link_bodies(robot_from_urdf(urdf, joints=joints))
    assert [[body.name for body in group] for group in groups] == [["upper"], ["fore", "camera", "lens"],
                                                                   ["hand", "finger"]]
    lens = groups[1][2].placement
    expected = pin.SE3(pin.rpy.rpyToMatrix(0.3, -0.2, 1.0), np.array([0.1, 0.02, -0.03])) \
        * pin.SE3(pin.rpy.rpyToMatrix(0.0, 1.2, 0.0), np.array([0.0, 0.05, 0.01]))
    assert lens.isApprox(expected, 1e-12)
    assert link_names(load_robot(ER3A)) == tuple(f"j{j}_link" for j in range(1, 7))


def test_descriptions_without_inertial_data_have_no_prior():
    assert prior_parameters(load_robot(find_package_file("config", "robots", "ur5_urdf.yaml"))) is None
    assert prior_parameters(load_robot(ER3A)) is None
    only_base = UR5_URDF.read_text().replace('<link name="base_link"/>', '<link name="base_link">'
                                             '<inertial><mass value="4.0"/><inertia ixx="0.01" ixy="0" ixz="0" '
                                             'iyy="0.01" iyz="0" izz="0.01"/></inertial></link>')
    assert prior_parameters(robot_from_urdf(only_base, joints=UR5_JOINTS)) is None


def test_a_link_without_inertial_weighs_nothing():
    urdf = with_inertials(UR5_URDF.read_text(), seed=5)
    start = urdf.index('<link name="forearm_link">')
    stripped = urdf[:start] + '<link name="forearm_link"/>' + urdf[urdf.index("</link>", start) + len("</link>"):]
    prior = prior_parameters(robot_from_urdf(stripped, joints=UR5_JOINTS))
    assert not prior[20:30].any()
    np.testing.assert_array_equal(prior[:20], prior_parameters(robot_from_urdf(urdf, joints=UR5_JOINTS))[:20])


def dh_data_with_inertials(path=ER3A, seed=6):
    """A DH robot file's data with an inertial: entry per joint from plausible parameters, and those."""
    robot = load_robot(path)
    parameters = plausible_parameters(robot, seed=seed)
    data = yaml.safe_load(path.read_text())
    for joint, inertial in zip(data["joints"], link_inertials(robot, parameters)):
        joint["inertial"] = inertial.to_dict()
    return data, parameters


@pytest.mark.parametrize("name", ["er3a.yaml", "puma560.yaml", "curtain_wall_arm.yaml"])
def test_dh_inertial_entries_give_the_prior_and_round_trip(name):
    data, parameters = dh_data_with_inertials(find_package_file("config", "robots", name))
    robot = robot_from_dict(yaml.safe_load(yaml.safe_dump(data)))
    np.testing.assert_allclose(prior_parameters(robot), parameters, rtol=1e-12, atol=1e-15)
    assert robot_from_dict(robot.to_dict()) == robot
    assert [body.inertial for group in link_bodies(robot) for body in group] == list(robot.inertials)


def _set(path, value):
    def edit(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return edit


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["joints"][3].pop("inertial"),
     r"^<dict>: joints\[3\] \(j4\): missing key 'inertial' \(joints\[0\] has one; give inertial: for every joint or "
     r"for none\)$"),
    (lambda d: [joint.pop("inertial") for joint in d["joints"][:2]],
     r"^<dict>: joints\[0\] \(j1\): missing key 'inertial' \(joints\[2\] has one"),
    (_set(["joints", 2, "inertial", "density"], 1.0), r"^<dict>: joints\[2\] \(j3\).inertial: unknown key 'density'"),
    (lambda d: d["joints"][2]["inertial"].pop("com"), r"^<dict>: joints\[2\] \(j3\).inertial: missing key 'com'$"),
    (_set(["joints", 2, "inertial", "mass"], "heavy"),
     r"^<dict>: joints\[2\] \(j3\).inertial.mass must be a number, got str 'heavy'$"),
    (_set(["joints", 2, "inertial", "mass"], -1.0),
     r"^<dict>: joints\[2\] \(j3\).inertial.mass must be finite and >= 0 \[kg\], got -1.0$"),
    (_set(["joints", 2, "inertial", "com"], [0.0, 0.1]),
     r"^<dict>: joints\[2\] \(j3\).inertial.com must be a list of 3 numbers \[m\]"),
    (_set(["joints", 2, "inertial", "com"], [0.0, 120.0, 0.0]),
     r"^<dict>: joints\[2\] \(j3\).inertial.com = \[0.0, 120.0, 0.0\] m looks like millimetres"),
    (_set(["joints", 2, "inertial", "inertia"], [0.1] * 5),
     r"^<dict>: joints\[2\] \(j3\).inertial.inertia must be a list of 6 numbers \[kg m\^2\]"),
    (_set(["joints", 2, "inertial", "inertia", 4], float("nan")),
     r"^<dict>: joints\[2\] \(j3\).inertial.inertia\[4\] must be finite, got nan$"),
    (_set(["joints", 2, "inertial"], [1.0]), r"^<dict>: joints\[2\] \(j3\).inertial must be a mapping, got list$"),
])
def test_invalid_dh_inertial_entries_name_the_joint_and_key(edit, message):
    data, _ = dh_data_with_inertials()
    data = copy.deepcopy(data)
    edit(data)
    with pytest.raises(RobotDescriptionError, match=message):
        robot_from_dict(data)


def test_only_dh_robots_take_inertials_and_one_per_joint():
    data, _ = dh_data_with_inertials()
    robot = robot_from_dict(data)
    with pytest.raises(RobotDescriptionError, match=r"^inertials has 5 entries, expected one per joint \(6\)$"):
        dataclasses.replace(robot, inertials=robot.inertials[:5])
    urdf_robot = robot_from_urdf(UR5_URDF.read_text(), joints=UR5_JOINTS)
    with pytest.raises(RobotDescriptionError, match=r"a URDF or MJCF robot takes no inertials; they come from its"):
        dataclasses.replace(urdf_robot, inertials=robot.inertials)


@pytest.mark.parametrize("old, new, message", [
    ('<mass value="', '<mass value="x', r"^URDF link 'shoulder_link': <inertial> <mass value='x[\d.]+'> is not a "
                                        r"number$"),
    ('<mass value="', '<mass value="-',
     r"^URDF link 'shoulder_link': <inertial>.mass must be finite and >= 0 \[kg\], got -[\d.]+$"),
    (' ixx="', ' ixxx="', r"^URDF link 'shoulder_link': <inertial> <inertia> has no ixx$"),
    (' iyz="', ' iyz="nan" j="', r"^URDF link 'shoulder_link': <inertial> <inertia iyz> must be finite, got nan$"),
    ('<inertial><origin xyz="', '<inertial><origin xyz="1 ',
     r"^URDF link 'shoulder_link': xyz='1 [-\d.e ]+', expected 3 finite numbers$"),
    ('<mass value="', '<masses value="', r"^URDF link 'shoulder_link': <inertial> needs <mass value> and <inertia"),
])
def test_invalid_urdf_inertials_name_the_link(old, new, message):
    urdf = with_inertials(UR5_URDF.read_text(), seed=1)
    start = urdf.index('<link name="shoulder_link">')
    urdf = urdf[:start] + urdf[start:].replace(old, new, 1)
    robot = robot_from_urdf(urdf, joints=UR5_JOINTS)            # inertials are read when asked for
    with pytest.raises(RobotDescriptionError, match=message):
        prior_parameters(robot)
