"""URDF export: pinocchio loads the exported URDF, and its RNEA torques are the model's rigid-body
torques (the standard parameters' inertial part through the regressor) for DH robots of both
conventions, with and without a base row, and for URDF robots with fixed links."""
import functools
import logging

import numpy as np
import pinocchio as pin
import pytest
import yaml

from robot_dynid.errors import DynIdError, RobotDescriptionError
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.friction import friction_model
from robot_dynid.model.link_inertials import prior_parameters
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot, robot_from_dict
from robot_dynid.model.urdf import robot_from_urdf
from robot_dynid.model.urdf_export import export_urdf
from robot_dynid.package_files import find_package_file
from urdf_samples import (PLANAR_GRIPPER_URDF, UR5_URDF, configuration, pinocchio_model,
                          with_fixed_links, with_inertials)


def robot_file(name):
    return find_package_file("config", "robots", name)


def er3a_with_base():
    data = yaml.safe_load(robot_file("er3a.yaml").read_text())
    data["base"] = {"a": 0.1, "alpha": 0.4, "d": 0.2, "theta": -0.3}
    return robot_from_dict(data)


ROBOTS = {
    "er3a (modified DH)": lambda: load_robot(robot_file("er3a.yaml")),
    "er3a with a base row (modified DH)": er3a_with_base,
    "puma560 (standard DH)": lambda: load_robot(robot_file("puma560.yaml")),
    "curtain_wall_arm (standard DH, base row)": lambda: load_robot(robot_file("curtain_wall_arm.yaml")),
    "ur5_urdf (URDF)": lambda: load_robot(robot_file("ur5_urdf.yaml")),
    # fixed links below the forearm with inertials of their own, the prismatic finger not selected
    "planar_gripper (URDF, fixed links)": lambda: robot_from_urdf(
        with_inertials(with_fixed_links(PLANAR_GRIPPER_URDF.read_text(), "fore"), seed=2),
        joints=["shoulder", "elbow", "wrist"]),
}


def model_with_standard(robot, seed=0):
    """A model of known standard parameters (plausible inertials, friction, armature) and base values K @ them."""
    friction = friction_model("coulomb_viscous")
    regressor = Regressor(robot, friction, armature=True)
    rng = np.random.default_rng(seed)
    standard = np.concatenate([plausible_parameters(robot, seed=seed), rng.uniform(0.5, 2.0, 3 * robot.n_joints)])
    base = compute_base_parameters(regressor)
    return DynamicModel(robot, friction, True, False, base, base.projection @ standard, np.full(base.rank, 0.01),
                        standard=standard)


def rigid_body_torques(model, q, qd, qdd):
    """The model's standard inertial parameters through the regressor, friction and armature excluded."""
    return Regressor(model.robot).torque(model.standard[:10 * model.robot.n_joints], q, qd, qdd)


@functools.cache
def exported_case(name):
    model = model_with_standard(ROBOTS[name]())
    return model, export_urdf(model)


@pytest.fixture(params=ROBOTS)
def exported(request):
    return exported_case(request.param)


def test_pinocchio_rnea_of_the_exported_urdf_is_the_models_rigid_body_torque(exported):
    model, text = exported
    robot = model.robot
    pinocchio = pinocchio_model(text, robot.joint_names)
    assert [pinocchio.names[j] for j in range(1, pinocchio.njoints)] == list(robot.joint_names)
    pinocchio.gravity = pin.Motion(np.array(robot.gravity), np.zeros(3))
    data = pinocchio.createData()
    rng = np.random.default_rng(1)
    q, qd, qdd = rng.uniform(-1.5, 1.5, (3, 10, robot.n_joints))
    expected = rigid_body_torques(model, q, qd, qdd)
    tau = np.array([pin.rnea(pinocchio, data, configuration(pinocchio, q[k]), qd[k], qdd[k]) for k in range(10)])
    np.testing.assert_allclose(tau, expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())


def test_the_exported_urdf_reads_back_as_the_same_rigid_body_model(exported):
    """robot_dynid itself reads the export: same torques from its prior; for URDF robots the prior
    is the standard inertial parameters themselves (fixed links' inertials were merged, not kept)."""
    model, text = exported
    robot = robot_from_urdf(text, joints=model.robot.joint_names, gravity=model.robot.gravity)
    prior = prior_parameters(robot)
    if model.robot.urdf is not None:
        np.testing.assert_allclose(prior, model.standard[:prior.size], rtol=1e-12, atol=1e-14)
    rng = np.random.default_rng(2)
    q, qd, qdd = rng.uniform(-1, 1, (3, 5, robot.n_joints))
    expected = rigid_body_torques(model, q, qd, qdd)
    np.testing.assert_allclose(Regressor(robot).torque(prior, q, qd, qdd), expected, rtol=1e-9,
                               atol=1e-9 * np.abs(expected).max())


@pytest.mark.parametrize("name", [name for name in ROBOTS if "DH" in name])
def test_dh_export_keeps_joint_names_and_limits_and_names_links_after_joints(name):
    model, text = exported_case(name)
    pinocchio = pin.buildModelFromXML(text)
    robot = model.robot
    np.testing.assert_array_equal(pinocchio.lowerPositionLimit, [limit.position[0] for limit in robot.limits])
    np.testing.assert_array_equal(pinocchio.upperPositionLimit, [limit.position[1] for limit in robot.limits])
    np.testing.assert_array_equal(pinocchio.velocityLimit, [limit.velocity for limit in robot.limits])
    np.testing.assert_array_equal(pinocchio.effortLimit, [limit.effort or 0.0 for limit in robot.limits])
    frames = {frame.name for frame in pinocchio.frames}
    assert {f"{name}_link" for name in robot.joint_names} <= frames
    assert ("dh_base_link" in frames) == (robot.base is not None)


