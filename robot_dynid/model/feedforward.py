"""Feed-forward torque requests: joint values given by name, checked against the robot's limits,
evaluated by a model whose own torques are checked when it is admitted.

A request names its m joints in any order and gives N points as flat arrays, point after point:
the value of point k, joint j (the j-th name) is at index ``k * m + j`` (an (N, m) array in
row-major order), which is how the ``ComputeFeedforward`` service carries them. The service and
the reference and trajectory topics of the feedforward node all go through
:func:`compute_feedforward`, so a request gets the same answer (a message naming the field and,
where one is at fault, the point and joint) wherever it comes from. It refuses, in this order:

- malformed requests (names, sizes, more than ``max_points`` points, non-finite values);
- the first point, in point order, with a position beyond a joint's position limits by more than
  ``position_margin`` [rad] (URDF continuous joints are not checked), a velocity beyond
  ``velocity_margin`` times its velocity limit, or an acceleration beyond ``acceleration_margin``
  times its acceleration limit (margins are factors, >= 1 to allow a little more than the limit);
- a torque that is not finite, or whose magnitude exceeds ``effort_margin`` times the joint's
  effort limit. Where the robot description gives a joint no effort limit, the bound is
  :data:`DERIVED_EFFORT_FACTOR` times the largest torque the model gives at the limits of motion
  (:meth:`~robot_dynid.model.dynamic_model.DynamicModel.torque_at_limits_of_motion`).

A model is admitted (:func:`admit_model`) only if it is of the expected robot (name, joints in
order, :attr:`~robot_dynid.model.robot_description.RobotDescription.kinematics_hash`) and needs at
most ``model_effort_margin`` times each effort limit at the limits of motion: that catches models
of another arm and unit or scale mistakes (a mass in grams, every value times 1e6).
:class:`ReferenceMonitor` says when a stream of references has stopped being answered, so that
zero feed-forward replaces the last torque.
"""
from __future__ import annotations

import array
import dataclasses
import math
import sys
import threading
from collections.abc import Sequence

import numpy as np

from robot_dynid import _online_kernel, validators
from robot_dynid.errors import DataError
from robot_dynid.joint_names import match_joints
from robot_dynid.model.dynamic_model import DynamicModel, PeakTorques
from robot_dynid.model.robot_description import RobotDescription

__all__ = ["FIELDS", "UNITS", "DEFAULT_POSITION_MARGIN", "DEFAULT_VELOCITY_MARGIN", "DEFAULT_ACCELERATION_MARGIN",
           "DEFAULT_EFFORT_MARGIN", "DEFAULT_MODEL_EFFORT_MARGIN", "MAX_MARGIN_FACTOR", "MAX_POSITION_MARGIN",
           "DEFAULT_MAX_POINTS", "MAX_POINTS_LIMIT", "DERIVED_EFFORT_FACTOR", "ModelRefusedError",
           "check_position_margin", "check_margin_factor", "check_max_points", "Margins", "FeedforwardLimits",
           "feedforward_limits", "structure_difference", "admit_model", "joint_order", "request_arrays", "join_points",
           "compute_feedforward", "MAX_PLANS", "ReferenceMonitor"]

