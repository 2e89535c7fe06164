"""Feed-forward torque requests: joint values given by name, validated, evaluated by a model.

A request names its m joints in any order and gives N points as flat arrays, point after point:
the value of point k, joint j (the j-th name) is at index ``k * m + j`` (an (N, m) array in
row-major order), which is how the ``ComputeFeedforward`` service carries them. The service and
the reference and trajectory topics of the feedforward node all go through
:func:`compute_feedforward`, so a malformed request gets the same message (naming the field and,
where one is at fault, the point and joint) wherever it comes from. It refuses non-finite values,
positions beyond a joint's limits by more than ``position_margin`` [rad], and never returns a
non-finite torque.
"""
from __future__ import annotations

import array
import math
from collections.abc import Sequence

import numpy as np

from robot_dynid.errors import DataError
from robot_dynid.joint_names import match_joints
from robot_dynid.model.dynamic_model import DynamicModel

FIELDS = ("positions", "velocities", "accelerations")
#: Default position margin [rad]: positions further than this beyond a joint's limits are refused.
DEFAULT_POSITION_MARGIN = 0.1


def joint_order(model_joints: Sequence[str], joint_names: Sequence[str]) -> list[int]:
    """Index in ``joint_names`` of each model joint: every model joint once, no other
    (:func:`robot_dynid.joint_names.match_joints`)."""
    return match_joints(model_joints, joint_names, "joint_names", "the model", extra=False)


def request_arrays(model_joints: Sequence[str], joint_names: Sequence[str], positions,
                   velocities=(), accelerations=()):
    """Flat per-point values in ``joint_names`` order as (N, n) arrays in the model's joint order.

    Parameters
    ----------
    model_joints : sequence of str, length n
    joint_names : sequence of str, length m
        Joints of the values; every model joint once, no joint the model does not know.
    positions : array_like, shape (N * m,)
        Joint positions [rad]; point k, joint j at ``k * m + j``; N >= 1.
    velocities : array_like, shape (N * m,) or (0,)
        Joint velocities [rad/s], same layout; empty means all zero.
    accelerations : array_like, shape (N * m,) or (0,)
        Joint accelerations [rad/s^2], same layout; empty means all zero.

    Returns
    -------
    q, qd, qdd : ndarray, shape (N, n)
        New arrays (the inputs, e.g. message buffers, are not kept).

    Raises
    ------
    DataError
        Naming the first problem: the joint names; then a field's size; then the first
        non-finite value in point order, with its point, field and joint.
    """
    order = joint_order(model_joints, joint_names)
    m = len(order)
    values = {field: np.asarray(data, dtype=np.float64)
              for field, data in zip(FIELDS, (positions, velocities, accelerations))}
    for field, data in values.items():
        if data.ndim != 1:
            raise DataError(f"{field} must be a flat array (point k, joint j at k * {m} + j), "
                            f"got shape {data.shape}")
    size = values["positions"].size
    if size == 0:
        raise DataError("no points given (positions is empty)")
    if size % m:
        raise DataError(f"positions has {size} values, not a multiple of the {m} joints in joint_names "
                        f"(point k, joint j at k * {m} + j)")
    n_points = size // m
    for field in FIELDS[1:]:
        if values[field].size not in (0, size):
            raise DataError(f"{field} has {values[field].size} values, expected {size} ({n_points} "
                            f"point(s) x {m} joints, as positions) or none (all zero)")
    blocks = {field: data.reshape(n_points, m) if data.size else np.zeros((n_points, m))
              for field, data in values.items()}
    first_bad = []                  # (point, field index, joint) of each field's first non-finite value
    for index, (field, block) in enumerate(blocks.items()):
        bad = ~np.isfinite(block)
        if bad.any():
            point, joint = divmod(int(np.argmax(bad)), m)
            first_bad.append((point, index, joint))
    if first_bad:
        point, index, joint = min(first_bad)
        raise DataError(f"point {point}: {FIELDS[index]} of joint {joint_names[joint]} is "
                        f"{blocks[FIELDS[index]][point, joint]}")
    return tuple(block[:, order] for block in blocks.values())


