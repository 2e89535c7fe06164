"""Experiment stages: kinds, markers, intervals, per-sample labels, markers back in stamp order.

Kinds
-----
:data:`STAGE_KINDS` are the ``KIND_*`` constants of ``robot_dynid/msg/ExperimentStage`` in their
order (a test checks them against the .msg file): :func:`kind_code` and :func:`kind_name` convert.

Labels
------
A per-sample label is one of the kinds, ``""`` (:data:`NO_STAGE`) for a sample outside every
stage, or ``"custom:<name>"`` for a custom stage that has a name (``"custom"`` alone when it has
none); cycles are integers, :data:`NO_CYCLE` (-1) outside every cycle.

Markers
-------
The experiment runner publishes an ``ExperimentStage`` at every stage boundary: a
:class:`StageMarker` here, built from a message's fields (:meth:`StageMarker.from_fields`, which
validates them) and turned back into them (:meth:`StageMarker.message_fields`); the bag reader,
the recorder, the runner and the identifier node all go through it. :func:`stage_intervals`
pairs start and end markers into :class:`StageInterval` objects and :func:`label_samples` turns
intervals into a stage label and a cycle per sample. A sample at time ``t`` belongs to an
interval when ``start_time <= t <= end_time``; where intervals overlap, the one that started last
wins, so a sample stamped exactly at a boundary between two stages belongs to the next one, and
a nested stage (a friction stage holding one sub-stage per joint and speed) overrides the
enclosing one. Samples outside every interval get the label ``""`` and cycle -1.

Live streams
------------
Samples and markers travel on different topics, so either can overtake the other:
:class:`StampOrder` puts both back in header-stamp order, and :func:`join_sub_stages` drops the
boundaries between sub-stages of one stage (the runner marks an excitation stage as a transition,
a Fourier period, more transitions and cycloidal moves), so the identifier works on whole stages.

Stages detected from the motion (recordings without markers) are :mod:`robot_dynid.recordings.stage_detection`.
"""
from __future__ import annotations

import heapq
import logging
import math
import re
import dataclasses
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError, DynIdError

__all__ = ["STAGE_KINDS", "CUSTOM_PREFIX", "NO_STAGE", "NO_CYCLE", "kind_code", "kind_name", "stage_kind",
           "check_stage_label", "StageMarker", "StageInterval", "stage_intervals", "label_samples",
           "MAX_SELECTED_CYCLES", "parse_cycle_list", "stage_mask", "StampOrder", "join_sub_stages"]


logger = logging.getLogger(__name__)

STAGE_KINDS = ("rest", "excitation", "friction", "warmup", "validation", "custom", "cylinder", "payload")
"""Stage kinds, in the order of the ``KIND_*`` constants of ExperimentStage.msg (0..7). ``payload``: the
short wrist excitation that identifies a tool or load with the arm's model fixed."""

CUSTOM_PREFIX = "custom:"
NO_STAGE = ""
NO_CYCLE = -1


def kind_code(kind: str) -> int:
    """The ``KIND_*`` value of a stage kind name."""
    validators.text(kind, "stage kind", DataError, STAGE_KINDS)
    return STAGE_KINDS.index(kind)


def kind_name(code: int) -> str:
    """The stage kind name of a ``KIND_*`` value."""
    if isinstance(code, bool) or not isinstance(code, (int, np.integer)) or not 0 <= code < len(STAGE_KINDS):
        raise DataError(f"stage kind {code!r} is not a KIND_* value 0..{len(STAGE_KINDS) - 1} {STAGE_KINDS}")
    return STAGE_KINDS[int(code)]


def stage_kind(label: str) -> str:
    """Kind of a stage label: ``"custom:lift"`` -> ``"custom"``, ``"rest"`` -> ``"rest"``."""
    return "custom" if label.startswith(CUSTOM_PREFIX) else label


def check_stage_label(label: str, allow_empty: bool = True) -> None:
    """Raise :class:`DataError` unless ``label`` is a valid stage label (see module docstring)."""
    if label == NO_STAGE and allow_empty:
        return
    if label in STAGE_KINDS:
        return
    if label.startswith(CUSTOM_PREFIX) and len(label) > len(CUSTOM_PREFIX):
        return
    raise DataError(f"unknown stage label {label!r}; expected one of {STAGE_KINDS}, "
                    f"'{CUSTOM_PREFIX}<name>'" + (" or '' (no stage)" if allow_empty else ""))


