"""Simulation engines behind ``sim_robot`` and ``robot-dynid demo``: one interface, two implementations.

- ``"regressor"`` (the default): :class:`~robot_dynid.experiment.simulation.SimulatedRobot`, torques from the
  identifier's own regressor with :func:`~robot_dynid.experiment.simulation.simulation_parameters`, and
  :class:`~robot_dynid.experiment.trajectory_following.SimulatedArm`, which follows trajectories exactly;
- ``"mujoco"``: :class:`~robot_dynid.experiment.mujoco_engine.MujocoRobot` and
  :class:`~robot_dynid.experiment.mujoco_engine.MujocoArm`, an independent physics engine integrating the arm
  under a computed-torque tracking law (needs the ``mujoco`` package: ``pip install "robot-dynid[sim]"``), or,
  with control settings, :class:`~robot_dynid.experiment.closed_loop.ControlledArm`: a joint-space PD plus the
  feed-forward it receives, as ros2_control drives an effort-controlled arm.

A *simulator* has ``regressor`` (the friction model family of the true parameters), ``parameters`` (the true
parameters in its order), ``noise_std`` (n,) [N m], ``torques(q, qd, qdd, noise=False)`` (the engine's own
noise-free torques (N, n) [N m]) and ``model_torques(q, qd, qdd)`` (the true parameters through the regressor:
what a perfect identification in that family predicts; equal to ``torques`` for the regressor engine). An *arm*
has ``follower`` (a :class:`~robot_dynid.experiment.trajectory_following.TrajectoryFollower` to command),
``simulator`` and ``advance(now) -> ArmSamples | None``.

Modes: ``"tracking"`` (the arm follows its commands exactly, or under computed torque: for identification runs)
and ``"control"`` (the MuJoCo engine only: PD plus feed-forward, :mod:`robot_dynid.experiment.closed_loop`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from robot_dynid import validators
from robot_dynid.errors import DynIdError

if TYPE_CHECKING:       # the engines are imported where they are built: pinocchio costs demo --help 0.1 s
    from robot_dynid.experiment.closed_loop import ControlSettings
    from robot_dynid.model.friction import FrictionModel
    from robot_dynid.model.robot_description import RobotDescription

__all__ = ["ENGINE_NAMES", "MODE_NAMES", "check_engine", "simulated_robot", "simulated_arm"]

ENGINE_NAMES = ("regressor", "mujoco")
MODE_NAMES = ("tracking", "control")


def check_engine(engine: str, field: str = "engine") -> str:
    """``engine`` if it is one of :data:`ENGINE_NAMES`, else one DynIdError line naming ``field``."""
    return validators.text(engine, field, DynIdError, list(ENGINE_NAMES))


def simulated_robot(engine: str, robot: RobotDescription, friction: FrictionModel, seed: int | None = 0,
                    noise_std=0.0, cold_excess: float = 0.0, warmup_time_constant: float = 1200.0,
                    timestep: float | None = None, cold_excess_2: float = 0.0,
                    warmup_time_constant_2: float = 300.0):
    """The simulator of ``engine`` for ``robot`` with true parameters of ``seed`` in the ``friction`` family.

    ``cold_excess``, ``warmup_time_constant`` [s], ``cold_excess_2`` and ``warmup_time_constant_2`` [s]: the friction
    warm-up, a double exponential (the regressor engine's friction coefficients, the MuJoCo engine's damping and
    friction loss). ``timestep`` [s] is the MuJoCo engine's largest step (default
    :data:`~robot_dynid.experiment.mujoco_engine.DEFAULT_TIMESTEP`).
    """
    check_engine(engine)
    if engine == "regressor":
        from robot_dynid.experiment.simulation import SimulatedRobot, simulation_parameters
        from robot_dynid.model.regressor import Regressor
        regressor = Regressor(robot, friction)
        return SimulatedRobot(regressor, simulation_parameters(regressor, seed), noise_std, cold_excess,
                              warmup_time_constant, cold_excess_2, warmup_time_constant_2)
    from robot_dynid.experiment.mujoco_engine import DEFAULT_TIMESTEP, MujocoRobot
    timestep = DEFAULT_TIMESTEP if timestep is None else timestep
    return MujocoRobot(robot, friction, seed=seed, noise_std=noise_std, timestep=timestep, cold_excess=cold_excess,
                       warmup_time_constant=warmup_time_constant, cold_excess_2=cold_excess_2,
                       warmup_time_constant_2=warmup_time_constant_2)


def simulated_arm(simulator, rate: float, initial_positions=None, seed=None, max_lag: float = 1.0,
                  control: ControlSettings | None = None):
    """The arm of ``simulator``'s engine sampled at ``rate`` [Hz]: a SimulatedArm or a MujocoArm, or with
    ``control`` (the MuJoCo engine only) a ControlledArm."""
    from robot_dynid.experiment.mujoco_engine import MujocoArm, MujocoRobot
    from robot_dynid.experiment.trajectory_following import SimulatedArm
    mujoco = isinstance(simulator, MujocoRobot)
    if control is not None:
        if not mujoco:
            raise DynIdError("the control mode needs the mujoco engine (the regressor engine follows its "
                             "trajectories exactly: there is nothing to control)")
        from robot_dynid.experiment.closed_loop import ControlledArm
        return ControlledArm(simulator, rate, initial_positions, seed=seed, max_lag=max_lag, settings=control)
    arm_class = MujocoArm if mujoco else SimulatedArm
    return arm_class(simulator, rate, initial_positions, seed=seed, max_lag=max_lag)
