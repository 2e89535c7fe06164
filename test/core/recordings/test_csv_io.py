"""CSV reading and writing: column layout, exact round trip, errors naming line and column."""
import logging
import os

import numpy as np
import pytest
from blocking import returns_within

from robot_dynid.errors import DataError
from robot_dynid.input_files import MAX_RECORDING_BYTES
from robot_dynid.recordings.csv_io import read_csv, read_labelled_columns, write_csv, write_torques_csv
from robot_dynid.recordings.recording import Dropped, Recording


def write_text(tmp_path, text, name="run.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_reads_columns_in_any_order_with_joints_in_q_column_order(tmp_path):
    path = write_text(tmp_path,
                      "tau.b,q.b,time,q.a,stage,tau.a,cycle\n"
                      "5.5,0.25,0.0,-1.5,rest,2,0\n"
                      "6.5,0.5,0.002,-1.25,friction,3,1\n")
    recording = read_csv(path)
    assert recording.joint_names == ("b", "a")
    np.testing.assert_array_equal(recording.time, [0.0, 0.002])
    np.testing.assert_array_equal(recording.q, [[0.25, -1.5], [0.5, -1.25]])
    np.testing.assert_array_equal(recording.tau, [[5.5, 2.0], [6.5, 3.0]])
    assert recording.stage.tolist() == ["rest", "friction"]
    np.testing.assert_array_equal(recording.cycle, [0, 1])
    assert recording.qd is None and recording.temperature is None
    assert recording.source == str(path)


def test_requested_joints_set_order_and_other_joints_are_ignored_with_a_warning(tmp_path, caplog):
    path = write_text(tmp_path,
                      "time,q.a,q.b,q.c,qd.a,qd.b,qd.c,tau.a,tau.b,tau.c,notes\n"
                      "0,1,2,3,4,5,6,7,8,9,x\n"
                      "1,11,12,13,14,15,16,17,18,19,y\n")
    with caplog.at_level(logging.WARNING, logger="robot_dynid.recordings.csv_io"):
        recording = read_csv(path, joint_names=["c", "a"])
    np.testing.assert_array_equal(recording.q, [[3, 1], [13, 11]])
    np.testing.assert_array_equal(recording.qd, [[6, 4], [16, 14]])
    np.testing.assert_array_equal(recording.tau, [[9, 7], [19, 17]])
    assert "ignoring columns of joint(s) ['b']" in caplog.text
    assert "ignoring unknown column(s) ['notes']" in caplog.text


def test_rows_with_nan_inf_or_empty_cells_are_dropped_and_counted(tmp_path):
    path = write_text(tmp_path,
                      "time,q.a,tau.a,stage,cycle\n"
                      "0,1,10,rest,0\n"
                      "1,nan,11,rest,0\n"
                      "2,3,inf,rest,0\n"
                      "3,4,,rest,\n"
                      "4,5,14,,\n")
    recording = read_csv(path)
    np.testing.assert_array_equal(recording.time, [0.0, 4.0])
    np.testing.assert_array_equal(recording.tau[:, 0], [10.0, 14.0])
    assert recording.stage.tolist() == ["rest", ""]
    np.testing.assert_array_equal(recording.cycle, [0, -1])
    assert recording.n_dropped == 3


def test_round_trip_is_exact_and_deterministic(tmp_path):
    rng = np.random.default_rng(3)
    n_samples = 200
    values = rng.standard_normal((n_samples, 2)) * np.logspace(-300, 300, n_samples)[:, None]
    values[0] = [1.0 / 3.0, -0.0]
    recording = Recording(
        joint_names=("j1", "j2"), time=1.7e9 + 0.002 * np.arange(n_samples), q=values,
        qd=rng.standard_normal((n_samples, 2)), qdd=rng.standard_normal((n_samples, 2)),
        tau=rng.standard_normal((n_samples, 2)), temperature=20 + rng.random((n_samples, 2)),
        stage=["custom:lift, then hold"] * 100 + ["validation"] * 100,
        cycle=np.repeat([3, 4], 100))
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    write_csv(first, recording)
    write_csv(second, recording)
    assert first.read_bytes() == second.read_bytes()
    back = read_csv(first)
    for field in ("time", "q", "qd", "qdd", "tau", "temperature", "cycle", "stage"):
        np.testing.assert_array_equal(getattr(back, field), getattr(recording, field),
                                      err_msg=field)
    assert back.joint_names == recording.joint_names
    assert first.read_text().splitlines()[0] == (
        "time,q.j1,q.j2,qd.j1,qd.j2,qdd.j1,qdd.j2,tau.j1,tau.j2,temperature.j1,temperature.j2,"
        "stage,cycle")


def test_write_torques_csv_prints_shortest_round_trip_floats(tmp_path):
    path = tmp_path / "tau.csv"
    write_torques_csv(path, [0.0, 0.1], ["a", "b"], [[1.5, -2.0], [0.3, 1e-20]])
    assert path.read_text() == "time,tau.a,tau.b\n0.0,1.5,-2.0\n0.1,0.3,1e-20\n"
    with pytest.raises(DataError, match=r"^tau must have shape \(2 samples, 2 joints\), got \(2, 3\)$"):
        write_torques_csv(path, [0.0, 0.1], ["a", "b"], np.zeros((2, 3)))


@pytest.mark.parametrize("text, options, message", [
    ("t,q.a,tau.a\n0,1,2\n", {}, r"run.csv is missing column\(s\) \['time'\]; a recording needs \['time'\]$"),
    ("time,q.a,q.b,tau.a\n0,1,2,3\n", {}, r"missing column\(s\) \['tau.b'\]"),
    ("time,q.a,q.b,tau.a\n0,1,2,3\n", {"joint_names": ["a", "c"]},
     r"missing column\(s\) \['q.c'\]"),
    ("time,q.a,qd.a\n0,1,2\n", {"require_tau": True}, r"missing column\(s\) \['tau.a'\]"),
    ("time,q.a,q.b,qd.a\n0,1,2,3\n", {},
     r"run.csv is missing column\(s\) \['qd.b'\]; reading velocities needs \['qd.a', 'qd.b'\] "
     r"\(give 'qd.<joint>' for every joint or for none\)$"),
    ("time,q.a,tau.a\n0,1,2\n1,2,3\n2,abc,4\n", {},
     r"line 4: column 'q.a' holds 'abc', not a number"),
    ("time,q.a,tau.a\n0,1,2\n\n1,2,3\n0.5,3,4\n", {},
     r"line 5: time 0.5 s is not after 1.0 s on line 4; time must be strictly increasing"),
    ("time,q.a,stage\n0,1,rest\n1,2,resting\n", {},
     r"line 3: column 'stage': unknown stage label 'resting'"),
    ("time,q.a,cycle\n0,1,0\n1,2,1.5\n", {}, r"line 3: column 'cycle' holds 1.5"),
    ("time,q.a,tau.a\n0,1,2\n1,2\n", {}, r"line 3: 2 fields, expected 3"),
    ("time,q.a,q.a\n0,1,2\n", {}, r"run.csv: header lists column\(s\) \['q.a'\] more than once$"),
])
def test_malformed_files_are_reported_with_column_and_line(tmp_path, text, options, message):
    with pytest.raises(DataError, match=message):
        read_csv(write_text(tmp_path, text), **options)


def test_tau_is_optional_unless_required(tmp_path):
    assert read_csv(write_text(tmp_path, "time,q.a,qd.a\n0,1,2\n1,2,3\n")).tau is None


def test_empty_and_header_only_files(tmp_path):
    with pytest.raises(DataError, match="is empty"):
        read_csv(write_text(tmp_path, ""))
    with pytest.raises(DataError, match="no data rows"):
        read_csv(write_text(tmp_path, "time,q.a\n", name="header.csv"))
    with pytest.raises(DataError, match="does not exist"):
        read_csv(tmp_path / "absent.csv")


def test_a_byte_order_mark_is_read_as_without_it(tmp_path):
    """Spreadsheet programs save 'CSV UTF-8' with a BOM before the header; the file reads as the same file
    without it (for the recordings' reader and the cylinder data's)."""
    text = "time,q.a,tau.a,stage,cycle\n0,1,2,rest,0\n1,2,3,excitation,1\n"
    plain = write_text(tmp_path, text, "plain.csv")
    marked = tmp_path / "marked.csv"
    marked.write_bytes(b"\xef\xbb\xbf" + text.encode())
    expected, got = read_csv(plain), read_csv(marked)
    assert got.joint_names == ("a",)
    for field in ("time", "q", "tau", "stage", "cycle"):
        np.testing.assert_array_equal(getattr(got, field), getattr(expected, field))
    header, table, stage, cycle = read_labelled_columns(marked)
    assert header == ["time", "q.a", "tau.a"] and stage.tolist() == ["rest", "excitation"] and cycle.tolist() == [0, 1]
    np.testing.assert_array_equal(table, [[0, 1, 2], [1, 2, 3]])


@pytest.mark.parametrize("reader", [read_csv, read_labelled_columns])
def test_special_and_oversized_files_are_refused_before_they_are_opened(tmp_path, reader):
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)          # opening it for reading would block until a writer came
    error = returns_within(lambda: reader(fifo)).get("error")
    assert isinstance(error, DataError) and "fifo.csv: the CSV file is a FIFO (named pipe), not a regular file" in str(
        error), error
    with pytest.raises(DataError, match=r"^/dev/zero: the CSV file is a character device, not a regular file"):
        reader("/dev/zero")
    big = tmp_path / "big.csv"
    with open(big, "wb") as stream:        # sparse
        stream.truncate(MAX_RECORDING_BYTES + 2 ** 30)
    with pytest.raises(DataError, match=r"big.csv: the CSV file is 9 GiB, above the limit of 8 GiB$"):
        reader(big)


