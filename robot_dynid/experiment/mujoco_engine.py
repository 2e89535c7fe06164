"""The MuJoCo engine: an arm simulated by an independent physics engine (``sim_robot``'s ``engine: mujoco``).

The default engine (:mod:`robot_dynid.experiment.simulation`) computes torques with the identifier's own
regressor, so a wrong regressor, friction model or armature convention could never show there. Here
MuJoCo (the ``mujoco`` package, ``pip install "robot-dynid[sim]"``) integrates the arm's equations of motion.

**The model** (:func:`build_mujoco_model`):

- a URDF robot's URDF, read by MuJoCo's own URDF parser, with ``<visual>`` and ``<collision>`` removed (no
  contacts, no meshes to find) and the movable joints that are not selected made fixed (identification
  holds them at 0); a DH robot's table written as a URDF (one joint per row, ``base`` folded in);
  an MJCF robot's (``mjcf:``) file, loaded as it is (every joint of it must be among the robot's);
- the links' inertials of the model file where the description has them for every link (URDF
  ``<inertial>``, DH ``inertial:``, MJCF bodies), else :func:`~robot_dynid.experiment.simulation.plausible_parameters`
  of ``seed``, written into the compiled model;
- each joint's armature [kg m^2], damping [N m s/rad] and friction loss [N m] from the description's
  ``simulation:`` section where it gives them, else the model file's (URDF ``<dynamics damping friction>``,
  MJCF joint attributes), else 0;
- gravity the description's (an MJCF file's ``<option gravity>`` is replaced); contacts and joint limits
  disabled (the trajectories keep within the limits: no end stops are simulated); no actuators: the torque
  goes into ``qfrc_applied``;
- the semi-implicit Euler integrator (MuJoCo's ``Euler``; joint damping integrated implicitly) with a step
  ``h <= timestep`` (default :data:`DEFAULT_TIMESTEP` = 1 ms) dividing the sample period: ``h = 1 / (rate n)``.

**Following trajectories** (:class:`MujocoArm`): a joint_trajectory_controller on an effort interface with a
computed-torque law. At each step, with the follower's desired state ``(q_d, qd_d, qdd_d)``,
``a = qdd_d + kp (q_d - q) + kd (qd_d - qd)`` (``kp = w^2``, ``kd = 2 w``, ``w = 2 pi`` :data:`TRACKING_BANDWIDTH`)
and the applied torque is MuJoCo's inverse dynamics at the measured state and ``a`` (``mj_inverse``: rigid
body, armature, damping and friction loss as MuJoCo models them). The measured effort is that applied
torque plus Gaussian noise; positions and velocities are MuJoCo's state on the sample grid.

**Friction loss** is MuJoCo's soft dry-friction constraint: its force is
``-clip((qdd + b qd) / R, -f_loss, f_loss)`` with ``b = 2 / (dmax timeconst)`` (105 1/s with MuJoCo's default
``solreffriction = (0.02, 1)`` and ``solimp`` ``dmax = 0.95``) and ``R`` small, so it saturates within a few
mrad/s of ``qd + qdd / b = 0``: it flips *before* the velocity crosses zero by ``1 / b = 9.5 ms``
(:data:`MUJOCO_REVERSAL_LEAD`), as stick-slip does, which the friction model ``coulomb_viscous_lead``
captures (docs/simulation.md measures every model on it).

**Friction warm-up and payloads** (:class:`MujocoRobot`): ``t`` after the arm's cold start its joints' damping and
friction loss are the warm ones times ``1 + cold_excess exp(-t / t_w) + cold_excess_2 exp(-t / t_2)`` (the arms set
them before every step; :meth:`MujocoArm.reset_warmup` restarts the count); :meth:`MujocoRobot.attach_payload` adds
a payload's ten parameters to the last link's bodies.

**True parameters** (:class:`MujocoRobot`): the inertials are read back from the compiled model (every body
moving with a joint, moved into its link frame and summed), the armature, damping and friction loss from
its joints, so the regressor of the friction model family (armature included, joint side) with them
(:attr:`MujocoRobot.parameters`) gives MuJoCo's torques except where the family cannot follow MuJoCo's
friction (near velocity reversals): what a user sees there is model mismatch, not identification error.
"""
from __future__ import annotations

import copy
import dataclasses
import logging
import math
import xml.etree.ElementTree as ElementTree
from typing import ClassVar

import numpy as np
import pinocchio as pin

