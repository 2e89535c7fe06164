"""Reading and writing rosbag2 recordings with the pure-Python ``rosbags`` library (no ROS needed).

Topics read by :func:`read_bag` (all stamps are header stamps, not receive times):

- ``joint_states_topic`` (``sensor_msgs/msg/JointState``): sample times, ``position`` -> q
  [rad], ``velocity`` -> qd [rad/s] (when the messages carry it) and, without
  ``effort_topic``, ``effort`` -> tau [N m]. Joints are matched by name in every message, so
  the order may change from message to message and extra joints are ignored.
- ``motor_states_topic`` (optional, ``sensor_msgs/msg/JointState`` named by the transmission's
  motors; the recorder's ``/motor_states``): motor-side states read instead of the joint states,
  ``position`` [rad at the motor], ``velocity`` [rad/s] and ``effort`` [N m at the motor],
  turned into q, qd and tau through the robot's transmission (``q = T^-1 qm``, ``tau = T^T
  tau_m``; :mod:`robot_dynid.recordings.motor_side`). Read by default when the bag has
  messages on ``/motor_states`` and the robot has a transmission (or the bag has no joint
  states); ``""`` never.
- ``effort_topic`` (optional, ``sensor_msgs/msg/JointState``): torques ``effort`` [N m] from
  a second topic, linearly interpolated at the joint-state stamps (exact where the stamps
  coincide); joint-state samples outside its time span are dropped.
- ``current_topic`` (optional, ``sensor_msgs/msg/JointState``, instead of ``effort_topic``):
  motor currents [A] in the ``effort`` field, interpolated like efforts and turned into joint
  torques by ``torque_from_current`` (the robot's torque constants and gear ratios,
  :meth:`robot_dynid.model.robot_description.RobotDescription.torque_from_current`); with a
  transmission, named by motor and turned into joint torques by its torque constants and T^T.
- ``temperature_topic`` (optional, ``sensor_msgs/msg/JointState``): joint temperatures
  [deg C] carried in the ``effort`` field, joints matched by name, linearly interpolated at the
  joint-state stamps and held constant beyond its first and last message.
- ``stage_topic`` (``robot_dynid/msg/ExperimentStage``): stage markers labelling every sample
  with a stage and a cycle (see :mod:`robot_dynid.recordings.stages`); absent topic: no labels.

Both storage plugins (MCAP and sqlite3) are opened through ``rosbags.highlevel.AnyReader``; a bag
that was never closed (no metadata.yaml) or whose storage file was cut short is read up to its
last complete message by :mod:`robot_dynid.recordings.bag_recovery`, with a warning. The messages are
read from the storage files in blocks (:mod:`robot_dynid.recordings.bag_records`: whole MCAP chunks,
batches of sqlite3 rows) by :class:`BagChunks`, on which :func:`read_bag` is built: JointStates of one
byte layout are decoded together (:class:`~robot_dynid.recordings.bag_layout.JointStateLayout`), the
others by rosbags' deserializer, in the order rosbags' reader gives them (identical recordings).
:class:`BagWriter` writes rosbag2 directories (metadata version 8) incrementally.
"""
from __future__ import annotations

import dataclasses
import errno
import functools
import logging
import math
import os
import shutil
import sqlite3
import struct
import threading
from collections import defaultdict
from contextlib import ExitStack, contextmanager
from io import BytesIO
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np
import yaml
from rosbags.highlevel import AnyReader, AnyReaderError
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag2 import StoragePlugin, Writer, WriterError
from rosbags.rosbag2.storage_mcap import McapWriter
from rosbags.rosbag2.storage_sqlite3 import Sqlite3Writer
from rosbags.typesys import TypesysError

from robot_dynid import validators
from robot_dynid.errors import DataError, DynIdError
from robot_dynid.recordings import bag_records
from robot_dynid.recordings.bag_files import (BAG_METADATA_VERSION, CLOSING_RESERVE, RESERVE_FILE, STORAGE_PLUGINS,
                                              check_bag_files, ensure_type, lock_bag_directory, make_typestore)
from robot_dynid.recordings.bag_layout import (DEFAULT_HYDRAULIC_TOPIC, DEFAULT_JOINT_STATES_TOPIC,
                                               DEFAULT_MOTOR_STATES_TOPIC, DEFAULT_STAGE_TOPIC, EXPERIMENT_STAGE_TYPE,
                                               HYDRAULIC_STATE_TYPE, JOINT_STATE_FIELDS, JOINT_STATE_TYPE,
                                               joint_state_layout)
from robot_dynid.recordings.joint_states import LENGTH_MISMATCH, NON_FINITE, JointStateSelector
from robot_dynid.recordings.motor_side import (check_joint_count, joint_values, require_torque_constants,
                                               require_transmission)
from robot_dynid.recordings.recording import (REPEATED_STAMP, DropCounter, GatheredRows, Recording, describe_dropped,
                                              finite_rows, hand_over)
from robot_dynid.recordings.stages import StageMarker, kind_name, label_samples, stage_intervals
from robot_dynid.stored_columns import column_pieces, select_rows
from robot_dynid.yaml_files import read_yaml

__all__ = ["ns_to_seconds", "TopicSamples", "BagChunk", "BagChunks", "bag_topics", "read_stage_markers", "read_bag",
           "offered_qos", "MB", "RecordingStopped", "DiskSpaceError", "free_space", "BagWriter", "HYDRAULIC_FIELDS",
           "read_hydraulic_states"]

logger = logging.getLogger(__name__)

_NS_PER_S = 1_000_000_000
_BLOCK_MESSAGES = 16384
"""Messages decoded together: sqlite3 rows per batch, MCAP chunks joined up to about this many (a chunk of
rosbags and the recorder holds 1 MiB, about 3,000 JointStates of 6 joints)."""
_MAX_LAYOUTS = 16
"""Byte layouts (:class:`~robot_dynid.recordings.bag_layout.JointStateLayout`) one topic may show before the rest
of its messages is decoded one by one: names reordered, a joint added, another frame_id are a few each."""


