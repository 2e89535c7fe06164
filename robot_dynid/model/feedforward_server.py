"""What a feed-forward server answers and reports: service replies, refusals counted, statuses, notes on changes.

:class:`FeedforwardServer` decides, without ROS, everything of the feedforward node that is not the model's
(:class:`~robot_dynid.model.served_model.ServedModel`, which it holds): the node's :meth:`parameters
<FeedforwardServer.from_parameters>` read into a served model, the replies of its services (response fields by
name, and what to log), the reference path's state (:class:`~robot_dynid.model.feedforward.ReferenceMonitor`:
when zero feed-forward is due, and then the joints count as still), the trajectories and models answered and
refused with the latest reasons, and the statuses: what one holds (:meth:`FeedforwardServer.report`: plain values
under the robot_dynid/msg/FeedforwardStatus field names), when one is due on a change
(:meth:`FeedforwardServer.changed`) and what is said then.

What is said comes as (level, message) notes, level ``"info"``, ``"warning"`` or ``"error"``: a warning when the
reference times out or is refused, when the friction falls back to nominal or becomes unknown (requests
refused), an info line when the reference path's state changes otherwise (none for the first status); a refusal
returns the note that says it. The node converts messages and parameters to these calls, the fields back to
messages, and logs the notes.
"""
from __future__ import annotations

import dataclasses
import math
import time
from typing import Callable, Mapping, NamedTuple

import numpy as np

from robot_dynid.errors import DynIdError, one_line
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.feedforward import FIELDS, Margins, ReferenceMonitor, join_points
from robot_dynid.model.friction_state import FRICTION_STATES, NO_DRIFT, NOMINAL, STATIC, FrictionState
from robot_dynid.model.joint_trajectory import points_at
from robot_dynid.model.payload import Payload, load_payload
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.model.served_model import REASON_LIMIT, Served, ServedModel

__all__ = ["FRICTION_UNKNOWN", "MARGIN_PARAMETERS", "PAYLOAD_STEP", "InsertedPoint", "TrajectoryEfforts",
           "FeedforwardServer"]

FRICTION_UNKNOWN = len(FRICTION_STATES)
"""The friction state code of a model whose friction drifts while its state is not known (requests refused):
after the codes of :data:`~robot_dynid.model.friction_state.FRICTION_STATES`, as the messages' FRICTION_UNKNOWN."""
MARGIN_PARAMETERS = {"position_margin": "position", "velocity_margin": "velocity",
                     "acceleration_margin": "acceleration", "effort_margin": "effort",
                     "model_effort_margin": "model_effort", "max_points": "max_points"}
"""The node parameter of each field of :class:`~robot_dynid.model.feedforward.Margins`."""

PAYLOAD_STEP = 1e-4
"""[s] the width of the effort step a scheduled payload makes in a trajectory: points this far apart around its
time. A controller samples the efforts at its cycles and the load acts from the first cycle at or after the
stamp: a tenth of a 1 kHz cycle, so a cycle rarely falls inside the step and the efforts change where the load
does (and the added segments stay long enough for their quintic coefficients, ~1/T^5)."""
_SAME_TIME = 1e-6
"""[s] a point closer than this to an existing one is not added."""

Note = tuple[str, str]


class InsertedPoint(NamedTuple):
    """A point the server adds to a trajectory, on its interpolation
    (:func:`~robot_dynid.model.joint_trajectory.points_at`).

    Attributes
    ----------
    index : int
        Its place in the answered trajectory (points after it move one on).
    time_from_start : float
        [s] from the trajectory's start.
    positions, velocities, accelerations : ndarray, shape (m,) or (0,)
        [rad], [rad/s], [rad/s^2] in the request's joint order; empty where the trajectory's points have none.
    effort : ndarray, shape (m,)
        [N m].
    """

    index: int
    time_from_start: float
    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray
    effort: np.ndarray = np.zeros(0)


