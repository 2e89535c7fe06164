"""Columns of a long recording kept in a file, not in memory: an hour at 1 kHz of 6 joints is 173 MB per field.

A :class:`StoredColumn` is a read-only float64 array (N, n) whose rows live in an unnamed temporary file in
``tempfile.gettempdir()`` (``TMPDIR``; a tmpfs there keeps them in memory after all), deleted by the system when the
last column using it goes, also when the process is killed. It offers what the reading
pipeline and identification use of an array, and reads only the rows asked for:

- ``column[start:stop]`` is a StoredColumn of those rows (no read); ``np.asarray(column)`` reads its rows;
- ``column[rows]`` with indices or a boolean mask, and ``column[rows, columns]``, read what they select into an
  array; :meth:`StoredColumn.take_rows` gives, beyond :data:`IN_MEMORY_BYTES`, a new StoredColumn written piece
  by piece (what a recording's selections use);
- :meth:`StoredColumn.pieces` yields its rows :data:`PIECE_ROWS` at a time.

Readers gather a field into a :class:`ColumnFile` instead of an array
(:class:`~robot_dynid.recordings.recording.GatheredRows`) when its expected rows exceed :data:`SPILL_BYTES`;
everything after them gives the same numbers from stored columns as from arrays (the tests hold them equal), while
numpy code that needs a whole field at once reads it then (correct, not bounded).
"""
from __future__ import annotations

import os
import tempfile

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError

__all__ = ["SPILL_BYTES", "IN_MEMORY_BYTES", "PIECE_ROWS", "StoredColumn", "ColumnFile", "RowsWriter", "is_stored",
           "piece_ranges", "column_pieces", "stacked", "select_rows", "all_finite", "column_extremes", "float_values",
           "spill"]

SPILL_BYTES = 64 * 2**20
"""A reader keeps a float field of more than this many bytes (8.4 M values: 23 min of 6 joints at 1 kHz) in
a file: its rows are read where they are used."""
IN_MEMORY_BYTES = 32 * 2**20
"""Rows selected from a stored column come as an array up to this size, as a new stored column beyond."""
PIECE_ROWS = 65_536
"""Rows read at once when a stored column is passed over."""
_SPAN_GAP = 256
"""Selected rows fewer than this apart are read in one span (reading the rows between costs less than a read)."""


class _SpillFile:
    """An unnamed temporary file rows are appended to and read from (``os.preadv``: no file position shared)."""

    def __init__(self):
        self._file = tempfile.TemporaryFile(prefix="robot_dynid_columns_")
        self.size = 0
        self._written = False

    def append(self, values: np.ndarray) -> int:
        """Write ``values`` (C order) at the end; their byte offset."""
        offset = self.size
        data = np.ascontiguousarray(values, dtype=np.float64)
        try:
            self._file.seek(offset)
            self._file.write(memoryview(data).cast("B"))
        except OSError as error:
            raise DataError(f"a long recording's fields are kept in files in {tempfile.gettempdir()} (TMPDIR), and "
                            f"writing {data.nbytes} more bytes after {offset} failed: {error.strerror or error}; free "
                            "space there or set TMPDIR to a directory with room (about 50 MB per joint and hour "
                            "at 1 kHz for each field)") from None
        self.size += data.nbytes
        self._written = True
        return offset

    def read(self, offset: int, out: np.ndarray) -> np.ndarray:
        """Fill ``out`` (C-contiguous float64) with the bytes at ``offset``."""
        if self._written:
            self._file.flush()
            self._written = False
        view, done = memoryview(out).cast("B"), 0
        while done < view.nbytes:
            count = os.preadv(self._file.fileno(), [view[done:]], offset + done)
            if count <= 0:
                raise OSError(f"stored column: {view.nbytes - done} bytes missing at offset {offset + done}")
            done += count
        return out


