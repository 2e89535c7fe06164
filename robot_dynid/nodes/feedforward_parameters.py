"""The feedforward node's parameter table (:mod:`robot_dynid.nodes.feedforward`), in a module of its own.

:data:`PARAMETERS` gives the node's descriptors (``ros2 param describe``: unit, range, live or not),
docs/reference/nodes.md and config/feedforward.yaml (tools/config_files.py); the node imports it, so
``robot_dynid.nodes.feedforward.PARAMETERS`` is this table. Only rows and their checks live here, no node code.
"""
from rclpy.parameter import Parameter

from robot_dynid.model.feedforward import (
    DEFAULT_ACCELERATION_MARGIN, DEFAULT_EFFORT_MARGIN, DEFAULT_MAX_POINTS, DEFAULT_MODEL_EFFORT_MARGIN,
    DEFAULT_POSITION_MARGIN, DEFAULT_VELOCITY_MARGIN, MAX_MARGIN_FACTOR, MAX_POINTS_LIMIT, check_margin_factor,
    check_max_points, check_position_margin)
from robot_dynid.model.reference_acceleration import MAX_LEAD, MAX_WINDOW
from robot_dynid.model.served_model import DEFAULT_MAX_TEMPERATURE_AGE, DEFAULT_STANDSTILL_VELOCITY
from robot_dynid.nodes.node_runtime import (MAX_TIMER_PERIOD, MIN_TIMER_PERIOD, NodeParameter, ParameterTable,
                                            in_range, integer_in, qos_parameter, readable_file_path, timer_period)

__all__ = ["DEFAULT_REFERENCE_TIMEOUT", "MAX_REFERENCE_TIMEOUT", "DEFAULT_SERVICE_QUEUE_DEPTH",
           "MAX_SERVICE_QUEUE_DEPTH", "MAX_COLD_START_STAMP", "MAX_COOLING_TIME_CONSTANT", "MAX_STANDSTILL_VELOCITY",
           "MAX_TEMPERATURE_AGE", "LIVE_MARGIN", "PARAMETERS"]

