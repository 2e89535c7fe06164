"""Feed-forward requests: flat per-point values by joint name to the model's joint order, the first
problem named; trajectory points joined into the flat layout; torques back in the request's order."""
import array
import math
import os
import re

import numpy as np
import pytest

from robot_dynid.errors import DataError
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.feedforward import Margins, compute_feedforward, join_points, request_arrays
from robot_dynid.model.friction import FrictionModel
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_description import load_robot
from robot_dynid.package_files import find_package_file
from rnea_reference import rnea_torques

MODEL = ("a", "b", "c")
REQUEST = ("c", "a", "b")                   # request order; model column j is request column ORDER[j]
ORDER = [REQUEST.index(name) for name in MODEL]
DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")


def rows(n, seed=0):
    """q, qd, qdd, each (n, 3) in REQUEST order."""
    return np.random.default_rng(seed).uniform(-2.0, 2.0, (3, n, len(REQUEST)))


@pytest.mark.parametrize("kind", ["array", "list", "ndarray", "tuple"])
def test_flat_values_are_reordered_to_the_model_joints_whatever_the_sequence_type(kind):
    q, qd, qdd = rows(50)
    convert = {"array": lambda v: array.array("d", v.ravel()), "list": lambda v: v.ravel().tolist(),
               "ndarray": np.ravel, "tuple": lambda v: tuple(v.ravel())}[kind]
    result = request_arrays(MODEL, REQUEST, convert(q), convert(qd), convert(qdd))
    for got, expected in zip(result, (q, qd, qdd)):
        # point k, joint j of the request at k * 3 + j: the (50, 3) rows, columns in model order
        np.testing.assert_array_equal(got, expected[:, ORDER])
        assert got.shape == (50, 3) and got.flags.writeable


def test_the_arrays_returned_do_not_share_the_callers_buffers():
    q = array.array("d", [1.0, 2.0, 3.0])
    positions, _, _ = request_arrays(MODEL, MODEL, q)
    positions[0, 0] = 9.0
    assert q.tolist() == [1.0, 2.0, 3.0]


def test_empty_velocities_and_accelerations_are_zero():
    q, qd, _ = rows(4)
    positions, velocities, accelerations = request_arrays(MODEL, REQUEST, q.ravel(), qd.ravel(), array.array("d"))
    np.testing.assert_array_equal(positions, q[:, ORDER])
    np.testing.assert_array_equal(velocities, qd[:, ORDER])
    np.testing.assert_array_equal(accelerations, np.zeros((4, 3)))
    _, velocities, accelerations = request_arrays(MODEL, REQUEST, q.ravel())
    np.testing.assert_array_equal(velocities, np.zeros((4, 3)))
    np.testing.assert_array_equal(accelerations, np.zeros((4, 3)))


def flat(n_points, **values):
    """positions, velocities, accelerations of ``n_points`` zero points, with (point, joint) -> value set."""
    fields = {field: np.zeros(3 * n_points) for field in ("positions", "velocities", "accelerations")}
    for field, changes in values.items():
        for (point, joint), value in changes.items():
            fields[field][3 * point + REQUEST.index(joint)] = value
    return fields


@pytest.mark.parametrize("fields, message", [
    (dict(positions=np.zeros(5)),
     "positions has 5 values, not a multiple of the 3 joints in joint_names (point k, joint j at k * 3 + j)"),
    (dict(positions=np.zeros(0)), "no points given (positions is empty)"),
    (dict(positions=np.zeros(6), velocities=np.zeros(3)),
     "velocities has 3 values, expected 6 (2 point(s) x 3 joints, as positions) or none (all zero)"),
    (dict(positions=np.zeros(3), accelerations=np.zeros(4)),
     "accelerations has 4 values, expected 3 (1 point(s) x 3 joints, as positions) or none (all zero)"),
    (dict(positions=np.zeros((2, 3))),
     "positions must be a flat array (point k, joint j at k * 3 + j), got shape (2, 3)"),
    (flat(2, accelerations={(1, "a"): math.nan}), "point 1: accelerations of joint a is nan"),
    (flat(3, positions={(2, "b"): -math.inf}, velocities={(2, "c"): math.nan}),
     "point 2: positions of joint b is -inf"),
    # the first problem in point order wins over a later one in an earlier field
    (flat(4, positions={(3, "c"): math.inf}, velocities={(1, "b"): math.nan}, accelerations={(1, "a"): math.nan}),
     "point 1: velocities of joint b is nan"),
    # sizes are checked before values
    (dict(positions=np.full(6, math.nan), velocities=np.zeros(5)), "velocities has 5 values, expected 6"),
])
def test_the_first_problem_is_named(fields, message):
    with pytest.raises(DataError, match=re.escape(message)):
        request_arrays(MODEL, REQUEST, **fields)