class StoredColumn(np.lib.mixins.NDArrayOperatorsMixin):
    """A read-only float64 array (N, n) kept in a file (module docstring). Arithmetic, numpy functions and
    ndarray methods it does not have itself read it whole and act on the array: correct anywhere, bounded where
    the code takes pieces.

    Attributes
    ----------
    shape : tuple of int
        (N, n).
    """

    ndim = 2
    dtype = np.dtype(np.float64)

    def __init__(self, file: _SpillFile, offset: int, rows: int, columns: int):
        self._file, self._offset = file, offset
        self.shape = (int(rows), int(columns))

    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def nbytes(self) -> int:
        return 8 * self.size

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"StoredColumn(shape={self.shape})"

    def read(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Rows ``start:stop`` as a new array."""
        start, stop, _ = slice(start, stop).indices(self.shape[0])
        out = np.empty((max(stop - start, 0), self.shape[1]))
        if out.size:
            self._file.read(self._offset + 8 * start * self.shape[1], out)
        return out

    def pieces(self, rows: int | None = None):
        """Yield ``(start, stop, rows start:stop as an array)``, ``rows`` (default :data:`PIECE_ROWS`) at a time."""
        for start, stop in piece_ranges(self.shape[0], rows):
            yield start, stop, self.read(start, stop)

    def __array__(self, dtype=None, copy=None):
        values = self.read()
        return values if dtype is None else values.astype(dtype, copy=False)

    def __getitem__(self, key):
        if key is None:
            return np.asarray(self)[None]
        rows, columns = key if isinstance(key, tuple) else (key, slice(None))
        if isinstance(rows, slice) and rows.step in (None, 1) and columns == slice(None):
            start, stop, _ = rows.indices(self.shape[0])
            stop = max(stop, start)
            return StoredColumn(self._file, self._offset + 8 * start * self.shape[1], stop - start, self.shape[1])
        if isinstance(rows, (int, np.integer)):
            return self.read(int(rows), int(rows) + 1 if rows != -1 else None)[0][columns]
        if isinstance(rows, slice) and rows.step in (None, 1):       # a range of rows, some columns: by pieces
            view = self[rows]
            width = np.empty((0, self.shape[1]))[:, columns].shape[1:]
            out = np.empty((view.shape[0],) + width)
            for start, stop, piece in view.pieces():
                out[start:stop] = piece[:, columns]
            return out
        if isinstance(rows, slice):
            rows = np.arange(self.shape[0])[rows]
        rows = np.asarray(rows)
        if rows.dtype == bool:
            if rows.shape != (self.shape[0],):
                raise IndexError(f"a boolean index of shape {rows.shape} for a stored column of {self.shape[0]} rows")
            rows = np.flatnonzero(rows)
        rows = rows.astype(np.int64)
        rows = np.where(rows < 0, rows + self.shape[0], rows)
        if rows.size and (rows.min() < 0 or rows.max() >= self.shape[0]):
            raise IndexError(f"row index out of range for a stored column of {self.shape[0]} rows")
        if rows.ndim == 1:
            return self._take(rows, columns)
        taken = self._take(rows.ravel(), slice(None))
        return np.asarray(taken).reshape(rows.shape + (self.shape[1],))[(Ellipsis, columns)]

    @property
    def all_finite(self) -> bool:
        """Whether every value is finite (found once, piece by piece: the column never changes)."""
        if getattr(self, "_finite", None) is None:
            self._finite = all(validators.all_finite(piece) for _, _, piece in self.pieces())
        return self._finite

    def extremes(self) -> tuple[np.ndarray, np.ndarray]:
        """``(smallest, largest)`` (n,) of each column, NaN ignored, piece by piece."""
        smallest, largest = np.full(self.shape[1], np.nan), np.full(self.shape[1], np.nan)
        for _, _, piece in self.pieces():
            low, high = column_extremes(piece)
            smallest, largest = np.fmin(smallest, low), np.fmax(largest, high)
        return smallest, largest

    def __array_ufunc__(self, ufunc, method, *inputs, **options):
        if any(isinstance(value, StoredColumn) for value in options.get("out", ())):
            raise TypeError("a stored column is read-only")
        inputs = tuple(np.asarray(value) if isinstance(value, StoredColumn) else value for value in inputs)
        return getattr(ufunc, method)(*inputs, **options)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(np.asarray(self), name)

    def take_rows(self, rows):
        """The rows ``rows`` (increasing indices or a boolean mask (N,)): an array, or a StoredColumn when they
        are more than :data:`IN_MEMORY_BYTES` (written a piece at a time)."""
        rows = np.asarray(rows)
        rows = np.flatnonzero(rows) if rows.dtype == bool else rows.astype(np.int64)
        if 8 * rows.size * self.shape[1] <= IN_MEMORY_BYTES:
            return self[rows]
        return spill((self._take_piece(rows[first:first + PIECE_ROWS], slice(None))
                      for first in range(0, rows.size, PIECE_ROWS)), self.shape[1])

    def _take(self, rows: np.ndarray, columns):
        """The ``rows`` (indices) and ``columns`` selected, read a span of rows at a time."""
        out = np.empty((rows.size,) + np.empty((0, self.shape[1]))[:, columns].shape[1:])
        for first, stop in piece_ranges(rows.size):
            out[first:stop] = self._take_piece(rows[first:stop], columns)
        return out

    def _take_piece(self, rows: np.ndarray, columns) -> np.ndarray:
        """``rows`` (any order) read in spans of near rows, each at most PIECE_ROWS long."""
        if rows.size == 0:
            return np.empty((0, self.shape[1]))[:, columns]
        wanted = np.unique(rows)
        starts = [0]
        for first in np.flatnonzero(np.diff(wanted) > _SPAN_GAP) + 1:     # spans apart by more than the gap
            starts.append(int(first))
        starts.append(wanted.size)
        found = np.empty((wanted.size, self.shape[1]))
        for begin, end in zip(starts[:-1], starts[1:]):
            span = wanted[begin:end]
            while span.size:        # at most PIECE_ROWS rows of the file per read
                count = int(np.searchsorted(span, span[0] + PIECE_ROWS))
                found[begin:begin + count] = self.read(int(span[0]), int(span[count - 1]) + 1)[span[:count] - span[0]]
                begin, span = begin + count, span[count:]
        return found[np.searchsorted(wanted, rows)][:, columns]


class ColumnFile:
    """Rows of ``width`` float64 values appended piece by piece to a file; :meth:`column` is a StoredColumn of
    those written so far."""

    def __init__(self, width: int):
        self.width, self.rows = int(width), 0
        self._file = _SpillFile()

    def append(self, values) -> None:
        values = np.asarray(values, dtype=np.float64).reshape(-1, self.width)
        self._file.append(values)
        self.rows += values.shape[0]

    def column(self) -> StoredColumn:
        return StoredColumn(self._file, 0, self.rows, self.width)


class RowsWriter:
    """Rows (N, n) written in order, a piece at a time: into an array, or with ``stored`` into a file (a
    StoredColumn); :meth:`result` is what was written."""

    def __init__(self, shape: tuple[int, int], stored: bool):
        self._file = ColumnFile(shape[1]) if stored else None
        self._array = None if stored else np.empty(shape)

    def put(self, start: int, stop: int, values) -> None:
        """Rows ``start:stop``, the next ones."""
        if self._file is None:
            self._array[start:stop] = values
        else:
            self._file.append(values)

    def result(self):
        return self._array if self._file is None else self._file.column()


def spill(pieces, width: int | None = None) -> StoredColumn:
    """A StoredColumn of the arrays ``pieces`` (m_i, n) one after the other (``width`` n when there may be none)."""
    writer = None if width is None else ColumnFile(width)
    for piece in pieces:
        piece = np.asarray(piece, dtype=np.float64)
        writer = writer or ColumnFile(piece.shape[1])
        writer.append(piece)
    return (writer or ColumnFile(0)).column()


def is_stored(values) -> bool:
    """Whether ``values`` is a :class:`StoredColumn`."""
    return isinstance(values, StoredColumn)


def stacked(fields):
    """The fields (N_i, n) one after the other: the one field itself, a StoredColumn where one is stored (written a
    piece at a time), else ``np.vstack``."""
    fields = list(fields)
    if len(fields) == 1:
        return fields[0]
    if any(map(is_stored, fields)):
        return spill((piece for field in fields for _, _, piece in column_pieces(field)), fields[0].shape[1])
    return np.vstack(fields)


def select_rows(values, rows):
    """``values[rows]`` of an array, or of a StoredColumn (:meth:`StoredColumn.take_rows`; a slice: a view)."""
    if is_stored(values) and not isinstance(rows, slice):
        return values.take_rows(rows)
    return values[rows]


def all_finite(values) -> bool:
    """Whether every value of an array or a StoredColumn is finite (:func:`robot_dynid.validators.all_finite`)."""
    return values.all_finite if is_stored(values) else validators.all_finite(values)


def column_extremes(values) -> tuple[np.ndarray, np.ndarray]:
    """``(smallest, largest)`` (n,) of each column of ``values`` (N, n), N >= 1, an array or a StoredColumn, NaN
    ignored (NaN where a column is all NaN). Reduced over rows :data:`_EXTREME_ROWS` at a time side by side: a
    reduction along the first axis of an (N, n) array runs n elements per step, ten times slower."""
    if is_stored(values):
        return values.extremes()
    n = values.shape[0] - values.shape[0] % _EXTREME_ROWS
    wide = values[:n].reshape(-1, _EXTREME_ROWS * values.shape[1])
    extremes = []
    for reduce in (np.fmin.reduce, np.fmax.reduce):
        partial = reduce(wide, axis=0).reshape(_EXTREME_ROWS, -1) if n else values[:0]
        extremes.append(reduce(np.concatenate([partial, values[n:]]), axis=0))
    return extremes[0], extremes[1]


_EXTREME_ROWS = 256


def float_values(values):
    """``values`` as a float array, a StoredColumn as it is (its rows are read where they are used)."""
    return values if is_stored(values) else np.asarray(values, dtype=float)


def piece_ranges(n_rows: int, rows: int | None = None):
    """Yield ``(start, stop)`` of ``n_rows`` rows, ``rows`` (default :data:`PIECE_ROWS`) at a time."""
    rows = PIECE_ROWS if rows is None else rows
    for start in range(0, n_rows, rows):
        yield start, min(start + rows, n_rows)


def column_pieces(values, rows: int | None = None):
    """Yield ``(start, stop, values[start:stop] as an array)`` of an array or a StoredColumn, ``rows`` (default
    :data:`PIECE_ROWS`) at a time (an array's pieces are views)."""
    for start, stop in piece_ranges(len(values), rows):
        yield start, stop, np.asarray(values[start:stop])
