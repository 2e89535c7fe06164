"""Wear indicators: what an identified model says about the robot whatever trajectory it came from, and
their changes tested against the spread seen between recordings of unchanged robots.

Base parameters fitted on different excitation trajectories differ through model error even when the robot
did not change (a parameter the trajectory hardly excites moves by many of its standard deviations), so a
robot's change is judged on quantities that matter for wear and that every fit determines well. Each is a
torque [N m] (a force [N] for a prismatic joint) of one joint under fixed reference conditions
(:class:`ReferenceConditions`), from the arm's base parameters ``theta`` (r,) alone (a payload the model
carries and torque offsets, a sensor's zero rather than the robot, are left out):

- ``friction``: the friction torque opposing the motion of joint j moving alone at ``v = s * v_max_j`` for
  each ``s`` in :data:`REFERENCE_SPEED_FRACTIONS`, from the friction terms only, the mean of both directions:
  ``((Y_f(0, v e_j, 0) - Y_f(0, -v e_j, 0)) theta)_j / 2`` (positive for friction that opposes the motion;
  every friction model of the package is odd in the speed, so both directions give this same torque; warm,
  for a time drift; none for a temperature drift, which needs a temperature);
- ``gravity``: ``(Y_g(q_p, 0, 0) theta)_j``, the inertial terms at rest at each reference pose ``q_p``
  (joints whose gravity torque is structurally zero, a vertical first axis, have none);
- ``motion``: the RMS over the reference motion of the torque the arm's model predicts,
  ``sqrt(mean_t (Y(q_t, qd_t, qdd_t) theta)_j^2)``: along the protocol's validation trajectory where it was
  recorded (:func:`validation_motion`), else :func:`builtin_reference_motion`.

The first two are linear, ``x = c^T theta``; the RMS is linearised, ``c`` its gradient. The estimation std is
``sqrt(c^T V c)``, V the parameters' covariance as the model gives it (``diag(std^2)``: the model file keeps
standard deviations, not their correlations).

The null (:func:`between_recording_spread`, :func:`change_statistics`): an unchanged robot's indicator moves
from recording to recording by more than its estimation std (the trajectory, the temperature, model error,
noise correlated in time), and by more where the trajectory excites the indicator's parameters poorly, which is
also where its estimation std is large. So a recording's spread is taken as ``kappa s_i``, the estimation std
inflated by a factor measured on the recordings themselves: the successive differences ``d = x_{i+1} - x_i`` of
each robot's own history, standardised by their estimation std, ``z = d / sqrt(s_i^2 + s_{i+1}^2)``, pooled
over the fleet's robots (a robot with one recording takes the fleet's). The median of ``|z|`` (a worn robot's
step is one large difference among many, which a median ignores) gives a first scale ``1.4826 median |z|``;
the differences within :data:`SPREAD_REJECTION` such scales of zero are kept and ``kappa`` is the root of
their mean square (the efficiency of a standard deviation, with as many degrees of freedom as differences
kept), at least 1 (never below the estimation std). A recording compared with the baseline then differs by
``Delta = x_i - x_b``, ``t = Delta / (kappa sqrt(s_i^2 + s_b^2))``, two-sided p from Student's t with the
differences kept as degrees of freedom.

A change is wear only when it is also large enough to matter (:func:`practical_thresholds`): at least
:data:`PRACTICAL_FRACTION` of the joint's friction torque.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from typing import TYPE_CHECKING, Sequence

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DynIdError

__all__ = ["REFERENCE_SPEED_FRACTIONS", "POSE_OFFSET", "MOTION_PERIOD", "MOTION_SPEED_FRACTION", "MOTION_SAMPLES",
           "PRACTICAL_FRACTION", "SPREAD_REJECTION", "MAD_TO_STD", "KINDS", "ReferenceConditions", "reference_poses",
           "builtin_reference_motion", "validation_motion", "reference_conditions", "Indicator", "WearIndicators",
           "wear_indicators", "practical_thresholds", "BetweenRecordingSpread", "between_recording_spread",
           "ChangeStatistics", "change_statistics"]

if TYPE_CHECKING:
    from robot_dynid.model.dynamic_model import DynamicModel
    from robot_dynid.model.robot_description import RobotDescription
    from robot_dynid.recordings.recording import Recording

REFERENCE_SPEED_FRACTIONS = (0.1, 0.5)
"""[1] of each joint's velocity limit: a slow speed (mostly Coulomb friction) and a fast one (viscous)."""
POSE_OFFSET = 0.5
"""[rad] (m for a prismatic joint) of the second and third reference poses from the middle of each joint's
range, at most a quarter of the range: within what excitations cover."""
MOTION_PERIOD = 4.0
"""[s] period of the built-in reference motion."""
MOTION_SPEED_FRACTION = 0.3
"""[1] of each joint's velocity limit: the built-in reference motion's peak speed, at most."""
MOTION_SAMPLES = 400
"""Samples of the reference motion the RMS is taken over (a longer recorded one is thinned to these)."""
PRACTICAL_FRACTION = 0.15
"""[1] of a joint's friction torque (at the fastest reference speed, both directions' mean): smaller changes
are not reported as wear. A joint's friction moves by about this much between a cold and a warm robot (it
falls over the first 25-50 minutes of running and settles, METHODS.md section 3), and between days with the
hall's temperature, so a smaller change says nothing about the state of the joint."""
SPREAD_REJECTION = 3.5
"""Successive differences beyond this many robust scales (1.4826 median ``|d|``) of zero are left out of the
spread: a step of a worn robot, not the spread of unchanged ones."""
MAD_TO_STD = 1.4826
KINDS = ("friction", "gravity", "motion")
_ZERO = 1e-10
"""An indicator whose gradient is below this times the largest of its kind's is structurally zero."""


