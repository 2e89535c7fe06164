"""What every robot_dynid node shares: the main() life cycle, parameter declaration, waiting on a graph."""
from __future__ import annotations

import gc
import signal
import sys
import time

import os
from importlib import metadata

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data

from robot_dynid import validators
from robot_dynid.errors import DynIdError

JOINT_STATES_QOS = ("reliable", "best_effort", "sensor_data")
# rclpy's major version in each distribution, for bags recorded where ROS_DISTRO is not set (pip wheels)
RCLPY_DISTROS = {3: "humble", 4: "iron", 7: "jazzy", 9: "kilted"}

STAGE_MARKERS_OUT = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                               durability=DurabilityPolicy.TRANSIENT_LOCAL)
"""QoS of every ExperimentStage publisher: a subscriber that matches after a marker went out
(discovery can take seconds) and asks for transient local gets the last 100."""
STAGE_MARKERS_IN = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                              durability=DurabilityPolicy.VOLATILE)
"""QoS of the nodes' ExperimentStage subscriptions: volatile, so that a recorder or identifier
started late does not take markers of an earlier run for new ones; matches either publisher."""


def declare(node, name, default, description, unit=None, check=None):
    """Declare a parameter with a description that states its unit; return its value.

    ``check(value, field)``, e.g. ``lambda value, field: validators.positive(value, field, DynIdError, "s")``,
    returns the value as the node uses it or raises a DynIdError whose message names ``field``
    (``parameter flush_period``): :func:`spin_node` reports it in one line, exit 2, before the node
    does anything.
    """
    text = f"{description} [{unit}]" if unit else description
    value = node.declare_parameter(name, default, ParameterDescriptor(description=text)).value
    return value if check is None else check(value, f"parameter {name}")


def in_range(unit, minimum, maximum, allow_minimum=True):
    """A :func:`declare` check: a finite number in ``[minimum, maximum]`` (``(minimum, maximum]``
    without ``allow_minimum``; None: unbounded) [``unit``]; NaN, inf and anything outside are refused
    in one line naming the parameter and the interval (:func:`robot_dynid.validators.in_range`)."""
    return lambda value, field: validators.in_range(value, field, DynIdError, unit, minimum, maximum, allow_minimum)


def integer_in(minimum, maximum=None):
    """A :func:`declare` check: an integer in ``minimum..maximum`` (:func:`robot_dynid.validators.count`)."""
    return lambda value, field: validators.count(value, field, DynIdError, minimum, maximum)


def joint_states_qos(node, depth, parameter="joint_states_qos", what="the joint state subscription(s)"):
    """QoS of the node's joint state subscriptions from its ``joint_states_qos`` parameter (or
    the data subscriptions ``what`` from ``parameter``).

    ``reliable`` (default): reliable, keep last ``depth``; ``best_effort``: the same, best effort,
    for drivers that publish best effort (a reliable subscription never connects to them);
    ``sensor_data``: rclpy's sensor data profile (best effort, keep last 5).
    """
    choice = declare(node, parameter, "reliable", f"QoS of {what}: {', '.join(JOINT_STATES_QOS)}")
    if choice not in JOINT_STATES_QOS:
        raise DynIdError(f"parameter {parameter} is {choice!r}; expected one of {list(JOINT_STATES_QOS)}")
    if choice == "sensor_data":
        return qos_profile_sensor_data
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.RELIABLE if choice == "reliable" else ReliabilityPolicy.BEST_EFFORT)


def ros_distro():
    """The ROS 2 distribution this process runs: ``$ROS_DISTRO`` (set by a sourced install), else
    guessed from rclpy's version (pip wheels set no variable), else ``"unknown"``."""
    if os.environ.get("ROS_DISTRO"):
        return os.environ["ROS_DISTRO"]
    for distribution in ("ros-rclpy", "rclpy"):
        try:
            return RCLPY_DISTROS.get(int(metadata.version(distribution).split(".")[0]), "unknown")
        except (metadata.PackageNotFoundError, ValueError):
            continue
    return "unknown"


def events_executor(context=None):
    """rclpy's EventsExecutor (of ``context``, default the global one) where the distro has it
    (Jazzy and later), else None (Humble)."""
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        return None
    return EventsExecutor(context=context)