def _stage_label(kind: str, label: str) -> str:
    """Per-sample label of a stage: the kind, or ``"custom:<label>"`` for a named custom stage."""
    return CUSTOM_PREFIX + label if kind == "custom" and label else kind


@dataclass(frozen=True)
class StageMarker:
    """One stage boundary, as in ``robot_dynid/msg/ExperimentStage``.

    Parameters
    ----------
    stamp : float
        Time of the boundary [s] (absolute ROS time in messages and bags, plan time in a
        schedule); 0 in a message means unstamped.
    kind : str
        One of :data:`STAGE_KINDS`.
    cycle : int
        Cycle index within the test, >= 0.
    start : bool
        True at the start of the stage, False at its end.
    joint_name, speed_fraction, direction
        Friction sub-stages: the moving joint, its speed as a fraction of the velocity limit
        [1] in [0, 1] and the direction (+1, -1, or 0 for both / not applicable).
    label : str
        Free-form stage name (the name of a custom stage; the plan row's name from the runner).
    experiment_id : str
        Test identifier.

    Raises
    ------
    DataError
        Naming the field and its value.
    """

    stamp: float
    kind: str
    cycle: int
    start: bool
    joint_name: str = ""
    speed_fraction: float = 0.0
    direction: int = 0
    label: str = ""
    experiment_id: str = ""

    def __post_init__(self) -> None:
        validators.text(self.kind, "stage marker kind", DataError, STAGE_KINDS)
        validators.number(self.stamp, "stage marker stamp", DataError)
        if self.cycle < 0:
            raise DataError(f"stage marker cycle must be >= 0, got {self.cycle}")
        if self.direction not in (-1, 0, 1):
            raise DataError(f"stage marker direction must be -1, 0 or 1, got {self.direction}")
        validators.fraction(self.speed_fraction, "stage marker speed_fraction", DataError, allow_zero=True)

    @property
    def kind_code(self) -> int:
        """The ``KIND_*`` value of :attr:`kind`."""
        return kind_code(self.kind)

    @classmethod
    def from_fields(cls, stamp: float, kind: int, cycle: int, start: bool, label: str = "",
                    joint_name: str = "", speed_fraction: float = 0.0, direction: int = 0,
                    experiment_id: str = "", require_custom_label: bool = False) -> "StageMarker":
        """A validated marker from the fields of an ``ExperimentStage`` message (``kind`` the
        ``KIND_*`` value, ``stamp`` [s] the header stamp); ``require_custom_label``: a custom
        stage must be named (the recorder's mark_stage service asks for it)."""
        name = kind_name(kind)
        if name == "custom" and require_custom_label and not label:
            raise DataError("stage label must be set for kind KIND_CUSTOM (5)")
        return cls(stamp=float(stamp), kind=name, cycle=int(cycle), start=bool(start), joint_name=str(joint_name),
                   speed_fraction=float(speed_fraction), direction=int(direction), label=str(label),
                   experiment_id=str(experiment_id))

    def message_fields(self) -> dict:
        """The fields of ``robot_dynid/msg/ExperimentStage`` but the header: ``kind`` as its
        ``KIND_*`` value, the others as they are."""
        return {"experiment_id": self.experiment_id, "cycle": int(self.cycle), "kind": self.kind_code,
                "label": self.label, "start": bool(self.start), "joint_name": self.joint_name,
                "speed_fraction": float(self.speed_fraction), "direction": int(self.direction)}


