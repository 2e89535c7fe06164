"""identifier node: identifies the dynamic model from live joint states, stage by stage.

Samples of JointState (joints matched by name; position [rad], velocity [rad/s], effort [N m])
are collected during stages of the kinds in ``stages`` (ExperimentStage markers); at each such
stage's end, or on the ``~/identify`` service (std_srvs/Trigger), a model is identified
(:mod:`robot_dynid.estimation.streaming`) and, when accepted, published as IdentifiedModel
(transient local, depth 1) and written to ``model_file``. IdentificationStatus goes out every
``status_period`` s and after every event.

Stages are cut at their markers' header stamps, not at their arrival: samples and markers are
put back in stamp order (:class:`robot_dynid.recordings.stages.StampOrder`) with
``stage_latency`` s of slack, and released early when the joint states stop for that long (on ROS
time: with use_sim_time, joint states that arrive before the first /clock message count as arrived at it).

The node spins rclpy's EventsExecutor where the distro has one (Jazzy and later; Humble: the default
executor): at 1 kHz it takes less CPU than the default executor's Python dispatch (BENCHMARKS.md).

JointState messages that cannot be used (:mod:`robot_dynid.recordings.joint_states`: empty or duplicate
names, a joint missing, array lengths, NaN/inf) are skipped and counted, as are implausible
samples; each reason is logged once and listed in the status warnings. A model is published only
if it passes the quality gate (``max_holdout_rsd``, ``max_condition``), the first one included;
a rejected model's reason goes out in IdentificationStatus.

IdentificationStatus ``state`` follows one rule: STATE_COLLECTING inside a selected stage,
STATE_IDENTIFYING while a fit runs, STATE_ERROR when the last identification failed, and otherwise
STATE_CONVERGED while a model is in use (published) and STATE_IDLE while none is (waiting for a
stage, or the only candidates so far were rejected): CONVERGED never stands beside "no model in
use". The message says what the last event did (accepted, or rejected keeping version N).

Torques are checked at each stage's end as every command checks them (``check_torque_scale``, on by default:
:func:`robot_dynid.estimation.torque_scale.check_torque_scale` on the stage's slow samples; motor currents
passed as torques are an identification error in the status, naming the joint).

Payloads: with ``payload`` among ``stages``, a payload stage (a tool or load mounted, the wrist
moving) identifies the payload with the arm's model fixed (``arm_model_file``, else the model in
use), at ``payload_frame`` and, when ``payload_mass`` [kg] > 0, with that mass known; the arm's model
with the payload attached passes the same quality gate and is published and written like any model
(its IdentifiedModel residuals and condition number are the payload fit's). A payload stage without
an arm model, or whose data determine no payload, is an identification error in the status.

Friction tracking: with ``track_friction`` the node also follows the friction of the model in use (the last
accepted, else ``arm_model_file``) from every joint state, whatever the arm does
(:class:`robot_dynid.estimation.friction_tracking.OnlineFrictionTracking`): the rigid-body base parameters
fixed, RLS with forgetting ``tracking_forgetting`` updates the friction (and the offsets with
``track_offsets``) in batches of 50 samples; once the tracked parameters moved from the model in use's by more
than ``tracking_change`` (relative, the largest over the parameters), the tracked model is offered to the quality
gate (``max_holdout_rsd``, ``max_condition``, ``require_improvement``, on the batch not yet used by the
estimate) and, when it passes, published and written like any model (the feedforward node swaps it in). The
status carries the tracked parameters and their standard deviations. Models whose friction drifts are not
tracked (a warning).

A ``model_file`` that cannot be written when a model is accepted (a directory in its place, a full
disk) is one error log line, the status message and a status warning; the model is published and
used all the same. The identification options (friction model, estimator, consistent fit) are declared from
:data:`robot_dynid.estimation.identification_options.OPTIONS`, as the command line's arguments are: description,
unit, range, read-only. Numeric parameters are checked at start against the intervals their
descriptions state (one line naming the parameter, exit 2), ``dead_band`` also against every
joint's velocity limit, ``model_file`` against a directory in its place or a file above it.

Set while the node runs (``ros2 param set``): the quality gate (``require_improvement``, ``max_holdout_rsd``,
``max_condition``: the next identification), ``status_period``, ``stage_latency`` (what arrives next) and
``model_file`` (the next accepted model) are live; the rest is read at start (read-only).
"""
from __future__ import annotations

