"""experiment_runner node: plays a protocol plan on a robot and marks its stages.

Nothing moves until ``~/start`` (std_srvs/Trigger) is called, or, with ``autostart`` true, until
the node is ready. The response says what happens (``starting in 2 s: approaching the plan's
start pose in 4.0 s (largest move j2 0.8 rad), then playing the 158 s plan``) or why it refuses:
no joint state has arrived within the last ``max_joint_state_age`` s (the pose must be the arm's
now), nothing subscribes to ``command_topic`` (no controller), the run already started, finished
or was aborted, use_sim_time is true and no /clock message has arrived (the plan's time would jump
when it does), or a joint is farther than ``start_tolerance`` [rad]
from the plan's start pose while ``approach_speed_fraction`` is 0 (naming the joint, its distance
and the tolerance). Farther than ``start_tolerance`` with ``approach_speed_fraction`` > 0, the run
begins with a rest-to-rest cycloidal move from the measured pose to the plan's start pose, the
shortest within that fraction of every joint's velocity and acceleration limits (``robot_file``);
it belongs to no stage (no markers; plan time 0 and the first marker come after it) and the
deviation check covers it. Motion (the approach, else the plan) begins ``start_delay`` s after an
accepted start. ``autostart`` starts as soon as /clock (with use_sim_time), a joint state and a subscriber
are there, retrying while one is missing; any other refusal is logged once as an error and the node
stays idle until ``~/start``.

The reference is sent as trajectory_msgs/JointTrajectory windows of ``window_duration`` s, each
``lookahead`` s ahead, with header.stamp = the absolute time of its first point; every window
also repeats the reference from ``lookahead`` before it, so a joint_trajectory_controller that
replaces its trajectory on arrival splices them (:mod:`robot_dynid.experiment.schedule`).
ExperimentStage markers go out at every stage boundary, stamped with the boundary time. Measured
``joint_states`` are compared with the reference at their stamps; beyond
``deviation_threshold`` [rad] on any joint the node aborts, at once when a plan joint's measured
position is NaN or inf (naming the joint and the value; velocities are not used, and drivers
report NaN for joints without a velocity interface), and when no joint state arrives for
``max_joint_state_age`` s (the arm would move unmonitored). So it does when it was stalled for
longer than ``lookahead`` (a window came due after its own start: the controller has held the
previous window's end, and the late window would make the reference jump). ``~/abort``
(std_srvs/Trigger) aborts too, during the approach as well. Aborting sends a hold, reached in
``stop_duration`` s, and the end marker of the stage playing (none during the approach); the hold
is never a non-finite point: the last measured pose if it is finite and at most
``max_joint_state_age`` s old, else (a non-finite or stopped joint state, a stall) the reference
point last due among those sent, where the controller is. The log and the ``~/abort`` response say
which. When the plan is done (or aborted) the node logs it and stays alive, idle, until shut down.

Every numeric parameter is checked at start (finite, within the range its description states; the
maxima bound memory and time: the whole plan is sampled at once, at most
:data:`~robot_dynid.experiment.schedule.MAX_REFERENCE_SAMPLES` samples): a bad value is one line
naming it on stderr and exit code 2, before anything is published.

Parameters set while the node runs (``ros2 param set``): the plan, its sampling, topics and QoS are read at
start (read-only). Live: ``deviation_threshold`` and ``max_joint_state_age`` are safety bounds: a lower value
takes effect at once, also while a plan plays; a higher one is refused while a plan plays (the approach too),
with the reason, so that no change mid-run loosens the monitoring of a moving arm. ``experiment_id``,
``autostart``, ``start_tolerance`` (at most ``deviation_threshold``), ``approach_speed_fraction``,
``start_delay`` and ``stop_duration`` are live before the start and refused once it started. Once the run is
over (done, aborted) every change is refused: the node plays one run.

``plan_file`` '' builds the plan with :func:`robot_dynid.experiment.protocol.build_protocol` from
``cycles``, ``excitation_periods``, ``speed_fractions``, ``friction_level_duration`` (0 = the
shortest that fits) and ``warmup_duration``.
"""
from __future__ import annotations

import math

