"""A bag's message records in blocks, not deserialised: per message its channel, receive time and where its
bytes lie in a buffer, as arrays (:class:`RecordBlock`), for decoding many messages at once
(:mod:`robot_dynid.recordings.bag_io`).

- MCAP (https://mcap.dev/spec): the record format (also read by :mod:`robot_dynid.recordings.bag_recovery`),
  chunks decompressed (zstd, lz4) and checked against their CRC when it is set. A whole file's summary
  (:func:`read_mcap_summary`: channels, chunk indexes) and the message index records after each chunk give
  every message's offset in the chunk, so a chunk is never walked record by record in Python
  (:func:`mcap_blocks`); a chunk without such an index is walked (:func:`chunk_messages`).
- sqlite3: the rows of the ``messages`` table fetched in batches, in receive-time order
  (``ORDER BY timestamp, id``, the order of rosbag2's timestamp index), the bytes of a batch joined into one
  buffer (:func:`sqlite_blocks`).
"""
from __future__ import annotations

import dataclasses
import sqlite3
import struct
import sys
import zlib
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple

import lz4.frame
import numpy as np

from robot_dynid.errors import DataError

__all__ = ["MCAP_MAGIC", "HEADER", "FOOTER", "SCHEMA", "CHANNEL", "MESSAGE", "CHUNK", "MESSAGE_INDEX", "CHUNK_INDEX",
           "DATA_END", "RECORD_HEAD", "MESSAGE_HEAD", "CHUNK_HEAD", "FOOTER_BODY", "U16", "U32", "U64", "DECOMPRESS",
           "DEFINITION_ENCODINGS", "RecordStop", "StorageChannel", "mcap_records", "McapFields", "chunk_records",
           "message_head", "mcap_definition", "RecordBlock", "blocks_from_messages", "McapChunk", "McapSummary",
           "read_mcap_summary", "mcap_blocks", "joined", "chunk_messages", "sqlite_blocks", "sqlite_topics",
           "open_sqlite"]

if sys.version_info >= (3, 14):
    from compression import zstd
else:  # pragma: no cover
    from backports import zstd

# MCAP: magic, then records of opcode u8, length u64, body
MCAP_MAGIC = b"\x89MCAP0\r\n"
HEADER, FOOTER, SCHEMA, CHANNEL, MESSAGE, CHUNK, MESSAGE_INDEX, CHUNK_INDEX = 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, \
    0x07, 0x08
DATA_END = 0x0F
RECORD_HEAD = struct.Struct("<BQ")
MESSAGE_HEAD = struct.Struct("<HIQQ")       # channel id, sequence, log time [ns], publish time [ns]
CHUNK_HEAD = struct.Struct("<QQQI")         # start, end time [ns], uncompressed size, CRC32
FOOTER_BODY = struct.Struct("<QQI")         # summary start, summary offset start, summary CRC32
U16, U32, U64 = struct.Struct("<H"), struct.Struct("<I"), struct.Struct("<Q")
DECOMPRESS = {"": bytes, "zstd": zstd.decompress, "lz4": lz4.frame.decompress}
DEFINITION_ENCODINGS = ("ros2msg", "ros2idl")
_DATA_OFFSET = RECORD_HEAD.size + MESSAGE_HEAD.size     # a message's bytes from the start of its record


class RecordStop(Exception):
    """Reading stops at byte ``offset`` of a file (or of a chunk's records): the record there is
    cut short (``truncated``) or corrupt, as ``reason`` says."""

    def __init__(self, offset: int, reason: str, truncated: bool):
        super().__init__(reason)
        self.offset, self.reason, self.truncated = offset, reason, truncated


class StorageChannel(NamedTuple):
    """A connection as one storage file declares it."""

    topic: str
    msgtype: str
    encoding: str
    msgdef_format: str      # "ros2msg", "ros2idl" or "" (no definition)
    msgdef: str
    qos: str                # offered_qos_profiles as stored (YAML text), "" when absent
    digest: str             # RIHS01 type hash, "" when absent


