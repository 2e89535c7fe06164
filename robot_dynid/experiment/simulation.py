"""A simulated robot for tests, demonstrations and benchmarks: torques from a known model.

:class:`SimulatedRobot` computes ``tau = Y(q, qd, qdd) @ theta`` with a :class:`Regressor` and
known parameters, adds Gaussian measurement noise per joint and, optionally, a friction warm-up
drift: every friction coefficient is multiplied by ``1 + cold_excess exp(-elapsed / t_w)
+ cold_excess_2 exp(-elapsed / t_2)`` (the thesis's double exponential in running time; ``cold_excess_2 = 0``
keeps one exponential), so a cold robot (``elapsed = 0``) has ``1 + cold_excess + cold_excess_2`` times its
warm friction.

:func:`plausible_parameters` gives physically consistent inertial parameters for any robot from
its geometry, :func:`default_friction` plausible friction coefficients, and
:func:`simulation_parameters` a full parameter vector for a regressor.
"""
from __future__ import annotations

import logging
import math

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError, DynIdError
from robot_dynid.model.regressor import N_INERTIAL, Regressor, inertia_parameter_map
from robot_dynid.model.joint_chains import joint_motion_subspace
from robot_dynid.model.robot_description import RobotDescription, build_pinocchio_model, link_frame_placements

__all__ = ["SEGMENT_DENSITY", "SEGMENT_RADIUS", "HOUSING_MASS", "HOUSING_RADIUS", "TOOL_LENGTH", "DEFAULT_TORQUE_SCALE",
           "plausible_parameters", "default_friction", "simulation_parameters", "noise_std_per_joint", "checked_warmup",
           "warmup_factor", "SimulatedRobot"]

logger = logging.getLogger(__name__)

#: Geometry of the generated links: a solid cylinder from each joint origin to the next one
#: (effective density of a hollow arm segment [kg/m^3], radius [m]) plus a solid sphere at
#: the joint for the motor and housing ([kg], [m]); the last link gets a cylinder of
#: ``TOOL_LENGTH`` [m] along its joint axis.
SEGMENT_DENSITY = 1200.0
SEGMENT_RADIUS = 0.045
HOUSING_MASS = 1.5
HOUSING_RADIUS = 0.06
TOOL_LENGTH = 0.08
#: Torque scale [N m] of joints without an effort limit, for friction defaults.
DEFAULT_TORQUE_SCALE = 20.0


def _cylinder(mass: float, radius: float, start: np.ndarray, end: np.ndarray):
    """Mass, centre [m] and inertia about the centre [kg m^2] of a solid cylinder."""
    axis = end - start
    length = float(np.linalg.norm(axis))
    direction = axis / length
    along = 0.5 * mass * radius**2
    across = mass * (3.0 * radius**2 + length**2) / 12.0
    inertia = across * np.eye(3) + (along - across) * np.outer(direction, direction)
    return mass, 0.5 * (start + end), inertia


def _parameters_from_bodies(bodies) -> np.ndarray:
    """Sum bodies (mass, centre, inertia about centre) into ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz,
    Iyz, Izz]`` about the frame origin (parallel-axis theorem ``I + m S(c)^T S(c)``)."""
    total = np.zeros(N_INERTIAL)
    for mass, centre, inertia in bodies:
        about_origin = inertia + mass * (centre @ centre * np.eye(3) - np.outer(centre, centre))
        total += np.concatenate([[mass], mass * centre,
                                 about_origin[[0, 0, 1, 0, 1, 2], [0, 1, 1, 2, 2, 2]]])
    return total


