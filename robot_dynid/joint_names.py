"""Names matched by name: the one rule for every place that takes values by name.

A list of names at hand (a message's, a request's, a file's columns, a configuration's cylinders)
is matched against the names of an owner (a robot, a model, an arm, a reader): no name may appear
twice; a name the owner does not have is an error where the source must not carry others (a
feed-forward request, a trajectory command) and ignored where it may (a JointState that also names
a gripper); every name the owner needs must be there (:func:`match_joints`), or the names may be a
subset of the owner's (:func:`index_in`). Names of any kind go through here: joints, motors,
cylinders, CSV columns (``kind``).

Every message names the source, the kind of name, the names at fault and the owner:

- ``"<source> lists <kind>(s) [...] more than once"`` (``"; <owner> has [...]"`` where there is an owner),
- ``"<source> lists unknown <kind>(s) [...]; <owner> has [...]"``,
- ``"<source> is missing <kind>(s) [...]; <owner> needs [...]"``.
"""
from __future__ import annotations

from typing import Sequence

from robot_dynid.errors import DataError, DynIdError

__all__ = ["NameMatchError", "repeated_names", "unique_names", "match_joints", "index_in"]


class NameMatchError(DataError):
    """Names that do not match: ``repeated``, ``unknown`` and ``missing`` say which."""


def repeated_names(names: Sequence[str]) -> list[str]:
    """Names that appear more than once in ``names``, sorted."""
    seen, repeated = set(), set()
    for name in names:
        (repeated if name in seen else seen).add(name)
    return sorted(repeated)


def _raise(error: type[DynIdError], message: str, repeated=(), unknown=(), missing=()):
    exception = error(message)
    exception.repeated, exception.unknown, exception.missing = list(repeated), list(unknown), list(missing)
    raise exception


def unique_names(names: Sequence[str], source: str, kind: str = "joint", owner: str | None = None,
                 known: Sequence[str] = (), error: type[DynIdError] = NameMatchError) -> tuple[str, ...]:
    """``names`` as a tuple, checked to hold no name twice.

    Raises
    ------
    NameMatchError (or ``error``)
        ``"<source> lists <kind>(s) [...] more than once"``, followed by ``"; <owner> has [...]"``
        when ``owner`` is given.
    """
    names = tuple(names)
    repeated = repeated_names(names)
    if repeated:
        tail = "" if owner is None else f"; {owner} has {list(known)}"
        _raise(error, f"{source} lists {kind}(s) {repeated} more than once{tail}", repeated=repeated)
    return names


def _check(names, known, source, owner, kind, extra, error):
    unique_names(names, source, kind, owner, known, error)
    if not extra:
        unknown = [name for name in names if name not in known]
        if unknown:
            _raise(error, f"{source} lists unknown {kind}(s) {unknown}; {owner} has {list(known)}", unknown=unknown)


def match_joints(known: Sequence[str], names: Sequence[str], source: str, owner: str = "the robot", *,
                 extra: bool = True, kind: str = "joint", error: type[DynIdError] = NameMatchError) -> list[int]:
    """Index in ``names`` of each of ``owner``'s names ``known``, in the order of ``known``.

    Parameters
    ----------
    known : sequence of str
        The owner's names, all needed.
    names : sequence of str
        The names at hand, from ``source``.
    source, owner : str
        Who ``names`` and ``known`` belong to, for messages (``"joint_names"``, ``"the model"``).
    extra : bool
        Whether ``names`` may hold names the owner does not have (they are ignored).
    kind : str
        What the names are (``"joint"``, ``"motor"``, ``"cylinder"``, ``"column"``), for messages.
    error : type
        The DynIdError subclass raised (default :class:`NameMatchError`); it carries ``repeated``,
        ``unknown`` and ``missing``.

    Raises
    ------
    NameMatchError (or ``error``)
        A name twice, one the owner does not have (with ``extra=False``) or one it needs missing
        (module docstring).
    """
    names = list(names)
    _check(names, known, source, owner, kind, extra, error)
    position = {name: index for index, name in enumerate(names)}
    missing = [name for name in known if name not in position]
    if missing:
        _raise(error, f"{source} is missing {kind}(s) {missing}; {owner} needs {list(known)}", missing=missing)
    return [position[name] for name in known]


def index_in(known: Sequence[str], names: Sequence[str], source: str, owner: str = "the robot", *,
             kind: str = "joint", error: type[DynIdError] = NameMatchError) -> list[int]:
    """Index in ``known`` of each of ``names``, a subset of the owner's names without repeats.

    Raises
    ------
    NameMatchError (or ``error``)
        A name twice, or one the owner does not have (as :func:`match_joints`).
    """
    names = list(names)
    _check(names, known, source, owner, kind, False, error)
    position = {name: index for index, name in enumerate(known)}
    return [position[name] for name in names]
