"""The layout of the bags the recorder writes: topic names and types, bag names, JointState CDR.

The hand-written CDR decoding of JointState (:class:`JointStateDecoder`) stays because it is the
cheapest way the recorder can check each message at 1 kHz: with the names remembered between
messages it costs a fraction of rclpy's ``deserialize_message`` and rosbags' ``deserialize_cdr``
(BENCHMARKS.md, recorder). Reading a bag, the JointStates of a driver with a fixed joint set all have
one layout (:class:`JointStateLayout`: the same frame_id, names and field lengths at the same bytes), so
thousands of them are decoded by a few array operations on their bytes (BENCHMARKS.md, files).

Bag layout
----------
The recorder writes every subscribed topic under a fixed bag topic name, whatever the live
topic is called (namespaces and remappings do not change the bag), so that
``robot-dynid identify --data <bag>`` reads joint states and stage markers with its default
topic options:

==============  ==================================  =====================================
role            bag topic                           message type
==============  ==================================  =====================================
joint_states    ``/joint_states``                   ``sensor_msgs/msg/JointState``
motor_states    ``/motor_states``                   ``sensor_msgs/msg/JointState``
effort          ``/joint_efforts``                  ``sensor_msgs/msg/JointState``
current         ``/motor_currents``                 ``sensor_msgs/msg/JointState``
temperature     ``/joint_temperatures``             ``sensor_msgs/msg/JointState``
hydraulic       ``/hydraulic_cylinder_states``      ``robot_dynid/msg/HydraulicCylinderState``
stage           ``/experiment_stage``               ``robot_dynid/msg/ExperimentStage``
==============  ==================================  =====================================

A bag with a separate effort topic is read with ``--effort-topic /joint_efforts``; motor
currents (a JointState whose ``effort`` holds currents [A]) with ``--current-topic
/motor_currents``, converted to joint torques with the robot's torque constants and gear ratios;
the temperatures with ``read_bag(..., temperature_topic="/joint_temperatures")``. Motor-side
states (a JointState named by the transmission's motors: position [rad], velocity [rad/s] and
effort [N m], all at the motor) are read from ``/motor_states`` by default when the robot has a
transmission (``--motor-states-topic``), converted to the joint side through it; with a
transmission, the currents of ``/motor_currents`` are named by motor too.
"""
from __future__ import annotations

import dataclasses
import logging
import struct
from datetime import datetime
from pathlib import Path

import numpy as np

from robot_dynid.errors import DataError

__all__ = ["JOINT_STATE_TYPE", "EXPERIMENT_STAGE_TYPE", "HYDRAULIC_STATE_TYPE", "DEFAULT_HYDRAULIC_TOPIC",
           "DEFAULT_JOINT_STATES_TOPIC", "DEFAULT_STAGE_TOPIC", "DEFAULT_MOTOR_STATES_TOPIC", "DAMAGED_SUFFIX",
           "BAG_TOPICS", "BAG_NAME_PREFIX", "default_bag_path", "JOINT_STATE_FIELDS", "JointStateDecoder",
           "JointStateLayout", "joint_state_layout", "joint_state_fields"]

logger = logging.getLogger(__name__)

JOINT_STATE_TYPE = "sensor_msgs/msg/JointState"
EXPERIMENT_STAGE_TYPE = "robot_dynid/msg/ExperimentStage"
HYDRAULIC_STATE_TYPE = "robot_dynid/msg/HydraulicCylinderState"
DEFAULT_HYDRAULIC_TOPIC = "/hydraulic_cylinder_states"
DEFAULT_JOINT_STATES_TOPIC = "/joint_states"
DEFAULT_STAGE_TOPIC = "/experiment_stage"
DEFAULT_MOTOR_STATES_TOPIC = "/motor_states"
DAMAGED_SUFFIX = ".damaged"
"""Appended to the name of every file a repair in place (:func:`~robot_dynid.recordings.bag_recovery.repair_bag`)
replaces (``bag.mcap.damaged``); here, not in bag_recovery, so that ``robot-dynid bag --help`` needs no rosbags."""

