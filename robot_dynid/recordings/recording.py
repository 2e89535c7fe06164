"""Recorded joint data of one experiment: time, joint states, torques and stage labels.

A :class:`Recording` is what the CSV and rosbag2 readers return and what identification
consumes. Its arrays are read-only float64 (labels: str, cycles: int64), sample-major:

- ``time`` (N,) [s], strictly increasing (absolute ROS time for bags, as written for CSV);
- ``q`` (N, n) [rad], ``qd`` (N, n) [rad/s], ``qdd`` (N, n) [rad/s^2], ``tau`` (N, n) [N m],
  ``temperature`` (N, n) [deg C]; columns in the order of ``joint_names``;
- ``stage`` (N,) stage labels and ``cycle`` (N,) cycle indices, ``-1`` outside any cycle.

Dropped samples
---------------
Samples left out on the way in (a bad message, a non-finite value, an implausible torque, a run
between two gaps too short to differentiate) are counted by reason in ``Recording.dropped``:
reason -> :class:`Dropped` (count and the time of the first one), so a report can say what was
left out and where to look.

Stage labels
------------
``stage`` holds a label per sample (:mod:`robot_dynid.recordings.stages`: a stage kind, ``""`` outside
every stage, ``"custom:<name>"``), ``cycle`` a cycle index, -1 outside every cycle.
``Recording.select(stage="custom")`` selects every custom stage, ``stage="custom:<name>"``
only the named one.
"""
from __future__ import annotations

import dataclasses
import logging
import math
import weakref
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from robot_dynid import stored_columns, validators
from robot_dynid.errors import DataError
from robot_dynid.joint_names import match_joints, unique_names
from robot_dynid.recordings.signal_processing import check_strictly_increasing
from robot_dynid.recordings.stages import (CUSTOM_PREFIX, NO_CYCLE, NO_STAGE, StageInterval, check_stage_label,
                                           stage_kind, stage_mask)
from robot_dynid.stored_columns import ColumnFile

__all__ = ["JOINT_FIELDS", "REPEATED_STAMP", "Dropped", "DropCounter", "describe_dropped", "dropped_to_dict",
           "dropped_from_dict", "hand_over", "finite_rows", "GatheredRows", "Recording", "intervals_from_labels"]

logger = logging.getLogger(__name__)

JOINT_FIELDS = ("q", "qd", "qdd", "tau", "temperature")
"""The (N, n) per-joint fields of a Recording, in the order they are written to files."""
REPEATED_STAMP = "repeated stamp"
"""The end of the ``dropped`` reason of samples left out for a stamp equal to an earlier one."""


@dataclass(frozen=True)
class Dropped:
    """Samples (or messages) left out for one reason: how many, and the time [s] of the first
    (a recording's time: absolute ROS time for bags; NaN when unknown)."""

    count: int
    first_time: float

    def describe(self, reason: str) -> str:
        where = "" if math.isnan(self.first_time) else f", first at {self.first_time:.6f} s"
        return f"{reason}: {self.count}{where}"


class DropCounter:
    """Counts of samples left out, by reason, in the order the reasons first occurred."""

    def __init__(self, dropped: Mapping[str, Dropped] | None = None):
        self.counts: dict[str, Dropped] = dict(dropped or {})

    def add(self, reason: str, time: float = math.nan, count: int = 1) -> None:
        """``count`` samples dropped for ``reason``, the first of them at ``time`` [s]."""
        if count <= 0:
            return
        previous = self.counts.get(reason)
        if previous is None:
            self.counts[reason] = Dropped(int(count), float(time))
        else:
            first = previous.first_time if math.isnan(time) or time >= previous.first_time else float(time)
            self.counts[reason] = Dropped(previous.count + int(count), first)

    def merge(self, dropped: Mapping[str, Dropped]) -> "DropCounter":
        for reason, entry in dropped.items():
            self.add(reason, entry.first_time, entry.count)
        return self

    @property
    def total(self) -> int:
        return sum(entry.count for entry in self.counts.values())


def describe_dropped(dropped: Mapping[str, Dropped]) -> str:
    """``"non-finite tau: 3, first at 12.500000 s; /joint_states: repeated stamp: 1, ..."``;
    '' when none."""
    return "; ".join(entry.describe(reason) for reason, entry in dropped.items())


def dropped_to_dict(dropped: Mapping[str, Dropped]) -> dict:
    """Plain ``{reason: {count, first_time}}`` for JSON, YAML and model metrics."""
    return {reason: {"count": entry.count, "first_time": None if math.isnan(entry.first_time)
                     else entry.first_time} for reason, entry in dropped.items()}


def dropped_from_dict(data: Mapping) -> dict[str, Dropped]:
    """Inverse of :func:`dropped_to_dict`."""
    return {str(reason): Dropped(int(entry["count"]), math.nan if entry.get("first_time") is None
                                 else float(entry["first_time"])) for reason, entry in data.items()}


_CHECKED_LABELS = weakref.WeakValueDictionary()
"""id -> the stage and cycle arrays a Recording checked and made read-only: a recording made from another shares
them unchecked (checking an hour's labels, np.unique over 3.6 M strings, takes 0.6 s)."""


def _checked_before(value, n_samples: int) -> bool:
    return _CHECKED_LABELS.get(id(value)) is value and value.shape == (n_samples,) and not value.flags.writeable


def _frozen(value) -> bool:
    """Whether ``value`` is a float64 array nobody can write to: read-only, as every array it views, down to data
    it owns (a recording's own arrays and their slices)."""
    if not (isinstance(value, np.ndarray) and value.dtype == np.float64):
        return False
    while isinstance(value, np.ndarray):
        if value.flags.writeable:
            return False
        value = value.base
    return value is None


def finite_rows(values: np.ndarray) -> np.ndarray:
    """(N,) whether every value of each row of the float array ``values`` (N, n) is finite; column by column (a
    reduction over a row's few values is several times slower)."""
    finite = np.ones(values.shape[0], dtype=bool)
    if stored_columns.is_stored(values):
        if not values.all_finite:
            for start, stop, piece in values.pieces():
                finite[start:stop] = finite_rows(piece)
        return finite
    if validators.all_finite(values):
        return finite
    for column in range(values.shape[1]):
        finite &= np.isfinite(values[:, column])
    return finite


def hand_over(*arrays) -> None:
    """Make ``arrays`` and every array they view read-only: their maker writes to them no more, so a
    :class:`Recording` made of them shares them instead of copying (a reader's arrays of a long file: 0.5 GB an
    hour at 1 kHz for 6 joints). None entries are skipped."""
    for array in arrays:
        chain = []
        while isinstance(array, np.ndarray):
            chain.append(array)
            array = array.base
        for level in chain:
            level.setflags(write=False)


