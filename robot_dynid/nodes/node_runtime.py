"""What every robot_dynid node shares: the main() life cycle, parameter declaration, waiting on a graph,
the QoS of the topics nodes share, and message conversions. Nodes import each other for nothing else."""
from __future__ import annotations

import array
import dataclasses
import gc
import json
import signal
import sys
import textwrap
import threading
import time

import os
from importlib import metadata

import rclpy
from builtin_interfaces.msg import Duration as DurationMsg
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.exceptions import ParameterException
from rclpy.parameter import Parameter
from rclpy.executors import ExternalShutdownException, ShutdownException, SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data

import numpy as np
import yaml

from robot_dynid import validators
from robot_dynid.errors import DynIdError
from robot_dynid.input_files import check_input_file
from robot_dynid.output_files import check_output_path

__all__ = ["JOINT_STATES_QOS", "RCLPY_DISTROS", "STAGE_MARKERS_OUT", "STAGE_MARKERS_IN", "MODEL_QOS", "NodeParameter",
           "ParameterTable", "CONFIG_WIDTH", "CONFIG_COMMENT_COLUMN", "declare_table", "declare", "Interval",
           "in_range", "integer_in", "MIN_TIMER_PERIOD", "MAX_TIMER_PERIOD", "timer_period", "set_period",
           "qos_parameter", "subscription_qos", "ros_distro", "events_executor", "CallbackGroupExecutor", "spin_node",
           "spin_until", "call_service", "readable_file_path", "writable_file_path", "writable_directory_path",
           "waiting_for_clock", "seconds", "stamp_or_now", "duration_msg", "float64_array"]

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


MODEL_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
"""QoS of IdentifiedModel: transient local, depth 1, so a node started late gets the model in use."""


@dataclasses.dataclass(frozen=True)
class NodeParameter:
    """One row of a node's parameter table (:class:`ParameterTable`): what :func:`declare` takes, and what the
    node's config file shows.

    ``default``: the value, or ``Parameter.Type.STRING_ARRAY`` / ``DOUBLE_ARRAY`` for an array that is unset
    (None) until given. ``description`` says what the value means and its range (and, for a ``live`` parameter,
    how a change takes effect); ``unit`` goes after it in brackets. ``check(value, field)`` and ``bounds`` as
    :func:`declare` takes them. ``live``: a set while the node runs takes effect (the node gives the function
    that applies it); otherwise the parameter is read at start. ``example``: the value config/<node>.yaml shows
    instead of the default, set there with ``in_config`` (e.g. a robot's cylinders), else commented out.
    """

    name: str
    default: object
    description: str
    unit: str | None = None
    check: object = None
    bounds: tuple | None = None
    live: bool = False
    example: object = None
    in_config: bool = False


@dataclasses.dataclass(frozen=True)
class ParameterTable:
    """Every parameter of the node ``node``, in the order its config file lists them; ``notes``: what its config
    file says first (one line per item) beyond which parameters are live. The descriptors, the node reference of
    the documentation (tools/reference_pages.py) and config/<node>.yaml (tools/config_files.py) come from it."""

    node: str
    rows: tuple
    notes: tuple = ()

    def __getitem__(self, name: str) -> NodeParameter:
        return next(row for row in self.rows if row.name == name)

    @property
    def names(self) -> tuple:
        return tuple(row.name for row in self.rows)

    def config_text(self) -> str:
        """config/<node>.yaml: the notes and which parameters are live as comments, then every parameter with its
        default (or example) and its description (unit first) as a comment, wrapped at :data:`CONFIG_WIDTH`."""
        live = [row.name for row in self.rows if row.live]
        notes = [f"Parameters of the {self.node} node (robot_dynid/nodes/{self.node}.py), written by "
                 "tools/config_files.py from its table PARAMETERS: change the table, then run that tool.",
                 (f"Live (ros2 param set while the node runs): {', '.join(live)}. " if live else "")
                 + "The rest is read at start.", *self.notes]
        lines = [f"# {line}" for note in notes for line in textwrap.wrap(note, CONFIG_WIDTH - 2)]
        lines += [f"/**/{self.node}:", "  ros__parameters:"]
        for row in self.rows:
            unset = not isinstance(row.default, (str, bool, int, float, list, tuple))
            value = row.example if row.example is not None else row.default
            if unset and row.example is None:
                value = []
            entry = f"{row.name}: {_yaml_value(value)}"
            if unset and not row.in_config or (row.example is not None and not row.in_config):
                entry = f"# {entry}"
            comment = (f"[{row.unit}] " if row.unit else "") + row.description
            head = f"    {entry}"
            head = (head.ljust(CONFIG_COMMENT_COLUMN) if len(head) < CONFIG_COMMENT_COLUMN else head + " ") + "# "
            wrapped = textwrap.wrap(comment, max(CONFIG_WIDTH - len(head), 40)) or [""]
            lines.append(head + wrapped[0])
            lines += [" " * CONFIG_COMMENT_COLUMN + "#   " + more for more in
                      textwrap.wrap(" ".join(wrapped[1:]), CONFIG_WIDTH - CONFIG_COMMENT_COLUMN - 4)]
        return "\n".join(lines) + "\n"


