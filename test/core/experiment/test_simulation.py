"""Simulated robot: torques against pinocchio, noise statistics, warm-up drift, consistency."""
import glob
import os
import sys

import numpy as np
import pinocchio as pin
import pytest

from robot_dynid.errors import DataError, DynIdError
from robot_dynid.experiment.engines import simulated_robot
from robot_dynid.experiment.mujoco_engine import EngineUnavailableError, import_mujoco
from robot_dynid.experiment.simulation import (SimulatedRobot, default_friction,
                                               plausible_parameters, simulation_parameters)
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from rnea_reference import rnea_torques
from repo_paths import REPO

ROOT = str(REPO)
CONFIGS = sorted(glob.glob(os.path.join(ROOT, "config", "robots", "*.yaml")))


def _states(n, n_samples, seed):
    rng = np.random.default_rng(seed)
    return tuple(rng.uniform(-2, 2, (n_samples, n)) for _ in range(3))


@pytest.mark.parametrize("path", CONFIGS, ids=os.path.basename)
def test_noise_free_torques_equal_pinocchio_rnea(path):
    robot = load_robot(path)
    regressor = Regressor(robot)
    parameters = plausible_parameters(robot, seed=4)
    q, qd, qdd = _states(robot.n_joints, 20, seed=5)
    expected = rnea_torques(robot, parameters, q, qd, qdd)
    simulated = SimulatedRobot(regressor, parameters, noise_std=0.5).torques(q, qd, qdd,
                                                                             noise=False)
    np.testing.assert_allclose(simulated, expected, rtol=0, atol=1e-9)


def _pseudo_inertia(inertia):
    """4x4 pseudo-inertia [[Sigma, m c], [m c^T, m]] of a pinocchio Inertia, Sigma = tr(I_o)/2 - I_o
    with I_o the inertia about the frame origin (pinocchio >= 3 also has Inertia.toPseudoInertia)."""
    mass, lever = inertia.mass, np.array(inertia.lever)
    about_origin = np.array(inertia.inertia) + mass * (lever @ lever * np.eye(3) - np.outer(lever, lever))
    pseudo = np.empty((4, 4))
    pseudo[:3, :3] = 0.5 * np.trace(about_origin) * np.eye(3) - about_origin
    pseudo[:3, 3] = pseudo[3, :3] = mass * lever
    pseudo[3, 3] = mass
    if hasattr(inertia, "toPseudoInertia"):
        np.testing.assert_allclose(pseudo, inertia.toPseudoInertia().toMatrix(), rtol=1e-12, atol=1e-15)
    return pseudo


@pytest.mark.parametrize("path", CONFIGS, ids=os.path.basename)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_plausible_parameters_are_physically_consistent(path, seed):
    robot = load_robot(path)
    parameters = plausible_parameters(robot, seed=seed).reshape(robot.n_joints, 10)
    for link in parameters:
        assert link[0] > 0.0
        inertia = pin.Inertia.FromDynamicParameters(link)
        assert np.all(np.linalg.eigvalsh(_pseudo_inertia(inertia)) > 0.0)
        principal = np.linalg.eigvalsh(inertia.inertia)          # about the centre of mass
        assert principal.min() > 0.0
        assert principal[0] + principal[1] >= principal[2] * (1 - 1e-12)


def test_plausible_parameters_depend_on_the_seed_only():
    robot = load_robot(os.path.join(ROOT, "config", "robots", "ur5.yaml"))
    np.testing.assert_array_equal(plausible_parameters(robot, 3), plausible_parameters(robot, 3))
    assert not np.allclose(plausible_parameters(robot, 3), plausible_parameters(robot, 4))


def test_noise_has_the_requested_standard_deviation():
    robot = load_robot(os.path.join(ROOT, "config", "robots", "puma560.yaml"))
    regressor = Regressor(robot)
    noise_std = np.array([0.5, 1.0, 0.2, 0.05, 0.05, 0.01])
    simulated = SimulatedRobot(regressor, plausible_parameters(robot), noise_std=noise_std)
    q, qd, qdd = _states(6, 20000, seed=6)
    noise = simulated.torques(q, qd, qdd, rng=7) - simulated.torques(q, qd, qdd, noise=False)
    # sample std of 20000 normal values: relative standard error 1/sqrt(2 N) = 0.5 %
    np.testing.assert_allclose(noise.std(axis=0), noise_std, rtol=0.03)
    assert np.all(np.abs(noise.mean(axis=0)) < 4 * noise_std / np.sqrt(20000))
    again = simulated.torques(q[:5], qd[:5], qdd[:5], rng=7)
    np.testing.assert_array_equal(again, simulated.torques(q[:5], qd[:5], qdd[:5], rng=7))


