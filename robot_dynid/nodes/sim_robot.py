"""sim_robot node: a simulated arm that follows JointTrajectory commands and publishes its joint states.

It stands in for a robot driver with a joint_trajectory_controller: trajectories on
``command_topic`` (as the controller's ``~/joint_trajectory``; header stamp 0 = start now) are
followed as :mod:`robot_dynid.experiment.trajectory_following` describes, and ``joint_states`` carries
positions [rad], velocities [rad/s] and simulated measured torques [N m] (noise-free torque plus
Gaussian noise of ``noise_std``) on the grid ``t0 + k / rate`` of the node clock, ``t0`` being
the node's start (its cold start for the friction warm-up: every friction coefficient times
``1 + cold_excess exp(-t / warmup_time_constant) + cold_excess_2 exp(-t / warmup_time_constant_2)``, t [s] since
the start, the thesis's double exponential in running time). ``~/true_effort`` carries the same
states with the noise-free torques.

``engine`` chooses the physics (:mod:`robot_dynid.experiment.engines`): ``regressor`` (default) computes the
torques with the identifier's own regressor and follows the trajectory exactly; ``mujoco`` integrates the arm
in MuJoCo with steps of at most ``timestep`` under a computed-torque tracking law, with the armature, damping
and friction loss of the robot description's ``simulation:`` section (docs/simulation.md), and needs the
``mujoco`` package (without it: one line saying how to install it, exit 2).

``mode: control`` (engine mujoco; default ``tracking``, the above, for identification runs) drives the arm as
ros2_control drives an effort-controlled arm (:mod:`robot_dynid.experiment.closed_loop`): at ``control_rate``
(default 1 kHz) a joint-space PD, gains ``kp`` [N m/rad] and ``kd`` [N m s/rad] per joint (unset: from
``control_bandwidth`` [Hz] and ``damping_ratio`` on each joint's largest inertia), tracks the JointTrajectory
reference and adds the feed-forward: the ``effort`` of the trajectory's points (the joint_trajectory_controller
path, e.g. the feedforward node's ``trajectory_out_topic``) and the std_msgs/Float64MultiArray [N m] on
``feedforward_topic`` in the robot's joint order (the forward command controller path: the feedforward node's
``command_topic``), the last one received held for at most ``feedforward_timeout`` s, then zero, each applied
``feedforward_delay`` s after it arrives (0: at once; more rehearses a late path). ``joint_states`` carries the
torque applied (PD plus feed-forward) plus noise, ``~/true_effort`` the torque applied, ``~/controller_state``
the reference (position [rad], velocity [rad/s]) and the feed-forward applied (effort [N m]) at the same stamps.
``~/attach_payload`` (robot_dynid/srv/SetPayload; ``model_version`` is 0) fixes a body to the simulated arm's last
link from the next cycle, or from the request's ``stamp`` when later: the physics changes, not any model (serve it
with the feedforward node's ``~/set_payload``, the same ``stamp`` for both). The friction warm-up
(``cold_excess``...) scales the joints' damping and friction loss; with engine mujoco ``~/reset_warmup``
(robot_dynid/srv/ResetWarmup) sets the arm's running time since its cold start [s] from now (0: cold now).

The true parameters are :func:`robot_dynid.experiment.simulation.simulation_parameters` of the robot and
friction model with ``seed`` (the regressor engine), or the MuJoCo model's, in the friction model's family.
Samples are computed in batches (the regressor costs about the same for one sample as for a hundred) every
``batch_period`` s and published with their own stamps; a timer drives this and is best-effort: on a loaded
machine batches come late and grow, and samples more than ``max_lag`` s overdue are skipped with a warning, so
stamps stay on the grid but messages can arrive in bursts up to ``batch_period`` (or the lag) behind the clock.

Every numeric parameter is checked at start (finite, within the range its description states; the
maxima bound the publisher's history of ``(max_lag + batch_period) * rate`` messages and the timer's
work): a bad value is one line naming it on stderr and exit code 2. Set while the node runs (``ros2 param
set``): ``noise_std`` is live, and so are ``batch_period`` (the timer's period) and ``max_lag`` as long as
``(max_lag + batch_period) * rate`` stays within the publishers' history set at start (else refused with the
numbers); the robot, engine, mode, true parameters, friction warm-up, rate, seed, initial positions, topics and the
controller's settings are read at start (read-only).
"""
from __future__ import annotations

