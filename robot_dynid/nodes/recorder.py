"""recorder node: records joint states, stage markers and optional extra topics to a rosbag2 bag.

Messages are subscribed raw and written as the CDR bytes that arrived (nothing decoded or lost),
under the fixed bag topic names of :data:`robot_dynid.recordings.bag_layout.BAG_TOPICS`, so that
``robot-dynid identify --data <bag>`` reads the bag with its default topic options.

Parameters: :data:`PARAMETERS` (``ros2 param describe``, docs/reference/nodes.md and config/recorder.yaml are
made from it). Motor states (a JointState named by the robot's motors, values at the motor) go to ``/motor_states``,
which ``robot-dynid identify`` reads by default for a robot with a transmission.

Every joint state is recorded as it arrives; one that identification will skip
(:mod:`robot_dynid.recordings.joint_states`: empty or duplicate names, a needed joint missing, array lengths,
NaN/inf) is warned about once per reason while recording.
Each topic's metadata in the bag holds the QoS its publishers offered when its first message
arrived (a replay offers the same), and ``ros_distro`` the distribution the recorder ran on. The flush and status
timers run on the steady clock, also with use_sim_time (bag times then follow /clock). A silent topic (see
``silent_topic_delay``) gets its bag topic with no message at close, so that ``robot-dynid identify`` can say that
it recorded nothing.

With use_sim_time, recording starts with the first /clock message: the topics are subscribed then (a
message before it would have no receive time; ``~/mark_stage`` refuses until then).

Service ``~/mark_stage`` (robot_dynid/srv/MarkStage) writes a stage marker stamped now. The bag is
closed on Ctrl-C (SIGINT), SIGTERM and shutdown; nothing is published but those markers. The node
spins rclpy's EventsExecutor where the distro has one (Jazzy and later): at 1 kHz it takes less CPU than the
default executor's Python dispatch (BENCHMARKS.md, recorder).

Faults while recording do not end the node: a full disk (or any failed write) or free space below
``min_free_space`` stops recording (:class:`robot_dynid.recordings.bag_io.RecordingStopped`): one
error line, the bag closed whole with what its storage file holds, ``~/mark_stage`` answering why,
the status log saying so, the node up until restarted. Bad start-up parameters (``bag_path`` below a
file or read-only, ``storage``, ``queue_depth``, the periods, ``min_free_space``) are one line, exit 2.

Set while the node runs (``ros2 param set``): ``flush_period`` and ``min_free_space`` are live while recording
(refused once recording stopped), ``status_period`` (0 turns the log off) always, ``silent_topic_delay`` until
its check ran; the bag, topics, joints and QoS are read at start (read-only).
"""
from __future__ import annotations

import pathlib
import signal
import threading
from collections import deque
from datetime import datetime

import rclpy.logging
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

from robot_dynid import validators
from robot_dynid.errors import DynIdError
from robot_dynid.msg import ExperimentStage, HydraulicCylinderState
from robot_dynid.nodes.node_runtime import (MIN_TIMER_PERIOD, STAGE_MARKERS_IN, STAGE_MARKERS_OUT, NodeParameter,
                                            ParameterTable, declare_table, in_range, integer_in, qos_parameter,
                                            ros_distro, set_period, spin_node, subscription_qos, waiting_for_clock,
                                            writable_directory_path)
from robot_dynid.recordings.bag_files import STORAGE_PLUGINS
from robot_dynid.recordings.bag_io import MB, BagWriter, DiskSpaceError, RecordingStopped, free_space, offered_qos
from robot_dynid.recordings.bag_layout import BAG_TOPICS, JointStateDecoder, default_bag_path
from robot_dynid.recordings.joint_states import JointStateSelector
from robot_dynid.recordings.stages import StageMarker
from robot_dynid.srv import MarkStage

__all__ = ["MIN_PERIOD", "MAX_QUEUE_DEPTH", "SILENT_WARNED_ROLES", "MESSAGE_CLASSES", "storage_choice", "period_or_off",
           "PARAMETERS", "RecorderNode", "BAG_NAME_TRIES", "open_bag", "main"]

MIN_PERIOD = MIN_TIMER_PERIOD
MAX_QUEUE_DEPTH = 100_000  # messages [1] a subscription may hold (memory)
SILENT_WARNED_ROLES = ("motor_states", "effort", "current", "temperature", "hydraulic")
MESSAGE_CLASSES = {"joint_states": JointState, "motor_states": JointState, "effort": JointState, "current": JointState,
                   "temperature": JointState, "hydraulic": HydraulicCylinderState, "stage": ExperimentStage}


