"""Joints matched by name: the one rule for every place that takes joint values by name.

A list of names at hand (a message's, a request's, a file's columns) is matched against the
joints of an owner (a robot, a model, an arm): no name may appear twice; a name the owner does
not have is an error where the source must not carry other joints (a feed-forward request, a
trajectory command) and ignored where it may (a JointState that also names a gripper); every
joint the owner needs must be there (:func:`match_joints`), or the names may be a subset of the
owner's (:func:`index_in`).
"""
from __future__ import annotations

from typing import Sequence

from robot_dynid.errors import DataError


class JointMatchError(DataError):
    """Names that do not match: ``repeated``, ``unknown`` and ``missing`` say which."""

    def __init__(self, message: str, repeated=(), unknown=(), missing=()):
        super().__init__(message)
        self.repeated, self.unknown, self.missing = list(repeated), list(unknown), list(missing)


def repeated_names(names: Sequence[str]) -> list[str]:
    """Names that appear more than once in ``names``, sorted."""
    seen, repeated = set(), set()
    for name in names:
        (repeated if name in seen else seen).add(name)
    return sorted(repeated)


def _check(names, known, source, owner, extra):
    repeated = repeated_names(names)
    if repeated:
        raise JointMatchError(f"{source} lists {repeated} more than once", repeated=repeated)
    if not extra:
        unknown = [name for name in names if name not in known]
        if unknown:
            raise JointMatchError(f"unknown joint(s) {unknown}; {owner} has {list(known)}", unknown=unknown)


def match_joints(known: Sequence[str], names: Sequence[str], source: str, owner: str = "the robot", *,
                 extra: bool = True) -> list[int]:
    """Index in ``names`` of each of ``owner``'s joints ``known``, in the order of ``known``.

    Parameters
    ----------
    known : sequence of str
        The owner's joints, all needed.
    names : sequence of str
        The names at hand, from ``source``.
    source, owner : str
        Who ``names`` and ``known`` belong to, for messages (``"joint_names"``, ``"the model"``).
    extra : bool
        Whether ``names`` may hold joints the owner does not have (they are ignored).

    Raises
    ------
    JointMatchError
        ``"<source> lists [...] more than once"``, ``"unknown joint(s) [...]; <owner> has [...]"``
        (with ``extra=False``), ``"<source> is missing [...]; <owner> needs [...]"``.
    """
    names = list(names)
    _check(names, known, source, owner, extra)
    position = {name: index for index, name in enumerate(names)}
    missing = [name for name in known if name not in position]
    if missing:
        raise JointMatchError(f"{source} is missing {missing}; {owner} needs {list(known)}", missing=missing)
    return [position[name] for name in known]


def index_in(known: Sequence[str], names: Sequence[str], source: str, owner: str = "the robot") -> list[int]:
    """Index in ``known`` of each of ``names``, a subset of the owner's joints without repeats.

    Raises
    ------
    JointMatchError
        A name twice, or one the owner does not have (as :func:`match_joints`).
    """
    names = list(names)
    _check(names, known, source, owner, extra=False)
    position = {name: index for index, name in enumerate(known)}
    return [position[name] for name in names]
