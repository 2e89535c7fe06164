"""Incomplete bags (no metadata.yaml, storage file cut short, recorder killed) read up to their last
complete message, and repaired.

Expected values come from what the tests wrote and from the file formats, never from the reader:

- MCAP (rosbags' writer, as BagWriter uses it): every flush ends a chunk record followed by one
  message index record per channel in the chunk (opcode, u64 length, u16 channel, u32 array
  length, 16 bytes per message: 15 + 16 n bytes). From the file size after each flush and the
  messages written per channel, the test knows where each chunk record ends; a cut keeps exactly
  the groups whose chunk record lies before it.
- SQLite: no byte layout is assumed. The stdlib sqlite3 module, reading rows in rowid order until
  its first error, gives a lower bound; every row read must be one the test wrote, with its stamp
  and values; a longer file never gives fewer rows.
- Repaired bags are checked by rosbags' AnyReader and by the independent ``mcap`` package.
"""
import logging
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from rosbags.highlevel import AnyReader
from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer

from robot_dynid.cli import main
from robot_dynid.errors import DataError
from robot_dynid.recordings.bag_files import CLOSING_RESERVE, RESERVE_FILE, bag_being_recorded, make_typestore
from robot_dynid.recordings.bag_io import BagWriter, read_bag
from robot_dynid.recordings.bag_recovery import RecoveredBag, repair_bag

try:
    from mcap.reader import make_reader
    from mcap.writer import CompressionType
    from mcap.writer import Writer as McapPackageWriter
except ImportError:     # mcap has no rosdep key (package.xml), so a ROS install may lack it
    make_reader = None
needs_mcap = pytest.mark.skipif(make_reader is None,
                                reason="the independent MCAP reader is not installed: pip install mcap")

JOINTS = ("j1", "j2", "j3")
T0_NS = 1_700_000_000_000_000_000
PERIOD_NS = 2_000_000
RECEIVE_DELAY_NS = 300_000          # bag (receive) time = header stamp + this
GROUPS = (40, 55, 70, 30, 25)       # joint states written between flushes
MARKER_GROUPS = (1, 3)              # a stage marker (start, end) is written in these groups
N = sum(GROUPS)
STAMPS = T0_NS + PERIOD_NS * np.arange(N, dtype=np.int64)
JOINT_STATE = "sensor_msgs/msg/JointState"
MCAP_MAGIC = b"\x89MCAP0\r\n"


def positions(n=N, seed=3):
    return np.random.default_rng(seed).uniform(-3.0, 3.0, (n, len(JOINTS)))


def storage_file(bag):
    [path] = [*bag.glob("*.mcap"), *bag.glob("*.db3")]
    return path


def write_groups(bag, storage):
    """GROUPS of joint states, flushed after each group; the file size after each flush."""
    q = positions()
    sizes = []
    with BagWriter(bag, storage=storage) as writer:
        k = 0
        for group, count in enumerate(GROUPS):
            for _ in range(count):
                writer.write_joint_state(int(STAMPS[k]), JOINTS, q[k], receive_ns=int(STAMPS[k]) + RECEIVE_DELAY_NS)
                k += 1
            if group in MARKER_GROUPS:
                writer.write_stage(int(STAMPS[k - 1]), "excitation", 0, group == MARKER_GROUPS[0])
            writer.flush()
            sizes.append(storage_file(bag).stat().st_size)
    return q, sizes


def chunk_ends(sizes):
    """File offset where each group's chunk record ends: the size after its flush less its
    message index records (15 + 16 n bytes per channel)."""
    return [size - (15 + 16 * GROUPS[group]) - (15 + 16 if group in MARKER_GROUPS else 0)
            for group, size in enumerate(sizes)]


def mcap_header_end(path):
    data = path.read_bytes()
    assert data[:8] == MCAP_MAGIC and data[8] == 0x01
    return 17 + int.from_bytes(data[9:17], "little")


def truncated_copy(source, target, cut, keep_metadata=False):
    shutil.copytree(source, target)
    if not keep_metadata:
        (target / "metadata.yaml").unlink()
    with open(storage_file(target), "r+b") as handle:
        handle.truncate(cut)
    return target


def stamp_text(ns):
    seconds, nanoseconds = divmod(int(ns), 1_000_000_000)
    return f"{seconds}.{nanoseconds // 1000:06d} s"


