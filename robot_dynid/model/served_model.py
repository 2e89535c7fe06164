"""The model a feed-forward server answers with: admission, payload, warm-up, temperatures, bounds.

:class:`ServedModel` decides everything the feedforward node serves, without ROS: which model is in use
(:func:`~robot_dynid.model.feedforward.admit_model` with the margins in use, against the expected robot),
which payload is attached to it, the limits requests are checked against, the friction state (warm-up clock
and joint temperatures, :mod:`~robot_dynid.model.friction_state`) and the torques of a request.
:class:`~robot_dynid.model.feedforward_server.FeedforwardServer` holds one and adds the service replies, the
refusals counted and the statuses; the node converts messages and parameters to their calls and back.

Models: a model is admitted by :func:`~robot_dynid.model.feedforward.admit_model`: it must be of the expected
robot (name, joints, kinematics hash) and within ``model_effort`` of the effort limits; where the description
gives no effort limit, the first model's (twice its torques at the limits of motion) stay the robot's, and later
models are held to them. A margin with which the model in use would not be admitted is refused
(:meth:`ServedModel.check_margin`); one that is taken serves the model in use again with its new limits.

Payloads (:class:`~robot_dynid.model.payload.Payload`): one that is not finite, not physically consistent, at a
frame the robot lacks, or with which the model is not admitted is refused with the reason and the payload in use
stays; one far above the robot's rated payload, or with its centre of mass farther than 1 m from its frame, is
served with a warning. The payload stays across models: a model that carries its own brings it, one without gets
the payload in use. A payload given before the robot is known is checked against the first model; refused then,
that model is served without it and ``last_refused_payload`` says why.

Friction that drifts (:mod:`~robot_dynid.model.friction_state`): a model whose friction drifts with time is
served at the running time since the cold start, one with temperature at the joints' latest temperatures.
The running time starts at the first known ROS time (with use_sim_time: the first /clock message; until then a
drifting model is not served, temperatures are ignored and :meth:`ServedModel.reset_warmup` is refused), running
since ``cold_start_stamp``; a cold start after that first time leaves it unknown until ``reset_warmup`` sets it.
With ``cooling_time_constant`` > 0 it decays toward 0 (cold) while the reference stands still (every velocity
below ``standstill_velocity``, or no valid reference for the node's timeout) as ``t exp(-d / tau_c)`` over a stop
of d s, and grows 1 s per s again once the joints move; without a reference the joints count as moving.
Temperatures are kept for the robot's joints only (all ignored before it is known), the later stamped one of a
joint wins whatever order they arrive in, and one older than ``max_temperature_age`` is not used; until every
joint of a temperature model has a fresh one, the nominal friction (the model's reference temperature) is served
and the friction state says so.

Threads: the model in use is one :class:`Served` tuple, replaced in one assignment under a lock shared by
every path that changes it (a model, a margin, a payload), so that a request reads it once and is answered
wholly with the old or the new one. The warm-up clock and the temperatures have a lock of their own.
"""
from __future__ import annotations

import dataclasses
import logging
import math
import threading
from typing import Callable, NamedTuple

import numpy as np

from robot_dynid.errors import DataError, DynIdError, one_line
from robot_dynid.joint_names import index_in, match_joints
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.feedforward import (DERIVED_EFFORT_FACTOR, FeedforwardLimits, Margins, admit_model,
                                           compute_feedforward)
from robot_dynid.model.friction_state import (NO_DRIFT, FrictionState, JointTemperatures, WarmupClock,
                                              friction_state, standing_still)
from robot_dynid.model.payload import Payload, frame_placement, plausibility_warnings
from robot_dynid.model.reference_acceleration import ReferenceAcceleration, lead_state
from robot_dynid.model.robot_description import RobotDescription

__all__ = ["REASON_LIMIT", "DEFAULT_MAX_TEMPERATURE_AGE", "DEFAULT_STANDSTILL_VELOCITY", "Served", "ScheduledPayload",
           "ServedModel"]

REASON_LIMIT = 500
"""Characters of an error in a log line, a status field or a service response (a malformed file can hold many)."""
DEFAULT_MAX_TEMPERATURE_AGE = 5.0   # s
DEFAULT_STANDSTILL_VELOCITY = 0.01  # rad/s

_logger = logging.getLogger(__name__)


def _log_to_python(level: str, message: str) -> None:
    getattr(_logger, level)(message)


