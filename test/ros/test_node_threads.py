"""spin_node's own_thread_groups: a node's callback groups on a thread of their own, beside the rest.

The feed-forward node puts its reference path there so that a long service request does not hold it
up (test_feedforward_node: a 1,000,000-point request). Here the mechanism alone, in this process:
real rclpy timers, a main thread held by a callback that blocks, and a failure in the own thread.
"""
import time

import pytest
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node

from robot_dynid.nodes.node_runtime import spin_node

TICK = 0.01        # s: the own thread's timer period
BLOCKED = 0.5      # s: how long one callback of the main thread blocks it


class Finished(Exception):
    """Raised by a test node's callback to end spin_node."""


class BusyMainThread(Node):
    """A 100 Hz timer in an own-thread group; on the main thread, a timer that blocks for BLOCKED s once,
    then one that ends the run."""

    def __init__(self):
        super().__init__("busy_main_thread")
        own = MutuallyExclusiveCallbackGroup()
        self.own_thread_groups = (own,)
        self.ticks, self.blocked = [], None
        self.create_timer(TICK, lambda: self.ticks.append(time.monotonic()), callback_group=own)
        self.block_timer = self.create_timer(0.3, self.block)
        self.create_timer(1.5, self.finish)

    def block(self):
        self.block_timer.cancel()
        start = time.monotonic()
        time.sleep(BLOCKED)
        self.blocked = (start, time.monotonic())

    def finish(self):
        BusyMainThread.last = self
        raise Finished


class FailingOwnThread(Node):
    def __init__(self):
        super().__init__("failing_own_thread")
        own = MutuallyExclusiveCallbackGroup()
        self.own_thread_groups = (own,)
        self.create_timer(0.05, self.fail, callback_group=own)
        self.create_timer(5.0, self.give_up)      # the failure never reached the main thread: end anyway

    def give_up(self):
        raise Finished

    def fail(self):
        raise RuntimeError("a bug in the reference path")


def test_an_own_thread_group_keeps_running_while_the_main_thread_is_blocked():
    with pytest.raises(Finished):
        spin_node(BusyMainThread)
    node = BusyMainThread.last
    start, end = node.blocked
    during = [tick for tick in node.ticks if start <= tick <= end]
    assert len(during) > 0.5 * BLOCKED / TICK, (len(during), node.ticks)
    assert max(b - a for a, b in zip(during, during[1:])) < 0.1


def test_an_exception_in_an_own_thread_group_ends_the_node_like_one_on_the_main_thread():
    """A callback that raises on the own thread must not leave the node running without that path (a
    controller would get no commands and no sign of it): the node ends with the exception."""
    with pytest.raises(RuntimeError, match="a bug in the reference path"):
        spin_node(FailingOwnThread)