BAG_TOPICS = {
    "joint_states": (DEFAULT_JOINT_STATES_TOPIC, JOINT_STATE_TYPE),
    "motor_states": (DEFAULT_MOTOR_STATES_TOPIC, JOINT_STATE_TYPE),
    "effort": ("/joint_efforts", JOINT_STATE_TYPE),
    "current": ("/motor_currents", JOINT_STATE_TYPE),
    "temperature": ("/joint_temperatures", JOINT_STATE_TYPE),
    "hydraulic": (DEFAULT_HYDRAULIC_TOPIC, HYDRAULIC_STATE_TYPE),
    "stage": (DEFAULT_STAGE_TOPIC, EXPERIMENT_STAGE_TYPE),
}
"""Recorder role -> (bag topic name, message type); see the module docstring."""

BAG_NAME_PREFIX = "robot_dynid_"
_NS_PER_S = 1_000_000_000
_CDR_ENCAPSULATION_SIZE = 4
_CDR_BYTE_ORDER = {0: ">", 1: "<"}  # second byte of the encapsulation header: CDR_BE, CDR_LE


def default_bag_path(output_directory, now: datetime) -> Path:
    """Bag directory ``<output_directory>/robot_dynid_YYYYmmdd_HHMMSS`` that does not exist yet.

    A suffix ``_2``, ``_3``, ... is added when a bag of the same second exists.

    Parameters
    ----------
    output_directory : str or Path
        Directory holding the bags ('' = current directory).
    now : datetime
        Start time of the recording (local time).
    """
    base = Path(output_directory or ".") / f"{BAG_NAME_PREFIX}{now:%Y%m%d_%H%M%S}"
    path, suffix = base, 1
    while path.exists():
        suffix += 1
        path = base.with_name(f"{base.name}_{suffix}")
    return path


JOINT_STATE_FIELDS = ("position", "velocity", "effort")
"""The float64 sequences of a JointState, in the order of their bytes."""


def _cdr_string(data: bytes, offset: int, order: str) -> tuple[str, int]:
    """String at ``offset`` (relative to the encapsulation header) -> (text, next offset)."""
    offset += -offset % 4
    start = _CDR_ENCAPSULATION_SIZE + offset
    (length,) = struct.unpack_from(order + "I", data, start)
    end = start + 4 + length
    if length == 0 or end > len(data):
        raise DataError(f"CDR string at byte {start} has length {length}, beyond the "
                        f"{len(data)}-byte message")
    return data[start + 4:end - 1].decode("utf-8"), offset + 4 + length


class JointStateDecoder:
    """Header stamp [ns], names and position / velocity / effort arrays of CDR-serialised
    ``sensor_msgs/msg/JointState`` messages, decoded without ROS (the arrays are views of the
    bytes). A driver sends the same frame_id and names in every message: the decoder keeps the
    bytes of the last names section and decodes the names again only when they differ.

    Raises
    ------
    DataError
        The bytes are not a (complete) CDR JointState: unknown encapsulation, or a length that
        runs past the end of the message.
    """

    def __init__(self):
        self._section = None        # (byte order, raw frame_id + names bytes, names, offset after them)

    def __call__(self, data: bytes):
        """``(stamp_ns, names, position, velocity, effort)`` of one message; ``data`` as rclpy
        hands it out with ``raw=True`` (4-byte encapsulation header, then header stamp,
        frame_id, name sequence, three float64 sequences)."""
        if len(data) < _CDR_ENCAPSULATION_SIZE + 16 or data[0] != 0 or data[1] not in _CDR_BYTE_ORDER:
            raise DataError(f"joint state of {len(data)} bytes does not start with a CDR "
                            f"encapsulation header 00 00 or 00 01, got {data[:2].hex(' ')}")
        order = _CDR_BYTE_ORDER[data[1]]
        first = _CDR_ENCAPSULATION_SIZE + 8
        try:
            sec, nanosec = struct.unpack_from(order + "iI", data, _CDR_ENCAPSULATION_SIZE)
            section = self._section
            if (section is not None and section[0] == order
                    and data[first:_CDR_ENCAPSULATION_SIZE + section[3]] == section[1]):
                names, offset = section[2], section[3]
            else:
                names, offset = self._names(data, order)
                self._section = (order, bytes(data[first:_CDR_ENCAPSULATION_SIZE + offset]), names, offset)
            arrays = []
            for _ in range(3):
                count, start, offset = _cdr_float_sequence(data, offset, order)
                arrays.append(np.frombuffer(data, dtype=np.dtype(order + "f8"), count=count, offset=start))
        except (struct.error, UnicodeDecodeError) as error:
            raise DataError(f"joint state of {len(data)} bytes is not valid CDR: {error}") from error
        return sec * _NS_PER_S + nanosec, names, *arrays

    @staticmethod
    def _names(data: bytes, order: str) -> tuple[tuple[str, ...], int]:
        _, offset = _cdr_string(data, 8, order)
        count, offset = _cdr_count(data, offset, order)
        names = []
        for _ in range(count):
            name, offset = _cdr_string(data, offset, order)
            names.append(name)
        return tuple(names), offset