def storage_choice(value, field):
    return validators.text(value, field, DynIdError, list(STORAGE_PLUGINS))


def period_or_off(value, field):
    """0 (off) or a period in [MIN_PERIOD, 3600] s."""
    return value if value == 0.0 and not isinstance(value, bool) else in_range("s", MIN_PERIOD, 3600.0)(value, field)


PARAMETERS = ParameterTable("recorder", notes=(
    "Bag topics are fixed (robot_dynid/recordings/bag_layout.py BAG_TOPICS): joint states -> /joint_states, motor "
    "states -> /motor_states, stage markers -> /experiment_stage, effort -> /joint_efforts, current -> "
    "/motor_currents, temperature -> /joint_temperatures, hydraulic -> /hydraulic_cylinder_states, so "
    "`robot-dynid identify --data <bag>` reads the bag as is.",), rows=(
    NodeParameter("bag_path", "", "bag directory to create; '' = timestamped under output_directory",
                  check=writable_directory_path),
    NodeParameter("output_directory", "", "directory of timestamped bags robot_dynid_YYYYmmdd_HHMMSS; '' = current",
                  check=writable_directory_path),
    NodeParameter("storage", "mcap", f"bag storage plugin: {' or '.join(STORAGE_PLUGINS)}", check=storage_choice),
    NodeParameter("joint_states_topic", "joint_states",
                  "sensor_msgs/JointState: positions [rad], velocities [rad/s], efforts [N m]"),
    NodeParameter("motor_states_topic", "", "JointState named by the robot's motors: positions [rad], velocities "
                  "[rad/s], efforts [N m], all at the motor (before the gear) -> /motor_states, which identify reads "
                  "by default for a robot with a transmission; '' = off"),
    NodeParameter("effort_topic", "", "second JointState whose effort holds the torques [N m]; '' = off"),
    NodeParameter("current_topic", "", "JointState whose effort holds motor currents [A] (torque = current x torque "
                  "constant x gear ratio, from the robot description, when read); '' = off"),
    NodeParameter("temperature_topic", "", "JointState whose effort holds joint temperatures [deg C]; '' = off"),
    NodeParameter("hydraulic_topic", "", "robot_dynid/msg/HydraulicCylinderState; '' = off"),
    NodeParameter("stage_topic", "experiment_stage", "robot_dynid/msg/ExperimentStage markers; '' = off"),
    NodeParameter("joint_names", Parameter.Type.STRING_ARRAY, "joints the identification needs: a message lacking "
                  "one is warned about (once); unset: those each message names",
                  example=["joint_1", "joint_2", "joint_3", "joint_4", "joint_5", "joint_6"]),
    qos_parameter(what="the data topics"),
    NodeParameter("queue_depth", 1000, f"subscription depth of the data topics: 1 s of slack at 1 kHz; in "
                  f"1..{MAX_QUEUE_DEPTH}", "1", integer_in(1, MAX_QUEUE_DEPTH)),
    NodeParameter("flush_period", 1.0, f"period of flushing the bag to disk and checking the free space, in "
                  f"[{MIN_PERIOD:g}, 3600]; live while recording: the next flush comes one new period after the set",
                  "s", in_range("s", MIN_PERIOD, 3600.0), live=True),
    NodeParameter("status_period", 10.0, f"period of the message-count and free-space log, 0 = off, else in "
                  f"[{MIN_PERIOD:g}, 3600]; live: the next log comes one new period after the set", "s", period_or_off,
                  bounds=(0.0, 3600.0), live=True),
    NodeParameter("min_free_space", 100.0, "free space the bag's file system must keep: less at the start refuses to "
                  "record, less than twice it is warned about once, less while recording stops recording and closes "
                  "the bag whole (the node stays up); 0 = no check (a full disk still stops recording and closes the "
                  "bag); live while recording: applies to the next check", "MB", in_range("MB", 0.0, None), live=True),
    NodeParameter("silent_topic_delay", 5.0, "a set motor states, effort, current, temperature or hydraulic topic "
                  "that delivered nothing this long after the first joint (or motor) state is warned about once, in "
                  "(0, 3600]; live until that check ran", "s", in_range("s", 0.0, 3600.0, allow_minimum=False),
                  live=True),
))
"""The recorder's parameters (:class:`~robot_dynid.nodes.node_runtime.ParameterTable`)."""