import math

import numpy as np
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.duration import Duration
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from robot_dynid import validators
from robot_dynid.errors import DynIdError
from robot_dynid.experiment.closed_loop import (
    DEFAULT_BANDWIDTH, DEFAULT_CONTROL_RATE, DEFAULT_DAMPING_RATIO, DEFAULT_FEEDFORWARD_TIMEOUT, MAX_BANDWIDTH,
    MAX_CONTROL_RATE, MAX_FEEDFORWARD_DELAY, MAX_FEEDFORWARD_TIMEOUT, ControlSettings)
from robot_dynid.experiment.engines import MODE_NAMES, check_engine, simulated_arm, simulated_robot
from robot_dynid.experiment.mujoco_engine import DEFAULT_TIMESTEP, MAX_TIMESTEP, MIN_TIMESTEP
from robot_dynid.model.friction import FRICTION_MODEL_NAMES, friction_model
from robot_dynid.model.payload import Payload
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.nodes.node_runtime import (NodeParameter, ParameterTable, declare_table, in_range, integer_in,
                                            readable_file_path, set_period, spin_node)
from robot_dynid.package_files import find_package_file
from robot_dynid.srv import ResetWarmup, SetPayload

__all__ = ["MIN_RATE", "MAX_RATE", "MAX_BATCH_PERIOD", "MAX_LAG", "MAX_NOISE_STD", "MAX_COLD_EXCESS",
           "MAX_WARMUP_TIME_CONSTANT", "LIVE_BURST", "GAINS_UNSET", "PARAMETERS", "SimRobotNode", "burst", "main"]

# Parameter ranges; the maxima bound the publisher's history (max_lag * rate messages) and the timer's work
MIN_RATE, MAX_RATE = 1.0, 2000.0      # [Hz] rate
MAX_BATCH_PERIOD = 1.0                # [s] batch_period
MAX_LAG = 10.0                        # [s] max_lag
MAX_NOISE_STD = 1e4                   # [N m] noise_std
MAX_COLD_EXCESS = 10.0                # cold_excess
MAX_WARMUP_TIME_CONSTANT = 86400.0    # [s] warmup_time_constant
LIVE_BURST = ("live: applies to the next batch; refused when (max_lag + batch_period) * rate outgrows the "
              "publishers' history set at start")

GAINS_UNSET = ("unset: from control_bandwidth f and damping_ratio z on each joint's largest inertia I over poses "
               "within its limits: kp = I (2 pi f)^2, kd = 2 z I (2 pi f)")

