"""Online friction tracking: RLS with forgetting on the friction, rigid body fixed."""
import dataclasses

import numpy as np
import pytest

from robot_dynid.errors import DynIdError
from robot_dynid.estimation.friction_tracking import FrictionTracker, OnlineFrictionTracking, time_to_follow
from robot_dynid.experiment.simulation import SimulatedRobot, simulation_parameters
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from tracked_arm import stepped_viscous, tracked_model

RATE, STEP_AT, DURATION, NOISE = 100.0, 10.0, 50.0, 0.05       # Hz, s, s, N m
#: The stated time: the tracked viscous friction is within 5 % of a 30 % step this long after it.
FOLLOW_TIME = 25.0


def operation(robot, seed):
    """Ordinary motion: a sum of two sines per joint, through rest and reversals (N, n) each."""
    t = np.arange(0.0, DURATION, 1.0 / RATE)
    rng = np.random.default_rng(seed)
    velocity = np.array([limit.velocity for limit in robot.limits])
    w = rng.uniform(0.3, 1.2, (2, robot.n_joints))
    a = 0.3 * velocity / w
    q = a[0] * np.sin(w[0] * t[:, None]) + 0.5 * a[1] * np.sin(w[1] * t[:, None] + 1.0)
    qd = a[0] * w[0] * np.cos(w[0] * t[:, None]) + 0.5 * a[1] * w[1] * np.cos(w[1] * t[:, None] + 1.0)
    qdd = -a[0] * w[0] ** 2 * np.sin(w[0] * t[:, None]) - 0.5 * a[1] * w[1] ** 2 * np.sin(w[1] * t[:, None] + 1.0)
    return t, q, qd, qdd


def stepped_operation(robot):
    """The model of ``robot`` before a 30 % step of every viscous coefficient at STEP_AT, the operation's t, q, qd,
    qdd, its torques (the step included) and the stepped viscous coefficients."""
    regressor = Regressor(robot, friction_model("coulomb_viscous"))
    parameters = simulation_parameters(regressor, seed=1)
    stepped, viscous = stepped_viscous(regressor, parameters, 1.3)
    t, q, qd, qdd = operation(robot, seed=2)
    before, after = t < STEP_AT, t >= STEP_AT
    tau = np.empty_like(q)
    tau[before] = SimulatedRobot(regressor, parameters, NOISE).torques(q[before], qd[before], qdd[before], rng=3)
    tau[after] = SimulatedRobot(regressor, stepped, NOISE).torques(q[after], qd[after], qdd[after], rng=4)
    return tracked_model(robot, regressor, parameters, NOISE), t, q, qd, qdd, tau, stepped[viscous]


def test_tracking_follows_a_30_percent_step_of_viscous_friction_within_5_percent(er3a_robot):
    robot = er3a_robot
    model, t, q, qd, qdd, tau, truth = stepped_operation(robot)
    tracker = FrictionTracker(model, forgetting=0.999)
    fv_names = [f"fv{k}" for k in range(1, robot.n_joints + 1)]
    index = [tracker.names.index(name) for name in fv_names]
    chunk = int(RATE) // 4                                    # 0.25 s of samples per update call
    ends = np.arange(chunk, t.size + 1, chunk)
    history = np.empty((ends.size, len(index)))
    for k, end in enumerate(ends):
        rows = slice(end - chunk, end)
        tracker.update(q[rows], qd[rows], qdd[rows], tau[rows])
        history[k] = tracker.values[index]
    times = t[ends - 1]
    follow = [time_to_follow(history[times >= STEP_AT, joint], truth[joint], 0.05, times[times >= STEP_AT]) - STEP_AT
              for joint in range(robot.n_joints)]
    assert max(follow) <= FOLLOW_TIME, (follow, history[-1], truth)
    np.testing.assert_allclose(history[-1], truth, rtol=0.05)
    assert tracker.changed(0.2) and not tracker.changed(0.4)
    assert np.all(tracker.std[index] < 0.05 * truth)
    tracked = tracker.tracked_model()
    rigid = [k for k in range(model.base.rank) if k not in tracker.tracked]
    np.testing.assert_array_equal(tracked.values[rigid], model.values[rigid])      # the rigid body stays fixed


def test_online_tracking_offers_a_model_only_after_the_friction_changed_and_gates_it(er3a_robot):
    model, t, q, qd, _, tau, _ = stepped_operation(er3a_robot)
    online = OnlineFrictionTracking(model, forgetting=0.999, change_fraction=0.1)
    accepted = []
    for k in range(t.size):
        outcome = online.add(t[k], q[k], qd[k], tau[k])
        if outcome is not None and outcome.accepted:
            accepted.append((t[k], outcome.model))
    assert accepted and accepted[0][0] > STEP_AT, [time for time, _ in accepted]
    first = accepted[0][1]
    rigid = [k for k in range(model.base.rank) if k not in online.tracker.tracked]
    np.testing.assert_array_equal(first.values[rigid], model.values[rigid])
    assert online.model is accepted[-1][1] and len(online.history) == t.size // online.batch
    # a gate that nothing passes: offered, refused, the model in use stays
    strict = OnlineFrictionTracking(model, forgetting=0.999, change_fraction=0.1, max_holdout_rsd=1e-9)
    outcomes = [strict.add(t[k], q[k], qd[k], tau[k]) for k in range(t.size)]
    refused = [o for o in outcomes if o is not None]
    assert refused and not any(o.accepted for o in refused) and strict.model is model
    assert "is not below max_holdout_rsd" in refused[0].message


@pytest.mark.parametrize("bound", [{"max_holdout_rsd": 0.0}, {"max_holdout_rsd": 1.5}, {"max_condition": 1.0},
                                   {"max_condition": float("nan")}])
def test_online_tracking_refuses_a_gate_bound_outside_the_gates_interval(er3a_robot, bound):
    regressor = Regressor(er3a_robot, friction_model("coulomb_viscous"))
    model = tracked_model(er3a_robot, regressor, simulation_parameters(regressor, seed=1), NOISE)
    name = next(iter(bound))
    with pytest.raises(DynIdError, match=rf"{name} must be finite and in \("):
        OnlineFrictionTracking(model, **bound)


def test_a_model_without_friction_cannot_be_tracked(er3a_robot):
    robot = er3a_robot
    regressor = Regressor(robot)
    model = tracked_model(robot, regressor, simulation_parameters(regressor, seed=1), NOISE)
    with pytest.raises(DynIdError, match="no friction parameters to track"):
        FrictionTracker(dataclasses.replace(model))