from robot_dynid import validators
from robot_dynid.errors import DataError, DynIdError, message_line
from robot_dynid.experiment.simulation import checked_warmup, noise_std_per_joint, plausible_parameters, warmup_factor
from robot_dynid.experiment.trajectory_following import ArmSamples, GridArm
from robot_dynid.model import friction_models
from robot_dynid.model.friction import FrictionModel
from robot_dynid.model.link_inertials import prior_parameters
from robot_dynid.model.payload import Payload
from robot_dynid.model.regressor import N_INERTIAL, Regressor, inertia_parameter_map
from robot_dynid.model.joint_chains import joint_motion_subspace
from robot_dynid.model.robot_description import RobotDescription, build_pinocchio_model, link_frame_placements

__all__ = ["INSTALL_HINT", "DEFAULT_TIMESTEP", "MAX_TIMESTEP", "MIN_TIMESTEP", "TRACKING_BANDWIDTH",
           "MUJOCO_REVERSAL_LEAD", "MUJOCO_MIN_SPEED", "mujoco_friction_models", "EngineUnavailableError",
           "import_mujoco", "BODY_INERTIAL_FIELDS", "MujocoModel", "build_mujoco_model",
           "read_inertials", "MujocoRobot", "MujocoArm"]

logger = logging.getLogger(__name__)

INSTALL_HINT = 'pip install "robot-dynid[sim]" (or pip install mujoco)'
#: Largest integration step [s] (1 kHz); the step is the sample period divided into equal steps no longer.
DEFAULT_TIMESTEP = 1e-3
MAX_TIMESTEP = 1e-3
MIN_TIMESTEP = 1e-5
#: Bandwidth [Hz] of the computed-torque tracking law (critically damped).
TRACKING_BANDWIDTH = 10.0
#: Lead [s] of MuJoCo's friction loss over the velocity with its default solver settings, ``dmax timeconst / 2``.
MUJOCO_REVERSAL_LEAD = 0.95 * 0.02 / 2.0
#: [rad/s] the identification option ``min_speed`` for MuJoCo's friction loss: at rest and through a reversal it is
#: a constraint that no friction model follows; fitted over those equations (the ER3A demo's bag), Coulomb friction
#: came out 5-15 % low and viscous 25-70 % high, without them within 1 and 6 % (docs/simulation.md).
MUJOCO_MIN_SPEED = 0.02


def mujoco_friction_models() -> list[str]:
    """The friction models whose true values MuJoCo's damping and friction loss give (their registry entry's
    ``mujoco`` mapping), sorted."""
    return sorted(name for name in friction_models.names() if friction_models.shape(name).mujoco is not None)


class EngineUnavailableError(DynIdError):
    """The mujoco package is not installed."""


def import_mujoco():
    """The mujoco module, or EngineUnavailableError saying how to install it."""
    try:
        import mujoco
    except ImportError:
        raise EngineUnavailableError(f"the mujoco engine needs the mujoco package: {INSTALL_HINT}") from None
    return mujoco


def _number(value: float) -> str:
    return repr(float(value))


def _urdf_for_mujoco(robot: RobotDescription) -> str:
    """URDF text MuJoCo can compile: the robot's URDF without visuals, collisions and unselected movable joints
    (made fixed), or a URDF of its DH table with placeholder inertials."""
    if robot.urdf is None:
        return _dh_urdf(robot)
    root = ElementTree.fromstring(robot.urdf)
    for link in root.findall("link"):
        for element in link.findall("visual") + link.findall("collision"):
            link.remove(element)
    selected = set(robot.joint_names)
    for joint in root.findall("joint"):
        if joint.get("type") not in ("fixed", None) and joint.get("name") not in selected:
            joint.set("type", "fixed")
    for element in root.findall("mujoco"):
        root.remove(element)
    root.insert(0, ElementTree.fromstring(
        '<mujoco><compiler fusestatic="false" discardvisual="true" balanceinertia="false" '
        'boundmass="1e-6" boundinertia="1e-9" strippath="true"/></mujoco>'))
    return ElementTree.tostring(root, encoding="unicode")