@dataclasses.dataclass(frozen=True, eq=False)
class JointStateLayout:
    """Where the values lie in CDR JointStates that share one message's byte order, frame_id, names and field
    lengths (a driver with a fixed joint set sends such messages); made by :func:`joint_state_layout`.

    Attributes
    ----------
    size : int
        Bytes of such a message.
    order : str
        ``"<"`` or ``">"``.
    names : tuple of str
        The joint names.
    counts : tuple of int
        Values of position, velocity and effort (:data:`JOINT_STATE_FIELDS`): len(names) or 0.
    offsets : tuple of int
        Byte offset of each field's first value (8-byte aligned relative to the CDR payload).
    spans : tuple of (int, int)
        Byte ranges ``[start, end)`` that identify the layout: the encapsulation's byte order, frame_id, the
        name sequence, the three lengths (the alignment padding between them, which writers need not zero, left
        out).
    reference : ndarray of uint8, shape (size,)
        The message the layout was taken from.
    """

    size: int
    order: str
    names: tuple[str, ...]
    counts: tuple[int, int, int]
    offsets: tuple[int, int, int]
    spans: tuple[tuple[int, int], ...]
    reference: np.ndarray

    def matches(self, rows: np.ndarray) -> np.ndarray:
        """Which messages ``rows`` (m, size) [bytes; views with strides (step, 1) too] have this layout, (m,) bool.

        The bytes from frame_id to the position length are compared at once, padding included (writers zero
        it); the messages that differ there are compared span by span (:attr:`spans`)."""
        head = (self.spans[1][0], max(end for _, end in self.spans if end <= self.offsets[0]))
        tail = [span for span in self.spans[1:] if span[0] >= head[1]]
        match = _equal(rows, self.reference, *self.spans[0])
        for start, end in tail:
            match &= _equal(rows, self.reference, start, end)
        loose = match & ~_equal(rows, self.reference, *head)
        if loose.any():
            inner = [span for span in self.spans[1:] if span[1] <= head[1]]
            subset = rows[loose]
            match[loose] = np.logical_and.reduce([_equal(subset, self.reference, *span) for span in inner])
        return match

    def stamps(self, rows: np.ndarray) -> np.ndarray:
        """The header stamps [ns], shape (m,), of messages ``rows`` (m, size) of this layout."""
        seconds = rows[:, _CDR_ENCAPSULATION_SIZE:_CDR_ENCAPSULATION_SIZE + 4].view(self.order + "i4")
        nanoseconds = rows[:, _CDR_ENCAPSULATION_SIZE + 4:_CDR_ENCAPSULATION_SIZE + 8].view(self.order + "u4")
        return (seconds.astype(np.int64) * _NS_PER_S + nanoseconds.astype(np.int64)).reshape(-1)

    def values(self, rows: np.ndarray, field: str) -> np.ndarray:
        """The values of ``field``, shape (m, count), of messages ``rows`` (m, size) of this layout: float64, copied."""
        index = JOINT_STATE_FIELDS.index(field)
        start, count = self.offsets[index], self.counts[index]
        if not count:
            return np.empty((rows.shape[0], 0))
        return rows[:, start:start + 8 * count].view(self.order + "f8").astype(np.float64)