def plausible_parameters(robot: RobotDescription, seed: int | None = 0) -> np.ndarray:
    """Physically consistent inertial parameters of every link, from the robot's geometry.

    Each link is a solid cylinder from its joint origin to the next joint origin plus a solid
    sphere at its joint (constants ``SEGMENT_*``, ``HOUSING_*``), with masses and radii scaled
    by random factors in [0.7, 1.3] and the cylinder's centre moved by up to 1 cm, so no two
    seeds give the same robot and the products of inertia are not all zero.

    Parameters
    ----------
    robot : RobotDescription
    seed : int, numpy.random.Generator or None
        Seed (or generator) of the random factors.

    Returns
    -------
    ndarray, shape (10 n,)
        Per link ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` about the origin of the link
        frame, in it (the regressor's order) [kg, kg m, kg m^2].
    """
    rng = np.random.default_rng(seed)
    model = build_pinocchio_model(robot)
    link_frames = link_frame_placements(model)
    parameters = []
    for joint_id in range(1, model.njoints):
        if joint_id + 1 < model.njoints:
            end = np.array(model.jointPlacements[joint_id + 1].translation)
        else:
            end = TOOL_LENGTH * joint_motion_subspace(model, joint_id)[3:]
        scale_mass, scale_radius, scale_housing = rng.uniform(0.7, 1.3, 3)
        shift = rng.uniform(-0.01, 0.01, 3)
        housing_mass = HOUSING_MASS * scale_housing
        bodies = [(housing_mass, np.zeros(3), 0.4 * housing_mass * HOUSING_RADIUS**2 * np.eye(3))]
        length = float(np.linalg.norm(end))
        if length > 1e-6:
            radius = SEGMENT_RADIUS * scale_radius
            mass = SEGMENT_DENSITY * math.pi * radius**2 * length * scale_mass
            bodies.append(_cylinder(mass, radius, shift, end + shift))
        in_joint_frame = _parameters_from_bodies(bodies)
        joint_in_link = link_frames[joint_id - 1].inverse()
        parameters.append(inertia_parameter_map(joint_in_link.rotation, joint_in_link.translation)
                          @ in_joint_frame)
    return np.concatenate(parameters)


def _torque_scales(robot: RobotDescription) -> np.ndarray:
    effort = robot.limit_arrays().effort
    return np.where(np.isnan(effort), DEFAULT_TORQUE_SCALE, effort)


def default_friction(regressor: Regressor, seed: int | None = 0) -> np.ndarray:
    """Plausible friction coefficients for ``regressor.friction``, joint by joint.

    With ``T`` the joint's effort limit (``DEFAULT_TORQUE_SCALE`` when unknown) and ``v`` its
    velocity limit, each coefficient is its model's ``typical(T, v)`` (:mod:`robot_dynid.model.friction_models`):
    the warm friction at full speed is about 6 % of ``T`` (Coulomb 3 % of ``T``, viscous 3 % of ``T`` at ``v``, a
    static (arctan ``fs``) level 1.3 times Coulomb, the cube-root term -1 % of ``T`` at ``v``, polynomial
    ``f3 = -0.5 %``, ``f4 = 0.2 %`` of ``T`` at ``v``).
    Temperature drift coefficients are -0.5 % of the base coefficient per kelvin, cold-start
    coefficients 30 % of it (the second exponential's 20 %). Each joint is scaled by a random factor in [0.8, 1.2].

    A motor's friction row (a transmission) takes the scales of its main joint (the largest entry of
    its row of ``T``, the gear ratio ``r``) moved to the motor side: torque ``T / r``, velocity ``v r``.

    Returns
    -------
    ndarray, shape (rows * n_coefficients,)
        In the order of the regressor's friction parameters (rows: :attr:`Regressor.friction_rows`).
    """
    rng = np.random.default_rng(seed)
    friction = regressor.friction
    torque, velocity = _row_scales(regressor, regressor.friction_rows)
    base = {entry.name: entry.typical(torque, velocity) for entry in friction.shape.coefficients}
    drift = {"_dT": -0.005, "_cold": 0.3, "_cold2": 0.2}
    columns = []
    for name in friction.coefficient_names:
        suffix = next((s for s in drift if name.endswith(s)), None)
        if suffix is None:
            columns.append(base[name])
        else:
            columns.append(drift[suffix] * base[name[:-len(suffix)]])
    coefficients = np.array(columns).T * rng.uniform(0.8, 1.2, (len(regressor.friction_rows), 1))
    return coefficients.reshape(-1)