@dataclasses.dataclass(frozen=True)
class ReferenceConditions:
    """Where a robot's indicators are taken: the same for every model compared.

    Attributes
    ----------
    joint_names : tuple of str (n,)
    speeds : ndarray, shape (S, n)
        [rad/s] (m/s) reference speed of each joint, one row per fraction of ``speed_fractions``.
    speed_fractions : tuple of float (S,)
        [1] of the joints' velocity limits.
    poses : ndarray, shape (P, n)
        [rad] (m) reference poses.
    motion : tuple of ndarray
        ``(q, qd, qdd)`` each (N, n) [rad, rad/s, rad/s^2]: the reference motion.
    motion_source : str
        ``built-in`` or where the motion was recorded.
    prismatic : tuple of bool (n,)
    """

    joint_names: tuple
    speeds: np.ndarray
    speed_fractions: tuple
    poses: np.ndarray
    motion: tuple
    motion_source: str
    prismatic: tuple

    @functools.cached_property
    def key(self) -> str:
        """SHA-256 (hex, 16 digits) of the conditions: indicators of equal keys are comparable."""
        content = [list(self.joint_names), self.speeds.round(9).tolist(), self.poses.round(9).tolist(),
                   [np.round(part, 9).tolist() for part in self.motion]]
        return hashlib.sha256(json.dumps(content).encode()).hexdigest()[:16]

    def to_dict(self) -> dict:
        return {"joint_names": list(self.joint_names), "speed_fractions": list(self.speed_fractions),
                "speeds": self.speeds.tolist(), "poses": self.poses.tolist(), "motion_source": self.motion_source,
                "motion_samples": int(self.motion[0].shape[0])}


def _range_middle_and_reach(robot: RobotDescription) -> tuple[np.ndarray, np.ndarray]:
    limits = robot.limit_arrays()
    middle = 0.5 * (limits.lower + limits.upper)
    reach = np.minimum(POSE_OFFSET, 0.25 * (limits.upper - limits.lower))
    return middle, reach


def reference_poses(robot: RobotDescription) -> np.ndarray:
    """(3, n) [rad] (m): the middle of each joint's range, and that plus and minus :data:`POSE_OFFSET`
    (at most a quarter of the range) with alternating signs along the chain (+, -, +, ... and -, +, -, ...),
    so that the links fold differently at each."""
    middle, reach = _range_middle_and_reach(robot)
    signs = np.where(np.arange(robot.n_joints) % 2 == 0, 1.0, -1.0)
    return np.stack([middle, middle + signs * reach, middle - signs * reach])


