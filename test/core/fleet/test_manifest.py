"""The fleet manifest: rows read with paths relative to it and times in UTC; each mistake one line naming
the file, line and column. Recording fingerprints change with the content, not with the path."""
import datetime
import shutil

import pytest

from robot_dynid.errors import DataError
from robot_dynid.fleet.manifest import read_manifest
from robot_dynid.fleet.tasks import fingerprint


def write(path, text):
    path.write_text(text)
    return path


def test_rows_are_read_with_paths_relative_to_the_manifest_and_times_in_utc(tmp_path):
    manifest = write(tmp_path / "fleet.csv", "robot_id,recorded_at,data,robot,stage\n"
                                             "cell-1.a,2026-03-02T07:30:00+01:00,data/a.csv,,excitation\n"
                                             "cell-1.a,2026-03-09,/abs/b.csv,robots/r.yaml,\n"
                                             "cell_2,2026-03-09T06:00:00Z,c.csv,,\n")
    first, second, third = read_manifest(manifest)
    assert first.recorded_at == datetime.datetime(2026, 3, 2, 6, 30, tzinfo=datetime.timezone.utc)
    assert first.key == ("cell-1.a", "2026-03-02T06:30:00Z")
    assert first.data == str(tmp_path / "data" / "a.csv") and first.stage == "excitation" and first.robot is None
    assert second.data == "/abs/b.csv" and second.robot == str(tmp_path / "robots" / "r.yaml")
    assert second.key[1] == "2026-03-09T00:00:00Z" and second.stage is None
    assert third.key == ("cell_2", "2026-03-09T06:00:00Z")
    assert first.torque_check and second.torque_check and third.torque_check       # no column: checked


def test_the_torque_check_column_turns_the_check_off_for_its_row(tmp_path):
    manifest = write(tmp_path / "fleet.csv", "robot_id,recorded_at,data,torque_check\n"
                                             "a,2026-03-02,a.csv,false\n"
                                             "a,2026-03-09,b.csv,\n"
                                             "a,2026-03-16,c.csv,True\n")
    assert [entry.torque_check for entry in read_manifest(manifest)] == [False, True, True]


@pytest.mark.parametrize("text, message", [
    ("", r"the manifest is empty; its first line names the columns robot_id, recorded_at, data"),
    ("robot_id,recorded,data\n",
     r" lists unknown column\(s\) \['recorded'\]; a fleet manifest has \['robot_id', 'recorded_at', 'data', 'robot', "
     r"'stage', 'torque_check'\]$"),
    ("robot_id,data,data\n",
     r" lists column\(s\) \['data'\] more than once; a fleet manifest has \['robot_id', 'recorded_at', 'data', "
     r"'robot', 'stage', 'torque_check'\]$"),
    ("robot_id,data\n",
     r" is missing column\(s\) \['recorded_at'\]; a fleet manifest needs \['robot_id', 'recorded_at', 'data'\]$"),
    ("robot_id,recorded_at,data\n", r"lists no recording"),
    ("robot_id,recorded_at,data\nr1,2026-13-01,a.csv\n", r"line 2: recorded_at '2026-13-01' is not an ISO 8601"),
    ("robot_id,recorded_at,data\nr 1,2026-03-01,a.csv\n", r"line 2: robot_id 'r 1' must be 1 to 64 letters"),
    ("robot_id,recorded_at,data\nr1,2026-03-01,\n", r"line 2: the data field is empty"),
    ("robot_id,recorded_at,data,stage\nr1,2026-03-01,a.csv,warm\n", r"line 2: stage 'warm' is not a stage kind"),
    ("robot_id,recorded_at,data,torque_check\nr1,2026-03-01,a.csv,off\n",
     r"line 2: torque_check 'off' is not true or false$"),
    ("robot_id,recorded_at,data\nr1,2026-03-01,a.csv,x\n", r"line 2: 4 fields, the header has 3"),
    ("robot_id,recorded_at,data\nr1,2026-03-01T01:00:00+01:00,a.csv\nr1,2026-03-01,b.csv\n",
     r"line 3: robot r1 recorded at 2026-03-01T00:00:00Z is listed on line 2 too"),
    # a 200 000-character field (the csv module's own limit, 128 KiB, was an internal error)
    ("robot_id,recorded_at,data\nr1,2026-03-01," + "x" * 200_000 + "\n",
     r"line 2, column 3: a field of 200000 characters; at most 4096$"),
])
def test_manifest_mistakes_are_one_line_naming_the_line_and_column(tmp_path, text, message):
    with pytest.raises(DataError, match=rf"^{tmp_path / 'fleet.csv'}.*{message}") as raised:
        read_manifest(write(tmp_path / "fleet.csv", text))
    assert "\n" not in str(raised.value)


def test_a_fingerprint_follows_the_content_not_the_path(tmp_path):
    bag = tmp_path / "bag"
    bag.mkdir()
    write(bag / "metadata.yaml", "a")
    write(bag / "bag_0.mcap", "b" * 3000)
    copy = shutil.copytree(bag, tmp_path / "copy")
    original = fingerprint(bag).content_hash
    assert fingerprint(copy).content_hash == fingerprint(bag / "bag_0.mcap").content_hash == original
    write(copy / "bag_0.mcap", "b" * 2999 + "c")
    assert fingerprint(copy).content_hash != fingerprint(bag).content_hash
    missing = fingerprint(tmp_path / "missing.csv")
    assert missing.content_hash is None and "missing.csv: cannot read the recording" in missing.reason