def _row_scales(regressor: Regressor, rows) -> tuple[np.ndarray, np.ndarray]:
    """Torque [N m] and velocity [rad/s] scales of friction or armature rows: a joint's effort and velocity
    limits, or a motor's (its main joint's, moved through its gear ratio)."""
    robot = regressor.robot
    torque = _torque_scales(robot)
    velocity = robot.limit_arrays().velocity
    if robot.transmission is None:
        return torque[[row.index for row in rows]], velocity[[row.index for row in rows]]
    main, ratio = robot.transmission.main_joints, robot.transmission.gear_ratios
    return (np.array([torque[row.index] if row.kind == "joint" else torque[main[row.index]] / ratio[row.index]
                      for row in rows]),
            np.array([velocity[row.index] if row.kind == "joint" else velocity[main[row.index]] * ratio[row.index]
                      for row in rows]))


def simulation_parameters(regressor: Regressor, seed: int | None = 0) -> np.ndarray:
    """Full parameter vector (p,) for ``regressor``: :func:`plausible_parameters`,
    :func:`default_friction`, armature ``Ia = 1e-3 T`` [kg m^2] (``T`` the torque scale in
    N m; a motor's ``1e-3 T / r^2``, ``r`` its gear ratio) and offsets uniform in +-1 % of ``T`` [N m]."""
    rng = np.random.default_rng(seed)
    torque = _torque_scales(regressor.robot)
    parts = [plausible_parameters(regressor.robot, rng), default_friction(regressor, rng)]
    if regressor.armature:
        scale, _ = _row_scales(regressor, regressor.armature_rows)
        ratio = np.array([1.0 if row.kind == "joint" else regressor.robot.transmission.gear_ratios[row.index]
                          for row in regressor.armature_rows])
        scale = scale / ratio      # a motor's Ia enters a joint as r^2 Ia: the same joint-side inertia
        parts.append(1e-3 * scale * rng.uniform(0.8, 1.2, len(regressor.armature_rows)))
    if regressor.offset:
        parts.append(0.01 * torque * rng.uniform(-1.0, 1.0, regressor.n_joints))
    return np.concatenate(parts)


def noise_std_per_joint(value, joint_names) -> np.ndarray:
    """Measurement noise standard deviation per joint [N m], (n,): one for all joints or one per joint of
    ``joint_names``, each finite and >= 0."""
    return validators.array(value, "noise_std", DynIdError, shape=(len(joint_names),), axes=("joints",),
                            columns=joint_names, minimum=0.0, unit="N m", broadcast=True, copy=True)


def checked_warmup(cold_excess, warmup_time_constant, cold_excess_2, warmup_time_constant_2) -> tuple:
    """The friction warm-up ``(cold_excess, t_w [s], cold_excess_2, t_2 [s])`` as floats, amplitudes >= 0 and time
    constants > 0; DynIdError naming the first that is not."""
    for name, value in (("cold_excess", cold_excess), ("cold_excess_2", cold_excess_2)):
        validators.positive(value, name, DynIdError, "1", allow_zero=True)
    for name, value in (("warmup_time_constant", warmup_time_constant),
                        ("warmup_time_constant_2", warmup_time_constant_2)):
        validators.positive(value, name, DynIdError, "s")
    return float(cold_excess), float(warmup_time_constant), float(cold_excess_2), float(warmup_time_constant_2)


def warmup_factor(elapsed, cold_excess, warmup_time_constant, cold_excess_2, warmup_time_constant_2) -> np.ndarray:
    """``1 + cold_excess exp(-t / t_w) + cold_excess_2 exp(-t / t_2)``, the shape of ``elapsed`` ``t`` [s]: the
    friction of an arm ``t`` after its cold start over its warm friction."""
    t = np.asarray(elapsed, dtype=float)
    return (1.0 + cold_excess * np.exp(-t / warmup_time_constant)
            + cold_excess_2 * np.exp(-t / warmup_time_constant_2))


