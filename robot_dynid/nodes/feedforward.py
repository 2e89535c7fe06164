"""feedforward node: serves feed-forward torques from an identified model, within the robot's limits.

Messages and parameters in, calls of :class:`~robot_dynid.model.feedforward_server.FeedforwardServer` and its
:class:`~robot_dynid.model.served_model.ServedModel`, messages out: what is served (models, payloads, limits, the
friction state), what the replies and statuses hold and what is logged are decided there, without ROS.

Interfaces (names are the parameters' defaults):

- ``compute_feedforward`` (robot_dynid/srv/ComputeFeedforward): joint names and flat arrays of N points in,
  torques [N m] of the N points out in the request's layout, with the friction state that computed them.
- ``reference_topic`` (sensor_msgs/JointState: positions [rad], velocities [rad/s]) -> ``command_topic``
  (std_msgs/Float64MultiArray [N m] in the order of ``joints``, as a ros2_control forward_command_controller
  with an effort interface takes them); zero torques every ``reference_timeout`` / 4 s while no valid
  reference has come for ``reference_timeout``, so that an effort controller does not hold the last torque.
- ``trajectory_topic`` (trajectory_msgs/JointTrajectory) -> ``trajectory_out_topic``: the same trajectory with
  every point's effort [N m] filled, for a joint_trajectory_controller with an effort interface.
- ``model_topic`` (IdentifiedModel, transient local): an admitted model replaces the one in use; one that
  fails in any way is logged in one line and ignored (the model in use and its version stay).
- ``~/set_payload`` (robot_dynid/srv/SetPayload; stamped ahead: checked now, served from its stamp), ``~/clear_payload``
  (std_srvs/Trigger), ``~/reset_warmup`` (robot_dynid/srv/ResetWarmup: the running time since the cold start [s]).
- ``temperature_topic_prefix``/<joint> (sensor_msgs/Temperature) and ``joint_temperatures_topic``
  (robot_dynid/JointTemperatures) [deg C], for a model whose friction drifts with temperature.
- ``status_topic`` (robot_dynid/FeedforwardStatus, transient local): the model in use, the reference path's
  state, refusals, the payload, the friction state; every ``status_period`` s and on every change.

What is refused (non-finite values, positions, velocities or accelerations beyond the limits and margins, a
torque beyond the effort limit and margin, too many points) gets ``success: false`` on the service; on the
topics nothing is published for it, a warning names the point and joint and the status says so.

Parameters: :data:`robot_dynid.nodes.feedforward_parameters.PARAMETERS` (descriptors, docs/reference/nodes.md and
config/feedforward.yaml are made from it). A live margin or ``max_points`` with which the model in use would not be
admitted is refused with the reason. A ``model_file``, ``robot_file`` or ``payload_file`` that does not load, or a
model refused, stops the node at start: one line, exit code 2.

Threads: the service and the trajectory topic run in one callback group, the reference topic and timers in
another, the model topic and the services that change the model in a third. With ``reference_topic`` set, the
reference topic and timers run on a thread of their own (a single-threaded executor of that group), the rest on
the main thread, so a long request does not hold up the reference -> command path; without, everything on the
EventsExecutor where the distro has one (not rclpy's MultiThreadedExecutor, whose Python dispatch loop delays
every message: node_runtime.CallbackGroupExecutor).
"""
from __future__ import annotations

import array
import gc
import threading

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState, Temperature
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynid.model.feedforward import FIELDS, ReferenceMonitor
from robot_dynid.model.feedforward_server import MARGIN_PARAMETERS, FeedforwardServer
from robot_dynid.msg import FeedforwardStatus, IdentifiedModel, JointTemperatures as JointTemperaturesMsg
from robot_dynid.nodes.feedforward_parameters import PARAMETERS
from robot_dynid.nodes.node_runtime import (MODEL_QOS, declare_table, duration_msg, float64_array, seconds, set_period,
                                            spin_node, stamp_or_now, subscription_qos, waiting_for_clock)