@dataclass(frozen=True)
class StageInterval:
    """A stage or sub-stage over a time span: planned (a protocol plan's rows), from markers or
    detected from the motion. The one model of a stage.

    Parameters
    ----------
    kind : str
        One of :data:`STAGE_KINDS`.
    start_time, end_time : float
        Span ``[start_time, end_time]`` [s], ends included; ``end_time`` is inf for a stage
        never ended. A plan's are from the start of the test.
    joint : str or None
        Friction and cylinder stages: the moving joint. None otherwise.
    speed_fraction : float or None
        Friction: speed as a fraction of the joint's velocity limit [1]; 0 otherwise. A plan also
        gives the requested fraction of multi-joint sub-stages, and None where none applies.
    direction : int
        Friction: +1 or -1 (0: both or not applicable).
    cycle : int
        Cycle index (0-based), -1 when unknown (detected stages).
    label : str
        Free-form stage name from the marker, a plan's sub-stage name (``"hold"``, ``"stroke"``,
        ``"fourier"``, ...: what its markers carry as label); "" for detected stages.
    """

    kind: str
    start_time: float
    end_time: float
    joint: str | None = None
    speed_fraction: float = 0.0
    direction: int = 0
    cycle: int = NO_CYCLE
    label: str = ""

    @property
    def duration(self) -> float:
        """``end_time - start_time`` [s]."""
        return self.end_time - self.start_time

    @property
    def stage_label(self) -> str:
        """Label of the interval's samples (module docstring)."""
        return _stage_label(self.kind, self.label)

    def shifted(self, cycle: int, offset: float) -> "StageInterval":
        """The same stage in cycle ``cycle``, ``offset`` [s] later."""
        return dataclasses.replace(self, cycle=cycle, start_time=self.start_time + offset,
                                   end_time=self.end_time + offset)


def stage_intervals(markers: Sequence[StageMarker]) -> list[StageInterval]:
    """Pair start and end markers into intervals.

    An end marker closes the most recently started open stage with the same kind, cycle,
    joint and label, or failing that the most recent one with the same kind and cycle. An end
    marker without an open stage is ignored, a start marker identical to an open stage ends
    that stage, and a stage still open after the last marker lasts to ``inf``; each of these
    is logged as a warning.

    Parameters
    ----------
    markers : sequence of StageMarker
        In any order; sorted by stamp here (stable, so equal stamps keep their order).

    Returns
    -------
    list of StageInterval
        Sorted by start time; for equal starts the longer interval first.
    """
    open_markers: list[StageMarker] = []
    intervals: list[StageInterval] = []

    def close(marker: StageMarker, end_time: float) -> None:
        intervals.append(StageInterval(
            kind=marker.kind, start_time=marker.stamp, end_time=end_time,
            joint=marker.joint_name or None, speed_fraction=float(marker.speed_fraction),
            direction=int(marker.direction), cycle=int(marker.cycle), label=marker.label))

    def full_key(marker: StageMarker) -> tuple:
        return marker.kind, marker.cycle, marker.joint_name, marker.label

    for marker in sorted(markers, key=lambda m: m.stamp):
        if marker.start:
            same = [m for m in open_markers if full_key(m) == full_key(marker)]
            if same:
                logger.warning("stage %s of cycle %d started again at %.9f s before its end; "
                               "ending it there", marker.kind, marker.cycle, marker.stamp)
                close(same[-1], marker.stamp)
                open_markers.remove(same[-1])
            open_markers.append(marker)
            continue
        matching = [m for m in open_markers if full_key(m) == full_key(marker)] or \
                   [m for m in open_markers if (m.kind, m.cycle) == (marker.kind, marker.cycle)]
        if not matching:
            logger.warning("end marker of stage %s, cycle %d at %.9f s has no start; ignored",
                           marker.kind, marker.cycle, marker.stamp)
            continue
        close(matching[-1], marker.stamp)
        open_markers.remove(matching[-1])
    for marker in open_markers:
        logger.warning("stage %s of cycle %d started at %.9f s has no end marker; it lasts to "
                       "the end of the recording", marker.kind, marker.cycle, marker.stamp)
        close(marker, math.inf)
    return sorted(intervals, key=lambda i: (i.start_time, -i.end_time))


def label_samples(time, intervals: Sequence[StageInterval]) -> tuple[np.ndarray, np.ndarray]:
    """Stage label and cycle of every sample.

    Parameters
    ----------
    time : array_like, shape (N,)
        Sample times [s], increasing.
    intervals : sequence of StageInterval
        Each holds the samples with ``start_time <= t <= end_time``; applied in order of
        start time, so a later-starting interval overrides an earlier one where they overlap.

    Returns
    -------
    stage : ndarray of str, shape (N,)
        :attr:`StageInterval.stage_label`, ``""`` outside every interval.
    cycle : ndarray of int64, shape (N,)
        Cycle index, -1 outside every interval.
    """
    time = np.asarray(time, dtype=np.float64)
    ordered = sorted(intervals, key=lambda i: (i.start_time, -i.end_time))
    width = max([len(i.stage_label) for i in ordered] + [1])
    stage = np.full(time.shape, NO_STAGE, dtype=f"<U{width}")
    cycle = np.full(time.shape, NO_CYCLE, dtype=np.int64)
    for interval in ordered:
        first = np.searchsorted(time, interval.start_time, side="left")
        stop = np.searchsorted(time, interval.end_time, side="right")
        stage[first:stop] = interval.stage_label
        cycle[first:stop] = interval.cycle
    return stage, cycle


