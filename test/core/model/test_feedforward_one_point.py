"""The one-point path of compute_feedforward (bounds and joint order derived once per request joint order)
against the checked path: the same torques bit for bit, and every refusal still the checked path's message."""
import array
import dataclasses
import math
import re

import numpy as np
import pytest

from robot_dynid.errors import DataError
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.feedforward import (MAX_PLANS, Margins, admit_model, compute_feedforward,
                                           feedforward_limits, request_arrays)
from robot_dynid.model.friction import FrictionModel
from robot_dynid.model.payload import Payload, payload_frames
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file


def model_of(robot_file, friction=FrictionModel(), side=None, payload=False, seed=3):
    robot = load_robot(find_package_file("config", "robots", robot_file))
    regressor = Regressor(robot, friction, armature=side is not None, friction_side=side)
    base = compute_base_parameters(regressor)
    theta = np.zeros(regressor.n_parameters)
    theta[regressor.slices["inertial"]] = plausible_parameters(robot, seed=seed)
    theta[regressor.slices["friction"]] = np.random.default_rng(seed).uniform(0.1, 2.0, regressor.slices[
        "friction"].stop - regressor.slices["friction"].start)
    model = DynamicModel(robot, friction, side is not None, False, base, base.projection @ theta, np.zeros(base.rank),
                         friction_side=side)
    if payload:
        model = model.with_payload(Payload(frame=next(iter(payload_frames(robot))), mass=1.5, com=(0.01, 0.0, 0.05),
                                           inertia=(0.01, 0.0, 0.0, 0.01, 0.0, 0.01)))
    return model


def checked(model, names, q, qd, qdd, temperature=None, elapsed=None):
    """What the checked path computes for one point: request_arrays, then DynamicModel.torque, back to the
    request's order."""
    order = [list(names).index(joint) for joint in model.joint_names]
    arrays = request_arrays(model.joint_names, names, q, qd, qdd)
    back = np.argsort(order)
    drift = {}
    if temperature is not None:
        drift["temperature"] = np.broadcast_to(temperature, (1, len(order)))
    if elapsed is not None:
        drift["elapsed"] = np.full(1, elapsed)
    return np.ascontiguousarray(model.torque(*arrays, **drift)[:, back])


CASES = {
    "ur5 coulomb_viscous": lambda: model_of("ur5.yaml", FrictionModel("coulomb_viscous")),
    "ur5 coulomb_viscous_lead, dead band": lambda: model_of(
        "ur5.yaml", FrictionModel("coulomb_viscous_lead", reversal_lead=0.02, dead_band=0.05)),
    "ur5 temperature drift": lambda: model_of("ur5.yaml", FrictionModel("coulomb_viscous", drift="temperature")),
    "ur5 time drift": lambda: model_of("ur5.yaml", FrictionModel("arctan", drift="time")),
    "coupled wrist, motor side, armature": lambda: model_of("er3a_coupled_wrist.yaml",
                                                            FrictionModel("coulomb_viscous"), side="motor"),
    "linear track": lambda: model_of("ur5_on_linear_track.yaml", FrictionModel("polynomial")),
}


def left_to_right(model, names, q, qd, qdd):
    """The torques of one point as the compiled one-point call sums them: each model joint's row of the
    regressor times the torque parameters, added left to right in Python floats, in request order."""
    order = [list(names).index(joint) for joint in model.joint_names]
    Y = model.regressor.compute_one(*(np.asarray(v, dtype=float)[order] for v in (q, qd, qdd)))
    theta = model.torque_parameters()
    torques = []
    for row in Y.tolist():
        total = 0.0
        for y, t in zip(row, theta.tolist()):
            total += y * t
        torques.append(total)
    return np.array([[torques[order.index(k)] for k in range(len(names))]])


@pytest.mark.parametrize("case", CASES)
def test_one_point_equals_the_checked_path_bit_for_bit(case):
    """Bit for bit, except where the regressor has the compiled one-point call: it sums Y @ parameters left
    to right, where the checked path's matrix product (BLAS) sums in an order of its own; there it equals a
    Python left-to-right sum bit for bit and the checked path to rounding."""
    model = CASES[case]()
    limits = admit_model(model, Margins(effort=10.0, model_effort=10.0))
    rng = np.random.default_rng(4)
    n = len(model.joint_names)
    order = rng.permutation(n)
    names = [model.joint_names[i] for i in order]
    arrays = model.robot.limit_arrays()
    for _ in range(4):
        q = rng.uniform(np.maximum(arrays.lower, -3.0), np.minimum(arrays.upper, 3.0))[order]
        qd = (0.5 * rng.uniform(-arrays.velocity, arrays.velocity))[order]
        qdd = (0.5 * rng.uniform(-arrays.acceleration, arrays.acceleration))[order]
        temperature = rng.uniform(20.0, 50.0, n) if model.friction.needs_temperature else None
        elapsed = float(rng.uniform(0.0, 2000.0)) if model.friction.needs_elapsed else None
        for kind in (np.asarray, list, lambda v: array.array("d", v)):
            tau = compute_feedforward(model, names, kind(q), kind(qd), kind(qdd), temperature=temperature,
                                      elapsed=elapsed, limits=limits)
            reference = checked(model, names, q, qd, qdd, temperature, elapsed)
            if model.regressor.one_point_torque is None:
                np.testing.assert_array_equal(tau, reference)
            else:
                np.testing.assert_array_equal(tau, left_to_right(model, names, q, qd, qdd))
                np.testing.assert_allclose(tau, reference, rtol=0.0, atol=1e-13 * np.abs(reference).max())
            assert tau.shape == (1, n) and tau.flags.c_contiguous
    assert tuple(names) in limits.plans


