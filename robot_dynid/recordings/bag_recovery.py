"""Reading and repairing rosbag2 bags that were never closed or were cut short.

A recorder killed with SIGKILL leaves a bag directory without ``metadata.yaml`` (and an MCAP file
without its summary and footer, or an SQLite file with an unfinished transaction in its journal);
a power loss or a full disk leaves a storage file cut short. rosbags cannot open either.

:class:`RecoveredBag` reads such a bag up to its last complete message:

- MCAP: the file is scanned record by record (schemas, channels, messages, chunks compressed with
  zstd or lz4, checked against their CRC when it is set) and reading stops cleanly at the first
  record that is cut short or corrupt; a chunk counts whole or not at all, so what came after the
  writer's last flush is lost.
- SQLite: the committed rows, in rowid (insertion) order. A journal or write-ahead log left beside
  the file is replayed on a temporary copy (the original is not touched). When SQLite cannot read
  the messages table to its end (a file cut short: SQLite reports it malformed), every table-leaf
  page present is parsed instead, so rows behind a lost interior page are recovered too.

Message types come from the bag's own definitions (MCAP schemas, the SQLite
``message_definitions`` table); types without one are left to the caller's fallback typestore.
:func:`repair_bag` writes the recovered messages as a whole bag (storage file with a valid end,
``metadata.yaml``), keeping the damaged original beside it.
"""
from __future__ import annotations

import dataclasses
import logging
import mmap
import shutil
import sqlite3
import struct
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Iterator

from rosbags.highlevel import AnyReader
from rosbags.interfaces import (Connection, ConnectionExtRosbag2, MessageDefinition,
                                MessageDefinitionFormat)
from rosbags.rosbag2 import Writer, WriterError
from rosbags.rosbag2.metadata import parse_qos
from rosbags.typesys import Stores, TypesysError, get_types_from_idl, get_types_from_msg, get_typestore

from robot_dynid.errors import DataError
from robot_dynid.recordings import bag_files
from robot_dynid.recordings.bag_layout import DAMAGED_SUFFIX
from robot_dynid.recordings.bag_records import (CHUNK, DATA_END, FOOTER, HEADER, MCAP_MAGIC, MESSAGE, MESSAGE_HEAD,
                                                RecordStop, StorageChannel, chunk_records, mcap_definition,
                                                mcap_records, message_head)

__all__ = ["REPAIR_DIRECTORY", "SQLITE_MAGIC", "storage_files", "RecoveredBag", "open_incomplete_bag",
           "bag_is_whole", "RepairResult", "repair_bag"]

logger = logging.getLogger(__name__)

REPAIR_DIRECTORY = ".robot-dynid-repair"
"""Scratch directory inside a bag being repaired in place; removed when the repair ends."""

_NS_PER_S = 1_000_000_000
_STORAGE_SUFFIXES = {".mcap": "mcap", ".db3": "sqlite3"}
_SQLITE_REPLAYED = ("-journal", "-wal")       # files SQLite replays into the database on open
_SQLITE_SIDECARS = (*_SQLITE_REPLAYED, "-shm")
_FORMATS = {"ros2msg": MessageDefinitionFormat.MSG, "ros2idl": MessageDefinitionFormat.IDL}

SQLITE_MAGIC = b"SQLite format 3\x00"


class _StorageFile:
    """What reading one storage file found: ``channels`` (id -> :class:`StorageChannel`), ``counts``
    (id -> messages), ``first_ns`` / ``last_ns`` (receive time range [ns]), ``damage`` (what is
    incomplete; "" for a whole file)."""

    def __init__(self, path: Path):
        self.path = path
        self.size = path.stat().st_size
        self.channels: dict[int, StorageChannel] = {}
        self.counts: dict[int, int] = defaultdict(int)
        self.first_ns, self.last_ns = None, None
        self.damage = ""

    def _count(self, channel_id: int, stamp_ns: int) -> bool:
        """Count a message; False when its channel is unknown."""
        if channel_id not in self.channels:
            return False
        self.counts[channel_id] += 1
        self.first_ns = stamp_ns if self.first_ns is None else min(self.first_ns, stamp_ns)
        self.last_ns = stamp_ns if self.last_ns is None else max(self.last_ns, stamp_ns)
        return True