class TrajectoryEfforts(NamedTuple):
    """The answer to a trajectory: ``efforts`` (M, m) [N m] of its M points, and the points added to it
    (``inserted``, by increasing index in the answered trajectory, which has M + len(inserted) points)."""

    efforts: np.ndarray
    inserted: tuple[InsertedPoint, ...] = ()


def _payload_step(offsets: np.ndarray, fields, m: int, at: float) -> tuple[InsertedPoint, ...]:
    """The points to add at ``at -+ PAYLOAD_STEP / 2`` [s from the trajectory's start] to points at ``offsets``
    (M,) [s from it] with ``fields`` (flat, :func:`join_points`): those strictly inside the trajectory and not at
    an existing point's time. Relative times keep the added points' states true to their time_from_start (ROS
    times in seconds carry 0.2 us)."""
    if offsets.size < 2 or not offsets[0] < at <= offsets[-1]:
        return ()
    candidates = [t for t in (at - PAYLOAD_STEP / 2.0, at + PAYLOAD_STEP / 2.0)
                  if offsets[0] < t < offsets[-1] and np.min(np.abs(offsets - t)) > _SAME_TIME]
    if not candidates:
        return ()
    positions, velocities, accelerations = (values.reshape(offsets.size, m) if values.size else None
                                            for values in fields)
    q, qd, qdd = points_at(offsets, positions, velocities, accelerations, candidates)
    index = np.searchsorted(offsets, candidates) + np.arange(len(candidates))
    empty = np.zeros(0)
    return tuple(InsertedPoint(int(index[k]), float(t), q[k], empty if qd is None else qd[k],
                               empty if qdd is None else qdd[k]) for k, t in enumerate(candidates))