def test_cold_robot_has_extra_friction_that_decays():
    robot = load_robot(os.path.join(ROOT, "config", "robots", "ur5.yaml"))
    friction = friction_model("coulomb_viscous")
    regressor = Regressor(robot, friction=friction)
    parameters = simulation_parameters(regressor, seed=2)
    coefficients = parameters[regressor.slices["friction"]].reshape(6, 2)
    simulated = SimulatedRobot(regressor, parameters, cold_excess=0.5, warmup_time_constant=600.0)
    q, qd, qdd = _states(6, 4, seed=8)
    warm = SimulatedRobot(regressor, parameters).torques(q, qd, qdd)
    friction_torque = friction.torque(coefficients, qd)
    for elapsed, excess in ((0.0, 0.5), (600.0, 0.5 * np.exp(-1.0)), (1e6, 0.0)):
        cold = simulated.torques(q, qd, qdd, elapsed=np.full(4, elapsed))
        np.testing.assert_allclose(cold - warm, excess * friction_torque, atol=1e-10)


@pytest.mark.parametrize("name, expected", [
    ("coulomb_viscous", ("fc", "fv")),
    ("polynomial", ("f1", "f2", "f3", "f4")),
])
def test_default_friction_is_a_few_percent_of_the_effort(name, expected):
    robot = load_robot(os.path.join(ROOT, "config", "robots", "panda.yaml"))
    regressor = Regressor(robot, friction=friction_model(name, drift="time"))
    coefficients = default_friction(regressor).reshape(7, -1)
    assert regressor.friction.coefficient_names[:len(expected)] == expected
    effort = np.array([limit.effort for limit in robot.limits])
    velocity = np.array([limit.velocity for limit in robot.limits])
    coulomb = coefficients[:, 0]
    assert np.all((coulomb > 0.02 * effort) & (coulomb < 0.04 * effort))
    assert np.all(coefficients[:, 1] * velocity < 0.04 * effort)
    np.testing.assert_allclose(coefficients[:, len(expected)], 0.3 * coulomb)   # cold excess


def test_simulation_parameters_cover_every_column(er3a_robot):
    robot = er3a_robot
    regressor = Regressor(robot, friction=friction_model("arctan"), armature=True, offset=True)
    parameters = simulation_parameters(regressor, seed=1)
    assert parameters.shape == (regressor.n_parameters,)
    assert np.all(parameters[regressor.slices["armature"]] > 0.0)
    fc, fs = parameters[regressor.slices["friction"]].reshape(6, 3)[:, [0, 2]].T
    assert np.all(fs > fc)                      # arctan static level above Coulomb


def test_invalid_simulation_settings_are_rejected():
    robot = load_robot(os.path.join(ROOT, "config", "robots", "puma560.yaml"))
    regressor = Regressor(robot)
    parameters = plausible_parameters(robot)
    with pytest.raises(DynIdError, match=r"^parameters must have shape \(60 parameters,\), got \(59,\)$"):
        SimulatedRobot(regressor, parameters[:-1])
    with pytest.raises(DynIdError, match=r"^noise_std must be >= 0 \[N m\], got -1.0$"):
        SimulatedRobot(regressor, parameters, noise_std=-1.0)
    with pytest.raises(DynIdError, match=r"^noise_std must be finite \[N m\], got nan at joint j3$"):
        SimulatedRobot(regressor, parameters, noise_std=[0.1, 0.1, np.nan, 0.1, 0.1, 0.1])
    with pytest.raises(DynIdError, match=r"^noise_std must be a scalar or have shape \(6 joints,\), got \(2,\)$"):
        SimulatedRobot(regressor, parameters, noise_std=[0.1, 0.1])
    with pytest.raises(DynIdError, match=r"^warmup_time_constant must be finite and > 0 \[s\], got 0.0$"):
        SimulatedRobot(regressor, parameters, warmup_time_constant=0.0)
    with pytest.raises(DynIdError, match=r"cold_excess > 0 needs a friction model"):
        SimulatedRobot(regressor, parameters, cold_excess=0.2)
    with_friction = Regressor(robot, friction=friction_model("coulomb_viscous"))
    simulated = SimulatedRobot(with_friction, simulation_parameters(with_friction),
                               cold_excess=0.2)
    with pytest.raises(DataError, match=r"elapsed \(N,\) \[s\] is needed"):
        simulated.torques(*_states(6, 3, seed=0))


def test_without_mujoco_the_engine_says_how_to_install_it(monkeypatch, er3a_robot):
    monkeypatch.setitem(sys.modules, "mujoco", None)
    with pytest.raises(EngineUnavailableError, match=r'pip install "robot-dynid\[sim\]"'):
        import_mujoco()
    robot = er3a_robot
    with pytest.raises(EngineUnavailableError, match="mujoco engine needs the mujoco package"):
        simulated_robot("mujoco", robot, friction_model("coulomb_viscous"))