MAX_SELECTED_CYCLES = 10_000
"""Most cycles a cycle list (:func:`parse_cycle_list`) may select: ten times the most a protocol plans
(:data:`robot_dynid.experiment.protocol.MAX_CYCLES`)."""

_CYCLE_NUMBER = re.compile(r"[0-9]{1,12}")


def parse_cycle_list(text: str, what: str = "cycle list", error: type[Exception] = DataError) -> list[int]:
    """The cycles of ``text``: numbers and ranges, comma-separated (``3,9,16``, ``0-5``, ``0-2,7``), in the
    order given; cycles are counted from 0 (as in ExperimentStage).

    Raises
    ------
    error
        A part that is not a cycle number (an integer >= 0) or a range ``low-high`` with ``low <= high``,
        no cycle at all, or more than :data:`MAX_SELECTED_CYCLES` cycles (counted before any is listed).
    """
    cycles: list[int] = []
    for part in (piece.strip() for piece in str(text).split(",")):
        if not part:
            continue
        low, dash, high = (bound.strip() for bound in part.partition("-"))
        bounds = (low, high) if dash else (low,)
        if not all(_CYCLE_NUMBER.fullmatch(bound) for bound in bounds) or int(bounds[0]) > int(bounds[-1]):
            raise error(f"the {what} {_short(text)}: {_short(part)} is not a cycle number (an integer >= 0) or a "
                        "range like 3-5")
        first, last = int(bounds[0]), int(bounds[-1])
        if len(cycles) + last - first + 1 > MAX_SELECTED_CYCLES:
            raise error(f"the {what} {_short(text)} selects more than {MAX_SELECTED_CYCLES} cycles")
        cycles.extend(range(first, last + 1))
    if not cycles:
        raise error(f"the {what} {_short(text)} names no cycle; give e.g. 3,9,16 or 0-5")
    return cycles


def _short(text) -> str:
    """``repr(text)`` for a message, at most 60 characters."""
    shown = repr(text)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def stage_mask(n_samples: int, stage_labels, cycle_labels, stage=None, cycles=None,
               source: str = "the recording") -> np.ndarray:
    """Which of ``n_samples`` samples belong to the given stages and cycles.

    Parameters
    ----------
    n_samples : int
        N.
    stage_labels : ndarray of str, shape (N,), or None
        Per-sample labels (:func:`label_samples`); None: the data have none.
    cycle_labels : ndarray of int, shape (N,), or None
        Per-sample cycles; None: the data have none.
    stage : str or iterable of str, optional
        Stage kinds or labels to keep; ``"custom"`` keeps every custom stage, ``"custom:<name>"``
        only that one. None keeps all.
    cycles : int or iterable of int, optional
        Cycle indices to keep. None keeps all.
    source : str
        Names the data in errors.

    Returns
    -------
    ndarray of bool, shape (N,)

    Raises
    ------
    DataError
        Stages (cycles) requested from data without stage (cycle) labels, an unknown stage, or an
        empty selection (the message lists the available stages and cycles).
    """
    mask = np.ones(n_samples, dtype=bool)
    wanted_stages = wanted_cycles = None
    if stage is not None:
        if stage_labels is None:
            raise DataError(f"{source} has no stage labels; cannot select stage {stage!r}")
        wanted_stages = [stage] if isinstance(stage, str) else list(stage)
        for label in wanted_stages:
            check_stage_label(label, allow_empty=False)
        in_stage = np.isin(stage_labels, wanted_stages)
        if "custom" in wanted_stages:
            in_stage |= np.char.startswith(stage_labels, CUSTOM_PREFIX)
        mask &= in_stage
    if cycles is not None:
        if cycle_labels is None:
            raise DataError(f"{source} has no cycle labels; cannot select cycles {cycles!r}")
        wanted_cycles = [int(cycles)] if np.isscalar(cycles) else [int(c) for c in cycles]
        mask &= np.isin(cycle_labels, wanted_cycles)
    if not mask.any():
        available_stages = [] if stage_labels is None else np.unique(stage_labels).tolist()
        available_cycles = [] if cycle_labels is None else np.unique(cycle_labels).tolist()
        raise DataError(f"no samples of {source} with stage in {wanted_stages} and "
                        f"cycle in {wanted_cycles}; available stages: {available_stages}, "
                        f"cycles: {available_cycles}")
    return mask