def _dh_urdf(robot: RobotDescription) -> str:
    """A URDF of a DH robot's kinematics (:func:`build_pinocchio_model`'s joint placements and axes)."""
    model = build_pinocchio_model(robot)
    lines = [f'<robot name="{robot.name}"><mujoco><compiler fusestatic="false" boundmass="1e-6" '
             'boundinertia="1e-9"/></mujoco><link name="world"/>']
    parent = "world"
    for joint_id, (name, prismatic) in enumerate(zip(robot.joint_names, robot.prismatic), start=1):
        placement = model.jointPlacements[joint_id]
        motion = joint_motion_subspace(model, joint_id)
        axis = motion[:3] if prismatic else motion[3:]
        xyz = " ".join(map(_number, placement.translation))
        rpy = " ".join(map(_number, pin.rpy.matrixToRpy(placement.rotation)))
        child = f"link_{joint_id}"
        lines.append(f'<joint name="{name}" type="{"prismatic" if prismatic else "revolute"}"><parent link="{parent}"/>'
                     f'<child link="{child}"/><origin xyz="{xyz}" rpy="{rpy}"/>'
                     f'<axis xyz="{" ".join(map(_number, axis))}"/><limit lower="-1e3" upper="1e3" effort="0" '
                     f'velocity="1"/></joint>')
        lines.append(f'<link name="{child}"><inertial><mass value="1"/><inertia ixx="1e-3" ixy="0" ixz="0" '
                     'iyy="1e-3" iyz="0" izz="1e-3"/></inertial></link>')
        parent = child
    return "".join(lines + ["</robot>"])


BODY_INERTIAL_FIELDS = ("body_mass", "body_ipos", "body_iquat", "body_inertia", "body_sameframe")
"""The MjModel fields that hold the bodies' inertials (what :func:`_write_inertials` sets)."""


@dataclasses.dataclass(frozen=True)
class MujocoModel:
    """A compiled MuJoCo model of a robot (:func:`build_mujoco_model`).

    Attributes
    ----------
    model : mujoco.MjModel
    dofs : ndarray of int, shape (n,)
        The DOF address (``qvel`` index) of each of the robot's joints, in the robot's order.
    qpos : ndarray of int, shape (n,)
        The ``qpos`` address of each joint.
    inertials_from : str
        Where the link inertials came from: ``"model file"`` or ``"plausible_parameters"``.
    """

    model: object
    dofs: np.ndarray
    qpos: np.ndarray
    inertials_from: str


def build_mujoco_model(robot: RobotDescription, seed: int | None = 0, timestep: float = DEFAULT_TIMESTEP):
    """The robot as a MuJoCo model (module docstring); :class:`MujocoModel`.

    Parameters
    ----------
    robot : RobotDescription
    seed : int or None
        Seed of :func:`~robot_dynid.experiment.simulation.plausible_parameters`, used where the description has
        no inertials.
    timestep : float
        Integration step [s], in [:data:`MIN_TIMESTEP`, :data:`MAX_TIMESTEP`].

    Raises
    ------
    EngineUnavailableError
        mujoco is not installed.
    RobotDescriptionError, DynIdError
        MuJoCo cannot compile the model (its message, one line), or a joint is missing from it.
    """
    mujoco = import_mujoco()
    validators.in_range(timestep, "timestep", DynIdError, "s", MIN_TIMESTEP, MAX_TIMESTEP)
    try:
        model = mujoco.MjModel.from_xml_string(robot.mjcf if robot.mjcf is not None else _urdf_for_mujoco(robot))
    except ValueError as error:
        raise DynIdError(f"MuJoCo cannot compile robot {robot.name!r}: {message_line(error)}") from None
    joint_ids = []
    for name in robot.joint_names:
        joint_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if joint_id < 0:
            raise DynIdError(f"joint {name!r} is not in MuJoCo's model of robot {robot.name!r}")
        joint_ids.append(joint_id)
    if model.nv != robot.n_joints:
        raise DynIdError(f"MuJoCo's model of robot {robot.name!r} has {model.nv} degrees of freedom, expected "
                         f"{robot.n_joints} (its joints {list(robot.joint_names)})")
    dofs = np.array([model.jnt_dofadr[j] for j in joint_ids])
    qpos = np.array([model.jnt_qposadr[j] for j in joint_ids])
    model.opt.timestep = float(timestep)
    model.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    model.opt.gravity[:] = robot.gravity
    model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | int(mujoco.mjtDisableBit.mjDSBL_LIMIT)
    for index, entry in enumerate(robot.simulation or ()):
        for key, field in (("armature", model.dof_armature), ("damping", model.dof_damping),
                           ("friction_loss", model.dof_frictionloss)):
            value = getattr(entry, key)
            if value is not None:
                field[dofs[index]] = float(value)
    prior = prior_parameters(robot)
    if prior is None:
        _write_inertials(mujoco, model, robot, dofs, plausible_parameters(robot, seed))
        source = "plausible_parameters"
    else:
        source = "model file"
    mujoco.mj_setConst(model, mujoco.MjData(model))
    return MujocoModel(model, dofs, qpos, source)