CONFIG_WIDTH = 120
"""Characters per line of a generated config file."""
CONFIG_COMMENT_COLUMN = 36
"""Column (from 0) of the ``#`` of a parameter's comment in a generated config file (later after a long entry)."""


def _yaml_value(value) -> str:
    """``value`` as a ROS parameter file writes it: a float keeps its point (a ROS double), a string is quoted
    where YAML would read it as something else."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float):
        text = repr(value)
        text = text.replace("e", ".0e", 1) if "e" in text and "." not in text else text
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, str):
        text = value if value and yaml.safe_load(value) == value and value.strip() == value else json.dumps(value)
    else:
        text = "[" + ", ".join(_yaml_value(item) for item in value) + "]"
    if yaml.safe_load(text) != (list(value) if isinstance(value, tuple) else value):
        raise ValueError(f"{value!r} does not read back from YAML as itself ({text})")
    return text


def declare_table(node, table: ParameterTable, apply=None, rules=None) -> dict:
    """Declare every parameter of ``table`` (:func:`declare`) and return ``{name: value}``.

    ``apply``: ``{name: function(value)}`` for exactly the table's live parameters. ``rules``:
    ``{name: wrap}`` where the node's state adds to a row's check: ``wrap(check)`` is the check used (the row's
    bounds stay in the descriptor)."""
    apply, rules = dict(apply or {}), dict(rules or {})
    live = {row.name for row in table.rows if row.live}
    unknown = (set(apply) | set(rules)) - set(table.names)
    if set(apply) != live or unknown:
        raise ValueError(f"{table.node}: apply must cover the live parameters {sorted(live)} (got {sorted(apply)}); "
                         f"not in the table: {sorted(unknown)}")
    values = {}
    for row in table.rows:
        check = rules[row.name](row.check) if row.name in rules else row.check
        bounds = row.bounds if row.bounds is not None else getattr(row.check, "bounds", None)
        values[row.name] = declare(node, row.name, row.default, row.description, row.unit, check=check,
                                   apply=apply.get(row.name), bounds=bounds)
    return values


def declare(node, name, default, description, unit=None, check=None, apply=None, bounds=None):
    """Declare a parameter with a description that states its unit; return its value.

    ``check(value, field)``, e.g. ``in_range("s", 0.0, 60.0)`` or
    ``lambda value, field: validators.positive(value, field, DynIdError, "s")``, returns the value as the node
    uses it or raises a DynIdError whose message names ``field`` (``parameter flush_period``):
    :func:`spin_node` reports it in one line, exit 2, before the node does anything.

    The descriptor (``ros2 param describe``) carries the description, ``read_only`` and, for a number,
    the closed interval ``bounds`` (low, high), by default the check's own (:class:`Interval`), as a
    FloatingPointRange or IntegerRange. It is set after the start's check, so that a value out of range
    at the start gets the check's message.

    Changes while the node runs (``ros2 param set``): without ``apply`` the parameter is read-only (the
    node reads it at its start, and its description says so, with the reason where it gives one; a set is
    refused: "Trying to set a read-only parameter"); with
    ``apply(value)`` a set is refused outside ``bounds`` by rclpy ("Parameter rate out of range ..."), then
    checked by ``check`` (refused with its message: an open end of the interval, a rule of the node's
    state) and, when every parameter of the request passes, ``apply`` takes the checked value into use.
    """
    if apply is None and "read at start" not in description:
        description = f"{description}; read at start"
    text = f"{description} [{unit}]" if unit else description
    bounds = bounds if bounds is not None else getattr(check, "bounds", None)
    _take_integers_as_doubles(node, name, default)
    parameter = node.declare_parameter(name, default, ParameterDescriptor(description=text,
                                                                          read_only=apply is None and bounds is None))
    value = parameter.value if check is None else check(parameter.value, f"parameter {name}")
    if bounds is not None:
        descriptor = ParameterDescriptor(description=text, read_only=apply is None, type=parameter.type_.value)
        if parameter.type_ == Parameter.Type.DOUBLE:
            descriptor.floating_point_range = [FloatingPointRange(from_value=float(bounds[0]),
                                                                  to_value=float(bounds[1]))]
        elif parameter.type_ == Parameter.Type.INTEGER:
            descriptor.integer_range = [IntegerRange(from_value=int(bounds[0]), to_value=int(bounds[1]), step=1)]
        node.set_descriptor(name, descriptor)
    if apply is not None:
        live = getattr(node, "_live_parameters", None)
        if live is None:
            live = node._live_parameters = {}
            node.add_on_set_parameters_callback(lambda parameters: _set_live(live, parameters))
        live[name] = (check, apply)
    return value


_DOUBLES = {Parameter.Type.INTEGER: Parameter.Type.DOUBLE, Parameter.Type.INTEGER_ARRAY: Parameter.Type.DOUBLE_ARRAY}


def _as_double(parameter: Parameter) -> Parameter:
    """An integer (array) ``parameter`` as the double (array) it means; other parameters as they are."""
    kind = _DOUBLES.get(parameter.type_)
    if kind is None:
        return parameter
    value = parameter.value
    return Parameter(parameter.name, kind, float(value) if kind == Parameter.Type.DOUBLE else [float(x) for x in value])


def _take_integers_as_doubles(node, name, default) -> None:
    """Let the double (array) parameter ``name`` of ``node`` be given as integers, as ``-p rate:=500`` and
    ``ros2 param set NODE rate 500`` send them (rclpy refuses them: "Wrong parameter type"); the value is then
    the double it means, and is checked like any other.

    At the start, an integer override is turned into a double before the parameter is declared (rclpy keeps the
    command line's overrides in ``Node._parameter_overrides`` in every distribution); while the node runs, a
    pre-set callback does the same (rclpy >= 4: Iron and later; on Humble a live set needs ``500.0``)."""
    is_double = isinstance(default, float) or (isinstance(default, (list, tuple)) and len(default) > 0
                                               and all(isinstance(x, float) for x in default))
    if not is_double:
        return
    overrides = getattr(node, "_parameter_overrides", None)
    if isinstance(overrides, dict) and name in overrides:
        overrides[name] = _as_double(overrides[name])
    doubles = getattr(node, "_double_parameters", None)
    if doubles is None:
        doubles = node._double_parameters = set()
        if hasattr(node, "add_pre_set_parameters_callback"):
            node.add_pre_set_parameters_callback(
                lambda parameters: [_as_double(p) if p.name in doubles else p for p in parameters])
    doubles.add(name)


def _set_live(live, parameters) -> SetParametersResult:
    """The nodes' on-set-parameters callback: check every live parameter of the request, then apply them
    all, or refuse the request with the first check's message (nothing applied)."""
    checked = []
    for parameter in parameters:
        if parameter.name not in live:      # rclpy's own (use_sim_time): rclpy's rules
            continue
        check, apply = live[parameter.name]
        try:
            value = parameter.value if check is None else check(parameter.value, f"parameter {parameter.name}")
        except DynIdError as error:
            return SetParametersResult(successful=False, reason=str(error))
        except Exception as error:      # a check's own failure refuses the set; it never ends the node
            return SetParametersResult(successful=False, reason=f"parameter {parameter.name} {parameter.value!r} "
                                       f"refused: {type(error).__name__}: {error}")
        checked.append((apply, value))
    for apply, value in checked:
        apply(value)
    return SetParametersResult(successful=True)


@dataclasses.dataclass(frozen=True)
class Interval:
    """A :func:`declare` check: a finite number in ``[minimum, maximum]`` (``(minimum, maximum]`` without
    ``allow_minimum``; None: unbounded) [``unit``], or with ``integer`` an integer in ``minimum..maximum``;
    anything else is refused in one line naming the parameter and the interval
    (:func:`robot_dynid.validators.in_range`, :func:`robot_dynid.validators.count`). Its :attr:`bounds` go
    into the parameter's descriptor."""

    unit: str | None
    minimum: float | None
    maximum: float | None
    allow_minimum: bool = True
    integer: bool = False

    def __call__(self, value, field):
        if self.integer:
            return validators.count(value, field, DynIdError, self.minimum, self.maximum)
        return validators.in_range(value, field, DynIdError, self.unit, self.minimum, self.maximum, self.allow_minimum)

    @property
    def bounds(self):
        """(low, high), the closed interval of the descriptor's range; None when a side is unbounded."""
        return None if self.minimum is None or self.maximum is None else (self.minimum, self.maximum)


def in_range(unit, minimum, maximum, allow_minimum=True):
    """A :func:`declare` check: a finite number in ``[minimum, maximum]`` (``(minimum, maximum]``
    without ``allow_minimum``; None: unbounded) [``unit``] (:class:`Interval`)."""
    return Interval(unit, minimum, maximum, allow_minimum)


def integer_in(minimum, maximum=None):
    """A :func:`declare` check: an integer in ``minimum..maximum`` (:class:`Interval`)."""
    return Interval(None, minimum, maximum, integer=True)


MIN_TIMER_PERIOD = 0.01
"""[s] the shortest period of a node's status, publish or flush timer: 100 calls/s (a period near zero spins a core on
status messages; the control paths are driven by their topics, not by these timers)."""
MAX_TIMER_PERIOD = 3600.0
"""[s] the longest: one an hour."""


def timer_period(value, field):
    """A timer period [s] in [:data:`MIN_TIMER_PERIOD`, :data:`MAX_TIMER_PERIOD`] (the :func:`declare` check)."""
    return in_range("s", MIN_TIMER_PERIOD, MAX_TIMER_PERIOD)(value, field)


def set_period(timer, period):
    """``timer`` (rclpy Timer) calls every ``period`` [s] from now on: a period set while the node runs
    takes effect at once (the next call ``period`` after now; a cancelled timer runs again)."""
    timer.timer_period_ns = round(period * 1e9)
    timer.reset()


def qos_parameter(name="joint_states_qos", what="the joint state subscription(s)") -> NodeParameter:
    """The table row of a node's choice of QoS for ``what`` (:func:`subscription_qos`)."""
    return NodeParameter(name, "reliable", f"QoS of {what}: reliable, best_effort (for a driver that publishes best "
                         "effort: a reliable subscription never connects to it) or sensor_data (best effort, depth 5)",
                         check=lambda value, field: validators.text(value, field, DynIdError, list(JOINT_STATES_QOS)))


def subscription_qos(choice, depth):
    """The QoS profile of a :func:`qos_parameter` choice: ``reliable``: reliable, keep last ``depth``;
    ``best_effort``: the same, best effort; ``sensor_data``: rclpy's sensor data profile (best effort, keep last 5).
    """
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


class CallbackGroupExecutor(SingleThreadedExecutor):
    """A SingleThreadedExecutor that waits on and runs only the entities of the callback groups
    ``groups`` (``exclude``: all but those), so that two of them, each on its own thread, share one
    node: :func:`spin_node` runs a node's ``own_thread_groups`` so, beside the rest.

    rclpy's MultiThreadedExecutor, the other way to keep a callback group going while another works, passes
    every message through its Python dispatch loop and thread pool: its latency on a topic ping-pong is far
    above a single-threaded executor's (BENCHMARKS.md, ComputeFeedforward).
    """

    def __init__(self, groups, exclude=False, context=None, node=None):
        """``node``: the node whose entities it runs without :meth:`add_node`, for an executor beside the one
        the node was added to (adding a node to a second executor takes it from the first)."""
        super().__init__(context=context)
        self._groups, self._exclude, self._node = tuple(groups), exclude, node

    def get_nodes(self):
        return super().get_nodes() if self._node is None else [self._node]

    def can_execute(self, entity) -> bool:
        mine = any(entity.callback_group is group for group in self._groups)
        return mine != self._exclude and super().can_execute(entity)


def _spin_while_up(executor, stop, failures):
    """Spin ``executor`` until its context shuts down or ``stop`` (a threading.Event) is set (a thread's
    target); an exception a callback raised is appended to ``failures`` and ends the spinning (the
    main thread then raises it, as it would its own)."""
    try:
        while rclpy.ok(context=executor.context) and not stop.is_set():
            executor.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException, ShutdownException):
        pass
    except Exception as error:
        failures.append(error)