def test_urdf_export_replaces_the_inertials_and_removes_those_of_merged_links():
    robot = ROBOTS["planar_gripper (URDF, fixed links)"]()
    source = robot.urdf.replace('<link name="upper">', '<link name="upper"><!-- kept -->'
                                '<visual><geometry><box size="0.4 0.05 0.05"/></geometry></visual>')
    model = model_with_standard(robot_from_urdf(source, joints=robot.joint_names))
    text = export_urdf(model)
    assert "<!-- kept -->" in text and '<box size="0.4 0.05 0.05"/>' in text
    links = {link.get("name"): link for link in _xml(text).findall("link")}
    for name in ("camera", "lens", "finger"):
        assert links[name].find("inertial") is None
    assert "inertial merged into link 'fore' (joint 'elbow')" in text
    assert "inertial merged into link 'hand' (joint 'wrist')" in text
    for name in ("world", "base"):                       # before the first joint: kept as they were
        assert links[name].find("inertial") is not None
    for name in ("upper", "fore", "hand"):
        assert len(links[name].findall("inertial")) == 1
        assert links[name].find("inertial/origin").get("rpy") == "0.0 0.0 0.0"


def _xml(text):
    import xml.etree.ElementTree as ElementTree
    return ElementTree.fromstring(text)


def test_a_model_of_base_parameters_only_is_refused():
    model = model_with_standard(load_robot(robot_file("er3a.yaml")))
    ols = DynamicModel(model.robot, model.friction, True, False, model.base, model.values, model.std)
    with pytest.raises(DynIdError, match=r"^the model has base parameters only \(method ols\), and a URDF needs the "
                                         r"standard parameters: identify with --consistent"):
        export_urdf(ols)


def test_another_urdf_is_used_only_when_its_kinematics_are_the_models():
    model = model_with_standard(load_robot(robot_file("ur5_urdf.yaml")))
    with_meshes = UR5_URDF.read_text().replace('<link name="forearm_link"/>', '<link name="forearm_link"><visual>'
                                               '<geometry><mesh filename="forearm.dae"/></geometry></visual></link>')
    text = export_urdf(model, with_meshes)
    assert 'filename="forearm.dae"' in text
    assert _xml(text).find("link[@name='forearm_link']/inertial") is not None
    moved = UR5_URDF.read_text().replace('xyz="-0.425 0 0"', 'xyz="-0.4 0 0"')
    with pytest.raises(RobotDescriptionError, match=r"^URDF: joint 'elbow_joint' has another placement or axis than "
                                                    r"in the model's robot"):
        export_urdf(model, moved)
    with pytest.raises(RobotDescriptionError, match=r"^URDF: link 'tool0', the child of joint 'flange', has no "
                                                    r"<link> element$"):
        export_urdf(model, UR5_URDF.read_text().replace('<link name="tool0"/>', ""))
    with pytest.raises(RobotDescriptionError, match=r"^URDF: joint 'wrist_3_joint' is not in the URDF"):
        export_urdf(model, UR5_URDF.read_text().replace('"wrist_3_joint"', '"wrist_3"'))
    dh_model = model_with_standard(load_robot(robot_file("er3a.yaml")))
    with pytest.raises(DynIdError, match=r"robot 'er3a' is a DH table, not a URDF"):
        export_urdf(dh_model, UR5_URDF.read_text())


def test_inconsistent_parameters_are_exported_with_a_warning(caplog):
    robot = load_robot(robot_file("er3a.yaml"))
    model = model_with_standard(robot)
    standard = model.standard.copy()
    standard[10 * 2 + 4] = -1.0                          # Ixx3 < 0
    inconsistent = DynamicModel(robot, model.friction, True, False, model.base, model.base.projection @ standard,
                                model.std, standard=standard)
    with caplog.at_level(logging.WARNING, logger="robot_dynid.model.urdf_export"):
        export_urdf(inconsistent)
    assert [record.getMessage().split(":")[0] for record in caplog.records] == ["link of joint j3"]
    assert "not physically consistent" in caplog.text


def test_the_old_inertials_are_not_read_so_a_malformed_one_is_simply_replaced():
    urdf = with_inertials(UR5_URDF.read_text(), seed=3)
    start = urdf.index('<link name="shoulder_link">')
    urdf = urdf[:start] + urdf[start:].replace('<mass value="', '<mass value="heavy', 1)
    robot = robot_from_urdf(urdf, joints=load_robot(robot_file("ur5_urdf.yaml")).joint_names)
    with pytest.raises(RobotDescriptionError, match=r"^URDF link 'shoulder_link': <inertial> <mass value='heavy"):
        prior_parameters(robot)
    model = DynamicModel.from_yaml(model_with_standard(robot).to_yaml())
    text = export_urdf(model)
    assert "heavy" not in text
    np.testing.assert_allclose(prior_parameters(robot_from_urdf(text, joints=robot.joint_names)),
                               model.standard[:60], rtol=1e-12, atol=1e-14)
