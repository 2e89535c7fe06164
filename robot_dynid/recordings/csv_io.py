"""CSV files of recordings and torques.

Format: comma-separated, one header line, one sample per line, no comment lines. Columns, in
any order:

- ``time`` [s] (required), strictly increasing;
- per joint ``q.<name>`` [rad; m for a prismatic joint] (required unless given motor-side),
  ``qd.<name>`` [rad/s], ``qdd.<name>`` [rad/s^2], ``tau.<name>`` [N m; N], ``temperature.<name>``
  [deg C]; apart from ``q``, each group is given for every joint or for none (the joint name is
  everything after the first dot);
- per motor of the robot's transmission (motor-side data, :mod:`robot_dynid.recordings.motor_side`):
  ``qm.<motor>`` [rad at the motor], ``qdm.<motor>`` [rad/s], ``qddm.<motor>`` [rad/s^2], and
  ``taum.<motor>`` [N m at the motor] or ``current.<motor>`` [A] (read with the transmission's
  torque_constants [N m/A]), each group for every motor or for none, converted to the joint side
  through ``qm = T q`` and ``tau = T^T tau_m``. Each quantity (positions, velocities,
  accelerations, torques) comes from one side: ``q`` with ``qm`` (or ``tau`` with ``taum``) is an
  error, joint positions with motor torques are fine;
- ``stage``: stage label (see :mod:`robot_dynid.recordings.recording`), empty outside every stage;
- ``cycle``: integer cycle index, empty or -1 outside every cycle.

A byte-order mark at the start (as spreadsheet programs write) is ignored. Files above
:data:`~robot_dynid.input_files.MAX_RECORDING_BYTES` (8 GiB) and special files (FIFOs, devices) are
refused before they are opened.

Values are parsed as float (``nan``, ``inf`` accepted; an empty cell is NaN). Rows holding
NaN or inf in a used column are dropped and counted in ``Recording.n_dropped``. The writers
print floats with Python's shortest round-trip representation, so reading a written file gives
back identical values, and the same data always gives the same bytes.
"""
from __future__ import annotations

import csv
import dataclasses
import itertools
import logging
import warnings
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError
from robot_dynid.input_files import MAX_RECORDING_BYTES, check_input_file
from robot_dynid.joint_names import NameMatchError, match_joints, unique_names
from robot_dynid.recordings.motor_side import (MOTOR_FIELDS, check_joint_count, joint_values, require_torque_constants,
                                               require_transmission)
from robot_dynid.recordings.recording import (JOINT_FIELDS, DropCounter, GatheredRows, Recording, describe_dropped,
                                              hand_over)
from robot_dynid.recordings.stages import NO_CYCLE, check_stage_label
from robot_dynid.stored_columns import is_stored, piece_ranges

__all__ = ["CHUNK_ROWS", "column_indices", "read_labelled_columns", "write_columns", "CsvChunk", "CsvChunks",
           "read_csv", "write_csv", "write_torques_csv"]

logger = logging.getLogger(__name__)

CHUNK_ROWS = 65536
"""Data rows parsed (and given by :class:`CsvChunks`) at a time."""


