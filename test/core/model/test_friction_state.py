"""The friction state a feed-forward serves: warm-up clock, cooling, temperatures, nominal friction."""
import math

import numpy as np
import pytest

from robot_dynid.errors import DataError
from robot_dynid.estimation.identification import IdentificationSettings, identify
from robot_dynid.experiment.simulation import SimulatedRobot, simulation_parameters
from robot_dynid.model.feedforward import compute_feedforward
from robot_dynid.model.friction import friction_model
from robot_dynid.model.friction_state import (NOMINAL, STATIC, TEMPERATURE, WARMUP, JointTemperatures, WarmupClock,
                                              friction_state)
from robot_dynid.model.regressor import Regressor
from robot_dynid.recordings.recording import Recording

# the truth: friction x (1 + B exp(-t / T1) + C exp(-t / T2)), t in minutes (thesis-like: settles in about an hour);
# a model with one exponential (T1) fitted to the same data misses it by more than 5 % at 20 min
B, T1, C, T2 = 0.2, 25.0, 0.5, 5.0


def truth_factor(minutes):
    return 1.0 + B * math.exp(-minutes / T1) + C * math.exp(-minutes / T2)


def test_served_drift_friction_follows_the_double_exponential_at_5_20_60_min(er3a_robot):
    robot = er3a_robot
    truth_regressor = Regressor(robot, friction_model("coulomb_viscous"))
    parameters = simulation_parameters(truth_regressor, seed=3)
    simulated = SimulatedRobot(truth_regressor, parameters, noise_std=0.05, cold_excess=B,
                               warmup_time_constant=T1 * 60.0, cold_excess_2=C, warmup_time_constant_2=T2 * 60.0)
    rng = np.random.default_rng(4)
    n_samples, n = 6000, robot.n_joints
    velocity = np.array([limit.velocity for limit in robot.limits])
    time = np.linspace(0.0, 90 * 60.0, n_samples)             # 90 min from the cold start
    q = rng.uniform(-1.0, 1.0, (n_samples, n))
    qd = rng.uniform(-0.5, 0.5, (n_samples, n)) * velocity
    qdd = rng.uniform(-1.0, 1.0, (n_samples, n))
    tau = simulated.torques(q, qd, qdd, elapsed=time, rng=5)
    recording = Recording.from_arrays(robot.joint_names, time, q, qd, qdd, tau, source="simulated warm-up")
    served_friction = friction_model("coulomb_viscous", drift="time", warmup_time_constant=T1 * 60.0,
                                     warmup_time_constant_2=T2 * 60.0)
    model = identify(recording, robot, IdentificationSettings(friction=served_friction, check_torque_scale=False))
    # the served state: a clock started cold at 1000 s of node time, no cooling
    clock = WarmupClock(1000.0)
    fc, fv = parameters[truth_regressor.slices["friction"]].reshape(n, 2).T
    v = 0.3 * velocity
    for minutes in (5.0, 20.0, 60.0):
        state = friction_state(model.friction, model.joint_names, 1000.0 + minutes * 60.0, clock)
        assert state.state == WARMUP and state.elapsed == pytest.approx(minutes * 60.0)
        q0 = np.full(n, 0.2)
        tau = [compute_feedforward(model, model.joint_names, q0, sign * v, elapsed=state.elapsed)[0]
               for sign in (1.0, -1.0)]
        served = (tau[0] - tau[1]) / 2.0                    # the odd part in qd: friction (Coriolis is even)
        expected = truth_factor(minutes) * (fc + fv * v)
        np.testing.assert_allclose(served, expected, rtol=0.05, err_msg=f"at {minutes} min")


def test_warmup_clock_cools_while_standing_still():
    clock = WarmupClock(100.0, elapsed=50.0, cooling_time_constant=600.0)
    assert clock.elapsed(160.0) == pytest.approx(110.0)              # moving: 1 s per s
    clock.motion(200.0, moving=False)
    assert clock.elapsed(800.0) == pytest.approx(150.0 * math.exp(-1.0))    # one cooling time constant
    clock.motion(800.0, moving=True)
    assert clock.elapsed(810.0) == pytest.approx(150.0 * math.exp(-1.0) + 10.0)
    clock.reset(900.0)
    assert clock.elapsed(930.0) == pytest.approx(30.0)
    no_cooling = WarmupClock(0.0)
    no_cooling.motion(10.0, moving=False)
    assert no_cooling.elapsed(70.0) == pytest.approx(70.0)
    with pytest.raises(DataError, match=r"elapsed must be finite and >= 0 \[s\]"):
        clock.reset(0.0, -1.0)


def test_temperature_model_is_nominal_until_every_joint_has_a_fresh_temperature():
    friction = friction_model("coulomb_viscous", drift="temperature", reference_temperature=25.0)
    joints = ("j1", "j2")
    temperatures = JointTemperatures(max_age=2.0)
    state = friction_state(friction, joints, 10.0, temperatures=temperatures)
    assert state.state == NOMINAL and state.temperature.tolist() == [25.0, 25.0]
    assert "no temperature received for joint j1" in state.message
    temperatures.update("j1", 40.0, stamp=9.0, now=10.0)
    assert friction_state(friction, joints, 10.0, temperatures=temperatures).state == NOMINAL
    temperatures.update("j2", 41.0, stamp=9.5, now=10.0)
    state = friction_state(friction, joints, 10.0, temperatures=temperatures)
    assert state.state == TEMPERATURE and state.temperature.tolist() == [40.0, 41.0]
    stale = friction_state(friction, joints, 11.5, temperatures=temperatures)      # j1's is 2.5 s old
    assert stale.state == NOMINAL and "joint j1 is 2.5 s old" in stale.message
    with pytest.raises(DataError, match="temperature of joint j2 is nan"):
        temperatures.update("j2", math.nan, stamp=11.0, now=11.0)
    with pytest.raises(DataError, match="temperature of joint j2 is stamped 20.0 s"):
        temperatures.update("j2", 30.0, stamp=20.0, now=11.0)
    assert friction_state(friction_model("coulomb_viscous"), joints, 0.0).state == STATIC


def test_the_newest_stamp_wins_whatever_order_temperatures_arrive_in():
    """Two sources of one joint's temperature (a per-joint topic and the joint temperatures topic), or a message
    delayed in transport: an older stamp never replaces a newer one, an equal or later one does."""
    temperatures = JointTemperatures(max_age=10.0)
    assert temperatures.update("j1", 40.0, stamp=100.0, now=100.1)
    assert not temperatures.update("j1", 25.0, stamp=99.0, now=100.2)        # late: stamped before
    assert temperatures.fresh(["j1"], now=100.3)[0].tolist() == [40.0]
    assert temperatures.update("j1", 41.0, stamp=100.0, now=100.4)            # the same stamp: the newer arrival
    assert temperatures.update("j1", 42.0, stamp=101.0, now=101.1)
    assert temperatures.fresh(["j1"], now=101.2)[0].tolist() == [42.0]
