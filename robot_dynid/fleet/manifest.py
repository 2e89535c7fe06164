"""The fleet manifest: which recording belongs to which robot and when it was made.

A CSV file with a header row and one recording per row:

``robot_id``
    The robot's name in the fleet: letters, digits, ``.``, ``_`` and ``-``, at most
    :data:`MAX_ROBOT_ID` characters (it names the robot's folders in the output).
``recorded_at``
    When the recording was made, ISO 8601 (``2026-03-02``, ``2026-03-02T06:30:00+01:00``,
    ``...Z``); a time without a zone is taken as UTC.
``data``
    The recording: a rosbag2 directory (or its .mcap / .db3 file) or a CSV file.
``robot`` (optional)
    A robot description for this row (default: the command's ``--robot``).
``stage`` (optional)
    Identify from the samples of this stage kind only (e.g. ``excitation``); empty: all samples.
``torque_check`` (optional)
    ``true`` (or empty) checks the recording's torques against the description's inertial data, ``false``
    does not (a row whose description's inertial data are what is wrong; ``--no-torque-check`` turns it off
    for every row).

Relative paths are relative to the manifest's folder. They are made absolute here: on a cluster
every worker must read them at the same paths (shared storage mounted alike).
"""
from __future__ import annotations

import csv
import dataclasses
import datetime
import io
import pathlib
import re

from robot_dynid.errors import DataError
from robot_dynid.input_files import read_text
from robot_dynid.joint_names import index_in, match_joints
from robot_dynid.recordings.stages import STAGE_KINDS

__all__ = ["COLUMNS", "REQUIRED_COLUMNS", "MAX_ROBOT_ID", "MAX_MANIFEST_ROWS", "MAX_MANIFEST_BYTES", "MAX_FIELD_CHARS",
           "FleetEntry", "iso_time", "parse_time", "read_manifest"]

