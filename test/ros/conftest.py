"""Fixtures of the ROS tests."""
import pytest


@pytest.fixture(scope="module")
def graph():
    """The test module's side of the ROS graph: one test node and its executor (ros_graph.RosTestGraph), for
    the module's subscriptions, publishers and clients, torn down after the module's last test."""
    from ros_graph import RosTestGraph
    graph = RosTestGraph()
    yield graph
    graph.close()


@pytest.fixture(scope="module")
def context():
    """An rclpy context of the test module's own, for nodes built in the test's process
    (``Node(context=context)``), shut down after the module's last test."""
    import rclpy
    context = rclpy.Context()
    rclpy.init(context=context)
    yield context
    rclpy.try_shutdown(context=context)
