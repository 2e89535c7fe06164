"""A bag's message records in blocks: MCAP chunks by their message indexes (or walked), sqlite3 rows in batches,
against the independent MCAP reader (the mcap package) and rosbags' reader on bags rosbags' Writer wrote."""
import dataclasses

import numpy as np
import pytest
from rosbags.highlevel import AnyReader
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from robot_dynid.recordings.bag_records import (mcap_blocks, open_sqlite, read_mcap_summary, sqlite_blocks,
                                                sqlite_topics)

try:
    from mcap.reader import make_reader
except ImportError:     # mcap has no rosdep key (package.xml), so a ROS install may lack it
    make_reader = None

TOPICS = ("/a", "/b", "/c")


def write_bag(path, storage, n=6000, ties=False):
    """Strings on three topics, of growing length, interleaved unevenly (two 1 MiB MCAP chunks);
    ``ties``: pairs of messages share a receive time."""
    typestore = get_typestore(Stores.ROS2_JAZZY)
    plugin = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}[storage]
    written = []
    with Writer(path, version=8, storage_plugin=plugin) as writer:
        connections = {topic: writer.add_connection(topic, "std_msgs/msg/String", typestore=typestore)
                       for topic in TOPICS}
        for k in range(n):
            topic = TOPICS[0] if k % 7 else TOPICS[1 + (k // 7) % 2]
            data = bytes(typestore.serialize_cdr(typestore.types["std_msgs/msg/String"](data="x" * (k % 300)),
                                                 "std_msgs/msg/String"))
            receive_ns = 1_000_000 * (k // 2 if ties else k)
            writer.write(connections[topic], receive_ns, data)
            written.append((topic, receive_ns, data))
    [storage_file] = [*path.glob("*.mcap"), *path.glob("*.db3")]
    return written, storage_file


def block_messages(blocks, topic_of):
    return [(topic_of[int(block.channel[i])], int(block.receive_ns[i]), block.data(i))
            for block in blocks for i in range(len(block))]


@pytest.mark.skipif(make_reader is None, reason="the independent MCAP reader is not installed: pip install mcap")
def test_mcap_blocks_give_every_message_of_the_channels_as_the_mcap_reader_does(tmp_path):
    written, storage_file = write_bag(tmp_path / "bag", "mcap")
    with open(storage_file, "rb") as handle:
        summary = read_mcap_summary(handle, storage_file.stat().st_size)
        assert len(summary.chunks) >= 2 and summary.in_receive_order()
        topic_of = {channel_id: channel.topic for channel_id, channel in summary.channels.items()}
        wanted = {channel_id for channel_id, topic in topic_of.items() if topic in TOPICS[:2]}
        indexed = block_messages(mcap_blocks(handle, summary, wanted, 1000), topic_of)
        walked_summary = dataclasses.replace(summary, chunks=tuple(
            dataclasses.replace(chunk, index_offsets={}) for chunk in summary.chunks))
        walked = block_messages(mcap_blocks(handle, walked_summary, wanted, 10**6), topic_of)
    with open(storage_file, "rb") as handle:
        reader = make_reader(handle)
        expected = [(channel.topic, message.log_time, message.data)
                    for _, channel, message in reader.iter_messages(topics=list(TOPICS[:2]), log_time_order=False)]
    assert indexed == expected == walked
    assert expected == [message for message in written if message[0] in TOPICS[:2]]


def test_sqlite_blocks_give_the_messages_in_rosbags_order_equal_receive_times_included(tmp_path):
    path = tmp_path / "bag"
    written, storage_file = write_bag(path, "sqlite3", n=2000, ties=True)
    connection = open_sqlite(storage_file)
    try:
        topic_of = {topic_id: name for topic_id, (name, _, _) in sqlite_topics(connection).items()}
        wanted = {topic_id for topic_id, name in topic_of.items() if name != TOPICS[2]}
        blocks = list(sqlite_blocks(connection, wanted, 300))
    finally:
        connection.close()
    assert [len(block) for block in blocks[:-1]] == [300] * (len(blocks) - 1) and len(blocks[-1]) <= 300
    with AnyReader([path], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
        expected = [(connection.topic, receive_ns, data) for connection, receive_ns, data in
                    reader.messages(connections=[c for c in reader.connections if c.topic != TOPICS[2]])]
    assert block_messages(blocks, topic_of) == expected
    received = np.array([receive_ns for _, receive_ns, _ in expected])
    assert (np.diff(received) == 0).sum() > 500        # ties, kept in the order written