def mcap_records(buffer, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(offset, opcode, body start, body end) of the records in ``buffer[start:end]``; raises
    :class:`RecordStop` at a record that does not fit."""
    position = start
    while position < end:
        if end - position < RECORD_HEAD.size:
            raise RecordStop(position, "record header cut short", truncated=True)
        opcode, length = RECORD_HEAD.unpack_from(buffer, position)
        body = position + RECORD_HEAD.size
        if length > end - body:
            raise RecordStop(position, f"record (opcode 0x{opcode:02x}) of {length} bytes cut short",
                             truncated=True)
        yield position, opcode, body, body + length
        position = body + length


class McapFields:
    """Little-endian MCAP fields read one after another from ``buffer[position:end]``."""

    def __init__(self, buffer, position: int, end: int):
        self.buffer, self.position, self.end = buffer, position, end

    def take(self, size: int) -> int:
        """Start of the next ``size`` bytes, which are skipped."""
        start = self.position
        if size > self.end - start:
            raise ValueError(f"field of {size} bytes overruns its record")
        self.position += size
        return start

    def number(self, form: struct.Struct) -> int:
        return form.unpack_from(self.buffer, self.take(form.size))[0]

    def raw(self) -> bytes:
        size = self.number(U32)
        start = self.take(size)
        return bytes(self.buffer[start:start + size])

    def string(self) -> str:
        return self.raw().decode()

    def string_map(self) -> dict[str, str]:
        size = self.number(U32)
        inner = McapFields(self.buffer, self.take(size), self.position)
        result = {}
        while inner.position < inner.end:
            key = inner.string()
            result[key] = inner.string()
        return result


def chunk_records(buffer, body: int, body_end: int) -> bytes:
    """The decompressed records of the chunk whose body is ``buffer[body:body_end]``; ValueError
    when it is malformed or fails its size or CRC check."""
    fields = McapFields(buffer, body, body_end)
    fields.take(CHUNK_HEAD.size)
    _, _, size, crc = CHUNK_HEAD.unpack_from(buffer, body)
    compression = fields.string()
    if compression not in DECOMPRESS:
        raise ValueError(f"unsupported chunk compression {compression!r}")
    start = fields.take(fields.number(U64))
    try:
        records = DECOMPRESS[compression](buffer[start:fields.position])
    except Exception as error:   # zstd and lz4 raise their own error types
        raise ValueError(f"{compression} decompression failed: {error}") from None
    if len(records) != size:
        raise ValueError(f"decompressed to {len(records)} bytes, not {size}")
    if crc and zlib.crc32(records) != crc:
        raise ValueError("CRC mismatch")
    return records


def message_head(buffer, body: int, body_end: int) -> tuple[int, int]:
    """(channel id, log time [ns]) of the message record whose body is ``buffer[body:body_end]``."""
    if body_end - body < MESSAGE_HEAD.size:
        raise ValueError("message record shorter than its header")
    channel_id, _, log_ns, _ = MESSAGE_HEAD.unpack_from(buffer, body)
    return channel_id, log_ns


def mcap_definition(opcode: int, buffer, start: int, end: int, schemas: dict, channels: dict) -> str | None:
    """Take a schema or channel record (``buffer[start:end]`` its body) into ``schemas`` (id -> name, encoding,
    text) or ``channels`` (id -> :class:`StorageChannel`); the problem, when a channel names no known schema."""
    fields = McapFields(buffer, start, end)
    if opcode == SCHEMA:
        schema_id = fields.number(U16)
        schemas[schema_id] = (fields.string(), fields.string(), fields.raw().decode())
    elif opcode == CHANNEL:
        channel_id, schema_id = fields.number(U16), fields.number(U16)
        topic, encoding, metadata = fields.string(), fields.string(), fields.string_map()
        if schema_id not in schemas:
            return f"MCAP channel {channel_id} ({topic}) has no schema"
        name, schema_encoding, text = schemas[schema_id]
        channels[channel_id] = StorageChannel(
            topic, name, encoding, schema_encoding if schema_encoding in DEFINITION_ENCODINGS else "", text,
            metadata.get("offered_qos_profiles", ""), metadata.get("topic_type_hash", ""))
    return None


@dataclasses.dataclass(frozen=True)
class RecordBlock:
    """Messages of one stretch of a storage file, in the order read, not deserialised.

    Attributes
    ----------
    channel : ndarray of int64, shape (k,)
        Each message's channel (MCAP channel id, sqlite3 topic id, or a connection id).
    receive_ns : ndarray of int64, shape (k,)
        Bag (receive) times [ns].
    buffer : ndarray of uint8
        The bytes the messages lie in.
    start, length : ndarray of int64, shape (k,)
        Where each message's CDR bytes lie in ``buffer``.
    """

    channel: np.ndarray
    receive_ns: np.ndarray
    buffer: np.ndarray
    start: np.ndarray
    length: np.ndarray

    def __len__(self) -> int:
        return self.channel.size

    def take(self, index) -> "RecordBlock":
        """The messages ``index`` (a boolean mask or positions) of this block, in that order."""
        return RecordBlock(self.channel[index], self.receive_ns[index], self.buffer, self.start[index],
                           self.length[index])

    def data(self, position: int) -> bytes:
        """The CDR bytes of message ``position``."""
        start = int(self.start[position])
        return self.buffer[start:start + int(self.length[position])].tobytes()

    def rows(self, index: np.ndarray, size: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """The bytes of messages ``index`` (all ``size`` bytes long), one message a row: pieces ``(positions,
        bytes (m, size))`` covering ``index``; each piece a view of the buffer where the messages lie at equal steps (a
        topic's messages between which other records repeat alike), else a copy."""
        index = index[np.argsort(self.start[index], kind="stable")]
        starts = self.start[index]
        if starts.size == 0:
            return []
        steps = np.diff(starts)
        breaks = np.flatnonzero(steps != (np.median(steps) if steps.size else size)) + 1
        pieces, scattered = [], []
        for run in np.split(np.arange(starts.size), breaks):
            if run.size < _MIN_VIEW_ROWS:
                scattered.append(run)
                continue
            step = int(starts[run[1]] - starts[run[0]])
            view = np.lib.stride_tricks.as_strided(self.buffer[int(starts[run[0]]):], shape=(run.size, size),
                                                   strides=(step, 1), writeable=False)
            pieces.append((index[run], view))
        if scattered:
            run = np.concatenate(scattered)
            pieces.append((index[run], self.buffer[starts[run, None] + np.arange(size)]))
        return pieces


_MIN_VIEW_ROWS = 8
"""Runs of fewer evenly spaced messages than this are copied together instead of viewed one run at a time."""


def blocks_from_messages(messages: Iterable[tuple[int, int, bytes]], size: int) -> Iterator[RecordBlock]:
    """:class:`RecordBlock` of at most ``size`` messages each from ``(channel, receive time [ns], bytes)``."""
    batch: list[tuple[int, int, bytes]] = []
    for message in messages:
        batch.append(message)
        if len(batch) == size:
            yield _block_of(batch)
            batch = []
    if batch:
        yield _block_of(batch)


def _block_of(batch) -> RecordBlock:
    channels, receive, datas = zip(*batch)
    length = np.fromiter(map(len, datas), np.int64, len(datas))
    start = np.cumsum(length) - length
    return RecordBlock(np.array(channels, dtype=np.int64), np.array(receive, dtype=np.int64),
                       np.frombuffer(b"".join(datas), np.uint8), start, length)


# ---------------------------------------------------------------- MCAP


@dataclasses.dataclass(frozen=True)
class McapChunk:
    """One chunk of an MCAP file as its chunk index describes it: the record's ``offset`` and ``length`` in the
    file (opcode and length prefix included), its message index records (channel id -> file offset, and their
    total ``index_length`` after the chunk) and its messages' receive-time span [ns]."""

    offset: int
    length: int
    index_offsets: dict[int, int]
    index_length: int
    start_ns: int
    end_ns: int


@dataclasses.dataclass(frozen=True)
class McapSummary:
    """What a whole MCAP file's summary section says: ``channels`` (id -> :class:`StorageChannel`) and its
    ``chunks`` in file order."""

    channels: dict[int, StorageChannel]
    chunks: tuple[McapChunk, ...]

    def in_receive_order(self) -> bool:
        """Whether no chunk holds a message received before one of an earlier chunk: then the messages in
        file order, each chunk's sorted by receive time, are in receive order."""
        return all(earlier.end_ns <= later.start_ns for earlier, later in zip(self.chunks, self.chunks[1:]))


def read_mcap_summary(handle, size: int) -> McapSummary | None:
    """The summary of the whole MCAP file open as ``handle`` (``size`` bytes): its channels and chunk indexes;
    None when the file has no summary or no chunk index (its messages are then read otherwise).

    Raises
    ------
    ValueError
        The footer or a summary record is malformed.
    """
    footer_size = RECORD_HEAD.size + FOOTER_BODY.size + len(MCAP_MAGIC)
    if size < len(MCAP_MAGIC) + footer_size:
        return None
    handle.seek(size - footer_size)
    tail = handle.read(footer_size)
    opcode, length = RECORD_HEAD.unpack_from(tail, 0)
    if opcode != FOOTER or length != FOOTER_BODY.size or tail[-len(MCAP_MAGIC):] != MCAP_MAGIC:
        raise ValueError("no MCAP footer at the end of the file")
    summary_start, summary_offset_start, _ = FOOTER_BODY.unpack_from(tail, RECORD_HEAD.size)
    summary_end = summary_offset_start or size - footer_size
    if not summary_start or not summary_start < summary_end <= size - footer_size:
        return None
    handle.seek(summary_start)
    summary = handle.read(summary_end - summary_start)
    schemas: dict = {}
    channels: dict[int, StorageChannel] = {}
    chunks = []
    for _, opcode, body, body_end in mcap_records(summary, 0, len(summary)):
        if opcode in (SCHEMA, CHANNEL):
            mcap_definition(opcode, summary, body, body_end, schemas, channels)
        elif opcode == CHUNK_INDEX:
            chunks.append(_chunk_index(summary, body, body_end))
    if not chunks:
        return None
    return McapSummary(channels, tuple(sorted(chunks, key=lambda chunk: chunk.offset)))


def _chunk_index(buffer, body: int, body_end: int) -> McapChunk:
    fields = McapFields(buffer, body, body_end)
    start_ns, end_ns, offset, length = (fields.number(U64) for _ in range(4))
    offsets = McapFields(buffer, fields.take(fields.number(U32)), fields.position)
    index_offsets = {}
    while offsets.position < offsets.end:
        channel_id = offsets.number(U16)
        index_offsets[channel_id] = offsets.number(U64)
    return McapChunk(offset, length, index_offsets, fields.number(U64), start_ns, end_ns)


def mcap_blocks(handle, summary: McapSummary, channel_ids: set[int], size: int) -> Iterator[RecordBlock]:
    """:class:`RecordBlock` of the messages of ``channel_ids`` in the whole MCAP file open as ``handle``
    (:func:`read_mcap_summary` gives its chunks), in file order: whole chunks, as many together as make about
    ``size`` messages.

    Raises
    ------
    DataError
        A chunk is malformed, fails its CRC, or its message index points at no message.
    """
    pending: list[RecordBlock] = []
    for chunk in summary.chunks:
        if chunk.index_offsets and not channel_ids & chunk.index_offsets.keys():
            continue
        handle.seek(chunk.offset)
        region = handle.read(chunk.length + chunk.index_length)
        try:
            opcode, length = RECORD_HEAD.unpack_from(region, 0)
            if opcode != CHUNK or RECORD_HEAD.size + length != chunk.length or len(region) < chunk.length:
                raise ValueError("its index points at no chunk record")
            records = np.frombuffer(chunk_records(region, RECORD_HEAD.size, chunk.length), np.uint8)
            offsets = _indexed_messages(region, chunk, channel_ids, records)
            block = _message_block(records, offsets) if offsets is not None else \
                chunk_messages(records, channel_ids)
        except (ValueError, struct.error, RecordStop) as error:
            raise DataError(f"MCAP chunk at byte {chunk.offset} of {getattr(handle, 'name', 'the file')}: "
                            f"{error}") from None
        pending.append(block)
        if sum(map(len, pending)) >= size:
            yield joined(pending)
            pending = []
    if pending:
        yield joined(pending)


def joined(blocks: list[RecordBlock]) -> RecordBlock:
    """One :class:`RecordBlock` of the messages of ``blocks``, in order (their buffers copied into one)."""
    if len(blocks) == 1:
        return blocks[0]
    shifts = np.cumsum([0] + [block.buffer.size for block in blocks[:-1]])
    return RecordBlock(*(np.concatenate([getattr(block, name) for block in blocks]) for name in ("channel",
                                                                                                 "receive_ns")),
                       np.concatenate([block.buffer for block in blocks]),
                       np.concatenate([block.start + shift for block, shift in zip(blocks, shifts)]),
                       np.concatenate([block.length for block in blocks]))


def _indexed_messages(region: bytes, chunk: McapChunk, channel_ids: set[int], records: np.ndarray):
    """Offsets (sorted) in the chunk's records of the message records of ``channel_ids``, from the message index
    records in ``region`` (the chunk record and what follows it); None when an index is missing or lies
    elsewhere."""
    found = []
    for channel_id in sorted(channel_ids & chunk.index_offsets.keys()):
        position = chunk.index_offsets[channel_id] - chunk.offset
        if not chunk.length <= position <= len(region) - RECORD_HEAD.size - U16.size - U32.size:
            return None
        opcode, length = RECORD_HEAD.unpack_from(region, position)
        fields = McapFields(region, position + RECORD_HEAD.size, position + RECORD_HEAD.size + length)
        if opcode != MESSAGE_INDEX or fields.number(U16) != channel_id or fields.end > len(region):
            return None
        size = fields.number(U32)
        pairs = np.frombuffer(region, "<u8", count=2 * (size // 16), offset=fields.take(size)).reshape(-1, 2)
        found.append(pairs[:, 1].astype(np.int64))
    if not chunk.index_offsets:
        return None
    offsets = np.sort(np.concatenate(found)) if found else np.empty(0, np.int64)
    if offsets.size and (offsets[0] < 0 or offsets[-1] > records.size - _DATA_OFFSET):
        raise ValueError("a message index points beyond the chunk")
    if offsets.size and (records[offsets] != MESSAGE).any():
        raise ValueError("a message index points at a record that is not a message")
    return offsets


def _message_block(records: np.ndarray, offsets: np.ndarray) -> RecordBlock:
    """The message records at ``offsets`` of ``records`` as a block, their lengths and channels checked."""
    length = _gather(records, offsets + 1, "<u8").astype(np.int64)
    if (length < MESSAGE_HEAD.size).any() or (offsets + RECORD_HEAD.size + length > records.size).any():
        raise ValueError("a message record overruns the chunk")
    return RecordBlock(_gather(records, offsets + RECORD_HEAD.size, "<u2").astype(np.int64),
                       _gather(records, offsets + RECORD_HEAD.size + 6, "<u8").astype(np.int64), records,
                       offsets + _DATA_OFFSET, length - MESSAGE_HEAD.size)


def _gather(buffer: np.ndarray, positions: np.ndarray, dtype: str) -> np.ndarray:
    """The little-endian numbers of type ``dtype`` at byte ``positions`` of ``buffer``."""
    size = np.dtype(dtype).itemsize
    return buffer[positions[:, None] + np.arange(size)].view(dtype).reshape(-1)


def chunk_messages(records: np.ndarray, channel_ids: set[int]) -> RecordBlock:
    """The messages of ``channel_ids`` among a chunk's ``records``, found by walking them (a chunk without
    message indexes); RecordStop at a record that does not fit."""
    buffer = memoryview(records)
    offsets = [offset for offset, opcode, body, body_end in mcap_records(buffer, 0, len(buffer))
               if opcode == MESSAGE and body_end - body >= MESSAGE_HEAD.size
               and U16.unpack_from(buffer, body)[0] in channel_ids]
    return _message_block(records, np.array(offsets, dtype=np.int64))


# ---------------------------------------------------------------- sqlite3


def sqlite_blocks(connection, topic_ids: set[int], size: int) -> Iterator[RecordBlock]:
    """:class:`RecordBlock` of at most ``size`` messages of ``topic_ids`` from the open rosbag2 database
    ``connection`` (sqlite3), in receive-time order (``ORDER BY timestamp, id``)."""
    ids = sorted(topic_ids)
    if not ids:
        return
    cursor = connection.execute(f"SELECT topic_id, timestamp, data FROM messages WHERE topic_id IN "
                                f"({', '.join('?' * len(ids))}) ORDER BY timestamp, id", ids)
    while True:
        batch = cursor.fetchmany(size)
        if not batch:
            return
        yield _block_of(batch)


def sqlite_topics(connection) -> dict[int, tuple[str, str, str]]:
    """Topic id -> (name, type, serialization format) of an open rosbag2 database."""
    return {topic_id: (name, msgtype, encoding) for topic_id, name, msgtype, encoding in connection.execute(
        "SELECT id, name, type, serialization_format FROM topics")}


def open_sqlite(path: Path) -> sqlite3.Connection:
    """A read-only sqlite3 connection to the rosbag2 database at ``path``."""
    return sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)