def awkward_recording_text(n_rows=300):
    """A recording CSV with what real files hold: empty and nan cells, inf, quoted stage labels holding commas,
    empty stages and cycles, numbers in every float notation Python prints."""
    rng = np.random.default_rng(6)
    lines = ["time,q.a,q.b,qd.a,qd.b,tau.a,tau.b,stage,cycle"]
    for k in range(n_rows):
        values = rng.standard_normal(6) * 10.0 ** rng.integers(-30, 30, 6)
        cells = [repr(float(v)) for v in values]
        if k % 37 == 5:
            cells[2] = ""
        if k % 41 == 7:
            cells[4] = "nan"
        if k % 43 == 9:
            cells[5] = "-inf"
        stage = '"custom:lift, then hold"' if k % 3 else ""
        lines.append(",".join([repr(1.7e9 + 0.002 * k)] + cells + [stage, str(k // 50) if k % 5 else ""]))
    return "\n".join(lines) + "\n"


@pytest.fixture(params=["numpy", "pyarrow"])
def parser(request, monkeypatch):
    """Each C parser: numpy's loadtxt (small files), pyarrow's (from 16 MB, when installed)."""
    from robot_dynid.recordings import csv_io
    if request.param == "pyarrow":
        pytest.importorskip("pyarrow.csv")
        monkeypatch.setattr(csv_io, "_ARROW_MIN_BYTES", 0)
    return request.param


def test_chunks_of_a_file_join_into_the_whole_file_reading_on_each_parser(tmp_path, parser):
    from robot_dynid.recordings import csv_io
    path = write_text(tmp_path, awkward_recording_text())
    [(table, stages)] = csv_io._python_blocks(path, csv_io._parse_header(path), [0, 1, 2, 3, 4, 5, 6, 8], 7, 10 ** 6)
    chunks = list(csv_io.CsvChunks(path, rows=64))
    assert len(chunks) >= 5 and max(chunk.time.size for chunk in chunks) == 64
    joined = {field: np.concatenate([getattr(chunk, field) for chunk in chunks])
              for field in ("time", "q", "qd", "tau", "stage", "cycle")}
    for field, columns in (("time", 0), ("q", [1, 2]), ("qd", [3, 4]), ("tau", [5, 6])):      # the exact parser's
        np.testing.assert_array_equal(joined[field], table[:, columns], err_msg=field)
    np.testing.assert_array_equal(joined["stage"], stages)
    whole = read_csv(path)
    finite = np.isfinite(np.hstack([joined["q"], joined["qd"], joined["tau"]])).all(axis=1)
    assert whole.n_dropped == np.count_nonzero(~finite) > 0
    for field in joined:
        np.testing.assert_array_equal(joined[field][finite], getattr(whole, field), err_msg=field)


def test_errors_in_a_later_chunk_name_their_line(tmp_path, parser):
    from robot_dynid.recordings import csv_io
    text = awkward_recording_text(200).splitlines()
    late = text[:150] + [text[150].replace(text[150].split(",")[0], "1.0", 1)] + text[151:]
    path = write_text(tmp_path, "\n".join(late) + "\n")
    with pytest.raises(DataError, match=r"line 151: time 1.0 s is not after 1700000000.296 s on line 150"):
        list(csv_io.CsvChunks(path, rows=64))
    bad = text[:130] + [text[130].replace(",", ",abc,", 1).replace(text[130].split(",")[1] + ",", "", 1)] + text[131:]
    path = write_text(tmp_path, "\n".join(bad) + "\n", "bad.csv")
    with pytest.raises(DataError, match=r"bad.csv, line 131: column 'q.a' holds 'abc', not a number"):
        list(csv_io.CsvChunks(path, rows=64))


LONG_LABEL = "custom:a much longer label, quoted"
BAD_CELLS = ((3, 0, "nan"), (12, 2, ""), (20, 1, "inf"), (33, 3, "-inf"), (34, 0, ""), (61, 2, "nan"), (90, 1, ""))
"""(row, column of q.a q.b tau.a tau.b, cell) of the non-finite cells of chunked_text, in chunks 0, 1, 2, 4, 8, 12."""


def chunked_text(rows=100, fields=("q", "tau"), names=("a", "b")):
    """A recording CSV of ``rows`` rows and the arrays it holds, for 7-row chunks: stage labels whose longest differs
    by chunk ('' alone in chunks 0 and 1, then 'rest', a quoted custom label of 34 characters, 'friction'), NaN,
    inf and empty cells (BAD_CELLS) in rows of several chunks."""
    rng = np.random.default_rng(11)
    time = 1.7e9 + 0.002 * np.arange(rows)
    values = rng.standard_normal((rows, 4))
    stage = np.array(["" if k < 14 else "rest" if k < 30 else LONG_LABEL if k < 40 else "friction"
                      for k in range(rows)])
    cycle = np.where(np.arange(rows) % 9 == 4, -1, np.arange(rows) // 25)
    cells = [[repr(value) for value in row] for row in values.tolist()]
    for row, column, cell in BAD_CELLS:
        if row < rows:
            cells[row][column], values[row, column] = cell, np.nan
    header = ["time"] + [f"{field}.{name}" for field in fields for name in names] + ["stage", "cycle"]
    lines = [",".join(header)] + [
        ",".join([repr(float(t))] + row + [f'"{label}"' if "," in label else label, "" if c < 0 else str(c)])
        for t, row, label, c in zip(time, cells, stage, cycle)]
    return "\n".join(lines) + "\n", dict(time=time, q=values[:, :2], tau=values[:, 2:], stage=stage, cycle=cycle)


@pytest.mark.parametrize("chunk_rows", [7, 1000])
def test_a_file_read_in_many_chunks_or_in_less_than_one_gives_the_arrays_it_holds(tmp_path, parser, monkeypatch,
                                                                                  chunk_rows):
    """Chunks of 7 rows (15 of them, labels as wide as 0, 4, 34 and 8 characters, drops in six) or one chunk larger
    than the file: the arrays written, less the rows holding NaN or inf, bit for bit; the stage labels as wide as
    the longest; the drops counted by field with the first one's time."""
    from robot_dynid.recordings import csv_io
    monkeypatch.setattr(csv_io, "CHUNK_ROWS", chunk_rows)
    text, expected = chunked_text()
    recording = read_csv(write_text(tmp_path, text))
    keep = np.isfinite(np.hstack([expected["q"], expected["tau"]])).all(axis=1)
    for field, values in expected.items():
        np.testing.assert_array_equal(getattr(recording, field), values[keep], err_msg=field)
    assert recording.stage.dtype == np.dtype(f"<U{len(LONG_LABEL)}") and recording.cycle.dtype == np.int64
    assert recording.dropped == {"non-finite q": Dropped(4, expected["time"][3]),
                                 "non-finite tau": Dropped(3, expected["time"][12])}


def test_motor_side_drops_in_many_chunks_are_counted_as_in_one(tmp_path, monkeypatch, parser):
    """Rows with NaN or inf in a motor column are left out chunk by chunk (before the recording is made): 7-row
    chunks give what one chunk does, bit for bit, and the drops counted under the motor column."""
    from robot_dynid.model.transmission import Transmission
    from robot_dynid.recordings import csv_io
    transmission = Transmission(("m1", "m2"), np.array([[50.0, 0.0], [-25.0, 40.0]]))
    text, expected = chunked_text(fields=("qm", "taum"), names=("m1", "m2"))
    path = write_text(tmp_path, text)
    monkeypatch.setattr(csv_io, "CHUNK_ROWS", 1000)
    whole = read_csv(path, ["a", "b"], transmission=transmission)
    monkeypatch.setattr(csv_io, "CHUNK_ROWS", 7)
    chunked = read_csv(path, ["a", "b"], transmission=transmission)
    for field in ("time", "q", "tau", "stage", "cycle"):
        assert getattr(chunked, field).dtype == getattr(whole, field).dtype, field
        np.testing.assert_array_equal(getattr(chunked, field), getattr(whole, field), err_msg=field)
    assert chunked.n_samples == 93 and chunked.dropped == whole.dropped == {
        "non-finite qm": Dropped(4, expected["time"][3]), "non-finite taum": Dropped(3, expected["time"][12])}


def test_line_endings_other_than_newline_read_as_newline_in_many_chunks(tmp_path, monkeypatch, parser):
    """CRLF, and CR alone (no newline byte: the arrays grow chunk by chunk), read as the same file with newlines."""
    from robot_dynid.recordings import csv_io
    monkeypatch.setattr(csv_io, "CHUNK_ROWS", 7)
    text, _ = chunked_text()
    expected = read_csv(write_text(tmp_path, text))
    for ending in ("\r\n", "\r"):
        path = tmp_path / "ending.csv"
        path.write_bytes(text.replace("\n", ending).encode())
        got = read_csv(path)
        for field in ("time", "q", "tau", "stage", "cycle"):
            np.testing.assert_array_equal(getattr(got, field), getattr(expected, field), err_msg=f"{ending!r} {field}")
        assert got.stage.dtype == expected.stage.dtype and got.dropped == expected.dropped


def test_files_without_usable_rows_in_many_chunks_say_so(tmp_path, monkeypatch, parser):
    from robot_dynid.model.transmission import Transmission
    from robot_dynid.recordings import csv_io
    monkeypatch.setattr(csv_io, "CHUNK_ROWS", 7)
    for text in ("time,q.a,stage\n", "time,q.a,stage\n\n\n\n"):
        with pytest.raises(DataError, match=r"header.csv has a header but no data rows$"):
            read_csv(write_text(tmp_path, text, "header.csv"))
    rows = "".join(f"{0.002 * k!r},{1.0 if k % 2 else 'nan'},{'nan' if k % 2 else 0.5},rest\n" for k in range(20))
    with pytest.raises(DataError, match=r"^all 20 samples of .*nan.csv hold NaN or inf \(non-finite qm: 10, first at "
                                        r"0.000000 s; non-finite taum: 10, first at 0.002000 s\)$"):
        read_csv(write_text(tmp_path, "time,qm.m,taum.m,stage\n" + rows, "nan.csv"), ["a"],
                 transmission=Transmission(("m",), np.array([[10.0]])))


@pytest.mark.parametrize("row, cell, message", [
    (57, (5, "resting"), r"line 59: column 'stage': unknown stage label 'resting'"),
    (80, (6, "2.5"), r"line 82: column 'cycle' holds 2.5"),
    (66, (2, "x1"), r"line 68: column 'q.b' holds 'x1', not a number"),
])
def test_a_bad_cell_in_a_later_chunk_names_its_line_and_column(tmp_path, monkeypatch, parser, row, cell, message):
    from robot_dynid.recordings import csv_io
    monkeypatch.setattr(csv_io, "CHUNK_ROWS", 7)
    lines = chunked_text()[0].splitlines()
    cells = lines[row + 1].split(",")
    cells[cell[0]] = cell[1]
    lines[row + 1] = ",".join(cells)
    with pytest.raises(DataError, match=message):
        read_csv(write_text(tmp_path, "\n".join(lines) + "\n"))