class RecorderNode(Node):
    #: Ctrl-C waits for the callback writing a message (spin_node): a write cut half way leaves no clean bag.
    finish_callbacks_on_signal = True

    def __init__(self, **node_options):
        """``node_options``: rclpy Node keyword arguments, e.g. ``context`` (one process, several nodes)."""
        super().__init__("recorder", **node_options)
        recording_rules = {name: self.recording_rule for name in ("flush_period", "min_free_space")}
        values = declare_table(self, PARAMETERS, apply={
            "flush_period": lambda value: set_period(self.flush_timer, value), "status_period": self.set_status_period,
            "min_free_space": self.set_min_free_space,
            "silent_topic_delay": lambda value: setattr(self, "silent_topic_delay", value)},
            rules={**recording_rules, "silent_topic_delay": self.silent_check_rule})
        live_topics = {role: values[f"{role}_topic"] for role in MESSAGE_CLASSES}
        joint_names = values["joint_names"]
        data_qos = subscription_qos(values["joint_states_qos"], values["queue_depth"])
        self.silent_topic_delay = values["silent_topic_delay"]

        self.decoder = JointStateDecoder()
        self.selector = JointStateSelector(joint_names) if joint_names else None
        self.selectors = {}   # joint names as they come -> their selector
        self.reported = set()
        self.own_markers = deque(maxlen=64)
        self.stage_publisher = (self.create_publisher(ExperimentStage, live_topics["stage"], STAGE_MARKERS_OUT)
                                if live_topics["stage"] else None)
        self.create_service(MarkStage, "~/mark_stage", self.on_mark_stage)
        # on the steady clock: with use_sim_time, ROS time stands still while /clock does
        self.steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.flush_timer = self.create_timer(values["flush_period"], self.on_flush, clock=self.steady)
        self.status_timer = None
        self.set_status_period(values["status_period"])
        self.live_topics = live_topics
        self.arrived = set()          # roles that delivered a message
        self.first_joint_state = None   # steady time of the first joint state
        self.silent_warned = False
        self.not_recorded = 0         # messages that arrived after recording stopped
        # opened last: spin_node closes only a fully constructed node
        self.writer = open_bag(values["bag_path"], values["output_directory"], values["storage"],
                               values["min_free_space"])
        self.clock_wait = None
        if waiting_for_clock(self):
            self.get_logger().info("use_sim_time is true and no /clock message has arrived: recording starts with "
                                   "the first one (a message before it has no receive time)")
            self.clock_wait = self.create_timer(MIN_PERIOD, lambda: self.subscribe_when_clock_runs(data_qos),
                                                clock=self.steady)
        else:
            self.subscribe(data_qos)
        mapping = ", ".join(f"{topic} -> {BAG_TOPICS[role][0]}" for role, topic in live_topics.items() if topic)
        self.get_logger().info(
            f"recording to {self.writer.path} ({values['storage']}): {mapping}; data QoS "
            f"{self.get_parameter('joint_states_qos').value}, depth {data_qos.depth}; joints "
            f"{list(joint_names) if joint_names else 'as they come'}")

    def subscribe_when_clock_runs(self, data_qos):
        if not waiting_for_clock(self):
            self.destroy_timer(self.clock_wait)
            self.clock_wait = None
            self.get_logger().info(f"first /clock message: {self.get_clock().now().nanoseconds * 1e-9:.3f} s; "
                                   "recording")
            self.subscribe(data_qos)

    def subscribe(self, data_qos):
        """Subscribe the live topics: from here on every message is written with its receive time."""
        callbacks = {"joint_states": self.on_joint_state, "motor_states": self.on_motor_state, "stage": self.on_stage}
        for role, topic in self.live_topics.items():
            if topic:
                callback = callbacks.get(role, lambda data, role=role: self.record(role, data))
                self.create_subscription(MESSAGE_CLASSES[role], topic, callback,
                                         STAGE_MARKERS_IN if role == "stage" else data_qos, raw=True)

    def recording_rule(self, check):
        """The :func:`declare` check of a live parameter of the recording: ``check``, then refused once
        recording stopped (nothing left to apply it to)."""
        def checked(value, field):
            value = check(value, field)
            writer = getattr(self, "writer", None)
            if writer is not None and writer.stop_reason is not None:
                raise DynIdError(f"{field} cannot change: recording stopped ({writer.stop_reason}); restart the node")
            return value
        return checked

    def silent_check_rule(self, check):
        """The :func:`declare` check of ``silent_topic_delay``: ``check``, then refused once the check ran."""
        def checked(value, field):
            value = check(value, field)
            if getattr(self, "silent_warned", False):
                raise DynIdError(f"{field} cannot change: the check for silent topics already ran (it runs once)")
            return value
        return checked

    def set_status_period(self, period):
        """The message-count log every ``period`` [s] from now on; 0: off."""
        if period == 0.0:
            if self.status_timer is not None:
                self.status_timer.cancel()
        elif self.status_timer is None:
            self.status_timer = self.create_timer(period, self.log_status, clock=self.steady)
        else:
            set_period(self.status_timer, period)

    def set_min_free_space(self, value):
        self.writer.min_free_space = value * MB

    def record(self, role, data):
        self.arrived.add(role)
        if self.writer.stop_reason is not None:
            self.not_recorded += 1
            return False
        topic, msgtype = BAG_TOPICS[role]
        try:
            if not self.writer.has_topic(topic):
                self.writer.add_topic(topic, msgtype, self.offered_qos(self.live_topics[role]))
            self.writer.write_serialized(topic, msgtype, data, self.get_clock().now().nanoseconds)
        except RecordingStopped as stopped:
            self.recording_stopped(stopped)
            return False
        except DynIdError as error:
            self.get_logger().warning(f"not recorded on {topic}: {error}", throttle_duration_sec=5.0)
            return False
        return True

    def recording_stopped(self, stopped):
        """The bag was closed early (disk full, free space below min_free_space): say so once; the node stays up."""
        if self.flush_timer is not None:
            self.flush_timer.cancel()
            self.flush_timer = None
            self.get_logger().error(f"{stopped}; the node stays up (~/mark_stage answers why), recording nothing "
                                    "more until it is restarted")

    def on_flush(self):
        """Flush the bag, check its file system's free space and the topics that never delivered."""
        try:
            self.writer.flush()
            warning = self.writer.check_free_space()
        except RecordingStopped as stopped:
            self.recording_stopped(stopped)
            return
        if warning:
            self.get_logger().warning(warning)
        self.warn_silent_topics()

    def warn_silent_topics(self):
        if self.silent_warned or self.first_joint_state is None or \
                (self.steady.now() - self.first_joint_state).nanoseconds * 1e-9 < self.silent_topic_delay:
            return
        self.silent_warned = True
        for role in SILENT_WARNED_ROLES:
            topic = self.live_topics[role]
            if topic and role not in self.arrived:
                publishers = self.count_publishers(self.resolve_topic_name(topic))
                self.get_logger().warning(
                    f"{role}_topic {self.resolve_topic_name(topic)} (recorded as {BAG_TOPICS[role][0]}) delivered no "
                    f"message in {self.silent_topic_delay:g} s of joint states; it has {publishers} publisher(s)"
                    f"{' with a QoS this subscription does not match?' if publishers else ''}: check that the driver "
                    f"publishes it. The bag will hold {BAG_TOPICS[role][0]} with no message"
                    + (", and identification has no torques from it" if role in ("effort", "current") else ""))

    def on_motor_state(self, data):
        if self.first_joint_state is None:
            self.first_joint_state = self.steady.now()
        self.record("motor_states", data)

    def on_joint_state(self, data):
        if self.first_joint_state is None:
            self.first_joint_state = self.steady.now()
        self.record("joint_states", data)
        try:
            stamp_ns, names, *fields = self.decoder(data)
            problem = (self.selector or self.selector_for(names)).select(names, *fields)
        except DynIdError as error:
            stamp_ns, names, problem = 0, (), str(error)
        if isinstance(problem, str) and problem not in self.reported:
            self.reported.add(problem)
            self.get_logger().warning(
                f"joint state stamped {stamp_ns * 1e-9:.6f} s (joints {list(names)}): {problem}; recorded as "
                "received, but identification skips such messages (said once per reason)")

    def offered_qos(self, topic):
        """The QoS profiles the publishers of live ``topic`` offer, as a bag holds them."""
        return [offered_qos(qos.history, qos.depth, qos.reliability, qos.durability, qos.deadline.nanoseconds,
                            qos.lifespan.nanoseconds, qos.liveliness, qos.liveliness_lease_duration.nanoseconds,
                            qos.avoid_ros_namespace_conventions)
                for qos in (info.qos_profile for info in
                            self.get_publishers_info_by_topic(self.resolve_topic_name(topic)))]

    def selector_for(self, names):
        selector = self.selectors.get(names)
        if selector is None:
            selector = JointStateSelector(names)
            if len(self.selectors) < 64:
                self.selectors[names] = selector
        return selector

    def on_stage(self, data):
        if self.own_markers:  # compared decoded: serialize_message leaves CDR padding bytes undefined
            marker = deserialize_message(data, ExperimentStage)
            if marker in self.own_markers:
                self.own_markers.remove(marker)
                return
        self.record("stage", data)

    def on_mark_stage(self, request, response):
        if self.clock_wait is not None:
            response.success, response.message = False, ("use_sim_time is true and no /clock message has arrived: "
                                                         "a marker now would have no time")
            return response
        now = self.get_clock().now()
        try:
            fields = StageMarker.from_fields(
                now.nanoseconds * 1e-9, request.kind, request.cycle, request.start, request.label, request.joint_name,
                request.speed_fraction, request.direction, request.experiment_id,
                require_custom_label=True).message_fields()
        except DynIdError as error:
            response.success, response.message = False, str(error)
            return response
        marker = ExperimentStage(**fields)
        marker.header.stamp = now.to_msg()
        data = serialize_message(marker)
        if not self.record("stage", data):
            response.success, response.message = False, self.writer.stop_reason or f"bag {self.writer.path} is closed"
            return response
        if self.stage_publisher is not None:
            self.own_markers.append(marker)
            self.stage_publisher.publish(marker)
        response.success, response.message = True, ""
        return response

    def log_status(self):
        counts = self.writer.message_counts
        waiting = " (use_sim_time: waiting for the first /clock message)" if self.clock_wait is not None else ""
        recorded = (f"recorded {', '.join(f'{count} on {topic}' for topic, count in counts.items())}" if counts
                    else f"no message recorded yet{waiting}") + f" to {self.writer.path}"
        if self.writer.stop_reason is None:
            self.get_logger().info(f"{recorded}; {free_space(self.writer.path) / MB:.1f} MB free")
        else:
            self.get_logger().warning(f"recording stopped: {recorded}; {self.not_recorded} messages arrived since "
                                      f"and were not recorded ({self.writer.stop_reason})")

    def close(self):
        if threading.current_thread() is threading.main_thread():
            # a second Ctrl-C / SIGTERM must not interrupt writing the bag's index and metadata
            for number in (signal.SIGINT, signal.SIGTERM):
                signal.signal(number, signal.SIG_IGN)
        # the node's logger publishes to /rosout, whose context is already shut down here
        logger = rclpy.logging.get_logger(f"robot_dynid.{self.get_name()}")
        if self.writer.stop_reason is not None:
            logger.info(f"bag {self.writer.path} was closed when recording stopped: {self.writer.message_counts}")
            return
        try:    # configured topics that delivered nothing are in the bag with no message: identify says so
            for role in SILENT_WARNED_ROLES:
                topic, msgtype = BAG_TOPICS[role]
                if self.live_topics[role] and not self.writer.has_topic(topic):
                    self.writer.add_topic(topic, msgtype)
        except RecordingStopped as stopped:
            logger.error(str(stopped))
            return
        self.writer.close()
        logger.info(f"closed bag {self.writer.path}: {self.writer.message_counts}")


