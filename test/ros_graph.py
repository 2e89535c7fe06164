"""Waiting on a ROS 2 graph in tests: spin until a condition holds, with generous timeouts, never sleep."""
from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import rclpy
from rclpy.executors import SingleThreadedExecutor

DISCOVERY_TIMEOUT = 20.0  # s; discovery across processes is mostly < 1 s, outliers of several seconds


class RosTestGraph:
    """An rclpy context with one test node and an executor, torn down on close()."""

    def __init__(self, node_name="robot_dynid_test"):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(node_name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def spin_until(self, condition, timeout=DISCOVERY_TIMEOUT, what="condition"):
        """Spin until ``condition()`` is true; raise TimeoutError naming ``what`` otherwise."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
            self.executor.spin_once(timeout_sec=0.05)

    def call(self, client, request, timeout=DISCOVERY_TIMEOUT):
        """Wait for the service, call it, and return the response."""
        self.spin_until(client.service_is_ready, timeout, f"service {client.srv_name}")
        future = client.call_async(request)
        self.spin_until(future.done, timeout, f"response from {client.srv_name}")
        return future.result()

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def installed_executable(name):
    """Path of ``lib/robot_dynid/<name>`` installed by the colcon build into this interpreter's prefix."""
    path = pathlib.Path(sys.prefix) / "lib" / "robot_dynid" / name
    if not path.exists():
        raise FileNotFoundError(f"{path} is not installed: run tools/bootstrap.sh (colcon build)")
    return path


def start_node(name, *ros_args, log_path=None):
    """Start an installed node executable in its own process with ``--ros-args`` ``ros_args``."""
    command = [str(installed_executable(name))]
    if ros_args:
        command += ["--ros-args", *ros_args]
    log = open(log_path, "wb") if log_path else subprocess.DEVNULL
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))


def stop_node(process, timeout=10.0):
    """SIGINT, then wait; return the exit code (kill after ``timeout`` s)."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode
