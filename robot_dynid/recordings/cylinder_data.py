"""Recorded hydraulic cylinder data (CSV or rosbag2), checked for unit mistakes.

CSV: one header line, columns in any order: ``time`` [s] and per cylinder ``x.<name>`` [m],
optional ``xd.<name>`` [m/s], ``pa.<name>`` and ``pb.<name>`` [Pa], optional ``load.<name>`` [N];
optional ``stage`` and ``cycle`` columns label the samples as in a recording's CSV file
(:mod:`robot_dynid.recordings.csv_io`).
Bag: ``robot_dynid/msg/HydraulicCylinderState`` on ``/hydraulic_cylinder_states`` (as the recorder
writes it), cylinders matched by name in every message, header stamps as time. A bag's
``robot_dynid/msg/ExperimentStage`` markers label the samples with stages and cycles as they label
joint states (:func:`~robot_dynid.recordings.stages.label_samples`).
With either labels, only the samples of some stages (the ``cylinder`` stage of ``robot-dynid protocol
--cylinders``) and cycles can be kept (:func:`~robot_dynid.recordings.stages.stage_mask`, as
``Recording.select``), after the derivatives were taken over the whole recording.

A unit mistake makes every sample wrong and is an error naming the column (as
:mod:`robot_dynid.recordings.data_checks` does for joints):

- time not in seconds (:func:`~robot_dynid.recordings.data_checks.check_time_unit`);
- ``x`` beyond :data:`MAX_DISPLACEMENT` (5 m) in more than 5 % of the samples: looks like mm;
- ``xd`` beyond :data:`MAX_SPEED` (10 m/s): looks like mm/s;
- ``pa``/``pb`` whose largest magnitude is below :data:`MIN_PEAK_PRESSURE` (1e4 Pa = 0.1 bar: no
  working hydraulic cylinder): looks like MPa or bar (bar alone above a peak of 100); above :data:`MAX_PRESSURE`
  (1e9 Pa = 10 kbar): not pascals either.
"""
from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robot_dynid.errors import DataError
from robot_dynid.recordings.bag_io import (DEFAULT_HYDRAULIC_TOPIC, DEFAULT_STAGE_TOPIC, ns_to_seconds,
                                           read_hydraulic_states, read_stage_markers)
from robot_dynid.joint_names import match_joints
from robot_dynid.recordings.conditioning import MIN_WINDOW_SAMPLES
from robot_dynid.recordings.csv_io import column_indices, read_labelled_columns
from robot_dynid.recordings.data_checks import UNIT_FRACTION, check_time_unit
from robot_dynid.recordings.signal_processing import (differentiate, first_non_increasing, median_step,
                                                      window_samples_for)
from robot_dynid.recordings.stages import label_samples, stage_intervals, stage_mask

__all__ = ["MAX_DISPLACEMENT", "MAX_SPEED", "MIN_PEAK_PRESSURE", "MAX_PRESSURE", "DERIVATIVE_WINDOW", "CSV_FIELDS",
           "CylinderSamples", "check_cylinder_units", "read_cylinder_data"]

logger = logging.getLogger(__name__)

MAX_DISPLACEMENT = 5.0     # m
MAX_SPEED = 10.0           # m/s
MIN_PEAK_PRESSURE = 1e4    # Pa
MAX_PRESSURE = 1e9         # Pa
DERIVATIVE_WINDOW = 0.1    # s, local cubic fit for xd (when not recorded) and xdd
CSV_FIELDS = ("x", "xd", "pa", "pb", "load")
"""Column prefixes, in the order of :class:`CylinderSamples`' arrays."""
_UNITS = {"x": "m", "xd": "m/s", "pa": "Pa", "pb": "Pa", "load": "N"}


@dataclass(frozen=True)
class CylinderSamples:
    """Samples of one cylinder: ``time`` [s], ``x`` [m], ``xd`` [m/s], ``xdd`` [m/s^2] (derived),
    ``p_a``, ``p_b`` [Pa], ``load`` [N] or None, each (N,); ``velocity_recorded`` whether ``xd``
    came from the data; ``stage`` (N,) of str and ``cycle`` (N,) of int labels, or None when the
    data have none."""

    name: str
    time: np.ndarray
    x: np.ndarray
    xd: np.ndarray
    xdd: np.ndarray
    p_a: np.ndarray
    p_b: np.ndarray
    load: np.ndarray | None
    velocity_recorded: bool
    stage: np.ndarray | None = None
    cycle: np.ndarray | None = None

    @property
    def sample_interval(self) -> float:
        """Median sampling interval [s]."""
        return median_step(self.time)


