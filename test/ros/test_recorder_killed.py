"""A recorder killed with SIGKILL: its bag (no metadata.yaml, storage file without its end) is read
up to the last flush and repaired.

The recorder flushes its bag every second (``flush_period``), so everything published more than a
second before the kill must be recovered, give or take ``LATENCY`` (its flush timer fires late when
callbacks keep its executor busy; delivery takes a few ms); everything recovered must be what the
test published. Publishing starts once the recorder answers a service call (its subscription is in
the graph before it spins). Each test has its own recorder name and topic: a killed recorder's
endpoints stay in the graph until its DDS lease runs out, and would count as the next recorder's.
"""
import signal
import time

import numpy as np
import pytest
from rosbags.highlevel import AnyReader
from sensor_msgs.msg import JointState

from robot_dynid.cli import main
from robot_dynid.recordings.bag_io import read_bag
from ros_graph import start_node

JOINTS = ("j1", "j2", "j3")
T0_NS = 1_700_000_000_000_000_000
RATE = 400.0             # Hz
DURATION = 4.0           # s
FLUSH_PERIOD = 1.0       # s, the recorder's default
LATENCY = 0.1            # s


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_bag_of_a_killed_recorder_is_read_up_to_its_last_flush_and_repaired(graph, tmp_path, storage, capsys):
    bag, log = tmp_path / "bag", tmp_path / "recorder.log"
    name = f"killed_recorder_{storage}"
    topic = f"{name}/joint_states"
    process = start_node("recorder", "-r", f"__node:={name}", "-p", f"bag_path:={bag}", "-p", f"storage:={storage}",
                         "-p", f"joint_states_topic:={topic}", "-p", f"flush_period:={FLUSH_PERIOD}", log_path=log)
    publisher = graph.node.create_publisher(JointState, topic, 4000)
    try:
        graph.spin_until(lambda: publisher.get_subscription_count() > 0, what="recorder subscribing to joint_states")
        graph.wait_until_spinning(f"/{name}")
        rng = np.random.default_rng(7)
        n = int(RATE * DURATION)
        stamps = T0_NS + np.arange(n) * int(1e9 / RATE)
        q, qd, tau = (rng.uniform(-3.0, 3.0, (n, len(JOINTS))) for _ in range(3))
        sent = np.empty(n)
        start = time.monotonic()
        for k in range(n):
            time.sleep(max(0.0, start + k / RATE - time.monotonic()))   # pacing, not waiting on the graph
            message = JointState(name=list(JOINTS), position=list(q[k]), velocity=list(qd[k]), effort=list(tau[k]))
            message.header.stamp.sec, message.header.stamp.nanosec = divmod(int(stamps[k]), 1_000_000_000)
            publisher.publish(message)
            sent[k] = time.monotonic()
        assert main(["bag", "repair", str(bag)]) == 2       # the live recorder holds the bag
        assert "is being recorded by a running process" in capsys.readouterr().err
        process.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        process.wait(timeout=10.0)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        graph.node.destroy_publisher(publisher)
    assert process.returncode == -signal.SIGKILL
    assert not (bag / "metadata.yaml").exists() and "closed bag" not in log.read_text()

    recording = read_bag(bag, stage_topic=None)
    m = recording.n_samples
    must_have = int(np.sum(sent <= killed - FLUSH_PERIOD - LATENCY))
    measured = (f"{storage}: published {n} at {RATE:g} Hz, recovered {m}, lost {n - m} ({(n - m) / RATE:.3f} s); "
                f"{must_have} were published over {FLUSH_PERIOD + LATENCY} s before the kill")
    with capsys.disabled():
        print(measured)
    assert must_have <= m <= n, measured
    np.testing.assert_array_equal(recording.time, [s // 10**9 + (s % 10**9) * 1e-9 for s in map(int, stamps[:m])])
    np.testing.assert_array_equal(recording.q, q[:m])
    np.testing.assert_array_equal(recording.qd, qd[:m])
    np.testing.assert_array_equal(recording.tau, tau[:m])

    assert main(["bag", "repair", str(bag)]) == 0
    assert f"{m} messages recovered (/joint_states {m})" in capsys.readouterr().out
    with AnyReader([bag]) as reader:
        assert [(c.topic, c.msgtype, c.msgcount) for c in reader.connections] == \
            [("/joint_states", "sensor_msgs/msg/JointState", m)]
    np.testing.assert_array_equal(read_bag(bag, stage_topic=None).q, q[:m])
