"""Stored columns (fields of a long recording kept in a file) against the arrays they hold: every selection the
pipeline makes gives the array's values, pieces cover the rows once, arithmetic and ndarray methods act on the
values (read whole), and writing into one refuses."""
import numpy as np
import pytest

from robot_dynid import stored_columns
from robot_dynid.recordings.recording import GatheredRows, Recording
from robot_dynid.stored_columns import StoredColumn, column_pieces, spill


@pytest.fixture
def values():
    return np.random.default_rng(2).normal(size=(1000, 3))


def stored(values, piece=97):
    return spill(values[start:start + piece] for start in range(0, len(values), piece))


def test_a_stored_column_gives_the_arrays_values_for_every_selection(values, monkeypatch):
    column = stored(values)
    assert column.shape == values.shape and len(column) == 1000
    np.testing.assert_array_equal(np.asarray(column), values)
    view = column[100:350]
    assert isinstance(view, StoredColumn)
    np.testing.assert_array_equal(np.asarray(view), values[100:350])
    np.testing.assert_array_equal(np.asarray(view[10:20]), values[110:120])
    rows = np.array([999, 0, 5, 5, 400, -1])
    np.testing.assert_array_equal(column[rows], values[rows])
    np.testing.assert_array_equal(column[rows, 1], values[rows, 1])
    np.testing.assert_array_equal(column[:, 2], values[:, 2])
    np.testing.assert_array_equal(column[7], values[7])
    np.testing.assert_array_equal(column[7, 1], values[7, 1])
    block_rows = np.arange(5)[:, None] * 100 + np.arange(20)       # spread blocks: (blocks, length) rows
    np.testing.assert_array_equal(column[block_rows], values[block_rows])
    mask = values[:, 0] > 0.0
    np.testing.assert_array_equal(column[mask], values[mask])
    monkeypatch.setattr(stored_columns, "IN_MEMORY_BYTES", 8 * 3 * 100)
    taken = column.take_rows(mask)
    assert isinstance(taken, StoredColumn)      # more rows than IN_MEMORY_BYTES: stored again
    np.testing.assert_array_equal(np.asarray(taken), values[mask])
    assert isinstance(column.take_rows(np.arange(10)), np.ndarray)
    with pytest.raises(IndexError, match="out of range"):
        column[np.array([1000])]
    # what the pipeline does not take piece by piece still works: on the whole column, read
    assert (column == values).all() and np.array_equal(np.abs(column - values), np.zeros_like(values))
    np.testing.assert_array_equal(column.T, values.T)
    np.testing.assert_array_equal(column.mean(axis=0), values.mean(axis=0))
    with pytest.raises(TypeError, match="read-only"):
        np.add(values, 1.0, out=column)


def test_pieces_cover_the_rows_once_and_reductions_see_every_value(values):
    values = values.copy()
    values[617, 1] = np.nan
    column = stored(values)
    starts = [(start, stop) for start, stop, _ in column_pieces(column, 128)]
    assert starts[0][0] == 0 and starts[-1][1] == 1000
    assert all(stop == next_start for (_, stop), (next_start, _) in zip(starts, starts[1:]))
    for start, stop, piece in column_pieces(column, 128):
        np.testing.assert_array_equal(piece, values[start:stop])
    assert not column.all_finite and stored(np.ones((10, 2))).all_finite
    smallest, largest = column.extremes()
    np.testing.assert_array_equal(smallest, np.nanmin(values, axis=0))
    np.testing.assert_array_equal(largest, np.nanmax(values, axis=0))


def test_gathered_rows_keep_fields_beyond_the_threshold_in_files(values, monkeypatch):
    """A reader's gathered fields: those of more than SPILL_BYTES (for the rows expected) in files, the rest in
    arrays; a recording made of them holds the same values and selects the same rows."""
    monkeypatch.setattr(stored_columns, "SPILL_BYTES", 8 * 3 * 500)
    gathered = GatheredRows(1000)
    time = np.arange(1000) * 0.001
    for start in range(0, 1000, 300):
        gathered.add(time=time[start:start + 300], q=values[start:start + 300],
                     tau=values[start:start + 300, :1] * 2.0)
    columns = gathered.columns()
    assert isinstance(columns["q"], StoredColumn)
    assert isinstance(columns["time"], np.ndarray) and isinstance(columns["tau"], np.ndarray)   # 1 value a row
    with pytest.raises(ValueError, match=r"float64 rows of shape \(3,\)"):
        gathered.add(time=time[:2], q=np.ones((2, 4)), tau=np.ones((2, 1)))
    recording = Recording(("a", "b", "c"), columns["time"], columns["q"], tau=values)
    assert isinstance(recording.q, StoredColumn)
    np.testing.assert_array_equal(np.asarray(recording.take(np.arange(200, 700)).q), values[200:700])
    np.testing.assert_array_equal(np.asarray(recording.time_window(0.1, 0.2).q), values[100:200])


def test_a_full_disk_is_an_error_naming_the_directory_and_the_way_out(monkeypatch, tmp_path):
    """Writing a field's file where the disk is full (here /dev/full, which refuses every write) says where the
    files go and how to give them room, not a traceback."""
    from robot_dynid.errors import DataError
    full = open("/dev/full", "w+b")
    monkeypatch.setattr(stored_columns.tempfile, "TemporaryFile", lambda **options: full)
    with pytest.raises(DataError, match=r"kept in files in .* \(TMPDIR\).*No space left on device.*set TMPDIR"):
        spill([np.ones((200_000, 6))])