PARAMETERS = ParameterTable("sim_robot", notes=(
    "A simulated arm for tests and demos. Every number is checked at start (range in each comment); a bad one is "
    "one line and exit code 2.",
    "Services with engine mujoco: ~/reset_warmup (the arm's running time since its cold start), in control mode "
    "~/attach_payload (a body fixed to the simulated arm's last link); topic ~/controller_state (control mode: "
    "reference and feed-forward applied)."), rows=(
    NodeParameter("robot_file", "", "robot description (YAML); '' = the ER3A (config/robots/er3a.yaml)",
                  check=readable_file_path),
    NodeParameter("engine", "regressor", "physics: regressor (the identifier's own regressor) or mujoco (MuJoCo "
                  "integrates the arm; armature, damping, friction loss from the description's simulation: section; "
                  'pip install "robot-dynid[sim]")', check=lambda value, field: check_engine(value, field)),
    NodeParameter("timestep", DEFAULT_TIMESTEP, f"mujoco engine: largest integration step, {MIN_TIMESTEP:g} to "
                  f"{MAX_TIMESTEP:g}", "s", in_range("s", MIN_TIMESTEP, MAX_TIMESTEP)),
    NodeParameter("friction", "coulomb_viscous", f"friction model: {', '.join(FRICTION_MODEL_NAMES)} "
                  "(coulomb_viscous_lead: the family of the mujoco engine's true parameters)",
                  check=lambda value, field: validators.text(value, field, DynIdError, list(FRICTION_MODEL_NAMES))),
    NodeParameter("noise_std", 0.5, f"torque measurement noise standard deviation, 0 to {MAX_NOISE_STD:g}; live: "
                  "applies to the next batch", "N m", in_range("N m", 0.0, MAX_NOISE_STD), live=True),
    NodeParameter("seed", 0, "seed of the true parameters (simulation_parameters) and of the noise, >= 0",
                  check=integer_in(0)),
    NodeParameter("cold_excess", 0.0, "extra friction of the cold robot as a fraction of the warm friction, 0 to "
                  f"{MAX_COLD_EXCESS:g} (0 = no warm-up; mujoco: its damping and friction loss)",
                  check=in_range(None, 0.0, MAX_COLD_EXCESS)),
    NodeParameter("warmup_time_constant", 1200.0, "time constant of the friction warm-up, > 0 and at most "
                  f"{MAX_WARMUP_TIME_CONSTANT:g}", "s",
                  in_range("s", 0.0, MAX_WARMUP_TIME_CONSTANT, allow_minimum=False)),
    NodeParameter("cold_excess_2", 0.0, "second exponential of the warm-up (the thesis's double exponential), "
                  f"fraction of the warm friction, 0 to {MAX_COLD_EXCESS:g} (0 = one exponential)",
                  check=in_range(None, 0.0, MAX_COLD_EXCESS)),
    NodeParameter("warmup_time_constant_2", 300.0, "time constant of the second exponential, > 0 and at most "
                  f"{MAX_WARMUP_TIME_CONSTANT:g}", "s",
                  in_range("s", 0.0, MAX_WARMUP_TIME_CONSTANT, allow_minimum=False)),
    NodeParameter("rate", 500.0, f"joint_states sample rate, {MIN_RATE:g} to {MAX_RATE:g}", "Hz",
                  in_range("Hz", MIN_RATE, MAX_RATE)),
    NodeParameter("batch_period", 0.02, "period of the publishing timer (at least 1 / rate): samples are computed "
                  f"and published in batches; > 0 and at most {MAX_BATCH_PERIOD:g}; {LIVE_BURST}", "s",
                  in_range("s", 0.0, MAX_BATCH_PERIOD, allow_minimum=False), live=True),
    NodeParameter("max_lag", 1.0, f"overdue samples older than this are skipped, > 0 and at most {MAX_LAG:g}; "
                  f"{LIVE_BURST}", "s", in_range("s", 0.0, MAX_LAG, allow_minimum=False), live=True),
    NodeParameter("command_topic", "joint_trajectory", "trajectory_msgs/JointTrajectory commands to follow (as "
                  "joint_trajectory_controller's)"),
    NodeParameter("mode", "tracking", "tracking: follow the commands (engine mujoco: under computed torque), for "
                  "identification; control: engine mujoco under a joint-space PD plus the feed-forward received, as "
                  "ros2_control drives an effort-controlled arm (docs/simulation.md, closed loop)",
                  check=lambda value, field: validators.text(value, field, DynIdError, MODE_NAMES)),
    NodeParameter("control_rate", DEFAULT_CONTROL_RATE, "control mode: controller rate, a whole multiple of rate, "
                  f"at most {MAX_CONTROL_RATE:g}", "Hz", in_range("Hz", 0.0, MAX_CONTROL_RATE, allow_minimum=False)),
    NodeParameter("kp", Parameter.Type.DOUBLE_ARRAY, f"control mode: proportional gain per joint, >= 0; {GAINS_UNSET}",
                  "N m/rad", example=[400.0, 400.0, 200.0, 20.0, 20.0, 5.0]),
    NodeParameter("kd", Parameter.Type.DOUBLE_ARRAY, f"control mode: derivative gain per joint, >= 0; {GAINS_UNSET}",
                  "N m s/rad", example=[25.0, 25.0, 12.0, 1.2, 1.2, 0.3]),
    NodeParameter("control_bandwidth", DEFAULT_BANDWIDTH, "control mode: bandwidth f of the default gains, at most "
                  f"{MAX_BANDWIDTH:g}", "Hz", in_range("Hz", 0.0, MAX_BANDWIDTH, allow_minimum=False)),
    NodeParameter("damping_ratio", DEFAULT_DAMPING_RATIO, "control mode: damping ratio of the default gains, in "
                  "(0, 10] (1: critically damped)", "1", in_range("1", 0.0, 10.0, allow_minimum=False)),
    NodeParameter("feedforward_topic", "feedforward_effort", "control mode: std_msgs/Float64MultiArray feed-forward "
                  "in the robot's joint order (a forward command controller's input: the feedforward node's "
                  "command_topic); '' = off. JointTrajectory point efforts are added too", "N m"),
    NodeParameter("feedforward_timeout", DEFAULT_FEEDFORWARD_TIMEOUT, "control mode: the last feed-forward received "
                  f"is held at most this long, then zero; at most {MAX_FEEDFORWARD_TIMEOUT:g}", "s",
                  in_range("s", 0.0, MAX_FEEDFORWARD_TIMEOUT, allow_minimum=False)),
    NodeParameter("feedforward_delay", 0.0, "control mode: each feed-forward is applied this long after it arrives "
                  f"(rehearses a late path), 0 to {MAX_FEEDFORWARD_DELAY:g}", "s",
                  in_range("s", 0.0, MAX_FEEDFORWARD_DELAY)),
    NodeParameter("initial_positions", Parameter.Type.DOUBLE_ARRAY, "positions before any command, one per joint; "
                  "unset: 0 for every joint", "rad", example=[0.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
))
"""sim_robot's parameters (:class:`~robot_dynid.nodes.node_runtime.ParameterTable`)."""


class SimRobotNode(Node):
    def __init__(self, **node_options):
        """``node_options``: rclpy Node keyword arguments, e.g. ``context`` (one process, several nodes)."""
        super().__init__("sim_robot", **node_options)
        values = declare_table(self, PARAMETERS, apply={
            "noise_std": self.set_noise_std, "batch_period": self.set_batch_period, "max_lag": self.set_max_lag},
            rules={name: lambda check, name=name: self.burst_rule(check, name) for name in ("batch_period", "max_lag")})
        self.robot_file = robot_file = values["robot_file"] or str(find_package_file("config", "robots", "er3a.yaml"))
        engine, friction, noise_std, seed = values["engine"], values["friction"], values["noise_std"], values["seed"]
        cold_excess, warmup = values["cold_excess"], values["warmup_time_constant"]
        cold_excess_2, warmup_2 = values["cold_excess_2"], values["warmup_time_constant_2"]
        rate, command_topic, timestep = values["rate"], values["command_topic"], values["timestep"]
        self.batch_period, self.max_lag = values["batch_period"], values["max_lag"]
        robot = load_robot(robot_file)
        control = self.control_settings(values, robot)      # checked in either mode
        control = control if values["mode"] == "control" else None
        initial = values["initial_positions"]
        initial = [0.0] * robot.n_joints if initial is None else validators.numbers(
            list(initial), robot.n_joints, "parameter initial_positions", DynIdError, "rad")
        simulator = simulated_robot(engine, robot, friction_model(friction), seed, noise_std, cold_excess, warmup,
                                    timestep, cold_excess_2, warmup_2)
        self.rate = rate
        self.arm = simulated_arm(simulator, rate, initial, seed=seed, max_lag=self.max_lag, control=control)
        self.control = control is not None
        self.start = self.get_clock().now()
        # a late timer publishes up to max_lag of samples at once; a reliable keep-last writer overwrites
        # samples its readers have not acknowledged yet beyond its depth, so the depth covers a whole burst
        state_qos = QoSProfile(depth=max(100, burst(self.max_lag, self.batch_period, rate)),
                               reliability=ReliabilityPolicy.RELIABLE)
        self.depth = state_qos.depth
        self.state_publisher = self.create_publisher(JointState, "joint_states", state_qos)
        self.truth_publisher = self.create_publisher(JointState, "~/true_effort", state_qos)
        self.create_subscription(JointTrajectory, command_topic, self.on_trajectory, 10)
        if self.control:
            self.controller_publisher = self.create_publisher(JointState, "~/controller_state", state_qos)
            if self.feedforward_topic:
                self.create_subscription(Float64MultiArray, self.feedforward_topic, self.on_feedforward, 10)
            self.create_service(SetPayload, "~/attach_payload", self.on_attach_payload)
        if engine == "mujoco":
            self.create_service(ResetWarmup, "~/reset_warmup", self.on_reset_warmup)
        self.timer = self.create_timer(max(self.batch_period, 1.0 / rate), self.on_timer)
        self.get_logger().info(
            f"simulating {robot.name} ({robot_file}) with the {engine} engine"
            + (f" (step {self.arm.timestep:g} s, semi-implicit Euler, inertials from "
               f"{simulator.model.inertials_from})" if engine == "mujoco" else "")
            + (f" in control mode at {control.control_rate:g} Hz: kp {np.round(self.arm.kp, 4).tolist()} N m/rad, "
               f"kd {np.round(self.arm.kd, 4).tolist()} N m s/rad, feed-forward from the trajectories' efforts and "
               f"{self.feedforward_topic or '(no topic)'} (held {control.feedforward_timeout:g} s, delayed "
               f"{control.feedforward_delay:g} s)" if self.control else "")
            + f", friction {friction}, noise {noise_std} N m, "
            f"cold excess {cold_excess} (t_w {warmup} s) + {cold_excess_2} (t_2 {warmup_2} s), seed {seed}; "
            f"following {command_topic}; "
            f"joint_states and ~/true_effort at {rate} Hz in batches every {self.batch_period} s "
            f"(reliable, depth {state_qos.depth})")

    def control_settings(self, values, robot) -> ControlSettings:
        """The control mode's :class:`ControlSettings` from the parameters ``values`` (and ``feedforward_topic``);
        gains given per joint are checked against ``robot``'s joints."""
        def gains(name, unit):
            value = values[name]
            if value is None:
                return None
            return tuple(validators.array(list(value), f"parameter {name}", DynIdError, shape=(robot.n_joints,),
                                          axes=("joints",), columns=robot.joint_names, minimum=0.0, unit=unit))

        self.feedforward_topic = values["feedforward_topic"]
        return ControlSettings(
            control_rate=values["control_rate"], kp=gains("kp", "N m/rad"), kd=gains("kd", "N m s/rad"),
            bandwidth=values["control_bandwidth"], damping_ratio=values["damping_ratio"],
            feedforward_timeout=values["feedforward_timeout"], feedforward_delay=values["feedforward_delay"])

    def burst_rule(self, check, name):
        """The :func:`declare` check of ``batch_period`` or ``max_lag`` (``name``): ``check``, then, once
        publishing, refused when the burst a late timer publishes would outgrow the publishers' history
        (fixed at start: a reliable writer would overwrite samples its readers have not acknowledged)."""
        def checked(value, field):
            value = check(value, field)
            depth = getattr(self, "depth", None)
            if depth is not None:
                lag, period = (value, self.batch_period) if name == "max_lag" else (self.max_lag, value)
                if burst(lag, period, self.rate) > depth:
                    raise DynIdError(f"{field} {value:g} s refused: (max_lag {lag:g} s + batch_period {period:g} s) "
                                     f"at {self.rate:g} Hz is {burst(lag, period, self.rate)} samples, more than the "
                                     f"publishers' history of {depth} set at start")
            return value
        return checked

    def set_noise_std(self, value):
        self.arm.simulator.noise_std = np.full(len(self.arm.follower.joint_names), value)

    def set_batch_period(self, value):
        self.batch_period = value
        set_period(self.timer, max(value, 1.0 / self.rate))

    def set_max_lag(self, value):
        self.max_lag = self.arm.max_lag = value

    def seconds(self, time):
        return (time - self.start).nanoseconds * 1e-9

    def on_trajectory(self, msg):
        now = self.seconds(self.get_clock().now())
        stamp = Time.from_msg(msg.header.stamp, clock_type=self.get_clock().clock_type)
        start = now if stamp.nanoseconds == 0 else self.seconds(stamp)
        points = msg.points
        fields = (msg.joint_names, [Duration.from_msg(p.time_from_start).nanoseconds * 1e-9 for p in points],
                  [p.positions for p in points], [p.velocities for p in points], [p.accelerations for p in points])
        try:
            if self.control:
                self.arm.command(*fields, [p.effort for p in points], start_time=start, received_time=now)
            else:
                self.arm.follower.command(*fields, start_time=start, received_time=now)
        except DynIdError as error:
            self.get_logger().warning(f"ignoring JointTrajectory for {list(msg.joint_names)}: {error}")

    def on_feedforward(self, msg):
        try:
            self.arm.feedforward.receive(self.seconds(self.get_clock().now()), msg.data)
        except DynIdError as error:
            self.get_logger().warning(f"ignoring feed-forward on {self.feedforward_topic}: {error}",
                                      throttle_duration_sec=5.0)

    def on_reset_warmup(self, request, response):
        now = self.seconds(self.get_clock().now())
        try:
            self.arm.reset_warmup(now, request.elapsed)
        except DynIdError as error:
            response.success, response.message = False, f"reset_warmup refused: {error}"
        else:
            response.success, response.message = True, f"running time set to {request.elapsed:g} s"
        response.elapsed = float(self.arm.running_time(now))
        return response

    def on_attach_payload(self, request, response):
        try:
            stamp = Time.from_msg(request.stamp, clock_type=self.get_clock().clock_type)
            at = self.get_clock().now() if stamp.nanoseconds == 0 else stamp
            self.arm.attach_payload(Payload(request.frame, request.mass, tuple(request.com), tuple(request.inertia)),
                                    self.seconds(at))
        except DynIdError as error:
            response.success, response.message = False, f"payload refused: {error}"
            self.get_logger().warning(response.message)
            return response
        response.success = True
        self.get_logger().info(f"payload of {request.mass:g} kg attached at {request.frame}")
        return response

    def on_timer(self):
        samples = self.arm.advance(self.seconds(self.get_clock().now()))
        if samples is None:
            return
        if samples.n_skipped:
            self.get_logger().warning(f"publishing fell behind; skipped {samples.n_skipped} samples",
                                      throttle_duration_sec=5.0)
        names = list(self.arm.follower.joint_names)
        try:
            for k, time in enumerate(samples.time):
                state = JointState(name=names, position=samples.q[k].tolist(), velocity=samples.qd[k].tolist())
                state.header.stamp = (self.start + Duration(nanoseconds=round(time * 1e9))).to_msg()
                truth = JointState(header=state.header, name=names, position=state.position,
                                   velocity=state.velocity, effort=samples.torque[k].tolist())
                state.effort = samples.measured_torque[k].tolist()
                self.state_publisher.publish(state)
                self.truth_publisher.publish(truth)
                if self.control:
                    self.controller_publisher.publish(JointState(
                        header=state.header, name=names, position=samples.q_desired[k].tolist(),
                        velocity=samples.qd_desired[k].tolist(), effort=samples.feedforward[k].tolist()))
        except Exception:
            if self.context.ok():
                raise  # otherwise Ctrl-C / SIGTERM shut the context down while a batch was being published


def burst(max_lag, batch_period, rate):
    """Samples [1] a timer late by ``max_lag`` [s] publishes at once: ``(max_lag + batch_period) * rate``."""
    return math.ceil((max_lag + batch_period) * rate)


def main(args=None):
    return spin_node(SimRobotNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