class StampOrder:
    """Samples and stage markers from two streams, released in header-stamp order.

    An item is held until the sample stream has reached ``latency`` s past its stamp (a sample
    stamped ``>= stamp + latency`` arrived), or until :meth:`flush`; then every held item up to
    that point is released, ordered by stamp, and at equal stamps end markers first, then start
    markers, then samples: a stage holds the samples stamped in ``[start, end)``, so where one
    stage ends and the next starts, a sample on the boundary belongs to the next one, as
    :func:`label_samples` labels it. So a marker may arrive up to
    ``latency`` s before or after the samples around its stamp and still cut the stage at its
    stamp. A marker without a stamp (``None``, or 0 as an unset ROS header) counts as stamped
    just after the newest sample received; a marker more than ``latency`` late is applied on
    arrival (logged).

    Parameters
    ----------
    latency : float
        [s] >= 0; how far the two streams may be out of step. Samples reach the identifier
        this much later (in stamp time) than they arrive.

    Each ``add_*`` and :meth:`flush` returns the released items in order, as ``("sample",
    payload)`` or ``("marker", StageMarker)`` pairs.

    Attributes
    ----------
    released_until : float
        [s] the largest stamp released so far (-inf before any).
    """

    _END, _START, _SAMPLE, _UNSTAMPED = 0, 1, 2, 3

    def __init__(self, latency: float):
        validators.positive(latency, "latency", DynIdError, "s", allow_zero=True)
        self.latency = float(latency)
        self._held = []
        self._sequence = 0
        self._head = -math.inf   # newest sample stamp [s]
        self.released_until = -math.inf

    @property
    def pending(self) -> int:
        """Items held."""
        return len(self._held)

    def _push(self, stamp: float, rank: int, item) -> None:
        heapq.heappush(self._held, (stamp, rank, self._sequence, item))
        self._sequence += 1

    def _release(self, upto: float) -> list:
        released = []
        while self._held and self._held[0][0] <= upto:
            stamp, _, _, item = heapq.heappop(self._held)
            self.released_until = max(self.released_until, stamp)
            released.append(item)
        return released

    def add_sample(self, stamp: float, payload) -> list:
        """A sample stamped ``stamp`` [s] arrived; return what is released."""
        stamp = float(stamp)
        self._push(stamp, self._SAMPLE, ("sample", payload))
        self._head = max(self._head, stamp)
        return self._release(self._head - self.latency)

    def add_marker(self, marker: StageMarker) -> list:
        """A stage marker arrived; return what is released."""
        if marker.stamp == 0.0:
            stamp, rank = self._head, self._UNSTAMPED  # just after every sample received so far
        else:
            stamp, rank = marker.stamp, self._START if marker.start else self._END
            if stamp < self.released_until:
                logger.warning("stage marker stamped %.6f s arrived after samples up to %.6f s had been "
                               "released (more than latency = %g s late); applied on arrival",
                               stamp, self.released_until, self.latency)
        self._push(stamp, rank, ("marker", marker))
        return self._release(self._head - self.latency)

    def flush(self) -> list:
        """Release everything held (the sample stream stopped)."""
        return self._release(math.inf)


def join_sub_stages(items: list) -> list:
    """Released items without the boundaries between sub-stages of one stage.

    An end marker directly followed by a start marker of the same kind and cycle at the same
    stamp (the runner's sub-stages: the transition, Fourier and cycloidal parts of one
    excitation stage) continues the stage: both markers are dropped. ``items`` as
    :class:`StampOrder` releases them (a pair is released together: both carry the same stamp).
    """
    joined = []
    index = 0
    while index < len(items):
        what, payload = items[index]
        if what == "marker" and not payload.start and index + 1 < len(items):
            next_what, next_payload = items[index + 1]
            if next_what == "marker" and next_payload.start and (next_payload.kind, next_payload.cycle,
                                                                 next_payload.stamp) \
                    == (payload.kind, payload.cycle, payload.stamp):
                index += 2
                continue
        joined.append((what, payload))
        index += 1
    return joined