from robot_dynid.srv import ComputeFeedforward, ResetWarmup, SetPayload

__all__ = ["STATUS_QOS", "STATE_CODES", "FeedforwardNode", "main"]

STATUS_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                        reliability=ReliabilityPolicy.RELIABLE)
STATE_CODES = {ReferenceMonitor.NO_MODEL: FeedforwardStatus.STATE_NO_MODEL,
               ReferenceMonitor.OK: FeedforwardStatus.STATE_OK,
               ReferenceMonitor.REFUSED: FeedforwardStatus.STATE_REFERENCE_REFUSED,
               ReferenceMonitor.TIMEOUT: FeedforwardStatus.STATE_REFERENCE_TIMEOUT,
               ReferenceMonitor.WAITING: FeedforwardStatus.STATE_WAITING_FOR_REFERENCE}


class FeedforwardNode(Node):
    def __init__(self, **node_options):
        """``node_options``: rclpy Node keyword arguments, e.g. ``context`` (one process, several nodes)."""
        super().__init__("feedforward", **node_options)
        self.core = None    # the ServedModel (self.server's), made once every parameter is read
        values = declare_table(self, PARAMETERS, apply={
            **{parameter: lambda value, name=name: self.core.set_margin(name, value)
               for parameter, name in MARGIN_PARAMETERS.items()},
            "reference_timeout": self.set_reference_timeout,
            "status_period": lambda value: set_period(self.status_timer, value),
            **{name: lambda value, name=name: setattr(self.core, name, value) for name in (
                "cooling_time_constant", "reference_acceleration_window", "command_lead", "standstill_velocity",
                "max_temperature_age")}},
            rules={parameter: self.margin_rule(name) for parameter, name in MARGIN_PARAMETERS.items()})
        reference_topic, reference_timeout = values["reference_topic"], values["reference_timeout"]
        self.server = FeedforwardServer.from_parameters(values, self.ros_time, self.log)
        self.core = self.server.served_model
        self.temperature_prefix = values["temperature_topic_prefix"]
        self.temperature_subscriptions = {}
        self.temperature_group = MutuallyExclusiveCallbackGroup()
        if values["joint_temperatures_topic"]:
            self.create_subscription(JointTemperaturesMsg, values["joint_temperatures_topic"],
                                     self.on_joint_temperatures, 10, callback_group=self.temperature_group)
        if self.core.expected_robot is not None:
            self.subscribe_temperatures(self.core.expected_robot.joint_names)
        self.status_lock = threading.Lock()     # statuses published in the order they are reported
        self.status_publisher = self.create_publisher(FeedforwardStatus, values["status_topic"], STATUS_QOS)
        if values["model_file"]:
            self.subscribe_temperatures(self.core.use_model_file(values["model_file"]).model.joint_names)
        bulk, control, models = (MutuallyExclusiveCallbackGroup() for _ in range(3))
        steady = Clock(clock_type=ClockType.STEADY_TIME)    # timeouts in wall time, whatever use_sim_time says
        if values["model_topic"]:
            self.create_subscription(IdentifiedModel, values["model_topic"], self.on_model, MODEL_QOS,
                                     callback_group=models)
        if values["trajectory_topic"]:
            self.trajectory_publisher = self.create_publisher(JointTrajectory, values["trajectory_out_topic"], 10)
            self.create_subscription(JointTrajectory, values["trajectory_topic"], self.on_trajectory, 10,
                                     callback_group=bulk)
        self.command_publisher = self.reference_timer = None
        if reference_topic:
            self.command_publisher = self.create_publisher(Float64MultiArray, values["command_topic"], 10)
            self.create_subscription(JointState, reference_topic, self.on_reference,
                                     subscription_qos(values["joint_states_qos"], 10), callback_group=control)
            self.reference_timer = self.create_timer(reference_timeout / 4.0, self.check_reference,
                                                     callback_group=control, clock=steady)
        self.status_timer = self.create_timer(values["status_period"], self.publish_status, callback_group=control,
                                              clock=steady)
        service_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=values["service_queue_depth"],
                                 reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
        self.create_service(ComputeFeedforward, "compute_feedforward", self.on_compute, qos_profile=service_qos,
                            callback_group=bulk)
        self.create_service(SetPayload, "~/set_payload", self.on_set_payload, callback_group=models)
        self.create_service(Trigger, "~/clear_payload", self.on_clear_payload, callback_group=models)
        self.create_service(ResetWarmup, "~/reset_warmup", self.on_reset_warmup, callback_group=models)
        self.publish_status()
        # the reference path on a thread of its own, so that it keeps going during long requests (spin_node);
        # without one, everything on the EventsExecutor (the lowest latency)
        self.own_thread_groups = (control,) if reference_topic else ()
        # a long JointTrajectory makes thousands of objects, so full collections come often and each traverses every
        # object (BENCHMARKS.md, ComputeFeedforward): what exists now lives as long as the process, left out of them
        gc.collect()
        gc.freeze()
        self.log(*self.server.startup_note(values))

    def margin_rule(self, name):
        """The rule of the margin ``name`` of :class:`Margins` (:func:`declare_table`): its row's check, then,
        with a model in use, refused with the reason when the model would not be admitted with it (it stays
        served)."""
        def rule(check):
            def checked(value, field):
                value = check(value, field)
                return value if self.core is None else self.core.check_margin(name, value, field)
            return checked
        return rule

    def set_reference_timeout(self, value):
        """``reference_timeout`` set: the server's timeout and its check period, and the check timer's."""
        self.server.reference_timeout = value
        if self.reference_timer is not None:
            set_period(self.reference_timer, value / 4.0)

    def ros_time(self) -> float | None:
        """ROS time now [s]; None while it is not known (use_sim_time before the first /clock message)."""
        return None if waiting_for_clock(self) else self.get_clock().now().nanoseconds * 1e-9

    def log(self, level, message):
        """A (level, message) note of the core, at its level (one call site per severity: nothing throttled)."""
        logger = self.get_logger()      # rclpy: a call site keeps the severity of its first call
        if level == "info":
            logger.info(message)
        elif level == "warning":
            logger.warning(message)
        else:
            logger.error(message)

    def reply(self, response, fields, note=None):
        """``response`` with the core's reply ``fields`` set by name, its note logged."""
        for name, value in fields.items():
            setattr(response, name, value)
        if note is not None:
            self.log(*note)
        return response

    def on_set_payload(self, request, response):
        """Attach the request's payload to the model in use (or keep it for the first model)."""
        fields, note = self.server.set_payload_reply(request.frame, request.mass, request.com, request.inertia,
                                                     stamp_or_now(request.stamp))
        if fields["success"]:
            self.publish_status()
        return self.reply(response, fields, note)

    def on_clear_payload(self, request, response):
        """Serve the model in use without a payload."""
        fields = self.server.clear_payload_reply()
        if fields["success"]:
            self.publish_status()
        return self.reply(response, fields)

    def on_model(self, msg):
        try:
            served = self.server.use_model_message(msg.artifact_yaml, msg.robot_name, msg.version)
            self.subscribe_temperatures(served.model.joint_names)
        except Exception as error:      # anything a message makes decoding raise: the node goes on
            self.log(*self.server.model_refused(msg.version, error))
        self.publish_status()

    def on_compute(self, request, response):
        fields, note = self.server.compute_reply(request.joint_names, request.positions, request.velocities,
                                                 request.accelerations)   # array.array('d'): not copied
        if "efforts" in fields:
            fields["efforts"] = float64_array(fields["efforts"])
        return self.reply(response, fields, note)

    def on_trajectory(self, msg):
        if self.core.served is None:
            self.get_logger().warning("trajectory received before any model; not forwarded", throttle_duration_sec=5.0)
            return
        fields = [[getattr(point, field) for point in msg.points] for field in FIELDS]
        answer, note = self.server.trajectory_efforts(msg.joint_names, fields, stamp_or_now(msg.header.stamp),
                                                      [seconds(point.time_from_start) for point in msg.points])
        if note is not None:
            self.get_logger().warning(note[1], throttle_duration_sec=5.0)
            self.publish_status()
            return
        for point, effort in zip(msg.points, answer.efforts):
            point.effort = float64_array(effort)
        for added in answer.inserted:
            msg.points.insert(added.index, JointTrajectoryPoint(
                positions=float64_array(added.positions), velocities=float64_array(added.velocities),
                accelerations=float64_array(added.accelerations), effort=float64_array(added.effort),
                time_from_start=duration_msg(added.time_from_start)))
        self.trajectory_publisher.publish(msg)

    def on_reference(self, msg):
        tau, note = self.server.reference_torques(msg.name, msg.position, msg.velocity, stamp_or_now(msg.header.stamp))
        if note is not None:
            self.get_logger().warning(note[1], throttle_duration_sec=5.0)
        elif tau is not None:
            self.command_publisher.publish(Float64MultiArray(data=float64_array(tau)))
        self.publish_status_on_change()

    def check_reference(self):
        """Zero feed-forward while no valid reference has come for reference_timeout."""
        zeros = self.server.check_reference()
        if zeros:
            self.command_publisher.publish(Float64MultiArray(data=array.array("d", bytes(8 * zeros))))
        self.publish_status_on_change()

    def publish_status_on_change(self):
        if self.server.changed():
            self.publish_status()

    def subscribe_temperatures(self, joints):
        """A sensor_msgs/Temperature subscription on ``<temperature_topic_prefix>/<joint>`` per joint not yet
        subscribed (with the prefix set)."""
        if not self.temperature_prefix:
            return
        for joint in joints:
            if joint not in self.temperature_subscriptions:
                self.temperature_subscriptions[joint] = self.create_subscription(
                    Temperature, f"{self.temperature_prefix}/{joint}",
                    lambda msg, joint=joint: self.on_temperatures([joint], [msg.temperature], msg),
                    10, callback_group=self.temperature_group)

    def on_joint_temperatures(self, msg):
        if len(msg.name) != len(msg.temperature):
            self.get_logger().warning(f"JointTemperatures with {len(msg.name)} names and {len(msg.temperature)} "
                                      "temperatures ignored", throttle_duration_sec=5.0)
            return
        self.on_temperatures(list(msg.name), list(msg.temperature), msg)

    def on_temperatures(self, joints, values, msg):
        """Keep each joint's temperature [deg C] stamped as ``msg`` (0: now); what is not kept is said."""
        for level, note in self.core.update_temperatures(joints, values, stamp_or_now(msg.header.stamp)):
            if level == "info":     # two call sites: rclpy throttles each on its own
                self.get_logger().info(note, throttle_duration_sec=5.0)
            else:
                self.get_logger().warning(note, throttle_duration_sec=5.0)
        self.publish_status_on_change()

    def on_reset_warmup(self, request, response):
        """Set the running time since the cold start [s]."""
        self.reply(response, *self.server.reset_warmup_reply(request.elapsed))
        self.publish_status()
        return response

    def publish_status(self):
        with self.status_lock:
            fields, notes = self.server.report()
            for note in notes:
                self.log(*note)
            status = FeedforwardStatus(**{**fields, "state": STATE_CODES[fields["state"]]})
            status.header.stamp = self.get_clock().now().to_msg()
            self.status_publisher.publish(status)


def main(args=None):
    return spin_node(FeedforwardNode, args, low_latency=True)


if __name__ == "__main__":
    raise SystemExit(main())