def _link_bodies(mujoco, model, robot: RobotDescription, dofs: np.ndarray) -> list[list[int]]:
    """Per joint, the MuJoCo bodies moving rigidly with its link: its body and every descendant body before the
    next joint."""
    owner = {}
    joint_bodies = {int(model.jnt_bodyid[model.dof_jntid[dof]]): index for index, dof in enumerate(dofs)}
    groups = [[] for _ in dofs]
    for body in range(1, model.nbody):   # parents come before children
        if body in joint_bodies:
            owner[body] = joint_bodies[body]
        elif int(model.body_parentid[body]) in owner:
            owner[body] = owner[int(model.body_parentid[body])]
        else:
            continue
        groups[owner[body]].append(body)
    return groups


def _link_frames_at_zero(robot: RobotDescription) -> list[pin.SE3]:
    """Each link frame in the world at ``q = 0``."""
    model = build_pinocchio_model(robot)
    data = model.createData()
    pin.forwardKinematics(model, data, np.zeros(model.nq))
    return [data.oMi[joint_id] * frame for joint_id, frame in enumerate(link_frame_placements(model), start=1)]


def _zero_pose_data(mujoco, model):
    data = mujoco.MjData(model)
    data.qpos[:] = 0.0
    mujoco.mj_kinematics(model, data)
    return data


def _write_inertials(mujoco, model, robot: RobotDescription, dofs: np.ndarray, parameters: np.ndarray) -> None:
    """Put the links' inertial parameters (10 n, regressor order, link frames) on each joint's body; the other
    bodies moving with it get no mass."""
    data = _zero_pose_data(mujoco, model)
    frames = _link_frames_at_zero(robot)
    for index, bodies in enumerate(_link_bodies(mujoco, model, robot, dofs)):
        for body in bodies[1:]:
            model.body_mass[body] = 0.0
            model.body_inertia[body] = 0.0
        body = bodies[0]
        body_in_world = pin.SE3(data.xmat[body].reshape(3, 3).copy(), data.xpos[body].copy())
        link_in_body = body_in_world.inverse() * frames[index]
        values = inertia_parameter_map(link_in_body.rotation, link_in_body.translation) \
            @ parameters[N_INERTIAL * index:N_INERTIAL * (index + 1)]
        mass, com = values[0], values[1:4] / values[0]
        xx, xy, yy, xz, yz, zz = values[4:]
        about_origin = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        about_com = about_origin - mass * (com @ com * np.eye(3) - np.outer(com, com))
        moments, axes = np.linalg.eigh(about_com)
        if np.linalg.det(axes) < 0.0:
            axes[:, 0] = -axes[:, 0]
        quaternion = np.empty(4)
        mujoco.mju_mat2Quat(quaternion, axes.reshape(-1))
        model.body_mass[body] = mass
        model.body_ipos[body] = com
        model.body_iquat[body] = quaternion
        model.body_inertia[body] = moments
        # the compiler marks a body whose inertial frame is its own frame (`body_sameframe`); MuJoCo 3 then
        # copies the body's pose into its inertial one and would ignore the new centre
        model.body_sameframe[body] = 0


def read_inertials(mujoco, mujoco_model: MujocoModel, robot: RobotDescription) -> np.ndarray:
    """The links' inertial parameters (10 n) [kg, kg m, kg m^2] in the regressor's order and link frames, from
    the compiled model's bodies (each body's mass, centre and principal inertia moved into its link frame)."""
    model = mujoco_model.model
    data = _zero_pose_data(mujoco, model)
    frames = _link_frames_at_zero(robot)
    parameters = []
    for index, bodies in enumerate(_link_bodies(mujoco, model, robot, mujoco_model.dofs)):
        world_to_link = frames[index].inverse()
        total = np.zeros(N_INERTIAL)
        for body in bodies:
            mass = float(model.body_mass[body])
            centre = world_to_link.act(data.xipos[body].copy())
            rotation = world_to_link.rotation @ data.ximat[body].reshape(3, 3)
            inertia = rotation @ np.diag(model.body_inertia[body]) @ rotation.T
            about_origin = inertia + mass * (centre @ centre * np.eye(3) - np.outer(centre, centre))
            total += np.concatenate([[mass], mass * centre, about_origin[[0, 0, 1, 0, 1, 2], [0, 1, 1, 2, 2, 2]]])
        parameters.append(total)
    return np.concatenate(parameters)