def spin_node(node_class, args=None, low_latency=False):
    """``rclpy.init``, spin ``node_class()`` until Ctrl-C / SIGTERM / shutdown, clean up.

    Returns the process exit code: 0, or 2 when the node cannot start because a parameter (its
    value, or its type: rclpy's ParameterException) or a file it names is wrong (one line on
    stderr naming it, no traceback; refused by its constructor, the process exits 2 at once). The node's ``close()``
    (if any) runs before the node is destroyed, so recorders can flush files on every way out;
    when it fails on a file (disk full, a path taken), one line on stderr names the error and the
    exit code is 1.
    ``low_latency``: spin on the EventsExecutor where there is one (a service round trip about
    half the default executor's); its ``spin()`` does not return when a signal shuts the context
    down, so it is spun once at a time while the context is up. A node with an ``own_thread_groups``
    attribute (callback groups) has those run on a thread of their own, the rest on the main thread
    (:class:`CallbackGroupExecutor`, two of them), so that a long callback of the rest (a large
    service request) does not hold up theirs (a controller's topic).
    Ctrl-C raises KeyboardInterrupt in whatever callback runs, unless the node class sets
    ``finish_callbacks_on_signal``: then SIGINT, like SIGTERM, only shuts the context down and the
    running callback ends first (a recorder's write cut half way would leave its bag's chunk inconsistent,
    and the executor logs the interrupted callback as a fatal error).
    """
    received = []    # signals received; what the executor raises after one is part of shutting down
    previous = _catch_signals(getattr(node_class, "finish_callbacks_on_signal", False), received)
    rclpy.init(args=args)    # rclpy's handlers call the ones above after their own
    node = None
    spinner = _NodeSpinner(low_latency)
    status = 0
    try:
        node = node_class()
        spinner.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except (DynIdError, FileNotFoundError, ParameterException) as error:
        print(f"{node_class.__name__}: error: {error}", file=sys.stderr)
        status = 2
        if node is None:
            # refused by its constructor, nothing received: exit while the half-built node is still referenced
            # (by this traceback): freeing it and tearing rclpy down can crash (SIGSEGV) or hang.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(2)
    except Exception:
        # A signal can interrupt the executor while it converts a message (pybind11 then raises a
        # RuntimeError in place of the KeyboardInterrupt) or shut the context down under it.
        if rclpy.ok() and not received:
            raise
    finally:
        spinner.stop_own_thread()      # its thread stops before the node it spins goes
        if not _release_node(node, node_class):
            status = status or 1
        spinner.shutdown()
        rclpy.try_shutdown()
        for number, handler in previous.items():
            signal.signal(number, handler)
    return status


