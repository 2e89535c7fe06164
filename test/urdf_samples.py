"""URDF texts with inertial data for tests: the shipped URDFs with random <inertial> elements added,
fixed links attached, and pinocchio's own view of them (its URDF parser, the unselected joints locked)."""
import pathlib
import re

import numpy as np
import pinocchio as pin

from robot_dynid.package_files import find_package_file

UR5_URDF = find_package_file("config", "robots", "ur5.urdf")
UR5_JOINTS = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
              "wrist_3_joint")
PLANAR_GRIPPER_URDF = pathlib.Path(__file__).resolve().parent / "data" / "planar_gripper.urdf"


def random_inertial_xml(rng) -> str:
    """An <inertial> of a random box (so a real body), its inertia turned by a random rotation and
    its frame placed at a random origin and rpy."""
    mass = rng.uniform(0.5, 3.0)
    x, y, z = rng.uniform(0.02, 0.3, 3)
    principal = mass / 12.0 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])
    turn = pin.rpy.rpyToMatrix(*rng.uniform(-np.pi, np.pi, 3))
    inertia = turn @ principal @ turn.T
    values = inertia[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]
    names = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    attributes = " ".join(f'{key}="{value!r}"' for key, value in zip(names, values.tolist()))
    xyz, rpy = rng.uniform(-0.1, 0.1, 3), rng.uniform(-np.pi, np.pi, 3)
    return (f'<inertial><origin xyz="{" ".join(map(repr, xyz.tolist()))}" rpy="{" ".join(map(repr, rpy.tolist()))}"/>'
            f'<mass value="{mass!r}"/><inertia {attributes}/></inertial>')


def with_inertials(urdf_text: str, seed: int = 0) -> str:
    """Every link of ``urdf_text`` given a random <inertial> (self-closing links opened)."""
    rng = np.random.default_rng(seed)

    def fill(match):
        head, body = match.group(1), match.group(2) or ""
        return f"{head}>{random_inertial_xml(rng)}{body}</link>"

    return re.sub(r'(<link name="[^"]*")\s*(?:/>|>(.*?)</link>)', fill, urdf_text, flags=re.S)


def with_fixed_links(urdf_text: str, parent: str) -> str:
    """Two links fixed below ``parent`` (a camera and its lens, turned by rpy) before </robot>."""
    extra = f"""
  <link name="camera"/>
  <link name="lens"/>
  <joint name="camera_mount" type="fixed"><parent link="{parent}"/><child link="camera"/>
    <origin xyz="0.1 0.02 -0.03" rpy="0.3 -0.2 1.0"/></joint>
  <joint name="lens_mount" type="fixed"><parent link="camera"/><child link="lens"/>
    <origin xyz="0.0 0.05 0.01" rpy="0 1.2 0"/></joint>
"""
    return urdf_text.replace("</robot>", extra + "</robot>")


def pinocchio_model(urdf_text: str, joints) -> pin.Model:
    """pinocchio's model of the URDF with every joint not in ``joints`` locked at 0 (its bodies
    merged into the joint before it by pinocchio's buildReducedModel)."""
    model = pin.buildModelFromXML(urdf_text)
    locked = [model.getJointId(name) for name in model.names[1:] if name not in joints]
    return pin.buildReducedModel(model, locked, pin.neutral(model)) if locked else model


def configuration(model: pin.Model, angles) -> np.ndarray:
    """pinocchio's configuration of joint angles [rad] (1..n in model order; continuous joints as cos, sin)."""
    q = []
    for joint_id, angle in enumerate(angles, start=1):
        q += [np.cos(angle), np.sin(angle)] if model.joints[joint_id].nq == 2 else [angle]
    return np.array(q)
