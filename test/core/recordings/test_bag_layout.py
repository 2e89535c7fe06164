"""Recorder logic without ROS: CDR joint names against rosbags' serialiser, markers, bag names."""
from datetime import datetime

import numpy as np
import pytest

from robot_dynid.errors import DataError
from robot_dynid.recordings.bag_files import make_typestore
from robot_dynid.recordings.bag_io import JOINT_STATE_TYPE, BagWriter, read_bag
from robot_dynid.recordings.bag_layout import BAG_TOPICS, default_bag_path, joint_state_fields, joint_state_layout


@pytest.fixture(scope="module")
def typestore():
    return make_typestore("jazzy")


def serialized_joint_state(typestore, names, frame_id="", little_endian=True, velocity=True):
    types = typestore.types
    header = types["std_msgs/msg/Header"](
        stamp=types["builtin_interfaces/msg/Time"](sec=12, nanosec=345), frame_id=frame_id)
    values = np.arange(len(names), dtype=np.float64) + 0.25
    message = types[JOINT_STATE_TYPE](header=header, name=list(names), position=values,
                                      velocity=-values if velocity else np.empty(0), effort=np.empty(0))
    return bytes(typestore.serialize_cdr(message, JOINT_STATE_TYPE, little_endian=little_endian))


@pytest.mark.parametrize("little_endian", [True, False])
@pytest.mark.parametrize("frame_id", ["", "b", "base", "base_link_frame"])
@pytest.mark.parametrize("names", [(), ("j1",), ("shoulder_pan_joint", "a", "elbow", "wrist_3_joint")])
@pytest.mark.parametrize("velocity", [True, False])
def test_joint_state_fields_match_the_rosbags_serialiser(typestore, names, frame_id, little_endian, velocity):
    data = serialized_joint_state(typestore, names, frame_id, little_endian, velocity)
    stamp_ns, decoded_names, position, decoded_velocity, effort = joint_state_fields(data)
    values = np.arange(len(names)) + 0.25
    assert stamp_ns == 12_000_000_345 and decoded_names == names
    np.testing.assert_array_equal(position, values)
    np.testing.assert_array_equal(decoded_velocity, -values if velocity else [])
    assert effort.size == 0


@pytest.mark.parametrize("little_endian", [True, False])
@pytest.mark.parametrize("frame_id", ["", "base_link_frame"])
@pytest.mark.parametrize("names", [("j1",), ("shoulder_pan_joint", "a", "elbow", "wrist_3_joint")])
@pytest.mark.parametrize("velocity", [True, False])
def test_a_layout_decodes_many_messages_as_the_rosbags_serialiser_wrote_them(typestore, names, frame_id,
                                                                             little_endian, velocity):
    """Messages of one layout as rows of bytes, with their stamps and values changed: the layout's stamps and
    values are those serialised."""
    types = typestore.types
    rng = np.random.default_rng(2)
    rows, expected = [], []
    for k in range(5):
        stamp = (1_700_000_000 + k, 1000 * k + 7)
        values = rng.standard_normal((3, len(names)))
        header = types["std_msgs/msg/Header"](stamp=types["builtin_interfaces/msg/Time"](
            sec=stamp[0], nanosec=stamp[1]), frame_id=frame_id)
        message = types[JOINT_STATE_TYPE](header=header, name=list(names), position=values[0],
                                          velocity=values[1] if velocity else np.empty(0), effort=values[2])
        rows.append(np.frombuffer(typestore.serialize_cdr(message, JOINT_STATE_TYPE, little_endian=little_endian),
                                  np.uint8))
        expected.append((stamp[0] * 10**9 + stamp[1], values))
    rows = np.stack(rows)
    layout = joint_state_layout(rows[0].tobytes())
    assert layout.names == names and layout.counts == (len(names), len(names) if velocity else 0, len(names))
    assert layout.matches(rows).all()
    np.testing.assert_array_equal(layout.stamps(rows), [stamp for stamp, _ in expected])
    for index, field in enumerate(("position", "velocity", "effort")):
        decoded = layout.values(rows, field)
        if field == "velocity" and not velocity:
            assert decoded.shape == (5, 0)
            continue
        np.testing.assert_array_equal(decoded, [values[index] for _, values in expected])


def test_a_layout_refuses_other_names_of_the_same_length_but_not_other_padding(typestore):
    first = serialized_joint_state(typestore, ("ab", "cd", "e"))
    swapped = serialized_joint_state(typestore, ("cd", "ab", "e"))
    layout = joint_state_layout(first)
    assert len(first) == len(swapped)
    padded = bytearray(first)
    frame_end = 4 + 8 + 4 + 1               # encapsulation, stamp, frame_id length and its NUL
    padded[frame_end:frame_end + 3] = b"xyz"    # the padding before the name count: writers need not zero it
    rows = np.stack([np.frombuffer(data, np.uint8) for data in (first, swapped, bytes(padded))])
    np.testing.assert_array_equal(layout.matches(rows), [True, False, True])


def test_joint_state_fields_reject_truncated_and_foreign_bytes(typestore):
    data = serialized_joint_state(typestore, ("joint_a", "joint_b"))
    with pytest.raises(DataError, match=r"CDR string at byte \d+ has length 8, beyond the 33-byte message"):
        joint_state_fields(data[:33])
    with pytest.raises(DataError, match=r"float64 sequence of 2 values at byte \d+ runs past the \d+-byte message"):
        joint_state_fields(data[:-8])
    with pytest.raises(DataError, match=r"does not start with a CDR encapsulation header 00 00 or 00 01, got 00 07"):
        joint_state_fields(b"\x00\x07" + data[2:])
    corrupt = bytearray(data)
    corrupt[20:24] = (10**6).to_bytes(4, "little")
    with pytest.raises(DataError, match=r"sequence claims 1000000 elements in a \d+-byte message"):
        joint_state_fields(bytes(corrupt))


def test_default_bag_path_is_timestamped_and_never_reused(tmp_path):
    now = datetime(2024, 3, 5, 14, 7, 9)
    first = default_bag_path(tmp_path, now)
    assert first == tmp_path / "robot_dynid_20240305_140709"
    first.mkdir()
    second = default_bag_path(tmp_path, now)
    assert second == tmp_path / "robot_dynid_20240305_140709_2"


def test_bags_written_under_bag_topics_read_with_default_topic_options(tmp_path, typestore):
    topic, msgtype = BAG_TOPICS["joint_states"]
    with BagWriter(tmp_path / "bag", stage_topic=BAG_TOPICS["stage"][0]) as writer:
        writer.write_serialized(topic, msgtype, serialized_joint_state(typestore, ("j1", "j2")), 5)
        writer.write_stage(1, "rest", 0, True)
    recording = read_bag(tmp_path / "bag")
    assert recording.joint_names == ("j1", "j2")
    np.testing.assert_array_equal(recording.q, [[0.25, 1.25]])
    assert list(recording.stage) == ["rest"]