def _catch_signals(finish_callbacks: bool, received: list) -> dict:
    """SIGINT and SIGTERM appended to ``received``; SIGINT also raises KeyboardInterrupt unless
    ``finish_callbacks``. Returns the handlers they replace, by signal number."""
    previous = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    if finish_callbacks:
        signal.signal(signal.SIGINT, lambda number, frame: received.append(number))
    else:
        signal.signal(signal.SIGINT, lambda number, frame: (received.append(number),
                                                            signal.default_int_handler(number, frame)))
    signal.signal(signal.SIGTERM, lambda number, frame: received.append(number))
    return previous


class _NodeSpinner:
    """Spins one node for :func:`spin_node`: on rclpy's default executor, the EventsExecutor (``low_latency``),
    or its ``own_thread_groups`` on a thread of their own beside the rest."""

    def __init__(self, low_latency: bool):
        self._low_latency = low_latency
        self._executor = self._helper = self._helper_thread = None
        self._stop_helper, self._helper_failures = threading.Event(), []

    def spin(self, node) -> None:
        """Until the context shuts down; an exception of a callback on the own thread is raised here."""
        own_thread_groups = tuple(getattr(node, "own_thread_groups", ()))
        if own_thread_groups:
            self._helper = CallbackGroupExecutor(own_thread_groups, node=node)
            self._helper_thread = threading.Thread(
                target=_spin_while_up, args=(self._helper, self._stop_helper, self._helper_failures), daemon=True,
                name=f"{node.get_name()}_own_thread_groups")
            self._helper_thread.start()
            self._executor = CallbackGroupExecutor(own_thread_groups, exclude=True)
        else:
            self._executor = events_executor() if self._low_latency else None
        if self._executor is None:
            rclpy.spin(node)
            return
        self._executor.add_node(node)
        while rclpy.ok() and not self._helper_failures:
            self._executor.spin_once(timeout_sec=0.1)
        if self._helper_failures:
            raise self._helper_failures[0]

    def stop_own_thread(self) -> None:
        """The own thread's executor stopped (up to 5 s to join its thread) and shut down."""
        if self._helper is not None:
            self._stop_helper.set()
            self._helper_thread.join(timeout=5.0)
            self._helper.shutdown()

    def shutdown(self) -> None:
        if self._executor is not None:
            self._executor.shutdown()