class FeedforwardServer:
    """The answers and the status of a feed-forward server of ``served_model``.

    Parameters
    ----------
    served_model : ServedModel
        The model in use, its payload and friction state.
    reference_timeout : float
        [s] without a valid reference this long, zero feed-forward is due (:class:`ReferenceMonitor`).
    reference : bool
        Whether there is a reference stream (else the state is ``ok`` or ``no model``, the reference age NaN).
    clock : callable
        ``clock()``: [s] on a monotonic clock (wall time, whatever the ROS time), for the reference timeout; the
        references are expected from the construction on.

    Calls of :meth:`report` are serialised by the caller (the one publishing the statuses in order).
    """

    def __init__(self, served_model: ServedModel, reference_timeout: float, reference: bool = True,
                 clock: Callable[[], float] = time.monotonic):
        self.served_model = served_model
        self.clock = clock
        self.monitor = ReferenceMonitor(reference_timeout, clock(), enabled=reference,
                                        check_period=reference_timeout / 4.0)
        self.trajectories_answered = self.trajectories_refused = self.models_refused = 0
        self.last_refused_trajectory = self.last_refused_model = ""
        self.reported_state = None      # the reference path's state of the latest report, None before one
        self.reported_friction = None   # its friction state, or why it was unknown; None without a model

    @classmethod
    def from_parameters(cls, values: Mapping, ros_time: Callable[[], float | None],
                        log: Callable[[str, str], None], clock: Callable[[], float] = time.monotonic
                        ) -> FeedforwardServer:
        """The server of the feedforward node's parameter ``values`` (by name, as its table reads them):
        ``robot_file`` and ``payload_file`` loaded (DynIdError naming the file when one does not load), the
        margins, the warm-up and temperature settings; ``model_file`` is not loaded here
        (:meth:`ServedModel.use_model_file`). ``ros_time`` and ``log`` as :class:`ServedModel` takes them, ``clock`` as
        the constructor does."""
        robot_file, payload_file = values["robot_file"], values["payload_file"]
        robot = load_robot(robot_file) if robot_file else None
        served_model = ServedModel(
            Margins(**{name: values[parameter] for parameter, name in MARGIN_PARAMETERS.items()}), ros_time,
            expected_robot=robot, expected_what=f"robot_file {robot_file}", output_joints=values["joints"] or None,
            payload=load_payload(payload_file, robot) if payload_file else None,
            payload_source=f"payload_file {payload_file}", cold_start_stamp=values["cold_start_stamp"],
            cooling_time_constant=values["cooling_time_constant"],
            temperatures=bool(values["temperature_topic_prefix"] or values["joint_temperatures_topic"]),
            max_temperature_age=values["max_temperature_age"], standstill_velocity=values["standstill_velocity"],
            reference_acceleration_window=values["reference_acceleration_window"],
            command_lead=values["command_lead"], log=log)
        return cls(served_model, values["reference_timeout"], bool(values["reference_topic"]), clock)

    def startup_note(self, values: Mapping) -> Note:
        """The info note of a server started with the node's parameter ``values``: what it serves where (the
        service's queue depth and points, the topics, off where unset), the reference timeout and the margins."""
        margins = self.served_model.margins
        reference_topic, trajectory_topic = values["reference_topic"], values["trajectory_topic"]
        return "info", (
            f"serving compute_feedforward (queue depth {values['service_queue_depth']}, at most {margins.max_points} "
            f"points); model topic {values['model_topic'] or 'off'} (transient local, depth 1); "
            f"reference {reference_topic or 'off'} -> {values['command_topic'] if reference_topic else 'off'} "
            f"(zero after {values['reference_timeout']:g} s without a valid reference); trajectory "
            f"{trajectory_topic or 'off'} -> {values['trajectory_out_topic'] if trajectory_topic else 'off'}; "
            f"margins: position {margins.position:g} rad, velocity x{margins.velocity:g}, acceleration "
            f"x{margins.acceleration:g}, effort x{margins.effort:g}, model effort x{margins.model_effort:g}")

    @property
    def reference_timeout(self) -> float:
        """[s] of the reference path; set: the timeout and its check period (a quarter of it) change at once."""
        return self.monitor.timeout

    @reference_timeout.setter
    def reference_timeout(self, value: float) -> None:
        self.monitor.timeout, self.monitor.check_period = value, value / 4.0

    # service replies: (response fields by name, a note or None)

    def compute_reply(self, joint_names, positions, velocities=(), accelerations=()) -> tuple[dict, Note | None]:
        """The reply to a ComputeFeedforward request (flat arrays of N points by joint name).

        Fields: ``model_version`` (0 before any model), ``success`` and ``message`` (why it is refused: the
        DynIdError's message; any other error as ``could not compute the request: ...``, with an error note),
        ``friction_state`` and ``friction_elapsed`` [s] (NaN without time drift) once the friction state is known,
        and on success ``efforts`` [N m] (an array in the request's layout) and, for temperature drift,
        ``friction_temperatures`` [deg C] in the request's joint order."""
        served_model = self.served_model
        served = served_model.current()
        if served is None:
            return {"model_version": 0, "success": False, "message": "no model loaded yet"}, None
        fields = {"model_version": served.version}
        try:
            state = served_model.friction(served)
            fields["friction_state"] = state.code
            fields["friction_elapsed"] = math.nan if state.elapsed is None else float(state.elapsed)
            tau = served_model.torques(served, joint_names, positions, velocities, accelerations, state)
        except DynIdError as error:
            return {**fields, "success": False, "message": str(error)}, None
        except Exception as error:      # e.g. MemoryError: the request is refused, the server goes on
            message = f"could not compute the request: {one_line(error, REASON_LIMIT)}"
            return {**fields, "success": False, "message": message}, ("error", message)
        fields["efforts"] = tau
        if state.temperature is not None:
            by_name = dict(zip(served.model.joint_names, state.temperature))
            fields["friction_temperatures"] = [float(by_name[name]) for name in joint_names]
        return {**fields, "success": True, "message": ""}, None

    def set_payload_reply(self, frame: str, mass: float, com, inertia, at: float | None = None
                          ) -> tuple[dict, Note | None]:
        """The reply to a SetPayload request: the payload attached to the model in use (from ``at`` [s of ROS
        time], None: now), or kept for the first model (:meth:`ServedModel.set_payload`). Fields:
        ``model_version`` (0 before any model), ``success``, ``message`` (what to know, or why it is refused: then
        a warning note too; anything the payload raises refuses it)."""
        served = self.served_model.served
        fields = {"model_version": served.version if served is not None else 0}
        try:
            message = self.served_model.set_payload(Payload(frame, mass, tuple(com), tuple(inertia)), at=at)
        except Exception as error:      # DynIdError: refused; anything else: refused too, never fatal
            message = f"payload refused: {one_line(error, REASON_LIMIT)}"
            return {**fields, "success": False, "message": message}, ("warning", message)
        return {**fields, "success": True, "message": message}, None

    def clear_payload_reply(self) -> dict:
        """The reply to a clear-payload request (fields ``success``, ``message``): the model in use served without a
        payload, the payload in use dropped."""
        try:
            self.served_model.clear_payload()
        except Exception as error:      # the arm alone refused (cannot be, it was admitted): the payload stays
            return {"success": False, "message": f"payload not cleared: {one_line(error, REASON_LIMIT)}"}
        return {"success": True,
                "message": "payload cleared" + ("" if self.served_model.served is not None else " (no model yet)")}

    def reset_warmup_reply(self, elapsed: float) -> tuple[dict, Note]:
        """The reply to a ResetWarmup request: the running time since the cold start set to ``elapsed`` [s]
        (:meth:`ServedModel.reset_warmup`). Fields: ``elapsed`` (the running time now [s]: NaN before the clock
        starts), ``success``, ``message``; an info note saying it."""
        try:
            fields = {"elapsed": self.served_model.reset_warmup(elapsed), "success": True,
                      "message": f"running time set to {elapsed:g} s"}
        except DynIdError as error:
            fields = {"elapsed": self.served_model.running_time(), "success": False,
                      "message": f"reset_warmup refused: {error}"}
        return fields, ("info", fields["message"])

    # the topics: (torques or None, a note or None)

    def use_model_message(self, artifact_yaml: str, robot_name: str, version: int) -> Served:
        """Serve the model of an IdentifiedModel message (its artifact YAML, robot name and version) as
        :meth:`ServedModel.use_model` does; whatever decoding or admitting it raises goes to the caller (for
        :meth:`model_refused`)."""
        model = DynamicModel.from_yaml(artifact_yaml, source="IdentifiedModel.artifact_yaml")
        return self.served_model.use_model(model, f"topic (robot {robot_name!r:.80})", version=version)

    def model_refused(self, version: int, error: BaseException) -> Note:
        """A model (message version ``version``) refused for ``error``: counted, its reason kept; the error note."""
        reason = one_line(error, REASON_LIMIT)
        self.models_refused += 1
        self.last_refused_model = f"version {version}: {reason}"
        return "error", f"ignoring IdentifiedModel version {version}: {reason}"

    def trajectory_efforts(self, joint_names, points, start: float | None = None,
                           offsets=None) -> tuple[TrajectoryEfforts | None, Note | None]:
        """The efforts [N m] of a trajectory's points to the model in use (there must be one), one row per point
        in the request's joint order, counted as answered; or (None, a warning note) when it is refused (whatever
        the error), counted with its reason. ``points``: per field of
        :data:`~robot_dynid.model.feedforward.FIELDS` (positions, velocities, accelerations), each point's
        values (:func:`~robot_dynid.model.feedforward.join_points`). ``start`` [s of ROS time] (None: now) and the
        points' ``offsets`` [s] from it (time_from_start) place the points in time: those at or after a scheduled
        payload's time get the model with it (:meth:`ServedModel.set_payload` with ``at``), and a friction that
        warms up with running time is taken at each point's time (the running time now plus the point's lead).

        A scheduled payload's time inside the trajectory would otherwise ramp its torque in over the whole
        segment around it (a controller interpolates efforts linearly between points): points are added
        :data:`PAYLOAD_STEP` / 2 before and after it (:attr:`TrajectoryEfforts.inserted`, on the trajectory's
        own interpolation, so the motion is unchanged), and the torque steps there as the load does."""
        try:
            m = len(joint_names)
            fields = [join_points(field, values, m) for field, values in zip(FIELDS, points)]
            served_model = self.served_model
            served, now = served_model.current(start), served_model.ros_time()
            start = now if start is None else start
            times = None if offsets is None or start is None else start + np.asarray(offsets, dtype=float)
            scheduled = served_model.scheduled
            inserted = () if scheduled is None or times is None else _payload_step(
                np.asarray(offsets, dtype=float), fields, m, scheduled.at - start)
            if inserted and len(times) + len(inserted) > served_model.margins.max_points:
                inserted = ()       # a trajectory at max_points is answered as it is (the load ramps in), not refused
            if inserted:
                where = [point.index - k for k, point in enumerate(inserted)]    # before these original points
                times = np.insert(times, where, [start + point.time_from_start for point in inserted])
                fields = [np.insert(values.reshape(-1, m), where, [getattr(point, field) for point in inserted],
                                    axis=0).ravel() if values.size else values
                          for field, values in zip(FIELDS, fields)]
            tau = self._point_torques(served, joint_names, fields, times, now, scheduled)
            if inserted:
                inserted = tuple(point._replace(effort=tau[point.index]) for point in inserted)
                tau = np.delete(tau, [point.index for point in inserted], axis=0)
        except Exception as error:      # DynIdError: refused; anything else: refused too, never fatal
            reason = f"trajectory on {list(joint_names)}: {one_line(error, REASON_LIMIT)}"
            self.trajectories_refused += 1
            self.last_refused_trajectory = reason
            return None, ("warning", reason)
        self.trajectories_answered += 1
        return TrajectoryEfforts(tau, inserted), None

    def _point_torques(self, served: Served, joint_names, fields, times, now, scheduled) -> np.ndarray:
        """The torques (M, m) [N m] of the points ``fields`` at ``times`` (M,) [s of ROS time] or None: the
        scheduled payload's model from its time on, a warming friction at each point's time."""
        served_model = self.served_model
        state = served_model.friction(served)
        if state.elapsed is not None and times is not None and now is not None:
            state = dataclasses.replace(state, elapsed=np.maximum(state.elapsed + times - now, 0.0))
        tau = served_model.torques(served, joint_names, *fields, state)
        if scheduled is not None and times is not None:
            later = np.flatnonzero(times >= scheduled.at)
            if later.size:
                rows = [values.reshape(len(times), -1)[later].ravel() for values in fields]
                if state.elapsed is not None:
                    state = dataclasses.replace(state, elapsed=state.elapsed[later])
                tau[later] = served_model.torques(scheduled.served, joint_names, *rows, state)
        return tau

    def reference_torques(self, names, positions, velocities, stamp: float | None) -> tuple[object, Note | None]:
        """The torque command [N m] of one reference to the model in use (:meth:`ServedModel.reference_torques`;
        a scheduled payload from its time minus the command lead on), the reference counted as answered now; or
        (None, a warning note) when it is refused (whatever the error): then nothing is sent for it and the
        reference path's state says why. (None, None) before any model: nothing is sent or counted."""
        served_model = self.served_model
        time = stamp if stamp is not None else served_model.ros_time()
        served = served_model.current(None if time is None else time + served_model.command_lead)
        if served is None:
            return None, None
        try:
            tau = self.served_model.reference_torques(served, names, positions, velocities, stamp)
        except Exception as error:      # DynIdError: refused; anything else: refused too, never fatal
            reason = one_line(error, REASON_LIMIT)
            self.monitor.refused(self.clock(), reason)
            return None, ("warning", f"reference on {list(names)}: {reason}")
        self.monitor.answered(self.clock())
        return tau, None

    def check_reference(self) -> int:
        """Called every check period (a quarter of the timeout): the number of zero torques to publish now (the
        output size of the model in use), 0 when none is due. Without a valid reference for the timeout the joints
        count as still (the warm-up clock cools)."""
        served = self.served_model.served
        if not self.monitor.check(self.clock(), served is not None):
            return 0
        self.served_model.joints_move(False)
        return served.output_size

    # statuses

    def _friction(self, served):
        """(the friction state or None, why it is unknown or ''), and what a change is noticed by: the friction
        state's name, the reason it is unknown, None without a model."""
        friction = self.served_model.friction_or_reason(served)
        if isinstance(friction, str):
            return None, friction, friction
        return friction, "", friction.state if friction is not None else None

    def changed(self) -> bool:
        """Whether the reference path's state or the friction state differs from the latest report's."""
        served = self.served_model.served
        return (self.monitor.state(self.clock(), served is not None)[0] != self.reported_state
                or self._friction(served)[2] != self.reported_friction)

    def report(self) -> tuple[dict, list[Note]]:
        """(fields, notes): the status now and what to say about its changes since the latest one reported; this
        one becomes the latest.

        ``fields``: the robot_dynid/msg/FeedforwardStatus fields but the header, as plain values (``state``: the
        :class:`ReferenceMonitor` state's name; ``friction_state``: a code of
        :data:`~robot_dynid.model.friction_state.FRICTION_STATES` or :data:`FRICTION_UNKNOWN`, static without a
        model). The payload is the served model's, before the first model the one waiting for it."""
        served_model, monitor = self.served_model, self.monitor
        served, now = served_model.served, self.clock()
        state, message = monitor.state(now, served is not None)
        friction, unknown, noticed = self._friction(served)
        payload, payload_source = ((served.model.payload, served.payload_source) if served is not None else
                                   (served_model.payload, served_model.payload_source))
        fields = dict(
            state=state, message=message, model_version=served.version if served else 0,
            model_source=served.source if served else "", robot_name=served.model.robot.name if served else "",
            reference_age=monitor.age(now) if monitor.enabled else math.nan, reference_timeout=monitor.timeout,
            references_answered=monitor.answered_count, references_refused=monitor.refused_count,
            trajectories_answered=self.trajectories_answered, trajectories_refused=self.trajectories_refused,
            models_refused=self.models_refused, last_refused_reference=monitor.last_refusal,
            last_refused_trajectory=self.last_refused_trajectory, last_refused_model=self.last_refused_model,
            payload_frame=payload.frame if payload else "", payload_mass=payload.mass if payload else 0.0,
            payload_com=list(payload.com) if payload else [0.0] * 3,
            payload_inertia=list(payload.inertia) if payload else [0.0] * 6, payload_source=payload_source,
            last_refused_payload=served_model.last_refused_payload,
            friction_state=FRICTION_UNKNOWN if unknown else friction.code if friction else NO_DRIFT.code,
            friction_elapsed=math.nan if friction is None or friction.elapsed is None else float(friction.elapsed),
            friction_temperatures=[] if friction is None or friction.temperature is None else
            friction.temperature.tolist(),
            friction_message=unknown if friction is None or friction.state == STATIC else friction.describe())
        notes = self._state_notes(state, message) + self._friction_notes(friction, unknown, noticed)
        self.reported_state, self.reported_friction = state, noticed
        return fields, notes

    def _state_notes(self, state: str, message: str) -> list[Note]:
        """A warning when the reference path times out or is refused, else an info line on a change of state (none
        for the first report)."""
        if state == self.reported_state:
            return []
        if state in (ReferenceMonitor.TIMEOUT, ReferenceMonitor.REFUSED):
            return [("warning", f"{state}: {message}")]
        if self.reported_state is None:
            return []
        return [("info", f"{state}" + (f": {message}" if message else ""))]

    def _friction_notes(self, friction: FrictionState | None, unknown: str, noticed) -> list[Note]:
        """A warning when the friction falls back to nominal or becomes unknown (requests refused)."""
        if noticed == self.reported_friction:
            return []
        if friction is not None and friction.state == NOMINAL:
            return [("warning", friction.describe())]
        if unknown:
            return [("warning", f"requests refused: {unknown}")]
        return []