class MujocoRobot:
    """A robot in MuJoCo: its true parameters in a friction model family, and MuJoCo's inverse dynamics.

    Parameters
    ----------
    robot : RobotDescription
    friction : FrictionModel
        The family the true parameters are given in (:attr:`FrictionShape.mujoco`: MuJoCo's friction loss as the
        Coulomb level, its damping as the viscous coefficient; drift coefficients 0; ``none`` leaves them out).
    seed : int or None
        Seed of the inertials where the description has none.
    noise_std : float or array_like, shape (n,)
        Torque measurement noise [N m] (>= 0).
    timestep : float
        Largest integration step [s].
    cold_excess, warmup_time_constant, cold_excess_2, warmup_time_constant_2 : float
        Friction warm-up (:func:`~robot_dynid.experiment.simulation.warmup_factor`): ``t`` [s] after the cold start
        the joints' damping and friction loss are their warm values times ``1 + cold_excess exp(-t / t_w) +
        cold_excess_2 exp(-t / t_2)``; amplitudes >= 0 (0: no warm-up), time constants [s] > 0.

    Attributes
    ----------
    regressor : Regressor
        ``friction`` on the joint side, armature per joint, no offsets.
    parameters : ndarray, shape (p,)
        The true parameters of the warm arm without payload in ``regressor``'s order.
    model : MujocoModel
    """

    def __init__(self, robot: RobotDescription, friction: FrictionModel = FrictionModel("coulomb_viscous"),
                 seed: int | None = 0, noise_std=0.0, timestep: float = DEFAULT_TIMESTEP, cold_excess: float = 0.0,
                 warmup_time_constant: float = 1200.0, cold_excess_2: float = 0.0,
                 warmup_time_constant_2: float = 300.0) -> None:
        self.mujoco = import_mujoco()
        noise_std = noise_std_per_joint(noise_std, robot.joint_names)
        if friction.shape.mujoco is None and friction.name != "none":
            raise DynIdError(f"friction model {friction.name!r} has no MuJoCo counterpart; use one of "
                             f"{mujoco_friction_models()} or none")
        self.warmup = checked_warmup(cold_excess, warmup_time_constant, cold_excess_2, warmup_time_constant_2)
        self.model = build_mujoco_model(robot, seed, timestep)
        self.regressor = Regressor(robot, friction, armature=True, friction_side="joint")
        self.noise_std = np.array(noise_std)
        self.parameters = self._true_parameters()
        model, dofs = self.model.model, self.model.dofs
        self._warm_friction = (model.dof_damping[dofs].copy(), model.dof_frictionloss[dofs].copy())
        self._data = self.mujoco.MjData(self.model.model)

    @property
    def warms_up(self) -> bool:
        """Whether the friction warms up (a cold excess > 0)."""
        return self.warmup[0] + self.warmup[2] > 0.0

    def friction_factor(self, elapsed) -> np.ndarray:
        """The joints' damping and friction loss over their warm values at running times ``elapsed`` [s] (its
        shape)."""
        return warmup_factor(elapsed, *self.warmup)

    def set_friction(self, factor: float) -> None:
        """Set the joints' damping and friction loss to their warm values times ``factor`` [1]."""
        model, dofs = self.model.model, self.model.dofs
        damping, loss = self._warm_friction
        model.dof_damping[dofs] = damping * factor
        model.dof_frictionloss[dofs] = loss * factor

    def attach_payload(self, payload: Payload) -> None:
        """Fix ``payload`` to the last link of the simulated arm (its bodies' inertials; :attr:`parameters` stay
        the arm's without it)."""
        model = self.model.model
        self.use_inertials(self.payload_model(payload), self.mujoco.MjData(model))

    def payload_model(self, payload: Payload, base=None):
        """A copy of ``base`` (a MuJoCo model of this arm; None: the arm's own) with ``payload`` fixed to its last
        link, the arm's model untouched: computed ahead, :meth:`use_inertials` puts it in at the cost of copying
        a few arrays (fixing a body in a running 1 kHz loop must not stall it for the milliseconds this takes)."""
        robot = self.regressor.robot
        model = copy.copy(self.model.model if base is None else base)
        inertials = read_inertials(self.mujoco, dataclasses.replace(self.model, model=model), robot)
        inertials[-N_INERTIAL:] += payload.link_parameters(robot)
        _write_inertials(self.mujoco, model, robot, self.model.dofs, inertials)
        return model

    def use_inertials(self, source, scratch) -> None:
        """The bodies' inertials of ``source`` (a :meth:`payload_model`) in the arm's model, and the constants
        derived from them (``mj_setConst``, with the MjData ``scratch`` of this model as its workspace)."""
        model = self.model.model
        for name in BODY_INERTIAL_FIELDS:
            getattr(model, name)[...] = getattr(source, name)
        self.mujoco.mj_setConst(model, scratch)

    def _true_parameters(self) -> np.ndarray:
        model, dofs, friction = self.model.model, self.model.dofs, self.regressor.friction
        loss, damping = model.dof_frictionloss[dofs], model.dof_damping[dofs]
        coefficients = np.zeros((self.regressor.n_joints, friction.n_coefficients))
        if friction.name != "none":
            names = friction.coefficient_names
            coulomb, viscous, equal = friction.shape.mujoco
            for name, values in [(coulomb, loss), (viscous, damping), *((name, loss) for name in equal)]:
                coefficients[:, names.index(name)] = values
        elif np.any(loss > 0.0) or np.any(damping > 0.0):
            logger.warning("friction model none: MuJoCo's damping and friction loss are not in the true parameters")
        return np.concatenate([read_inertials(self.mujoco, self.model, self.regressor.robot),
                               coefficients.reshape(-1), model.dof_armature[dofs]])

    def torques(self, q, qd, qdd, rng=None, noise: bool = True, elapsed=None, **_ignored) -> np.ndarray:
        """MuJoCo's inverse dynamics (rigid body, armature, damping, friction loss) at each sample.

        Parameters
        ----------
        q, qd, qdd : array_like, shape (N, n)
            [rad], [rad/s], [rad/s^2].
        rng : numpy.random.Generator, int or None
            Noise generator or seed.
        noise : bool
            Add the measurement noise.
        elapsed : array_like, shape (N,), optional
            Running time since the cold start [s] of each sample, for the friction warm-up; None: warm.

        Returns
        -------
        ndarray, shape (N, n)
            Joint torques [N m].
        """
        q, qd, qdd = self.regressor._check_states(q, qd, qdd)
        data, dofs, qpos = self._data, self.model.dofs, self.model.qpos
        factors = None if not self.warms_up else \
            np.broadcast_to(1.0 if elapsed is None else self.friction_factor(elapsed), q.shape[:1])
        tau = np.empty(q.shape)
        for k in range(q.shape[0]):
            if factors is not None:
                self.set_friction(factors[k])
            data.qpos[qpos] = q[k]
            data.qvel[dofs] = qd[k]
            data.qacc[dofs] = qdd[k]
            self.mujoco.mj_inverse(self.model.model, data)
            tau[k] = data.qfrc_inverse[dofs]
        if noise and np.any(self.noise_std > 0.0):
            tau += np.random.default_rng(rng).normal(0.0, 1.0, tau.shape) * self.noise_std
        return tau

    def model_torques(self, q, qd, qdd) -> np.ndarray:
        """The true parameters through the family's regressor (N, n) [N m]: what a perfect identification
        in this friction model predicts."""
        return self.regressor.torque(self.parameters, q, qd, qdd)