def _release_node(node, node_class) -> bool:
    """``node.close()`` (if any), then the node destroyed; False when closing failed on a file (one line on
    stderr). Without a node (its constructor raised), its reference cycles collected."""
    if node is None:
        # a node whose constructor raised is reachable only through its own reference cycles (timers and
        # callbacks bound to it): collected now, its handles go while the context is up, not at exit
        gc.collect()
        return True
    closed = True
    close = getattr(node, "close", None)
    try:
        if close is not None:
            close()
    except (DynIdError, OSError) as error:
        print(f"{node_class.__name__}: error while closing: {error}", file=sys.stderr)
        closed = False
    node.destroy_node()
    return closed


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


def readable_file_path(value, field):
    """A ``declare(check=)`` for a file the node reads at start ('' = none): refused, naming ``field``, unless it
    is a regular file it can read within the size limit (:func:`robot_dynid.input_files.check_input_file`: a name
    too long, a directory, a device such as ``/dev/zero``, a FIFO, a missing file)."""
    if value:
        try:
            check_input_file(value, "file", DynIdError)
        except DynIdError as error:
            raise DynIdError(f"{field}: {error}") from None
    return value


def writable_file_path(value, field):
    """A ``declare(check=)`` for a file the node writes ('' = none): refused, naming ``field``, where it cannot be
    written (:func:`robot_dynid.output_files.check_output_path`: a name too long, a directory or a special file
    in its place, no permission, a read-only file system; missing directories are made when it is written)."""
    return _writable(value, field, directory=False)