import numpy as np
from rclpy.node import Node
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynid import validators
from robot_dynid.errors import DynIdError
from robot_dynid.experiment.protocol import (MAX_CYCLES, MAX_EXCITATION_COUNT, MAX_EXCITATION_PERIODS,
                                             MAX_LEVEL_DURATION, MAX_SPEED_LEVELS, MAX_STAGE_DURATION, build_protocol,
                                             load_plan)
from robot_dynid.experiment.schedule import (DEFAULT_APPROACH_SPEED_FRACTION, DEFAULT_MAX_POSE_AGE,
                                             DEFAULT_START_TOLERANCE, MAX_REFERENCE_SAMPLES, ExperimentRun,
                                             ExperimentSchedule, FeedbackWatchdog, NotReady, ReferenceLate,
                                             StartRefused, check_start_tolerance, positions_in_order)
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.msg import ExperimentStage
from robot_dynid.nodes.node_runtime import (STAGE_MARKERS_OUT, NodeParameter, ParameterTable, declare_table,
                                            duration_msg, in_range, integer_in, qos_parameter, readable_file_path,
                                            spin_node, subscription_qos, waiting_for_clock)
from robot_dynid.package_files import find_package_file

__all__ = ["MIN_RATE_HZ", "MAX_RATE_HZ", "MAX_WINDOW", "MAX_DEVIATION", "MAX_STATE_AGE", "MAX_START_DELAY",
           "MAX_STOP_DURATION", "AT_START", "BEFORE_START", "SAFETY_BOUND", "trajectory_msg",
           "speed_levels", "PARAMETERS", "ExperimentRunnerNode", "main"]

# Parameter ranges; the maxima bound the plan's memory and build time and what a typo can do to an arm
MIN_RATE_HZ, MAX_RATE_HZ = 10.0, 1000.0   # [Hz] rate_hz
MAX_WINDOW = 60.0              # [s] window_duration and lookahead
MAX_DEVIATION = 1.0            # [rad] deviation_threshold and start_tolerance
MAX_STATE_AGE = 10.0           # [s] max_joint_state_age
MAX_START_DELAY = 60.0         # [s] start_delay
MAX_STOP_DURATION = 10.0       # [s] stop_duration
# cycles, excitation_periods, speed_fractions, friction_level_duration and warmup_duration: the protocol's
# maxima (the built plan also within MAX_REFERENCE_SAMPLES at rate_hz)
AT_START = "read at start: the plan is built and sampled then"
BEFORE_START = "live before the start, fixed once it starts"
SAFETY_BOUND = "live: lower takes effect at once, higher only before the start (refused while a plan plays)"


def trajectory_msg(joint_names, time_from_start, q, qd, qdd):
    msg = JointTrajectory(joint_names=list(joint_names))
    msg.points = [JointTrajectoryPoint(positions=p.tolist(), velocities=v.tolist(), accelerations=a.tolist(),
                                       time_from_start=duration_msg(s))
                  for s, p, v, a in zip(time_from_start, q, qd, qdd)]
    return msg


def speed_levels(value, field):
    """A :func:`declare` check of ``speed_fractions``: 1 to :data:`MAX_SPEED_LEVELS` fractions in (0, 1]."""
    if not 1 <= len(value) <= MAX_SPEED_LEVELS:
        raise DynIdError(f"{field} must hold 1 to {MAX_SPEED_LEVELS} fractions in (0, 1], got {len(value)}")
    return [validators.fraction(x, f"{field}[{index}]", DynIdError) for index, x in enumerate(value)]