class _McapFile(_StorageFile):
    """One MCAP file scanned from its start to its data end or first incomplete/corrupt record."""

    def __init__(self, path: Path):
        super().__init__(path)
        self._segments: list[tuple[int, int, int]] = []   # (opcode, body, body end) of data records
        self._schemas: dict[int, tuple[str, str, str]] = {}
        self._handle = path.open("rb")
        self._map = mmap.mmap(self._handle.fileno(), 0, access=mmap.ACCESS_READ) if self.size else b""
        try:
            self._scan()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if isinstance(self._map, mmap.mmap):
            self._map.close()
        self._handle.close()

    def _scan(self) -> None:
        buffer, size = self._map, self.size
        head = bytes(buffer[:len(MCAP_MAGIC)])
        if head != MCAP_MAGIC:
            if MCAP_MAGIC.startswith(head):
                self.damage = f"{self.path.name} cut short at byte {size} (within its magic)"
                return
            raise DataError(f"{self.path} is not an MCAP file (no MCAP magic at byte 0)")
        valid_end = len(MCAP_MAGIC)
        try:
            for offset, opcode, body, body_end in mcap_records(buffer, valid_end, size):
                if offset == len(MCAP_MAGIC) and opcode != HEADER:
                    raise RecordStop(offset, f"opcode 0x{opcode:02x} where the header belongs", truncated=False)
                if opcode in (DATA_END, FOOTER):
                    if buffer[size - len(MCAP_MAGIC):] != MCAP_MAGIC:
                        self.damage = f"{self.path.name} cut short at byte {size}, in its summary"
                    return
                try:
                    self._read_record(opcode, body, body_end)
                except (ValueError, UnicodeDecodeError, struct.error) as error:
                    raise RecordStop(offset, f"record (opcode 0x{opcode:02x}): {error}", truncated=False) from None
                valid_end = body_end
            self.damage = f"{self.path.name} cut short at byte {size}, after a complete record"
        except RecordStop as stop:
            self.damage = (f"{self.path.name} cut short at byte {size}, complete records up to byte "
                           f"{valid_end}" if stop.truncated else
                           f"{self.path.name} corrupt at byte {stop.offset}, read up to it: {stop.reason}")

    def _read_record(self, opcode: int, body: int, body_end: int) -> None:
        """Take one top-level record in: schemas and channels as found, a chunk all or nothing."""
        if opcode == 0:
            raise ValueError("opcode 0x00 is invalid (zeroed bytes?)")
        if opcode == CHUNK:
            records = chunk_records(self._map, body, body_end)
            schemas, channels = dict(self._schemas), dict(self.channels)
            messages = []
            try:
                for _, inner, start, end in mcap_records(records, 0, len(records)):
                    if inner == MESSAGE:
                        messages.append(message_head(records, start, end))
                    else:
                        self._take_definition(inner, records, start, end, schemas, channels)
            except RecordStop as stop:
                raise ValueError(f"{stop.reason} at chunk byte {stop.offset}") from None
            self._schemas, self.channels = schemas, channels
        elif opcode == MESSAGE:
            messages = [message_head(self._map, body, body_end)]
        else:
            self._take_definition(opcode, self._map, body, body_end, self._schemas, self.channels)
            return
        if sum(self._count(channel_id, log_ns) for channel_id, log_ns in messages):
            self._segments.append((opcode, body, body_end))

    def _take_definition(self, opcode, buffer, start, end, schemas, channels) -> None:
        problem = mcap_definition(opcode, buffer, start, end, schemas, channels)
        if problem:
            logger.warning("%s: its messages are skipped", problem)

    def messages(self, channel_ids) -> Iterator[tuple[int, int, bytes]]:
        """(channel id, receive time [ns], CDR bytes) of the channels' messages, in file order."""
        for opcode, body, body_end in self._segments:
            if opcode == MESSAGE:
                buffer, records = self._map, [(0, MESSAGE, body, body_end)]
            else:
                buffer = chunk_records(self._map, body, body_end)
                records = mcap_records(buffer, 0, len(buffer))
            for _, inner, start, end in records:
                if inner == MESSAGE:
                    channel_id, log_ns = message_head(buffer, start, end)
                    if channel_id in channel_ids:
                        yield channel_id, log_ns, bytes(buffer[start + MESSAGE_HEAD.size:end])


