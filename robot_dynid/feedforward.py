"""Feed-forward torque requests: validate points given by joint name and evaluate a model.

The ``ComputeFeedforward`` service and the reference-following topic of the feedforward node
both go through :func:`compute_feedforward`, so a malformed request gets the same message
(naming the point, joint and field) wherever it comes from.
"""
from __future__ import annotations

import array
import operator
from collections.abc import Sequence

import numpy as np

from robot_dynid.errors import DataError
from robot_dynid.model import DynamicModel

FIELDS = ("positions", "velocities", "accelerations")
_TYPECODE = operator.attrgetter("typecode")


def points_to_arrays(model_joints: Sequence[str], joint_names: Sequence[str], points: Sequence[dict]):
    """Reorder per-point values given in ``joint_names`` order to the model's joint order.

    Parameters
    ----------
    model_joints : sequence of str, length n
    joint_names : sequence of str, length m
        Order of the values in each point; every model joint must appear, no joint twice,
        no joint the model does not know.
    points : sequence of mapping
        Each with ``positions`` [rad] and optional ``velocities`` [rad/s] and
        ``accelerations`` [rad/s^2], each of length m (empty means zero).

    Returns
    -------
    q, qd, qdd : ndarray, shape (N, n)

    Raises
    ------
    DataError
        Naming the point index, field and joint of the first problem found.
    """
    joint_names = list(joint_names)
    duplicates = sorted({name for name in joint_names if joint_names.count(name) > 1})
    if duplicates:
        raise DataError(f"joint_names lists {duplicates} more than once")
    unknown = [name for name in joint_names if name not in model_joints]
    if unknown:
        raise DataError(f"unknown joint(s) {unknown}; the model has {list(model_joints)}")
    missing = [name for name in model_joints if name not in joint_names]
    if missing:
        raise DataError(f"joint_names is missing {missing}; the model needs {list(model_joints)}")
    if len(points) == 0:
        raise DataError("no points given")
    order = [joint_names.index(name) for name in model_joints]
    stacked = _stacked_fields(points, len(joint_names))
    if stacked is None:
        stacked = _checked_fields(points, joint_names)
    return tuple(stacked[field][:, order] for field in FIELDS)


def _stacked_fields(points: Sequence[dict], m: int) -> dict | None:
    """Each field of every point as one (N, m) array, built without a loop over the points in
    Python; None when any point needs a closer look (a size other than m, an empty position,
    a non-finite value, some points' velocities given and others' not), which
    :func:`_checked_fields` then reports."""
    stacked = {}
    for field in FIELDS:
        rows = [point.get(field, ()) for point in points]
        try:
            if set(map(type, rows)) == {array.array} and set(map(_TYPECODE, rows)) == {"d"}:
                # message fields (array.array of doubles): one copy of the joined buffers
                widths = set(map(len, rows))
                if len(widths) != 1:
                    return None
                block = np.frombuffer(b"".join(rows), dtype=np.float64).reshape(len(rows), widths.pop())
            else:
                block = np.array(rows, dtype=float)
        except (TypeError, ValueError):      # ragged or not numeric: the loop names the point
            return None
        if block.ndim != 2:
            return None
        if block.shape[1] == 0 and field != "positions":
            block = np.zeros((len(points), m))
        if block.shape != (len(points), m) or not np.isfinite(block).all():
            return None
        stacked[field] = block
    return stacked


def _checked_fields(points: Sequence[dict], joint_names: Sequence[str]) -> dict:
    """The fields point by point in ``joint_names`` order, (N, m) each; raises DataError naming
    the first problem (point index, field, joint)."""
    arrays = {field: np.zeros((len(points), len(joint_names))) for field in FIELDS}
    for index, point in enumerate(points):
        for field in FIELDS:
            values = np.asarray(point.get(field, ()), dtype=float)
            if values.size == 0 and field != "positions":
                continue
            if values.shape != (len(joint_names),):
                raise DataError(
                    f"point {index}: {field} has {values.size} values, expected {len(joint_names)} "
                    f"(one per joint in joint_names)"
                )
            bad = ~np.isfinite(values)
            if bad.any():
                raise DataError(
                    f"point {index}: {field} of joint {joint_names[int(np.argmax(bad))]} is "
                    f"{values[int(np.argmax(bad))]}"
                )
            arrays[field][index] = values
    return arrays


def compute_feedforward(model: DynamicModel, joint_names, points, temperature=None, elapsed=None) -> np.ndarray:
    """Feed-forward torques [N m], shape (N, m), in the order of ``joint_names``.

    See :func:`points_to_arrays` for the inputs; ``temperature`` [deg C] (n,) and ``elapsed``
    [s] are passed to friction models that drift.
    """
    q, qd, qdd = points_to_arrays(model.joint_names, joint_names, points)
    if model.friction.needs_temperature and temperature is None:
        raise DataError("the model's friction depends on joint temperature, and none has been received")
    if temperature is not None:
        temperature = np.broadcast_to(np.asarray(temperature, float), q.shape)
    if elapsed is not None:
        elapsed = np.full(q.shape[0], float(elapsed))
    tau = model.torque(q, qd, qdd, temperature=temperature, elapsed=elapsed)
    back = [list(model.joint_names).index(name) for name in joint_names]
    return tau[:, back]