def test_one_point_with_a_payload_and_without_velocities_equals_the_checked_path():
    model = model_of("ur5.yaml", payload=True)
    limits = admit_model(model)
    q = np.linspace(-1.0, 1.0, 6)
    tau = compute_feedforward(model, model.joint_names, q, limits=limits)
    np.testing.assert_array_equal(tau, checked(model, model.joint_names, q, np.zeros(6), np.zeros(6)))
    with_payload = model.torque(q, np.zeros(6), np.zeros(6))
    without = model.without_payload().torque(q, np.zeros(6), np.zeros(6))
    assert np.abs(with_payload - without).max() > 1.0          # the payload is in the torque


def test_a_plan_follows_the_model_and_the_plans_stay_bounded():
    model = model_of("ur5.yaml")
    limits = admit_model(model)
    q = np.full(6, 0.2)
    first = compute_feedforward(model, model.joint_names, q, limits=limits)
    heavier = dataclasses.replace(model, values=1.2 * model.values)
    np.testing.assert_array_equal(compute_feedforward(heavier, model.joint_names, q, limits=limits),
                                  checked(heavier, model.joint_names, q, np.zeros(6), np.zeros(6)))
    assert not np.array_equal(first, compute_feedforward(heavier, model.joint_names, q, limits=limits))
    rng = np.random.default_rng(1)
    for _ in range(3 * MAX_PLANS):
        order = rng.permutation(6)
        names = [model.joint_names[i] for i in order]
        np.testing.assert_array_equal(compute_feedforward(model, names, q, limits=limits), first[:, order])
    assert len(limits.plans) <= MAX_PLANS


UR5_MESSAGES = [
    ({"q": 7.0}, "point 0: positions of joint elbow_joint is 7.0 rad, beyond its limits"),
    ({"q": float("nan")}, "point 0: positions of joint elbow_joint is nan"),
    ({"qd": float("inf")}, "point 0: velocities of joint elbow_joint is inf"),
    ({"qd": 3.5}, "point 0: velocities of joint elbow_joint is 3.5 rad/s, beyond its velocity limit 3.15 rad/s "
                  "times velocity_margin 1.1"),
    ({"qdd": -16.0}, "point 0: accelerations of joint elbow_joint is -16.0 rad/s^2, beyond its acceleration limit"),
]


@pytest.mark.parametrize("friction", [FrictionModel(), FrictionModel("coulomb_viscous")], ids=["none", "compiled"])
@pytest.mark.parametrize("change, message", UR5_MESSAGES)
def test_a_refused_one_point_request_gets_the_checked_paths_message(change, message, friction):
    model = model_of("ur5.yaml", friction)
    assert (model.regressor.one_point_torque is not None) == (friction.name == "coulomb_viscous")
    limits = admit_model(model)
    names = list(reversed(model.joint_names))
    values = {"q": np.full(6, 0.1), "qd": np.zeros(6), "qdd": np.zeros(6)}
    compute_feedforward(model, names, values["q"], values["qd"], values["qdd"], limits=limits)     # a plan exists
    for field, value in change.items():
        values[field][names.index("elbow_joint")] = value
    with pytest.raises(DataError, match=re.escape(message)):
        compute_feedforward(model, names, values["q"], values["qd"], values["qdd"], limits=limits)


def test_other_refusals_of_one_point_are_the_checked_paths():
    model = model_of("ur5.yaml", FrictionModel("coulomb_viscous", drift="temperature"))
    limits = admit_model(model)
    names = model.joint_names
    with pytest.raises(DataError, match="the model's friction depends on joint temperature, and none has been "
                                        "received"):
        compute_feedforward(model, names, np.zeros(6), limits=limits)
    missing = "joint_names is missing joint(s) ['wrist_3_joint']; the model needs"
    with pytest.raises(DataError, match=re.escape(missing)):
        compute_feedforward(model, names[:5], np.zeros(5), limits=limits)
    with pytest.raises(DataError, match="velocities has 5 values, expected 6"):
        compute_feedforward(model, names, np.zeros(6), np.zeros(5), temperature=np.full(6, 30.0), limits=limits)
    # limits with an effort margin admit_model refuses (the model cannot hold the arm with it): the request check
    effort = feedforward_limits(model, Margins(effort=0.01))
    with pytest.raises(DataError, match=r"point 0: the effort of joint shoulder_lift_joint is .* N m, beyond its "
                                        r"effort limit 150.0 N m times effort_margin 0.01"):
        compute_feedforward(model, names, np.full(6, 0.3), temperature=np.full(6, 30.0), limits=effort)
    compiled = model_of("ur5.yaml", FrictionModel("coulomb_viscous"))      # the torque check in the compiled call
    with pytest.raises(DataError, match=r"point 0: the effort of joint shoulder_lift_joint is .* N m, beyond its "
                                        r"effort limit 150.0 N m times effort_margin 0.01"):
        compute_feedforward(compiled, names, np.full(6, 0.3), limits=feedforward_limits(compiled, Margins(effort=0.01)))


