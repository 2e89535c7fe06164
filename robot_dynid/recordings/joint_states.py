"""Which messages of named values a reader can use, without ROS: ``sensor_msgs/JointState``
(:class:`JointStateSelector`) and the hydraulic identifier's ``HydraulicCylinderState``
(:func:`robot_dynid.hydraulics.online.select_samples`) go through one :class:`NameSelector`.

Names are matched by name in every message (any order; :mod:`robot_dynid.joint_names`). A message
is skipped, for one of these reasons (``<kind>``: ``joint``, ``cylinder``), instead of spoiling the
whole recording:

- ``"empty <kind> names"``: the names are empty;
- ``"duplicate <kind> names"``: a name appears twice;
- ``"lacks <kind>(s) [...]"``: a name the reader needs is not there (where every needed name must
  be in each message, as for joints; other names are ignored);
- ``"unknown <kind>(s) [...]"``: a name the reader does not know (where a message may carry a
  subset of the known names, as for cylinders);
- ``"empty <field>"``: a required field carries no values (for JointState ``position``, or, on a
  topic read for another field, e.g. efforts, that field);
- ``"array lengths differ from the names"``: a field holds neither one value per name nor, where
  it is optional, none (an empty optional field is allowed: the driver does not measure it);
- ``"non-finite values"``: NaN or inf in a value of a needed name.

The bag reader counts the skipped messages per reason (with the first one's stamp), the recorder
warns once per reason while recording, and the identifier nodes count and skip them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from robot_dynid.joint_names import NameMatchError, index_in, match_joints

__all__ = ["LENGTH_MISMATCH", "NON_FINITE", "empty_names", "duplicate_names", "lacks_names", "unknown_names",
           "EMPTY_NAMES", "DUPLICATE_NAMES", "NameSelector", "JointValues", "JointStateSelector"]

LENGTH_MISMATCH = "array lengths differ from the names"
NON_FINITE = "non-finite values"


def empty_names(kind: str) -> str:
    """The skip reason of a message without names."""
    return f"empty {kind} names"


def duplicate_names(kind: str) -> str:
    """The skip reason of a message naming one twice."""
    return f"duplicate {kind} names"


def lacks_names(kind: str, missing: Sequence[str]) -> str:
    """The skip reason of a message without the needed names ``missing``."""
    return f"lacks {kind}(s) {list(missing)}"


def unknown_names(kind: str, unknown: Sequence[str]) -> str:
    """The skip reason of a message naming ``unknown``, which the reader does not know."""
    return f"unknown {kind}(s) {list(unknown)}"


EMPTY_NAMES = empty_names("joint")
DUPLICATE_NAMES = duplicate_names("joint")


class NameSelector:
    """Picks the values of needed names out of messages of named values, or says why it cannot.

    Parameters
    ----------
    names : sequence of str, optional
        The names known. With ``subset=False`` all are needed, in the order of the values returned
        (None: the names of the first usable message, in its order, :attr:`names` once known); with
        ``subset=True`` a message may carry any of them, and its values stay in its order.
    kind : str
        What the names are (``"joint"``, ``"cylinder"``), for the reasons.
    required : sequence of str
        The fields a message must carry; the others may be empty.
    subset : bool
        See ``names``.
    """

    _MAX_CACHED_NAME_LISTS = 256

    def __init__(self, names: Sequence[str] | None = None, kind: str = "joint", required: Sequence[str] = (),
                 subset: bool = False):
        self.names = None if names is None else tuple(names)
        self.kind = kind
        self.required = tuple(required)
        self.subset = subset
        self._columns: dict[tuple[str, ...], list[int] | slice | str] = {}

    def columns(self, names: Sequence[str]) -> list[int] | slice | str:
        """Index in ``names`` of each needed name (``slice(None)`` when the values are used in the
        message's order), or the reason (module docstring) the names cannot be used."""
        names = tuple(names)
        cached = self._columns.get(names)
        if cached is not None:
            return cached
        result: list[int] | slice | str
        if not names:
            result = empty_names(self.kind)
        else:
            try:
                if self.subset:
                    index_in(self.names, names, "message", kind=self.kind)
                    result = slice(None)
                else:
                    result = match_joints(names if self.names is None else self.names, names, "message",
                                          kind=self.kind)
            except NameMatchError as error:
                result = (duplicate_names(self.kind) if error.repeated else
                          unknown_names(self.kind, error.unknown) if error.unknown else
                          lacks_names(self.kind, error.missing))
            else:
                if self.names is None:
                    self.names = names
                if result == list(range(len(names))):
                    result = slice(None)
        if len(self._columns) < self._MAX_CACHED_NAME_LISTS:
            self._columns[names] = result
        return result

    def select(self, names: Sequence[str], **fields) -> dict | str:
        """The needed names' values of one message by field (None for an empty optional field),
        or the reason (module docstring) it is skipped.

        Parameters
        ----------
        names : sequence of str
        **fields : array_like, shape (len(names),) or (0,)
            The message's fields, by name.
        """
        columns = self.columns(names)
        if isinstance(columns, str):
            return columns
        size = len(names)
        selected = {}
        for field, values in fields.items():
            values = np.asarray(values, dtype=np.float64)
            if values.size == 0:
                if field in self.required:
                    return f"empty {field}"
                selected[field] = None
                continue
            if values.shape != (size,):
                return LENGTH_MISMATCH
            values = values[columns]
            if not np.isfinite(values).all():
                return NON_FINITE
            selected[field] = values
        return selected


@dataclass(frozen=True)
class JointValues:
    """One message's values of the needed joints, in their order: ``position`` (n,) [rad],
    ``velocity`` (n,) [rad/s] and ``effort`` (n,) [N m, or the unit of the topic], None where the
    message leaves the field empty (or it was not asked for)."""

    position: np.ndarray | None
    velocity: np.ndarray | None
    effort: np.ndarray | None


class JointStateSelector(NameSelector):
    """Picks the values of ``joint_names`` out of JointState messages, or says why it cannot.

    Parameters
    ----------
    joint_names : sequence of str, optional
        The joints needed, in the order of the values returned; None: the joints of the first
        usable message, in its order (:attr:`joint_names` once known).
    required : {"position", "velocity", "effort"}
        The field a message must carry (``"effort"`` for a topic read for its efforts).
    """

    def __init__(self, joint_names: Sequence[str] | None = None, required: str = "position"):
        super().__init__(joint_names, "joint", (required,))

    @property
    def joint_names(self) -> tuple[str, ...] | None:
        """The joints needed (None until the first usable message when not given)."""
        return self.names

    def select(self, names: Sequence[str], position=(), velocity=(), effort=()) -> JointValues | str:
        """The needed joints' values of one message, or the reason (module docstring) it is skipped.

        Parameters
        ----------
        names : sequence of str
        position, velocity, effort : array_like, shape (len(names),) or (0,)
            The message's fields (the ``required`` one must not be empty); pass only those used.
        """
        selected = super().select(names, position=position, velocity=velocity, effort=effort)
        return selected if isinstance(selected, str) else JointValues(**selected)
