"""rosbag2 writing and reading (MCAP and sqlite3) with rosbags: joints by name, stage labels,
extra topics, metadata, and the error messages."""
import logging
import re
import sqlite3

import numpy as np
import pytest
import yaml

from robot_dynid.errors import DataError, DynIdError
from robot_dynid.recordings.bag_files import interface_definition_text
from robot_dynid.recordings.bag_io import BagWriter, read_bag, read_stage_markers
from robot_dynid.recordings.stages import STAGE_KINDS

JOINTS = ("shoulder", "elbow", "wrist")
T0_NS = 1_700_000_000_123_456_789
PERIOD_NS = 2_000_000
N_SAMPLES = 300
# Stage markers at the stamps of these samples (first, last, both included): excitation
# [20, 120], friction [150, 280] holding a sub-stage for elbow at 40 % speed, direction -1,
# over [170, 230].
EXCITATION = (20, 120)
FRICTION = (150, 280)
FRICTION_ELBOW = (170, 230)


def stamps_ns():
    return T0_NS + PERIOD_NS * np.arange(N_SAMPLES, dtype=np.int64)


def seconds(ns):
    return np.array([int(v) // 10**9 + (int(v) % 10**9) * 1e-9 for v in ns])


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    return {field: rng.standard_normal((N_SAMPLES, 3)) for field in ("q", "qd", "tau")}


def write_synthetic_bag(path, data, storage, drop_velocity_at=None):
    """Joint states with a shuffled joint order per message (an extra 'gripper' joint in every
    third message from the second on), stage markers at known sample stamps."""
    rng = np.random.default_rng(5)
    stamps = stamps_ns()
    with BagWriter(path, storage=storage) as writer:
        for k in range(N_SAMPLES):
            for index, kind, extra in ((EXCITATION[0], "excitation", {}),
                                       (FRICTION[0], "friction", {}),
                                       (FRICTION_ELBOW[0], "friction",
                                        dict(joint_name="elbow", speed_fraction=0.4,
                                             direction=-1))):
                if k == index:
                    writer.write_stage(int(stamps[k]), kind, 2, True, experiment_id="t1", **extra)
            for index, kind, extra in ((EXCITATION[1], "excitation", {}),
                                       (FRICTION_ELBOW[1], "friction",
                                        dict(joint_name="elbow", speed_fraction=0.4,
                                             direction=-1)),
                                       (FRICTION[1], "friction", {})):
                if k == index:
                    writer.write_stage(int(stamps[k]), kind, 2, False, experiment_id="t1",
                                       **extra)
            order = rng.permutation(3)
            names = [JOINTS[j] for j in order]
            position, velocity, effort = (data[f][k, order] for f in ("q", "qd", "tau"))
            if k % 3 == 1:
                names.append("gripper")
                position, velocity, effort = (np.append(v, 9.0) for v in
                                              (position, velocity, effort))
            if k == drop_velocity_at:
                velocity = ()
            writer.write_joint_state(int(stamps[k]), names, position, velocity, effort)
    return writer


def expected_labels():
    stage = np.array([""] * N_SAMPLES, dtype=object)
    cycle = np.full(N_SAMPLES, -1)
    for kind, (first, last) in (("excitation", EXCITATION), ("friction", FRICTION)):
        stage[first:last + 1] = kind
        cycle[first:last + 1] = 2
    return stage.astype(str), cycle


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_round_trip_matches_joints_by_name_and_labels_samples(tmp_path, data, storage):
    path = tmp_path / "bag"
    write_synthetic_bag(path, data, storage)
    recording = read_bag(path, joint_names=JOINTS)
    assert recording.joint_names == JOINTS
    for field in ("q", "qd", "tau"):
        np.testing.assert_array_equal(getattr(recording, field), data[field], err_msg=field)
    np.testing.assert_array_equal(recording.time, seconds(stamps_ns()))
    stage, cycle = expected_labels()
    np.testing.assert_array_equal(recording.stage, stage)
    np.testing.assert_array_equal(recording.cycle, cycle)
    assert recording.n_dropped == 0
    assert recording.source == str(path)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_metadata_lists_topics_and_message_counts(tmp_path, data, storage):
    path = tmp_path / "bag"
    writer = write_synthetic_bag(path, data, storage)
    info = yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    counts = {entry["topic_metadata"]["name"]: (entry["topic_metadata"]["type"],
                                                entry["message_count"])
              for entry in info["topics_with_message_count"]}
    assert counts == {"/joint_states": ("sensor_msgs/msg/JointState", N_SAMPLES),
                      "/experiment_stage": ("robot_dynid/msg/ExperimentStage", 6)}
    assert info["storage_identifier"] == storage
    assert info["message_count"] == N_SAMPLES + 6
    assert writer.message_counts == {"/experiment_stage": 6, "/joint_states": N_SAMPLES}
    assert writer.closed


def test_default_joint_order_is_that_of_the_first_message(tmp_path, data):
    path = tmp_path / "bag"
    write_synthetic_bag(path, data, "mcap")
    recording = read_bag(path)
    first_order = np.random.default_rng(5).permutation(3)
    assert recording.joint_names == tuple(JOINTS[j] for j in first_order)
    np.testing.assert_array_equal(recording.reorder(JOINTS).q, data["q"])


def test_stage_markers_keep_friction_details(tmp_path, data):
    path = tmp_path / "bag"
    write_synthetic_bag(path, data, "sqlite3")
    markers = read_stage_markers(path)
    elbow = [m for m in markers if m.joint_name == "elbow"]
    assert [(m.start, m.kind, m.speed_fraction, m.direction, m.cycle) for m in elbow] == [
        (True, "friction", 0.4, -1, 2), (False, "friction", 0.4, -1, 2)]
    assert elbow[0].stamp == seconds([stamps_ns()[FRICTION_ELBOW[0]]])[0]
    assert {m.experiment_id for m in markers} == {"t1"}


def test_message_without_velocity_is_dropped_and_counted(tmp_path, data):
    path = tmp_path / "bag"
    write_synthetic_bag(path, data, "mcap", drop_velocity_at=40)
    recording = read_bag(path, joint_names=JOINTS)
    assert recording.n_dropped == 1
    np.testing.assert_array_equal(recording.q, np.delete(data["q"], 40, axis=0))


def test_header_stamps_not_receive_times_order_the_samples(tmp_path):
    path = tmp_path / "bag"
    stamps = [3_000_000_000, 1_000_000_000, 2_000_000_000]
    with BagWriter(path) as writer:
        for receive, stamp in enumerate(stamps):
            writer.write_joint_state(stamp, ["a"], [stamp / 1e9], receive_ns=10 + receive)
    recording = read_bag(path, stage_topic=None)
    np.testing.assert_array_equal(recording.time, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(recording.q[:, 0], [1.0, 2.0, 3.0])
    assert recording.qd is None and recording.tau is None and recording.stage is None


def test_receive_times_replace_header_stamps_that_are_all_zero(tmp_path):
    path = tmp_path / "bag"
    with BagWriter(path) as writer:
        for receive_ns in (5_000_000_000, 6_500_000_000):
            writer.write_joint_state(0, ["a"], [1.0], receive_ns=receive_ns)
    np.testing.assert_array_equal(read_bag(path).time, [5.0, 6.5])


def test_joint_states_without_positions_are_rejected(tmp_path):
    path = tmp_path / "bag"
    with BagWriter(path) as writer:
        writer.write("/joint_states", "sensor_msgs/msg/JointState", writer.typestore.types[
            "sensor_msgs/msg/JointState"](header=writer.header(1), name=["a"],
                                          position=np.array([]), velocity=np.array([]),
                                          effort=np.array([2.0])), 1)
    with pytest.raises(DataError, match="topic '/joint_states' in bag .*: none of its 1 messages is usable: "
                                        "/joint_states: empty position: 1"):
        read_bag(path)


def test_effort_and_temperature_from_other_topics_are_interpolated(tmp_path):
    path = tmp_path / "bag"
    with BagWriter(path) as writer:
        for k in range(11):
            writer.write_joint_state(k * 100_000_000, ["a", "b"], [k, -k])
        for k in range(2, 20):
            stamp = k * 50_000_000 + 25_000_000
            writer.write("/torques", "sensor_msgs/msg/JointState", writer.typestore.types[
                "sensor_msgs/msg/JointState"](header=writer.header(stamp), name=["b", "a"],
                                              position=np.array([]), velocity=np.array([]),
                                              effort=np.array([2.0 * stamp / 1e9, stamp / 1e9])),
                stamp)
        for k in range(3):
            stamp = 200_000_000 + k * 300_000_000
            writer.write("/temperatures", "sensor_msgs/msg/JointState", writer.typestore.types[
                "sensor_msgs/msg/JointState"](header=writer.header(stamp), name=["a", "b"],
                                              position=np.array([0.0, 0.0]),
                                              velocity=np.array([]),
                                              effort=np.array([20.0 + 10 * k, 30.0])), stamp)
    recording = read_bag(path, effort_topic="/torques", temperature_topic="/temperatures")
    # torques span 0.125 .. 0.975 s: joint-state samples 0.2 .. 0.9 s remain
    np.testing.assert_allclose(recording.time, 0.1 * np.arange(2, 10), rtol=0, atol=1e-15)
    assert recording.n_dropped == 3
    np.testing.assert_allclose(recording.tau, np.column_stack(
        [recording.time, 2 * recording.time]), rtol=0, atol=1e-12)
    # temperature of a rises 10 K per 0.3 s from 0.2 s, held after 0.8 s
    expected_a = np.minimum(20 + (recording.time - 0.2) / 0.3 * 10, 40.0)
    np.testing.assert_allclose(recording.temperature[:, 0], expected_a, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(recording.temperature[:, 1], 30.0)


def test_motor_currents_become_torques_through_the_given_conversion(tmp_path):
    path = tmp_path / "bag"
    with BagWriter(path) as writer:
        for k in range(5):
            stamp = k * 100_000_000
            writer.write_joint_state(stamp, ["a", "b"], [k, -k])
            writer.write("/motor_currents", "sensor_msgs/msg/JointState", writer.typestore.types[
                "sensor_msgs/msg/JointState"](header=writer.header(stamp), name=["b", "a"],
                                              position=np.array([]), velocity=np.array([]),
                                              effort=np.array([-1.0 * k, 2.0 * k])), stamp)
    factors = np.array([10.0, 100.0])        # k_t r of joints a, b [N m/A]
    recording = read_bag(path, current_topic="/motor_currents",
                         torque_from_current=lambda current: current * factors)
    np.testing.assert_allclose(recording.tau, np.column_stack(
        [20.0 * np.arange(5), -100.0 * np.arange(5)]), rtol=0, atol=1e-12)
    with pytest.raises(DataError, match=r"current_topic takes the place of effort_topic and needs "
                                        r"torque_from_current"):
        read_bag(path, current_topic="/motor_currents")
    with pytest.raises(DataError, match=r"give either effort_topic \(torques\) or current_topic"):
        read_bag(path, effort_topic="/motor_currents", current_topic="/motor_currents",
                 torque_from_current=lambda current: current)


def test_write_serialized_accepts_cdr_bytes(tmp_path):
    path = tmp_path / "bag"
    with BagWriter(path, storage="sqlite3") as writer:
        message = writer.typestore.types["sensor_msgs/msg/JointState"](
            header=writer.header(5), name=["a"], position=np.array([0.5]),
            velocity=np.array([]), effort=np.array([]))
        data = writer.typestore.serialize_cdr(message, "sensor_msgs/msg/JointState")
        writer.write_serialized("/joint_states", "sensor_msgs/msg/JointState", data, 5)
    np.testing.assert_array_equal(read_bag(path).q, [[0.5]])


def test_flush_makes_sqlite3_messages_visible_before_close(tmp_path):
    path = tmp_path / "bag"
    writer = BagWriter(path, storage="sqlite3")
    for k in range(5):
        writer.write_joint_state(k + 1, ["a"], [0.0])
    writer.flush()
    with sqlite3.connect(path / "bag.db3") as connection:
        assert connection.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 5
    writer.close()
    writer.close()
    with pytest.raises(DynIdError, match="is closed"):
        writer.write_joint_state(9, ["a"], [0.0])


def test_flush_writes_mcap_chunk_to_disk(tmp_path):
    path = tmp_path / "bag"
    with BagWriter(path) as writer:
        for k in range(50):
            writer.write_joint_state(k + 1, ["a"], [0.0])
        size_before = (path / "bag.mcap").stat().st_size
        writer.flush()
        # 50 JointState records of at least 60 bytes each reach the file
        assert (path / "bag.mcap").stat().st_size >= size_before + 50 * 60


def write_unchecked_joint_state(writer, stamp_ns, names, position, velocity, effort):
    """A JointState as a faulty driver might publish it (BagWriter.write_joint_state refuses these)."""
    arrays = {field: np.array(values, dtype=np.float64) for field, values in
              (("position", position), ("velocity", velocity), ("effort", effort))}
    writer.write("/joint_states", "sensor_msgs/msg/JointState", writer.typestore.types[
        "sensor_msgs/msg/JointState"](header=writer.header(stamp_ns), name=list(names), **arrays), stamp_ns)


def test_bad_messages_are_skipped_and_counted_per_reason_with_their_first_stamp(tmp_path):
    """A driver's occasional bad message must not make the bag unusable (issue: one JointState
    with 6 positions and 5 efforts, or empty names, did)."""
    path = tmp_path / "bag"
    good = []
    bad = {  # stamp [ns] -> (names, position, velocity, effort), each bad for one reason
        5: (["a", "b"], [0.5, 0.5], [], [1.0]),                     # 2 names, 1 effort
        6: ([], [0.6, 0.6], [], []),                                 # empty names
        7: (["a", "a"], [0.7, 0.7], [], []),                         # duplicate names
        8: (["a", "b"], [0.8, np.nan], [], []),                      # NaN position
        9: (["b"], [0.9], [], []),                                   # lacks joint a
        11: (["a", "b"], [1.1, 1.1], [], [1.0, np.inf]),             # inf effort
        12: (["a", "b"], [], [], []),                                # no positions
        13: (["a", "c", "b"], [1.3, np.nan, 1.3], [], []),           # NaN in an unused joint: fine
    }
    with BagWriter(path) as writer:
        for stamp in range(1, 16):
            names, position, velocity, effort = bad.get(stamp, (["b", "a"], [stamp, -stamp], [], []))
            if stamp not in bad or stamp == 13:
                good.append(stamp)
            write_unchecked_joint_state(writer, stamp, names, position, velocity, effort)
        writer.write_joint_state(14, ["a", "b"], [9.0, 9.0])         # repeats stamp 14
    recording = read_bag(path, joint_names=["a", "b"])
    np.testing.assert_array_equal(recording.time, np.array(good) * 1e-9)
    assert recording.q[0].tolist() == [-1.0, 1.0]                   # matched by name: (b, a) = (1, -1)
    counts = {reason: (entry.count, round(entry.first_time * 1e9)) for reason, entry in recording.dropped.items()}
    assert counts == {
        "/joint_states: array lengths differ from the names": (1, 5),
        "/joint_states: empty joint names": (1, 6),
        "/joint_states: duplicate joint names": (1, 7),
        "/joint_states: non-finite values": (2, 8),
        "/joint_states: lacks joint(s) ['a']": (1, 9),
        "/joint_states: empty position": (1, 12),
        "/joint_states: repeated stamp": (1, 14),
    }
    with pytest.raises(DataError, match=r"topic '/joint_states' in bag .*: none of its 16 messages is usable: "
                                        r"/joint_states: lacks joint\(s\) \['c'\]: 13, first at"):
        read_bag(path, joint_names=["c", "b"])


def test_missing_topic_lists_the_bags_topics(tmp_path):
    path = tmp_path / "bag"
    with BagWriter(path) as writer:
        writer.write_joint_state(1, ["a"], [0.0])
    with pytest.raises(DataError, match=r"topic '/robot/joint_states' has no messages in bag .*"
                                        r"its topics: /joint_states \(sensor_msgs/msg/JointState, "
                                        r"1 messages\)"):
        read_bag(path, joint_states_topic="/robot/joint_states")
    with pytest.raises(DataError, match=r"topic '/temps' has no messages"):
        read_bag(path, temperature_topic="/temps")


def test_topic_of_wrong_type(tmp_path):
    path = tmp_path / "bag"
    with BagWriter(path) as writer:
        writer.write_joint_state(1, ["a"], [0.0])
        writer.write_stage(1, "rest", 0, True)
    with pytest.raises(DataError, match=r"topic '/experiment_stage' in bag .* has type "
                                        r"'robot_dynid/msg/ExperimentStage', expected "
                                        r"'sensor_msgs/msg/JointState'"):
        read_bag(path, joint_states_topic="/experiment_stage")


def test_writer_validation(tmp_path):
    with pytest.raises(DynIdError, match=r"^bag storage must be one of \['mcap', 'sqlite3'\], got 'rosbag1'$"):
        BagWriter(tmp_path / "bag", storage="rosbag1")
    (tmp_path / "exists").mkdir()
    with pytest.raises(DynIdError, match="cannot create bag .*exists"):
        BagWriter(tmp_path / "exists")
    with BagWriter(tmp_path / "bag") as writer:
        with pytest.raises(DataError, match=r"joint state velocity has 1 values for 2 names"):
            writer.write_joint_state(1, ["a", "b"], [0.0, 0.0], velocity=[1.0])
        with pytest.raises(DataError, match=r"^stage marker kind must be one of \[.*'payload'\], got 'cooldown'$"):
            writer.write_stage(1, "cooldown", 0, True)
    with pytest.raises(DataError, match="does not exist"):
        read_bag(tmp_path / "absent")


def test_interface_definition_lookup(monkeypatch, tmp_path):
    text = interface_definition_text("robot_dynid/msg/ExperimentStage")
    assert "uint8 KIND_CUSTOM = 5" in text and "float64 speed_fraction" in text
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path / "install"))
    with pytest.raises(DynIdError, match=r"definition of message 'Nonexistent' not found; "
                                         r"tried .*package_data/msg/Nonexistent.msg.*"
                                         r"install/share/robot_dynid/msg/Nonexistent.msg"):
        interface_definition_text("Nonexistent")


def test_joint_state_rows_may_be_strided_views(tmp_path):
    positions = np.arange(12.0).reshape(2, 6).T  # columns of a transposed array are not contiguous
    with BagWriter(tmp_path / "bag") as bag:
        bag.write_joint_state(1_000_000_000, ["a", "b"], positions[0], positions[1], positions[2])
        bag.write_joint_state(2_000_000_000, ["a", "b"], positions[3], positions[4], positions[5])
    recording = read_bag(tmp_path / "bag", stage_topic=None)
    np.testing.assert_array_equal(recording.q, positions[[0, 3]])
    np.testing.assert_array_equal(recording.tau, positions[[2, 5]])


def joint_state_cdr(writer, k):
    """CDR of the k-th joint state of a full-disk test: stamp k ms, positions (k, -k, 0.5 k) [rad], 40 joints
    so that the disk fills after a few thousand messages."""
    names = [f"j{j}" for j in range(40)]
    message = writer.typestore.types["sensor_msgs/msg/JointState"](
        header=writer.header(T0_NS + k * 1_000_000), name=names, position=np.full(40, float(k)),
        velocity=np.array([]), effort=np.array([]))
    return writer.typestore.serialize_cdr(message, "sensor_msgs/msg/JointState")


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_a_full_disk_stops_recording_and_leaves_a_closed_bag_whose_metadata_counts_its_content(tmp_path, storage):
    """A 2 MiB tmpfs fills while writing, with a flush every 100 messages: the write that finds the disk full
    raises RecordingStopped saying so; the bag is closed (metadata.yaml), its metadata counts exactly the
    messages the storage file holds, and those are the first ones written, in order."""
    from rosbags.highlevel import AnyReader
    from small_disk import small_disk
    from robot_dynid.recordings.bag_files import RESERVE_FILE
    from robot_dynid.recordings.bag_io import RecordingStopped
    with small_disk(tmp_path / "disk", "2m") as disk:
        writer = BagWriter(disk / "bag", storage=storage)
        written = 0
        with pytest.raises(RecordingStopped) as stopped:
            for k in range(100_000):
                writer.write_serialized("/joint_states", "sensor_msgs/msg/JointState", joint_state_cdr(writer, k),
                                        T0_NS + k * 1_000_000)
                written += 1
                if written % 100 == 0:
                    writer.flush()
        message = str(stopped.value)
        assert message.startswith(f"bag {disk / 'bag'}: recording stopped: disk full (") and "\n" not in message
        assert writer.closed and writer.stop_reason == message
        with pytest.raises(RecordingStopped, match="disk full"):     # later writes say why, too
            writer.write_serialized("/joint_states", "sensor_msgs/msg/JointState", joint_state_cdr(writer, 0), 1)
        writer.close()
        assert (disk / "bag" / "metadata.yaml").is_file() and not (disk / "bag" / RESERVE_FILE).exists()
        metadata = yaml.safe_load((disk / "bag" / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
        claimed = metadata["message_count"]
        assert 1000 < claimed <= written < 100_000, (claimed, written)
        assert f"bag closed with {claimed} messages (/joint_states {claimed})" in message, message
        with AnyReader([disk / "bag"]) as reader:
            assert [c.msgcount for c in reader.connections] == [claimed]
            positions = [reader.deserialize(raw, connection.msgtype).position[0]
                         for connection, _, raw in reader.messages()]
        np.testing.assert_array_equal(positions, np.arange(claimed))
        recording = read_bag(disk / "bag", stage_topic=None)
        assert recording.n_samples == claimed


def test_free_space_below_the_minimum_refuses_a_bag_and_stops_one_being_recorded(tmp_path):
    """A 4 MiB tmpfs: a minimum of 8 MB cannot be met (refused, nothing left behind); with 2 MB the bag is
    warned about once below twice that (4 MB: at once) and closed when less than 2 MB are free."""
    from small_disk import small_disk
    from robot_dynid.recordings.bag_io import DiskSpaceError, RecordingStopped
    with small_disk(tmp_path / "disk", "4m") as disk:
        with pytest.raises(DiskSpaceError, match=r"only 3\.\d\d MB free on the file system of .*bag, less than the "
                                                 r"minimum of 8 MB"):
            BagWriter(disk / "bag", min_free_space=8e6)
        assert list(disk.iterdir()) == []
        writer = BagWriter(disk / "bag", min_free_space=2e6)
        warnings = []
        with pytest.raises(RecordingStopped) as stopped:
            for k in range(100_000):
                writer.write_serialized("/joint_states", "sensor_msgs/msg/JointState", joint_state_cdr(writer, k),
                                        T0_NS + k * 1_000_000)
                if k % 100 == 99:
                    writer.flush()
                    warnings += [writer.check_free_space()]
        given = [warning for warning in warnings if warning]
        assert len(given) == 1 and re.fullmatch(rf"bag {disk / 'bag'}: only 3\.\d\d MB free on its file system; "
                                                r"recording stops when less than 2 MB are free", given[0]), given
        assert warnings[0] == given[0]     # at the first check: below 4 MB from the start
        assert re.search(r"recording stopped: only 1\.\d\d MB free on its file system, less than the minimum of 2 MB; "
                         r"bag closed with \d+ messages", str(stopped.value)), str(stopped.value)
        metadata = yaml.safe_load((disk / "bag" / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
        assert read_bag(disk / "bag", stage_topic=None).n_samples == metadata["message_count"] > 1000


# ---------------------------------------------------------------- bulk decoding (bags written by rosbags' Writer)

ARM = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint", "wrist_3_joint")
BULK_N = 7000              # MCAP: about three 1 MiB chunks of rosbags' writer
BULK_T0_NS = 1_700_000_000_000_000_000
BULK_PERIOD_NS = 1_000_000


def arm_values(n, seed=7):
    rng = np.random.default_rng(seed)
    return {field: rng.uniform(-3.0, 3.0, (n, len(ARM))) for field in ("q", "qd", "tau")}


def write_rosbags_bag(path, storage, entries, compressed=False):
    """A bag written by rosbags' own Writer (not robot_dynid's BagWriter): ``entries`` of (topic, msgtype, receive
    time [ns], message object or CDR bytes)."""
    from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore
    typestore = get_typestore(Stores.ROS2_JAZZY)
    plugin = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}[storage]
    writer = Writer(path, version=8, storage_plugin=plugin)
    if compressed:
        if not hasattr(CompressionMode, "STORAGE"):
            pytest.skip("this rosbags cannot compress MCAP chunks")
        writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
    with writer:        # opens it
        connections = {}
        for topic, msgtype, receive_ns, message in entries:
            if topic not in connections:
                if msgtype == "robot_dynid/msg/ExperimentStage":
                    from robot_dynid.recordings.bag_files import ensure_type
                    ensure_type(typestore, msgtype)
                connections[topic] = writer.add_connection(topic, msgtype, typestore=typestore)
            data = message if isinstance(message, bytes) else typestore.serialize_cdr(message, msgtype)
            writer.write(connections[topic], receive_ns, bytes(data))
    return typestore


def joint_state(typestore, stamp_ns, names, frame_id="base_link", little_endian=True, **fields):
    types = typestore.types
    header = types["std_msgs/msg/Header"](stamp=types["builtin_interfaces/msg/Time"](
        sec=int(stamp_ns // 10**9), nanosec=int(stamp_ns % 10**9)), frame_id=frame_id)
    message = types["sensor_msgs/msg/JointState"](
        header=header, name=list(names), **{field: np.asarray(fields.get(field, ()), dtype=float)
                                            for field in ("position", "velocity", "effort")})
    return bytes(typestore.serialize_cdr(message, "sensor_msgs/msg/JointState", little_endian=little_endian))


@pytest.fixture(scope="module")
def typestore():
    from rosbags.typesys import Stores, get_typestore
    return get_typestore(Stores.ROS2_JAZZY)


def arm_entries(typestore, values, names_at=lambda k: ARM):
    """JointStates of ``values`` at 1 kHz, joints named (and ordered) by ``names_at(k)``; a joint not in ARM gets
    the value 7.0."""
    entries = []
    for k in range(values["q"].shape[0]):
        stamp = BULK_T0_NS + k * BULK_PERIOD_NS
        names = names_at(k)
        columns = [ARM.index(name) if name in ARM else None for name in names]
        fields = {field: [7.0 if column is None else values[key][k, column] for column in columns]
                  for field, key in (("position", "q"), ("velocity", "qd"), ("effort", "tau"))}
        entries.append(("/joint_states", "sensor_msgs/msg/JointState", stamp + 150_000,
                        joint_state(typestore, stamp, names, **fields)))
    return entries


def assert_same_recordings(first, second):
    assert first.joint_names == second.joint_names
    for field in ("time", "q", "qd", "qdd", "tau", "temperature", "stage", "cycle"):
        a, b = getattr(first, field), getattr(second, field)
        assert (a is None) == (b is None), field
        if a is not None:
            np.testing.assert_array_equal(a, b, err_msg=field)
    assert first.dropped == second.dropped


def general_reads(caplog):
    return [record for record in caplog.records if "decoded one by one" in record.getMessage()]


@pytest.mark.parametrize("storage, compressed", [("mcap", False), ("mcap", True), ("sqlite3", False)])
def test_bulk_decoding_of_a_fixed_joint_set_with_other_topics_equals_the_values_written_and_rosbags(
        tmp_path, typestore, storage, compressed, caplog):
    """Mixed topics: JointStates, a second JointState topic of efforts, stage markers and a topic read by nobody,
    interleaved in the chunks; the bulk path reads them without falling back to rosbags' deserializer."""
    values = arm_values(BULK_N)
    entries = arm_entries(typestore, values)
    types = typestore.types
    from robot_dynid.recordings.bag_files import ensure_type
    ensure_type(typestore, "robot_dynid/msg/ExperimentStage")
    mixed = []
    for k, entry in enumerate(entries):
        mixed.append(entry)
        stamp = BULK_T0_NS + k * BULK_PERIOD_NS
        mixed.append(("/joint_efforts", "sensor_msgs/msg/JointState", entry[2] + 10,
                      joint_state(typestore, stamp, ARM[::-1], frame_id="", effort=values["tau"][k, ::-1] * 2)))
        if k % 500 == 0:
            mixed.append(("/chatter", "std_msgs/msg/String", entry[2] + 20,
                          types["std_msgs/msg/String"](data="x" * k)))
        if k in (1000, 5000):
            header = types["std_msgs/msg/Header"](stamp=types["builtin_interfaces/msg/Time"](
                sec=int(stamp // 10**9), nanosec=int(stamp % 10**9)), frame_id="")
            mixed.append(("/experiment_stage", "robot_dynid/msg/ExperimentStage", entry[2] + 30,
                          types["robot_dynid/msg/ExperimentStage"](
                              header=header, kind=STAGE_KINDS.index("excitation"), cycle=0, start=k == 1000,
                              label="", experiment_id="t", joint_name="", speed_fraction=0.0, direction=0)))
    path = tmp_path / "bag"
    write_rosbags_bag(path, storage, mixed, compressed)
    with caplog.at_level(logging.INFO, logger="robot_dynid.recordings.bag_io"):
        bulk = read_bag(path, joint_names=ARM, effort_topic="/joint_efforts")
    assert general_reads(caplog) == [] and "message by message" not in caplog.text
    general = read_bag(path, joint_names=ARM, effort_topic="/joint_efforts", bulk=False)
    assert_same_recordings(bulk, general)
    np.testing.assert_array_equal(bulk.q, values["q"])
    np.testing.assert_array_equal(bulk.qd, values["qd"])
    np.testing.assert_array_equal(bulk.tau, 2 * values["tau"])          # the effort topic's, at the same stamps
    np.testing.assert_array_equal(bulk.time, seconds(BULK_T0_NS + BULK_PERIOD_NS * np.arange(BULK_N)))
    np.testing.assert_array_equal(np.flatnonzero(bulk.stage == "excitation")[[0, -1]], [1000, 5000])


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_names_reordered_mid_bag_an_extra_joint_and_big_endian_messages_are_decoded_in_bulk(
        tmp_path, typestore, storage, caplog):
    values = arm_values(BULK_N, seed=8)

    def names_at(k):
        return ARM if k < 2000 else ARM[::-1] if k < 4000 else ARM[3:] + ("gripper",) + ARM[:3]

    entries = arm_entries(typestore, values, names_at)
    for k in range(4500, 4600):                     # a big-endian writer for a while
        stamp = BULK_T0_NS + k * BULK_PERIOD_NS
        entries[k] = entries[k][:3] + (joint_state(typestore, stamp, ARM, little_endian=False,
                                                   position=values["q"][k], velocity=values["qd"][k],
                                                   effort=values["tau"][k]),)
    path = tmp_path / "bag"
    write_rosbags_bag(path, storage, entries)
    with caplog.at_level(logging.INFO, logger="robot_dynid.recordings.bag_io"):
        bulk = read_bag(path, joint_names=ARM)
    assert general_reads(caplog) == []
    assert_same_recordings(bulk, read_bag(path, joint_names=ARM, bulk=False))
    for field in ("q", "qd", "tau"):
        np.testing.assert_array_equal(getattr(bulk, field), values[field], err_msg=field)
    default_order = read_bag(path)              # the first message's joints, in its order
    assert default_order.joint_names == ARM and default_order.n_samples == BULK_N


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_messages_whose_layout_keeps_changing_fall_back_to_rosbags_and_say_so_once(
        tmp_path, typestore, storage, caplog):
    values = arm_values(600, seed=9)
    rng = np.random.default_rng(4)
    orders = [tuple(ARM[j] for j in rng.permutation(len(ARM))) for _ in range(600)]
    entries = arm_entries(typestore, values, lambda k: orders[k])
    entries[300] = entries[300][:3] + (entries[300][3][:-8],)     # a message cut short: not CDR of a JointState
    path = tmp_path / "bag"
    write_rosbags_bag(path, storage, entries[:300] + entries[301:])
    with caplog.at_level(logging.INFO, logger="robot_dynid.recordings.bag_io"):
        bulk = read_bag(path, joint_names=ARM)
    said = general_reads(caplog)
    assert len(said) == 1
    assert said[0].getMessage().startswith("/joint_states: its messages change their byte layout")
    assert_same_recordings(bulk, read_bag(path, joint_names=ARM, bulk=False))
    kept = np.r_[0:300, 301:600]
    np.testing.assert_array_equal(bulk.q, values["q"][kept])


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_a_bag_cut_short_is_read_alike_by_bulk_decoding_and_rosbags(tmp_path, typestore, storage, caplog):
    """bag_recovery's path: no metadata.yaml, the storage file cut in its last part; both decoders read the same
    complete messages."""
    values = arm_values(BULK_N, seed=10)
    path = tmp_path / "bag"
    write_rosbags_bag(path, storage, arm_entries(typestore, values))
    (path / "metadata.yaml").unlink()
    [storage_file] = [*path.glob("*.mcap"), *path.glob("*.db3")]
    with open(storage_file, "r+b") as handle:
        handle.truncate(int(storage_file.stat().st_size * 0.8))
    bulk = read_bag(path, joint_names=ARM)
    assert "is incomplete" in caplog.text
    assert_same_recordings(bulk, read_bag(path, joint_names=ARM, bulk=False))
    assert 1000 < bulk.n_samples < BULK_N
    written = np.rint((bulk.time - seconds([BULK_T0_NS])[0]) * 1000).astype(int)      # sqlite3: not a prefix
    np.testing.assert_array_equal(bulk.q, values["q"][written])


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_chunks_of_a_bag_join_into_the_whole_file_reading(tmp_path, typestore, storage):
    from robot_dynid.recordings.bag_io import BagChunks
    values = arm_values(BULK_N, seed=12)
    path = tmp_path / "bag"
    write_rosbags_bag(path, storage, arm_entries(typestore, values))
    whole = read_bag(path, joint_names=ARM)
    with BagChunks(path, joint_names=ARM, messages=1000) as chunks:
        parts = list(chunks)
    assert len(parts) > 2 and max(part.samples.stamp_ns.size for part in parts) < 4000    # MCAP: whole chunks
    np.testing.assert_array_equal(seconds(np.concatenate([part.samples.stamp_ns for part in parts])), whole.time)
    for field, key in (("position", "q"), ("velocity", "qd"), ("effort", "tau")):
        np.testing.assert_array_equal(np.concatenate([part.samples.values[field] for part in parts]),
                                      getattr(whole, key))
