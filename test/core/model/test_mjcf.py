"""MJCF robot descriptions (robot_dynid/model/mjcf.py): kinematics and inertials from pinocchio's MJCF parser,
checked against MuJoCo's own inverse dynamics of the same file (when mujoco is installed)."""
import importlib.util

import numpy as np
import pinocchio as pin
import pytest

from robot_dynid.errors import RobotDescriptionError
from robot_dynid.model.link_inertials import prior_parameters
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot, robot_from_dict
from repo_paths import TEST_DATA

pytestmark = pytest.mark.skipif(not hasattr(pin, "buildModelFromMJCF"), reason="pinocchio < 3 reads no MJCF")
DATA = TEST_DATA


def test_an_mjcf_robot_has_the_files_joints_limits_and_inertials():
    robot = load_robot(DATA / "arm3_mjcf.yaml")
    assert robot.name == "arm3" and robot.joint_names == ("j1", "j2", "j3")
    assert [limit.position for limit in robot.limits] == [(-3.0, 3.0), (-2.0, 2.0), (-np.pi, np.pi)]
    assert robot.continuous == (False, False, True)
    assert [limit.velocity for limit in robot.limits] == [2.0, 2.0, 3.0]
    assert robot.limits[0].effort == 50.0 and robot.limits[2].acceleration == 15.0
    prior = prior_parameters(robot)
    assert prior[0] == 3.0 and prior[20] == pytest.approx(1.7)     # the tool body is fixed to link 3
    assert robot_from_dict(robot.to_dict()) == robot                 # written with the MJCF inline


@pytest.mark.parametrize("change, message", [
    ({"velocity_limits": {"j1": 2.0}}, r"joint 'j2': MJCF has no velocity limits; give velocity_limits"),
    ({"joints": ["j1", "j4"]}, r"joint 'j4' is not in the MJCF; MJCF joints: j1, j2, j3"),
    ({"joints": ["j2", "j1"], "velocity_limits": {"j1": 2.0, "j2": 2.0}},
     r"joint 'j2': MJCF joint is not the next joint below the root"),
    ({"mjcf": "<mujoco><worldbody><body name='b'><joint name='a' type='ball'/><inertial pos='0 0 0' mass='1' "
              "diaginertia='1 1 1'/></body></worldbody></mujoco>",
      "velocity_limits": {}}, r"MJCF joint 'a' is a pinocchio JointModelSpherical"),
    ({"mjcf": "missing.xml"}, r"mjcf: .*missing.xml"),
])
def test_mjcf_description_errors_are_one_line(change, message):
    data = {"mjcf": str(DATA / "arm3.xml"), "velocity_limits": {"j1": 2.0, "j2": 2.0, "j3": 3.0}, **change}
    with pytest.raises(RobotDescriptionError, match=message):
        robot_from_dict(data, base_dir=DATA, source="arm.yaml")


@pytest.mark.skipif(importlib.util.find_spec("mujoco") is None, reason="mujoco is not installed")
def test_the_regressor_of_an_mjcf_robot_with_its_inertials_is_mujocos_inverse_dynamics():
    import mujoco
    robot = load_robot(DATA / "arm3_mjcf.yaml")
    model = mujoco.MjModel.from_xml_path(str(DATA / "arm3.xml"))
    data = mujoco.MjData(model)
    rng = np.random.default_rng(5)
    q, qd, qdd = (rng.uniform(-2.0, 2.0, (30, 3)) for _ in range(3))
    expected = []
    for state in zip(q, qd, qdd):
        data.qpos[:], data.qvel[:], data.qacc[:] = state
        mujoco.mj_inverse(model, data)
        expected.append(data.qfrc_inverse.copy())
    torques = Regressor(robot).torque(prior_parameters(robot), q, qd, qdd)
    assert np.max(np.abs(torques - expected)) < 1e-9 * np.max(np.abs(expected))


@pytest.mark.skipif(importlib.util.find_spec("mujoco") is None, reason="mujoco is not installed")
def test_an_mjcf_that_mujoco_refuses_is_refused_with_mujocos_reason(tmp_path):
    """An attribute MuJoCo does not know (pinocchio's parser skips it): refused as MuJoCo would, in one line."""
    text = (DATA / "arm3.xml").read_text().replace('<joint name="j1" type="hinge"',
                                                   '<joint name="j1" type="hinge" stifness="3"', 1)
    assert "stifness" in text
    (tmp_path / "arm.xml").write_text(text)
    data = {"mjcf": str(tmp_path / "arm.xml"), "velocity_limits": {"j1": 2.0, "j2": 2.0, "j3": 3.0}}
    with pytest.raises(RobotDescriptionError, match=r"arm\.yaml: MuJoCo refuses the MJCF: .*stifness") as raised:
        robot_from_dict(data, base_dir=tmp_path, source="arm.yaml")
    assert "\n" not in str(raised.value)