#: Tries at a timestamped bag name when recorders sharing output_directory start in the same second.
BAG_NAME_TRIES = 20


def open_bag(bag_path, output_directory, storage, min_free_space):
    """The BagWriter of the node's parameters; what prevents it is named by the parameter at fault. Recorders
    sharing ``output_directory`` each get a bag: where another one created the timestamped name first, the next
    free suffix is taken (a given ``bag_path`` that exists is refused, naming it)."""
    for _ in range(1 if bag_path else BAG_NAME_TRIES):
        path = pathlib.Path(bag_path or default_bag_path(output_directory, datetime.now()))
        try:
            return BagWriter(path, storage=storage, ros_distro=ros_distro(), min_free_space=min_free_space * MB)
        except DiskSpaceError as error:
            raise DynIdError(f"parameter min_free_space is {min_free_space:g} MB: {error}") from None
        except DynIdError as error:
            if bag_path or not path.exists():
                raise DynIdError(f"parameter {'bag_path' if bag_path else 'output_directory'}: {error}") from None
    raise DynIdError(f"parameter output_directory: {BAG_NAME_TRIES} bag names taken by other recorders while this one "
                     f"started in {output_directory or '.'}")


def main(args=None):
    return spin_node(RecorderNode, args, low_latency=True)


if __name__ == "__main__":
    raise SystemExit(main())