import dataclasses

from sensor_msgs.msg import JointState
from rclpy.node import Node
from std_msgs.msg import Header
from std_srvs.srv import Trigger

from robot_dynid.errors import DynIdError
from robot_dynid.estimation.friction_tracking import DEFAULT_FORGETTING, OnlineFrictionTracking
from robot_dynid.estimation.identification import settings_from_options
from robot_dynid.estimation.identification_options import OPTIONS
from robot_dynid.estimation.payload import PayloadSettings
from robot_dynid.estimation.quality_gate import GATE_DEFAULTS, GATE_RANGES, gate_interval
from robot_dynid.estimation.streaming import StreamingIdentifier, StreamingSettings, fit_metrics, preload
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.payload import MAX_MASS, frame_placement
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.msg import ExperimentStage, IdentificationStatus, IdentifiedModel
from robot_dynid.nodes.node_runtime import (MAX_TIMER_PERIOD, MIN_TIMER_PERIOD, MODEL_QOS, STAGE_MARKERS_IN,
                                            NodeParameter, ParameterTable, declare_table, in_range, integer_in,
                                            qos_parameter, readable_file_path, seconds, set_period, spin_node,
                                            subscription_qos, timer_period, writable_file_path)
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.conditioning import MAX_GIVEN_WINDOW
from robot_dynid.recordings.joint_states import JointStateSelector
from robot_dynid.recordings.recording import describe_dropped
from robot_dynid.recordings.stages import STAGE_KINDS, StageMarker, StampOrder, join_sub_stages
from robot_dynid.reports.tables import std_description

__all__ = ["STATE_DEPTH", "MAX_SAMPLES", "NEXT_IDENTIFICATION", "PARAMETERS", "IdentifierNode", "idle_period", "main"]

STATE_DEPTH = 2000   # joint states queued [1]: 2 s at 1 kHz while a fit runs


MAX_SAMPLES = 1_000_000   # buffered samples [1]: about 0.2 GB for 6 joints
NEXT_IDENTIFICATION = "live: applies to the next identification"