# ---------------------------------------------------------------- SQLite

def _varint(buffer, position: int) -> tuple[int, int]:
    """SQLite varint at ``position`` -> (value, next position)."""
    value = 0
    for index in range(8):
        byte = buffer[position + index]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, position + index + 1
    return (value << 8) | buffer[position + 8], position + 9


_INTEGER_SIZES = {1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8}


def _record_values(payload: bytes) -> list | None:
    """Column values of an SQLite record (NULL, integers, floats, text, blobs); None if malformed."""
    try:
        header_size, position = _varint(payload, 0)
        serial_types = []
        while position < header_size:
            serial_type, position = _varint(payload, position)
            serial_types.append(serial_type)
        values, position = [], header_size
        for serial_type in serial_types:
            if serial_type in _INTEGER_SIZES:
                size = _INTEGER_SIZES[serial_type]
                value = int.from_bytes(payload[position:position + size], "big", signed=True)
            elif serial_type == 7:
                size, value = 8, struct.unpack_from(">d", payload, position)[0]
            elif serial_type in (0, 8, 9):
                size, value = 0, {0: None, 8: 0, 9: 1}[serial_type]
            elif serial_type >= 12:
                size = (serial_type - 12) // 2
                value = payload[position:position + size]
                value = value.decode() if serial_type % 2 else bytes(value)
            else:
                return None
            if position + size > len(payload):
                return None
            values.append(value)
            position += size
        return values
    except (IndexError, struct.error, UnicodeDecodeError):
        return None