FIELDS = ("positions", "velocities", "accelerations")
UNITS = {"positions": "rad", "velocities": "rad/s", "accelerations": "rad/s^2"}
#: Default position margin [rad]: positions further than this beyond a joint's limits are refused.
DEFAULT_POSITION_MARGIN = 0.1
#: Default velocity margin [1]: speeds above this times a joint's velocity limit are refused (10 %
#: for the overshoot of interpolated references).
DEFAULT_VELOCITY_MARGIN = 1.1
#: Default acceleration margin [1]: acceleration limits are often nominal (URDF has none; robot
#: files give design values) and references differentiated twice are noisy.
DEFAULT_ACCELERATION_MARGIN = 1.5
#: Default effort margin [1]: identified models are approximate (and ros2_control clamps commands
#: to the effort limits where it enforces them); 1.5 refuses the wild torques of requests far
#: beyond the limits or of wrong models, and leaves room for model error. 1.0: nothing beyond the limit.
DEFAULT_EFFORT_MARGIN = 1.5
#: Default model effort margin [1]: a model is refused when at the limits of motion (every joint at
#: its velocity and acceleration limits at once, with the worst signs) it needs more than this
#: times an effort limit. Plausible models of the UR5 and Panda reach 1.5 and 2.1 there.
DEFAULT_MODEL_EFFORT_MARGIN = 3.0
#: Largest margin factor accepted [1].
MAX_MARGIN_FACTOR = 10.0
#: Largest position margin accepted [rad].
MAX_POSITION_MARGIN = 2.0 * math.pi
#: Default and largest accepted ``max_points`` [1]: points per request. rclpy converts a request before the
#: node can count its points, holding the interpreter lock, which pauses the node's controller path too, for a
#: time that grows with the points (BENCHMARKS.md, request_size); a refused request pauses it as long as an
#: accepted one.
DEFAULT_MAX_POINTS = 100_000
MAX_POINTS_LIMIT = 1_000_000
#: Where a robot gives a joint no effort limit, the torque bound [N m] is this many times the largest
#: torque the model gives at the limits of motion (room for the velocity and acceleration margins,
#: and for positions the sampling missed).
DERIVED_EFFORT_FACTOR = 2.0


class ModelRefusedError(DataError):
    """A model that loads but must not be served: of another robot, or needing torques beyond the limits."""


def check_position_margin(value, field: str = "position_margin", error=DataError) -> float:
    """A position margin [rad]: finite, <= :data:`MAX_POSITION_MARGIN`; negative turns the position check off."""
    return validators.in_range(value, field, error, "rad", maximum=MAX_POSITION_MARGIN)


def check_margin_factor(value, field: str, error=DataError) -> float:
    """A margin factor [1] in (0, :data:`MAX_MARGIN_FACTOR`]."""
    return validators.in_range(value, field, error, "1", minimum=0.0, maximum=MAX_MARGIN_FACTOR, allow_minimum=False)


def check_max_points(value, field: str = "max_points", error=DataError) -> int:
    """A points-per-request limit in 1..:data:`MAX_POINTS_LIMIT`."""
    return validators.count(value, field, error, 1, MAX_POINTS_LIMIT)


@dataclasses.dataclass(frozen=True)
class Margins:
    """How far beyond the robot's limits requests and models may go.

    Attributes
    ----------
    position : float
        [rad] beyond the position limits; negative: positions are not checked.
    velocity, acceleration, effort : float
        [1] factors on the velocity, acceleration and effort limits of requests and their torques.
    model_effort : float
        [1] factor on the effort limits of a model's torques at the limits of motion.
    max_points : int
        Points per request.

    Each is checked on construction (DataError naming ``position_margin``, ``velocity_margin``,
    ..., ``max_points``).
    """

    position: float = DEFAULT_POSITION_MARGIN
    velocity: float = DEFAULT_VELOCITY_MARGIN
    acceleration: float = DEFAULT_ACCELERATION_MARGIN
    effort: float = DEFAULT_EFFORT_MARGIN
    model_effort: float = DEFAULT_MODEL_EFFORT_MARGIN
    max_points: int = DEFAULT_MAX_POINTS

    def __post_init__(self):
        checked = {"position": check_position_margin(self.position),
                   **{name: check_margin_factor(getattr(self, name), f"{name}_margin")
                      for name in ("velocity", "acceleration", "effort", "model_effort")},
                   "max_points": check_max_points(self.max_points)}
        for name, value in checked.items():
            object.__setattr__(self, name, value)


@dataclasses.dataclass(frozen=True)
class FeedforwardLimits:
    """What requests to one model are checked against, each (n,) in the model's joint order.

    Attributes
    ----------
    lower, upper : ndarray
        Position limits [rad]; -inf and inf for URDF continuous joints.
    velocity, acceleration : ndarray
        Velocity [rad/s] and acceleration [rad/s^2] limits.
    effort : ndarray
        Effort limits [N m], or where the robot gives none, :data:`DERIVED_EFFORT_FACTOR` times
        ``peak.torque`` (then ``effort_derived``).
    effort_derived : ndarray of bool
    peak : PeakTorques
        The model at the limits of motion.
    margins : Margins
    plans : dict
        What :func:`compute_feedforward` derives once per request joint order (:class:`_OnePointPlan`), by the
        tuple of the request's joint names; filled as requests come.
    """

    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    effort: np.ndarray
    effort_derived: np.ndarray
    peak: PeakTorques
    margins: Margins
    plans: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)