PARAMETERS = ParameterTable("identifier", notes=(
    "The identification options (friction ... check_torque_scale) come from one table, "
    "robot_dynid/estimation/identification_options.py, as robot-dynid identify's arguments do (same defaults, "
    "intervals and units).",), rows=(
    NodeParameter("robot_file", "", "robot description (YAML); '' = the ER3A (config/robots/er3a.yaml)",
                  check=readable_file_path),
    *(NodeParameter(option.name, "" if option.default is None else option.default, option.describe(),
                    check=option.check, bounds=option.bounds()) for option in OPTIONS.values() if option.node),
    NodeParameter("stages", ["excitation"], f"stage kinds whose samples are identified on, of {list(STAGE_KINDS)}; "
                  "their end triggers identification"),
    NodeParameter("pool_stages", False, "identify over all selected stages so far instead of the last one"),
    NodeParameter("max_samples", 20000, "buffered samples before folding into normal equations (bounds memory), in "
                  f"{4 * StreamingSettings.window}..{MAX_SAMPLES}", "1",
                  integer_in(4 * StreamingSettings.window, MAX_SAMPLES)),
    NodeParameter("derivative_window", 0.0, "window of the accelerations' cubic fit of the positions (velocities as "
                  f"recorded), in [0, {MAX_GIVEN_WINDOW:g}]; 0 = {StreamingSettings.window} samples at any rate. "
                  "Fixed in samples at the stream's first rate, at most max_samples / 4; recorded in the model's "
                  "provenance.conditioning", "s", in_range("s", 0.0, MAX_GIVEN_WINDOW)),
    NodeParameter("joint_states_topic", "joint_states", "sensor_msgs/JointState: position [rad], velocity [rad/s], "
                  "effort [N m]"),
    qos_parameter(what="joint_states_topic"),
    NodeParameter("stage_topic", "experiment_stage", "robot_dynid/msg/ExperimentStage start and end markers"),
    NodeParameter("model_topic", "identified_model", "robot_dynid/msg/IdentifiedModel out (transient local, depth 1)"),
    NodeParameter("status_topic", "identification_status", "robot_dynid/msg/IdentificationStatus out"),
    NodeParameter("model_file", "", "model artifact (YAML) written on every accepted model; '' = none. A failed "
                  "write is an error log line and a status warning; the model is still published; live: applies to "
                  "the next accepted model", check=writable_file_path, live=True),
    NodeParameter("require_improvement", True, "accept a model only if its hold-out RMS residual is not larger than "
                  f"the model in use's; {NEXT_IDENTIFICATION}", live=True),
    NodeParameter("max_holdout_rsd", GATE_DEFAULTS["max_holdout_rsd"], "quality gate: reject any model (the first "
                  "too) whose hold-out RSD, sqrt(sum residual^2 / sum torque^2), is not below this, in "
                  f"{gate_interval('max_holdout_rsd')}; {NEXT_IDENTIFICATION}", "1",
                  in_range("1", *GATE_RANGES["max_holdout_rsd"], allow_minimum=False), live=True),
    NodeParameter("max_condition", GATE_DEFAULTS["max_condition"], "quality gate: reject a model whose condition "
                  "number (column-scaled base regressor) is not below this: poorly excited data; in "
                  f"{gate_interval('max_condition')}; {NEXT_IDENTIFICATION}", "1",
                  in_range("1", *GATE_RANGES["max_condition"], allow_minimum=False), live=True),
    NodeParameter("status_period", 1.0, f"period of IdentificationStatus, in [{MIN_TIMER_PERIOD:g}, "
                  f"{MAX_TIMER_PERIOD:g}]; live: the next comes one new period after the set", "s", timer_period,
                  live=True),
    NodeParameter("stage_latency", 0.5, "joint states and stage markers may arrive this far out of stamp order, in "
                  "[0, 60]; stages are cut at the markers' stamps, samples used this much later; live: applies to "
                  "what arrives next", "s", in_range("s", 0.0, 60.0), live=True),
    NodeParameter("arm_model_file", "", "payload stages (payload in stages): the arm's model artifact (YAML) fixed "
                  "while a tool's payload is identified; '' = the model in use (identified on earlier stages)",
                  check=readable_file_path),
    NodeParameter("payload_frame", "", "payload stages: the payload's frame, fixed to the last link ('' = the child "
                  "link of the last joint; e.g. tool0)"),
    NodeParameter("payload_mass", 0.0, f"payload stages: the payload's known mass, in [0, {MAX_MASS:g}]; 0 = "
                  "estimated", "kg", in_range("kg", 0.0, MAX_MASS)),
    NodeParameter("track_friction", False, "follow the friction of the model in use from every joint state (RLS with "
                  "forgetting, rigid body fixed); publish a tracked model that changed and passes the gate"),
    NodeParameter("tracking_forgetting", DEFAULT_FORGETTING, "track_friction: RLS forgetting factor per sample, in "
                  "(0, 1]; memory about 1 / (1 - factor) samples", "1", in_range("1", 0.0, 1.0, allow_minimum=False)),
    NodeParameter("tracking_change", 0.1, "track_friction: publish a tracked model when a tracked parameter moved by "
                  "more than this fraction of the model in use's, in (0, 10]", "1",
                  in_range("1", 0.0, 10.0, allow_minimum=False)),
    NodeParameter("track_offsets", False, "track_friction: track the torque offsets too"),
))
"""The identifier's parameters (:class:`~robot_dynid.nodes.node_runtime.ParameterTable`)."""


