"""points_to_arrays: values by joint name to the model's joint order, and the first problem named."""
import array
import math
import re

import numpy as np
import pytest

from robot_dynid.errors import DataError
from robot_dynid.feedforward import points_to_arrays

MODEL = ("a", "b", "c")
REQUEST = ("c", "a", "b")                   # request order; model column j is request column ORDER[j]
ORDER = [REQUEST.index(name) for name in MODEL]


def rows(n, seed=0):
    return np.random.default_rng(seed).uniform(-2.0, 2.0, (3, n, len(REQUEST)))


@pytest.mark.parametrize("kind", ["array", "list", "ndarray", "tuple"])
def test_values_are_reordered_to_the_model_joints_whatever_the_sequence_type(kind):
    q, qd, qdd = rows(50)
    convert = {"array": lambda v: array.array("d", v), "list": list, "ndarray": np.asarray,
               "tuple": tuple}[kind]
    points = [{"positions": convert(a), "velocities": convert(b), "accelerations": convert(c)}
              for a, b, c in zip(q, qd, qdd)]
    result = points_to_arrays(MODEL, REQUEST, points)
    for got, expected in zip(result, (q, qd, qdd)):
        np.testing.assert_array_equal(got, expected[:, ORDER])
        assert got.shape == (50, 3) and got.flags.writeable


def test_empty_or_absent_velocities_and_accelerations_are_zero_point_by_point():
    q, qd, _ = rows(4)
    points = [{"positions": array.array("d", q[0]), "velocities": array.array("d", qd[0])},
              {"positions": list(q[1]), "velocities": [], "accelerations": array.array("d")},
              {"positions": array.array("d", q[2]), "velocities": array.array("d")},
              {"positions": q[3], "velocities": qd[3]}]
    positions, velocities, accelerations = points_to_arrays(MODEL, REQUEST, points)
    np.testing.assert_array_equal(positions, q[:, ORDER])
    expected = qd.copy()
    expected[[1, 2]] = 0.0
    np.testing.assert_array_equal(velocities, expected[:, ORDER])
    np.testing.assert_array_equal(accelerations, np.zeros((4, 3)))


def point(q=(0.0, 0.0, 0.0), qd=(), qdd=()):
    return {"positions": array.array("d", q), "velocities": array.array("d", qd),
            "accelerations": array.array("d", qdd)}


@pytest.mark.parametrize("points, message", [
    ([point(), point(q=(0.0, 0.0))], "point 1: positions has 2 values, expected 3 (one per joint in joint_names)"),
    ([point(q=())], "point 0: positions has 0 values, expected 3"),
    ([point(), point(), point(qd=(1.0, 2.0, 3.0, 4.0))], "point 2: velocities has 4 values, expected 3"),
    ([point(qdd=(0.0, math.nan, 0.0))], "point 0: accelerations of joint a is nan"),
    ([point(), point(q=(math.inf, 0.0, 0.0), qd=(1.0,))], "point 1: positions of joint c is inf"),
    # the first problem in point order wins over a later one in an earlier field
    ([point(), point(qdd=(0.0, 0.0, math.nan)), point(q=(0.0,))], "point 1: accelerations of joint b is nan"),
    ([{"positions": [0.0, 0.0, 0.0]}, {"positions": [[0.0, 0.0, 0.0]]}], "point 1: positions has 3 values"),
])
def test_the_first_malformed_point_is_named(points, message):
    with pytest.raises(DataError, match=re.escape(message)):
        points_to_arrays(MODEL, REQUEST, points)


def test_joint_name_problems_are_named_before_points_are_read():
    with pytest.raises(DataError, match=r"unknown joint\(s\) \['d'\]"):
        points_to_arrays(MODEL, ("a", "b", "c", "d"), [point()])
    with pytest.raises(DataError, match=r"joint_names is missing \['c'\]"):
        points_to_arrays(MODEL, ("a", "b"), [point()])
    with pytest.raises(DataError, match=r"no points given"):
        points_to_arrays(MODEL, REQUEST, [])