def ns_to_seconds(stamps_ns) -> np.ndarray:
    """Integer nanoseconds (N,) to float seconds (N,), splitting whole seconds off first so
    that absolute ROS times keep the full float64 resolution (about 0.2 us today)."""
    stamps_ns = np.asarray(stamps_ns, dtype=np.int64)
    return (stamps_ns // _NS_PER_S).astype(np.float64) + (stamps_ns % _NS_PER_S) * 1e-9


def _stamp_ns(header) -> int:
    return int(header.stamp.sec) * _NS_PER_S + int(header.stamp.nanosec)


class _BagContents:
    """An open AnyReader (or, for an incomplete bag, a
    :class:`robot_dynid.recordings.bag_recovery.RecoveredBag`) with topic look-up and deserialisation that
    fall back to robot_dynid's own typestore for types the bag does not define, and the bag's message records
    in blocks (:meth:`record_blocks`)."""

    def __init__(self, reader, fallback_typestore, path: Path):
        self.reader = reader
        self.fallback = fallback_typestore
        self.path = path
        self.topics = reader.topics
        self.files = ExitStack()

    def describe_topics(self) -> str:
        return ", ".join(f"{name} ({info.msgtype}, {info.msgcount} messages)"
                         for name, info in sorted(self.topics.items())) or "none"

    def has_messages(self, topic: str) -> bool:
        return topic in self.topics and self.topics[topic].msgcount > 0

    def check_topic(self, topic: str, msgtype: str) -> None:
        """DataError unless ``topic`` has messages of ``msgtype``."""
        if topic in self.topics and not self.has_messages(topic):
            raise DataError(f"topic {topic!r} recorded no message in bag {self.path} (it was subscribed to while "
                            f"recording, but nothing arrived on it); its topics: {self.describe_topics()}")
        if not self.has_messages(topic):
            raise DataError(f"topic {topic!r} has no messages in bag {self.path}; its topics: "
                            f"{self.describe_topics()}")
        info = self.topics[topic]
        if info.msgtype != msgtype:
            raise DataError(f"topic {topic!r} in bag {self.path} has type {info.msgtype!r}, "
                            f"expected {msgtype!r}")

    def deserializer(self, msgtype: str) -> Callable:
        """``deserialize(data, msgtype)``: the bag's definition of ``msgtype``, else robot_dynid's typestore."""
        if msgtype in self.reader.typestore.types:
            return self.reader.deserialize
        ensure_type(self.fallback, msgtype)
        return self.fallback.deserialize_cdr

    def messages(self, topic: str, msgtype: str):
        """(receive time [ns], message) of every message of ``topic``, in receive order."""
        self.check_topic(topic, msgtype)
        deserialize = self.deserializer(msgtype)
        for connection, receive_ns, raw in self.reader.messages(connections=self.topics[topic].connections):
            yield receive_ns, deserialize(raw, connection.msgtype)

    def count(self, topic: str) -> int:
        return self.topics[topic].msgcount

    def record_blocks(self, topics: Sequence[str], bulk: bool, size: int):
        """``(blocks, sort)``: the messages of ``topics`` as
        :class:`~robot_dynid.recordings.bag_records.RecordBlock` (``channel``: the index of the message's topic in
        ``topics``) in the order rosbags' reader gives them, each block in that order once sorted by receive time
        (stable) where ``sort``.

        Read from the storage files themselves (whole MCAP files by their chunk and message indexes, sqlite3
        files in batches of rows) where that gives rosbags' order; through the reader otherwise (rosbags'
        reader, always without ``bulk``; an incomplete bag's recovery), saying why at INFO.
        """
        index = {topic: position for position, topic in enumerate(topics)}
        if bulk and isinstance(self.reader, AnyReader):
            storage = _storage_files(self.path)
            if not isinstance(storage, str):
                plugin, files = storage
                opened = (self._mcap_files if plugin == "mcap" else self._sqlite_files)(files, index)
                if not isinstance(opened, str):
                    return self._file_blocks(plugin, opened, size), plugin == "mcap"
                storage = opened
            logger.info("bag %s: read message by message through rosbags' reader: %s", self.path, storage)
        connections = [connection for topic in topics for connection in self.topics[topic].connections]
        channels = {connection.id: index[connection.topic] for connection in connections}
        raw = ((connection.id, receive_ns, data)
               for connection, receive_ns, data in self.reader.messages(connections=connections))
        return (_relabel(block, channels) for block in
                bag_records.blocks_from_messages(raw, size)), False

    def _mcap_files(self, files, index: dict[str, int]):
        """[((open file, its summary), channel id -> topic index)] of the MCAP ``files``, or why they cannot be
        read by their indexes."""
        opened = []
        for path in files:
            handle = self.files.enter_context(open(path, "rb"))
            try:
                summary = bag_records.read_mcap_summary(handle, path.stat().st_size)
            except (ValueError, struct.error, bag_records.RecordStop) as error:
                return f"{path.name}: {error}"
            if summary is None:
                return f"{path.name} has no chunk index"
            if not summary.in_receive_order():
                return f"{path.name}: chunks overlap in receive time"
            opened.append(((handle, summary), self._channel_topics(
                {channel_id: (channel.topic, channel.msgtype, channel.encoding)
                 for channel_id, channel in summary.channels.items()}, index)))
        return opened

    def _sqlite_files(self, files, index: dict[str, int]):
        """[(open database, topic id -> topic index)] of the sqlite3 ``files``, or why they cannot be read."""
        opened = []
        for path in files:
            try:
                connection = bag_records.open_sqlite(path)
                self.files.callback(connection.close)
                opened.append((connection, self._channel_topics(bag_records.sqlite_topics(connection), index)))
            except sqlite3.Error as error:
                return f"{path.name}: {error}"
        return opened

    def _channel_topics(self, channels: dict, index: dict[str, int]) -> dict[int, int]:
        """Channel id -> index of its topic, of the ``channels`` (id -> topic, type, encoding) of one storage file
        that carry a topic of ``index`` as the bag's metadata types it, in CDR."""
        return {channel_id: index[topic] for channel_id, (topic, msgtype, encoding) in channels.items()
                if topic in index and msgtype == self.topics[topic].msgtype and encoding == "cdr"}

    @staticmethod
    def _file_blocks(plugin: str, opened, size: int) -> Iterator[bag_records.RecordBlock]:
        for source, channels in opened:
            if plugin == "mcap":
                handle, summary = source
                blocks = bag_records.mcap_blocks(handle, summary, set(channels), size)
            else:
                blocks = bag_records.sqlite_blocks(source, set(channels), size)
            for block in blocks:
                yield _relabel(block, channels)

    def close(self) -> None:
        self.files.close()
        self.reader.close()


def _relabel(block: bag_records.RecordBlock, channels: dict[int, int]) -> bag_records.RecordBlock:
    """``block`` with each message's channel replaced by ``channels[channel]`` (-1 for any other)."""
    table = np.full(max(channels, default=0) + 1, -1, dtype=np.int64)
    table[list(channels)] = list(channels.values())
    known = block.channel < table.size
    return dataclasses.replace(block, channel=np.where(known, table[np.where(known, block.channel, 0)], -1))


def _storage_files(path: Path):
    """(storage plugin, storage files in the order rosbags reads them) of a whole bag, or why its files are not
    read directly (compressed files or messages)."""
    metadata = read_yaml(path / "metadata.yaml", DataError, "bag metadata").get("rosbag2_bagfile_information", {})
    try:
        plugin, names = metadata["storage_identifier"], metadata["relative_file_paths"]
    except (KeyError, TypeError):
        return "its metadata lists no storage files"
    mode = str(metadata.get("compression_mode", "") or "").lower()
    if mode not in ("", "none"):
        return f"its {mode}s are compressed"
    if plugin not in STORAGE_PLUGINS:
        return f"storage {plugin!r}"
    return plugin, [path / Path(name).name for name in names]


@contextmanager
def _open_bag(path, distro: str | None) -> Iterator[_BagContents]:
    path = Path(path)
    if not path.exists():
        raise DataError(f"bag {path} does not exist")
    check_bag_files(path)
    typestore = make_typestore(distro)
    try:
        reader = AnyReader([path], default_typestore=typestore)
        reader.open()
    except TypesysError as error:
        raise DataError(f"cannot open bag {path}: {error}") from error
    except (AnyReaderError, OSError, TypeError) as error:   # no metadata.yaml (FileNotFoundError),
        # storage cut short (AnyReaderError; TypeError for an MCAP file cut just after its magic)
        from robot_dynid.recordings.bag_recovery import open_incomplete_bag
        reader = open_incomplete_bag(path, error)   # warns what it recovered; DataError if whole
    bag = _BagContents(reader, typestore, path)
    try:
        yield bag
    finally:
        bag.close()


@dataclasses.dataclass
class _Decoded:
    """JointState messages of one topic decoded, in the order read: receive times (k,) and header stamps (k,)
    [ns], and per group of messages with the same names and field lengths ``(names, positions (g,) in that
    order, {field: values (g, count)})``."""

    receive_ns: np.ndarray
    stamp_ns: np.ndarray
    groups: list


class _JointStateTopic:
    """One JointState topic read for ``fields`` (the first required) of ``joint_names``: its messages decoded in
    bulk where their byte layout repeats, each by ``deserialize`` (rosbags) where it does not (said once, at
    INFO), and selected as :class:`~robot_dynid.recordings.joint_states.JointStateSelector` selects them."""

    def __init__(self, topic: str, joint_names, fields: tuple[str, ...], deserialize, bulk: bool):
        self.topic = topic
        self.fields = fields
        self.selector = JointStateSelector(joint_names, required=fields[0])
        self.deserialize = deserialize
        self.bulk = bulk
        self.layouts: dict[int, list] = defaultdict(list)
        self.n_layouts = 0
        self.skipped = DropCounter()
        self.general_reason = None

    def decode(self, block: bag_records.RecordBlock) -> _Decoded:
        """The messages of ``block`` decoded (see the class docstring)."""
        stamps = np.zeros(len(block), dtype=np.int64)
        groups: dict[tuple, list] = defaultdict(list)
        general = [np.arange(len(block))] if not self.bulk else []
        if self.bulk:
            for size in np.unique(block.length):
                for positions, rows in block.rows(np.flatnonzero(block.length == size), int(size)):
                    general.append(self._decode_rows(positions, rows, int(size), stamps, groups))
        for position in np.concatenate(general).tolist() if general else ():
            message = self.deserialize(block.data(position), JOINT_STATE_TYPE)
            stamps[position] = _stamp_ns(message.header)
            values = {field: np.asarray(getattr(message, field), dtype=np.float64).reshape(1, -1)
                      for field in self.fields}
            key = (tuple(message.name), tuple(values[field].shape[1] for field in self.fields))
            groups[key].append((np.array([position]), values))
        return _Decoded(block.receive_ns, stamps, [
            (names, *parts[0]) if len(parts) == 1 else       # one piece (one layout, one run): its own arrays
            (names, np.concatenate([positions for positions, _ in parts]),
             {field: np.concatenate([values[field] for _, values in parts]) for field in self.fields})
            for (names, _), parts in groups.items()])

    def _decode_rows(self, positions, rows, size: int, stamps, groups) -> np.ndarray:
        """Decode the messages ``rows`` (m, size) at ``positions`` by their layouts; the positions left to the
        general deserializer."""
        remaining = np.arange(positions.size)
        candidates = self.layouts[size]
        tried = 0
        while remaining.size:
            if tried < len(candidates):
                layout = candidates[tried]
            elif self.n_layouts < _MAX_LAYOUTS:
                try:
                    layout = joint_state_layout(rows[remaining[0]].tobytes())
                except DataError as error:
                    self._say_general(f"a message is not CDR the bulk decoder reads ({error})")
                    return positions[remaining]
                candidates.append(layout)
                self.n_layouts += 1
            else:
                self._say_general(f"its messages change their byte layout (names, their order, frame_id or field "
                                  f"lengths) more than {_MAX_LAYOUTS} times")
                return positions[remaining]
            tried += 1
            subset = rows if remaining.size == positions.size else rows[remaining]
            match = layout.matches(subset)
            if match.any():
                matched = subset[match] if not match.all() else subset
                at = positions[remaining[match]]
                stamps[at] = layout.stamps(matched)
                values = {field: layout.values(matched, field) for field in self.fields}
                groups[(layout.names, tuple(values[field].shape[1] for field in self.fields))].append((at, values))
                remaining = remaining[~match]
        return positions[:0]

    def _say_general(self, reason: str) -> None:
        if self.general_reason is None:
            self.general_reason = reason
            logger.info("%s: %s; those messages are decoded one by one by rosbags' deserializer", self.topic,
                        reason)

    def select(self, decoded: _Decoded):
        """``(stamps (m,) [ns], receive times (m,) [ns], {field: values (m, n)})`` of the usable messages of
        ``decoded`` in its order, NaN where a message leaves a field empty; the others counted in
        :attr:`skipped` under ``"<topic>: <reason>"`` (with the first one's stamp)."""
        reason = np.full(decoded.receive_ns.size, -1, dtype=np.int64)
        texts: list[str] = []

        def code(text: str) -> int:
            if text not in texts:
                texts.append(text)
            return texts.index(text)

        selected = []
        for names, positions, values in sorted(decoded.groups, key=lambda group: group[1].min()):
            columns = self.selector.columns(names)
            if isinstance(columns, str):
                reason[positions] = code(columns)
                continue
            row_reason = np.full(positions.size, -1, dtype=np.int64)
            picked = {}
            for field in self.fields:
                pending = row_reason < 0
                array = values[field]
                if array.shape[1] == 0:
                    if field in self.selector.required:
                        row_reason[pending] = code(f"empty {field}")
                elif array.shape[1] != len(names):
                    row_reason[pending] = code(LENGTH_MISMATCH)
                else:
                    array = array[:, columns]
                    row_reason[pending & ~finite_rows(array)] = code(NON_FINITE)
                    picked[field] = array
            reason[positions] = row_reason
            usable = row_reason < 0
            selected.append((positions[usable], picked if usable.all() else
                             {field: array[usable] for field, array in picked.items()}))
        self._count_skipped(decoded, reason, texts)
        usable = np.flatnonzero(reason < 0)
        n = 0 if self.selector.joint_names is None else len(self.selector.joint_names)
        positions, picked = selected[0] if len(selected) == 1 else (None, {})
        if positions is not None and positions.size == usable.size and np.all(np.diff(positions) > 0) \
                and all(array.shape[1] == n for array in picked.values()):
            # one group holds every usable message, in order (one driver's messages): its arrays are the rows
            return decoded.stamp_ns[usable], decoded.receive_ns[usable], {
                field: picked[field] if field in picked else np.full((usable.size, n), np.nan)
                for field in self.fields}
        arrays = {field: np.full((usable.size, n), np.nan) for field in self.fields}
        row_of = np.full(reason.size, -1, dtype=np.int64)
        row_of[usable] = np.arange(usable.size)
        for positions, picked in selected:
            for field, array in picked.items():
                arrays[field][row_of[positions]] = array
        return decoded.stamp_ns[usable], decoded.receive_ns[usable], arrays

    def _count_skipped(self, decoded: _Decoded, reason: np.ndarray, texts: list[str]) -> None:
        skipped = np.flatnonzero(reason >= 0)
        if not skipped.size:
            return
        stamps = decoded.stamp_ns[skipped]
        seconds = ns_to_seconds(np.where(stamps != 0, stamps, decoded.receive_ns[skipped]))
        codes = reason[skipped]
        _, first = np.unique(codes, return_index=True)
        for index in np.sort(first):
            mine = codes == codes[index]
            self.skipped.add(f"{self.topic}: {texts[codes[index]]}", float(seconds[mine].min()),
                             int(np.count_nonzero(mine)))


@dataclasses.dataclass(frozen=True)
class TopicSamples:
    """The usable messages of one JointState topic in a stretch of a bag, in receive order.

    Attributes
    ----------
    topic : str
    stamp_ns, receive_ns : ndarray of int64, shape (m,)
        Header stamps (0 where a driver sets none) and bag (receive) times [ns].
    values : dict
        Field -> (m, n) in the order of the names read (joints, or the transmission's motors), NaN where a
        message leaves the field empty: ``position`` [rad], ``velocity`` [rad/s], ``effort`` [N m, A for currents,
        deg C for temperatures].
    """

    topic: str
    stamp_ns: np.ndarray
    receive_ns: np.ndarray
    values: dict


@dataclasses.dataclass(frozen=True)
class BagChunk:
    """One stretch of a bag (an MCAP chunk, a batch of sqlite3 rows) as :class:`BagChunks` reads it.

    Attributes
    ----------
    samples : TopicSamples
        The joint states, joint side (motor states converted through the transmission): ``position`` q [rad],
        ``velocity`` qd [rad/s], ``effort`` tau [N m].
    effort, current, temperature : TopicSamples or None
        The messages of ``effort_topic`` (``effort`` [N m], joint order), ``current_topic`` (``effort``: currents
        [A], in joint order, or motor order with a transmission) and ``temperature_topic`` (``effort``: [deg C]),
        at their own stamps; None when the topic is not read.
    markers : tuple of StageMarker
        The stage markers in this stretch, in receive order.
    """

    samples: TopicSamples
    effort: TopicSamples | None
    current: TopicSamples | None
    temperature: TopicSamples | None
    markers: tuple


class BagChunks:
    """The samples of a rosbag2 bag (MCAP or sqlite3) stretch by stretch, in bounded memory: the iterator
    :func:`read_bag` is built on.

    Opening checks the topics (present, of the right type) and decides which are read (motor states or joint
    states, module docstring); iterating yields a :class:`BagChunk` per MCAP chunk (the writer's size: rosbags
    and the recorder write 1 MiB, about 3,000 JointStates) or per 4,096 sqlite3 rows. JointStates are decoded in
    bulk where their byte layout repeats (a fixed joint set; :mod:`robot_dynid.recordings.bag_layout`), by
    rosbags' deserializer where it does not, with identical results.

    Parameters
    ----------
    path, joint_names, joint_states_topic, effort_topic, stage_topic, temperature_topic, current_topic, distro,
    motor_states_topic, transmission
        As :func:`read_bag`.
    bulk : bool
        Decode JointStates in bulk where their layout repeats; False: every message through rosbags'
        deserializer (the reference the bulk decoding is tested against).
    messages : int
        About this many messages per chunk (whole MCAP chunks are joined up to it, sqlite3 rows fetched so many
        at a time).

    Attributes
    ----------
    positions_topic : str
        The topic the samples come from (joint states, or motor states with ``motor_side``).
    motor_side : bool
    joint_names : tuple of str or None
        The joints of the samples' columns (None until the first usable message when not given).
    current_names : tuple of str or None
        The names of the currents' columns (the motors with a transmission).
    dropped : DropCounter
        Messages skipped, by ``"<topic>: <reason>"``, counted as the stretches are read.

    Raises
    ------
    DataError
        As :func:`read_bag` for a topic that is missing, empty, of the wrong type, or motor-side data without a
        transmission.
    """

    def __init__(self, path, joint_names: Sequence[str] | None = None,
                 joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC, effort_topic: str | None = None,
                 stage_topic: str | None = DEFAULT_STAGE_TOPIC, temperature_topic: str | None = None,
                 current_topic: str | None = None, distro: str | None = None, motor_states_topic: str | None = None,
                 transmission=None, *, bulk: bool = True, messages: int = _BLOCK_MESSAGES):
        self.path = Path(path)
        self.messages = messages
        self._context = _open_bag(path, distro)
        bag = self._bag = self._context.__enter__()
        try:
            self._plan(bag, joint_names, joint_states_topic, effort_topic, stage_topic, temperature_topic,
                       current_topic, motor_states_topic, transmission, bulk)
        except BaseException:
            self.close()
            raise

    def _plan(self, bag, joint_names, joint_states_topic, effort_topic, stage_topic, temperature_topic,
              current_topic, motor_states_topic, transmission, bulk) -> None:
        path = self.path
        motor_topic = _motor_states_topic(bag, motor_states_topic, joint_states_topic, transmission)
        self.motor_side = motor_topic is not None
        self.transmission = transmission
        self._given_names = None if joint_names is None else tuple(joint_names)
        if self.motor_side:
            self.transmission = require_transmission(
                transmission, f"bag {path}, topic {motor_topic!r}", "its JointStates (motor states)",
                f"joint-side joint states (--motor-states-topic '' reads {joint_states_topic})")
            check_joint_count(self.transmission, joint_names, f"bag {path}")
            self.positions_topic = motor_topic
            logger.info("bag %s: motor states of %s converted to the joint side through the transmission", path,
                        motor_topic)
        else:
            self.positions_topic = joint_states_topic
        bag.check_topic(self.positions_topic, JOINT_STATE_TYPE)
        joint_state = bag.deserializer(JOINT_STATE_TYPE)
        self._roles = {"samples": _JointStateTopic(
            self.positions_topic, self.transmission.motor_names if self.motor_side else self._given_names,
            JOINT_STATE_FIELDS, joint_state, bulk)}
        for role, topic in (("effort", effort_topic), ("current", current_topic), ("temperature", temperature_topic)):
            if topic is not None:
                bag.check_topic(topic, JOINT_STATE_TYPE)
                self._roles[role] = _JointStateTopic(topic, None, ("effort",), joint_state, bulk)
        if current_topic is not None and self.transmission is not None:
            require_torque_constants(self.transmission, f"bag {path}, topic {current_topic!r}", "its efforts",
                                     "torques on an effort topic")
        self.markers_topic = None
        if stage_topic is not None and bag.has_messages(stage_topic):
            bag.check_topic(stage_topic, EXPERIMENT_STAGE_TYPE)
            self.markers_topic = stage_topic
            self._deserialize_marker = bag.deserializer(EXPERIMENT_STAGE_TYPE)
        elif stage_topic is not None:
            logger.info("bag %s has no messages on %s: samples carry no stage labels", path, stage_topic)
        self._bulk = bulk
        self.current_names = None

    @property
    def joint_names(self) -> tuple[str, ...] | None:
        if self.motor_side or self._given_names is not None:
            return self._given_names
        return self._roles["samples"].selector.joint_names

    def topic(self, role: str) -> str | None:
        """The topic read for ``role`` (``samples``, ``effort``, ``current``, ``temperature``), None if none."""
        return self._roles[role].topic if role in self._roles else None

    def message_count(self, role: str) -> int:
        """Messages of the topic read for ``role``."""
        return self._bag.count(self._roles[role].topic) if role in self._roles else 0

    def skipped(self, role: str) -> DropCounter:
        """Messages of ``role``'s topic skipped so far, by ``"<topic>: <reason>"`` (with the first one's stamp)."""
        return self._roles[role].skipped

    def _name_other_topics(self) -> None:
        """The effort and temperature topics read for the joints read, the currents for them or, with a
        transmission, its motors."""
        names = self.joint_names
        for role in ("effort", "current", "temperature"):
            if role not in self._roles or self._roles[role].selector.names is not None:
                continue
            role_names = names
            if role == "current" and self.transmission is not None:
                check_joint_count(self.transmission, names, f"bag {self.path}, topic {self._roles[role].topic!r}")
                role_names = self.transmission.motor_names
            if role == "current":
                self.current_names = tuple(role_names)
            self._roles[role].selector = JointStateSelector(role_names, required="effort")

    def __iter__(self) -> Iterator[BagChunk]:
        topics = list(dict.fromkeys([reading.topic for reading in self._roles.values()]
                                    + ([self.markers_topic] if self.markers_topic else [])))
        blocks, sort = self._bag.record_blocks(topics, self._bulk, self.messages)
        waiting: list[dict] = []       # other topics' messages decoded while the joints read are not known yet
        for block in blocks:
            if sort and np.any(np.diff(block.receive_ns) < 0):
                block = block.take(np.argsort(block.receive_ns, kind="stable"))
            decoded = {role: reading.decode(block.take(block.channel == topics.index(reading.topic)))
                       for role, reading in self._roles.items()}
            samples = self._roles["samples"]
            stamps, receive, values = samples.select(decoded.pop("samples"))
            if self.motor_side:
                values = {field: joint_values(motor_field, values[field], self.transmission)
                          for field, motor_field in (("position", "qm"), ("velocity", "qdm"), ("effort", "taum"))}
            others = dict.fromkeys(decoded)
            waiting.append(decoded)
            if self.joint_names is not None:
                self._name_other_topics()
                for role in others:
                    parts = [self._roles[role].select(pending[role]) for pending in waiting]
                    others[role] = TopicSamples(self._roles[role].topic, *(
                        np.concatenate([part[index] for part in parts]) for index in (0, 1)),
                        {"effort": np.concatenate([part[2]["effort"] for part in parts])})
                waiting = []
            markers = ()
            if self.markers_topic:
                mine = block.take(block.channel == topics.index(self.markers_topic))
                markers = tuple(_marker(self._deserialize_marker(mine.data(index), EXPERIMENT_STAGE_TYPE),
                                        int(mine.receive_ns[index]), self.markers_topic) for index in range(len(mine)))
            yield BagChunk(TopicSamples(self.positions_topic, stamps, receive, values), others.get("effort"),
                           others.get("current"), others.get("temperature"), markers)

    def close(self) -> None:
        self._context.__exit__(None, None, None)

    def __enter__(self) -> "BagChunks":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def _marker(message, receive_ns: int, topic: str) -> StageMarker:
    stamp_ns = _stamp_ns(message.header) or receive_ns
    try:
        return StageMarker.from_fields(
            float(ns_to_seconds([stamp_ns])[0]), message.kind, message.cycle, message.start, message.label,
            message.joint_name, message.speed_fraction, message.direction, message.experiment_id)
    except DataError as error:
        raise DataError(f"topic {topic!r}: stage marker stamped {stamp_ns} ns: {error}") from None


def _interpolate(stamps_ns: np.ndarray, source_ns: np.ndarray, values: np.ndarray,
                 hold_edges: bool) -> np.ndarray:
    """``values`` (M, n) stamped ``source_ns`` (M,) linearly interpolated at ``stamps_ns``
    (N,) -> (N, n); beyond the source span the edge values are held or NaN. Stamps are made
    relative first: absolute nanoseconds as floats would lose the sub-microsecond digits."""
    from robot_dynid.recordings.signal_processing import interpolate
    order = np.argsort(source_ns, kind="stable")
    origin = int(min(source_ns[order[0]], stamps_ns[0]))
    return interpolate((stamps_ns - origin).astype(np.float64), (source_ns[order] - origin).astype(np.float64),
                       values[order], "hold" if hold_edges else "nan")


def bag_topics(path, distro: str | None = None) -> dict[str, tuple[str, int]]:
    """Topic name -> (message type, message count) of a bag; a topic recorded with no message counts 0."""
    with _open_bag(path, distro) as bag:
        return {name: (info.msgtype, info.msgcount) for name, info in bag.topics.items()}


def read_stage_markers(path, stage_topic: str = DEFAULT_STAGE_TOPIC,
                       distro: str | None = None) -> list[StageMarker]:
    """Stage markers of a bag in receive order (friction sub-stage details included).

    Raises
    ------
    DataError
        The bag cannot be opened, or ``stage_topic`` is absent, empty or of another type.
    """
    with _open_bag(path, distro) as bag:
        return [_marker(message, receive_ns, stage_topic)
                for receive_ns, message in bag.messages(stage_topic, EXPERIMENT_STAGE_TYPE)]


def _gather(gathered: GatheredRows, samples: TopicSamples | None) -> None:
    if samples is not None:
        gathered.add(stamps=samples.stamp_ns, receive=samples.receive_ns, **samples.values)


def _topic_samples(chunks: BagChunks, role: str, gathered: GatheredRows, dropped: DropCounter):
    """Stamps (M,) [ns] of the usable messages of ``role``'s topic in receive order and its fields (M, n), NaN
    where a message leaves a field empty: the skipped messages warned about and counted in ``dropped``, receive
    times in place of header stamps that are all zero; DataError when none is usable."""
    topic, count, skipped = chunks.topic(role), chunks.message_count(role), chunks.skipped(role)
    if skipped.counts:
        logger.warning("%s: skipped %d of %d messages: %s", topic, count - gathered.rows, count,
                       describe_dropped(skipped.counts))
    if gathered.rows == 0:
        raise DataError(f"topic {topic!r} in bag {chunks.path}: none of its {count} messages is usable: "
                        f"{describe_dropped(skipped.counts)}")
    dropped.merge(skipped.counts)
    values = gathered.columns()
    stamps, receive = values.pop("stamps"), values.pop("receive")
    if not np.any(stamps):
        logger.warning("topic %s: every header stamp is zero; using the bag's receive times", topic)
        stamps = receive
    return stamps, values


def read_bag(path, joint_names: Sequence[str] | None = None,
             joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC, effort_topic: str | None = None,
             stage_topic: str | None = DEFAULT_STAGE_TOPIC, temperature_topic: str | None = None,
             current_topic: str | None = None,
             torque_from_current: Callable[[np.ndarray], np.ndarray] | None = None,
             distro: str | None = None, motor_states_topic: str | None = None, transmission=None, *,
             bulk: bool = True) -> Recording:
    """Recording from a rosbag2 directory (MCAP or sqlite3); topics as in the module docstring.

    Parameters
    ----------
    path : str or Path
        The bag directory.
    joint_names : sequence of str, optional
        Joints to read, in the order of the result's columns; default: those of the first
        joint-state message, in its order. With motor-side data (motor states, or currents with a
        ``transmission``): the robot's joints, in its order (the columns of T).
    joint_states_topic, effort_topic, stage_topic, temperature_topic, current_topic : str
        Topic names; ``effort_topic``, ``temperature_topic`` and ``current_topic`` None: not
        used; ``stage_topic`` None or absent from the bag: no stage labels.
    torque_from_current : callable, optional
        Motor currents (M, n) [A] in the order of ``joint_names`` -> joint torques (M, n)
        [N m]; required with ``current_topic`` unless a ``transmission`` is given.
    distro : str, optional
        ROS 2 distro of the standard message types (see :func:`make_typestore`).
    motor_states_topic : str, optional
        Motor-side states read instead of ``joint_states_topic`` (module docstring); ``""``:
        never; None: :data:`DEFAULT_MOTOR_STATES_TOPIC` when the bag has messages on it and a
        ``transmission`` is given (or the bag has no joint states).
    transmission : Transmission, optional
        The robot's (:class:`robot_dynid.model.transmission.Transmission`): turns motor states into
        joint values, and ``current_topic``'s currents, named by motor, into joint torques with its
        torque constants (:mod:`robot_dynid.recordings.motor_side`).
    bulk : bool
        Decode JointStates in bulk where their byte layout repeats (:class:`BagChunks`); False: each message by
        rosbags' deserializer. Both give identical recordings.

    Returns
    -------
    Recording
        Samples sorted by header stamp, ``time`` in absolute ROS time [s]; ``qd`` (``tau``)
        None when no message carries velocities (efforts). Messages that cannot be used
        (:mod:`robot_dynid.recordings.joint_states`: empty or duplicate names, a requested joint missing,
        array lengths, NaN/inf) and samples with a repeated stamp, a velocity or effort missing
        where other messages carry one, or outside the effort topic's span are left out and
        counted by reason in ``Recording.dropped`` (with the first one's stamp).

    Raises
    ------
    DataError
        A topic is missing or empty (the bag's topics are listed), of the wrong type, or none
        of its messages is usable (the reasons are counted); motor-side data without a
        transmission, currents without its torque constants.
    """
    _check_torque_topics(effort_topic, current_topic, torque_from_current, transmission)
    dropped = DropCounter()
    with BagChunks(path, joint_names, joint_states_topic, effort_topic, stage_topic, temperature_topic,
                   current_topic, distro, motor_states_topic, transmission, bulk=bulk) as chunks:
        topics = _read_topics(chunks, dropped)
    tau, tau_source = _sample_torques(topics.stamps, topics.joint_state, topics.other, topics.positions_topic,
                                      effort_topic, current_topic, torque_from_current, transmission)
    temperature = None
    if temperature_topic is not None:
        temperature_stamps, temperature_state = topics.other["temperature"]
        temperature = _interpolate(topics.stamps, temperature_stamps, temperature_state["effort"], hold_edges=True)
    return _recording(path, topics, tau, tau_source, temperature, effort_topic is None and current_topic is None,
                      dropped)


def _check_torque_topics(effort_topic: str | None, current_topic: str | None,
                         torque_from_current: Callable[[np.ndarray], np.ndarray] | None, transmission) -> None:
    """Currents take the place of an effort topic and need a conversion to torques (or a transmission)."""
    if current_topic is not None and (effort_topic is not None or (torque_from_current is None
                                                                   and transmission is None)):
        raise DataError("current_topic takes the place of effort_topic and needs "
                        "torque_from_current (the robot's torque constants and gear ratios)"
                        if effort_topic is None else
                        "give either effort_topic (torques) or current_topic (motor currents), not both")


@dataclasses.dataclass(frozen=True)
class _BagTopics:
    """What :func:`read_bag` reads from a bag's topics, before the samples are put together."""

    joint_names: tuple[str, ...]
    positions_topic: str
    stamps: np.ndarray        # (M,) [ns] of the joint states
    joint_state: dict         # "position", "velocity", "effort": (M, n)
    other: dict               # role ("effort", "current", "temperature") -> (stamps (K,) [ns], fields (K, n))
    markers: list[StageMarker] | None


def _read_topics(chunks: BagChunks, dropped: DropCounter) -> _BagTopics:
    """Every chunk of ``chunks`` read: each topic's usable samples (skipped ones counted in ``dropped``) and the
    stage markers."""
    gathered, markers = _gathered_rows(chunks)
    stamps, joint_state = _topic_samples(chunks, "samples", gathered.pop("samples"), dropped)
    names, positions_topic = chunks.joint_names, chunks.positions_topic
    other = {role: _topic_samples(chunks, role, into, dropped) for role, into in gathered.items()}
    return _BagTopics(names, positions_topic, stamps, joint_state, other, markers)


def _recording(path, topics: _BagTopics, tau: np.ndarray, tau_source: str, temperature: np.ndarray | None,
               efforts_in_joint_states: bool, dropped: DropCounter) -> Recording:
    """The samples with a unique stamp and the values other samples have, in stamp order, labelled by the stage
    markers: the Recording (its arrays handed over, not copied); the others counted in ``dropped``."""
    stamps, joint_state, positions_topic = topics.stamps, topics.joint_state, topics.positions_topic
    keep = _unique_stamps(stamps, positions_topic, dropped)
    time = ns_to_seconds(stamps[keep])
    q, qd, tau = (select_rows(values, keep) for values in (joint_state["position"], joint_state["velocity"], tau))
    usable = _complete_samples(time, qd, tau, positions_topic, tau_source, efforts_in_joint_states, dropped)
    if not usable.all():
        logger.warning("%s: dropped %d samples: %s", path, np.count_nonzero(~usable), describe_dropped(dropped.counts))
    stage = cycle = None
    if topics.markers is not None:
        stage, cycle = label_samples(time, stage_intervals(topics.markers))
    rows = slice(None) if usable.all() else np.flatnonzero(usable)
    qd, tau = (None if _all_nan(values) else select_rows(values, rows) for values in (qd, tau))
    temperature = None if temperature is None else temperature[keep][rows]
    hand_over(time, q, qd, tau, temperature)     # this reader's own arrays: the recording shares them
    return Recording.from_arrays(
        joint_names=topics.joint_names, time=time[rows], q=select_rows(q, rows), qd=qd, tau=tau,
        temperature=temperature,
        stage=None if stage is None else stage[rows], cycle=None if cycle is None else cycle[rows],
        source=str(path), dropped=dropped.counts)


def _gathered_rows(chunks: BagChunks) -> tuple[dict[str, GatheredRows], list[StageMarker] | None]:
    """Every chunk of ``chunks`` gathered: the rows of each role's topic read (``samples``, ``effort``,
    ``current``, ``temperature``), and the stage markers in receive order (None without a markers topic)."""
    gathered = {role: GatheredRows(chunks.message_count(role))
                for role in ("samples", "effort", "current", "temperature") if chunks.topic(role)}
    markers = [] if chunks.markers_topic else None
    for chunk in chunks:
        for role, into in gathered.items():
            _gather(into, getattr(chunk, role))
        if markers is not None:
            markers.extend(chunk.markers)
    return gathered, markers


def _sample_torques(stamps: np.ndarray, joint_state: dict, other: dict, positions_topic: str,
                    effort_topic: str | None, current_topic: str | None,
                    torque_from_current: Callable[[np.ndarray], np.ndarray] | None,
                    transmission) -> tuple[np.ndarray, str]:
    """The torques (N, n) [N m] at the joint states' ``stamps`` (N,) [ns] and the reason their missing rows are
    dropped for: the joint states' efforts, else ``effort_topic``'s interpolated (NaN outside its span), else
    ``current_topic``'s currents interpolated and converted (by ``torque_from_current`` or the transmission)."""
    tau = joint_state["effort"]
    tau_source = f"{positions_topic}: effort"
    if effort_topic is not None:
        effort_stamps, effort = other["effort"]
        tau = _interpolate(stamps, effort_stamps, effort["effort"], hold_edges=False)
        tau_source = f"outside the span of {effort_topic}"
    if current_topic is not None:
        convert = torque_from_current if transmission is None else \
            functools.partial(joint_values, "current", transmission=transmission)
        current_stamps, current_state = other["current"]
        current = _interpolate(stamps, current_stamps, current_state["effort"], hold_edges=False)
        tau = np.full_like(current, np.nan)    # NaN rows (outside the topic's span) are dropped
        finite = np.isfinite(current).all(axis=1)
        tau[finite] = convert(current[finite])
        tau_source = f"outside the span of {current_topic}"
    return tau, tau_source


def _unique_stamps(stamps: np.ndarray, positions_topic: str, dropped: DropCounter):
    """The samples to keep of ``stamps`` (N,) [ns], in stamp order, the first of each repeated stamp: all of
    them (``slice(None)``, no copy) when the stamps increase; the others counted in ``dropped``."""
    keep, repeated = slice(None), stamps[:0]        # stamps increasing (the rule): no copy of the samples
    if np.any(stamps[1:] <= stamps[:-1]):
        order = np.argsort(stamps, kind="stable")
        first = np.concatenate(([True], np.diff(stamps[order]) > 0))
        keep, repeated = order[first], order[~first]
    if repeated.size:
        dropped.add(f"{positions_topic}: {REPEATED_STAMP}", float(ns_to_seconds(stamps[repeated].min())),
                    repeated.size)
    return keep


def _complete_samples(time: np.ndarray, qd: np.ndarray, tau: np.ndarray, positions_topic: str, tau_source: str,
                      efforts_in_joint_states: bool, dropped: DropCounter) -> np.ndarray:
    """Which samples (N,) have a velocity and a torque, where other samples have them (a signal absent from
    every sample is no reason to drop one); those without are counted in ``dropped`` by reason."""
    usable = np.ones(time.size, dtype=bool)
    for values, reason in ((qd, f"{positions_topic}: velocity empty while other messages carry it"),
                           (tau, f"{tau_source} empty while other messages carry it"
                            if efforts_in_joint_states else tau_source)):
        absent = _nan_rows(values)
        if absent.any() and not absent.all():
            dropped.add(reason, float(time[np.argmax(absent)]), int(np.count_nonzero(absent & usable)))
            usable &= ~absent
    return usable


def _all_nan(values) -> bool:
    """Whether every value of ``values`` (N, n) (an array or a StoredColumn) is NaN: a field no message carries (a
    first value not NaN decides without a pass)."""
    return values.size == 0 or (bool(np.isnan(values[0, 0])) and
                                all(np.isnan(piece).all() for _, _, piece in column_pieces(values)))


def _nan_rows(values) -> np.ndarray:
    """(N,) whether each row of ``values`` (N, n) (an array or a StoredColumn) holds a NaN, piece by piece (a
    piece whose sum is not NaN has none)."""
    absent = np.zeros(len(values), dtype=bool)
    for start, stop, piece in column_pieces(values):
        with np.errstate(over="ignore", invalid="ignore"):
            if np.isnan(np.sum(piece)):
                absent[start:stop] = np.isnan(piece).any(axis=1)
    return absent


def _motor_states_topic(bag: _BagContents, motor_states_topic: str | None, joint_states_topic: str,
                        transmission) -> str | None:
    """The topic :func:`read_bag` reads motor states from, or None: read the joint states."""
    if motor_states_topic is not None:
        return motor_states_topic or None
    default = DEFAULT_MOTOR_STATES_TOPIC
    if not bag.has_messages(default) or bag.topics[default].msgtype != JOINT_STATE_TYPE:
        return None
    if transmission is not None or not bag.has_messages(joint_states_topic):
        return default
    logger.info("bag %s: reading the joint states of %s; its motor states on %s need a transmission in the robot "
                "description", bag.path, joint_states_topic, default)
    return None


def offered_qos(history: int, depth: int, reliability: int, durability: int, deadline_ns: int, lifespan_ns: int,
                liveliness: int, liveliness_lease_ns: int, avoid_ros_namespace_conventions: bool = False) -> Qos:
    """One publisher's QoS as a bag's ``offered_qos_profiles`` holds it.

    The policies are rmw's numbers (as rclpy's ``HistoryPolicy``, ``ReliabilityPolicy``,
    ``DurabilityPolicy``, ``LivelinessPolicy`` give them; a number rosbags does not know becomes
    UNKNOWN); durations in [ns].
    """
    def policy(kind, value):
        try:
            return kind(int(value))
        except ValueError:
            return kind.UNKNOWN

    def duration(ns):
        seconds, nanoseconds = divmod(int(ns), _NS_PER_S)
        return QosTime(sec=seconds, nsec=nanoseconds)

    return Qos(history=policy(QosHistory, history), depth=int(depth), reliability=policy(QosReliability, reliability),
               durability=policy(QosDurability, durability), deadline=duration(deadline_ns),
               lifespan=duration(lifespan_ns), liveliness=policy(QosLiveliness, liveliness),
               liveliness_lease_duration=duration(liveliness_lease_ns),
               avoid_ros_namespace_conventions=bool(avoid_ros_namespace_conventions))


MB = 1e6   # bytes per megabyte, the unit of free space in messages
_STORAGE_ERRORS = (OSError, sqlite3.Error)   # what a storage raises when its file cannot be written


class RecordingStopped(DataError):
    """The bag was closed before :meth:`BagWriter.close`: its disk filled up, a write failed, or free space
    fell below the writer's minimum. The message says why and what the bag holds."""


class DiskSpaceError(DataError):
    """Less free space than asked for where a bag is to be created."""


def free_space(path) -> int:
    """Bytes available to this user on the file system of ``path`` (its nearest existing ancestor)."""
    path = Path(path).absolute()
    while not path.exists():
        path = path.parent
    status = os.statvfs(path)
    return status.f_bavail * status.f_frsize


def _megabytes(size: int) -> str:
    """``size`` [bytes] in MB with two decimals, rounded down (1.999 MB free is not 2.00)."""
    return f"{math.floor(size / MB * 100) / 100:.2f}"


class _DirectFile:
    """A binary file whose writes go to the kernel at once (no Python buffer left holding bytes after an
    error), looping over short writes, so that after ENOSPC the file's length is known and can be cut back."""

    def __init__(self, raw):
        self.raw = raw

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        while view:
            view = view[self.raw.write(view):]
        return len(data)

    def tell(self) -> int:
        return self.raw.tell()

    def flush(self) -> None:
        """Nothing is held here."""

    def cut(self, size: int) -> None:
        """Truncate to ``size`` bytes and write on from there."""
        self.raw.truncate(size)
        self.raw.seek(size)

    def close(self) -> None:
        self.raw.close()


class _McapStorage(McapWriter):
    """rosbags' MCAP storage, writing through :class:`_DirectFile` and remembering what its complete chunks
    hold, so that after a failed write the file can be cut back to its last complete chunk and finished."""

    def __init__(self, path, compression):
        super().__init__(path, compression)
        self.bio.flush()
        self.bio = _DirectFile(self.bio.detach())
        self.saved_end = self.bio.tell()
        self.saved_counts: dict[int, int] = defaultdict(int)
        self.saved_span = [2**63 - 1, 0]

    def close_chunk(self) -> None:
        counts = {cid: len(messages) for cid, messages in self.chunk.msgs.items()}
        span = (self.chunk.message_start_time, self.chunk.message_end_time)
        super().close_chunk()
        self.saved_end = self.bio.tell()
        for cid, count in counts.items():
            self.saved_counts[cid] += count
        if counts:
            self.saved_span = [min(self.saved_span[0], span[0]), max(self.saved_span[1], span[1])]

    def close(self, version, metadata) -> None:
        if not self.chunk.msgs:     # only schema or channel records (a topic with no message): the summary has them
            self.chunk = type(self.chunk)(2**63 - 1, 0, BytesIO(), defaultdict(list))
        super().close(version, metadata)

    def abort(self) -> None:
        """Close the file as it is (rosbags before 0.11 has no abort)."""
        self.bio.close()

    def discard_unsaved(self):
        """Cut the file back to the end of its last complete chunk and forget the messages after it; return
        (messages per connection id, first and last receive time [ns]) of what the file holds."""
        self.bio.cut(self.saved_end)
        self.chunk = type(self.chunk)(2**63 - 1, 0, BytesIO(), defaultdict(list))
        if hasattr(self, "channel_stats"):     # rosbags >= 0.11 writes statistics from these
            self.channel_stats = {cid: self.saved_counts.get(cid, 0) for cid in self.channel_stats}
            self.message_start_time, self.message_end_time = self.saved_span
        return dict(self.saved_counts), *self.saved_span


class _Sqlite3Storage(Sqlite3Writer):
    """rosbags' SQLite storage, able to go back to its last commit after a failed write."""

    def commit(self) -> None:
        self.conn.commit()

    def abort(self) -> None:
        """Close without committing (rosbags before 0.11 has no abort)."""
        try:
            self.conn.rollback()
        finally:
            self.conn.close()

    def discard_unsaved(self):
        """Roll back what was not committed; return (messages per topic id, first and last receive time [ns])
        of what the database holds, counted in it."""
        try:
            self.conn.rollback()
        except sqlite3.Error as error:        # SQLite may have rolled back already
            logger.info("rollback of %s: %s", self.path, error)
        rows = self.conn.execute("SELECT topic_id, count(*), min(timestamp), max(timestamp) FROM messages "
                                 "GROUP BY topic_id").fetchall()
        counts = {topic_id: count for topic_id, count, _, _ in rows}
        return counts, min((row[2] for row in rows), default=2**63 - 1), max((row[3] for row in rows), default=0)


class _Writer(Writer):
    STORAGE_PLUGINS = {StoragePlugin.MCAP: _McapStorage, StoragePlugin.SQLITE3: _Sqlite3Storage}


class BagWriter:
    """Incremental rosbag2 writer for joint states, stage markers and any other message.

    Opens (creates) the bag directory on construction; use it as a context manager or call
    :meth:`close`, which writes the storage index and ``metadata.yaml`` so that the bag is
    readable. Writes and close are serialised by a lock, so a recorder node may write from
    several callback threads and close from its shutdown path; close is idempotent.

    Memory stays bounded while recording: the MCAP storage writes every 1 MiB chunk to disk
    and keeps only a small index entry per chunk; sqlite3 writes through its page cache.
    :meth:`flush` pushes pending data to the file (MCAP: ends the current chunk; sqlite3:
    commits), so a recording interrupted without :meth:`close` loses at most what came after
    the last flush. :func:`read_bag` reads such a bag (no metadata.yaml, storage file without
    its end) up to its last complete message, with a warning; ``robot-dynid bag repair DIR``
    (:func:`robot_dynid.recordings.bag_recovery.repair_bag`) makes it whole.

    A full disk does not leave a broken bag: while recording the writer holds
    :data:`CLOSING_RESERVE` bytes in :data:`RESERVE_FILE`; when a write or flush fails (ENOSPC,
    any OSError or SQLite error), what was not yet in the storage file is discarded (MCAP: the
    file is cut back to its last complete chunk; sqlite3: rolled back to the last commit), the
    reserve is released and the bag is closed, its metadata counting exactly the messages its
    storage file holds. That write raises :class:`RecordingStopped` naming the cause and what was
    kept (:attr:`stop_reason`); later writes raise it again. :meth:`check_free_space` stops the
    same way before the disk is full, when less than ``min_free_space`` is free.

    Parameters
    ----------
    path : str or Path
        Bag directory to create; it must not exist.
    storage : str
        ``"mcap"`` (default) or ``"sqlite3"``.
    distro : str, optional
        ROS 2 distro of the standard message types (see :func:`make_typestore`).
    joint_states_topic, stage_topic : str
        Topics of :meth:`write_joint_state` and :meth:`write_stage`.
    ros_distro : str, optional
        The distribution written as ``ros_distro`` in metadata.yaml (the one the messages were
        recorded on); default ``distro``'s, else ``$ROS_DISTRO``, else rosbags' own ``"rosbags"``.
        (An MCAP file's embedded copy of the metadata keeps rosbags' value.)
    min_free_space : float
        [bytes] free space the bag's file system must keep (besides the reserve): less at the
        start is a :class:`DiskSpaceError`; see :meth:`check_free_space`. 0: no minimum.
    """

    def __init__(self, path, storage: str = "mcap", distro: str | None = None,
                 joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
                 stage_topic: str = DEFAULT_STAGE_TOPIC, ros_distro: str | None = None,
                 min_free_space: float = 0.0):
        validators.text(storage, "bag storage", DynIdError, list(STORAGE_PLUGINS))
        self.path = Path(path)
        self.storage = storage
        self.joint_states_topic = joint_states_topic
        self.stage_topic = stage_topic
        self.typestore = make_typestore(distro)
        self.ros_distro = ros_distro or distro or os.environ.get("ROS_DISTRO") or None
        self._types = self.typestore.types
        self._connections: dict[str, object] = {}
        self._lock = threading.Lock()
        self.min_free_space = float(min_free_space)
        self.stop_reason: str | None = None
        self._space_warned = False
        try:
            self._writer = _Writer(self.path, version=BAG_METADATA_VERSION, storage_plugin=STORAGE_PLUGINS[storage])
            self._writer.open()
        except (WriterError, OSError, sqlite3.Error) as error:
            raise DynIdError(f"cannot create bag {self.path}: {error}") from error
        self._recording_lock = lock_bag_directory(self.path)   # `bag repair` refuses a bag being written
        self._open = True
        try:
            self._hold_reserve()
            free = free_space(self.path)
            if free < self.min_free_space:
                raise DiskSpaceError(f"only {_megabytes(free)} MB free on the file system of {self.path}, less than "
                                     f"the minimum of {self.min_free_space / MB:g} MB")
        except BaseException:
            self._abandon()
            shutil.rmtree(self.path, ignore_errors=True)     # created above, holds nothing
            raise
        logger.info("recording to bag %s (%s storage)", self.path, storage)

    def _hold_reserve(self) -> None:
        try:
            with open(self.path / RESERVE_FILE, "wb") as reserve:
                reserve.write(bytes(CLOSING_RESERVE))
        except OSError as error:
            raise DiskSpaceError(f"cannot create bag {self.path}: no room for its {CLOSING_RESERVE // 1024} KiB "
                                 f"closing reserve ({error})") from None

    def _release_reserve(self) -> None:
        try:
            (self.path / RESERVE_FILE).unlink()
        except FileNotFoundError:
            pass

    def __enter__(self) -> "BagWriter":
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return not self._open

    @property
    def message_counts(self) -> dict[str, int]:
        """Messages written per topic so far."""
        return {topic: self._writer.counts[connection.id]
                for topic, connection in self._connections.items()}

    def has_topic(self, topic: str) -> bool:
        """Whether ``topic`` is in the bag yet (added, or written to)."""
        return topic in self._connections

    def add_topic(self, topic: str, msgtype: str, offered_qos_profiles: Sequence[Qos] = ()) -> None:
        """Add ``topic`` with the QoS profiles its publishers offered (:func:`offered_qos`), which
        a replay offers again (a transient local topic stays transient local); before its first
        message, else DataError."""
        with self._lock:
            self._check_open(topic)
            if topic in self._connections:
                raise DataError(f"topic {topic!r} is already in {self.path}")
            try:
                self._connection(topic, msgtype, offered_qos_profiles)
            except _STORAGE_ERRORS as error:
                raise self._stop_after(error) from None

    def _connection(self, topic: str, msgtype: str, offered_qos_profiles: Sequence[Qos] = ()):
        connection = self._connections.get(topic)
        if connection is None:
            ensure_type(self.typestore, msgtype)
            connection = self._writer.add_connection(topic, msgtype, typestore=self.typestore,
                                                     offered_qos_profiles=list(offered_qos_profiles))
            self._connections[topic] = connection
        elif connection.msgtype != msgtype:
            raise DataError(f"topic {topic!r} already carries {connection.msgtype!r} in "
                            f"{self.path}, cannot write {msgtype!r}")
        return connection

    def write_serialized(self, topic: str, msgtype: str, data: bytes, stamp_ns: int) -> None:
        """Write a CDR-serialised message (as rclpy hands out with ``raw=True``).

        Parameters
        ----------
        stamp_ns : int
            Bag (receive) time of the message [ns].
        """
        with self._lock:
            self._check_open(topic)
            try:
                self._writer.write(self._connection(topic, msgtype), int(stamp_ns), data)
            except _STORAGE_ERRORS as error:
                raise self._stop_after(error) from None

    def _check_open(self, topic: str) -> None:
        if self.stop_reason is not None:
            raise RecordingStopped(self.stop_reason)
        if not self._open:
            raise DynIdError(f"bag {self.path} is closed; cannot write to {topic!r}")

    def write(self, topic: str, msgtype: str, message, stamp_ns: int) -> None:
        """Serialise and write a rosbags message object of type ``msgtype``.

        ``stamp_ns`` is the bag (receive) time [ns]; build messages with
        ``writer.typestore.types[msgtype](...)``.
        """
        ensure_type(self.typestore, msgtype)
        self.write_serialized(topic, msgtype, self.typestore.serialize_cdr(message, msgtype),
                              stamp_ns)

    def header(self, stamp_ns: int, frame_id: str = ""):
        """``std_msgs/msg/Header`` stamped ``stamp_ns`` [ns], for messages to :meth:`write`."""
        seconds, nanoseconds = divmod(int(stamp_ns), _NS_PER_S)
        return self._types["std_msgs/msg/Header"](
            stamp=self._types["builtin_interfaces/msg/Time"](sec=seconds, nanosec=nanoseconds),
            frame_id=frame_id)

    def write_joint_state(self, stamp_ns: int, names: Sequence[str], position,
                          velocity=(), effort=(), receive_ns: int | None = None) -> None:
        """Write a ``sensor_msgs/msg/JointState`` on ``joint_states_topic``.

        Parameters
        ----------
        stamp_ns : int
            Header stamp [ns] (the sample time).
        names : sequence of str
            Joint names, any order.
        position, velocity, effort : array_like, shape (len(names),) or empty
            [rad], [rad/s], [N m]; velocity and effort may be empty.
        receive_ns : int, optional
            Bag time [ns]; default ``stamp_ns``.
        """
        names = [str(name) for name in names]
        fields = {"position": position, "velocity": velocity, "effort": effort}
        for field, value in fields.items():
            value = np.ascontiguousarray(value, dtype=np.float64).reshape(-1)
            if value.size not in (len(names), 0) or (field == "position" and value.size == 0):
                raise DataError(f"joint state {field} has {value.size} values for "
                                f"{len(names)} names {names}")
            fields[field] = value
        message = self._types[JOINT_STATE_TYPE](header=self.header(stamp_ns), name=names,
                                                **fields)
        self.write(self.joint_states_topic, JOINT_STATE_TYPE, message,
                   stamp_ns if receive_ns is None else receive_ns)

    def write_stage(self, stamp_ns: int, kind: str | int, cycle: int, start: bool,
                    experiment_id: str = "", label: str = "", joint_name: str = "",
                    speed_fraction: float = 0.0, direction: int = 0,
                    receive_ns: int | None = None) -> None:
        """Write a ``robot_dynid/msg/ExperimentStage`` marker on ``stage_topic``.

        Parameters
        ----------
        stamp_ns : int
            Header stamp [ns] of the boundary.
        kind : str or int
            Stage kind name of :data:`~robot_dynid.recordings.stages.STAGE_KINDS` or its ``KIND_*`` value.

        Other Parameters
        ----------------
        cycle, start, experiment_id, label, joint_name, speed_fraction, direction
            As the fields of ExperimentStage.msg; validated as :class:`~robot_dynid.recordings.stages.StageMarker`.
        receive_ns : int, optional
            Bag (receive) time [ns] of the message; ``stamp_ns`` when not given.
        """
        marker = StageMarker(stamp=float(ns_to_seconds([stamp_ns])[0]),
                             kind=kind_name(kind) if isinstance(kind, int) else kind, cycle=cycle, start=start,
                             joint_name=joint_name, speed_fraction=speed_fraction, direction=direction,
                             label=label, experiment_id=experiment_id)
        ensure_type(self.typestore, EXPERIMENT_STAGE_TYPE)
        message = self._types[EXPERIMENT_STAGE_TYPE](header=self.header(stamp_ns), **marker.message_fields())
        self.write(self.stage_topic, EXPERIMENT_STAGE_TYPE, message,
                   stamp_ns if receive_ns is None else receive_ns)

    def flush(self) -> None:
        """Push written messages to the file (see the class docstring); RecordingStopped if that fails."""
        with self._lock:
            if not self._open:
                return
            storage = self._writer.storage
            try:
                if isinstance(storage, _Sqlite3Storage):
                    storage.commit()
                elif storage.chunk.msgs:
                    storage.close_chunk()
            except _STORAGE_ERRORS as error:
                raise self._stop_after(error) from None

    def check_free_space(self) -> str | None:
        """Compare the free space of the bag's file system with ``min_free_space``: below it the bag is
        closed (RecordingStopped, stop_reason); below twice it, a warning text is returned, once."""
        if self.min_free_space <= 0.0 or not self._open:
            return None
        free = free_space(self.path)
        if free < self.min_free_space:
            self.stop(f"only {_megabytes(free)} MB free on its file system, less than the minimum of "
                      f"{self.min_free_space / MB:g} MB")
        if free < 2.0 * self.min_free_space and not self._space_warned:
            self._space_warned = True
            return (f"bag {self.path}: only {_megabytes(free)} MB free on its file system; recording stops when less "
                    f"than {self.min_free_space / MB:g} MB are free")
        return None

    def stop(self, reason: str) -> None:
        """Close the bag before :meth:`close` because of ``reason``; raise RecordingStopped saying so."""
        with self._lock:
            if self.stop_reason is not None:
                raise RecordingStopped(self.stop_reason)
            self.stop_reason = f"bag {self.path}: recording stopped: {reason}"
            try:
                self._close_storage()
            except _STORAGE_ERRORS + (WriterError,) as error:
                self.stop_reason += f"; the bag could not be closed ({error}): 'robot-dynid bag repair' recovers it"
            else:
                self.stop_reason += f"; bag closed with {self._describe_counts()}"
            raise RecordingStopped(self.stop_reason)

    def _stop_after(self, error: Exception) -> RecordingStopped:
        """After a failed write (lock held): discard what is not in the storage file, finish the bag."""
        full = getattr(error, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or "full" in str(error)
        before = sum(self._writer.counts.values())
        try:
            self._discard_unsaved()
            lost = before - sum(self._writer.counts.values())
            self.stop_reason = (f"bag {self.path}: recording stopped: {'disk full' if full else 'write failed'} "
                                f"({error}); {lost} message(s) not yet saved were dropped")
            self._close_storage()
        except _STORAGE_ERRORS + (WriterError,) as close_error:
            self.stop_reason = (f"bag {self.path}: recording stopped: {'disk full' if full else 'write failed'} "
                                f"({error}); the bag could not be closed ({close_error}): 'robot-dynid bag repair' "
                                "recovers it")
            self._abandon()
        else:
            self.stop_reason += f"; bag closed with {self._describe_counts()}"
        return RecordingStopped(self.stop_reason)

    def _discard_unsaved(self) -> None:
        counts, first, last = self._writer.storage.discard_unsaved()
        self._writer.counts = {cid: counts.get(cid, 0) for cid in self._writer.counts}
        self._writer.min_timestamp, self._writer.max_timestamp = first, last

    def _describe_counts(self) -> str:
        counts = self.message_counts
        return f"{sum(counts.values())} messages ({', '.join(f'{topic} {n}' for topic, n in counts.items())})"

    def _close_storage(self) -> None:
        """Release the reserve and finish the bag (lock held); what cannot be written at the end of the storage
        file (a full disk) is discarded and the bag finished with the rest."""
        self._open = False
        try:
            self._release_reserve()
            try:
                self._writer.close()
            except _STORAGE_ERRORS as error:
                if self._writer.storage is None:
                    raise
                before = sum(self._writer.counts.values())
                self._discard_unsaved()
                self._writer.close()
                logger.warning("bag %s: closing failed (%s); closed without the %d message(s) not yet saved",
                               self.path, error, before - sum(self._writer.counts.values()))
            if self.ros_distro:
                self._write_ros_distro()
        finally:                # a bag that failed to close is not being recorded either
            if self._recording_lock is not None:
                os.close(self._recording_lock)
                self._recording_lock = None

    def _abandon(self) -> None:
        """Leave a bag that cannot be finished as a killed recorder would (lock held)."""
        self._open = False
        storage, self._writer.storage = self._writer.storage, None
        try:
            if storage is not None:
                storage.abort()
        except _STORAGE_ERRORS:
            pass
        if self._recording_lock is not None:
            os.close(self._recording_lock)
            self._recording_lock = None

    def close(self) -> None:
        """Finish the bag (storage index and metadata.yaml); further calls do nothing."""
        with self._lock:
            if not self._open:
                return
            self._close_storage()
        logger.info("closed bag %s: %s", self.path, self.message_counts)

    def _write_ros_distro(self) -> None:
        """Put ``ros_distro`` into metadata.yaml (rosbags writes its own name there)."""
        path = self.path / "metadata.yaml"
        metadata = read_yaml(path, DataError, "bag metadata")
        metadata["rosbag2_bagfile_information"]["ros_distro"] = self.ros_distro
        temporary = path.with_suffix(".yaml.tmp")
        temporary.write_text(yaml.safe_dump(metadata, sort_keys=False))
        temporary.replace(path)


HYDRAULIC_FIELDS = ("position", "velocity", "pressure_a", "pressure_b", "external_load")


def read_hydraulic_states(path, topic: str = DEFAULT_HYDRAULIC_TOPIC, distro: str | None = None):
    """The ``robot_dynid/msg/HydraulicCylinderState`` messages of a bag, per cylinder name.

    Returns
    -------
    dict
        name -> (stamps [ns] (M,), values (M, 5) in :data:`HYDRAULIC_FIELDS` order [m, m/s, Pa, Pa, N],
        NaN where a message leaves an optional field (velocity, external_load) empty).

    Raises
    ------
    DataError
        The topic is missing, empty or of another type; a message's arrays do not match its names.
    """
    per_name: dict[str, tuple[list, list]] = {}
    with _open_bag(path, distro) as bag:
        for receive_ns, message in bag.messages(topic, HYDRAULIC_STATE_TYPE):
            stamp_ns = _stamp_ns(message.header) or receive_ns
            names = list(message.name)
            columns = []
            for field in HYDRAULIC_FIELDS:
                values = np.asarray(getattr(message, field), dtype=float)
                if values.size == 0 and field in ("velocity", "external_load"):
                    values = np.full(len(names), np.nan)
                if values.size != len(names):
                    raise DataError(f"bag {path}, topic {topic!r}: a message stamped {stamp_ns} ns has "
                                    f"{len(names)} names but {values.size} {field} values")
                columns.append(values)
            for index, name in enumerate(names):
                stamps, rows = per_name.setdefault(name, ([], []))
                stamps.append(stamp_ns)
                rows.append([column[index] for column in columns])
    return {name: (np.asarray(stamps, dtype=np.int64), np.asarray(rows, dtype=float))
            for name, (stamps, rows) in per_name.items()}