class GatheredRows:
    """Rows of named columns added chunk by chunk into arrays made for all the rows at once, so that a reader of
    a long file never holds its chunks and their concatenation together.

    Each column takes its first chunk's dtype and trailing shape. A chunk that does not fit the arrays grows
    them to 1.5 times their length (at least to what it needs), copying the rows gathered so far. A float64
    field of rows of values whose expected rows (``capacity``) make more than
    :data:`~robot_dynid.stored_columns.SPILL_BYTES` goes to a file instead (a
    :class:`~robot_dynid.stored_columns.StoredColumn` in :meth:`columns`).

    Parameters
    ----------
    capacity : int
        Rows the arrays are made for: the rows expected (at most a few more, as every row beyond the last added
        stays allocated while the columns are used).

    Attributes
    ----------
    rows : int
        Rows added so far.
    """

    def __init__(self, capacity: int):
        self.capacity = max(int(capacity), 0)
        self.rows = 0
        self._arrays: dict[str, np.ndarray] = {}
        self._files: dict[str, ColumnFile] = {}

    def add(self, **chunk: np.ndarray) -> None:
        """Append ``chunk``: column name -> array (m, ...), the same m rows in each and, from the second chunk on,
        the names, trailing shapes and (or safely cast to) dtypes of the first chunk (ValueError otherwise); a
        chunk of 0 rows is skipped."""
        chunk = {name: np.asarray(values) for name, values in chunk.items()}
        sizes = {name: values.shape[0] for name, values in chunk.items()}
        if len(set(sizes.values())) > 1:
            raise ValueError(f"a chunk's columns must have as many rows as each other, got {sizes}")
        size = next(iter(sizes.values()), 0)
        if not size:
            return
        if self._arrays or self._files:
            self._check(chunk)
        else:       # the first chunk: fields too large for memory go to files (stored_columns.SPILL_BYTES)
            self._files = {name: ColumnFile(values.shape[1]) for name, values in chunk.items()
                           if values.ndim == 2 and values.dtype == np.float64
                           and 8 * values.shape[1] * max(self.capacity, size) > stored_columns.SPILL_BYTES}
        for name, file in self._files.items():
            file.append(chunk.pop(name))
        if not chunk:
            self.rows += size
            return
        if not self._arrays or self.rows + size > self.capacity:
            self.capacity = max(self.capacity + self.capacity // 2 if self._arrays else self.capacity, self.rows + size)
            grown = {name: np.empty((self.capacity, *values.shape[1:]), dtype=values.dtype)
                     for name, values in {**chunk, **self._arrays}.items()}
            for name, array in self._arrays.items():
                grown[name][:self.rows] = array[:self.rows]
            self._arrays = grown
        for name, values in chunk.items():
            self._arrays[name][self.rows:self.rows + size] = values
        self.rows += size

    def _check(self, chunk: dict[str, np.ndarray]) -> None:
        if chunk.keys() != self._arrays.keys() | self._files.keys():
            raise ValueError(f"a chunk has columns {sorted(chunk)}, the first one had "
                             f"{sorted(self._arrays.keys() | self._files.keys())}")
        for name, values in chunk.items():
            if name in self._files:
                if values.shape[1:] != (self._files[name].width,) or values.dtype != np.float64:
                    raise ValueError(f"column {name!r} holds float64 rows of shape {(self._files[name].width,)}, a "
                                     f"chunk gives {values.dtype} rows of shape {values.shape[1:]}")
                continue
            array = self._arrays[name]
            if values.shape[1:] != array.shape[1:] or not np.can_cast(values.dtype, array.dtype, "safe"):
                raise ValueError(f"column {name!r} holds {array.dtype} rows of shape {array.shape[1:]}, a chunk "
                                 f"gives {values.dtype} rows of shape {values.shape[1:]}")

    def columns(self) -> dict[str, np.ndarray]:
        """Column name -> the rows added (rows, ...), views of the arrays (no copy), stored columns for the fields
        kept in files; empty before the first chunk of at least one row."""
        return {**{name: array[:self.rows] for name, array in self._arrays.items()},
                **{name: file.column() for name, file in self._files.items()}}


def _as_float_array(name: str, value, shape: tuple[int, ...], axes: tuple[str, ...],
                    columns: Sequence[str] | None = None) -> np.ndarray:
    """A read-only float copy of ``value`` checked by :func:`~robot_dynid.validators.array` (``value`` itself when
    no one can change it: a recording made from another shares its arrays); the message of a NaN or inf adds
    that :meth:`Recording.from_arrays` drops such samples. A StoredColumn stays one (its values checked once)."""
    if stored_columns.is_stored(value):
        if value.shape != shape:
            raise DataError(f"{name} has shape {value.shape}, expected {shape}")
        if not value.all_finite:
            return _as_float_array(name, np.asarray(value), shape, axes, columns)
        return value
    array = validators.array(value, name, shape=shape, axes=axes, finite=False, copy=not _frozen(value))
    if not validators.all_finite(array):
        try:
            validators.array(array, name, axes=axes, columns=columns)
        except DataError as error:
            raise DataError(f"{error}; build the recording with Recording.from_arrays to drop such samples") from None
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class Recording:
    """Joint data of one experiment, validated on construction.

    Parameters
    ----------
    joint_names : sequence of str
        Joint order of every (N, n) array, n unique names.
    time : array_like, shape (N,)
        Sample times [s], strictly increasing, N >= 1.
    q : array_like, shape (N, n)
        Joint positions [rad].
    qd, qdd : array_like, shape (N, n), optional
        Joint velocities [rad/s] and accelerations [rad/s^2].
    tau : array_like, shape (N, n), optional
        Joint torques [N m].
    temperature : array_like, shape (N, n), optional
        Joint temperatures [deg C].
    stage : array_like of str, shape (N,), optional
        Stage label per sample (see the module docstring); ``""`` outside every stage.
    cycle : array_like of int, shape (N,), optional
        Cycle index per sample, >= 0, or -1 outside every cycle.
    source : str
        Where the data came from (file name), used in messages.
    dropped : mapping of str to Dropped
        Samples left out before construction, by reason (see the module docstring).
    conditioning : mapping
        What was done to the data after reading (resampling, how derivatives were formed, velocity 0 at
        rest: :func:`robot_dynid.recordings.pipeline.condition`), plain data for a model's provenance.
    stamp_quality : StampQuality, optional
        The timing of the stamps as read, before any resampling
        (:func:`robot_dynid.recordings.stamp_quality.stamp_quality`); kept by selections.

    Raises
    ------
    DataError
        A field of the wrong shape (naming it, actual versus expected), a non-finite value,
        time not strictly increasing (naming the first offending index and its time), an
        unknown stage label, a cycle below -1 or duplicated joint names.
    """

    joint_names: tuple[str, ...]
    time: np.ndarray
    q: np.ndarray
    qd: np.ndarray | None = None
    qdd: np.ndarray | None = None
    tau: np.ndarray | None = None
    temperature: np.ndarray | None = None
    stage: np.ndarray | None = None
    cycle: np.ndarray | None = None
    source: str = "<arrays>"
    dropped: Mapping[str, Dropped] = dataclasses.field(default_factory=dict)
    conditioning: Mapping = dataclasses.field(default_factory=dict)
    stamp_quality: object | None = None

    def __post_init__(self) -> None:
        names = tuple(self.joint_names) if not isinstance(self.joint_names, str) else None
        if not names or not all(isinstance(name, str) and name for name in names):
            raise DataError(f"joint_names must be a non-empty sequence of non-empty strings, "
                            f"got {self.joint_names!r}")
        unique_names(names, f"{self.source}: joint_names")
        object.__setattr__(self, "joint_names", names)
        time = validators.array(self.time, "time", shape=(None,), axes=("samples",), min_length=1, finite=False)
        n_samples, n_joints = time.size, len(names)
        time = _as_float_array("time", time, (n_samples,), ("samples",))
        check_strictly_increasing(time)
        object.__setattr__(self, "time", time)
        for field in JOINT_FIELDS:
            value = getattr(self, field)
            if value is None and field == "q":
                raise DataError("q is required, got None")
            if value is not None:
                object.__setattr__(self, field, _as_float_array(
                    field, value, (n_samples, n_joints), ("samples", "joints"), names))
        if self.stage is not None:
            object.__setattr__(self, "stage", self._checked_stage(n_samples))
        if self.cycle is not None:
            object.__setattr__(self, "cycle", self._checked_cycle(n_samples))
        bad_counts = [reason for reason, entry in dict(self.dropped).items()
                      if not isinstance(entry, Dropped) or entry.count < 0]
        if bad_counts:
            raise DataError(f"dropped must map reasons to Dropped counts >= 0; bad: {bad_counts}")
        object.__setattr__(self, "dropped", dict(self.dropped))
        object.__setattr__(self, "source", str(self.source))

    def _checked_stage(self, n_samples: int) -> np.ndarray:
        if _checked_before(self.stage, n_samples):
            return self.stage
        stage = np.array(self.stage, dtype=str)
        if stage.shape != (n_samples,):
            raise DataError(f"stage has shape {stage.shape}, expected ({n_samples},)")
        for label in np.unique(stage):
            check_stage_label(str(label))
        stage.setflags(write=False)
        _CHECKED_LABELS[id(stage)] = stage
        return stage

    def _checked_cycle(self, n_samples: int) -> np.ndarray:
        if _checked_before(self.cycle, n_samples):
            return self.cycle
        raw = np.asarray(self.cycle)
        if raw.shape != (n_samples,):
            raise DataError(f"cycle has shape {raw.shape}, expected ({n_samples},)")
        integral = raw.dtype.kind in "iu" or (raw.dtype.kind == "f" and
                                              bool(np.all(raw == np.round(raw))))
        if not integral:
            raise DataError(f"cycle must hold integers, got dtype {raw.dtype}")
        cycle = raw.astype(np.int64)
        if n_samples and cycle.min() < NO_CYCLE:
            index = int(np.argmin(cycle))
            raise DataError(f"cycle must be >= 0 or {NO_CYCLE} (no cycle), got "
                            f"cycle[{index}] = {cycle[index]}")
        cycle.setflags(write=False)
        _CHECKED_LABELS[id(cycle)] = cycle
        return cycle

    @classmethod
    def from_arrays(cls, joint_names: Sequence[str], time, q, qd=None, qdd=None, tau=None,
                    temperature=None, stage=None, cycle=None, source: str = "<arrays>",
                    dropped: Mapping[str, Dropped] | None = None) -> "Recording":
        """Recording from raw arrays, dropping the samples that hold NaN or inf.

        A sample (row) is dropped when ``time`` or any entry of ``q``, ``qd``, ``qdd``,
        ``tau`` or ``temperature`` (those given) is NaN or inf; it is counted in ``dropped``
        under ``"non-finite <field>"`` (the first field that is) and logged as a warning.
        Arguments as for :class:`Recording`.

        Raises
        ------
        DataError
            Every sample holds NaN or inf, or as the constructor.
        """
        time = validators.array(time, "time", shape=(None,), axes=("samples",), finite=False)
        for name, labels in (("stage", stage), ("cycle", cycle)):
            if labels is not None and np.shape(labels) != time.shape:
                raise DataError(f"{name} has shape {np.shape(labels)}, expected {time.shape}")
        fields = {"q": q, "qd": qd, "qdd": qdd, "tau": tau, "temperature": temperature}
        keep = np.isfinite(time)
        counter = DropCounter(dropped)
        counter.add("non-finite time", math.nan, int(np.count_nonzero(~keep)))
        for name, value in fields.items():
            if value is None:
                continue
            if not stored_columns.is_stored(value):
                value = validators.array(value, name, shape=(time.size, None), axes=("samples", "joints"),
                                         finite=False)
            elif value.shape[0] != time.size:
                raise DataError(f"{name} has {value.shape[0]} samples, time has {time.size}")
            newly_bad = keep & ~finite_rows(value)
            if newly_bad.any():
                counter.add(f"non-finite {name}", float(time[np.argmax(newly_bad)]),
                            int(np.count_nonzero(newly_bad)))
            keep &= ~newly_bad
            fields[name] = value
        n_bad = int(time.size - np.count_nonzero(keep))
        if n_bad == time.size and time.size:
            raise DataError(f"all {time.size} samples of {source} hold NaN or inf "
                            f"({describe_dropped(counter.counts)})")
        if n_bad:
            logger.warning("%s: dropped %d of %d samples holding NaN or inf", source, n_bad, time.size)
            fields = {k: None if v is None else stored_columns.select_rows(v, keep) for k, v in fields.items()}
            time = time[keep]
            stage = None if stage is None else np.asarray(stage)[keep]
            cycle = None if cycle is None else np.asarray(cycle)[keep]
        return cls(joint_names=joint_names, time=time, stage=stage, cycle=cycle, source=source,
                   dropped=counter.counts, **fields)

    @property
    def n_dropped(self) -> int:
        """Samples left out before construction, all reasons together."""
        return sum(entry.count for entry in self.dropped.values())

    @property
    def n_samples(self) -> int:
        """Number of samples N."""
        return int(self.time.size)

    @property
    def n_joints(self) -> int:
        """Number of joints n."""
        return len(self.joint_names)

    @property
    def elapsed(self) -> np.ndarray:
        """Time since the first sample, ``time - time[0]``, shape (N,) [s]."""
        return self.time - self.time[0]

    def _replace_rows(self, rows) -> "Recording":
        changes = {field: None if getattr(self, field) is None else
                   stored_columns.select_rows(getattr(self, field), rows)
                   for field in ("time",) + JOINT_FIELDS + ("stage", "cycle")}
        return dataclasses.replace(self, **changes)

    def take(self, rows) -> "Recording":
        """Recording of the rows ``rows`` (slice, boolean mask (N,) or increasing indices)."""
        if isinstance(rows, slice):
            selected = np.arange(self.n_samples)[rows]
        else:
            rows = np.asarray(rows)
            if rows.dtype == bool and rows.shape != (self.n_samples,):
                raise DataError(f"row mask has shape {rows.shape}, expected ({self.n_samples},)")
            selected = np.flatnonzero(rows) if rows.dtype == bool else rows
        if np.size(selected) == 0:
            raise DataError(f"selection of rows {rows!r} from {self.source} is empty "
                            f"({self.n_samples} samples)")
        return self._replace_rows(selected)

    def time_window(self, start: float, stop: float) -> "Recording":
        """Samples with ``start <= time < stop`` [s]."""
        mask = (self.time >= start) & (self.time < stop)
        if not mask.any():
            raise DataError(f"no samples of {self.source} in time window [{start}, {stop}) s; "
                            f"recording spans [{self.time[0]}, {self.time[-1]}] s")
        return self._replace_rows(mask)

    def select(self, stage: str | Iterable[str] | None = None,
               cycles: int | Iterable[int] | None = None) -> "Recording":
        """Samples of the given stages and cycles (:func:`~robot_dynid.recordings.stages.stage_mask`).

        Parameters
        ----------
        stage : str or iterable of str, optional
            Stage kinds or labels to keep; ``"custom"`` keeps every custom stage,
            ``"custom:<name>"`` only that one. None keeps all.
        cycles : int or iterable of int, optional
            Cycle indices to keep. None keeps all.

        Raises
        ------
        DataError
            The recording has no stage (cycle) labels, a requested stage is unknown, or the
            selection is empty (the message lists the available stages and cycles).
        """
        mask = stage_mask(self.n_samples, self.stage, self.cycle, stage, cycles, self.source)
        return self._replace_rows(mask) if not mask.all() else self

    def reorder(self, joint_names: Sequence[str]) -> "Recording":
        """Recording with columns in the order of ``joint_names``, matched by name.

        Joints of the recording not in ``joint_names`` are dropped.

        Raises
        ------
        DataError
            A requested joint is not in the recording (all missing ones are named;
            :func:`robot_dynid.joint_names.match_joints`).
        """
        joint_names = tuple(joint_names)
        columns = match_joints(joint_names, self.joint_names, self.source)
        if joint_names == self.joint_names:
            return self
        changes = {field: None if getattr(self, field) is None else getattr(self, field)[:, columns]
                   for field in JOINT_FIELDS}
        return dataclasses.replace(self, joint_names=joint_names, **changes)

    def with_labels(self, stage, cycle=None) -> "Recording":
        """The same recording with new stage labels (N,) and cycles (N,) (None: no cycles)."""
        return dataclasses.replace(self, stage=stage, cycle=cycle)

    def segments(self) -> list[tuple[str, int, int, int]]:
        """Contiguous runs of equal stage label and cycle.

        Returns
        -------
        list of (stage, cycle, start_index, stop_index)
            One entry per run, ``stop_index`` exclusive, covering all N samples in order.
            Without labels the stage is ``""`` and the cycle -1.
        """
        stage = self.stage if self.stage is not None else np.full(self.n_samples, NO_STAGE)
        cycle = self.cycle if self.cycle is not None else np.full(self.n_samples, NO_CYCLE)
        changes = np.flatnonzero((stage[1:] != stage[:-1]) | (cycle[1:] != cycle[:-1])) + 1
        starts = np.concatenate(([0], changes))
        stops = np.concatenate((changes, [self.n_samples]))
        return [(str(stage[a]), int(cycle[a]), int(a), int(b)) for a, b in zip(starts, stops)]


def intervals_from_labels(recording: Recording) -> list[StageInterval]:
    """Intervals of the runs of equal stage label and cycle of a labelled recording (a CSV
    stage column), from the first to the last sample of each run (:meth:`Recording.segments`);
    samples labelled ``""`` are left out. Friction details (joint, speed, direction) are not
    in per-sample labels, so they stay empty."""
    intervals = []
    for label, cycle, first, stop in recording.segments():
        if label == NO_STAGE:
            continue
        kind = stage_kind(label)
        intervals.append(StageInterval(kind, float(recording.time[first]),
                                       float(recording.time[stop - 1]), cycle=cycle,
                                       label=label[len(CUSTOM_PREFIX):] if kind != label else ""))
    return intervals
