"""Simulation engines behind ``sim_robot`` and ``robot-dynid demo``: one interface, two implementations.

- ``"regressor"`` (the default): :class:`~robot_dynid.experiment.simulation.SimulatedRobot`, torques from the
  identifier's own regressor with :func:`~robot_dynid.experiment.simulation.simulation_parameters`, and
  :class:`~robot_dynid.experiment.trajectory_following.SimulatedArm`, which follows trajectories exactly;
- ``"mujoco"``: :class:`~robot_dynid.experiment.mujoco_engine.MujocoRobot` and
  :class:`~robot_dynid.experiment.mujoco_engine.MujocoArm`, an independent physics engine integrating the arm
  under a computed-torque tracking law (needs the ``mujoco`` package: ``pip install "robot-dynid[sim]"``).

A *simulator* has ``regressor`` (the friction model family of the true parameters), ``parameters`` (the true
parameters in its order), ``noise_std`` (n,) [N m], ``torques(q, qd, qdd, noise=False)`` (the engine's own
noise-free torques (N, n) [N m]) and ``model_torques(q, qd, qdd)`` (the true parameters through the regressor:
what a perfect identification in that family predicts; equal to ``torques`` for the regressor engine). An *arm*
has ``follower`` (a :class:`~robot_dynid.experiment.trajectory_following.TrajectoryFollower` to command),
``simulator`` and ``advance(now) -> ArmSamples | None``.
"""
from __future__ import annotations

from robot_dynid import validators
from robot_dynid.errors import DynIdError
from robot_dynid.experiment.mujoco_engine import DEFAULT_TIMESTEP, MujocoArm, MujocoRobot
from robot_dynid.experiment.simulation import SimulatedRobot, simulation_parameters
from robot_dynid.experiment.trajectory_following import SimulatedArm
from robot_dynid.model.friction import FrictionModel
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_description import RobotDescription

ENGINE_NAMES = ("regressor", "mujoco")


def check_engine(engine: str, field: str = "engine") -> str:
    """``engine`` if it is one of :data:`ENGINE_NAMES`, else one DynIdError line naming ``field``."""
    return validators.text(engine, field, DynIdError, list(ENGINE_NAMES))


def simulated_robot(engine: str, robot: RobotDescription, friction: FrictionModel, seed: int | None = 0,
                    noise_std=0.0, cold_excess: float = 0.0, warmup_time_constant: float = 1200.0,
                    timestep: float = DEFAULT_TIMESTEP, cold_excess_2: float = 0.0,
                    warmup_time_constant_2: float = 300.0):
    """The simulator of ``engine`` for ``robot`` with true parameters of ``seed`` in the ``friction`` family.

    ``cold_excess``, ``warmup_time_constant`` [s], ``cold_excess_2`` and ``warmup_time_constant_2`` [s] (friction
    warm-up, a double exponential) are the regressor engine's only; the MuJoCo engine refuses a cold excess.
    ``timestep`` [s] is the MuJoCo engine's largest step.
    """
    check_engine(engine)
    if engine == "regressor":
        regressor = Regressor(robot, friction)
        return SimulatedRobot(regressor, simulation_parameters(regressor, seed), noise_std, cold_excess,
                              warmup_time_constant, cold_excess_2, warmup_time_constant_2)
    if cold_excess + cold_excess_2 > 0.0:
        raise DynIdError(f"cold_excess = {cold_excess:g}: the friction warm-up is simulated by the regressor engine "
                         "only (MuJoCo's friction loss is constant); set cold_excess 0 or engine regressor")
    return MujocoRobot(robot, friction, seed=seed, noise_std=noise_std, timestep=timestep)


def simulated_arm(simulator, rate: float, initial_positions=None, seed=None, max_lag: float = 1.0):
    """The arm of ``simulator``'s engine (a SimulatedArm or a MujocoArm) sampled at ``rate`` [Hz]."""
    arm_class = MujocoArm if isinstance(simulator, MujocoRobot) else SimulatedArm
    return arm_class(simulator, rate, initial_positions, seed=seed, max_lag=max_lag)