def spin_node(node_class, args=None, low_latency=False):
    """``rclpy.init``, spin ``node_class()`` until Ctrl-C / SIGTERM / shutdown, clean up.

    Returns the process exit code: 0, or 2 when the node cannot start because a parameter (its
    value, or its type: rclpy's ParameterException) or a file it names is wrong (one line on
    stderr naming it, no traceback). The node's ``close()``
    (if any) runs before the node is destroyed, so recorders can flush files on every way out;
    when it fails on a file (disk full, a path taken), one line on stderr names the error and the
    exit code is 1.
    ``low_latency``: spin on the EventsExecutor where there is one (a service round trip about
    half the default executor's); its ``spin()`` does not return when a signal shuts the context
    down, so it is spun once at a time while the context is up. A node whose ``executor_threads`` attribute
    is > 1 spins on a MultiThreadedExecutor of that many threads instead, so that callbacks of
    different callback groups run at the same time (one long service call does not hold up a topic).
    """
    received = []    # signals received; what the executor raises after one is part of shutting down
    previous = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, lambda number, frame: (received.append(number),
                                                        signal.default_int_handler(number, frame)))
    signal.signal(signal.SIGTERM, lambda number, frame: received.append(number))
    rclpy.init(args=args)    # rclpy's handlers call the ones above after their own
    node = executor = None
    status = 0
    try:
        node = node_class()
        threads = getattr(node, "executor_threads", 1)
        if threads > 1:
            executor = MultiThreadedExecutor(num_threads=threads)
        else:
            executor = events_executor() if low_latency else None
        if executor is None:
            rclpy.spin(node)
        else:
            executor.add_node(node)
            while rclpy.ok():
                executor.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except (DynIdError, FileNotFoundError, ParameterException) as error:
        print(f"{node_class.__name__}: error: {error}", file=sys.stderr)
        status = 2
    except Exception:
        # A signal can interrupt the executor while it converts a message (pybind11 then raises a
        # RuntimeError in place of the KeyboardInterrupt) or shut the context down under it.
        if rclpy.ok() and not received:
            raise
    finally:
        if node is not None:
            close = getattr(node, "close", None)
            try:
                if close is not None:
                    close()
            except (DynIdError, OSError) as error:
                print(f"{node_class.__name__}: error while closing: {error}", file=sys.stderr)
                status = status or 1
            node.destroy_node()
        else:
            # a node whose constructor raised is reachable only through its own reference cycles (timers and
            # callbacks bound to it): collected now, its handles go while the context is up, not at exit
            gc.collect()
        if executor is not None:
            executor.shutdown()
        rclpy.try_shutdown()
        for number, handler in previous.items():
            signal.signal(number, handler)
    return status


def spin_until(executor, condition, timeout, what="condition"):
    """Spin ``executor`` until ``condition()`` is true; TimeoutError naming ``what`` after ``timeout`` [s].

    Waiting on a graph (discovery, a message, a response) goes through here: never sleep.
    """
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        executor.spin_once(timeout_sec=0.05)


def call_service(executor, client, request, timeout, resend_after=None):
    """Wait up to ``timeout`` [s] for the service, then for its response to ``request``; return it.

    A request that reaches the server before the server has matched the client's response reader
    gets no answer (Fast DDS waits 100 ms for that match, then drops the response: "failed to send
    response (timeout)", ros2/rmw_fastrtps#467); ``service_is_ready`` sees only the client's side.
    A request that changes nothing (a query) may be sent again: with ``resend_after`` [s] it is,
    each time that long passes without an answer, and the first answer is returned.
    """
    deadline = time.monotonic() + timeout
    spin_until(executor, client.service_is_ready, timeout, f"service {client.srv_name}")
    futures = [client.call_async(request)]
    while not any(future.done() for future in futures):
        left = deadline - time.monotonic()
        wait = left if resend_after is None else min(resend_after, left)
        try:
            spin_until(executor, lambda: any(future.done() for future in futures), max(0.0, wait),
                       f"response from {client.srv_name}")
        except TimeoutError:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"timed out after {timeout} s waiting for response from {client.srv_name}")
            futures.append(client.call_async(request))
    for future in futures:
        if not future.done():
            client.remove_pending_request(future)
    return next(future for future in futures if future.done()).result()