def test_joint_name_problems_are_named_before_values_are_read():
    with pytest.raises(DataError, match=re.escape("unknown joint(s) ['d']; the model has ['a', 'b', 'c']")):
        request_arrays(MODEL, ("a", "b", "c", "d"), np.zeros(5))
    with pytest.raises(DataError, match=re.escape("joint_names is missing ['c']; the model needs ['a', 'b', 'c']")):
        request_arrays(MODEL, ("a", "b"), np.zeros(5))
    with pytest.raises(DataError, match=re.escape("joint_names lists ['a'] more than once")):
        request_arrays(MODEL, ("a", "b", "c", "a"), [])


def test_trajectory_points_join_into_the_flat_layout():
    q, qd, _ = rows(3)
    positions = join_points("positions", [array.array("d", row) for row in q], 3)
    np.testing.assert_array_equal(positions, q.ravel())
    # lists, and points without velocities (zero) beside points with them
    velocities = join_points("velocities", [list(qd[0]), [], array.array("d", qd[2])], 3)
    np.testing.assert_array_equal(velocities, np.concatenate([qd[0], np.zeros(3), qd[2]]))
    # no point with accelerations: empty, which request_arrays takes as zero
    assert join_points("accelerations", [array.array("d")] * 3, 3).size == 0


@pytest.mark.parametrize("field, points, message", [
    ("positions", [[0.0] * 3, [0.0] * 2], "point 1: positions has 2 values, expected 3 (one per joint in joint_names)"),
    ("positions", [[]], "point 0: positions has 0 values, expected 3"),
    ("velocities", [[], [], [1.0, 2.0, 3.0, 4.0]], "point 2: velocities has 4 values, expected 3"),
    ("accelerations", [[0.0] * 3, [[0.0] * 3]], "point 1: accelerations has 3 values, expected 3"),
])
def test_a_trajectory_point_of_the_wrong_size_is_named(field, points, message):
    with pytest.raises(DataError, match=re.escape(message)):
        join_points(field, points, 3)


@pytest.fixture(scope="module")
def er3a():
    robot = load_robot(find_package_file("config", "robots", "er3a.yaml"))
    base = compute_base_parameters(Regressor(robot, FrictionModel()))
    parameters = plausible_parameters(robot, seed=3)
    model = DynamicModel(robot, FrictionModel(), False, False, base, base.projection @ parameters,
                         np.zeros(base.rank))
    return model, parameters


def test_torques_equal_rnea_in_the_request_order_and_layout(er3a):
    model, parameters = er3a
    rng = np.random.default_rng(11)
    q, qd, qdd = rng.uniform(-1.0, 1.0, (3, 7, 6))
    order = [4, 0, 5, 2, 3, 1]
    names = [model.joint_names[i] for i in order]
    tau = compute_feedforward(model, names, q[:, order].ravel(), qd[:, order].ravel(), qdd[:, order].ravel())
    expected = np.array([rnea_torques(model.robot, parameters, *state) for state in zip(q, qd, qdd)])[:, order]
    np.testing.assert_allclose(tau, expected, rtol=1e-9, atol=1e-9)
    assert tau.flags.c_contiguous      # reshape(-1) is the request's flat layout


def test_positions_too_large_to_evaluate_are_refused_by_point_and_joint(er3a):
    model, _ = er3a
    q = np.zeros((2, 6))
    q[1, 2] = 1e308
    with pytest.raises(DataError, match=re.escape(
            "point 1: positions of joint j3 is 1e+308 rad, beyond its limits [-1.2217, 1.7453] rad by more than "
            "position_margin 0.1 rad")):
        compute_feedforward(model, model.joint_names, q.ravel())
    # without the position check, the torques are not finite: refused, never returned
    with pytest.raises(DataError, match=r"^point 1: the effort of joint j\d is nan: the point's values are too "
                                        r"large for the model to evaluate$"):
        compute_feedforward(model, model.joint_names, q.ravel(), margins=Margins(position=-1.0))


def test_velocities_too_large_to_evaluate_are_refused_by_point_and_joint(er3a):
    """Before the model squares them (1e200 ** 2 overflows): by the velocity limit, 5.5851 rad/s for j5."""
    model, _ = er3a
    qd = np.zeros((3, 6))
    qd[2, 4] = 1e200
    names = list(reversed(model.joint_names))
    with pytest.raises(DataError, match=re.escape("point 2: velocities of joint j5 is 1e+200 rad/s, beyond its "
                                                  "velocity limit 5.5851 rad/s times velocity_margin 1.1")):
        compute_feedforward(model, names, np.zeros(18), qd[:, ::-1].ravel())


@pytest.mark.parametrize("value, margin, refused", [
    (2.05, None, True), (-2.05, None, True), (1.99, None, False), (-1.99, None, False),
    (2.05, 0.2, False), (1.95, 0.0, True), (5.0, -1.0, False),
])
def test_positions_beyond_the_limits_plus_the_margin_are_refused(er3a, value, margin, refused):
    """j5 of the ER3A has limits [-1.9199, 1.9199] rad; the default margin is 0.1 rad."""
    model, parameters = er3a
    q = np.zeros((2, 6))
    q[1, 4] = value
    options = {} if margin is None else {"margins": Margins(position=margin)}
    if refused:
        with pytest.raises(DataError, match=re.escape(
                f"point 1: positions of joint j5 is {value!r} rad, beyond its limits [-1.9199, 1.9199] rad by more "
                f"than position_margin {0.1 if margin is None else margin!r} rad")):
            compute_feedforward(model, model.joint_names, q.ravel(), **options)
    else:
        tau = compute_feedforward(model, model.joint_names, q.ravel(), **options)
        np.testing.assert_allclose(tau[1], rnea_torques(model.robot, parameters, q[1], np.zeros(6), np.zeros(6)),
                                   rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("field, value, message", [
    ("position", math.nan, "position_margin must be finite and in (-inf, 6.28319] [rad], got nan"),
    ("position", 7.0, "position_margin must be finite and in (-inf, 6.28319] [rad], got 7.0"),
    ("velocity", 0.0, "velocity_margin must be finite and in (0, 10] [1], got 0.0"),
    ("acceleration", -1.0, "acceleration_margin must be finite and in (0, 10] [1], got -1.0"),
    ("effort", math.inf, "effort_margin must be finite and in (0, 10] [1], got inf"),
    ("model_effort", 11.0, "model_effort_margin must be finite and in (0, 10] [1], got 11.0"),
    ("max_points", 0, "max_points must be an integer in 1..10000000, got 0"),
    ("max_points", 2.5, "max_points must be an integer in 1..10000000, got 2.5"),
])
def test_a_bad_margin_is_refused_naming_it(field, value, message):
    with pytest.raises(DataError, match=re.escape(message)):
        Margins(**{field: value})


def test_continuous_joints_are_not_checked():
    """planar_gripper: shoulder revolute within [-1.5, 1.5] rad, wrist a URDF continuous joint."""
    robot = load_robot(os.path.join(DATA, "planar_gripper.yaml"))
    assert robot.continuous == (False, False, True)
    base = compute_base_parameters(Regressor(robot, FrictionModel()))
    model = DynamicModel(robot, FrictionModel(), False, False, base,
                         base.projection @ plausible_parameters(robot, seed=1), np.zeros(base.rank))
    assert np.isfinite(compute_feedforward(model, robot.joint_names, [0.0, 0.0, 10.0])).all()
    with pytest.raises(DataError, match=r"point 0: positions of joint shoulder is 2.0 rad, beyond its limits "):
        compute_feedforward(model, robot.joint_names, [2.0, 0.0, 10.0])