def _equal(rows: np.ndarray, reference: np.ndarray, start: int, end: int) -> np.ndarray:
    """Which rows (m, size) hold ``reference[start:end]`` at ``[start, end)``: 8 bytes at a time, then the rest,
    one column of all rows at a time (a reduction over a row's few words is several times slower)."""
    middle = start + 8 * ((end - start) // 8)
    equal = np.ones(rows.shape[0], dtype=bool)
    if middle > start:
        words, expected = rows[:, start:middle].view("<u8"), reference[start:middle].view("<u8")
        for column in range(words.shape[1]):
            equal &= words[:, column] == expected[column]
    for column in range(middle, end):
        equal &= rows[:, column] == reference[column]
    return equal


def joint_state_layout(data: bytes) -> JointStateLayout:
    """The :class:`JointStateLayout` of CDR JointState ``data`` (as :class:`JointStateDecoder` reads it).

    Raises
    ------
    DataError
        ``data`` is not a complete CDR JointState.
    """
    if len(data) < _CDR_ENCAPSULATION_SIZE + 16 or data[0] != 0 or data[1] not in _CDR_BYTE_ORDER:
        raise DataError(f"joint state of {len(data)} bytes does not start with a CDR encapsulation header")
    order = _CDR_BYTE_ORDER[data[1]]
    spans = [(0, 2)]
    try:
        offset = 8
        _, end = _cdr_string(data, offset, order)
        spans.append((_CDR_ENCAPSULATION_SIZE + offset, _CDR_ENCAPSULATION_SIZE + end))
        count, offset = _cdr_count(data, end, order)
        spans.append((_CDR_ENCAPSULATION_SIZE + offset - 4, _CDR_ENCAPSULATION_SIZE + offset))
        names = []
        for _ in range(count):
            name, end = _cdr_string(data, offset, order)
            spans.append((_CDR_ENCAPSULATION_SIZE + offset + -offset % 4, _CDR_ENCAPSULATION_SIZE + end))
            names.append(name)
            offset = end
        counts, offsets = [], []
        for _ in JOINT_STATE_FIELDS:
            aligned = offset + -offset % 4
            spans.append((_CDR_ENCAPSULATION_SIZE + aligned, _CDR_ENCAPSULATION_SIZE + aligned + 4))
            count, start, offset = _cdr_float_sequence(data, offset, order)
            counts.append(count)
            offsets.append(start)
    except (struct.error, UnicodeDecodeError) as error:
        raise DataError(f"joint state of {len(data)} bytes is not valid CDR: {error}") from error
    merged = [spans[0]]
    for start, end in spans[1:]:
        if start == merged[-1][1]:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return JointStateLayout(len(data), order, tuple(names), tuple(counts), tuple(offsets), tuple(merged),
                            np.frombuffer(bytes(data), np.uint8))


def joint_state_fields(data: bytes):
    """One message decoded by a fresh :class:`JointStateDecoder` (no names remembered)."""
    return JointStateDecoder()(data)


def _cdr_float_sequence(data: bytes, offset: int, order: str) -> tuple[int, int, int]:
    """The float64 sequence at ``offset`` (relative to the encapsulation header) -> (count, byte of its first
    value in ``data``, offset after it); its values 8-byte aligned relative to the payload."""
    count, offset = _cdr_count(data, offset, order)
    if count:
        offset += -offset % 8
    start = _CDR_ENCAPSULATION_SIZE + offset
    if start + 8 * count > len(data):
        raise DataError(f"joint state float64 sequence of {count} values at byte {start} runs past the "
                        f"{len(data)}-byte message")
    return count, start, offset + 8 * count


def _cdr_count(data: bytes, offset: int, order: str) -> tuple[int, int]:
    """Sequence length at ``offset`` (aligned to 4) -> (count, offset after it)."""
    offset += -offset % 4
    (count,) = struct.unpack_from(order + "I", data, _CDR_ENCAPSULATION_SIZE + offset)
    if count > len(data):
        raise DataError(f"joint state sequence claims {count} elements in a {len(data)}-byte message")
    return count, offset + 4