def builtin_reference_motion(robot: RobotDescription, samples: int = MOTION_SAMPLES) -> tuple:
    """One period of ``q_j(t) = m_j + A_j sin(2 pi t / T + 2 pi j / n)`` at ``samples`` instants: ``m_j`` the
    middle of the joint's range, ``A_j`` :data:`POSE_OFFSET` (at most a quarter of the range, and small enough
    that the peak speed ``2 pi A_j / T`` is at most :data:`MOTION_SPEED_FRACTION` of the velocity limit and the
    peak acceleration at most that fraction of the acceleration limit), ``T`` :data:`MOTION_PERIOD`.

    Returns
    -------
    tuple of ndarray
        ``(q, qd, qdd)`` each (samples, n) [rad, rad/s, rad/s^2].
    """
    limits = robot.limit_arrays()
    middle, reach = _range_middle_and_reach(robot)
    omega = 2.0 * np.pi / MOTION_PERIOD
    acceleration = np.where(np.isfinite(limits.acceleration), limits.acceleration, np.inf)
    amplitude = np.minimum.reduce([reach, MOTION_SPEED_FRACTION * limits.velocity / omega,
                                   MOTION_SPEED_FRACTION * acceleration / omega**2])
    n = robot.n_joints
    phase = omega * np.arange(samples)[:, None] * (MOTION_PERIOD / samples) + 2.0 * np.pi * np.arange(n) / n
    return (middle + amplitude * np.sin(phase), amplitude * omega * np.cos(phase),
            -amplitude * omega**2 * np.sin(phase))


def validation_motion(recording: Recording, joint_names: Sequence[str]) -> tuple | None:
    """The motion of ``recording``'s first run of samples labelled ``validation`` (the protocol's validation
    trajectory), in ``joint_names``' order and thinned to at most :data:`MOTION_SAMPLES` samples: ``(q, qd,
    qdd)`` each (N, n) [rad, rad/s, rad/s^2]; None without such samples or without velocities and
    accelerations."""
    if recording.stage is None or recording.qd is None or recording.qdd is None:
        return None
    for stage, _, start, stop in recording.segments():
        if stage == "validation" and stop - start >= 2:
            run = recording.take(slice(start, stop)).reorder(joint_names)
            stride = max(1, int(np.ceil(run.n_samples / MOTION_SAMPLES)))
            return tuple(np.ascontiguousarray(part[::stride]) for part in (run.q, run.qd, run.qdd))
    return None


def reference_conditions(robot: RobotDescription, motion: tuple | None = None,
                         motion_source: str = "") -> ReferenceConditions:
    """The reference conditions of ``robot``: speeds at :data:`REFERENCE_SPEED_FRACTIONS` of its velocity
    limits, :func:`reference_poses`, and ``motion`` ``(q, qd, qdd)`` each (N, n) in its joint order
    [rad, rad/s, rad/s^2] (recorded at ``motion_source``), else :func:`builtin_reference_motion`.

    Raises
    ------
    DynIdError
        A motion of the wrong shape or not finite (naming the array).
    """
    if motion is None:
        motion, motion_source = builtin_reference_motion(robot), "built-in"
    else:
        n = robot.n_joints
        motion = tuple(validators.array(part, f"reference motion {name}", DynIdError, shape=(None, n),
                                        axes=("samples", "joints"), columns=robot.joint_names)
                       for name, part in zip(("q", "qd", "qdd"), motion))
        if not motion[0].shape == motion[1].shape == motion[2].shape or motion[0].shape[0] < 2:
            raise DynIdError(f"reference motion q, qd and qdd must have the same shape of at least 2 samples, got "
                             f"{[part.shape for part in motion]}")
        stride = max(1, int(np.ceil(motion[0].shape[0] / MOTION_SAMPLES)))
        motion = tuple(np.ascontiguousarray(part[::stride]) for part in motion)
    speeds = np.outer(REFERENCE_SPEED_FRACTIONS, robot.limit_arrays().velocity)
    return ReferenceConditions(tuple(robot.joint_names), speeds, REFERENCE_SPEED_FRACTIONS, reference_poses(robot),
                               tuple(motion), motion_source or "recorded", tuple(robot.prismatic))