def writable_directory_path(value, field):
    """:func:`writable_file_path` for a directory the node writes into or creates ('' = none)."""
    return _writable(value, field, directory=True)


def _writable(value, field, directory):
    if value:
        try:
            check_output_path(value, "directory" if directory else "file", DynIdError, directory=directory)
        except DynIdError as error:
            raise DynIdError(f"{field}: {error}") from None
    return value


def waiting_for_clock(node) -> bool:
    """True while ``node``'s clock follows /clock (use_sim_time) and no /clock message has come: ROS time
    reads 0 then, so nothing can be stamped or scheduled on it."""
    clock = node.get_clock()
    return clock.ros_time_is_active and clock.now().nanoseconds == 0


def seconds(stamp):
    """builtin_interfaces/Time -> [s]."""
    return stamp.sec + 1e-9 * stamp.nanosec


def stamp_or_now(stamp) -> float | None:
    """builtin_interfaces/Time -> [s]; None for a zero stamp (a request's "now")."""
    return seconds(stamp) if (stamp.sec or stamp.nanosec) else None


def duration_msg(seconds: float) -> DurationMsg:
    """[s] -> builtin_interfaces/Duration, to the nanosecond."""
    nanoseconds = round(seconds * 1e9)
    return DurationMsg(sec=nanoseconds // 1_000_000_000, nanosec=nanoseconds % 1_000_000_000)


def float64_array(values) -> array.array:
    """``values`` (any shape) flattened in row-major order as the ``array.array('d')`` that rclpy
    takes for a float64[] field as it is (one copy; a list is checked element by element)."""
    return array.array("d", np.ascontiguousarray(values, dtype=np.float64).tobytes())
