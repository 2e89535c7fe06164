"""feedforward node: serves feed-forward torques from an identified model, within the robot's limits.

Messages and parameters in, :class:`robot_dynid.model.served_model.ServedModel` calls, messages out: what is
served (admission of models, payloads, limits, the friction state of a model whose friction drifts) is decided
there, without ROS.

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
- ``~/set_payload`` (robot_dynid/srv/SetPayload), ``~/clear_payload`` (std_srvs/Trigger), ``~/reset_warmup``
  (robot_dynid/srv/ResetWarmup: the running time since the cold start [s]).
- ``temperature_topic_prefix``/<joint> (sensor_msgs/Temperature) and ``joint_temperatures_topic``
  (robot_dynid/JointTemperatures) [deg C], for a model whose friction drifts with temperature.
- ``status_topic`` (robot_dynid/FeedforwardStatus, transient local): the model in use, the reference path's
  state, refusals, the payload, the friction state; every ``status_period`` s and on every change.

What is refused (non-finite values, positions, velocities or accelerations beyond the limits and margins, a
torque beyond the effort limit and margin, too many points) gets ``success: false`` on the service; on the
topics nothing is published for it, a warning names the point and joint and the status says so.

Parameters: :data:`robot_dynid.nodes.feedforward_parameters.PARAMETERS`, from which the descriptors (``ros2 param
describe``: unit, range, live or not), docs/reference/nodes.md and config/feedforward.yaml are made. The margins and
``max_points`` are live: the model in use is served again with them, and one with which it would not be
admitted is refused with the reason. A ``model_file``, ``robot_file`` or ``payload_file`` that does not load, or
a model refused, stops the node at start: one line, exit code 2.

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
import math
import threading
import time

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState, Temperature
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from robot_dynid.errors import DynIdError, one_line
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.friction_state import FrictionState
from robot_dynid.model.feedforward import FIELDS, Margins, ReferenceMonitor, join_points
from robot_dynid.model.payload import Payload, load_payload
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.model.served_model import REASON_LIMIT, ServedModel
from robot_dynid.msg import FeedforwardStatus, IdentifiedModel, JointTemperatures as JointTemperaturesMsg
from robot_dynid.nodes.feedforward_parameters import PARAMETERS
from robot_dynid.nodes.node_runtime import (MODEL_QOS, declare_table, float64_array, seconds, set_period, spin_node,
                                            subscription_qos, waiting_for_clock)
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
        self.core = None    # the ServedModel, made once every parameter is read
        margins = {**{f"{name}_margin": name for name in ("position", "velocity", "acceleration", "effort",
                                                          "model_effort")}, "max_points": "max_points"}
        values = declare_table(self, PARAMETERS, apply={
            **{parameter: self.margin_setter(name) for parameter, name in margins.items()},
            "reference_timeout": self.set_reference_timeout,
            "status_period": lambda value: set_period(self.status_timer, value),
            **{name: lambda value, name=name: setattr(self.core, name, value) for name in (
                "cooling_time_constant", "reference_acceleration_window", "standstill_velocity",
                "max_temperature_age")}},
            rules={parameter: self.margin_rule(name) for parameter, name in margins.items()})
        margins = Margins(**{name: values[parameter] for parameter, name in margins.items()})
        model_file, robot_file, payload_file = values["model_file"], values["robot_file"], values["payload_file"]
        model_topic, reference_topic = values["model_topic"], values["reference_topic"]
        command_topic, status_topic = values["command_topic"], values["status_topic"]
        trajectory_topic, trajectory_out_topic = values["trajectory_topic"], values["trajectory_out_topic"]
        reference_timeout, status_period = values["reference_timeout"], values["status_period"]
        service_queue_depth = values["service_queue_depth"]
        self.temperature_prefix = values["temperature_topic_prefix"]
        joint_temperatures_topic = values["joint_temperatures_topic"]
        reference_qos = subscription_qos(values["joint_states_qos"], 10)
        expected_robot = load_robot(robot_file) if robot_file else None
        self.core = ServedModel(
            margins, self.ros_time, expected_robot=expected_robot, expected_what=f"robot_file {robot_file}",
            output_joints=values["joints"] or None,
            payload=load_payload(payload_file, expected_robot) if payload_file else None,
            payload_source=f"payload_file {payload_file}", cold_start_stamp=values["cold_start_stamp"],
            cooling_time_constant=values["cooling_time_constant"],
            temperatures=bool(self.temperature_prefix or joint_temperatures_topic),
            max_temperature_age=values["max_temperature_age"], standstill_velocity=values["standstill_velocity"],
            reference_acceleration_window=values["reference_acceleration_window"], log=self.log)
        self.temperature_subscriptions = {}
        self.temperature_group = MutuallyExclusiveCallbackGroup()
        if joint_temperatures_topic:
            self.create_subscription(JointTemperaturesMsg, joint_temperatures_topic, self.on_joint_temperatures, 10,
                                     callback_group=self.temperature_group)
        if expected_robot is not None:
            self.subscribe_temperatures(expected_robot.joint_names)
        self.monitor = ReferenceMonitor(reference_timeout, time.monotonic(), enabled=bool(reference_topic),
                                        check_period=reference_timeout / 4.0)
        self.counts = {"trajectories_answered": 0, "trajectories_refused": 0, "models_refused": 0}
        self.last_refused = {"trajectory": "", "model": ""}
        self.status_lock = threading.Lock()
        self.published_state = None
        self.published_friction = None
        self.status_publisher = self.create_publisher(FeedforwardStatus, status_topic, STATUS_QOS)
        if model_file:
            model = _load_model_file(model_file)
            try:
                self.use_model(model, f"file {model_file}")
            except DynIdError as error:
                raise DynIdError(f"model_file {model_file} refused: {error}") from None
        bulk, control, models = (MutuallyExclusiveCallbackGroup() for _ in range(3))
        steady = Clock(clock_type=ClockType.STEADY_TIME)    # timeouts in wall time, whatever use_sim_time says
        if model_topic:
            self.create_subscription(IdentifiedModel, model_topic, self.on_model, MODEL_QOS, callback_group=models)
        if trajectory_topic:
            self.trajectory_publisher = self.create_publisher(JointTrajectory, trajectory_out_topic, 10)
            self.create_subscription(JointTrajectory, trajectory_topic, self.on_trajectory, 10, callback_group=bulk)
        self.command_publisher = self.reference_timer = None
        if reference_topic:
            self.command_publisher = self.create_publisher(Float64MultiArray, command_topic, 10)
            self.create_subscription(JointState, reference_topic, self.on_reference, reference_qos,
                                     callback_group=control)
            self.reference_timer = self.create_timer(reference_timeout / 4.0, self.check_reference,
                                                     callback_group=control, clock=steady)
        self.status_timer = self.create_timer(status_period, self.publish_status, callback_group=control,
                                              clock=steady)
        service_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=service_queue_depth,
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
        # A JointTrajectory of many points makes thousands of Python objects (one per point and
        # its Duration), so the garbage collector's full collections come often, and each
        # traverses every object of the process (BENCHMARKS.md, ComputeFeedforward). What exists
        # now lives as long as the process; leave it out of future collections.
        gc.collect()
        gc.freeze()
        self.get_logger().info(
            f"serving compute_feedforward (queue depth {service_queue_depth}, at most {margins.max_points} "
            f"points); model topic {model_topic or 'off'} (transient local, depth 1); "
            f"reference {reference_topic or 'off'} -> {command_topic if reference_topic else 'off'} "
            f"(zero after {reference_timeout:g} s without a valid reference); "
            f"trajectory {trajectory_topic or 'off'} -> {trajectory_out_topic if trajectory_topic else 'off'}; "
            f"margins: position {margins.position:g} rad, velocity x{margins.velocity:g}, acceleration "
            f"x{margins.acceleration:g}, effort x{margins.effort:g}, model effort x{margins.model_effort:g}")

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

    def margin_setter(self, name):
        """The :func:`declare` apply of a margin: the model in use served again with the new margins."""
        return lambda value: self.core.set_margin(name, value)

    def set_reference_timeout(self, value):
        """``reference_timeout`` set: the monitor's timeout and its check period, and the check timer's."""
        self.monitor.timeout, self.monitor.check_period = value, value / 4.0
        if self.reference_timer is not None:
            set_period(self.reference_timer, value / 4.0)

    def ros_time(self) -> float | None:
        """ROS time now [s]; None while it is not known (use_sim_time before the first /clock message)."""
        return None if waiting_for_clock(self) else self.get_clock().now().nanoseconds * 1e-9

    def log(self, level, message):
        """What the served model says, at its level (one call site per severity, as rclpy requires)."""
        logger = self.get_logger()
        if level == "info":
            logger.info(message)
        elif level == "warning":
            logger.warning(message)
        else:
            logger.error(message)

    def use_model(self, model, source, version=None):
        """Serve ``model`` (:meth:`ServedModel.use_model`) and subscribe its joints' temperatures."""
        served = self.core.use_model(model, source, version)
        self.subscribe_temperatures(served.model.joint_names)

    def on_set_payload(self, request, response):
        """Attach the request's payload to the model in use (or keep it for the first model)."""
        served = self.core.served
        response.model_version = served.version if served is not None else 0
        try:
            payload = Payload(request.frame, request.mass, tuple(request.com), tuple(request.inertia))
            response.message = self.core.set_payload(payload)
        except Exception as error:      # DynIdError: refused; anything else: refused too, never fatal
            response.success, response.message = False, f"payload refused: {one_line(error, REASON_LIMIT)}"
            self.get_logger().warning(response.message)
            return response
        response.success = True
        self.publish_status()
        return response

    def on_clear_payload(self, request, response):
        """Serve the model in use without a payload."""
        try:
            self.core.clear_payload()
        except Exception as error:      # the arm alone refused (cannot be, it was admitted): the payload stays
            response.success, response.message = False, f"payload not cleared: {one_line(error, REASON_LIMIT)}"
            return response
        response.success = True
        response.message = "payload cleared" + ("" if self.core.served is not None else " (no model yet)")
        self.publish_status()
        return response

    def on_model(self, msg):
        try:
            model = DynamicModel.from_yaml(msg.artifact_yaml, source="IdentifiedModel.artifact_yaml")
            self.use_model(model, f"topic (robot {msg.robot_name!r:.80})", version=msg.version)
        except Exception as error:      # anything a message makes decoding raise: the node goes on
            reason = one_line(error, REASON_LIMIT)
            self.counts["models_refused"] += 1
            self.last_refused["model"] = f"version {msg.version}: {reason}"
            self.get_logger().error(f"ignoring IdentifiedModel version {msg.version}: {reason}")
        self.publish_status()

    def on_compute(self, request, response):
        served = self.core.served
        response.model_version = served.version if served is not None else 0
        if served is None:
            response.success, response.message = False, "no model loaded yet"
            return response
        try:
            state = self.core.friction(served)
            response.friction_state, response.friction_elapsed = state.code, _or_nan(state.elapsed)
            tau = self.core.torques(served, request.joint_names, request.positions, request.velocities,
                                    request.accelerations, state)   # array.array('d'): float64 buffers, not copied
        except DynIdError as error:
            response.success, response.message = False, str(error)
            return response
        except Exception as error:      # e.g. MemoryError: the request is refused, the node goes on
            response.success = False
            response.message = f"could not compute the request: {one_line(error, REASON_LIMIT)}"
            self.get_logger().error(response.message)
            return response
        response.efforts = float64_array(tau)
        if state.temperature is not None:
            by_name = dict(zip(served.model.joint_names, state.temperature))
            response.friction_temperatures = [float(by_name[name]) for name in request.joint_names]
        response.success, response.message = True, ""
        return response

    def on_trajectory(self, msg):
        served = self.core.served
        if served is None:
            self.get_logger().warning("trajectory received before any model; not forwarded", throttle_duration_sec=5.0)
            return
        try:
            fields = [join_points(field, [getattr(p, field) for p in msg.points], len(msg.joint_names))
                      for field in FIELDS]
            tau = self.core.torques(served, msg.joint_names, *fields)
        except Exception as error:      # DynIdError: refused; anything else: refused too, never fatal
            reason = f"trajectory on {list(msg.joint_names)}: {one_line(error, REASON_LIMIT)}"
            self.counts["trajectories_refused"] += 1
            self.last_refused["trajectory"] = reason
            self.get_logger().warning(reason, throttle_duration_sec=5.0)
            self.publish_status()
            return
        for point, effort in zip(msg.points, tau):
            point.effort = float64_array(effort)
        self.trajectory_publisher.publish(msg)
        self.counts["trajectories_answered"] += 1

    def on_reference(self, msg):
        served = self.core.served
        if served is None:
            return
        try:
            stamp = msg.header.stamp
            tau = self.core.reference_torques(served, msg.name, msg.position, msg.velocity,
                                              seconds(stamp) if (stamp.sec or stamp.nanosec) else None)
        except Exception as error:      # DynIdError: refused; anything else: refused too, never fatal
            reason = one_line(error, REASON_LIMIT)
            self.monitor.refused(time.monotonic(), reason)
            self.get_logger().warning(f"reference on {list(msg.name)}: {reason}", throttle_duration_sec=5.0)
            self.publish_status_on_change()
            return
        self.command_publisher.publish(Float64MultiArray(data=float64_array(tau)))
        self.monitor.answered(time.monotonic())
        self.publish_status_on_change()

    def check_reference(self):
        """Zero feed-forward while no valid reference has come for reference_timeout."""
        served = self.core.served
        timed_out = self.monitor.check(time.monotonic(), served is not None)
        if self.monitor.state(time.monotonic(), served is not None)[0] == ReferenceMonitor.TIMEOUT:
            self.core.joints_move(False)      # no valid reference: the joints count as still
        if timed_out:
            self.command_publisher.publish(Float64MultiArray(data=array.array("d", bytes(8 * served.output_size))))
        self.publish_status_on_change()

    def publish_status_on_change(self):
        served = self.core.served
        friction = self.core.friction_or_reason(served)
        friction = friction.state if isinstance(friction, FrictionState) else friction
        if (self.monitor.state(time.monotonic(), served is not None)[0] != self.published_state
                or friction != self.published_friction):
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
                    lambda msg, joint=joint: self.on_temperatures([joint], [msg.temperature], msg.header.stamp),
                    10, callback_group=self.temperature_group)

    def on_joint_temperatures(self, msg):
        if len(msg.name) != len(msg.temperature):
            self.get_logger().warning(f"JointTemperatures with {len(msg.name)} names and {len(msg.temperature)} "
                                      "temperatures ignored", throttle_duration_sec=5.0)
            return
        self.on_temperatures(list(msg.name), list(msg.temperature), msg.header.stamp)

    def on_temperatures(self, joints, values, stamp):
        """Keep each joint's temperature [deg C] stamped ``stamp`` (0: now); what is not kept is said."""
        notes = self.core.update_temperatures(joints, values, seconds(stamp) if (stamp.sec or stamp.nanosec) else None)
        for level, note in notes:
            if level == "info":
                self.get_logger().info(note, throttle_duration_sec=5.0)
            else:
                self.get_logger().warning(note, throttle_duration_sec=5.0)
        self.publish_status_on_change()

    def on_reset_warmup(self, request, response):
        """Set the running time since the cold start [s]."""
        try:
            response.elapsed = self.core.reset_warmup(request.elapsed)
            response.success, response.message = True, f"running time set to {request.elapsed:g} s"
        except DynIdError as error:
            response.success, response.message = False, f"reset_warmup refused: {error}"
            response.elapsed = self.core.running_time()
        self.get_logger().info(response.message)
        self.publish_status()
        return response

    def publish_status(self):
        served = self.core.served
        now = time.monotonic()
        state, message = self.monitor.state(now, served is not None)
        payload, payload_source = (served.model.payload, served.payload_source) if served else \
            (self.core.payload, self.core.payload_source)
        friction = self.core.friction_or_reason(served)
        unknown = friction if isinstance(friction, str) else ""
        friction = None if unknown else friction
        status = FeedforwardStatus(
            state=STATE_CODES[state], message=message,
            model_version=served.version if served else 0, model_source=served.source if served else "",
            robot_name=served.model.robot.name if served else "",
            reference_age=self.monitor.age(now) if self.monitor.enabled else math.nan,
            reference_timeout=self.monitor.timeout, references_answered=self.monitor.answered_count,
            references_refused=self.monitor.refused_count, last_refused_reference=self.monitor.last_refusal,
            last_refused_trajectory=self.last_refused["trajectory"], last_refused_model=self.last_refused["model"],
            last_refused_payload=self.core.last_refused_payload,
            payload_frame=payload.frame if payload else "", payload_mass=payload.mass if payload else 0.0,
            payload_com=list(payload.com) if payload else [0.0] * 3,
            payload_inertia=list(payload.inertia) if payload else [0.0] * 6, payload_source=payload_source,
            friction_state=FeedforwardStatus.FRICTION_UNKNOWN if unknown else friction.code if friction else 0,
            friction_elapsed=_or_nan(friction and friction.elapsed),
            friction_temperatures=[] if friction is None or friction.temperature is None else
            friction.temperature.tolist(),
            friction_message=unknown if friction is None or friction.state == "static" else friction.describe(),
            **self.counts)
        status.header.stamp = self.get_clock().now().to_msg()
        with self.status_lock:
            if state != self.published_state and state in (ReferenceMonitor.TIMEOUT, ReferenceMonitor.REFUSED):
                self.get_logger().warning(f"{state}: {message}")
            elif state != self.published_state and self.published_state is not None:
                self.get_logger().info(f"{state}" + (f": {message}" if message else ""))
            self.published_state = state
            if friction is not None and friction.state != self.published_friction and friction.state == "nominal":
                self.get_logger().warning(friction.describe())
            elif unknown and unknown != self.published_friction:
                self.get_logger().warning(f"requests refused: {unknown}")
            self.published_friction = friction.state if friction is not None else unknown or None
            self.status_publisher.publish(status)


def _load_model_file(path):
    """The model of ``path``; DynIdError naming the file for anything that keeps it from loading."""
    try:
        return DynamicModel.load(path)
    except DynIdError:
        raise
    except Exception as error:          # e.g. RecursionError of a deeply nested file
        raise DynIdError(f"{path}: cannot load the model: {one_line(error, REASON_LIMIT)}") from None


def _or_nan(value) -> float:
    """``value`` as a float, NaN for None."""
    return math.nan if value is None else float(value)


def main(args=None):
    return spin_node(FeedforwardNode, args, low_latency=True)


if __name__ == "__main__":
    raise SystemExit(main())