@dataclasses.dataclass(frozen=True)
class Indicator:
    """What one indicator is.

    Attributes
    ----------
    kind : {"friction", "gravity", "motion"}
    joint : str
    unit : str
        ``N m`` (``N`` for a prismatic joint).
    speed : float or None
        [rad/s] (m/s) the friction indicator's speed (both directions).
    pose : int or None
        0-based index of the gravity indicator's reference pose.
    """

    kind: str
    joint: str
    unit: str
    speed: float | None = None
    pose: int | None = None

    @property
    def condition(self) -> str:
        """``at 1.58 rad/s``, ``at pose 2`` (1-based), ``along the reference motion``."""
        if self.kind == "friction":
            return f"at {self.speed:.3g} {'m/s' if self.unit == 'N' else 'rad/s'}"
        if self.kind == "gravity":
            return f"at pose {self.pose + 1}"
        return "along the reference motion"

    @property
    def quantity(self) -> str:
        return {"friction": "friction", "gravity": "gravity torque" if self.unit == "N m" else "gravity force",
                "motion": "torque RMS" if self.unit == "N m" else "force RMS"}[self.kind]

    @property
    def name(self) -> str:
        """``elbow_joint friction at 1.58 rad/s``: unique within a robot's indicators."""
        return f"{self.joint} {self.quantity} {self.condition}"

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "joint": self.joint, "unit": self.unit,
                "condition": self.condition, "speed": self.speed, "pose": self.pose}


@dataclasses.dataclass(frozen=True)
class WearIndicators:
    """A model's indicators (:func:`wear_indicators`): ``values`` and ``std`` (K,) in each indicator's unit."""

    indicators: tuple
    values: np.ndarray
    std: np.ndarray
    reference_key: str

    @property
    def names(self) -> tuple:
        return tuple(indicator.name for indicator in self.indicators)


def _masked(base, regressor, Y: np.ndarray, groups: Sequence[str]) -> np.ndarray:
    """Base columns of ``Y`` (..., p) -> (..., r), those whose independent parameter is outside ``groups``
    (slices of :attr:`Regressor.slices`) set to zero."""
    slices = regressor.slices
    keep = np.array([any(slices[group].start <= index < slices[group].stop for group in groups)
                     for index in base.independent], dtype=bool)
    return base.select(Y) * keep


