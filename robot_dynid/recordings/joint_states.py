"""Which ``sensor_msgs/JointState`` messages a recording can use, without ROS.

Joints are matched by name in every message (any order; extra joints ignored). A message is
skipped, for one of these reasons, instead of spoiling the whole recording:

- ``"empty joint names"``: ``name`` is empty;
- ``"duplicate joint names"``: a name appears twice;
- ``"lacks joint(s) [...]"``: a joint the identification needs is not named;
- ``"empty position"``: the message carries no positions (or, on a topic read for another
  field, e.g. efforts, that field is empty);
- ``"array lengths differ from the names"``: ``position`` does not hold one value per name, or
  ``velocity`` / ``effort`` hold neither one per name nor none (an empty field is allowed:
  the driver does not measure it);
- ``"non-finite values"``: NaN or inf in a value of a needed joint.

The bag reader counts the skipped messages per reason (with the first one's stamp), the recorder
warns once per reason while recording, and the identifier node counts and skips them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from robot_dynid.joint_names import JointMatchError, match_joints

EMPTY_NAMES = "empty joint names"
DUPLICATE_NAMES = "duplicate joint names"
LENGTH_MISMATCH = "array lengths differ from the names"
NON_FINITE = "non-finite values"


def lacks_joints(missing: Sequence[str]) -> str:
    """The skip reason of a message without the needed joints ``missing``."""
    return f"lacks joint(s) {list(missing)}"


@dataclass(frozen=True)
class JointValues:
    """One message's values of the needed joints, in their order: ``position`` (n,) [rad],
    ``velocity`` (n,) [rad/s] and ``effort`` (n,) [N m, or the unit of the topic], None where the
    message leaves the field empty (or it was not asked for)."""

    position: np.ndarray | None
    velocity: np.ndarray | None
    effort: np.ndarray | None


class JointStateSelector:
    """Picks the values of ``joint_names`` out of JointState messages, or says why it cannot.

    Parameters
    ----------
    joint_names : sequence of str, optional
        The joints needed, in the order of the values returned; None: the joints of the first
        usable message, in its order (:attr:`joint_names` once known).
    required : {"position", "velocity", "effort"}
        The field a message must carry (``"effort"`` for a topic read for its efforts).
    """

    _MAX_CACHED_NAME_LISTS = 256

    def __init__(self, joint_names: Sequence[str] | None = None, required: str = "position"):
        self.joint_names = None if joint_names is None else tuple(joint_names)
        self.required = required
        self._columns: dict[tuple[str, ...], list[int] | slice | str] = {}

    def columns(self, names: Sequence[str]) -> list[int] | slice | str:
        """Index in ``names`` of each needed joint (``slice(None)`` when ``names`` are exactly the
        needed joints, in order), or the reason the names cannot be used."""
        names = tuple(names)
        cached = self._columns.get(names)
        if cached is not None:
            return cached
        if not names:
            result: list[int] | slice | str = EMPTY_NAMES
        else:
            try:
                result = match_joints(names if self.joint_names is None else self.joint_names, names, "JointState")
            except JointMatchError as error:
                result = DUPLICATE_NAMES if error.repeated else lacks_joints(error.missing)
            else:
                if self.joint_names is None:
                    self.joint_names = names
                if result == list(range(len(names))):
                    result = slice(None)
        if len(self._columns) < self._MAX_CACHED_NAME_LISTS:
            self._columns[names] = result
        return result

    def select(self, names: Sequence[str], position=(), velocity=(), effort=()) -> JointValues | str:
        """The needed joints' values of one message, or the reason (module docstring) it is skipped.

        Parameters
        ----------
        names : sequence of str
        position, velocity, effort : array_like, shape (len(names),) or (0,)
            The message's fields (the ``required`` one must not be empty); pass only those used.
        """
        columns = self.columns(names)
        if isinstance(columns, str):
            return columns
        size = len(names)
        fields = []
        for field, values in (("position", position), ("velocity", velocity), ("effort", effort)):
            values = np.asarray(values, dtype=np.float64)
            if values.size == 0:
                if field == self.required:
                    return f"empty {field}"
                fields.append(None)
                continue
            if values.shape != (size,):
                return LENGTH_MISMATCH
            values = values[columns]
            if not np.isfinite(values).all():
                return NON_FINITE
            fields.append(values)
        return JointValues(*fields)