def feedforward_limits(model: DynamicModel, margins: Margins | None = None,
                       robot: RobotDescription | None = None) -> FeedforwardLimits:
    """The limits of ``robot`` (default the model's; it must have the model's joints, as
    :func:`admit_model` checks) for requests to ``model``, with :data:`DERIVED_EFFORT_FACTOR` times
    the model's torques at the limits of motion where it gives no effort limit."""
    robot = model.robot if robot is None else robot
    arrays = robot.limit_arrays(model.joint_names)
    peak = model.torque_at_limits_of_motion(arrays)
    derived = np.isnan(arrays.effort)
    bounds = robot.limit_arrays(model.joint_names, unbounded_continuous=True)
    return FeedforwardLimits(
        lower=bounds.lower, upper=bounds.upper, velocity=arrays.velocity, acceleration=arrays.acceleration,
        effort=np.where(derived, DERIVED_EFFORT_FACTOR * peak.torque, arrays.effort), effort_derived=derived,
        peak=peak, margins=Margins() if margins is None else margins)


def structure_difference(robot: RobotDescription, expected: RobotDescription) -> str | None:
    """How ``robot`` (a model's) differs from ``expected`` in what a model's torques depend on
    besides its parameters: name, joints (in order), kinematics (:attr:`RobotDescription.kinematics_hash`);
    None when it does not."""
    if robot.name != expected.name:
        return f"its robot is {robot.name!r}, not {expected.name!r}"
    if robot.joint_names != expected.joint_names:
        return (f"its robot has joints {list(robot.joint_names)} ({robot.n_joints}), not "
                f"{list(expected.joint_names)} ({expected.n_joints})")
    if robot.kinematics_hash != expected.kinematics_hash:
        return (f"its robot's kinematics (hash {robot.kinematics_hash}) are not those of {expected.name!r} "
                f"(hash {expected.kinematics_hash})")
    return None


def admit_model(model: DynamicModel, margins: Margins | None = None, expected: RobotDescription | None = None,
                expected_what: str = "the expected robot") -> FeedforwardLimits:
    """The limits requests to ``model`` are checked against, once the model is found fit to serve.

    Parameters
    ----------
    model : DynamicModel
    margins : Margins, optional
    expected : RobotDescription, optional
        The robot the model must be of (name, joints in order, kinematics hash); its limits are
        the ones used. Default: the model's own robot (nothing to compare).
    expected_what : str
        What ``expected`` is, for messages (``"robot_file ur5.yaml"``).

    Raises
    ------
    ModelRefusedError
        Naming the difference from ``expected``, the joint whose torque at the limits of
        motion exceeds ``margins.model_effort`` times its effort limit, with that torque, or the joint whose
        torque holding the arm still somewhere within its position limits exceeds ``margins.effort`` times its
        effort limit (every request near that pose would be refused: the margin is too small for the model).
    """
    if expected is not None:
        difference = structure_difference(model.robot, expected)
        if difference is not None:
            raise ModelRefusedError(f"the model is not of {expected_what}: {difference}")
    limits = feedforward_limits(model, margins, expected)
    bound = np.where(limits.effort_derived, np.inf, limits.margins.model_effort * limits.effort)
    over = limits.peak.torque > bound
    if over.any():
        joint = int(np.argmax(limits.peak.torque / bound))
        raise ModelRefusedError(
            f"at the limits of motion (velocities and accelerations at their limits) the model needs "
            f"{limits.peak.torque[joint]:.6g} N m at joint {model.joint_names[joint]}, more than model_effort_margin "
            f"{limits.margins.model_effort!r} times its effort limit {float(limits.effort[joint])!r} N m")
    holding = model.holding_torque(model.robot.limit_arrays() if expected is None
                                   else expected.limit_arrays(model.joint_names))
    bound = np.where(limits.effort_derived, np.inf, limits.margins.effort * limits.effort)
    over = holding > bound
    if over.any():
        joint = int(np.argmax(holding / bound))
        raise ModelRefusedError(
            f"holding the arm still within its position limits the model needs up to {holding[joint]:.6g} N m at "
            f"joint {model.joint_names[joint]}, more than effort_margin {limits.margins.effort!r} times its effort "
            f"limit {float(limits.effort[joint])!r} N m: every request near that pose would be refused")
    return limits