def check_cylinder_units(source: str, name: str, columns: dict) -> None:
    """DataError when a column of cylinder ``name`` (``columns``: prefix -> (N,) or None) is not SI."""
    def column(prefix):
        return f"{source}: column {prefix}.{name} of cylinder {name!r}"
    for prefix, limit, unit, looks in (("x", MAX_DISPLACEMENT, "m", "mm"), ("xd", MAX_SPEED, "m/s", "mm/s")):
        values = columns.get(prefix)
        if values is None:
            continue
        beyond = np.abs(values) > limit
        if np.mean(beyond) > UNIT_FRACTION:
            worst = float(values[np.argmax(np.abs(values))])
            raise DataError(f"{column(prefix)} exceeds {limit:g} {unit} in {np.mean(beyond):.0%} of the samples "
                            f"(up to {worst:.6g}): it looks like {looks} ({worst:.6g} {looks} = {worst * 1e-3:.4g} "
                            f"{unit}); give {unit}")
    for prefix in ("pa", "pb"):
        values = columns[prefix]
        peak = float(np.max(np.abs(values)))
        if peak < MIN_PEAK_PRESSURE:
            looks = f"MPa or bar ({peak:.6g} MPa = {peak * 1e6:.4g} Pa)" if peak <= 100.0 else \
                f"bar ({peak:.6g} bar = {peak * 1e5:.4g} Pa)"
            raise DataError(f"{column(prefix)} peaks at {peak:.6g} Pa, below {MIN_PEAK_PRESSURE:g} Pa (0.1 bar): "
                            f"it looks like {looks}; give Pa")
        if peak > MAX_PRESSURE:
            raise DataError(f"{column(prefix)} reaches {peak:.6g} Pa, above {MAX_PRESSURE:g} Pa (10 kbar): "
                            "check its unit (Pa)")


def _derive(name, source, time, x, xd, p_a, p_b, load, stage=None, cycle=None) -> CylinderSamples:
    good = np.isfinite(time) & np.isfinite(x) & np.isfinite(p_a) & np.isfinite(p_b)
    if load is not None:
        good &= np.isfinite(load)
    recorded = xd is not None and bool(np.all(np.isfinite(xd[good])))
    dropped = int(np.count_nonzero(~good))
    if dropped:
        logger.warning("%s: cylinder %s: dropped %d samples with NaN or inf", source, name, dropped)
    time, x, p_a, p_b = time[good], x[good], p_a[good], p_b[good]
    xd = xd[good] if recorded else None
    load = None if load is None else load[good]
    stage = None if stage is None else stage[good]
    cycle = None if cycle is None else cycle[good]
    if time.size < MIN_WINDOW_SAMPLES:
        raise DataError(f"{source}: cylinder {name!r} has {time.size} usable samples; need at least "
                        f"{MIN_WINDOW_SAMPLES}")
    later = first_non_increasing(time)
    if later is not None:
        raise DataError(f"{source}: cylinder {name!r}: time {float(time[later])!r} s of usable sample {later} is not "
                        f"after {float(time[later - 1])!r} s; time must be strictly increasing")
    check_time_unit(time, f"{source}: cylinder {name!r}")
    check_cylinder_units(source, name, {"x": x, "xd": xd, "pa": p_a, "pb": p_b})
    window = max(window_samples_for(DERIVATIVE_WINDOW, median_step(time)), MIN_WINDOW_SAMPLES)
    derivatives = differentiate(x, time, window_samples=window)
    return CylinderSamples(name=name, time=time, x=x, xd=xd if recorded else derivatives.qd,
                           xdd=derivatives.qdd, p_a=p_a, p_b=p_b, load=load, velocity_recorded=recorded,
                           stage=stage, cycle=cycle)


def _read_csv(path: Path, names) -> list[CylinderSamples]:
    header, table, stage, cycle = read_labelled_columns(path)
    time, = (table[:, index] for index in column_indices(path, header, ["time"], "cylinder data"))
    by_name: dict[str, dict[str, np.ndarray]] = {}
    for index, column in enumerate(header):
        prefix, dot, name = column.partition(".")
        if dot and name and prefix in CSV_FIELDS:
            by_name.setdefault(name, {})[prefix] = table[:, index]
        elif column != "time":
            logger.warning("%s: ignoring unknown column %r", path, column)
    match_joints(names, list(by_name), str(path), "the configuration", extra=False, kind="cylinder")
    samples = []
    for name in names:
        columns = by_name[name]
        column_indices(path, header, [f"{prefix}.{name}" for prefix in ("x", "pa", "pb")], f"cylinder {name!r}",
                       f" (x [{_UNITS['x']}], pa and pb [{_UNITS['pa']}])")
        samples.append(_derive(name, str(path), time, columns["x"], columns.get("xd"), columns["pa"],
                               columns["pb"], columns.get("load"), stage, cycle))
    return samples