def join_points(field: str, rows: Sequence, m: int) -> np.ndarray:
    """One field of N trajectory points, each a sequence of m values, as one flat array.

    Parameters
    ----------
    field : str
        One of :data:`FIELDS`, for messages.
    rows : sequence of N sequences of float
        The field of each point (e.g. ``JointTrajectoryPoint.positions``, array.array of doubles).
        Velocities and accelerations may be empty: zero for that point.
    m : int
        Number of joints.

    Returns
    -------
    ndarray, shape (N * m,), or (0,) when every point leaves velocities or accelerations empty
        Point k, joint j at ``k * m + j``: the input of :func:`request_arrays`.

    Raises
    ------
    DataError
        Naming the first point whose field has a size other than m (or 0 where allowed).
    """
    if all(type(row) is array.array and row.typecode == "d" and len(row) == m for row in rows):
        return np.frombuffer(b"".join(rows), dtype=np.float64)      # message fields: one copy
    if field != "positions" and all(len(row) == 0 for row in rows):
        return np.zeros(0)
    joined = np.zeros((len(rows), m))
    for index, row in enumerate(rows):
        values = np.asarray(row, dtype=np.float64)
        if values.size == 0 and field != "positions":
            continue
        if values.shape != (m,):
            raise DataError(f"point {index}: {field} has {values.size} values, expected {m} "
                            f"(one per joint in joint_names)")
        joined[index] = values
    return joined.reshape(-1)


def check_position_margin(position_margin) -> float:
    """``position_margin`` [rad] as a float: >= 0 checks positions against the limits widened by
    it, negative turns the check off; NaN (which would silently turn it off) raises DataError."""
    position_margin = float(position_margin)
    if math.isnan(position_margin):
        raise DataError("position_margin is nan; give a margin [rad] >= 0, or a negative value to "
                        "turn the position check off")
    return position_margin


def compute_feedforward(model: DynamicModel, joint_names, positions, velocities=(), accelerations=(),
                        temperature=None, elapsed=None,
                        position_margin: float = DEFAULT_POSITION_MARGIN) -> np.ndarray:
    """Feed-forward torques [N m], shape (N, m), in the order of ``joint_names``.

    See :func:`request_arrays` for the inputs (flat arrays, point k, joint j at ``k * m + j``);
    ``temperature`` [deg C] (n,) in the model's joint order and ``elapsed`` [s] are passed to
    friction models that drift. The result is C-contiguous: ``.reshape(-1)`` is the flat layout
    of the inputs.

    Raises DataError, naming the point and joint of the first problem in point order, where
    :func:`request_arrays` does, for a position beyond the joint's limits by more than
    ``position_margin`` [rad] (a negative margin turns this off; URDF continuous joints are not
    checked), and for a torque that is not finite (values too large for the model, e.g. a
    velocity whose square overflows).
    """
    q, qd, qdd = request_arrays(model.joint_names, joint_names, positions, velocities, accelerations)
    back = np.argsort(joint_order(model.joint_names, joint_names))     # request order from model order
    position_margin = check_position_margin(position_margin)
    if position_margin >= 0.0:
        lower, upper = model.position_limits
        outside = (q < lower - position_margin) | (q > upper + position_margin)
        if outside.any():
            point, joint = divmod(int(np.argmax(outside[:, back])), len(back))
            value, (low, high) = float(q[point, back[joint]]), model.robot.limits[back[joint]].position
            raise DataError(f"point {point}: positions of joint {joint_names[joint]} is {value!r} rad, beyond its "
                            f"limits [{low!r}, {high!r}] rad by more than position_margin {position_margin!r} rad")
    if model.friction.needs_temperature and temperature is None:
        raise DataError("the model's friction depends on joint temperature, and none has been received")
    if temperature is not None:
        temperature = np.broadcast_to(np.asarray(temperature, float), q.shape)
    if elapsed is not None:
        elapsed = np.full(q.shape[0], float(elapsed))
    with np.errstate(all="ignore"):             # overflow is reported below, by point and joint
        tau = np.ascontiguousarray(model.torque(q, qd, qdd, temperature=temperature, elapsed=elapsed)[:, back])
    bad = ~np.isfinite(tau)
    if bad.any():
        point, joint = divmod(int(np.argmax(bad)), len(back))
        raise DataError(f"point {point}: the effort of joint {joint_names[joint]} is {float(tau[point, joint])!r}: "
                        f"the point's values are too large for the model to evaluate")
    return tau