class MujocoArm(GridArm):
    """A MuJoCo arm following trajectories (module docstring), sampled on the grid ``t_k = k / rate``.

    The same interface as :class:`~robot_dynid.experiment.trajectory_following.SimulatedArm`: send trajectories to
    :attr:`follower`, call :meth:`advance`. The physics is integrated from the start (the arm at rest at
    ``initial_positions``, ``t = 0`` its cold start for the friction warm-up until :meth:`reset_warmup`) in steps
    ``h = 1 / (rate ceil(1 / (rate timestep)))``; every step is integrated, even of samples :meth:`advance` skips
    because the caller fell behind. A trajectory command takes effect from the next sample. The parameters are
    :class:`~robot_dynid.experiment.trajectory_following.GridArm`'s, ``simulator`` a :class:`MujocoRobot`.
    """

    simulator_type: ClassVar[type] = MujocoRobot

    def __init__(self, simulator: MujocoRobot, rate: float, initial_positions=None, seed=None,
                 max_lag: float = 1.0) -> None:
        super().__init__(simulator, rate, initial_positions, seed, max_lag)
        self._set_substeps(self.rate)
        self._data = simulator.mujoco.MjData(simulator.model.model)
        self._data.qpos[simulator.model.qpos] = self.follower.sample([0.0])[0][0]
        omega = 2.0 * math.pi * TRACKING_BANDWIDTH
        self._gains = (omega**2, 2.0 * omega)
        self._warmup_resets = (np.zeros(1), np.zeros(1))     # arm times [s], running times there [s]

    def reset_warmup(self, time: float, elapsed: float = 0.0) -> None:
        """From arm time ``time`` [s] on, the friction warm-up runs from ``elapsed`` [s] (0: cold at ``time``)."""
        time = validators.number(time, "time [s]", DataError)
        elapsed = validators.positive(elapsed, "elapsed", DataError, "s", allow_zero=True)
        times, running = self._warmup_resets
        keep = times < time
        self._warmup_resets = (np.append(times[keep], time), np.append(running[keep], elapsed))

    def running_time(self, times) -> np.ndarray:
        """The running time since the cold start [s] at arm times ``times`` [s] (their shape): ``t`` until a
        :meth:`reset_warmup`."""
        times = np.asarray(times, dtype=float)
        starts, running = self._warmup_resets
        index = np.maximum(np.searchsorted(starts, times, side="right") - 1, 0)
        return running[index] + times - starts[index]

    def _set_substeps(self, step_rate: float) -> None:
        """Integration steps ``h = 1 / (step_rate m)``, ``m = ceil(1 / (step_rate timestep))``: :attr:`substeps`
        per sample."""
        model = self.simulator.model.model
        per_period = max(1, math.ceil(1.0 / (step_rate * model.opt.timestep) - 1e-9))
        self.substeps = round(per_period * step_rate / self.rate)
        model.opt.timestep = 1.0 / (self.rate * self.substeps)

    @property
    def timestep(self) -> float:
        """The integration step [s]."""
        return float(self.simulator.model.model.opt.timestep)

    def _step_times(self, count: int) -> np.ndarray:
        """The times [s] of the integration steps of the next ``count`` samples."""
        return (self._next_index * self.substeps + np.arange(count * self.substeps)) * self.timestep

    def _friction_factors(self, times: np.ndarray):
        """The friction warm-up factor at each of ``times`` (None without warm-up)."""
        return self.simulator.friction_factor(self.running_time(times)) if self.simulator.warms_up else None

    def advance(self, now: float) -> ArmSamples | None:
        """Integrate up to the last grid time not after ``now`` [s] and return the samples not returned before
        (at most ``max_lag * rate``; older ones are counted in ``n_skipped``); None when none is due."""
        due = self._due(now)
        if due is None:
            return None
        count, first = due
        steps = self._step_times(count)
        q_d, qd_d, qdd_d = self.follower.sample(steps)
        factors = self._friction_factors(steps)
        mujoco, model, data = self.simulator.mujoco, self.simulator.model.model, self._data
        dofs, qpos = self.simulator.model.dofs, self.simulator.model.qpos
        kp, kd = self._gains
        n = len(dofs)
        q, qd, qdd, tau = (np.empty((count, n)) for _ in range(4))
        for step in range(count * self.substeps):
            if factors is not None:
                self.simulator.set_friction(factors[step])
            position, velocity = data.qpos[qpos], data.qvel[dofs]
            data.qacc[dofs] = qdd_d[step] + kp * (q_d[step] - position) + kd * (qd_d[step] - velocity)
            mujoco.mj_inverse(model, data)
            data.qfrc_applied[dofs] = data.qfrc_inverse[dofs]
            if step % self.substeps == 0:
                k = step // self.substeps
                q[k], qd[k], qdd[k], tau[k] = position, velocity, data.qacc[dofs], data.qfrc_applied[dofs]
            mujoco.mj_step(model, data)
        times = (self._next_index + np.arange(count)) / self.rate
        self._next_index += count
        keep = slice(first, None)
        measured = tau[keep] + self._rng.normal(0.0, 1.0, tau[keep].shape) * self.simulator.noise_std
        return ArmSamples(times[keep], q[keep], qd[keep], qdd[keep], tau[keep], measured, n_skipped=first)