def joint_order(model_joints: Sequence[str], joint_names: Sequence[str]) -> list[int]:
    """Index in ``joint_names`` of each model joint: every model joint once, no other
    (:func:`robot_dynid.joint_names.match_joints`)."""
    return match_joints(model_joints, joint_names, "joint_names", "the model", extra=False)


def request_arrays(model_joints: Sequence[str], joint_names: Sequence[str], positions,
                   velocities=(), accelerations=(), max_points: int | None = None):
    """Flat per-point values in ``joint_names`` order as (N, n) arrays in the model's joint order.

    Parameters
    ----------
    model_joints : sequence of str, length n
    joint_names : sequence of str, length m
        Joints of the values; every model joint once, no joint the model does not know.
    positions : array_like, shape (N * m,)
        Joint positions [rad]; point k, joint j at ``k * m + j``; N >= 1.
    velocities : array_like, shape (N * m,) or (0,)
        Joint velocities [rad/s], same layout; empty means all zero.
    accelerations : array_like, shape (N * m,) or (0,)
        Joint accelerations [rad/s^2], same layout; empty means all zero.
    max_points : int, optional
        Largest N accepted.

    Returns
    -------
    q, qd, qdd : ndarray, shape (N, n)
        New arrays (the inputs, e.g. message buffers, are not kept).

    Raises
    ------
    DataError
        Naming the first problem: the joint names; then a field's size or N above
        ``max_points``; then the first non-finite value in point order, with its point, field
        and joint.
    """
    order = joint_order(model_joints, joint_names)
    m = len(order)
    values = {field: np.asarray(data, dtype=np.float64)
              for field, data in zip(FIELDS, (positions, velocities, accelerations))}
    for field, data in values.items():
        if data.ndim != 1:
            raise DataError(f"{field} must be a flat array (point k, joint j at k * {m} + j), "
                            f"got shape {data.shape}")
    size = values["positions"].size
    if size == 0:
        raise DataError("no points given (positions is empty)")
    if size % m:
        raise DataError(f"positions has {size} values, not a multiple of the {m} joints in joint_names "
                        f"(point k, joint j at k * {m} + j)")
    n_points = size // m
    if max_points is not None and n_points > max_points:
        raise DataError(f"{n_points} points requested (positions has {size} values for {m} joints), more than "
                        f"max_points {max_points}; split the request")
    for field in FIELDS[1:]:
        if values[field].size not in (0, size):
            raise DataError(f"{field} has {values[field].size} values, expected {size} ({n_points} "
                            f"point(s) x {m} joints, as positions) or none (all zero)")
    blocks = {field: data.reshape(n_points, m) if data.size else np.zeros((n_points, m))
              for field, data in values.items()}
    first_bad = []                  # (point, field index, joint) of each field's first non-finite value
    for index, (field, block) in enumerate(blocks.items()):
        bad = ~np.isfinite(block)
        if bad.any():
            point, joint = divmod(int(np.argmax(bad)), m)
            first_bad.append((point, index, joint))
    if first_bad:
        point, index, joint = min(first_bad)
        raise DataError(f"point {point}: {FIELDS[index]} of joint {joint_names[joint]} is "
                        f"{blocks[FIELDS[index]][point, joint]}")
    return tuple(block[:, order] for block in blocks.values())