class _SqlitePages:
    """Table-leaf cells of an SQLite file, read from its pages without the b-tree above them; a
    last page cut short gives the cells that lie wholly before the cut."""

    def __init__(self, buffer, size: int):
        self.buffer, self.size = buffer, size
        page_size = int.from_bytes(buffer[16:18], "big")
        self.page_size = 65536 if page_size == 1 else page_size
        self.usable = self.page_size - buffer[20]
        self.n_pages = -(-size // self.page_size)

    def _bytes(self, start: int, size: int) -> bytes:
        if start + size > self.size:
            raise IndexError("beyond the end of the file")
        return self.buffer[start:start + size]

    def leaf_cells(self) -> Iterator[tuple[int, int]]:
        """(page number, cell offset in the file) of every cell of every table-leaf page."""
        for page in range(1, self.n_pages + 1):
            base = (page - 1) * self.page_size
            header = base + (100 if page == 1 else 0)
            try:
                if self._bytes(header, 1)[0] != 0x0D:
                    continue
                n_cells = int.from_bytes(self._bytes(header + 3, 2), "big")
                pointers = self._bytes(header + 8, 2 * n_cells)
            except IndexError:
                continue
            for index in range(n_cells):
                pointer = int.from_bytes(pointers[2 * index:2 * index + 2], "big")
                if header + 8 + 2 * n_cells - base <= pointer < self.usable:
                    yield page, base + pointer

    def cell(self, page: int, offset: int) -> tuple[int, list] | None:
        """(rowid, column values) of the table-leaf cell at ``offset``; None when it is malformed or
        not wholly in the file (overflow pages included)."""
        usable = self.usable
        try:
            size, position = _varint(self.buffer, offset)
            rowid, position = _varint(self.buffer, position)
            most = usable - 35
            if size <= most:
                local = size
            else:
                least = (usable - 12) * 32 // 255 - 23
                local = least + (size - least) % (usable - 4)
                local = local if local <= most else least
            if position + local + (4 if local < size else 0) > page * self.page_size:
                return None
            parts = [self._bytes(position, local)]
            remaining = size - local
            next_page = int.from_bytes(self._bytes(position + local, 4), "big") if remaining else 0
            for _ in range(self.n_pages):
                if not remaining or not 1 <= next_page <= self.n_pages:
                    break
                base = (next_page - 1) * self.page_size
                take = min(remaining, usable - 4)
                parts.append(self._bytes(base + 4, take))
                remaining -= take
                next_page = int.from_bytes(self._bytes(base, 4), "big")
        except IndexError:
            return None
        values = None if remaining else _record_values(b"".join(parts))
        return None if values is None else (rowid, values)


def _message_row(values) -> bool:
    """Whether column values have the shape of a rosbag2 messages row (id, topic_id, timestamp, data)."""
    return (len(values) == 4 and (values[0] is None or isinstance(values[0], int))
            and isinstance(values[1], int) and isinstance(values[2], int) and isinstance(values[3], bytes))


class _SqliteFile(_StorageFile):
    """The committed messages of one rosbag2 SQLite file."""

    def __init__(self, path: Path):
        super().__init__(path)
        self._copy_directory = None
        self._connection = None
        self._rows = None            # page-scan index: sorted (rowid, topic id, page, cell offset)
        self._pages = None
        with path.open("rb") as handle:
            head = handle.read(100)
        if not head.startswith(SQLITE_MAGIC):
            if SQLITE_MAGIC.startswith(head):
                self.damage = f"{path.name} cut short at byte {self.size} (within its header)"
                return
            raise DataError(f"{path} is not an SQLite database (no SQLite header at byte 0)")
        try:
            self._open(head)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
        if self._pages is not None:
            self._pages.buffer.close()
            self._handle.close()
        if self._copy_directory is not None:
            shutil.rmtree(self._copy_directory, ignore_errors=True)

    def _open(self, head: bytes) -> None:
        database = self.path
        sidecars = [self.path.with_name(self.path.name + suffix) for suffix in _SQLITE_REPLAYED]
        sidecars = [sidecar for sidecar in sidecars if sidecar.is_file() and sidecar.stat().st_size]
        if sidecars:     # SQLite replays them on open, which writes: do it on a copy
            self._copy_directory = Path(tempfile.mkdtemp(prefix="robot_dynid_recovery_"))
            for source in (self.path, *sidecars):
                shutil.copyfile(source, self._copy_directory / source.name)
            database = self._copy_directory / self.path.name
            logger.info("%s: replaying %s on a copy in %s", self.path,
                        ", ".join(sidecar.name for sidecar in sidecars), self._copy_directory)
        uri = database.resolve().as_uri() + ("" if sidecars else "?mode=ro")
        self._connection = sqlite3.connect(uri, uri=True)
        # a file cut short is "malformed" unless SQLite may trust the file size over its header
        self._connection.execute("PRAGMA writable_schema=ON")
        page_size = int.from_bytes(head[16:18], "big")
        declared = int.from_bytes(head[28:32], "big") * (65536 if page_size == 1 else page_size)
        header_valid = head[24:28] == head[92:96]
        if header_valid and declared > self.size or self.size % (65536 if page_size == 1 else page_size):
            # SQLite reads the missing bytes of a page as zeros and may return rows made of them
            self.damage = f"{self.path.name} cut short at byte {self.size}" + (
                f" of {declared}" if header_valid else "")
        try:
            self.channels = self._topics()
        except sqlite3.DatabaseError as error:
            self.damage = self.damage or f"{self.path.name} is corrupt"
            logger.warning("%s: cannot read its topics table (%s); no messages can be assigned to a "
                           "topic", self.path, error)
            return
        try:
            if self.damage:
                raise sqlite3.DatabaseError("file cut short")
            self._count_rows(self._connection.execute(
                "SELECT topic_id, timestamp, data FROM messages ORDER BY id"))
        except sqlite3.DatabaseError as error:
            self.damage = self.damage or f"{self.path.name} is corrupt: {error}"
            self.counts.clear()
            self.first_ns = self.last_ns = None
            self._scan_pages(database)

    def _topics(self) -> dict[int, StorageChannel]:
        connection = self._connection
        tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        definitions = {}
        if "message_definitions" in tables:
            for msgtype, encoding, text, digest in connection.execute(
                    "SELECT topic_type, encoding, encoded_message_definition, type_description_hash "
                    "FROM message_definitions"):
                definitions[msgtype] = (encoding if encoding in _FORMATS else "", text, digest)
        columns = [row[1] for row in connection.execute("PRAGMA table_info(topics)")]
        channels = {}
        for row in connection.execute(f"SELECT {', '.join(columns)} FROM topics"):
            topic = dict(zip(columns, row))
            msgdef_format, text, digest = definitions.get(topic["type"], ("", "", ""))
            channels[topic["id"]] = StorageChannel(
                topic["name"], topic["type"], topic["serialization_format"], msgdef_format, text,
                topic.get("offered_qos_profiles") or "", topic.get("type_description_hash") or digest)
        return channels

    def _count_rows(self, rows) -> None:
        for topic_id, stamp_ns, data in rows:
            if not (isinstance(stamp_ns, int) and isinstance(data, bytes)):
                raise sqlite3.DatabaseError(f"message row of topic {topic_id} malformed")
            self._count(topic_id, stamp_ns)

    def _scan_pages(self, database: Path) -> None:
        self._handle = database.open("rb")
        self._pages = _SqlitePages(mmap.mmap(self._handle.fileno(), 0, access=mmap.ACCESS_READ),
                                   database.stat().st_size)
        found = {}
        for page, offset in self._pages.leaf_cells():
            cell = self._pages.cell(page, offset)
            if cell is not None and _message_row(cell[1]) and cell[0] not in found:
                found[cell[0]] = (cell[1][1], page, offset, cell[1][2])
        self._rows = [(rowid, *found[rowid][:3]) for rowid in sorted(found)]
        for topic_id, _, _, stamp_ns in found.values():
            self._count(topic_id, stamp_ns)
        self.damage += f", {len(found)} rows read from its pages"

    def messages(self, channel_ids) -> Iterator[tuple[int, int, bytes]]:
        """(topic id, receive time [ns], CDR bytes) of the topics' messages, in rowid order."""
        if self._rows is not None:
            for _, topic_id, page, offset in self._rows:
                if topic_id in channel_ids:
                    values = self._pages.cell(page, offset)[1]
                    yield topic_id, values[2], values[3]
        elif self._connection is not None and channel_ids:
            ids = sorted(channel_ids)
            yield from self._connection.execute(
                f"SELECT topic_id, timestamp, data FROM messages WHERE topic_id IN "
                f"({', '.join('?' * len(ids))}) ORDER BY id", ids)


# ---------------------------------------------------------------- the bag


def storage_files(path: Path) -> tuple[str, list[Path]]:
    """Storage plugin name and storage files (sorted) of bag directory ``path``.

    Raises
    ------
    DataError
        No ``.mcap`` or ``.db3`` file, or both kinds, in ``path``.
    """
    found = defaultdict(list)
    for child in sorted(path.iterdir()):
        if child.is_file() and child.suffix in _STORAGE_SUFFIXES:
            found[_STORAGE_SUFFIXES[child.suffix]].append(child)
    if len(found) != 1:
        raise DataError(f"bag {path} holds no metadata.yaml and no .mcap or .db3 storage file: not a "
                        "rosbag2 bag" if not found else f"bag {path} holds both .mcap and .db3 files")
    (storage, files), = found.items()
    return storage, files


@dataclasses.dataclass
class _Topic:
    """What :class:`RecoveredBag` knows of a topic (the fields of AnyReader's topic info used here)."""

    msgtype: str
    msgcount: int
    connections: list


class RecoveredBag:
    """An incomplete bag directory read as far as it is complete, offering what
    ``rosbags.highlevel.AnyReader`` offers: ``topics`` (name -> msgtype, msgcount, connections),
    ``connections``, ``messages(connections)`` -> (connection, receive time [ns], CDR bytes),
    ``typestore`` (the bag's own definitions) and ``deserialize``. Use it as a context manager.

    Attributes
    ----------
    storage : str
        ``"mcap"`` or ``"sqlite3"``.
    files : list of Path
        The storage files read.
    problems : list of str
        What is incomplete (``"no metadata.yaml"``, ``"bag.mcap cut short at byte B ..."``);
        empty for a whole bag.
    message_count : int
    first_ns, last_ns : int or None
        Receive times [ns] of the first and last recovered message.

    Raises
    ------
    DataError
        ``path`` holds no storage file, or one that is neither MCAP nor SQLite.
    """

    def __init__(self, path):
        self.path = Path(path)
        if not self.path.is_dir():
            raise DataError(f"bag {self.path} is not a directory")
        self.storage, self.files = storage_files(self.path)
        reader = _McapFile if self.storage == "mcap" else _SqliteFile
        self._files = []
        try:
            for file in self.files:
                self._files.append(reader(file))
        except BaseException:
            self.close()
            raise
        self.problems = ([] if (self.path / "metadata.yaml").is_file() else ["no metadata.yaml"])
        self.problems += [file.damage for file in self._files if file.damage]
        self._connections_of: list[dict[int, Connection]] = []
        by_key: dict[tuple, Connection] = {}
        for file in self._files:
            mapping = {}
            for channel_id, channel in file.channels.items():
                key = (channel.topic, channel.msgtype, channel.encoding)
                if key not in by_key:
                    by_key[key] = Connection(
                        len(by_key) + 1, channel.topic, channel.msgtype,
                        MessageDefinition(_FORMATS.get(channel.msgdef_format, MessageDefinitionFormat.NONE),
                                          channel.msgdef if channel.msgdef_format else ""),
                        channel.digest, 0, ConnectionExtRosbag2(channel.encoding, _qos(channel.qos)), self)
                connection = by_key[key] = by_key[key]._replace(
                    msgcount=by_key[key].msgcount + file.counts.get(channel_id, 0))
                mapping[channel_id] = connection.id
            self._connections_of.append(mapping)
        self.connections = list(by_key.values())
        self.topics: dict[str, _Topic] = {}
        for connection in self.connections:
            topic = self.topics.setdefault(connection.topic, _Topic(connection.msgtype, 0, []))
            topic.msgcount += connection.msgcount
            topic.connections.append(connection)
        self.message_count = sum(connection.msgcount for connection in self.connections)
        stamps = [stamp for file in self._files for stamp in (file.first_ns, file.last_ns) if stamp is not None]
        self.first_ns, self.last_ns = (min(stamps), max(stamps)) if stamps else (None, None)
        self.typestore = _definitions_typestore(self.connections)

    def __enter__(self) -> "RecoveredBag":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        for file in self._files:
            file.close()

    def messages(self, connections=None) -> Iterator[tuple[Connection, int, bytes]]:
        """(connection, receive time [ns], CDR bytes) of ``connections`` (default all), storage file
        by storage file in the order written."""
        wanted = {connection.id for connection in (self.connections if connections is None else connections)}
        by_id = {connection.id: connection for connection in self.connections}
        for file, mapping in zip(self._files, self._connections_of):
            channel_ids = {channel_id for channel_id, cid in mapping.items() if cid in wanted}
            for channel_id, receive_ns, data in file.messages(channel_ids):
                yield by_id[mapping[channel_id]], receive_ns, data

    def deserialize(self, data: bytes, msgtype: str):
        """Message object of CDR ``data`` of ``msgtype`` (a type the bag defines)."""
        return self.typestore.deserialize_cdr(data, msgtype)

    def describe(self) -> str:
        """``bag DIR is incomplete (...): recovered N messages up to stamp S s (receive time)``."""
        if self.last_ns is None:
            recovered = "recovered no message"
        else:
            seconds, nanoseconds = divmod(self.last_ns, _NS_PER_S)
            recovered = (f"recovered {self.message_count} messages up to stamp "
                         f"{seconds}.{nanoseconds // 1000:06d} s (receive time)")
        return f"bag {self.path} is incomplete ({'; '.join(self.problems)}): {recovered}"


def _qos(text: str) -> list:
    try:
        return parse_qos(text)
    except Exception as error:     # rosbags' ReaderError, or YAML of another shape
        logger.info("offered_qos_profiles not understood (%s); left out", error)
        return []


def _definitions_typestore(connections):
    """Typestore of the message definitions the bag carries (others are left out)."""
    typestore = get_typestore(Stores.EMPTY)
    for connection in connections:
        definition = connection.msgdef
        try:
            if definition.format == MessageDefinitionFormat.MSG:
                types = get_types_from_msg(definition.data, connection.msgtype)
            elif definition.format == MessageDefinitionFormat.IDL:
                separator = "=" * 80 + "\n"
                parts = [part.split("\n", 1)[1] for part in definition.data.split(separator)[1:]] \
                    if definition.data.startswith(separator + "IDL: ") else [definition.data]
                types = {name: fields for part in parts for name, fields in get_types_from_idl(part).items()}
            else:
                continue
            typestore.register(types)
        except TypesysError as error:
            logger.info("definition of %s in the bag not used: %s", connection.msgtype, error)
    return typestore


_DESCRIBED: set[str] = set()   # incomplete bags already warned about (one reading opens a bag twice)


def open_incomplete_bag(path, error: Exception) -> RecoveredBag:
    """:class:`RecoveredBag` of ``path`` after rosbags failed with ``error``, with a WARNING saying
    what was recovered (INFO when this process has warned about the bag as it is already).

    Raises
    ------
    DataError
        ``path`` is not a bag, or it is whole and ``error`` came from something else.
    """
    bag = RecoveredBag(path)
    if not bag.problems:
        bag.close()
        raise DataError(f"cannot open bag {path}: {error}")
    description = bag.describe()
    if bag_files.bag_being_recorded(path):
        logger.info("%s: it is being recorded; read up to its recorder's last flush", description)
        return bag
    logger.log(logging.INFO if description in _DESCRIBED else logging.WARNING,
               "%s; 'robot-dynid bag repair %s' makes it whole", description, path)
    _DESCRIBED.add(description)
    return bag


# ---------------------------------------------------------------- repair


def bag_is_whole(path) -> bool:
    """Whether rosbags opens bag directory ``path`` and reads every message its metadata counts."""
    path = Path(path)
    if not (path / "metadata.yaml").is_file():
        return False
    try:
        with AnyReader([path], default_typestore=get_typestore(Stores.EMPTY)) as reader:
            expected = sum(connection.msgcount for connection in reader.connections)
            return sum(1 for _ in reader.messages()) == expected
    except Exception as error:     # rosbags' reader, apsw and decompressors raise their own errors
        logger.info("bag %s is not whole: %s", path, error)
        return False


@dataclasses.dataclass(frozen=True)
class RepairResult:
    """What :func:`repair_bag` did.

    Attributes
    ----------
    path : Path
        The bag repaired.
    out : Path or None
        Where the whole bag was written (``path`` itself for a repair in place); None when ``path``
        was whole already.
    problems : tuple of str
        What was incomplete (see :attr:`RecoveredBag.problems`).
    counts : dict
        Messages recovered per topic.
    first_ns, last_ns : int or None
        Receive times of the first and last recovered message [ns].
    kept : tuple of Path
        The damaged originals kept beside the repaired files (repair in place).
    """

    path: Path
    out: Path | None
    problems: tuple[str, ...] = ()
    counts: dict = dataclasses.field(default_factory=dict)
    first_ns: int | None = None
    last_ns: int | None = None
    kept: tuple[Path, ...] = ()


def repair_bag(path, out=None, distro: str | None = None) -> RepairResult:
    """Make bag directory ``path`` whole: its recovered messages written through rosbags' Writer
    (same storage, message definitions and offered QoS; metadata.yaml on close).

    Parameters
    ----------
    path : str or Path
        The bag directory.
    out : str or Path, optional
        New bag directory to write (must not exist); default: repair in place, the damaged files
        renamed with :data:`~robot_dynid.recordings.bag_layout.DAMAGED_SUFFIX` (nothing is deleted but the
        closing reserve :data:`robot_dynid.recordings.bag_files.RESERVE_FILE` a killed recorder left).
    distro : str, optional
        ROS 2 distro of the standard types used for topics whose type the bag does not define
        (see :func:`robot_dynid.recordings.bag_files.make_typestore`).

    Raises
    ------
    DataError
        ``path`` is not a bag or holds no complete message, ``out`` exists, a ``.damaged`` file
        is in the way, or a topic's type is neither defined in the bag nor known.
    """
    path = Path(path)
    if not path.is_dir():
        raise DataError(f"bag {path} {'is not a directory' if path.exists() else 'does not exist'}")
    bag_files.check_bag_files(path)
    if bag_files.bag_being_recorded(path):
        raise DataError(f"bag {path} is being recorded by a running process (a recorder): stop it (Ctrl-C or "
                        "SIGTERM closes the bag whole), or read it as it is; a repair now would move its files "
                        "from under the recorder")
    if bag_is_whole(path):
        return RepairResult(path, None)
    fallback = bag_files.make_typestore(distro)
    with RecoveredBag(path) as bag:
        if not bag.message_count:
            raise DataError(f"bag {path} holds no complete message ({'; '.join(bag.problems)}): "
                            "nothing to repair")
        replaced = _replaced_files(path, bag.files) if out is None else []
        target = Path(out) if out is not None else path / REPAIR_DIRECTORY / bag.files[0].stem
        if out is None:
            shutil.rmtree(target.parent, ignore_errors=True)   # left by an interrupted repair
        _write(bag, target, fallback)
        problems = tuple(bag.problems) or ("rosbags cannot read it to its end",)
        result = RepairResult(path, Path(out) if out is not None else path, problems,
                              {topic: info.msgcount for topic, info in bag.topics.items()},
                              bag.first_ns, bag.last_ns)
    if out is None:
        (path / bag_files.RESERVE_FILE).unlink(missing_ok=True)   # a killed recorder's closing reserve
        for original in replaced:
            original.rename(original.with_name(original.name + DAMAGED_SUFFIX))
        for written in target.iterdir():
            written.rename(path / written.name)
        shutil.rmtree(target.parent)
        result = dataclasses.replace(result, kept=tuple(
            original.with_name(original.name + DAMAGED_SUFFIX) for original in replaced))
    logger.info("repaired bag %s: %s", path, result)
    return result


def _replaced_files(path: Path, files: list[Path]) -> list[Path]:
    """Files a repair in place renames: storage files, SQLite sidecars, an old metadata.yaml."""
    replaced = [sidecar for file in files for sidecar in
                (file, *(file.with_name(file.name + suffix) for suffix in _SQLITE_SIDECARS))
                if sidecar.exists()]
    replaced += [path / "metadata.yaml"] if (path / "metadata.yaml").exists() else []
    in_the_way = [str(file) + DAMAGED_SUFFIX for file in replaced
                  if file.with_name(file.name + DAMAGED_SUFFIX).exists()]
    if in_the_way:
        raise DataError(f"cannot repair bag {path} in place: {', '.join(in_the_way)} exists (an "
                        "earlier repair's original?); move it away or repair with --out")
    return replaced


def _write(bag: RecoveredBag, target: Path, fallback) -> None:
    """Write every recovered message of ``bag`` to a new bag directory ``target``."""
    try:
        writer = Writer(target, version=bag_files.BAG_METADATA_VERSION,
                        storage_plugin=bag_files.STORAGE_PLUGINS[bag.storage])
        writer.open()
    except WriterError as error:
        raise DataError(f"cannot write the repaired bag to {target}: {error}") from error
    try:
        written = {}
        for connection in bag.connections:
            if connection.msgdef.format != MessageDefinitionFormat.NONE \
                    and connection.msgtype in bag.typestore.types:
                definition = {"msgdef": connection.msgdef.data,
                              "rihs01": connection.digest or bag.typestore.hash_rihs01(connection.msgtype)}
            else:
                try:
                    bag_files.ensure_type(fallback, connection.msgtype)
                except DataError as error:
                    raise DataError(f"topic {connection.topic!r} of bag {bag.path}: {error}; the bag "
                                    "carries no definition of it") from None
                definition = {"typestore": fallback}
            written[connection.id] = writer.add_connection(
                connection.topic, connection.msgtype, **definition,
                serialization_format=connection.ext.serialization_format,
                offered_qos_profiles=connection.ext.offered_qos_profiles)
        for connection, receive_ns, data in bag.messages():
            writer.write(written[connection.id], receive_ns, data)
    except BaseException:
        writer.abort()
        shutil.rmtree(target, ignore_errors=True)
        raise
    writer.close()