def recovery_warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == "robot_dynid.recordings.bag_recovery" and r.levelno == logging.WARNING]


@pytest.fixture(scope="module")
def mcap_bag(tmp_path_factory):
    bag = tmp_path_factory.mktemp("whole") / "bag"
    q, sizes = write_groups(bag, "mcap")
    return bag, q, sizes


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_bag_without_metadata_reads_every_message_with_a_warning(tmp_path, caplog, storage):
    q, _ = write_groups(tmp_path / "bag", storage)
    (tmp_path / "bag" / "metadata.yaml").unlink()
    recording = read_bag(tmp_path / "bag")
    np.testing.assert_array_equal(recording.q, q)
    np.testing.assert_array_equal(recording.time, [s // 10**9 + (s % 10**9) * 1e-9 for s in map(int, STAMPS)])
    marked = [sum(GROUPS[:group + 1]) - 1 for group in MARKER_GROUPS]    # samples stamped like the markers
    np.testing.assert_array_equal(recording.stage == "excitation",
                                  (np.arange(N) >= marked[0]) & (np.arange(N) <= marked[1]))
    [warning] = recovery_warnings(caplog)
    assert f"bag {tmp_path / 'bag'} is incomplete (no metadata.yaml)" in warning
    assert f"recovered {N + 2} messages up to stamp {stamp_text(STAMPS[-1] + RECEIVE_DELAY_NS)} (receive time)" \
        in warning
    assert f"'robot-dynid bag repair {tmp_path / 'bag'}' makes it whole" in warning


def test_mcap_cut_anywhere_keeps_exactly_the_complete_chunks(tmp_path, caplog, mcap_bag):
    bag, q, sizes = mcap_bag
    ends = chunk_ends(sizes)
    starts = [mcap_header_end(storage_file(bag))] + sizes[:-1]
    full = storage_file(bag).stat().st_size
    cuts = {0, 3, 8, starts[0] - 1, starts[0], full - 1, full - 40}
    for start, end, size in zip(starts, ends, sizes):
        cuts |= {start + 1, start + 9, start + 40, (start + end) // 2, end - 1, end, end + 5, size}
    for index, cut in enumerate(sorted(cuts)):
        caplog.clear()
        damaged = truncated_copy(bag, tmp_path / f"cut{index}", cut, keep_metadata=index % 2 == 0)
        kept = sum(end <= cut for end in ends)
        n = sum(GROUPS[:kept])
        if n == 0:
            with pytest.raises(DataError, match="'/joint_states' has no messages"):
                read_bag(damaged)
            assert "recovered no message" in recovery_warnings(caplog)[0], cut
            continue
        recording = read_bag(damaged)
        np.testing.assert_array_equal(recording.q, q[:n], err_msg=f"cut at byte {cut}")
        assert recording.time[-1] == pytest.approx(STAMPS[n - 1] * 1e-9, abs=1e-6)
        markers = sum(group < kept for group in MARKER_GROUPS)
        [warning] = recovery_warnings(caplog)
        assert f"recovered {n + markers} messages up to stamp {stamp_text(STAMPS[n - 1] + RECEIVE_DELAY_NS)}" \
            in warning, (cut, warning)
        if cut < full - 40:
            assert f"cut short at byte {cut}" in warning, warning
        assert ("no metadata.yaml" in warning) == (index % 2 == 1)


def sqlite_rows_before_first_error(path):
    """Stamps of the rows the stdlib sqlite3 module reads in rowid order from ``path`` until its
    first error or malformed row (it reads the missing part of a page cut short as zeros)."""
    rows = []
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        connection.execute("PRAGMA writable_schema=ON")
        for stamp, data in connection.execute("SELECT timestamp, data FROM messages ORDER BY id"):
            if not (isinstance(stamp, int) and isinstance(data, bytes)):
                break
            rows.append(stamp)
    except sqlite3.DatabaseError:
        pass
    finally:
        connection.close()
    return rows


def test_sqlite_cut_anywhere_reads_committed_rows_only_and_more_than_sqlite_itself(tmp_path, caplog):
    n = 4000
    q = positions(n)
    bag = tmp_path / "bag"
    with BagWriter(bag, storage="sqlite3") as writer:
        for k in range(n):
            writer.write_joint_state(T0_NS + k * PERIOD_NS, JOINTS, q[k], velocity=-q[k], effort=2 * q[k])
            if k % 500 == 499:
                writer.flush()
    size = storage_file(bag).stat().st_size
    previous = set()
    for index, cut in enumerate(list(range(0, size, size // 17)) + [size - 1, size]):
        caplog.clear()
        damaged = truncated_copy(bag, tmp_path / f"cut{index}", cut)
        # sqlite3 reads the missing part of a page as zeros: whole pages only for it
        page_size = int.from_bytes(storage_file(bag).read_bytes()[16:18], "big")
        whole_pages = shutil.copyfile(storage_file(damaged), tmp_path / "whole_pages.db3")
        os.truncate(whole_pages, cut - cut % page_size)
        by_sqlite = sqlite_rows_before_first_error(whole_pages)
        try:
            recording = read_bag(damaged, stage_topic=None)
        except DataError as error:
            assert "has no messages" in str(error) and not by_sqlite
            continue
        rows = np.rint((recording.time - T0_NS * 1e-9) / (PERIOD_NS * 1e-9)).astype(int)
        np.testing.assert_array_equal(recording.q, q[rows])
        np.testing.assert_array_equal(recording.qd, -q[rows])
        np.testing.assert_array_equal(recording.tau, 2 * q[rows])
        assert set((np.array(by_sqlite) - T0_NS) // PERIOD_NS) <= set(rows)
        assert previous <= set(rows)
        previous = set(rows)
        # most of the file is table-leaf pages of messages: a cut keeps about its share of them
        assert rows.size >= 0.7 * n * cut / size - 100, (cut, rows.size)
        [warning] = recovery_warnings(caplog)
        assert f"recovered {rows.size} messages" in warning
    assert previous == set(range(n))


KILLED_WRITER = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    from robot_dynid.recordings.bag_io import BagWriter
    groups, storage, t0, period = eval(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    q = np.random.default_rng(3).uniform(-3.0, 3.0, (sum(groups), 3))
    writer = BagWriter(sys.argv[5], storage=storage)
    k = 0
    for group, count in enumerate(groups):
        for _ in range(count):
            writer.write_joint_state(t0 + k * period, ["j1", "j2", "j3"], q[k], effort=np.zeros(3))
            k += 1
        if group < len(groups) - 1:
            writer.flush()
    os.kill(os.getpid(), signal.SIGKILL)
""")


def killed_writer(repo_root, bag, storage, groups):
    """Write ``groups`` of joint states in another process, flushing after every group but the
    last, then SIGKILL it; return the joint states the flushed groups hold."""
    result = subprocess.run([sys.executable, "-c", KILLED_WRITER, repr(groups), storage, str(T0_NS), str(PERIOD_NS),
                             str(bag)], env={**os.environ, "PYTHONPATH": str(repo_root)}, capture_output=True)
    assert result.returncode == -signal.SIGKILL, result.stderr.decode()
    return sum(groups[:-1])


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_killed_writer_loses_exactly_what_came_after_its_last_flush(repo_root, tmp_path, caplog, storage):
    # sqlite3: the last, unflushed group is larger than SQLite's 2 MB page cache, so uncommitted
    # pages reach the file and its hot journal must be rolled back (on a copy)
    groups = (300, 450, 20000) if storage == "sqlite3" else (300, 450, 200)
    flushed = killed_writer(repo_root, tmp_path / "bag", storage, groups)
    files = {path.name: path.read_bytes() for path in (tmp_path / "bag").iterdir()}
    assert "metadata.yaml" not in files and len(files.pop(RESERVE_FILE)) == CLOSING_RESERVE   # zeros, removed
    recording = read_bag(tmp_path / "bag", stage_topic=None)
    np.testing.assert_array_equal(recording.q, positions(sum(groups))[:flushed])
    assert f"recovered {flushed} messages" in recovery_warnings(caplog)[0]
    assert {path.name: path.read_bytes() for path in (tmp_path / "bag").iterdir()
            if path.name != RESERVE_FILE} == files   # nothing written
    if storage == "sqlite3":
        assert "bag.db3-journal" in files

    result = repair_bag(tmp_path / "bag")
    assert result.counts == {"/joint_states": flushed}
    storage_name = "bag.mcap" if storage == "mcap" else "bag.db3"
    assert sorted(path.name for path in (tmp_path / "bag").iterdir()) == sorted(
        ["metadata.yaml", storage_name, *(name + ".damaged" for name in files)])
    for name, data in files.items():
        assert (tmp_path / "bag" / f"{name}.damaged").read_bytes() == data
    with AnyReader([tmp_path / "bag"]) as reader:
        assert [(c.topic, c.msgcount) for c in reader.connections] == [("/joint_states", flushed)]
    caplog.clear()
    np.testing.assert_array_equal(read_bag(tmp_path / "bag", stage_topic=None).q, recording.q)
    assert not recovery_warnings(caplog)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_a_bag_being_recorded_is_read_but_not_repaired(tmp_path, caplog, capsys, storage):
    """Repairing in place moves the storage file from under its writer: refused while one holds the bag
    (the lock is the kernel's: a killed writer drops it, see the test above)."""
    q = positions(40)
    writer = BagWriter(tmp_path / "bag", storage=storage, distro="kilted")
    try:
        for k in range(40):
            writer.write_joint_state(T0_NS + k * PERIOD_NS, JOINTS, q[k])
        writer.flush()
        np.testing.assert_array_equal(read_bag(tmp_path / "bag", stage_topic=None).q, q)
        assert not recovery_warnings(caplog)       # no advice to repair a bag that is being written
        with pytest.raises(DataError, match=r"bag .*bag is being recorded by a running process \(a recorder\): "
                                            r"stop it"):
            repair_bag(tmp_path / "bag")
        assert main(["bag", "repair", str(tmp_path / "bag")]) == 2
        assert "is being recorded by a running process" in capsys.readouterr().err
    except BaseException:
        writer.close()
        raise
    storage_file = "bag." + ("mcap" if storage == "mcap" else "db3")
    assert sorted(p.name for p in (tmp_path / "bag").iterdir()) == [RESERVE_FILE, storage_file]
    writer.close()
    assert not (tmp_path / "bag" / RESERVE_FILE).exists()
    assert repair_bag(tmp_path / "bag").out is None                   # whole: left alone
    np.testing.assert_array_equal(read_bag(tmp_path / "bag", stage_topic=None).q, q)


def test_a_bag_that_fails_to_close_is_not_left_locked(tmp_path):
    """metadata.yaml.tmp taken by a directory: putting the distribution into metadata.yaml fails on close, and
    the bag is not reported as being recorded afterwards (repair and read are not refused)."""
    writer = BagWriter(tmp_path / "bag", ros_distro="jazzy")
    writer.write_joint_state(T0_NS, JOINTS, positions(1)[0])
    (tmp_path / "bag" / "metadata.yaml.tmp").mkdir()
    assert bag_being_recorded(tmp_path / "bag")
    with pytest.raises(IsADirectoryError):
        writer.close()
    assert not bag_being_recorded(tmp_path / "bag")


def mcap_package_messages(path):
    with open(path, "rb") as handle:
        return [(channel.topic, schema.name, message.log_time, message.data)
                for schema, channel, message in make_reader(handle).iter_messages()]


@needs_mcap
def test_repair_in_place_gives_a_bag_other_readers_read_and_keeps_the_original(tmp_path, mcap_bag):
    bag, q, sizes = mcap_bag
    original = mcap_package_messages(storage_file(bag))
    ends = chunk_ends(sizes)
    cut = (ends[2] + ends[3]) // 2              # in the middle of group 3's chunk
    damaged = truncated_copy(bag, tmp_path / "damaged", cut)
    cut_bytes = storage_file(damaged).read_bytes()

    result = repair_bag(damaged)
    n = sum(GROUPS[:3])
    assert result.counts == {"/joint_states": n, "/experiment_stage": 1}
    assert (result.first_ns, result.last_ns) == (STAMPS[0] + RECEIVE_DELAY_NS, STAMPS[n - 1] + RECEIVE_DELAY_NS)
    assert (damaged / "bag.mcap.damaged").read_bytes() == cut_bytes
    assert mcap_package_messages(damaged / "bag.mcap") == original[:n + 1]
    with AnyReader([damaged]) as reader:
        assert {c.topic: c.msgcount for c in reader.connections} == {"/joint_states": n, "/experiment_stage": 1}
        qos = {c.topic: c.ext.offered_qos_profiles for c in reader.connections}
    with AnyReader([bag]) as reader:
        assert qos == {c.topic: c.ext.offered_qos_profiles for c in reader.connections}
    whole = read_bag(bag)
    repaired = read_bag(damaged)
    np.testing.assert_array_equal(repaired.q, whole.q[:n])
    np.testing.assert_array_equal(repaired.time, whole.time[:n])
    np.testing.assert_array_equal(repaired.stage, whole.stage[:n])


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_repair_to_another_directory_leaves_the_bag_untouched(tmp_path, storage):
    q, sizes = write_groups(tmp_path / "bag", storage)
    (tmp_path / "bag" / "metadata.yaml").unlink()
    before = {path.name: path.read_bytes() for path in (tmp_path / "bag").iterdir()}
    result = repair_bag(tmp_path / "bag", out=tmp_path / "fixed")
    assert result.out == tmp_path / "fixed" and result.kept == ()
    assert {path.name: path.read_bytes() for path in (tmp_path / "bag").iterdir()} == before
    np.testing.assert_array_equal(read_bag(tmp_path / "fixed").q, q)
    with AnyReader([tmp_path / "fixed"]) as reader:
        assert {c.topic: c.msgcount for c in reader.connections} == {"/joint_states": N, "/experiment_stage": 2}
    with pytest.raises(DataError, match="cannot write the repaired bag to .*fixed"):
        repair_bag(tmp_path / "bag", out=tmp_path / "fixed")


def test_whole_bag_is_left_alone(tmp_path, mcap_bag):
    bag = shutil.copytree(mcap_bag[0], tmp_path / "bag")
    before = {path.name: (path.read_bytes(), path.stat().st_mtime_ns) for path in bag.iterdir()}
    result = repair_bag(bag)
    assert result.out is None
    assert {path.name: (path.read_bytes(), path.stat().st_mtime_ns) for path in bag.iterdir()} == before


def test_a_bag_without_a_complete_message_is_not_repaired(tmp_path, mcap_bag):
    damaged = truncated_copy(mcap_bag[0], tmp_path / "bag", mcap_header_end(storage_file(mcap_bag[0])) + 30)
    with pytest.raises(DataError, match=r"bag \S*bag holds no complete message \(no metadata.yaml; bag.mcap cut "
                                        r"short at byte \d+, complete records up to byte \d+\): nothing to repair"):
        repair_bag(damaged)
    assert sorted(path.name for path in damaged.iterdir()) == ["bag.mcap"]


def test_repair_in_place_does_not_overwrite_an_earlier_original(tmp_path, mcap_bag):
    damaged = truncated_copy(mcap_bag[0], tmp_path / "bag", mcap_bag[2][1] + 10)
    (damaged / "bag.mcap.damaged").write_bytes(b"earlier")
    with pytest.raises(DataError, match=r"bag.mcap.damaged exists"):
        repair_bag(damaged)
    assert (damaged / "bag.mcap.damaged").read_bytes() == b"earlier"
    assert sorted(path.name for path in damaged.iterdir()) == ["bag.mcap", "bag.mcap.damaged"]


def write_mcap_package_file(path, compression, chunk_size=4096):
    """An MCAP file written by the ``mcap`` package (schemas and channels outside the chunks,
    chunk CRCs set), its messages and the chunk indexes of its summary."""
    typestore = make_typestore()
    msgdef, _ = typestore.generate_msgdef(JOINT_STATE, ros_version=2)
    message_class = typestore.types[JOINT_STATE]
    header_class, time_class = typestore.types["std_msgs/msg/Header"], typestore.types["builtin_interfaces/msg/Time"]
    q = positions(600)
    messages = []
    with open(path, "wb") as handle:
        writer = McapPackageWriter(handle, chunk_size=chunk_size, compression=compression)
        writer.start(profile="ros2", library="test")
        schema = writer.register_schema(JOINT_STATE, "ros2msg", msgdef.encode())
        channel = writer.register_channel("/joint_states", "cdr", schema, {"offered_qos_profiles": ""})
        for k in range(len(q)):
            stamp = T0_NS + k * PERIOD_NS
            data = typestore.serialize_cdr(message_class(
                header=header_class(stamp=time_class(sec=stamp // 10**9, nanosec=stamp % 10**9), frame_id=""),
                name=list(JOINTS), position=q[k], velocity=np.zeros(0), effort=np.zeros(0)), JOINT_STATE)
            writer.add_message(channel, stamp, bytes(data), stamp)
            messages.append((stamp, bytes(data)))
        writer.finish()
    with open(path, "rb") as handle:
        chunks = sorted(make_reader(handle).get_summary().chunk_indexes, key=lambda c: c.chunk_start_offset)
    return q, messages, chunks


@needs_mcap
@pytest.mark.parametrize("compression", ["", "lz4", "zstd"])
def test_chunks_of_other_writers_compressed_or_not(tmp_path, caplog, compression):
    bag = tmp_path / "bag"
    bag.mkdir()
    q, messages, chunks = write_mcap_package_file(bag / "bag.mcap", CompressionType[compression.upper() or "NONE"])
    assert len(chunks) >= 4 and chunks[0].compression == compression
    data = (bag / "bag.mcap").read_bytes()
    third = chunks[2]
    cut = third.chunk_start_offset + third.chunk_length // 2
    (bag / "bag.mcap").write_bytes(data[:cut])
    n = sum(stamp <= chunks[1].message_end_time for stamp, _ in messages)
    with RecoveredBag(bag) as recovered:
        assert [(t, raw) for _, t, raw in recovered.messages()] == messages[:n]
    np.testing.assert_array_equal(read_bag(bag).q, q[:n])


@needs_mcap
def test_chunk_failing_its_crc_ends_the_reading(tmp_path, caplog):
    bag = tmp_path / "bag"
    bag.mkdir()
    q, messages, chunks = write_mcap_package_file(bag / "bag.mcap", CompressionType.NONE)
    data = bytearray((bag / "bag.mcap").read_bytes())
    third = chunks[2]
    data[third.chunk_start_offset + third.chunk_length - 10] ^= 0x01      # inside a message's data
    (bag / "bag.mcap").write_bytes(bytes(data))
    n = sum(stamp <= chunks[1].message_end_time for stamp, _ in messages)
    np.testing.assert_array_equal(read_bag(bag).q, q[:n])
    [warning] = recovery_warnings(caplog)
    assert f"bag.mcap corrupt at byte {third.chunk_start_offset}" in warning and "CRC mismatch" in warning


@pytest.mark.parametrize("zstd_chunks", [False, True])
def test_rosbags_writer_with_zstd_chunks(tmp_path, zstd_chunks):
    """rosbags' own Writer with storage compression: zstd chunks; a chunk is closed by hand
    after every 100 messages, the file cut inside the fourth."""
    typestore = make_typestore()
    bag = tmp_path / "bag"
    writer = Writer(bag, version=8, storage_plugin=StoragePlugin.MCAP)
    if zstd_chunks:
        writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
    writer.open()
    connection = writer.add_connection("/joint_states", JOINT_STATE, typestore=typestore)
    q = positions(400)
    header_class = typestore.types["std_msgs/msg/Header"]
    time_class = typestore.types["builtin_interfaces/msg/Time"]
    ends = []
    for k in range(400):
        stamp = T0_NS + k * PERIOD_NS
        message = typestore.types[JOINT_STATE](
            header=header_class(stamp=time_class(sec=stamp // 10**9, nanosec=stamp % 10**9), frame_id=""),
            name=list(JOINTS), position=q[k], velocity=np.zeros(0), effort=np.zeros(0))
        writer.write(connection, stamp, typestore.serialize_cdr(message, JOINT_STATE))
        if k % 100 == 99:
            writer.storage.close_chunk()
            writer.storage.bio.flush()
            ends.append(writer.storage.bio.tell())
    writer.storage.bio.close()
    with open(bag / "bag.mcap", "r+b") as handle:
        handle.truncate(ends[2] + (ends[3] - ends[2]) // 2)
    np.testing.assert_array_equal(read_bag(bag, stage_topic=None).q, q[:300])


@pytest.mark.parametrize("content, message", [
    (None, r"bag \S*empty holds no metadata.yaml and no .mcap or .db3 storage file: not a rosbag2 bag"),
    ((b"\x00not an mcap file" * 40, ".mcap"), r"empty/empty.mcap is not an MCAP file \(no MCAP magic at byte 0\)"),
    ((b"garbage" * 40, ".db3"), r"empty/empty.db3 is not an SQLite database \(no SQLite header at byte 0\)"),
])
def test_what_is_not_a_bag_stays_an_error_naming_the_path(tmp_path, content, message):
    (tmp_path / "empty").mkdir()
    if content is not None:
        (tmp_path / "empty" / f"empty{content[1]}").write_bytes(content[0])
    for action in (read_bag, repair_bag):
        with pytest.raises(DataError, match=message) as error:
            action(tmp_path / "empty")
        assert "\n" not in str(error.value)