def join_points(field: str, rows: Sequence, m: int) -> np.ndarray:
    """One field of N trajectory points, each a sequence of m values, as one flat array.

    Parameters
    ----------
    field : str
        One of :data:`FIELDS`, for messages.
    rows : sequence of N sequences of float
        The field of each point (e.g. ``JointTrajectoryPoint.positions``, array.array of doubles).
        Velocities and accelerations may be empty: zero for that point.
    m : int
        Number of joints.

    Returns
    -------
    ndarray, shape (N * m,), or (0,) when every point leaves velocities or accelerations empty
        Point k, joint j at ``k * m + j``: the input of :func:`request_arrays`.

    Raises
    ------
    DataError
        Naming the first point whose field has a size other than m (or 0 where allowed).
    """
    if all(type(row) is array.array and row.typecode == "d" and len(row) == m for row in rows):
        return np.frombuffer(b"".join(rows), dtype=np.float64)      # message fields: one copy
    if field != "positions" and all(len(row) == 0 for row in rows):
        return np.zeros(0)
    joined = np.zeros((len(rows), m))
    for index, row in enumerate(rows):
        values = np.asarray(row, dtype=np.float64)
        if values.size == 0 and field != "positions":
            continue
        if values.shape != (m,):
            raise DataError(f"point {index}: {field} has {values.size} values, expected {m} "
                            f"(one per joint in joint_names)")
        joined[index] = values
    return joined.reshape(-1)


def compute_feedforward(model: DynamicModel, joint_names, positions, velocities=(), accelerations=(),
                        temperature=None, elapsed=None, limits: FeedforwardLimits | None = None,
                        margins: Margins | None = None) -> np.ndarray:
    """Feed-forward torques [N m], shape (N, m), in the order of ``joint_names``.

    See :func:`request_arrays` for the inputs (flat arrays, point k, joint j at ``k * m + j``);
    ``temperature`` [deg C] (n,) in the model's joint order and ``elapsed`` [s] (one for all points, or (N,):
    each point's running time) are passed to friction models that drift. ``limits``: what the request is
    checked against (a server computes them once per model with :func:`admit_model`); default
    :func:`feedforward_limits` of the model's robot with ``margins`` (default :class:`Margins`). The result is
    C-contiguous:
    ``.reshape(-1)`` is the flat layout of the inputs. A one-point request within every limit (the
    reference topic's, a controller's one-point service call) takes a shorter path, with the bounds and
    joint order derived once per request joint order (``limits.plans``), to the same torques: bit for bit,
    or, where the regressor has a compiled one-point call (:attr:`Regressor.one_point_torque`:
    coulomb_viscous friction without drift), to rounding (its ``Y @ parameters`` adds left to right, the
    batch's matrix product in its own order; about 1e-16 relative).

    Raises DataError, naming the point and joint of the first problem in point order, where
    :func:`request_arrays` does; for a position, velocity or acceleration beyond the limits and
    margins (see the module docstring); for a torque that is not finite (values too large for the
    model, e.g. a velocity whose square overflows) or beyond ``effort_margin`` times the effort limit.
    """
    limits = feedforward_limits(model, margins) if limits is None else limits
    fast = _one_point(model, limits, joint_names, positions, velocities, accelerations, temperature, elapsed)
    if fast is not None:
        return fast
    return _checked_feedforward(model, joint_names, positions, velocities, accelerations, temperature, elapsed, limits)