PARAMETERS = ParameterTable("experiment_runner", notes=(
    "Plays a protocol plan on a robot (JointTrajectory windows) and publishes ExperimentStage markers at every stage "
    "boundary. Nothing moves until `ros2 service call /experiment_runner/start std_srvs/srv/Trigger` (or "
    "autostart). Every number is checked at start; a bad one is one line and exit code 2.",
    "deviation_threshold and max_joint_state_age: lower at once, higher refused while a plan plays; the others "
    "live until the start; after the run, nothing."), rows=(
    NodeParameter("robot_file", "", f"robot description (YAML); '' = the ER3A (config/robots/er3a.yaml); {AT_START}",
                  check=readable_file_path),
    NodeParameter("plan_file", "", "protocol plan (YAML: robot-dynid protocol, save_plan); '' = build one from the "
                  f"parameters below; {AT_START}", check=readable_file_path),
    NodeParameter("cycles", 24, f"cycles of the built plan, 1 to {MAX_CYCLES} (the plan at most "
                  f"{MAX_REFERENCE_SAMPLES:,} samples at rate_hz); {AT_START}", check=integer_in(1, MAX_CYCLES)),
    NodeParameter("excitation_periods", 2, f"excitation periods per cycle of the built plan, 1 to "
                  f"{MAX_EXCITATION_PERIODS}; {AT_START}", check=integer_in(1, MAX_EXCITATION_PERIODS)),
    NodeParameter("excitation_count", 1, "distinct random excitations per cycle of the built plan (seeds 0, 1, ...), "
                  f"1 to {MAX_EXCITATION_COUNT}; several identify what one leaves poorly excited; {AT_START}",
                  check=integer_in(1, MAX_EXCITATION_COUNT)),
    NodeParameter("speed_fractions", [0.05, 0.2, 0.4, 0.6, 0.8, 1.0], "friction speed levels of the built plan, "
                  f"fractions of the velocity limits in (0, 1], 1 to {MAX_SPEED_LEVELS} levels; {AT_START}",
                  check=speed_levels),
    NodeParameter("friction_level_duration", 0.0, "time per friction speed level; 0 = the shortest that fits; at "
                  f"most {MAX_LEVEL_DURATION:g}; {AT_START}", "s", in_range("s", 0.0, MAX_LEVEL_DURATION)),
    NodeParameter("warmup_duration", 180.0, f"warm-up stage of the built plan (0 = none), at most "
                  f"{MAX_STAGE_DURATION:g}; {AT_START}", "s", in_range("s", 0.0, MAX_STAGE_DURATION)),
    NodeParameter("command_topic", "joint_trajectory", "trajectory_msgs/JointTrajectory commands out (a "
                  "joint_trajectory_controller's); read at start: the publisher"),
    NodeParameter("joint_states_topic", "joint_states", "measured sensor_msgs/JointState in (deviation check, hold "
                  "pose); read at start: the subscription"),
    qos_parameter(what="joint_states_topic"),
    NodeParameter("stage_topic", "experiment_stage", "robot_dynid/msg/ExperimentStage markers out; read at start: "
                  "the publisher"),
    NodeParameter("experiment_id", "", f"ExperimentStage.experiment_id, e.g. robot2_test1; {BEFORE_START}",
                  live=True),
    NodeParameter("rate_hz", 100.0, f"reference sample rate, {MIN_RATE_HZ:g} to {MAX_RATE_HZ:g}; {AT_START}", "Hz",
                  in_range("Hz", MIN_RATE_HZ, MAX_RATE_HZ)),
    NodeParameter("window_duration", 2.0, f"reference per trajectory message, > 0 and at most {MAX_WINDOW:g}; "
                  f"{AT_START}", "s", in_range("s", 0.0, MAX_WINDOW, allow_minimum=False)),
    NodeParameter("lookahead", 1.0, f"each window is sent this long before it starts, 0 to {MAX_WINDOW:g}; "
                  f"{AT_START}", "s", in_range("s", 0.0, MAX_WINDOW)),
    NodeParameter("deviation_threshold", 0.1, "abort when a joint deviates more than this from the reference (a NaN "
                  f"or inf measured position aborts at once), > 0 and at most {MAX_DEVIATION:g}; {SAFETY_BOUND}",
                  "rad", in_range("rad", 0.0, MAX_DEVIATION, allow_minimum=False), live=True),
    NodeParameter("autostart", False, "start by itself once a joint state and a command subscriber are there, "
                  f"without ~/start; {BEFORE_START} (true again retries a refused autostart)", live=True),
    NodeParameter("start_tolerance", DEFAULT_START_TOLERANCE, "per joint: farther than this from the plan's start "
                  "pose, approach it first; 0 to deviation_threshold (the node refuses to start otherwise); "
                  f"{BEFORE_START}", "rad", in_range("rad", 0.0, MAX_DEVIATION), live=True),
    NodeParameter("approach_speed_fraction", DEFAULT_APPROACH_SPEED_FRACTION, "the approach move's share of each "
                  "joint's velocity and acceleration limits, 0 to 1; 0 = no approach: a start farther than "
                  f"start_tolerance is refused; {BEFORE_START}",
                  check=lambda value, field: validators.fraction(value, field, DynIdError, allow_zero=True),
                  bounds=(0.0, 1.0), live=True),
    NodeParameter("max_joint_state_age", DEFAULT_MAX_POSE_AGE, "a start waits for a joint state received at most "
                  "this long ago; running, none for this long aborts the run; an abort holds the measured pose only "
                  f"if this recent (and finite), else the last commanded point; > 0 and at most {MAX_STATE_AGE:g}; "
                  f"{SAFETY_BOUND}", "s", in_range("s", 0.0, MAX_STATE_AGE, allow_minimum=False), live=True),
    NodeParameter("start_delay", 2.0, f"from an accepted start to the first motion (approach or plan), 0 to "
                  f"{MAX_START_DELAY:g}; {BEFORE_START}", "s", in_range("s", 0.0, MAX_START_DELAY), live=True),
    NodeParameter("stop_duration", 0.2, "time to reach the hold pose on abort, > 0 and at most "
                  f"{MAX_STOP_DURATION:g}; {BEFORE_START}", "s",
                  in_range("s", 0.0, MAX_STOP_DURATION, allow_minimum=False), live=True),
))
"""The experiment_runner's parameters (:class:`~robot_dynid.nodes.node_runtime.ParameterTable`)."""