def _read_bag(path: Path, names, topic: str) -> list[CylinderSamples]:
    states = read_hydraulic_states(path, topic)
    match_joints(names, list(states), f"bag {path}, topic {topic}", "the configuration", extra=False,
                 kind="cylinder")
    samples = []
    for name in names:
        stamps, values = states[name]
        order = np.argsort(stamps, kind="stable")
        stamps, values = stamps[order], values[order]
        keep = np.concatenate([[True], np.diff(stamps) > 0])
        stamps, values = stamps[keep], values[keep]
        load = values[:, 4] if np.all(np.isfinite(values[:, 4])) else None
        samples.append(_derive(name, f"bag {path}", ns_to_seconds(stamps), values[:, 0], values[:, 1],
                               values[:, 2], values[:, 3], load))
    return samples


def _label_by_markers(path: Path, samples, stage, cycles, stage_topic: str) -> list[CylinderSamples]:
    """``samples`` of a bag at ``path`` labelled with the stages and cycles of its markers on ``stage_topic``."""
    try:
        intervals = stage_intervals(read_stage_markers(path, stage_topic))
    except DataError as error:
        raise DataError(f"cannot select stage {stage!r}, cycles {cycles!r} of the cylinder data: no stage markers: "
                        f"{error}") from None
    return [dataclasses.replace(sample, **dict(zip(("stage", "cycle"), label_samples(sample.time, intervals))))
            for sample in samples]


def _select_stages(source: str, samples, stage, cycles) -> list[CylinderSamples]:
    """``samples`` reduced to the given stages and cycles of their labels."""
    selected = []
    for sample in samples:
        keep = stage_mask(sample.time.size, sample.stage, sample.cycle, stage, cycles,
                          f"{source}, cylinder {sample.name!r}")
        logger.info("%s: cylinder %s: %d of %d samples in stage %s, cycles %s", source, sample.name,
                    np.count_nonzero(keep), keep.size, stage, cycles)
        selected.append(dataclasses.replace(sample, **{
            field: None if getattr(sample, field) is None else getattr(sample, field)[keep]
            for field in ("time", "x", "xd", "xdd", "p_a", "p_b", "load", "stage", "cycle")}))
    return selected


def read_cylinder_data(path, names, topic: str = DEFAULT_HYDRAULIC_TOPIC, stage=None, cycles=None,
                       stage_topic: str = DEFAULT_STAGE_TOPIC) -> list[CylinderSamples]:
    """Samples of the cylinders ``names`` (in that order) from a CSV file or a bag directory.

    Velocities the data do not give, and every acceleration, come from a local cubic fit of ``x``
    (:func:`~robot_dynid.recordings.signal_processing.differentiate`, :data:`DERIVATIVE_WINDOW`).

    Parameters
    ----------
    path : path-like
        CSV file or bag directory (module docstring).
    names : sequence of str
        The configured cylinders.
    topic : str
        Bag only: the HydraulicCylinderState topic.
    stage : str or iterable of str, optional
        Keep only samples of these stage kinds or labels (e.g. ``"cylinder"``), by a CSV file's
        ``stage`` column or a bag's ExperimentStage markers on ``stage_topic``; None keeps all.
    cycles : int or iterable of int, optional
        Keep only samples of these cycles (``cycle`` column or markers); None keeps all.
    stage_topic : str
        Bag only: the ExperimentStage topic.

    Raises
    ------
    DataError
        Unreadable file; no ``time`` column; a cylinder of the data not in ``names`` or one of
        ``names`` without data; a missing ``x``/``pa``/``pb`` column (named with its cylinder);
        a unit mistake (module docstring); a stage or cycle asked of a CSV file without that column or
        of a bag without markers, or one that no sample of a cylinder is in (naming the cylinder and
        what there is).
    """
    path = Path(os.fspath(path))
    if not path.exists():
        raise DataError(f"{path} does not exist")
    if path.is_dir() or path.suffix in (".mcap", ".db3"):
        bag = path if path.is_dir() else path.parent
        source, samples = f"bag {bag}", _read_bag(bag, names, topic)
        if stage is not None or cycles is not None:
            samples = _label_by_markers(bag, samples, stage, cycles, stage_topic)
    else:
        source, samples = str(path), _read_csv(path, names)
    return samples if stage is None and cycles is None else _select_stages(source, samples, stage, cycles)