def _checked_feedforward(model, joint_names, positions, velocities, accelerations, temperature, elapsed,
                         limits: FeedforwardLimits) -> np.ndarray:
    """:func:`compute_feedforward` for any request: every check on arrays, the first problem named."""
    margins = limits.margins
    q, qd, qdd = request_arrays(model.joint_names, joint_names, positions, velocities, accelerations,
                                max_points=margins.max_points)
    back = np.argsort(joint_order(model.joint_names, joint_names))     # request order from model order
    _check_motion(q, qd, qdd, back, joint_names, limits)
    if model.friction.needs_temperature and temperature is None:
        raise DataError("the model's friction depends on joint temperature, and none has been received")
    if temperature is not None:
        temperature = np.broadcast_to(np.asarray(temperature, float), q.shape)
    if elapsed is not None:
        elapsed = np.asarray(elapsed, dtype=float)
        if elapsed.size not in (1, q.shape[0]):
            raise DataError(f"elapsed must be one running time [s] or one per point ({q.shape[0]}), got "
                            f"{elapsed.size}")
        elapsed = np.broadcast_to(elapsed.reshape(-1), (q.shape[0],))
    with np.errstate(all="ignore"):             # overflow is reported below, by point and joint
        tau = np.ascontiguousarray(model.torque(q, qd, qdd, temperature=temperature, elapsed=elapsed)[:, back])
    bad = ~np.isfinite(tau)
    if bad.any():
        point, joint = divmod(int(np.argmax(bad)), len(back))
        raise DataError(f"point {point}: the effort of joint {joint_names[joint]} is {float(tau[point, joint])!r}: "
                        f"the point's values are too large for the model to evaluate")
    effort = limits.effort[back]
    over = np.abs(tau) > margins.effort * effort
    if over.any():
        point, joint = divmod(int(np.argmax(over)), len(back))
        bound = (f"its effort limit {float(effort[joint])!r} N m" if not limits.effort_derived[back[joint]] else
                 f"its bound {float(effort[joint]):.6g} N m ({DERIVED_EFFORT_FACTOR:g} x the model's largest "
                 f"torque at the limits of motion: the robot gives no effort limit)")
        raise DataError(f"point {point}: the effort of joint {joint_names[joint]} is {float(tau[point, joint]):.6g} "
                        f"N m, beyond {bound} times effort_margin {margins.effort!r}")
    return tau


#: Request joint orders a :class:`FeedforwardLimits` keeps plans for (a server sees one or two).
MAX_PLANS = 16
_NO_BOUND = sys.float_info.max     # a bound that only non-finite values break


@dataclasses.dataclass(frozen=True)
class _OnePointPlan:
    """What a one-point request in one joint order is checked against and evaluated with, derived once.

    ``order`` (n,): index in the request of each model joint; ``back`` (m,): model index of each request
    joint. The bounds are in request order (``lower <= value <= upper`` passes exactly where
    :func:`_check_motion` and the effort check let a value pass, and no non-finite value passes):
    ``motion`` (3, 2, m), the lower and upper bounds of positions ``limits -+ position_margin`` (no bound
    for continuous joints or a negative margin), velocities and accelerations ``+-`` margin times limit;
    ``effort`` (1, 2, n), those of the torques, ``+-`` effort_margin times the effort limit, in model order.
    ``parameters`` (p,): :meth:`DynamicModel.torque_parameters`; ``local``: each thread's
    :class:`~robot_dynid.model.regressor.OnlineRegressor`; ``compiled``: the regressor's
    :attr:`~robot_dynid.model.regressor.Regressor.one_point_torque` (None: the online regressor's path).
    """

    model: DynamicModel
    order: np.ndarray
    back: np.ndarray
    motion: np.ndarray
    effort: np.ndarray
    parameters: np.ndarray
    local: threading.local
    compiled: object


def _plan(model: DynamicModel, limits: FeedforwardLimits, joint_names: tuple) -> _OnePointPlan:
    order = np.array(joint_order(model.joint_names, joint_names), dtype=np.intp)
    back = np.argsort(order)
    margins = limits.margins

    def bounds(low, high):      # (2, n) in model order; an infinite bound is the largest float
        return np.where(np.isfinite(low), low, -_NO_BOUND), np.where(np.isfinite(high), high, _NO_BOUND)

    position = ((limits.lower - margins.position, limits.upper + margins.position) if margins.position >= 0.0 else
                (np.full(len(order), -np.inf), np.full(len(order), np.inf)))
    velocity, acceleration = margins.velocity * limits.velocity, margins.acceleration * limits.acceleration
    motion = np.array([bounds(*position), bounds(-velocity, velocity), bounds(-acceleration, acceleration)])
    effort = margins.effort * limits.effort
    return _OnePointPlan(model, order, back, np.ascontiguousarray(motion[:, :, back]),
                         np.array([bounds(-effort, effort)]), np.ascontiguousarray(model.torque_parameters(), float),
                         threading.local(), model.regressor.one_point_torque)