def wear_indicators(model: DynamicModel, reference: ReferenceConditions) -> WearIndicators:
    """The indicators of ``model`` under ``reference`` (module docstring), in the order friction (joint by
    joint, speeds ascending), gravity (pose by pose, joint by joint), motion (joint by joint).

    Raises
    ------
    DynIdError
        The model's joints are not the reference's (naming them).
    """
    if tuple(model.joint_names) != tuple(reference.joint_names):
        raise DynIdError(f"the model's joints {list(model.joint_names)} are not in the reference conditions' order "
                         f"{list(reference.joint_names)}")
    regressor, base, theta = model.regressor, model.base, model.values
    n = len(reference.joint_names)
    units = ["N" if prismatic else "N m" for prismatic in reference.prismatic]
    indicators, gradients = [], []
    friction = regressor.slices["friction"]
    if friction.stop > friction.start and not model.friction.needs_temperature:
        speeds = np.repeat(reference.speeds.T.ravel(), 2) * np.tile([1.0, -1.0], reference.speeds.size)
        joints = np.repeat(np.arange(n), 2 * reference.speeds.shape[0])
        qd = np.zeros((speeds.size, n))
        qd[np.arange(speeds.size), joints] = speeds
        zeros = np.zeros_like(qd)
        elapsed = np.full(speeds.size, 1e9) if model.friction.needs_elapsed else None
        Y = _masked(base, regressor, regressor.compute(zeros, qd, zeros, elapsed=elapsed), ("friction",))
        for k in range(0, speeds.size, 2):
            j = joints[k]
            indicators.append(Indicator("friction", reference.joint_names[j], units[j], speed=float(speeds[k])))
            gradients.append(0.5 * (Y[k, j] - Y[k + 1, j]))
    elapsed = None if not model.friction.needs_elapsed else np.full(len(reference.poses), 1e9)
    zeros = np.zeros_like(reference.poses)
    if model.friction.needs_temperature:
        temperature = np.full(reference.poses.shape, model.friction.reference_temperature)
    else:
        temperature = None
    Y = _masked(base, regressor, regressor.compute(reference.poses, zeros, zeros, temperature, elapsed), ("inertial",))
    scale = np.abs(Y).max() if Y.size else 0.0
    for p in range(len(reference.poses)):
        for j in range(n):
            if np.abs(Y[p, j]).max(initial=0.0) > _ZERO * scale:
                indicators.append(Indicator("gravity", reference.joint_names[j], units[j], pose=p))
                gradients.append(Y[p, j])
    q, qd, qdd = reference.motion
    drift = {}
    if model.friction.needs_elapsed:
        drift["elapsed"] = np.full(q.shape[0], 1e9)
    if model.friction.needs_temperature:
        drift["temperature"] = np.full(q.shape, model.friction.reference_temperature)
    Y = _masked(base, regressor, regressor.compute(q, qd, qdd, **drift), ("inertial", "friction", "armature"))
    tau = Y @ theta                                            # (N, n)
    rms = np.sqrt(np.mean(tau**2, axis=0))
    for j in range(n):
        indicators.append(Indicator("motion", reference.joint_names[j], units[j]))
        gradients.append(tau[:, j] @ Y[:, j] / (q.shape[0] * rms[j]) if rms[j] > 0 else np.zeros(base.rank))
    C = np.array(gradients).reshape(len(gradients), base.rank)
    values = C @ theta
    values[-n:] = rms
    std = np.sqrt(np.einsum("kr,r,kr->k", C, model.std**2, C))
    return WearIndicators(tuple(indicators), values, std, reference.key)


def practical_thresholds(indicators: Sequence[Indicator], values, fraction: float = PRACTICAL_FRACTION) -> np.ndarray:
    """[N m] (N) per indicator (K,): ``fraction`` times its joint's friction at the fastest reference speed in
    ``values`` (K,) of a model (the baseline's), as a magnitude; for a joint without friction indicators,
    ``fraction`` times its torque RMS along the reference motion."""
    values = np.asarray(values, dtype=float)
    fastest: dict = {}
    for indicator, value in zip(indicators, values):
        if indicator.kind == "friction" and indicator.speed >= fastest.get(indicator.joint, (-1.0, 0.0))[0]:
            fastest[indicator.joint] = (indicator.speed, abs(value))
    for indicator, value in zip(indicators, values):
        if indicator.kind == "motion" and indicator.joint not in fastest:
            fastest[indicator.joint] = (0.0, abs(value))
    return np.array([fraction * fastest[indicator.joint][1] for indicator in indicators])


@dataclasses.dataclass(frozen=True)
class BetweenRecordingSpread:
    """How much unchanged robots' indicators move between recordings (:func:`between_recording_spread`), each
    (K,).

    Attributes
    ----------
    inflation : ndarray
        ``kappa`` [1]: the spread of a recording's indicator is ``kappa`` times its estimation std, at least 1.
    measured : ndarray
        [1] the robust scale of the standardised differences before the floor of 1 (NaN without any).
    difference : ndarray
        [N m] (N) robust std of a difference between two recordings, ``1.4826 median |d|``: the size of the
        spread in the indicator's unit, as reported.
    kept, total : ndarray of int
        Differences kept (within :data:`SPREAD_REJECTION` scales), and all those with an estimation std.
    """

    inflation: np.ndarray
    measured: np.ndarray
    difference: np.ndarray
    kept: np.ndarray
    total: np.ndarray

    def to_dict(self, names: Sequence[str]) -> dict:
        return {name: {"inflation": float(self.inflation[k]), "measured_inflation": float(self.measured[k]),
                       "difference_std": float(self.difference[k]), "differences_kept": int(self.kept[k]),
                       "differences": int(self.total[k])} for k, name in enumerate(names)}