def _parse_header(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        header = next(csv.reader(handle), None)
    if not header:
        raise DataError(f"{path} is empty; expected a header line starting with 'time'")
    return list(unique_names([name.strip() for name in header], f"{path}: header", "column"))


def column_indices(path, columns: Sequence[str], needed: Sequence[str], owner: str, hint: str = "") -> list[int]:
    """Index in ``columns`` (a header) of each of ``needed``, in their order.

    Raises
    ------
    DataError
        ``"<path> is missing column(s) [...]; <owner> needs [...]"`` and ``hint``
        (:func:`~robot_dynid.joint_names.match_joints`).
    """
    try:
        return match_joints(needed, columns, str(path), owner, kind="column")
    except NameMatchError as error:
        raise DataError(f"{error}{hint}") from None


_QUANTITY = {"q": "positions", "qd": "velocities", "qdd": "accelerations", "tau": "torques",
             "temperature": "temperatures"}


def _group(field: str) -> str:
    return f"'{field}.<motor>'" if field in MOTOR_FIELDS else f"'{field}.<joint>'"


def _column_layout(path: Path, columns: list[str], joint_names: Sequence[str] | None, require_tau: bool,
                   transmission=None) -> tuple[tuple[str, ...], dict[str, tuple[str, list[str]] | None]]:
    """Joint order and, per field of JOINT_FIELDS, the field it is read from (itself or a motor-side one of
    MOTOR_FIELDS) and that field's column names, in joint (motor) order; None: field absent."""
    column_indices(path, columns, ["time"], "a recording")
    by_field: dict[str, dict[str, str]] = {field: {} for field in (*JOINT_FIELDS, *MOTOR_FIELDS)}
    unknown_columns = []
    for column in columns:
        field, dot, name = column.partition(".")
        if dot and name and field in by_field:
            by_field[field][name] = column
        elif column not in ("time", "stage", "cycle"):
            unknown_columns.append(column)
    if unknown_columns:
        logger.warning("%s: ignoring unknown column(s) %s", path, unknown_columns)
    motor_fields = [field for field in MOTOR_FIELDS if by_field[field]]
    motors: tuple[str, ...] = ()
    if motor_fields:
        transmission = require_transmission(
            transmission, str(path), "columns " + ", ".join(_group(field) for field in motor_fields),
            "joint-side columns q.<joint>, qd.<joint>, qdd.<joint>, tau.<joint>")
        check_joint_count(transmission, joint_names, str(path))
        motors = transmission.motor_names
        others = sorted({motor for field in motor_fields for motor in by_field[field]} - set(motors))
        if others:
            logger.warning("%s: ignoring columns of motor(s) %s not in the transmission's motors %s", path, others,
                           list(motors))
    if joint_names is None:
        joints = tuple(by_field["q"])
        if not joints:
            raise DataError(f"{path}: no 'q.<joint>' column; header has {columns}")
    else:
        joints = tuple(joint_names)
        others = sorted({joint for field in JOINT_FIELDS for joint in by_field[field]} - set(joints))
        if others:
            logger.warning("%s: ignoring columns of joint(s) %s not in joint_names %s", path,
                           others, list(joints))
    layout: dict[str, tuple[str, list[str]] | None] = {}
    for field in JOINT_FIELDS:
        sides = [field] + [motor_field for motor_field, joint_field in MOTOR_FIELDS.items() if joint_field == field]
        given = [side for side in sides
                 if any(name in by_field[side] for name in (motors if side in MOTOR_FIELDS else joints))]
        if len(given) > 1:
            raise DataError(f"{path}: {_QUANTITY[field]} given twice, as {' and '.join(map(_group, given))} "
                            "columns; give each quantity from one side only (joint or motor)")
        if not given and not (field in ("q", "tau") and (field == "q" or require_tau)):
            layout[field] = None
            continue
        source = given[0] if given else field
        names = motors if source in MOTOR_FIELDS else joints
        what = "motor" if source in MOTOR_FIELDS else "joint"
        hint = (" (or, motor-side, 'qm.<motor>' for every motor of the transmission)" if not given and field == "q" else
                "" if MOTOR_FIELDS.get(source, source) in ("q", "tau") else
                f" (give '{source}.<{what}>' for every {what} or for none)")
        column_indices(path, columns, [f"{source}.{name}" for name in names], f"reading {_QUANTITY[field]}", hint)
        if source == "current":
            require_torque_constants(transmission, str(path), "columns 'current.<motor>'",
                                     "motor torques as taum.<motor> columns [N m]")
        layout[field] = (source, [by_field[source][name] for name in names])
    return joints, layout


def _data_line_numbers(path: Path) -> np.ndarray:
    """1-based line numbers of the data rows (non-blank lines after the header)."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        next(reader, None)
        return np.array([reader.line_num for row in reader if row], dtype=np.int64)


def _parse_cell(path: Path, line: int, column: str, cell: str) -> float:
    if not cell.strip():
        return np.nan
    try:
        return float(cell)
    except ValueError:
        raise DataError(f"{path}, line {line}: column {column!r} holds {cell!r}, not a "
                        "number") from None


def _python_blocks(path: Path, columns: list[str], numeric: list[int], stage_index: int | None, rows: int,
                   skip: int = 0) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
    """Slow, exact parser, ``rows`` data rows at a time after the first ``skip``: empty cells are NaN; errors name
    the line and column."""
    values, stages, seen = [], [], 0
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        next(reader)
        for row in reader:
            if not row:
                continue
            if len(row) != len(columns):
                raise DataError(f"{path}, line {reader.line_num}: {len(row)} fields, expected "
                                f"{len(columns)} (header {columns})")
            seen += 1
            if seen <= skip:
                continue
            values.append([_parse_cell(path, reader.line_num, columns[i], row[i]) for i in numeric])
            if stage_index is not None:
                stages.append(row[stage_index].strip())
            if len(values) == rows:
                yield np.array(values, dtype=np.float64), np.array(stages, dtype=str) if stage_index is not None \
                    else None
                values, stages = [], []
    if values:
        yield np.array(values, dtype=np.float64), np.array(stages, dtype=str) if stage_index is not None else None


_ARROW_MIN_BYTES = 16 * 1024 * 1024
"""Files from this size [bytes] on are parsed by pyarrow's CSV reader when it is installed (several times
faster than numpy's loadtxt, BENCHMARKS.md, files); smaller ones by loadtxt, quicker than importing pyarrow."""


def _table_blocks(path: Path, columns: list[str], numeric: list[int], stage_index: int | None,
                  rows: int = CHUNK_ROWS) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
    """Numeric columns (m, len(numeric)) and the stage column (m,) of at most ``rows`` data rows at a time, parsed
    by a C parser (pyarrow's or numpy's); a file either refuses is read by the exact Python parser from the
    first row not yet given, which names the line and column of a bad cell."""
    given = 0
    try:
        parse = _arrow_blocks if path.stat().st_size >= _ARROW_MIN_BYTES and _arrow() is not None else _numpy_blocks
        for table, stages in parse(path, columns, numeric, stage_index, rows):
            given += table.shape[0]
            yield table, stages
    except ValueError:      # loadtxt's, pyarrow's ArrowInvalid, a UnicodeDecodeError: the exact parser says what
        yield from _python_blocks(path, columns, numeric, stage_index, rows, skip=given)


def _arrow():
    """pyarrow's csv module, or None when pyarrow is not installed."""
    try:
        import pyarrow.csv
    except ImportError:
        return None
    return pyarrow.csv


def _arrow_blocks(path: Path, columns: list[str], numeric: list[int], stage_index: int | None, rows: int):
    import pyarrow
    arrow_csv = _arrow()
    names = [f"c{index}" for index in range(len(columns))]
    types = {names[index]: pyarrow.float64() for index in numeric}
    if stage_index is not None:
        types[names[stage_index]] = pyarrow.string()
    reader = arrow_csv.open_csv(
        path, read_options=arrow_csv.ReadOptions(skip_rows=1, column_names=names, block_size=max(1 << 20, 64 * rows)),
        convert_options=arrow_csv.ConvertOptions(column_types=types, include_columns=list(types), null_values=[""],
                                                 strings_can_be_null=False, quoted_strings_can_be_null=False))
    for whole in reader:
        for start in range(0, whole.num_rows, rows):
            yield _arrow_arrays(whole.slice(start, rows), names, numeric, stage_index)


def _arrow_arrays(batch, names: list[str], numeric: list[int], stage_index: int | None):
    """The numeric columns (m, len(numeric)) and stage labels (m,) of a pyarrow record batch."""
    table = np.column_stack([batch.column(names[index]).to_numpy(zero_copy_only=False) for index in numeric]) \
        if numeric else np.empty((batch.num_rows, 0))
    stages = None if stage_index is None else np.char.strip(np.array(
        batch.column(names[stage_index]).to_pylist(), dtype=str).reshape(-1))
    return table.astype(np.float64, copy=False).reshape(batch.num_rows, len(numeric)), stages


def _numpy_blocks(path: Path, columns: list[str], numeric: list[int], stage_index: int | None, rows: int):
    options = dict(delimiter=",", comments=None, quotechar='"')
    with path.open(newline="", encoding="utf-8-sig") as handle, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        next(handle)
        while True:
            lines = list(itertools.islice(handle, rows))
            if not lines:
                return
            table = np.loadtxt(lines, usecols=numeric, dtype=np.float64, ndmin=2, **options)
            stages = None if stage_index is None else np.char.strip(np.loadtxt(
                lines, usecols=[stage_index], dtype=str, ndmin=1, **options))
            yield table.reshape(-1, len(numeric)), stages


def _newline_count(path: Path, block: int = 1 << 20) -> int:
    r"""Newline bytes in the file at ``path``: at least its data rows when its lines end in ``\n`` or ``\r\n``."""
    buffer = bytearray(block)
    data, newline = np.frombuffer(buffer, dtype=np.uint8), np.zeros(block, dtype=bool)
    count = 0
    with path.open("rb", buffering=0) as handle:
        while size := handle.readinto(buffer):
            count += int(np.count_nonzero(np.equal(data[:size], ord("\n"), out=newline[:size])))
    return count


class _StageCodes:
    """The stage labels of a file's chunks as int32 codes of the labels seen so far, made into one str array at the
    end, of the widest dtype of the chunks (as their concatenation would be)."""

    def __init__(self):
        self._codes: dict[str, int] = {}
        self._dtype = np.dtype("<U1")

    def codes(self, stages: np.ndarray) -> np.ndarray:
        """Integer label codes, one per entry of ``stages`` (m,)."""
        self._dtype = np.result_type(self._dtype, stages.dtype)
        labels, inverse = np.unique(stages, return_inverse=True)
        return np.array([self._codes.setdefault(str(label), len(self._codes)) for label in labels.tolist()],
                        dtype=np.int32)[inverse.reshape(-1)]

    def labels(self, codes: np.ndarray) -> np.ndarray:
        """Stage labels, one per entry of ``codes`` (m,)."""
        return np.array(list(self._codes), dtype=self._dtype)[codes]


def _read_table(path: Path, columns: list[str], numeric: list[int],
                stage_index: int | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Numeric columns (N, len(numeric)) and the stage column (N,) of the data rows."""
    gathered, labels = GatheredRows(_newline_count(path)), _StageCodes()
    for table, stages in _table_blocks(path, columns, numeric, stage_index, CHUNK_ROWS):
        gathered.add(table=table, **({} if stages is None else {"stage": labels.codes(stages)}))
    if not gathered.rows:
        raise DataError(f"{path} has a header but no data rows")
    arrays = gathered.columns()
    return arrays["table"], None if stage_index is None else labels.labels(arrays["stage"])


def _cycle_column(path: Path, raw_cycle: np.ndarray, first_row: int = 0) -> np.ndarray:
    """The ``cycle`` column as integers, NaN (empty) as NO_CYCLE; DataError naming the line of a bad cell (the
    cells from data row ``first_row`` on)."""
    raw_cycle = np.where(np.isnan(raw_cycle), NO_CYCLE, raw_cycle)
    bad = np.flatnonzero(~np.isfinite(raw_cycle) | (raw_cycle != np.round(raw_cycle)) | (raw_cycle < NO_CYCLE))
    if bad.size:
        raise DataError(f"{path}, line {_data_line_numbers(path)[first_row + bad[0]]}: column 'cycle' "
                        f"holds {float(raw_cycle[bad[0]])!r}; expected an integer >= 0, "
                        "or -1 or empty for no cycle")
    return raw_cycle.astype(np.int64)


def _stage_column(path: Path, stages, first_row: int = 0) -> np.ndarray:
    """The ``stage`` column as str labels; DataError naming the line of the first bad label (the labels from data
    row ``first_row`` on)."""
    stages = np.asarray(stages, dtype=str)
    for label in np.unique(stages):
        try:
            check_stage_label(str(label))
        except DataError as error:
            row = int(np.flatnonzero(stages == label)[0])
            raise DataError(f"{path}, line {_data_line_numbers(path)[first_row + row]}: column 'stage': {error}") \
                from None
    return stages


def read_labelled_columns(path) -> tuple[list[str], np.ndarray, np.ndarray | None, np.ndarray | None]:
    """A CSV file of numeric columns (one header line; an empty cell is NaN) that may also have the
    ``stage`` and ``cycle`` columns of a recording.

    Returns the header and table (N, k) of the numeric columns other than ``cycle``, the stage labels
    (N,) of str and the cycles (N,) of int (None when the column is absent), checked as
    :func:`read_csv` checks them. DataError naming the file (and line and column) when it cannot be
    parsed.
    """
    path = Path(path)
    check_input_file(path, "CSV file", DataError, MAX_RECORDING_BYTES)
    try:
        return _read_labelled_columns(path)
    except UnicodeDecodeError as error:
        raise DataError(f"{path} is not UTF-8 text (byte {error.start}): is it a CSV file?") from None


def _read_labelled_columns(path: Path):
    columns = _parse_header(path)
    numeric = [name for name in columns if name != "stage"]
    stage_index = columns.index("stage") if "stage" in columns else None
    table, stages = _read_table(path, columns, [i for i, name in enumerate(columns) if name != "stage"], stage_index)
    cycle = None
    if "cycle" in numeric:
        cycle = _cycle_column(path, table[:, numeric.index("cycle")])
        table = np.delete(table, numeric.index("cycle"), axis=1)
        numeric.remove("cycle")
    return numeric, table, None if stages is None else _stage_column(path, stages), cycle


def write_columns(path, header: Sequence[str], values) -> None:
    """Write numeric columns ``values`` (N, k) under ``header`` (k names), which
    :func:`read_labelled_columns` reads."""
    values = validators.array(values, "values", shape=(None, len(header)), axes=("rows", "columns"), finite=False)
    _write_table(path, list(header), [values])


@dataclasses.dataclass(frozen=True)
class CsvChunk:
    """Rows of a recording CSV file, joint side (motor-side columns converted, their non-finite rows left out).

    Attributes
    ----------
    time : ndarray, shape (m,)
        [s], strictly increasing over the file where finite.
    q, qd, qdd, tau, temperature : ndarray, shape (m, n), or None
        As :class:`~robot_dynid.recordings.recording.Recording`'s (None: not in the file); NaN for an empty cell.
    stage : ndarray of str, shape (m,), or None
    cycle : ndarray of int, shape (m,), or None
    """

    time: np.ndarray
    q: np.ndarray | None
    qd: np.ndarray | None
    qdd: np.ndarray | None
    tau: np.ndarray | None
    temperature: np.ndarray | None
    stage: np.ndarray | None
    cycle: np.ndarray | None


class CsvChunks:
    """The samples of a recording CSV file (format in the module docstring), at most :data:`CHUNK_ROWS` rows at a
    time, in bounded memory, checked as :func:`read_csv` checks them: the iterator it is built on.

    Parameters
    ----------
    path, joint_names, require_tau, transmission
        As :func:`read_csv`.
    rows : int
        Data rows per chunk, at most.

    Attributes
    ----------
    joint_names : tuple of str
        The joints of the columns, in order.
    motor_side : dict
        Joint field -> the motor-side field it is read from (``q``: ``qm``, ...).
    dropped : DropCounter
        Rows left out so far (non-finite motor-side values), by reason.
    n_rows : int
        Data rows read so far.

    Raises
    ------
    DataError
        As :func:`read_csv`; the column layout when made, the cells as they are read.
    """

    def __init__(self, path, joint_names: Sequence[str] | None = None, require_tau: bool = False, transmission=None,
                 rows: int = CHUNK_ROWS):
        path = self.path = Path(path)
        if not path.exists():
            raise DataError(f"CSV file {path} does not exist")
        check_input_file(path, "CSV file", DataError, MAX_RECORDING_BYTES)
        self.rows = rows
        self.transmission = transmission
        try:
            self.columns = _parse_header(path)
        except UnicodeDecodeError as error:
            raise _not_utf8(path, error) from None
        self.joint_names, self._layout = _column_layout(path, self.columns, joint_names, require_tau, transmission)
        self._numeric = ["time"] + [name for entry in self._layout.values() if entry is not None for name in entry[1]]
        if "cycle" in self.columns:
            self._numeric.append("cycle")
        self._stage_index = self.columns.index("stage") if "stage" in self.columns else None
        self.motor_side = {field: self._layout[field][0] for field in JOINT_FIELDS
                           if self._layout[field] is not None and self._layout[field][0] in MOTOR_FIELDS}
        self.dropped = DropCounter()
        self.n_rows = 0

    def __iter__(self) -> Iterator[CsvChunk]:
        try:
            yield from self._chunks()
        except UnicodeDecodeError as error:
            raise _not_utf8(self.path, error) from None

    def _chunks(self) -> Iterator[CsvChunk]:
        from robot_dynid.recordings.signal_processing import first_non_increasing
        path = self.path
        position = {name: i for i, name in enumerate(self._numeric)}
        last = None         # (time [s], row) of the last finite stamp before this chunk
        for table, stages in _table_blocks(path, self.columns, column_indices(
                path, self.columns, self._numeric, "reading the recording"), self._stage_index, self.rows):
            first_row, self.n_rows = self.n_rows, self.n_rows + table.shape[0]
            time = table[:, 0]
            finite = np.flatnonzero(np.isfinite(time))
            finite_rows = first_row + finite
            rows = finite_rows if last is None else np.concatenate(([last[1]], finite_rows))
            stamps = time[finite] if last is None else np.concatenate(([last[0]], time[finite]))
            offending = first_non_increasing(stamps)
            if offending is not None:
                lines = _data_line_numbers(path)
                row, previous = rows[offending], rows[offending - 1]
                raise DataError(f"{path}, line {lines[row]}: time {float(stamps[offending])!r} s is not "
                                f"after {float(stamps[offending - 1])!r} s on line {lines[previous]}; time "
                                "must be strictly increasing")
            if finite.size:
                last = (float(time[finite[-1]]), int(finite_rows[-1]))
            fields = {field: None if self._layout[field] is None else
                      table[:, [position[name] for name in self._layout[field][1]]] for field in JOINT_FIELDS}
            cycle = None if "cycle" not in position else _cycle_column(path, table[:, position["cycle"]], first_row)
            stages = None if stages is None else _stage_column(path, stages, first_row)
            keep = np.ones(time.size, dtype=bool)
            for field, source in self.motor_side.items():   # rows with NaN / inf in a motor column: named by it
                bad = keep & np.isfinite(time) & ~np.isfinite(fields[field]).all(axis=1)
                if bad.any():
                    self.dropped.add(f"non-finite {source}", float(time[np.argmax(bad)]), int(np.count_nonzero(bad)))
                    keep &= ~bad
            if not keep.all():
                time, cycle = time[keep], None if cycle is None else cycle[keep]
                stages = None if stages is None else stages[keep]
                fields = {field: None if values is None else values[keep] for field, values in fields.items()}
            for field, source in self.motor_side.items():
                fields[field] = joint_values(source, fields[field], self.transmission)
            yield CsvChunk(time=time, stage=stages, cycle=cycle, **fields)


def _not_utf8(path: Path, error: UnicodeDecodeError) -> DataError:
    return DataError(f"{path} is not UTF-8 text (byte {error.start}): is it a CSV file?")


def read_csv(path, joint_names: Sequence[str] | None = None,
             require_tau: bool = False, transmission=None) -> Recording:
    """Recording from a CSV file (format in the module docstring), read by :class:`CsvChunks` (:data:`CHUNK_ROWS`
    rows at a time) into arrays made once for as many rows as the file has lines.

    Parameters
    ----------
    path : str or Path
        The CSV file.
    joint_names : sequence of str, optional
        Joints to read, in the order of the result's columns; columns of other joints are
        ignored with a warning. Default: the joints of the ``q.<name>`` columns, in file order.
    require_tau : bool
        Require torques (``tau.<joint>``, ``taum.<motor>`` or ``current.<motor>``); otherwise a
        file without any gives ``tau = None``.
    transmission : Transmission, optional
        The robot's (:class:`robot_dynid.model.transmission.Transmission`), to read motor-side
        columns; ``joint_names`` must then be the robot's joints, in its order (T's columns).

    Raises
    ------
    DataError
        No ``time`` column; a missing ``q.<joint>`` / ``tau.<joint>`` (or a partial group)
        column, named; a quantity given both joint- and motor-side; motor-side columns without a
        transmission, or currents without its torque constants; a cell that is not a number, a
        bad stage label or a non-integer cycle (line and column named); time not strictly
        increasing (line named); rows of unequal length.
    """
    chunks = CsvChunks(path, joint_names, require_tau, transmission, rows=CHUNK_ROWS)
    path = chunks.path
    gathered, labels = GatheredRows(_newline_count(path)), _StageCodes()
    for chunk in chunks:
        gathered.add(**{name: getattr(chunk, name) for name in ("time", *JOINT_FIELDS, "cycle")
                        if getattr(chunk, name) is not None},
                     **({} if chunk.stage is None else {"stage": labels.codes(chunk.stage)}))
    if not chunks.n_rows:
        raise DataError(f"{path} has a header but no data rows")
    if not gathered.rows:
        raise DataError(f"all {chunks.n_rows} samples of {path} hold NaN or inf "
                        f"({describe_dropped(chunks.dropped.counts)})")
    columns = dict.fromkeys(("time", *JOINT_FIELDS, "stage", "cycle")) | gathered.columns()
    del gathered
    if columns["stage"] is not None:
        columns["stage"] = labels.labels(columns["stage"])
    hand_over(*(columns[name] for name in ("time", *JOINT_FIELDS)))     # this reader's own: shared, not copied
    recording = Recording.from_arrays(joint_names=chunks.joint_names, source=str(path),
                                      dropped=chunks.dropped.counts, **columns)
    converted = f"; {', '.join(chunks.motor_side.values())} converted to the joint side through the transmission"
    logger.info("read %d samples of %d joints from %s (%d dropped)%s", recording.n_samples,
                len(chunks.joint_names), path, recording.n_dropped, converted if chunks.motor_side else "")
    return recording


def _write_table(path, header: list[str], numeric, labels: Sequence[np.ndarray] = ()) -> None:
    """Write numeric columns, the blocks ``numeric`` (N, k_i) side by side (arrays or StoredColumns, read a chunk of
    rows at a time), and then string/int label columns (N,) each."""
    with Path(path).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        for first, stop in piece_ranges(len(numeric[0])):
            rows = np.hstack([np.asarray(block[first:stop]) for block in numeric]).tolist()
            if labels:
                extra = zip(*(label[first:stop].tolist() for label in labels))
                rows = [row + list(more) for row, more in zip(rows, extra)]
            writer.writerows(rows)


def write_csv(path, recording: Recording) -> None:
    """Write a recording in the CSV format of :func:`read_csv` (fields that are None are left
    out). Reading the file back gives identical arrays."""
    header = ["time"]
    blocks = [recording.time[:, None]]
    for field in JOINT_FIELDS:
        value = getattr(recording, field)
        if value is not None:
            header += [f"{field}.{joint}" for joint in recording.joint_names]
            blocks.append(value)
    labels = []
    if recording.stage is not None:
        header.append("stage")
        labels.append(recording.stage)
    if recording.cycle is not None:
        header.append("cycle")
        labels.append(recording.cycle)
    _write_table(path, header, blocks, labels)
    logger.info("wrote %d samples to %s", recording.n_samples, path)


def write_torques_csv(path, time, joint_names: Sequence[str], tau) -> None:
    """Write torques as columns ``time`` [s] and ``tau.<name>`` [N m].

    Parameters
    ----------
    time : array_like, shape (N,)
        Sample times [s].
    joint_names : sequence of str
        n joint names, the order of tau's columns.
    tau : array_like, shape (N, n)
        Joint torques [N m].
    """
    joint_names = [str(name) for name in joint_names]
    time = validators.array(time, "time", shape=(None,), axes=("samples",), finite=False)
    if not is_stored(tau):
        tau = validators.array(tau, "tau", shape=(time.size, len(joint_names)), axes=("samples", "joints"),
                               finite=False)
    elif tau.shape != (time.size, len(joint_names)):
        raise DataError(f"tau has shape {tau.shape}, expected ({time.size}, {len(joint_names)})")
    _write_table(path, ["time"] + [f"tau.{name}" for name in joint_names], [time[:, None], tau])