def _one_point(model, limits, joint_names, positions, velocities, accelerations, temperature, elapsed):
    """:func:`compute_feedforward` of a one-point request that passes every check, by a plan made once per
    joint order (:class:`_OnePointPlan`): the same torques (see :func:`compute_feedforward`). None for anything
    else (more points, a malformed or refused request, a missing or non-finite temperature or elapsed time,
    where the friction needs them): the checked path then answers, or refuses with its message."""
    names = tuple(joint_names)
    plans = limits.plans
    plan = plans.get(names)
    if plan is None or plan.model is not model:
        try:
            plan = _plan(model, limits, names)
        except DataError:
            return None
        if len(plans) >= MAX_PLANS:
            plans.clear()
        plans[names] = plan
    friction = model.friction
    if friction.needs_temperature:
        if temperature is None or np.shape(temperature) != (len(plan.order),) \
                or not all(math.isfinite(value) for value in np.asarray(temperature, dtype=float).tolist()):
            return None
    else:
        temperature = None
    if friction.needs_elapsed:
        if elapsed is None or np.size(elapsed) != 1 or not 0.0 <= float(np.ravel(elapsed)[0]) < math.inf:
            return None
        elapsed = float(np.ravel(elapsed)[0])
    else:
        elapsed = None
    fields = (positions, velocities, accelerations)
    try:        # float64 buffers (the node's array.array fields) as they are; anything else converted once
        return _point_torques(plan, fields, temperature, elapsed)
    except (TypeError, ValueError, BufferError):
        fields = tuple(np.ascontiguousarray(field, dtype=np.float64) for field in fields)
        try:
            return _point_torques(plan, fields, temperature, elapsed)
        except ValueError:      # not one-dimensional: the checked path says what
            return None


def _point_torques(plan: _OnePointPlan, fields, temperature, elapsed):
    """The torques (1, m) of one point (``fields`` (q, qd, qdd) float64 buffers in request order), or None
    where a value or torque is beyond its bounds: one compiled call where the regressor has one
    (:attr:`Regressor.one_point_torque`), else two around the online regressor."""
    if plan.compiled is not None:
        return plan.compiled(fields, plan.order, plan.motion, plan.parameters, plan.back, plan.effort)
    online = getattr(plan.local, "regressor", None)
    if online is None:
        online = plan.local.regressor = plan.model.regressor.online()
    if not _online_kernel.gather_within(fields, plan.order, plan.motion, online.states):
        return None
    tau = np.empty((1, 1, len(plan.back)))
    if not _online_kernel.gather_within((online.compute_states(temperature, elapsed) @ plan.parameters,),
                                        plan.back, plan.effort, tau):
        return None
    return tau[0]


def _check_motion(q, qd, qdd, back, joint_names, limits: FeedforwardLimits) -> None:
    """DataError naming the first point (then field, then joint in request order) beyond the
    position limits plus ``position_margin`` or ``velocity_margin`` / ``acceleration_margin``
    times the velocity / acceleration limits. q, qd, qdd (N, n) in model order."""
    margins = limits.margins
    outside = [np.zeros(q.shape, dtype=bool) if margins.position < 0.0 else
               (q < limits.lower - margins.position) | (q > limits.upper + margins.position),
               np.abs(qd) > margins.velocity * limits.velocity,
               np.abs(qdd) > margins.acceleration * limits.acceleration]
    first = []                              # (point, field index, joint in request order) of each field
    for index, bad in enumerate(outside):
        bad = bad[:, back]
        if bad.any():
            point, joint = divmod(int(np.argmax(bad)), len(back))
            first.append((point, index, joint))
    if not first:
        return
    point, index, joint = min(first)
    model_joint = back[joint]
    value = float((q, qd, qdd)[index][point, model_joint])
    field, unit = FIELDS[index], UNITS[FIELDS[index]]
    if index == 0:
        low, high = float(limits.lower[model_joint]), float(limits.upper[model_joint])
        raise DataError(f"point {point}: {field} of joint {joint_names[joint]} is {value!r} {unit}, beyond its "
                        f"limits [{low!r}, {high!r}] {unit} by more than position_margin {margins.position!r} rad")
    name = ("velocity", "acceleration")[index - 1]
    limit = float((limits.velocity, limits.acceleration)[index - 1][model_joint])
    factor = (margins.velocity, margins.acceleration)[index - 1]
    raise DataError(f"point {point}: {field} of joint {joint_names[joint]} is {value!r} {unit}, beyond its {name} "
                    f"limit {limit!r} {unit} times {name}_margin {factor!r}")