class Served(NamedTuple):
    """The model in use and what goes with it, replaced as one (threads read it without a lock)."""

    model: DynamicModel             # the arm with the payload in use attached
    limits: FeedforwardLimits
    version: int
    source: str
    output_index: list | None       # model joint index of each output joint, None: all, in the model's order
    arm: DynamicModel               # the arm alone
    payload_source: str             # where the payload came from, '' without one

    @property
    def output_size(self) -> int:
        """Torques per output point (a command's length)."""
        return len(self.output_index) if self.output_index is not None else len(self.model.joint_names)


class ScheduledPayload(NamedTuple):
    """A payload checked and waiting for its time (:meth:`ServedModel.set_payload` with ``at``)."""

    at: float                       # [s of ROS time] from when it is served
    payload: Payload
    source: str
    served: Served                  # the model in use with it, admitted


class ServedModel:
    """The model in use of a feed-forward server, its payload, limits and friction state.

    Parameters
    ----------
    margins : Margins
        How far beyond the robot's limits requests and models may go.
    ros_time : callable
        ``ros_time()``: ROS time now [s], or None while it is not known (use_sim_time before the first /clock
        message): until then a model whose friction drifts is not served and temperatures are ignored.
    expected_robot : RobotDescription, optional
        The robot every model must be of, whose limits apply (``expected_what`` names where it came from);
        None: the robot of the first model served.
    output_joints : sequence of str, optional
        Joints of the reference path's output, in a controller's order (a subset of the model's joints);
        None: the model's joints in its order. A model lacking one is refused, naming it.
    payload : Payload, optional
        Attached to the models served (a model carrying its own payload brings it); ``payload_source`` says
        where it came from.
    cold_start_stamp : float
        [s] ROS time of the cold start; 0: the first ROS time read. After that first time the running time
        is unknown until :meth:`reset_warmup`; after the ROS time at construction: DynIdError.
    cooling_time_constant : float
        [s] of :class:`~robot_dynid.model.friction_state.WarmupClock`; 0: no cooling.
    temperatures : bool
        Whether temperatures are received (else a temperature model serves its nominal friction).
    max_temperature_age : float
        [s] older temperatures are not used.
    standstill_velocity : float
        [rad/s] joints with every reference velocity below it stand still (the warm-up clock cools).
    reference_acceleration_window : float
        [s] 0: reference accelerations zero; else estimated from the reference's velocities over this window.
    command_lead : float
        [s] in [0, :data:`~robot_dynid.model.reference_acceleration.MAX_LEAD`]: a reference's torque is the one of
        its state this long after its stamp, and a scheduled payload is served to it from then
        (:meth:`reference_torques`); the forward path's latency from the stamp to the applied command.
    log : callable
        ``log(level, message)`` with level ``"info"``, ``"warning"`` or ``"error"``: what a model or payload
        change says (default: Python logging).
    """

    def __init__(self, margins: Margins, ros_time: Callable[[], float | None], *,
                 expected_robot: RobotDescription | None = None, expected_what: str = "", output_joints=None,
                 payload: Payload | None = None, payload_source: str = "", cold_start_stamp: float = 0.0,
                 cooling_time_constant: float = 0.0, temperatures: bool = False,
                 max_temperature_age: float = DEFAULT_MAX_TEMPERATURE_AGE,
                 standstill_velocity: float = DEFAULT_STANDSTILL_VELOCITY,
                 reference_acceleration_window: float = 0.0, command_lead: float = 0.0,
                 log: Callable[[str, str], None] = _log_to_python) -> None:
        self.served: Served | None = None
        self.margins = margins
        self.ros_time = ros_time
        self.expected_robot, self.expected_what = expected_robot, expected_what if expected_robot else ""
        self.output_joints = list(output_joints) if output_joints else None
        self.payload, self.payload_source = payload, payload_source if payload is not None else ""
        self.last_refused_payload = ""
        self.scheduled: ScheduledPayload | None = None
        self.log = log
        self.model_lock = threading.Lock()      # held by every path that replaces ``served`` or the payload
        self.friction_lock = threading.Lock()   # the warm-up clock and the temperatures
        self.cold_start_stamp, self._cooling = cold_start_stamp, cooling_time_constant
        self.temperatures_enabled = temperatures
        self.temperatures = JointTemperatures(max_temperature_age)
        self.standstill_velocity = standstill_velocity
        self._acceleration_window, self._acceleration = reference_acceleration_window, None
        self.command_lead = command_lead
        self.warmup: WarmupClock | None = None
        start = ros_time()
        if start is not None:
            if cold_start_stamp > start:
                raise DynIdError(f"parameter cold_start_stamp ({cold_start_stamp!r} s) is after the node's start "
                                 f"({start:.9g} s of ROS time)")
            self._warmup_clock(start)

    # models and payloads

    def use_model(self, model: DynamicModel, source: str, version: int | None = None) -> Served:
        """Serve ``model`` from now on, with its own payload or else the payload in use, once
        :func:`admit_model` finds it fit; DynIdError (the model in use stays) when it is refused or lacks one
        of the output joints. The first model is served without a payload given before it that it refuses (the
        reason in ``last_refused_payload``): a payload never blocks models."""
        with self.model_lock:
            if model.payload is not None:
                payload, payload_source = model.payload, f"the model ({source})"
            else:
                payload, payload_source = self.payload, self.payload_source
            previous = self.served
            version = version if version is not None else (previous.version + 1 if previous else 1)
            if previous is None and model.payload is None and payload is not None:
                # a payload given before the robot was known: checked against this first model now; refused, it
                # goes and the model is served without it
                try:
                    return self._serve(model.without_payload(), payload, payload_source, source, version)
                except DynIdError as error:
                    reason = (f"{payload.mass:g} kg at {payload.frame!r} from {payload_source}: "
                              f"{one_line(error, REASON_LIMIT)}")
                    self.last_refused_payload = reason
                    self.log("error", f"payload refused with the first model, which is served without it: {reason}")
                    payload, payload_source = None, ""
            served = self._serve(model.without_payload(), payload, payload_source, source, version)
            self._readmit_scheduled()
            return served

    def use_model_file(self, path) -> Served:
        """Serve the model of the file ``path`` (the node's ``model_file``) as :meth:`use_model` does; DynIdError
        naming the file when it does not load (whatever the reason, e.g. a RecursionError of a deeply nested file)
        or the model is refused."""
        try:
            model = DynamicModel.load(path)
        except DynIdError:
            raise
        except Exception as error:
            raise DynIdError(f"{path}: cannot load the model: {one_line(error, REASON_LIMIT)}") from None
        try:
            return self.use_model(model, f"file {path}")
        except DynIdError as error:
            raise DynIdError(f"model_file {path} refused: {error}") from None

    def set_payload(self, payload: Payload, source: str = "set_payload", at: float | None = None) -> str:
        """Attach ``payload`` to the model in use (DynIdError, nothing changed, when it is refused), or keep it
        for the first model; returns what a caller should be told ('' when attached now).

        ``at`` [s of ROS time]: when the payload is fixed to the arm (None, or not after now: now). A later time
        is checked now and served from then on (:meth:`current`: a reference stamped at or after it, any other
        request answered at or after it), so that a grasp whose time is known is served in the cycle it happens
        rather than one service call later; until then the model in use stays as it is. A payload given before
        the first model ignores ``at`` (it is attached to the first model)."""
        with self.model_lock:
            served = self.served
            if served is None:
                if self.expected_robot is not None:
                    frame_placement(self.expected_robot, payload.frame)
                self.payload, self.payload_source = payload, source
                return ("no model yet: the payload will be checked against the first model and attached to it, or "
                        "refused then (FeedforwardStatus.last_refused_payload)")
            now = self.ros_time()
            if at is None or (now is not None and at <= now):
                self._serve(served.arm, payload, source, served.source, served.version)
                self.scheduled = None
                return ""
            loaded = self._admit(served.arm, payload, source, served.version)
            self.scheduled = ScheduledPayload(at, payload, source, loaded)
            ahead = "" if now is None else f", {at - now:.3g} s from now"
            self.log("info", f"payload of {payload.mass:g} kg at {payload.frame} from {source} checked; served "
                             f"from {at:.9g} s of ROS time{ahead}")
            return f"checked; served from {at:.9g} s of ROS time{ahead}"

    def current(self, stamp: float | None = None) -> Served | None:
        """The model in use for a request at ``stamp`` [s of ROS time] (None: now): a :attr:`scheduled` payload
        whose time has come is served first (one assignment, its checks done when it was set)."""
        scheduled = self.scheduled
        if scheduled is not None:
            time = self.ros_time() if stamp is None else stamp
            if time is not None and time >= scheduled.at:
                with self.model_lock:
                    if self.scheduled is scheduled:
                        self.scheduled = None
                        self._install(scheduled.served, scheduled.payload, scheduled.source)
        return self.served

    def _readmit_scheduled(self) -> None:
        """A scheduled payload checked again against the model in use (a new model or margins); refused, it is
        dropped with an error. Called with ``model_lock`` held."""
        scheduled, served = self.scheduled, self.served
        if scheduled is None or served is None:
            return
        try:
            loaded = self._admit(served.arm, scheduled.payload, scheduled.source, served.version, served.source)
        except DynIdError as error:
            self.scheduled = None
            self.last_refused_payload = (f"{scheduled.payload.mass:g} kg at {scheduled.payload.frame!r} from "
                                         f"{scheduled.source}: {one_line(error, REASON_LIMIT)}")
            self.log("error", f"scheduled payload dropped: the model in use refuses it: {self.last_refused_payload}")
            return
        self.scheduled = scheduled._replace(served=loaded)

    def clear_payload(self) -> None:
        """Serve the model in use without a payload (a scheduled one dropped too)."""
        with self.model_lock:
            self.scheduled = None
            served = self.served
            if served is not None:
                self._serve(served.arm, None, "", served.source, served.version)
            self.payload, self.payload_source = None, ""

    def check_margin(self, name: str, value, field: str):
        """``value`` for the margin ``name`` of :class:`Margins` (already range-checked), or DynIdError naming
        ``field`` when the model in use would not be admitted with it (it stays served)."""
        served = self.served
        if served is not None:
            try:
                admit_model(served.model, dataclasses.replace(self.margins, **{name: value}), self.expected_robot,
                            self.expected_what)
            except DynIdError as error:
                raise DynIdError(f"{field} {value:g} refused: the model in use (version {served.version}) would "
                                 f"not be served with it: {one_line(error, REASON_LIMIT)}") from None
        return value

    def set_margin(self, name: str, value) -> None:
        """Margins with ``name`` set to ``value``: the model in use served again with them (its limits)."""
        with self.model_lock:
            self.margins = dataclasses.replace(self.margins, **{name: value})
            served = self.served
            if served is not None:
                self._serve(served.arm, served.model.payload, served.payload_source, served.source, served.version)
                self._readmit_scheduled()

    def _admit(self, arm, payload, payload_source, version, source=None) -> Served:
        """``arm`` with ``payload`` (None: none), checked (:func:`admit_model`) but not served; DynIdError when
        the model is refused."""
        source = self.served.source if source is None else source
        model = arm.with_payload(payload)
        limits = admit_model(model, self.margins, self.expected_robot, self.expected_what)
        output_index = None
        if self.output_joints is not None:
            output_index = index_in(model.joint_names, self.output_joints, "parameter joints",
                                    f"the model from {source}")
        return Served(model, limits, version, source, output_index, arm, payload_source if payload else "")

    def _serve(self, arm, payload, payload_source, source, version) -> Served:
        """Serve ``arm`` with ``payload`` (None: none) in one assignment; DynIdError, nothing changed, when the
        model is refused. Called with ``model_lock`` held."""
        return self._install(self._admit(arm, payload, payload_source, version, source), payload, payload_source)

    def _install(self, served: Served, payload, payload_source) -> Served:
        """Serve the admitted ``served`` in one assignment and say so. Called with ``model_lock`` held."""
        model, limits, version, source = served.model, served.limits, served.version, served.source
        self.served = served
        self.payload, self.payload_source = payload, payload_source if payload else ""
        if self.expected_robot is None:
            self.expected_robot, self.expected_what = model.robot, f"the robot of the first model ({source})"
        if limits.effort_derived.any():
            self._keep_derived_efforts(model, limits, version)
        derived = [name for name, flag in zip(model.joint_names, limits.effort_derived) if flag]
        carried = "" if payload is None else f"; payload {payload.mass:g} kg at {payload.frame} from {payload_source}"
        self.log("info",
                 f"using model version {version} from {source} (joints {list(model.joint_names)}{carried}; torques "
                 f"at the limits of motion [N m] {np.round(limits.peak.torque, 3).tolist()}"
                 + (f"; no effort limit for {derived}: bound {DERIVED_EFFORT_FACTOR:g} x those" if derived else "")
                 + ")")
        if payload is not None:
            for warning in plausibility_warnings(payload, model.robot.rated_payload):
                self.log("warning", warning)
        return served

    def _keep_derived_efforts(self, model, limits, version) -> None:
        """Effort limits derived from a model (none in the description) stay the robot's: later models are
        admitted or refused against them (model_effort_margin), not against their own."""
        robot = self.expected_robot
        index = [robot.joint_names.index(name) for name in model.joint_names]
        efforts = {joint: float(effort) for joint, effort, derived in
                   zip(index, limits.effort, limits.effort_derived) if derived}
        self.expected_robot = dataclasses.replace(robot, limits=tuple(
            dataclasses.replace(limit, effort=efforts[joint]) if joint in efforts else limit
            for joint, limit in enumerate(robot.limits)))
        derived = {robot.joint_names[joint]: round(effort, 3) for joint, effort in efforts.items()}
        self.log("info", f"effort limits derived from model version {version} (none in the description), later "
                         f"models are held to them [N m]: {derived}")

    # torques

    def torques(self, served: Served, joint_names, positions, velocities=(), accelerations=(),
                state: FrictionState | None = None):
        """Torques [N m] of a request to ``served`` (:func:`compute_feedforward`'s array, in the request's
        layout) with the friction ``state`` (None: :meth:`friction` now); DynIdError when refused."""
        state = self.friction(served) if state is None else state
        return compute_feedforward(served.model, joint_names, positions, velocities, accelerations,
                                   temperature=state.temperature, elapsed=state.elapsed, limits=served.limits)

    def reference_torques(self, served: Served, names, positions, velocities, stamp: float | None = None):
        """Torques [N m] of one reference point, in the output joints' order.

        ``names``, ``positions`` [rad], ``velocities`` [rad/s]: a JointState's fields (extra joints ignored;
        a field whose size is not one per name goes to :func:`compute_feedforward` as it is, to be reported);
        ``stamp`` [s] its header stamp (None: now), for the accelerations' estimate. With a
        :attr:`command_lead`, the torque is the one of the reference's state that much later (:func:`lead_state`).
        The reference's motion drives the warm-up clock's cooling. DynIdError when refused.
        """
        joints = served.model.joint_names
        index = match_joints(joints, list(names), "reference JointState", "the model")
        positions, velocities = (values[index] if values.size == len(names) else values for values in
                                 (np.asarray(positions, dtype=np.float64), np.asarray(velocities, dtype=np.float64)))
        self.joints_move(not standing_still(velocities, self.standstill_velocity))
        accelerations = self._reference_accelerations(joints, velocities, stamp)
        lead = self.command_lead
        if lead and positions.size == velocities.size == len(joints):
            later = self._acceleration[1].ahead(lead) if self._acceleration_window else None
            positions, velocities, accelerations = lead_state(positions, velocities, accelerations, lead, later)
        tau = self.torques(served, joints, positions, velocities, accelerations)
        return tau[..., served.output_index] if served.output_index is not None else tau

    @property
    def reference_acceleration_window(self) -> float:
        """[s] window of the reference accelerations' estimate; 0: accelerations zero. Set: from the next
        reference."""
        return self._acceleration_window

    @reference_acceleration_window.setter
    def reference_acceleration_window(self, value: float) -> None:
        self._acceleration_window, self._acceleration = value, None

    def _reference_accelerations(self, joints, velocities, stamp):
        """[rad/s^2] in ``joints`` order: () without a window, else the estimate at ``stamp`` (None: now); a new
        estimator for another joint order."""
        window = self._acceleration_window
        if not window:
            return ()
        current = self._acceleration       # (joint order, its estimator), or None
        if current is None or current[0] != joints:
            current = self._acceleration = (joints, ReferenceAcceleration(len(joints), window))
        return current[1].update(stamp if stamp is not None else self.ros_time() or 0.0, velocities)

    # friction state

    def friction(self, served: Served) -> FrictionState:
        """The friction state of ``served`` now; DataError while it cannot be known (ROS time unknown, or the
        running time unknown: see :meth:`_warmup_clock`)."""
        model = served.model
        if model.friction.drift == "none":
            return NO_DRIFT     # neither the clock nor the lock: a one-point request's path is short
        with self.friction_lock:
            now = self.ros_time()
            if now is None:     # ROS time 0: no running time, every temperature stale or ahead
                raise DataError("use_sim_time is true and no /clock message has arrived: the friction of this "
                                f"model drifts with {model.friction.drift}, known only on ROS time")
            return friction_state(model.friction, model.joint_names, now,
                                  self._warmup_clock(now) if model.friction.needs_elapsed else None,
                                  self.temperatures if self.temperatures_enabled else None)

    def friction_or_reason(self, served: Served | None):
        """:meth:`friction` of ``served``, or why it is not known (str); None without a model."""
        if served is None:
            return None
        try:
            return self.friction(served)
        except DataError as error:
            return str(error)

    def _warmup_clock(self, now: float) -> WarmupClock:
        """The warm-up clock at ROS time ``now`` [s] (the friction lock held). It starts at the first ROS time
        read, running since cold_start_stamp (with use_sim_time: at the first /clock message, as ROS time reads 0
        before it and the first /clock would count as that long a run); DataError when cold_start_stamp is
        after that first time (until :meth:`reset_warmup` sets the running time)."""
        if self.warmup is None:
            if self.cold_start_stamp > now:
                raise DataError(f"parameter cold_start_stamp ({self.cold_start_stamp!r} s) is after the first "
                                f"/clock time ({now:.9g} s): the running time is unknown until ~/reset_warmup sets it")
            elapsed = now - self.cold_start_stamp if self.cold_start_stamp > 0.0 else 0.0
            self.warmup = WarmupClock(now, elapsed, self._cooling)
        return self.warmup

    def joints_move(self, moving: bool) -> None:
        """The joints move (True) or stand still from now on: the warm-up clock's cooling (nothing before it
        starts)."""
        with self.friction_lock:
            now = self.ros_time()
            if now is None:
                return
            try:
                clock = self._warmup_clock(now)
            except DataError:
                return
            clock.motion(now, moving)

    def reset_warmup(self, elapsed: float) -> float:
        """Set the running time since the cold start to ``elapsed`` [s] (0: cold now); returns it. DataError
        while ROS time is unknown or for a negative or non-finite value."""
        with self.friction_lock:
            now = self.ros_time()
            if now is None:
                raise DataError("use_sim_time is true and no /clock message has arrived")
            if self.warmup is None:
                self.warmup = WarmupClock(now, elapsed, self._cooling)
            else:
                self.warmup.reset(now, elapsed)
            return self.warmup.elapsed(now)

    def running_time(self) -> float:
        """[s] the warm-up clock's running time now; NaN before it starts."""
        with self.friction_lock:
            now = self.ros_time()
            return self.warmup.elapsed(now) if self.warmup is not None and now is not None else math.nan

    @property
    def cooling_time_constant(self) -> float:
        """[s] of the warm-up clock's cooling; 0: none. Set: at once."""
        return self._cooling

    @cooling_time_constant.setter
    def cooling_time_constant(self, value: float) -> None:
        with self.friction_lock:
            self._cooling = value
            if self.warmup is not None:
                self.warmup.cooling_time_constant = value

    @property
    def max_temperature_age(self) -> float:
        """[s] older temperatures are not used. Set: from the next request."""
        return self.temperatures.max_age

    @max_temperature_age.setter
    def max_temperature_age(self, value: float) -> None:
        with self.friction_lock:
            self.temperatures.max_age = value

    def update_temperatures(self, joints, values, stamp: float | None = None) -> list[tuple[str, str]]:
        """Keep each joint's temperature [deg C] measured at ROS time ``stamp`` [s] (None: now). Returns what
        to say, as (level, message): temperatures of joints the robot lacks (all before it is known), refused
        ones (not finite, implausible, stamped ahead) and ones older than the one in use are not kept."""
        now = self.ros_time()
        if now is None:
            return [("warning", "temperatures ignored: use_sim_time is true and no /clock message has arrived "
                                "(their age is not known)")]
        stamp = now if stamp is None else stamp
        robot, notes = self.expected_robot, []
        for joint, value in zip(joints, values):
            if robot is None or joint not in robot.joint_names:     # kept only for the robot's joints
                notes.append(("warning", f"temperature of joint {joint!r} ignored: not a joint of the robot served"))
                continue
            try:
                with self.friction_lock:
                    kept = self.temperatures.update(joint, float(value), stamp, now)
                if not kept:
                    notes.append(("info", f"temperature of joint {joint!r} stamped {stamp:.9g} s ignored: the one "
                                          "in use is stamped later"))
            except DynIdError as error:
                notes.append(("warning", str(error)))
        return notes