class ExperimentRunnerNode(Node):
    def __init__(self, **node_options):
        """``node_options``: rclpy Node keyword arguments, e.g. ``context`` (one process, several nodes)."""
        super().__init__("experiment_runner", **node_options)
        self.run = None     # until built below, the live parameters' checks leave the rules of a run to it
        values = declare_table(self, PARAMETERS, apply={
            "experiment_id": lambda value: setattr(self, "experiment_id", value),
            "deviation_threshold": lambda value: setattr(self, "threshold", value), "autostart": self.set_autostart,
            "start_tolerance": lambda value: setattr(self.run, "start_tolerance", value),
            "approach_speed_fraction": lambda value: setattr(self.run, "approach_speed_fraction", value),
            "max_joint_state_age": self.set_max_joint_state_age,
            "start_delay": lambda value: setattr(self, "start_delay", value),
            "stop_duration": lambda value: setattr(self, "stop_duration", value)}, rules={
            **{name: self.run_rule for name in (
                "experiment_id", "autostart", "approach_speed_fraction", "start_delay", "stop_duration")},
            "deviation_threshold": lambda check: self.run_rule(check, in_use=lambda: self.threshold,
                                                               idle=self.tolerance_below),
            "start_tolerance": lambda check: self.run_rule(check, idle=self.tolerance_above),
            "max_joint_state_age": lambda check: self.run_rule(check, in_use=lambda: self.watchdog.timeout)})
        robot_file = values["robot_file"] or str(find_package_file("config", "robots", "er3a.yaml"))
        plan_file, self.experiment_id, self.threshold = values["plan_file"], values["experiment_id"], \
            values["deviation_threshold"]
        self.autostart, self.start_delay = values["autostart"], values["start_delay"]
        self.stop_duration = values["stop_duration"]
        robot = load_robot(robot_file)
        plan = load_plan(plan_file) if plan_file else build_protocol(
            robot, cycles=values["cycles"], excitation_periods=values["excitation_periods"],
            excitation_count=values["excitation_count"], speed_fractions=values["speed_fractions"],
            friction_level_duration=values["friction_level_duration"] or None,
            warmup_duration=values["warmup_duration"])
        self.schedule = ExperimentSchedule(plan, values["rate_hz"], values["window_duration"])
        self.run = ExperimentRun(self.schedule, values["lookahead"], robot, values["start_tolerance"],
                                 values["approach_speed_fraction"], values["max_joint_state_age"], self.threshold)
        self.start_ns = None            # plan time 0 [ns], once started
        self.autostart_refusal = None   # why autostart gave up (not a "not ready" reason)
        self.measured = []
        self.last_pose = None
        self.last_pose_ns = None        # receipt time of last_pose on the node's clock [ns]
        self.watchdog = FeedbackWatchdog(values["max_joint_state_age"])
        command_topic, states_topic, stage_topic = (values[name] for name in (
            "command_topic", "joint_states_topic", "stage_topic"))
        self.command_publisher = self.create_publisher(JointTrajectory, command_topic, 10)
        self.stage_publisher = self.create_publisher(ExperimentStage, stage_topic, STAGE_MARKERS_OUT)
        self.create_subscription(JointState, states_topic, self.on_joint_state,
                                 subscription_qos(values["joint_states_qos"], 100))
        self.create_service(Trigger, "~/start", self.on_start)
        self.create_service(Trigger, "~/abort", self.on_abort)
        self.create_timer(0.01, self.on_timer)
        self.get_logger().info(
            f"plan {plan_file or 'built'} for {plan.robot_name}: {plan.cycles} cycle(s), {plan.duration:.1f} s, "
            f"{len(self.schedule.events)} stage markers on {stage_topic}; {len(self.schedule.windows)} windows "
            f"on {command_topic}; " + ("starting once a controller subscribes and a joint state arrives on "
                                       f"{states_topic} (autostart)" if self.autostart else
                                       f"waiting for {self.resolve_service_name('~/start')}"))

    def run_rule(self, check=None, in_use=None, idle=None):
        """The :func:`declare` check of a live parameter of the run: ``check(value, field)``, then, once the run
        is built (the start leaves its rules to :class:`ExperimentRun`): ``idle(value, field)`` before the start;
        while a plan plays (the approach too), with ``in_use`` (the value in use of a safety bound) a value above
        it is refused and a lower one taken, without it every change is refused; a run over (done, aborted)
        refuses every change: the node plays one run, nothing is left to apply it to."""
        def checked(value, field):
            value = value if check is None else check(value, field)
            if self.run is None:
                return value
            state = self.run.state
            if state == "idle" and idle is not None:
                idle(value, field)
            elif state == "running" and in_use is None:
                raise DynIdError(f"{field} cannot change while a plan plays; it can before the start")
            elif state == "running" and value > in_use():
                raise DynIdError(f"{field} {value:g} would loosen the safety bound in use ({in_use():g}) while a "
                                 "plan plays: refused; a lower value is taken at once, a higher one before the start")
            elif state in ("done", "aborted"):
                raise DynIdError(f"{field} cannot change: the run is over ({state}) and the node plays one run; "
                                 "restart it for another")
            return value
        return checked

    def tolerance_below(self, threshold, field):
        """Before the start: a ``deviation_threshold`` under ``start_tolerance`` is refused."""
        try:
            check_start_tolerance(self.run.start_tolerance, threshold)
        except DynIdError as error:
            raise DynIdError(f"{field}: {error}") from None

    def tolerance_above(self, tolerance, field):
        """Before the start: a ``start_tolerance`` over ``deviation_threshold`` is refused."""
        try:
            check_start_tolerance(tolerance, self.threshold)
        except DynIdError as error:
            raise DynIdError(f"{field}: {error}") from None

    def set_autostart(self, value):
        """``autostart`` set: true (again) tries to start on the next tick, also after a refused autostart."""
        self.autostart, self.autostart_refusal = value, None

    def set_max_joint_state_age(self, value):
        """``max_joint_state_age`` set: the start's pose age, the hold's, and the watchdog's silence."""
        self.run.max_pose_age = value
        self.watchdog.timeout = value

    def plan_time(self, stamp_ns):
        return (stamp_ns - self.start_ns) * 1e-9

    def stamp(self, plan_time):
        return Time(nanoseconds=self.start_ns + round(plan_time * 1e9)).to_msg()

    def on_joint_state(self, msg):
        try:
            q = positions_in_order(msg.name, msg.position, self.schedule.joint_names)
        except DynIdError as error:
            self.get_logger().warning(f"joint state: {error}", throttle_duration_sec=5.0)
            return
        self.last_pose, self.last_pose_ns = q, self.get_clock().now().nanoseconds
        self.watchdog.state_received(self.last_pose_ns * 1e-9)
        if self.run.state == "running":
            t = self.plan_time(Time.from_msg(msg.header.stamp).nanoseconds)
            if self.run.monitored(t, q):
                self.measured.append((t, q))

    def start(self):
        """Start the run (:meth:`ExperimentRun.start`); return what happens. StartRefused says why not."""
        if waiting_for_clock(self):
            raise NotReady("use_sim_time is true and no /clock message has arrived: the plan's time would jump "
                           "when the first one does")
        now_ns = self.get_clock().now().nanoseconds
        age = 0.0 if self.last_pose_ns is None else (now_ns - self.last_pose_ns) * 1e-9
        started = self.run.start(self.last_pose, self.command_publisher.get_subscription_count(), age)
        motion_ns = now_ns + round(self.start_delay * 1e9)
        self.start_ns = motion_ns + round(self.run.schedule.approach_duration * 1e9)
        message = f"starting in {self.start_delay:g} s: {started.describe()}"
        self.get_logger().info(message)
        return message

    def on_start(self, request, response):
        try:
            response.message = self.start()
            response.success = True
        except StartRefused as error:
            response.success, response.message = False, f"not starting: {error}"
            self.get_logger().warning(response.message)
        return response

    def on_timer(self):
        if self.run.state == "idle":
            if self.autostart and self.autostart_refusal is None:
                try:
                    self.start()
                except NotReady:
                    pass   # retried on the next tick
                except StartRefused as error:
                    self.autostart_refusal = str(error)
                    self.get_logger().error(f"autostart: not starting: {error}; idle until "
                                            f"{self.resolve_service_name('~/start')} is called")
            return
        if self.run.state != "running":
            return
        now_ns = self.get_clock().now().nanoseconds
        silence = self.watchdog.check(now_ns * 1e-9)
        if silence is not None:
            self.abort(f"aborting: no joint state for {silence:.2f} s (max_joint_state_age "
                       f"{self.watchdog.timeout:g} s): the arm moves unmonitored", self.get_logger().error)
            return
        if self.measured:
            times, poses = zip(*self.measured)
            self.measured = []
            deviation = self.run.schedule.deviation(times, poses, self.threshold)
            if deviation.exceeded:   # a non-finite measurement: hold where the controller is, not where measured
                self.abort(f"aborting: {deviation.describe()}", self.get_logger().error, deviation.finite)
                return
        try:
            chunks, events = self.run.due(self.plan_time(now_ns))
        except ReferenceLate as error:   # hold where the controller holds, not at a pose measured before the stall
            self.abort(f"aborting: {error}", self.get_logger().error, measured=False)
            return
        for chunk in chunks:
            msg = trajectory_msg(self.schedule.joint_names, chunk.time_from_start, chunk.q, chunk.qd, chunk.qdd)
            msg.header.stamp = self.stamp(chunk.start_time)
            self.command_publisher.publish(msg)
        for event in events:
            self.publish_event(event)
        if self.run.state == "done":
            self.get_logger().info(f"plan done ({self.schedule.duration:.1f} s); idle")

    def publish_event(self, marker):
        """Publish a plan's stage marker (stamped in plan time) with the absolute stamp and experiment id."""
        msg = ExperimentStage(**{**marker.message_fields(), "experiment_id": self.experiment_id})
        msg.header.stamp = self.stamp(marker.stamp)
        self.stage_publisher.publish(msg)

    def abort(self, reason, log, measured=True):
        """End the run: hold (:meth:`ExperimentRun.hold_pose`: the last measured pose if ``measured``, finite
        and recent, else the last commanded point), end the stage playing; return what it holds."""
        now_ns = self.get_clock().now().nanoseconds
        t = self.plan_time(now_ns)
        age = (now_ns - self.last_pose_ns) * 1e-9 if measured and self.last_pose_ns is not None else math.inf
        hold = self.run.hold_pose(t, self.last_pose if measured else None, age)
        event = self.run.abort(t)
        still = np.zeros((1, hold.pose.size))
        self.command_publisher.publish(trajectory_msg(self.schedule.joint_names, [self.stop_duration],
                                                      hold.pose[None], still, still))
        if event is not None:
            self.publish_event(event)
        log(f"{reason}; holding {hold.source}")
        return hold.source

    def on_abort(self, request, response):
        if self.run.state != "running":
            response.success = False
            response.message = "not started" if self.run.state == "idle" else f"already {self.run.state}"
            return response
        source = self.abort("aborted on request", self.get_logger().warning)
        response.success = True
        response.message = f"aborted; holding {source}"
        return response


def main(args=None):
    return spin_node(ExperimentRunnerNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