def between_recording_spread(histories: Sequence[tuple]) -> BetweenRecordingSpread:
    """The spread of ``histories``: ``(values, std)`` of each robot, each (m_r, K) over its recordings in time
    order (module docstring). An indicator without any difference (every robot has one recording, or no
    estimation std) has an inflation of NaN.

    Raises
    ------
    DynIdError
        Histories of different indicator counts.
    """
    widths = {np.shape(values)[1] for values, _ in histories}
    if len(widths) > 1:
        raise DynIdError(f"histories of different indicator counts {sorted(widths)}: pool only indicators of the "
                         "same reference conditions")
    width = widths.pop() if widths else 0
    empty = [np.zeros((0, width))]
    d = np.concatenate([np.diff(np.asarray(values, float), axis=0) for values, _ in histories] + empty)
    v = np.concatenate([np.asarray(std, float)[1:]**2 + np.asarray(std, float)[:-1]**2 for _, std in histories]
                       + empty)
    measured, difference = np.full(width, np.nan), np.full(width, np.nan)
    kept, total = np.zeros(width, dtype=int), np.zeros(width, dtype=int)
    for k in range(width):
        usable = v[:, k] > 0
        total[k] = int(np.count_nonzero(usable))
        if not total[k]:
            continue
        z = d[usable, k] / np.sqrt(v[usable, k])
        first = MAD_TO_STD * np.median(np.abs(z))
        inside = np.abs(z) <= SPREAD_REJECTION * first if first > 0 else z == 0
        kept[k] = int(np.count_nonzero(inside))
        measured[k] = float(np.sqrt(np.mean(z[inside]**2)))
        difference[k] = MAD_TO_STD * float(np.median(np.abs(d[usable, k])))
    inflation = np.where(np.isnan(measured), np.nan, np.maximum(measured, 1.0))
    return BetweenRecordingSpread(inflation, measured, difference, kept, total)


@dataclasses.dataclass(frozen=True)
class ChangeStatistics:
    """Recordings against a baseline (:func:`change_statistics`), each (c, K).

    ``difference`` [N m] (N), ``combined_std`` ``kappa sqrt(s_i^2 + s_b^2)`` (same unit), ``t`` [1], ``dof``
    (degrees of freedom of the null's t distribution), ``p`` (two-sided) [1]."""

    difference: np.ndarray
    combined_std: np.ndarray
    t: np.ndarray
    dof: np.ndarray
    p: np.ndarray

    def band(self, coverage: float = 0.95) -> np.ndarray:
        """(c, K) [N m] (N): half-width of the interval around the baseline in which an unchanged robot's
        recording falls with probability ``coverage``, ``t_{(1 + coverage) / 2, dof} combined_std``."""
        from scipy.special import stdtrit           # scipy.stats' t.ppf, without its 1 s import
        return stdtrit(self.dof, 0.5 * (1.0 + coverage)) * self.combined_std


def change_statistics(baseline_values, baseline_std, values, std, spread: BetweenRecordingSpread) -> ChangeStatistics:
    """Each of ``values`` (c, K) (std ``std``) against ``baseline_values`` (K,) (std ``baseline_std``) under the
    null of ``spread`` (module docstring). The baseline counts as one recording (a given model too).

    Raises
    ------
    DynIdError
        An indicator without a spread (no recording-to-recording difference to measure it on).
    """
    values, std = np.atleast_2d(np.asarray(values, float)), np.atleast_2d(np.asarray(std, float))
    a, sa = np.asarray(baseline_values, float), np.asarray(baseline_std, float)
    if np.isnan(spread.inflation).any():
        raise DynIdError("no recording-to-recording spread to test against: the fleet needs a robot with two "
                         "recordings or more")
    difference = values - a
    combined = spread.inflation * np.sqrt(std**2 + sa**2)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(combined > 0, difference / np.where(combined > 0, combined, 1.0),
                     np.where(difference == 0, 0.0, np.inf * np.sign(difference)))
    dof = np.broadcast_to(np.maximum(spread.kept, 1).astype(float), t.shape)
    from scipy.special import stdtr                 # t.sf(x, dof) = stdtr(dof, -x)
    p = 2.0 * stdtr(dof, -np.abs(t))
    return ChangeStatistics(difference, combined, t, dof, p)