class IdentifierNode(Node):
    def __init__(self, **node_options):
        """``node_options``: rclpy Node keyword arguments, e.g. ``context`` (one process, several nodes)."""
        super().__init__("identifier", **node_options)
        values = declare_table(self, PARAMETERS, apply={
            "model_file": lambda value: setattr(self, "model_file", value),
            **{name: self.gate_setter(name) for name in ("require_improvement", "max_holdout_rsd", "max_condition")},
            "status_period": lambda value: set_period(self.status_timer, value), "stage_latency": self.set_latency})
        robot_file = values["robot_file"] or str(find_package_file("config", "robots", "er3a.yaml"))
        options = {name: values[name] for name, option in OPTIONS.items() if option.node}
        stages, payload_frame, arm_model_file = values["stages"], values["payload_frame"], values["arm_model_file"]
        self.model_file, self.latency = values["model_file"], values["stage_latency"]
        self.track_friction, self.track_offsets = values["track_friction"], values["track_offsets"]
        self.tracking_forgetting, self.tracking_change = values["tracking_forgetting"], values["tracking_change"]
        self.robot = load_robot(robot_file)
        if payload_frame:
            try:
                frame_placement(self.robot, payload_frame)
            except DynIdError as error:
                raise DynIdError(f"parameter payload_frame: {error}") from None
        arm_model = DynamicModel.load(arm_model_file) if arm_model_file else None
        settings = StreamingSettings(settings_from_options(options, self.robot, label=lambda name: f"parameter {name}"),
                                     stages=tuple(stages), pool_stages=values["pool_stages"],
                                     max_samples=values["max_samples"],
                                     window_seconds=values["derivative_window"] or None,
                                     require_improvement=values["require_improvement"],
                                     max_holdout_rsd=values["max_holdout_rsd"], max_condition=values["max_condition"],
                                     payload=PayloadSettings(frame=payload_frame or None,
                                                             mass=values["payload_mass"] or None))
        preload()
        try:
            self.session = StreamingIdentifier(self.robot, settings, arm_model=arm_model)
        except DynIdError as error:
            raise DynIdError(f"arm_model_file {arm_model_file}: {error}") from None
        self.tracking = None
        if self.track_friction and arm_model is not None:
            self.start_tracking(arm_model, f"arm_model_file {arm_model_file}")
        self.order = StampOrder(self.latency)
        self.selector = JointStateSelector(self.robot.joint_names)
        self.last_sample_arrival = None
        self.state, self.message = IdentificationStatus.STATE_IDLE, "waiting for a stage"
        self.file_problem = ""   # why the last accepted model is not in model_file ('' = written, or no file)
        self.model_publisher = self.create_publisher(IdentifiedModel, values["model_topic"], MODEL_QOS)
        self.status_publisher = self.create_publisher(IdentificationStatus, values["status_topic"], 10)
        self.create_subscription(JointState, values["joint_states_topic"], self.on_joint_state,
                                 subscription_qos(values["joint_states_qos"], STATE_DEPTH))
        self.create_subscription(ExperimentStage, values["stage_topic"], self.on_stage, STAGE_MARKERS_IN)
        self.create_service(Trigger, "~/identify", self.on_identify)
        self.status_timer = self.create_timer(values["status_period"], self.publish_status)
        self.idle_timer = self.create_timer(idle_period(self.latency), self.on_idle)
        self.get_logger().info(f"identifying {self.robot.name} ({robot_file}) with {options['method']}, friction "
                               f"{options['friction']}, "
                               f"on stages {list(stages)}; {values['joint_states_topic']} -> {values['model_topic']}")

    def set_latency(self, value):
        """``stage_latency`` set: the stamp order's slack and the period of the check for stopped joint states."""
        self.latency = self.order.latency = value
        set_period(self.idle_timer, idle_period(value))

    def gate_setter(self, name):
        """``apply`` of a live quality-gate parameter: the session's settings with ``name`` replaced."""
        def apply(value):
            self.session.settings = dataclasses.replace(self.session.settings, **{name: value})
        return apply

    def on_joint_state(self, msg):
        stamp = seconds(msg.header.stamp)
        values = self.selector.select(msg.name, msg.position, msg.velocity, msg.effort)
        if isinstance(values, str) or values.velocity is None or values.effort is None:
            self.skip(values if isinstance(values, str) else "no velocity or effort", stamp)
            return
        self.last_sample_arrival = self.get_clock().now()
        if self.tracking is not None:
            self.track(stamp, values)
        self.dispatch(self.order.add_sample(stamp, (stamp, values.position, values.velocity, values.effort)))

    def skip(self, reason, stamp):
        """Count a sample not used, and say why the first time a reason occurs."""
        if reason not in self.session.dropped.counts:
            self.get_logger().warning(f"JointState stamped {stamp:.6f} s not used: {reason} (counted; "
                                      "said once per reason)")
        self.session.dropped.add(reason, stamp)

    def on_stage(self, msg):
        try:
            marker = StageMarker.from_fields(seconds(msg.header.stamp), msg.kind, msg.cycle, msg.start, msg.label,
                                             msg.joint_name, msg.speed_fraction, msg.direction, msg.experiment_id)
        except DynIdError as error:
            self.get_logger().warning(f"ExperimentStage ignored: {error}")
            return
        self.dispatch(self.order.add_marker(marker))

    def on_idle(self):
        """Joint states stopped for ``stage_latency``: nothing more can come before what is held."""
        now = self.get_clock().now()
        if self.last_sample_arrival is not None and self.last_sample_arrival.nanoseconds == 0:
            # they arrived before the first /clock message (use_sim_time: ROS time 0), not that long ago
            self.last_sample_arrival = now
        if self.order.pending and (self.last_sample_arrival is None or (
                now - self.last_sample_arrival).nanoseconds * 1e-9 > self.latency):
            self.dispatch(self.order.flush())

    def dispatch(self, items):
        """Hand samples and markers released in stamp order to the session, one stage per run of sub-stages."""
        for what, payload in join_sub_stages(items):
            if what == "marker":
                self.on_marker(payload)
                continue
            known = set(self.session.dropped.counts)
            if not self.session.add_sample(*payload):
                new = set(self.session.dropped.counts) - known
                for reason in new:
                    self.get_logger().warning(f"sample at {payload[0]:.6f} s not used: {reason} (counted; said "
                                              "once per reason)")

    def on_marker(self, marker):
        if marker.start:
            self.session.start_stage(marker.kind)
            self.state = IdentificationStatus.STATE_COLLECTING
            self.message = f"collecting stage {marker.kind} of cycle {marker.cycle} from {marker.stamp:.3f} s"
            self.publish_status()
        else:
            self.run(lambda: self.session.end_stage(marker.kind))

    def on_identify(self, request, response):
        response.success, response.message = self.run(self.session.identify_now)
        return response

    def run(self, identify):
        """Identify, publish an accepted model; return (success, message)."""
        self.state = IdentificationStatus.STATE_IDENTIFYING
        try:
            outcome = identify()
        except DynIdError as error:
            self.state, self.message = IdentificationStatus.STATE_ERROR, f"identification failed: {error}"
            self.get_logger().error(self.message)
            self.publish_status()
            return False, self.message
        if outcome is None:
            self.state, self.message = self.settled_state(), "stage ended; not a selected kind"
            return True, self.message
        self.message = outcome.message
        if outcome.accepted:   # one severity per call site: rclpy refuses a call site that changes it
            self.get_logger().info(outcome.message)
        else:
            self.get_logger().warning(outcome.message)
        if outcome.accepted:
            self.publish_model(outcome.model)
            if self.track_friction:
                self.start_tracking(outcome.model, f"model version {self.session.version}")
        self.state = self.settled_state()
        self.publish_status()
        return True, self.message

    def start_tracking(self, model, what):
        """Track the friction of ``model`` from now on (a warning, and no tracking, when it cannot be)."""
        try:
            self.tracking = OnlineFrictionTracking(
                model, self.tracking_forgetting,
                self.tracking_change, self.track_offsets, max_holdout_rsd=self.session.settings.max_holdout_rsd,
                max_condition=self.session.settings.max_condition,
                require_improvement=self.session.settings.require_improvement)
        except DynIdError as error:
            self.tracking = None
            self.get_logger().warning(f"not tracking the friction of {what}: {error}")
            return
        self.get_logger().info(f"tracking the friction of {what}: {list(self.tracking.tracker.names)}")

    def track(self, stamp, values):
        """One sample into the friction tracking; publish a tracked model that changed and passed the gate."""
        try:
            outcome = self.tracking.add(stamp, values.position, values.velocity, values.effort)
        except DynIdError as error:
            self.get_logger().warning(f"friction tracking: sample at {stamp:.6f} s not used: {error}",
                                      throttle_duration_sec=5.0)
            return
        if outcome is None:
            return
        if not outcome.accepted:
            self.get_logger().warning(outcome.message, throttle_duration_sec=5.0)
            self.message = outcome.message
            return
        self.session.model = outcome.model
        self.session.version += 1
        self.message = f"model version {self.session.version} from friction tracking: {outcome.message}"
        self.get_logger().info(self.message)
        self.publish_model(outcome.model)
        self.state = self.settled_state()
        self.publish_status()

    def settled_state(self):
        """STATE_CONVERGED while a model is in use (published), else STATE_IDLE: never CONVERGED without a model."""
        return IdentificationStatus.STATE_CONVERGED if self.session.model is not None else \
            IdentificationStatus.STATE_IDLE

    def publish_model(self, model):
        """Write ``model_file`` (if set), then publish: who hears of a model finds its file written. A file that
        cannot be written is one error line and a status warning; the model is published all the same."""
        self.file_problem = ""
        if self.model_file:
            try:
                model.save(self.model_file)
            except (OSError, DynIdError) as error:
                self.file_problem = (f"model version {self.session.version} not written to model_file "
                                     f"{self.model_file}: {error}; published on the model topic all the same")
                self.message = f"{self.message}; {self.file_problem}"
                self.get_logger().error(self.file_problem)
        metrics = fit_metrics(model)
        self.model_publisher.publish(IdentifiedModel(
            header=self.header(), robot_name=self.robot.name, joint_names=list(model.joint_names),
            friction_model=model.friction.name, base_parameter_names=list(model.base.names),
            base_parameter_expressions=list(model.base.expressions()),
            base_parameter_values=model.values.tolist(), base_parameter_std=model.std.tolist(),
            std_method=model.std_method, interval_dof=model.interval_dof or 0,
            residual_rms=[float(metrics["residual_rms"][j]) for j in model.joint_names],
            condition_number=float(metrics["condition_number"]), n_samples=int(metrics["n_samples"]),
            version=self.session.version, method=model.method, artifact_yaml=model.to_yaml()))

    def header(self):
        return Header(stamp=self.get_clock().now().to_msg())

    def publish_status(self):
        model = self.session.model
        metrics = fit_metrics(model) if model is not None else {}
        self.status_publisher.publish(IdentificationStatus(
            header=self.header(), state=self.state, method=self.session.method,
            samples_used=int(metrics.get("n_samples", 0)), samples_dropped=self.session.n_dropped,
            progress=min(1.0, self.session.stage_samples / self.session.settings.max_samples),
            condition_number=float(metrics.get("condition_number", 0.0)),
            max_relative_std=float(metrics.get("max_relative_std", 0.0)),
            std_description="" if model is None else std_description(model),
            warnings=self.status_warnings(),
            message=self.message, **self.tracking_fields()))

    def tracking_fields(self) -> dict:
        """The tracked parameters, values, std and updates for IdentificationStatus."""
        if self.tracking is None:
            return {}
        tracker = self.tracking.tracker
        return {"tracked_names": list(tracker.names), "tracked_values": tracker.values.tolist(),
                "tracked_std": tracker.std.tolist(), "tracking_updates": int(tracker.rls.n_updates_)}

    def status_warnings(self) -> list[str]:
        dropped = self.session.dropped.counts
        return list(self.session.warnings) + (
            [f"samples not used: {describe_dropped(dropped)}"] if dropped else []) + (
            [self.file_problem] if self.file_problem else [])


def idle_period(latency):
    """Period [s] of the check for joint states stopped for ``latency`` [s] (at least 0.05 s)."""
    return max(latency, 0.05)


def main(args=None):
    return spin_node(IdentifierNode, args, low_latency=True)


if __name__ == "__main__":
    raise SystemExit(main())