DEFAULT_REFERENCE_TIMEOUT = 0.5     # s
MAX_REFERENCE_TIMEOUT = 60.0        # s
DEFAULT_SERVICE_QUEUE_DEPTH = 100
MAX_SERVICE_QUEUE_DEPTH = 10_000
MAX_COLD_START_STAMP = 4.2e9        # s of ROS time (year 2103)
MAX_COOLING_TIME_CONSTANT = 604800.0    # s (a week)
MAX_STANDSTILL_VELOCITY = 1.0       # rad/s
MAX_TEMPERATURE_AGE = 3600.0        # s
LIVE_MARGIN = "live: the model in use is served again with it (refused when it would not be admitted)"
PARAMETERS = ParameterTable("feedforward", rows=(
    NodeParameter("model_file", "", "model artifact (YAML) to load at start; '' waits for model_topic. A model that "
                  "does not load or is refused stops the node at start (one line, exit code 2)",
                  check=readable_file_path),
    NodeParameter("robot_file", "", "robot description (YAML) every model must be of (name, joints, kinematics), "
                  "whose limits apply; '' = the robot of the first model served", check=readable_file_path),
    NodeParameter("model_topic", "identified_model", "robot_dynid/msg/IdentifiedModel to follow (transient local); "
                  "'' = off"),
    NodeParameter("reference_topic", "", "sensor_msgs/JointState reference: positions [rad], velocities [rad/s]; "
                  "'' = off"),
    NodeParameter("command_topic", "feedforward_effort", "std_msgs/Float64MultiArray torques in the order of "
                  "joints, for a forward command controller", "N m"),
    NodeParameter("joints", Parameter.Type.STRING_ARRAY, "joints of those commands in the controller's order (its "
                  "`joints`), a subset of the model's; unset: the model's joints in its order; read at start: the "
                  "layout the controller expects", example=["j1", "j2", "j3"]),
    qos_parameter(what="reference_topic"),
    NodeParameter("trajectory_topic", "", "trajectory_msgs/JointTrajectory reference in (positions rad, velocities "
                  "rad/s, accelerations rad/s^2); '' = off"),
    NodeParameter("trajectory_out_topic", "trajectory_with_effort", "the same JointTrajectory with every point's "
                  "effort filled, for a joint_trajectory_controller with an effort interface", "N m"),
    NodeParameter("status_topic", "feedforward_status", "robot_dynid/msg/FeedforwardStatus out (transient local): "
                  "the model in use, the reference path's state, refusals, the payload, the friction state"),
    NodeParameter("position_margin", DEFAULT_POSITION_MARGIN, "positions beyond a joint's limits by more than this "
                  f"are refused (URDF continuous joints: not checked); at most 2 pi; negative: no check; {LIVE_MARGIN}",
                  "rad", check_position_margin, live=True),
    NodeParameter("velocity_margin", DEFAULT_VELOCITY_MARGIN, "velocities above this times the velocity limit are "
                  f"refused; in (0, 10]; {LIVE_MARGIN}", "1", check_margin_factor, (0.0, MAX_MARGIN_FACTOR), True),
    NodeParameter("acceleration_margin", DEFAULT_ACCELERATION_MARGIN, "accelerations above this times the "
                  f"acceleration limit are refused; in (0, 10]; {LIVE_MARGIN}", "1", check_margin_factor,
                  (0.0, MAX_MARGIN_FACTOR), True),
    NodeParameter("effort_margin", DEFAULT_EFFORT_MARGIN, "torques above this times the effort limit are refused (no "
                  "effort limit in the robot description: 2 x the model's largest torque at the limits of motion); in "
                  f"(0, 10]; {LIVE_MARGIN}", "1", check_margin_factor, (0.0, MAX_MARGIN_FACTOR), True),
    NodeParameter("model_effort_margin", DEFAULT_MODEL_EFFORT_MARGIN, "a model needing more than this times an "
                  f"effort limit at the limits of motion is refused; in (0, 10]; {LIVE_MARGIN}", "1",
                  check_margin_factor, (0.0, MAX_MARGIN_FACTOR), True),
    NodeParameter("max_points", DEFAULT_MAX_POINTS, f"points per request (service, trajectory); in "
                  f"1..{MAX_POINTS_LIMIT}; live: applies to the next request", check=check_max_points,
                  bounds=(1, MAX_POINTS_LIMIT), live=True),
    NodeParameter("reference_timeout", DEFAULT_REFERENCE_TIMEOUT, "without a valid reference this long, zero "
                  "feed-forward is published on command_topic; in (0, 60]; live: the timeout and its check every "
                  "reference_timeout / 4 change at once", "s",
                  in_range("s", 0.0, MAX_REFERENCE_TIMEOUT, allow_minimum=False), live=True),
    NodeParameter("status_period", 1.0, f"FeedforwardStatus period (also sent on every change); in "
                  f"[{MIN_TIMER_PERIOD:g}, {MAX_TIMER_PERIOD:g}]; live: the next status comes one new period after "
                  "the set", "s", timer_period, live=True),
    NodeParameter("service_queue_depth", DEFAULT_SERVICE_QUEUE_DEPTH, "requests the service queues (beyond: dropped "
                  f"unanswered by the middleware); in 1..{MAX_SERVICE_QUEUE_DEPTH}; read at start: the service's QoS",
                  check=integer_in(1, MAX_SERVICE_QUEUE_DEPTH)),
    NodeParameter("payload_file", "", "payload (YAML: frame, mass kg, com m, inertia kg m^2 about the com) attached "
                  "to the models served; '' = none; read at start (~/set_payload and ~/clear_payload change the "
                  "payload while the node runs)", check=readable_file_path),
    NodeParameter("cold_start_stamp", 0.0, "ROS time of the cold start (friction drift time); 0 = the node's start; "
                  f"at most its start and {MAX_COLD_START_STAMP:g}; read at start (~/reset_warmup sets the running "
                  "time while the node runs)", "s", in_range("s", 0.0, MAX_COLD_START_STAMP)),
    NodeParameter("cooling_time_constant", 0.0, "while the joints stand still the running time decays toward 0 with "
                  f"this time constant; 0 = no cooling; at most {MAX_COOLING_TIME_CONSTANT:g}; live: applies from "
                  "the next reference", "s", in_range("s", 0.0, MAX_COOLING_TIME_CONSTANT), live=True),
    NodeParameter("standstill_velocity", DEFAULT_STANDSTILL_VELOCITY, "joints with every reference velocity below "
                  f"this stand still; in (0, {MAX_STANDSTILL_VELOCITY:g}]; live: applies to the next reference",
                  "rad/s", in_range("rad/s", 0.0, MAX_STANDSTILL_VELOCITY, allow_minimum=False), live=True),
    NodeParameter("temperature_topic_prefix", "", "sensor_msgs/Temperature per joint on <prefix>/<joint name> "
                  "[deg C], for a model whose friction drifts with temperature; '' = off"),
    NodeParameter("joint_temperatures_topic", "", "robot_dynid/msg/JointTemperatures [deg C], for a model whose "
                  "friction drifts with temperature; '' = off"),
    NodeParameter("max_temperature_age", DEFAULT_MAX_TEMPERATURE_AGE, "older temperatures are not used; in "
                  f"(0, {MAX_TEMPERATURE_AGE:g}]; live: applies to the next request", "s",
                  in_range("s", 0.0, MAX_TEMPERATURE_AGE, allow_minimum=False), live=True),
    NodeParameter("reference_acceleration_window", 0.0, "window of the reference's accelerations estimated from its "
                  "velocities by their stamps; 0 = accelerations zero, else in (0, 1]; for a planned (noise-free) "
                  "reference; live: applies from the next reference", "s", in_range("s", 0.0, MAX_WINDOW), live=True),
    NodeParameter("command_lead", 0.0, "the command of a reference is the torque of its state this long after its "
                  "stamp (q + qd L + qdd L^2/2, qd + qdd L), and a payload stamped ahead reaches it from its stamp "
                  "minus this: the latency from the reference's stamp to the controller applying the command (one "
                  f"controller period and the transport); 0 = at the stamp, at most {MAX_LEAD:g}; live: applies "
                  "from the next reference", "s", in_range("s", 0.0, MAX_LEAD), live=True),
))
"""The feedforward node's parameters (:class:`~robot_dynid.nodes.node_runtime.ParameterTable`)."""