class ReferenceMonitor:
    """The state of a stream of references turned into torque commands, and when zero is due.

    Times are seconds on one monotonic clock, given by the caller. After ``timeout`` s without a
    valid reference (none since ``start``, the stream stopped, or every reference refused) the
    last torque sent must not be held: :meth:`state` is :attr:`TIMEOUT` and the caller sends zero
    feed-forward (the feedback controller alone acts) until a valid reference comes.

    The caller calls :meth:`check` every ``check_period`` s. A check that comes more than a period
    late means the caller itself was held up (e.g. its process converting a large request): that
    time does not count, since references waiting in its queue could not be taken meanwhile;
    otherwise a stall longer than ``timeout`` would send one zero between two valid torques.

    Parameters
    ----------
    timeout : float
        [s], > 0.
    start : float
        [s] when the stream was expected to begin.
    enabled : bool
        False: there is no stream (a server of requests only): the state is OK or NO_MODEL.
    check_period : float, optional
        [s] between calls of :meth:`check`; default ``timeout / 4``.
    """

    NO_MODEL = "no model"
    WAITING = "waiting for reference"
    OK = "ok"
    REFUSED = "reference refused"
    TIMEOUT = "reference timeout"

    def __init__(self, timeout: float, start: float, enabled: bool = True, check_period: float | None = None):
        self.timeout = validators.positive(timeout, "reference_timeout", DataError, "s")
        self.check_period = self.timeout / 4.0 if check_period is None else check_period
        self.enabled = enabled
        self.last_valid = start
        self.last_check = start
        self.stalled = 0.0          # [s] the caller was held up since the last valid reference
        self.received = False
        self.refusal = ""           # why the last reference was refused, if it was the last one received
        self.last_refusal = ""      # the latest refusal, kept after valid references
        self.answered_count = 0
        self.refused_count = 0

    def answered(self, now: float) -> None:
        """A reference was turned into a torque command at ``now`` [s]."""
        self.last_valid, self.received, self.refusal, self.stalled = now, True, "", 0.0
        self.answered_count += 1

    def refused(self, now: float, reason: str) -> None:
        """A reference was refused at ``now`` [s] for ``reason``; nothing was sent for it."""
        self.received, self.refusal, self.last_refusal = True, reason, reason
        self.refused_count += 1

    def age(self, now: float) -> float:
        """[s] since the last valid reference (or since start, before the first), less the time the
        caller was held up (see the class docstring)."""
        return now - self.last_valid - self.stalled

    def check(self, now: float, has_model: bool) -> bool:
        """Called every ``check_period`` s: whether zero feed-forward is due now."""
        late = now - self.last_check - self.check_period
        self.last_check = now
        if late > self.check_period:
            self.stalled += late
        return self.state(now, has_model)[0] == self.TIMEOUT

    def state(self, now: float, has_model: bool) -> tuple[str, str]:
        """(state, message): one of the class's states and why, for a status."""
        if not has_model:
            return self.NO_MODEL, "no model yet: nothing is computed or published"
        if not self.enabled:
            return self.OK, ""
        age = self.age(now)
        if age > self.timeout:
            cause = f"; the last reference was refused: {self.refusal}" if self.refusal else ""
            what = "no valid reference" if self.received else "no reference yet"
            return self.TIMEOUT, (f"{what} for {age:.3g} s (reference_timeout {self.timeout:g} s): publishing zero "
                                  f"feed-forward{cause}")
        if self.refusal:
            return self.REFUSED, f"reference refused, nothing new published: {self.refusal}"
        if not self.received:
            return self.WAITING, "waiting for the first reference"
        return self.OK, ""