def test_the_gathering_kernel_checks_each_bound_inclusively_and_puts_the_joints_in_model_order():
    """_online_kernel.gather_within, the one-point path's check and reordering, against hand-made bounds."""
    from robot_dynid._online_kernel import gather_within
    order = np.array([2, 0, 1], dtype=np.intp)       # joint j of the output is value order[j] of the input
    bounds = np.array([[[-1.0] * 3, [1.0] * 3], [[-2.0] * 3, [2.0] * 3], [[-3.0] * 3, [3.0] * 3]])
    out = np.full((3, 1, 3), 9.0)
    q, qd, empty = np.array([1.0, -1.0, 0.5]), np.array([0.1, -2.0, 2.0]), np.empty(0)    # on the bounds: within
    assert gather_within((q, qd, empty), order, bounds, out) is True
    np.testing.assert_array_equal(out[:, 0], [[0.5, 1.0, -1.0], [2.0, 0.1, -2.0], [0.0, 0.0, 0.0]])
    for value in (np.nextafter(1.0, 2.0), math.nan, math.inf, -math.inf):
        beyond = q.copy()
        beyond[2] = value
        assert gather_within((beyond, qd, empty), order, bounds, out) is False
    assert gather_within((q, qd, np.array([0.0, 0.0, np.nextafter(-3.0, -4.0)])), order, bounds, out) is False
    assert gather_within((q, qd[:2], empty), order, bounds, out) is False      # neither m nor 0 values
    assert gather_within((q[:2], empty, empty), order, bounds, out) is False
    one = np.zeros((1, 1, 3))       # one field: the torques of the one-point path, in request order
    assert gather_within((np.array([4.0, 5.0, 6.0]),), order, np.array([[[-6.0] * 3, [6.0] * 3]]), one) is True
    np.testing.assert_array_equal(one, [[[6.0, 4.0, 5.0]]])
    with pytest.raises(ValueError, match=r"order\[0\] = 3 is not an index of the 3 values"):
        gather_within((q, qd, qd), np.array([3, 0, 1], dtype=np.intp), bounds, out)
    with pytest.raises(ValueError, match=r"needs bounds \(1, 2, m\) and out \(1, 1, 3\)"):
        gather_within((q,), order, bounds, out)
    with pytest.raises(TypeError):
        gather_within((list(q), qd, qd), order, bounds, out)


def test_the_compiled_one_point_call_answers_itself_and_refuses_inconsistent_plans():
    """OneSample.torque is what answers a valid point of a coulomb_viscous model (not the fallback), and a
    plan whose arrays do not fit the robot is a ValueError, which compute_feedforward turns into its checked path."""
    model = model_of("ur5.yaml", FrictionModel("coulomb_viscous"))
    limits = admit_model(model)
    names = list(reversed(model.joint_names))
    q, qd = np.linspace(-0.5, 0.5, 6), np.linspace(0.2, -0.2, 6)
    tau = compute_feedforward(model, names, q, qd, limits=limits)
    plan = limits.plans[tuple(names)]
    torque = model.regressor.one_point_torque
    arguments = [plan.order, plan.motion, plan.parameters, plan.back, plan.effort]
    np.testing.assert_array_equal(torque((q, qd, np.empty(0)), *arguments), tau)
    np.testing.assert_array_equal(tau, left_to_right(model, names, q, qd, np.zeros(6)))
    assert torque((q, qd, np.full(6, np.nan)), *arguments) is None
    with pytest.raises(ValueError, match=r"order\[0\] = 6 is not an index of the 6 joints"):
        torque((q, qd, np.empty(0)), np.array([6, 0, 1, 2, 3, 4], dtype=np.intp), *arguments[1:])
    with pytest.raises(ValueError, match=r"back\[5\] = -1 is not an index of the 6 joints"):
        torque((q, qd, np.empty(0)), *arguments[:3], np.array([0, 1, 2, 3, 4, -1], dtype=np.intp), plan.effort)
    with pytest.raises(ValueError, match=rf"parameters \({model.regressor.n_parameters},\)"):
        torque((q, qd, np.empty(0)), plan.order, plan.motion, plan.parameters[:-1], plan.back, plan.effort)