COLUMNS = ("robot_id", "recorded_at", "data", "robot", "stage", "torque_check")
REQUIRED_COLUMNS = ("robot_id", "recorded_at", "data")
MAX_ROBOT_ID = 64
MAX_MANIFEST_ROWS = 100_000
"""Most recordings one manifest may list."""
MAX_MANIFEST_BYTES = 64 * 1024 ** 2
#: Characters of one manifest field at most: a path (Linux's PATH_MAX), a robot id, a time. Longer is refused
#: naming the line and column before any work (the csv module's own limit is raised so that this one speaks).
MAX_FIELD_CHARS = 4096
_ROBOT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_BOOLEANS = {"": True, "true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


@dataclasses.dataclass(frozen=True)
class FleetEntry:
    """One recording of the manifest.

    Attributes
    ----------
    robot_id : str
    recorded_at : datetime.datetime
        In UTC.
    data : str
        Absolute path of the recording.
    robot : str or None
        Absolute path of this row's robot description; None: the fleet's.
    stage : str or None
        Stage kind identified from; None: all samples.
    torque_check : bool
        Check the recording's torques against the description's inertial data.
    row : int
        Line of the manifest (1 = header), for messages.
    """

    robot_id: str
    recorded_at: datetime.datetime
    data: str
    robot: str | None = None
    stage: str | None = None
    row: int = 0
    torque_check: bool = True

    @property
    def key(self) -> tuple[str, str]:
        """What identifies the entry between runs: (robot_id, recorded_at as ISO 8601 UTC)."""
        return self.robot_id, iso_time(self.recorded_at)


def iso_time(moment: datetime.datetime) -> str:
    """``moment`` (UTC) as ISO 8601 with a ``Z``: sorts as text in time order."""
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ").replace(".000000Z", "Z")


def parse_time(text: str, where: str) -> datetime.datetime:
    """An ISO 8601 date or date and time as an aware UTC datetime (no zone: UTC)."""
    value = text.strip()
    try:
        # Python 3.10's fromisoformat knows neither 'Z' nor a bare date with time zone
        moment = datetime.datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value)
    except ValueError:
        raise DataError(f"{where}: recorded_at {text!r} is not an ISO 8601 date or time "
                        "(e.g. 2026-03-02 or 2026-03-02T06:30:00+01:00)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.astimezone(datetime.timezone.utc)


def read_manifest(path) -> list[FleetEntry]:
    """The entries of the manifest at ``path``, in file order.

    Raises
    ------
    DataError
        One line naming the file, the line and the column: a missing or unknown column, an empty
        or malformed field, a field longer than :data:`MAX_FIELD_CHARS`, a robot id or a (robot_id, recorded_at)
        pair given twice, more than :data:`MAX_MANIFEST_ROWS` rows, or no row at all.
    """
    path = pathlib.Path(path)
    text = read_text(path, "fleet manifest", DataError, MAX_MANIFEST_BYTES)
    reader = csv.reader(io.StringIO(text))
    rows = _rows(reader, path)
    header = [cell.strip() for cell in next(rows, (1, []))[1]]
    if not any(header):
        raise DataError(f"{path}: the manifest is empty; its first line names the columns "
                        f"{', '.join(REQUIRED_COLUMNS)} (optional: robot, stage, torque_check)")
    index_in(COLUMNS, header, str(path), "a fleet manifest", kind="column")
    match_joints(REQUIRED_COLUMNS, header, str(path), "a fleet manifest", kind="column")
    base = path.resolve().parent
    entries, seen = [], {}
    for line, cells in rows:
        if not any(cell.strip() for cell in cells):
            continue
        if len(entries) == MAX_MANIFEST_ROWS:
            raise DataError(f"{path}: more than {MAX_MANIFEST_ROWS} recordings; split the fleet into several manifests")
        where = f"{path}, line {line}"
        if len(cells) != len(header):
            raise DataError(f"{where}: {len(cells)} fields, the header has {len(header)}")
        row = {name: cell.strip() for name, cell in zip(header, cells)}
        entry = _entry(row, where, base, line)
        first = seen.setdefault(entry.key, line)
        if first != line:
            raise DataError(f"{where}: robot {entry.robot_id} recorded at {entry.key[1]} is listed on line {first} "
                            "too; give each recording of a robot its own time")
        entries.append(entry)
    if not entries:
        raise DataError(f"{path}: the manifest lists no recording")
    return entries


def _rows(reader, path):
    """``(line, cells)`` of a csv reader, a field longer than :data:`MAX_FIELD_CHARS` or a csv error refused in one
    line naming the line (and column)."""
    csv.field_size_limit(max(csv.field_size_limit(), MAX_MANIFEST_BYTES))    # the file's own bound: ours names it
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise DataError(f"{path}, line {reader.line_num}: {error}") from None
        for column, cell in enumerate(cells, start=1):
            if len(cell) > MAX_FIELD_CHARS:
                raise DataError(f"{path}, line {reader.line_num}, column {column}: a field of {len(cell)} characters; "
                                f"at most {MAX_FIELD_CHARS}")
        yield reader.line_num, cells


def _entry(row: dict, where: str, base: pathlib.Path, line: int) -> FleetEntry:
    for name in REQUIRED_COLUMNS:
        if not row[name]:
            raise DataError(f"{where}: the {name} field is empty")
    robot_id = row["robot_id"]
    if len(robot_id) > MAX_ROBOT_ID or not _ROBOT_ID.fullmatch(robot_id):
        raise DataError(f"{where}: robot_id {robot_id!r} must be 1 to {MAX_ROBOT_ID} letters, digits, '.', '_' or "
                        "'-', starting with a letter or digit (it names the robot's folders)")
    stage = row.get("stage") or None
    if stage is not None and stage not in STAGE_KINDS:
        raise DataError(f"{where}: stage {stage!r} is not a stage kind {list(STAGE_KINDS)}")
    robot = row.get("robot") or None
    torque_check = _BOOLEANS.get(row.get("torque_check", "").lower())
    if torque_check is None:
        raise DataError(f"{where}: torque_check {row['torque_check']!r} is not true or false")
    return FleetEntry(robot_id, parse_time(row["recorded_at"], where), str(base / row["data"]),
                      None if robot is None else str(base / robot), stage, line, torque_check)