class SimulatedRobot:
    """Joint torques of a known model, with noise and friction warm-up.

    Parameters
    ----------
    regressor : Regressor
    parameters : array_like, shape (p,)
        True parameters in the order of ``regressor.parameter_names``.
    noise_std : float or array_like, shape (n,)
        Standard deviation of the torque measurement noise per joint [N m] (>= 0).
    cold_excess : float
        Extra friction of the cold robot as a fraction of the warm friction (>= 0); 0 disables
        the drift.
    warmup_time_constant : float
        ``t_w`` [s] of the drift (> 0).
    cold_excess_2 : float
        Amplitude of the second exponential, a fraction of the warm friction (>= 0); 0: one exponential.
    warmup_time_constant_2 : float
        ``t_2`` [s] of the second exponential (> 0).
    """

    def __init__(self, regressor: Regressor, parameters, noise_std=0.0, cold_excess: float = 0.0,
                 warmup_time_constant: float = 1200.0, cold_excess_2: float = 0.0,
                 warmup_time_constant_2: float = 300.0) -> None:
        if not isinstance(regressor, Regressor):
            raise DynIdError(f"regressor must be a Regressor, got {type(regressor).__name__}")
        parameters = validators.array(parameters, "parameters", DynIdError, shape=(regressor.n_parameters,),
                                      axes=("parameters",), columns=regressor.parameter_names, finite=False)
        noise_std = noise_std_per_joint(noise_std, regressor.robot.joint_names)
        warmup = checked_warmup(cold_excess, warmup_time_constant, cold_excess_2, warmup_time_constant_2)
        if cold_excess + cold_excess_2 > 0.0 and regressor.friction.n_coefficients == 0:
            raise DynIdError("cold_excess > 0 needs a friction model; the regressor has none")
        self.regressor = regressor
        self.parameters = parameters
        self.noise_std = np.array(noise_std)
        self.cold_excess, self.warmup_time_constant, self.cold_excess_2, self.warmup_time_constant_2 = warmup

    def friction_factor(self, elapsed) -> np.ndarray:
        """:func:`warmup_factor` (N,) of running times ``elapsed`` (N,) [s]: the true friction over the warm one."""
        return warmup_factor(elapsed, self.cold_excess, self.warmup_time_constant, self.cold_excess_2,
                             self.warmup_time_constant_2)

    def torques(self, q, qd, qdd, elapsed=None, temperature=None, rng=None,
                noise: bool = True) -> np.ndarray:
        """Simulated joint torques.

        Parameters
        ----------
        q, qd, qdd : array_like, shape (N, n)
            [rad], [rad/s], [rad/s^2].
        elapsed : array_like, shape (N,), optional
            Time since the cold start [s]; needed when ``cold_excess > 0`` or the friction
            model drifts with time.
        temperature : array_like, shape (N, n), optional
            [deg C], when the friction model drifts with temperature.
        rng : numpy.random.Generator, int or None
            Noise generator or seed.
        noise : bool
            Add the measurement noise.

        Returns
        -------
        ndarray, shape (N, n)
            Joint torques [N m].
        """
        Y = self.regressor.compute(q, qd, qdd, temperature=temperature, elapsed=elapsed)
        tau = np.einsum("kjp,p->kj", Y, self.parameters)
        if self.cold_excess + self.cold_excess_2 > 0.0:
            if elapsed is None:
                raise DataError("elapsed (N,) [s] is needed to simulate the friction warm-up "
                                "(cold_excess > 0), got None")
            friction = self.regressor.slices["friction"]
            excess = self.friction_factor(elapsed) - 1.0
            tau += np.einsum("kjp,p->kj", Y[:, :, friction], self.parameters[friction]) \
                * excess[:, None]
        if noise and np.any(self.noise_std > 0.0):
            tau += np.random.default_rng(rng).normal(0.0, 1.0, tau.shape) * self.noise_std
        return tau

    def model_torques(self, q, qd, qdd) -> np.ndarray:
        """The true parameters through the regressor (N, n) [N m], the warm robot's torques: what a perfect
        identification predicts (the same interface as the MuJoCo engine's)."""
        return self.regressor.torque(self.parameters, q, qd, qdd)
