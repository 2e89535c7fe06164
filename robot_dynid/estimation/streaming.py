"""Identification from a live stream of joint states and experiment-stage markers.

A :class:`StreamingIdentifier` receives samples (stamp [s], q [rad], qd [rad/s], tau [N m] in the
robot's joint order) and stage boundaries. It keeps the samples of the current stage in a
bounded buffer of ``max_samples``; when the buffer is full, accelerations are derived by
Savitzky-Golay differentiation over it, the regressor rows of all samples whose window lies
inside the buffer are folded into a :class:`~robot_dynid.estimation.estimators.LeastSquaresAccumulator`, and
the newest ``max_samples // 2`` samples stay in the buffer (the first ``h = window // 2`` of them
as overlap, already folded), so every row has the same centred window as in one pass over the
whole stage (only the stage's own edges use the filter's polynomial extrapolation).

When a stage of a selected kind ends (or on :meth:`StreamingIdentifier.identify_now`), the last
``holdout_fraction`` of the stage (at most the samples still buffered, at least
``max_samples // 2 - h`` once the buffer has been folded) is held out, the rest is solved (OLS /
WLS, or the RLS estimate), over the last stage only or pooled with the earlier selected stages.
When the run after the stage's last gap in the stamps is shorter than the derivative window (a
publisher that stalled near the end), the hold-out is the tail of the run before that gap.
Every candidate, the first included, passes a quality gate before it is used: finite parameters, a finite hold-out RMS
residual, hold-out RSD below ``max_holdout_rsd`` and a condition number below ``max_condition``.
It then replaces the model in use only if its RMS torque residual on the held-out samples is not
larger than the model in use's (``require_improvement``).

Stamps may jitter and samples may be lost: accelerations are local polynomial fits in the
samples' own stamps (:func:`robot_dynid.recordings.signal_processing.differentiate`), and only a step longer
than half the derivative window (against the median of the recent steps) is a gap that restarts
them. Samples with non-finite values, a stamp not after the previous one, a stale read (the previous
sample's values again while the arm moves), or values beyond the robot's plausible bounds
(:class:`robot_dynid.recordings.data_checks.SampleBounds`) are dropped and counted by reason, never fed to
the estimator.

Online mode (``method="rls"``): every sample also updates a recursive least-squares estimate
with forgetting (:class:`OnlineEstimator`). Its acceleration comes from a local cubic fit to a
short window of ``rls_window`` samples evaluated at the window centre, so the row of sample
``k - h_r`` (``h_r = rls_window // 2``) is formed when sample ``k`` arrives: the online estimate
lags the stream by ``h_r`` sample periods (5 samples = 25 ms at 200 Hz with the default). In this
mode the hold-out samples have also updated the RLS estimate, so the acceptance comparison is not
strictly out-of-sample.

Payload stages (kind ``payload``, when selected): the arm's model is fixed (``arm_model``, else the
model in use without its payload, taken when the stage starts) and the stage's samples identify a
payload (:mod:`robot_dynid.estimation.payload`, ``settings.payload``): their rows are the payload's
ten regressor columns and the arm's residual. The candidate is the arm's model with the payload
attached; it passes the same quality gate (hold-out RSD, the payload columns' condition number) and
improvement test as any model. Payload stages are never pooled (each may carry another tool) and
always solved in batch; a stage that determines no payload (undetermined fields, see
:func:`~robot_dynid.estimation.payload.solve_payload`) is a DataError naming them.

Torques are checked as every command checks them (``settings.identification.check_torque_scale``,
:func:`~robot_dynid.estimation.torque_scale.check_torque_scale`): at the end of a stage (or on
:meth:`StreamingIdentifier.identify_now`), before its fit, on the stage's slow samples (kept as they are folded,
at most ``max_samples``, thinned by half when full), against the description's inertial data, in a payload stage
with what the payload being identified could add; a recording that fails is a DataError and no model.

Samples reach it in header-stamp order and whole stages (the node puts them back in order with
:class:`robot_dynid.recordings.stages.StampOrder` and joins sub-stages with
:func:`robot_dynid.recordings.stages.join_sub_stages`), so a stage holds exactly the samples stamped within
its markers' stamps, as :func:`robot_dynid.recordings.stages.label_samples` labels a recorded bag.
"""
from __future__ import annotations

import collections
import dataclasses
import logging
import math
import statistics

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError, DynIdError
from robot_dynid.estimation.estimators import LeastSquaresAccumulator, RecursiveLeastSquares, build_estimator
from robot_dynid.estimation.identification import IdentificationSettings, model_from_accumulator
from robot_dynid.estimation.normal_equations import accumulate_recording
from robot_dynid.estimation.payload import PayloadSettings, payload_accumulator, solve_payload
from robot_dynid.estimation.quality_gate import GATE_DEFAULTS, GATE_RANGES, check_gate_bound, gate_rejection
from robot_dynid.estimation.torque_scale import UnknownPayload, check_torque_scale, slow_samples
from robot_dynid.model.base_parameters import BaseParameters, compute_base_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.feedforward import structure_difference
from robot_dynid.model.robot_description import RobotDescription
from robot_dynid.recordings.conditioning import MAX_GIVEN_WINDOW, MIN_WINDOW_SAMPLES, Conditioning
from robot_dynid.recordings.data_checks import STALE_ROW, SampleBounds
from robot_dynid.recordings.recording import DropCounter, Recording
from robot_dynid.recordings.signal_processing import (centre_derivative, derivative_gap_steps, differentiate,
                                                      gap_threshold, window_samples_for)
from robot_dynid.recordings.stages import STAGE_KINDS

__all__ = ["StreamingSettings", "IdentificationOutcome", "holdout_residual", "OnlineEstimator", "StreamingIdentifier",
           "fit_metrics", "preload"]

logger = logging.getLogger(__name__)


def preload() -> None:
    """Import now what an identification imports on first use (the core defers scipy's modules and cvxpy, which
    every model's plausibility check and a consistent fit use, to the functions that need them, so that commands
    start fast), and solve once with cvxpy: in a long-running process whose identifications run in callbacks, the
    first one would otherwise stall every other callback of its executor while these load (a simulated arm in the
    same process left without joint states, an experiment aborted)."""
    import scipy.linalg     # noqa: F401  estimators, physical_consistency
    import scipy.ndimage    # noqa: F401  conditioning, signal_processing, stage_detection
    import scipy.signal     # noqa: F401  signal_processing
    import scipy.special    # noqa: F401  covariance
    from robot_dynid.estimation.physical_consistency import warm_up_solver
    warm_up_solver()        # where cvxpy is missing, the checks that need it say so when they run


@dataclasses.dataclass(frozen=True)
class StreamingSettings:
    """Configuration of a :class:`StreamingIdentifier`.

    Attributes
    ----------
    identification : IdentificationSettings
        Model structure and estimator (``method`` "ols", "wls" or "rls", ``forgetting``).
    stages : tuple of str
        Stage kinds whose samples are identified on; their end triggers identification.
    pool_stages : bool
        Solve over all selected stages seen so far instead of the last one.
    max_samples : int
        Buffer bound [samples]; beyond it completed chunks are folded into normal equations.
    window : int
        Odd Savitzky-Golay window for the batch accelerations [samples] (a cubic fit of the positions).
    window_seconds : float or None
        [s] the batch window as a duration instead, in (0, 2]: turned into the odd number of samples
        nearest to it at the median step of the stream's first three steps (at least 7, at most
        ``max_samples // 4``), then fixed for the identifier's life; None: ``window`` samples.
    polyorder : int
        Savitzky-Golay polynomial degree.
    rls_window : int
        Odd centred window of the online (RLS) accelerations [samples]; lag ``rls_window // 2``.
    holdout_fraction : float
        Fraction of each stage's last samples held out of the fit to judge the model [1], in (0, 1).
    require_improvement : bool
        Accept a new model only if its hold-out RMS residual is <= that of the model in use.
    max_holdout_rsd : float
        Quality gate [1], in (0, 1]: a candidate whose hold-out RSD, sqrt(sum r^2 / sum tau^2) over the
        held-out samples and joints, is not below this is rejected.
    max_condition : float
        Quality gate [1], in (1, 1e12]: a candidate whose condition number (scaled base regressor; the payload's
        columns for a payload) is not below this is rejected (poorly excited data).
    payload : PayloadSettings
        How payload stages are identified (frame, known mass).
    """

    identification: IdentificationSettings = dataclasses.field(default_factory=IdentificationSettings)
    stages: tuple = ("excitation",)
    pool_stages: bool = False
    max_samples: int = 20000
    window: int = 21
    window_seconds: float | None = None
    polyorder: int = 3
    rls_window: int = 11
    holdout_fraction: float = GATE_DEFAULTS["holdout_fraction"]
    require_improvement: bool = True
    max_holdout_rsd: float = GATE_DEFAULTS["max_holdout_rsd"]
    max_condition: float = GATE_DEFAULTS["max_condition"]
    payload: PayloadSettings = dataclasses.field(default_factory=PayloadSettings)

    def __post_init__(self):
        unknown = [kind for kind in self.stages if kind not in STAGE_KINDS]
        if unknown:
            raise DynIdError(f"stages {unknown} are not stage kinds {list(STAGE_KINDS)}")
        for name in ("window", "rls_window"):
            value = getattr(self, name)
            if value % 2 == 0 or value <= self.polyorder:
                raise DynIdError(f"{name} must be odd and exceed polyorder = {self.polyorder}, got {value}")
        if self.window_seconds is not None:
            object.__setattr__(self, "window_seconds", validators.in_range(
                self.window_seconds, "window_seconds", DynIdError, "s", 0.0, MAX_GIVEN_WINDOW, allow_minimum=False))
        if self.max_samples < 4 * self.window:
            raise DynIdError(f"max_samples must be at least 4 * window = {4 * self.window}, "
                             f"got {self.max_samples}")
        for name in GATE_RANGES:
            check_gate_bound(name, getattr(self, name))


@dataclasses.dataclass(frozen=True)
class IdentificationOutcome:
    """Result of one identification.

    Attributes
    ----------
    model : DynamicModel
        The candidate.
    accepted : bool
        Whether it replaced the model in use.
    rejection : str
        Why it was not used ('' when accepted): the quality gate's reason or the comparison.
    holdout_rms : float
        Candidate's RMS torque residual over the held-out samples and joints [N m]; NaN if none.
    previous_rms : float or None
        The model in use's on the same samples [N m]; None when there was no model.
    message : str
    """

    model: DynamicModel
    accepted: bool
    holdout_rms: float
    previous_rms: float | None
    message: str
    rejection: str = ""


def holdout_residual(model: DynamicModel, holdout: Recording) -> tuple[float, float]:
    """(RMS residual [N m], RSD [1]) of ``model`` on ``holdout``, over all its samples and joints:
    ``sqrt(mean r^2)`` and ``sqrt(sum r^2 / sum tau^2)``."""
    residual = model.torque(holdout.q, holdout.qd, holdout.qdd) - holdout.tau
    with np.errstate(divide="ignore", invalid="ignore"):
        return _rms(residual), float(np.sqrt(np.sum(residual**2) / np.sum(holdout.tau**2)))


def _rms(residual: np.ndarray) -> float:
    return float(np.sqrt(np.mean(residual**2))) if residual.size else float("nan")


class OnlineEstimator:
    """The online (RLS) update of :class:`StreamingIdentifier`, one sample at a time.

    Rows ``[stamp [s], q (n) [rad], qd (n) [rad/s], tau (n) [N m]]`` enter a sliding window of
    ``window`` samples; once it is full, each new row updates ``rls`` with the centre sample:
    ``qdd`` [rad/s^2] by :func:`~robot_dynid.recordings.signal_processing.centre_derivative`
    (degree ``polyorder``), then ``Y_base(q, qd, qdd) theta = tau``. The window is a ring of
    ``2 window`` rows, each row written twice (at ``i`` and ``i + window``), so the last
    ``window`` rows are always the contiguous slice ``ring[i + 1:i + 1 + window]``, oldest first.
    The rows being checked, the step runs the trusted calls (:meth:`Regressor.online`,
    :meth:`RecursiveLeastSquares.update_trusted`) on views of the ring made once, which give
    what the checked calls give, bit for bit.

    Parameters
    ----------
    regressor : Regressor
    base : BaseParameters
    rls : RecursiveLeastSquares
        Updated in place; ``rls.n_parameters == base.rank``.
    window : int
        Odd window length [samples]; the update lags the stream by ``window // 2`` samples.
    polyorder : int
    """

    def __init__(self, regressor, base: BaseParameters, rls: RecursiveLeastSquares, window: int,
                 polyorder: int) -> None:
        self.regressor = regressor
        self.base = base
        self.rls = rls
        self.window = window
        self.polyorder = polyorder
        n = regressor.n_joints
        self._ring = np.zeros((2 * window, 1 + 3 * n))
        self._online_regressor = regressor.online()
        self._qdd = np.zeros(n)
        self._base_rows = np.zeros((n, base.rank))
        self._independent = np.asarray(base.independent, dtype=np.intp)
        # per ring position of the newest row: the window's stamps and positions, its centre's q, qd, tau
        centre = window // 2
        self._views = [(self._ring[i + 1:i + 1 + window, 0], self._ring[i + 1:i + 1 + window, 1:1 + n],
                        *(self._ring[i + 1 + centre, 1 + k * n:1 + (k + 1) * n] for k in range(3)))
                       for i in range(window)]
        self.clear()

    def clear(self, rows=()) -> None:
        """Empty the window (``rls`` keeps its estimate), then put the last ``window - 1`` of
        ``rows`` (checked, oldest first) in it without an update: after a gap in the stamps, the
        rows after it."""
        self._count = 0
        for row in list(rows)[max(0, len(rows) - self.window + 1):]:
            self.add(row)

    def add(self, row: np.ndarray) -> None:
        """Add one checked row (``1 + 3 n``,) and update ``rls`` once the window is full."""
        position = self._count % self.window
        self._ring[position] = row
        self._ring[position + self.window] = row
        self._count += 1
        if self._count < self.window:
            return
        time, q, centre_q, centre_qd, centre_tau = self._views[position]
        qdd = centre_derivative(q, time, self.polyorder, out=self._qdd)
        Y = self._online_regressor.compute(centre_q, centre_qd, qdd)
        np.take(Y, self._independent, axis=-1, out=self._base_rows, mode="clip")   # base.select(Y), unbuffered
        self.rls.update_trusted(self._base_rows, centre_tau)


class StreamingIdentifier:
    """Identify a robot's base parameters from a sample stream, stage by stage (see module doc).

    Parameters
    ----------
    robot : RobotDescription
    settings : StreamingSettings
    base : BaseParameters, optional
        Computed from random states when not given.
    arm_model : DynamicModel, optional
        The arm's model fixed in payload stages (its payload left out); default the model in use.
        It must be of ``robot`` (name, joints, kinematics).

    Attributes
    ----------
    model : DynamicModel or None
        The model in use.
    version : int
        Number of accepted models.
    dropped : DropCounter
        Samples dropped, by reason (non-finite values, stamps not increasing, implausible values,
        runs between gaps too short to differentiate).
    warnings : list of str
        Warnings of the last identification.
    """

    def __init__(self, robot: RobotDescription, settings: StreamingSettings = StreamingSettings(),
                 base: BaseParameters | None = None, arm_model: DynamicModel | None = None):
        self.robot = robot
        self.settings = settings
        if arm_model is not None:
            difference = structure_difference(arm_model.robot, robot)
            if difference is not None:
                raise DataError(f"the arm model is not of robot {robot.name!r}: {difference}")
            arm_model = arm_model.without_payload()
        self.arm_model = arm_model
        self.regressor = settings.identification.regressor(robot)
        self.base = base if base is not None else compute_base_parameters(self.regressor)
        self.model = None
        self.version = 0
        self.dropped = DropCounter()
        self.bounds = SampleBounds.for_robot(robot)
        self.warnings = []
        self.stage = None
        self._last_holdout = None
        self._stage_arm, self._stage_problem = None, ""
        self._pooled = self._new_accumulator()
        self._pooled_samples = 0
        estimator = build_estimator(self.method, self.base.rank, forgetting=settings.identification.forgetting)
        self._rls = None if estimator.batch else estimator
        self._online = (OnlineEstimator(self.regressor, self.base, self._rls, settings.rls_window, settings.polyorder)
                        if self._rls is not None else None)
        self._window = settings.window
        self._step = None       # [s] median step of the stream's first steps, once known
        self._reset_stage(None)

    @property
    def method(self) -> str:
        return self.settings.identification.method

    @property
    def n_dropped(self) -> int:
        """Samples dropped so far, all reasons."""
        return sum(entry.count for entry in self.dropped.counts.values())

    @property
    def buffered_samples(self) -> int:
        return len(self._buffer)

    @property
    def stage_samples(self) -> int:
        """Samples of the current stage received so far."""
        return self._stage_count

    @property
    def online_theta(self) -> np.ndarray | None:
        """Current RLS estimate of the base parameters (r,), or None outside online mode."""
        return None if self._rls is None else self._rls.theta_.copy()

    def _new_accumulator(self) -> LeastSquaresAccumulator:
        return LeastSquaresAccumulator(self.robot.n_joints, 10 if self._stage_arm is not None else self.base.rank)

    @property
    def payload_stage(self) -> bool:
        """Whether the open stage identifies a payload."""
        return self._stage_arm is not None

    def _reset_stage(self, kind):
        self.stage = kind
        self._stage_arm, self._stage_problem = None, ""
        if kind == "payload" and kind in self.settings.stages:
            arm = self.arm_model if self.arm_model is not None else (
                None if self.model is None else self.model.without_payload())
            if arm is None:
                self._stage_problem = ("a payload stage needs the arm's model: give one (the identifier node's "
                                       "arm_model_file) or identify the arm on earlier stages first")
            self._stage_arm = arm
        self._buffer = []
        self._stage_count = 0
        self._stage_start = None        # [s] the stage's first stamp: the origin of the covariance's time blocks
        self._steps = collections.deque(maxlen=64)
        self._folded = False
        self._stage_accumulator = self._new_accumulator()
        self._segment_tail = None
        self._slow = []         # the stage's folded slow samples (time, q, qd, qdd, tau rows) for the torque check
        self._pending = []      # recordings accumulated into a fit beyond the stage's own accumulator
        if self._rls is not None:
            self._online.clear()
            if kind is not None and not self.settings.pool_stages and not self.payload_stage:
                self._rls.reset()

    @property
    def collecting(self) -> bool:
        return self.stage in self.settings.stages and not self._stage_problem

    def start_stage(self, kind: str) -> None:
        """A stage of ``kind`` (one of STAGE_KINDS) starts; samples of a selected kind are kept."""
        if kind not in STAGE_KINDS:
            raise DataError(f"stage kind {kind!r} is not one of {list(STAGE_KINDS)}")
        if self.stage is not None:
            logger.warning("stage %s started while stage %s was open; discarding the open stage", kind, self.stage)
        self._reset_stage(kind)

    def end_stage(self, kind: str) -> IdentificationOutcome | None:
        """The open stage ends; identify when it is of a selected kind, else return None."""
        if kind != self.stage:
            logger.warning("end of stage %s received while %s was open; ignored", kind, self.stage)
            return None
        problem = self._stage_problem
        if not self.collecting:
            self._reset_stage(None)
            if problem:
                raise DataError(problem)
            return None
        try:
            fit, holdout, n_samples = self._stage_data()
            self._check_torques(holdout)
            if self.payload_stage:
                return self._identify(fit, holdout, n_samples)
            self._pooled.merge(fit)
            self._pooled_samples += n_samples
            return self._identify(self._pooled if self.settings.pool_stages else fit, holdout, n_samples)
        finally:
            self._reset_stage(None)

    def identify_now(self) -> IdentificationOutcome:
        """Identify from the selected data so far, including the open stage, without ending it."""
        if self._stage_problem:
            raise DataError(self._stage_problem)
        if self.collecting and self._stage_count:
            fit, holdout, n_samples = self._stage_data()
            self._check_torques(holdout)
            if self.payload_stage:
                return self._identify(fit, holdout, n_samples)
            if self.settings.pool_stages or not n_samples:
                fit = self._new_accumulator().merge(self._pooled).merge(fit)
                n_samples += self._pooled_samples
            return self._identify(fit, holdout, n_samples)
        if not self._pooled_samples:
            raise DataError(f"no samples of stages {list(self.settings.stages)} received yet")
        return self._identify(self._pooled, None, self._pooled_samples)

    def add_sample(self, stamp: float, q, qd, tau) -> bool:
        """Add one sample (q [rad], qd [rad/s], tau [N m], shape (n,)); False if it was dropped.

        Samples outside a selected stage are ignored (True). Non-finite values, stamps not after
        the previous one, a stale read (the previous sample's values again while moving:
        :func:`~robot_dynid.recordings.data_checks.stale_rows`) and implausible values are dropped and
        counted in ``dropped``.
        """
        if not self.collecting:
            return True
        n = self.robot.n_joints
        fields = {"q": np.asarray(q, float), "qd": np.asarray(qd, float), "tau": np.asarray(tau, float)}
        for name, values in fields.items():
            if values.shape != (n,):
                raise DataError(f"sample {name} has shape {values.shape}, expected ({n},) for joints "
                                f"{list(self.robot.joint_names)}")
        row = np.concatenate([[float(stamp)], *fields.values()])
        reason = ("non-finite values" if not np.isfinite(row).all() else
                  "stamp not after the previous sample" if self._buffer and stamp <= self._buffer[-1][0] else
                  STALE_ROW if self._buffer and np.any(fields["qd"] != 0.0)
                  and np.array_equal(row[1:], self._buffer[-1][1:]) else
                  self.bounds.reason(fields["q"], fields["qd"], fields["tau"]))
        if reason is not None:
            self.dropped.add(reason, float(stamp))
            return False
        if self._buffer:
            self._check_gap(stamp - self._buffer[-1][0])
        if self._stage_start is None:
            self._stage_start = float(stamp)
        self._buffer.append(row)
        self._stage_count += 1
        if self._online is not None and not self.payload_stage:
            self._online.add(row)
        if len(self._buffer) >= self.settings.max_samples:
            self._fold()
        return True

    def _rows(self, buffer: np.ndarray) -> Recording:
        n = self.robot.n_joints
        derivatives = differentiate(buffer[:, 1:1 + n], buffer[:, 0], window_samples=self.window,
                                    polyorder=self.settings.polyorder)
        return Recording.from_arrays(self.robot.joint_names, buffer[:, 0], buffer[:, 1:1 + n],
                                     buffer[:, 1 + n:1 + 2 * n], derivatives.qdd, buffer[:, 1 + 2 * n:],
                                     source="stream")

    def _accumulate(self, accumulator, recording: Recording):
        """Fold ``recording`` (rows of the open stage) into ``accumulator``; the time blocks of the robust
        covariance count from the stage's start, so pooled stages (the same excitation each cycle) pool the
        same stretch of each."""
        chunk_size = self.settings.identification.chunk_size
        phase = recording.time - self._stage_start
        if accumulator is self._stage_accumulator:
            self._keep_slow(recording)
        else:
            self._pending.append(recording)
        if self.payload_stage:
            payload_accumulator(self._stage_arm, recording, self.settings.payload.frame, chunk_size, accumulator,
                                phase=phase, check_torques=False)
            return
        accumulate_recording(accumulator, self.regressor, self.base, recording, phase=phase,
                             min_speed=self.settings.identification.min_speed)

    def _keep_slow(self, recording: Recording) -> None:
        """Keep ``recording``'s slow samples for the stage's torque check (at most ``max_samples``: every other
        one is let go when full)."""
        if not self.settings.identification.check_torque_scale:
            return
        self._slow.append(self._slow_rows(recording))
        if sum(len(rows) for rows in self._slow) > self.settings.max_samples:
            self._slow = [np.vstack(self._slow)[::2]]

    def _slow_rows(self, recording: Recording) -> np.ndarray:
        """(M, 1 + 4 n) rows ``[time, q, qd, qdd, tau]`` of ``recording``'s slow samples."""
        slow = slow_samples(recording, self.robot)
        return np.column_stack([recording.time[slow], recording.q[slow], recording.qd[slow], recording.qdd[slow],
                                recording.tau[slow]])

    def _check_torques(self, holdout: Recording | None) -> None:
        """The stage's torques checked (module docstring): its folded slow samples, those of the rows just
        accumulated into the fit (``_pending``) and of the hold-out."""
        pending, self._pending = self._pending, []
        if not self.settings.identification.check_torque_scale:
            return
        recordings = pending + ([] if holdout is None else [holdout])
        kept = self._slow + [self._slow_rows(recording) for recording in recordings]
        rows = np.vstack(kept) if kept else np.empty((0, 0))
        if not rows.shape[0]:
            return
        rows = rows[np.argsort(rows[:, 0], kind="stable")]
        recording = Recording.from_arrays(self.robot.joint_names, rows[:, 0], *np.split(rows[:, 1:], 4, axis=1),
                                          source=f"stage {self.stage} of the stream")
        check_torque_scale(recording, self.robot, UnknownPayload.for_robot(self.robot, self.settings.payload.frame)
                           if self.payload_stage else None)

    @property
    def _first_row(self) -> int:
        """Rows before this were folded already (overlap kept for their derivative window)."""
        return self.window // 2 if self._folded else 0

    def _fold(self):
        """Fold all but the newest ``max_samples // 2`` samples; they stay for the hold-out."""
        keep = self.settings.max_samples // 2
        buffer = np.array(self._buffer)
        stop = len(buffer) - keep + self.window // 2
        self._accumulate(self._stage_accumulator, self._rows(buffer).take(np.arange(self._first_row, stop)))
        self._buffer = self._buffer[-keep:]
        self._folded = True

    @property
    def window(self) -> int:
        """Odd number of samples of the batch derivative fit (``settings.window`` until a
        ``settings.window_seconds`` is resolved at the stream's rate)."""
        return self._window

    def _resolve_window(self) -> None:
        """Fix the median step [s] of the stream's first steps and, with ``window_seconds``, the window."""
        self._step = statistics.median(self._steps)
        seconds = self.settings.window_seconds
        if seconds is None:
            return
        window = max(MIN_WINDOW_SAMPLES, window_samples_for(seconds, self._step))
        largest = (self.settings.max_samples // 4 - 1) | 1
        if window > largest:
            logger.warning("a derivative window of %g s is %d samples at %.4g Hz, more than max_samples // 4 "
                           "allows: using %d samples (%.3g s); raise max_samples for the longer window",
                           seconds, window, 1.0 / self._step, largest, largest * self._step)
            window = largest
        else:
            logger.info("derivative window %g s = %d samples at %.4g Hz", seconds, window, 1.0 / self._step)
        self._window = window

    def conditioning(self) -> dict | None:
        """The provenance record (``provenance.conditioning``, as the CLI's) of how the stream's samples
        are conditioned: recorded stamps and velocities, no velocity zeroed at rest, accelerations from
        a cubic fit of the positions over :attr:`window` samples; None before the rate is known."""
        if self._step is None:
            return None
        window_s = self.window * self._step
        settings = Conditioning(derivative_window=min(window_s, MAX_GIVEN_WINDOW), velocity_at_rest="measured",
                                accelerations_from_positions=True).to_dict()
        return {"settings": settings,
                "recordings": {"stream": {"derivatives": {"qd": "recorded", "qdd": "positions",
                                                          "window_samples": int(self.window),
                                                          "window_s": float(window_s),
                                                          "chosen": False}}}}

    def _gap_threshold(self) -> float:
        """[s] a step longer than half the derivative window of median steps is a gap (the batch path's
        rule, :func:`~robot_dynid.recordings.signal_processing.gap_starts`)."""
        return gap_threshold(statistics.median(self._steps), derivative_gap_steps(self.window))

    def _check_gap(self, step: float) -> None:
        """Close the segment at a gap before the sample ``step`` [s] after the buffer's last. Until the
        median step is known (3 steps) none is judged; while a segment is young, its earlier steps are
        judged again (its first step may have been the gap: a publisher that fell behind)."""
        if len(self._steps) >= 3 and step > self._gap_threshold():
            self._close_segment()
            return
        self._steps.append(step)
        if self._step is None and len(self._steps) >= 3:
            self._resolve_window()
        if len(self._steps) >= 3 and len(self._steps) <= self.window:
            earlier_gaps = [i for i, earlier in enumerate(self._steps) if earlier > self._gap_threshold()]
            if earlier_gaps:      # step i follows buffered sample i
                last = earlier_gaps[-1]
                self._close_segment(keep=len(self._buffer) - last - 1)
                self._steps = collections.deque(list(self._steps)[last + 1:], maxlen=self._steps.maxlen)

    def _close_segment(self, keep: int = 0):
        """A gap in the stamps before the buffer's last ``keep`` samples: fold the buffer up to it (its
        own edges extrapolated) and start the derivatives afresh from those samples."""
        closed = self._buffer[:len(self._buffer) - keep]
        if len(closed) >= self.window:
            self._keep_segment_tail(self._rows(np.array(closed)), self._first_row)
        elif len(closed) > self._first_row:
            self.dropped.add("in a run between gaps shorter than the derivative window",
                             float(closed[self._first_row][0]), len(closed) - self._first_row)
        logger.warning("gap in the sample stamps after %.6f s: derivatives restart", closed[-1][0])
        self._buffer = self._buffer[len(closed):]
        if self._online is not None:     # no online acceleration across the gap either
            self._online.clear(self._buffer)
        if not keep:
            self._steps.clear()
        self._folded = False

    def _keep_segment_tail(self, rows: Recording, first: int) -> None:
        """Fold a closed segment's rows from ``first`` on, except its last hold-out share: that tail is kept
        aside (folded at the next gap or into the stage's fit) so that the stage still has samples to hold
        out when the run after its last gap is shorter than the derivative window."""
        if self._segment_tail is not None:
            self._accumulate(self._stage_accumulator, self._segment_tail)
        n_tail = min(int(round(self.settings.holdout_fraction * self._stage_count)), rows.n_samples - first - 1)
        self._accumulate(self._stage_accumulator, rows.take(np.arange(first, rows.n_samples - max(n_tail, 0))))
        self._segment_tail = rows.take(np.arange(rows.n_samples - n_tail, rows.n_samples)) if n_tail > 0 else None

    def _stage_data(self):
        """Fit accumulator (stage so far minus hold-out), hold-out Recording or None, fit samples."""
        self._pending = []
        buffer = np.array(self._buffer)
        first = self._first_row
        available = len(buffer) - first
        if len(buffer) < self.window and self._stage_accumulator.n_samples:
            if len(buffer) > first:
                self.dropped.add("in a run between gaps shorter than the derivative window",
                                 float(buffer[first][0]), len(buffer) - first)
            return (self._new_accumulator().merge(self._stage_accumulator), self._segment_tail,
                    self._stage_accumulator.n_samples)
        if len(buffer) < self.window:
            raise DataError(f"stage {self.stage} has {len(buffer)} samples buffered, fewer than the "
                            f"derivative window of {self.window}")
        n_holdout = min(int(round(self.settings.holdout_fraction * self._stage_count)), available - 1)
        rows = self._rows(buffer)
        fit = self._new_accumulator().merge(self._stage_accumulator)
        if self._segment_tail is not None:
            self._accumulate(fit, self._segment_tail)
        self._accumulate(fit, rows.take(np.arange(first, len(buffer) - n_holdout)))
        holdout = rows.take(np.arange(len(buffer) - n_holdout, len(buffer))) if n_holdout > 0 else None
        return fit, holdout, fit.n_samples

    def _identify(self, accumulator, holdout: Recording | None, n_samples: int) -> IdentificationOutcome:
        if not self.payload_stage:       # a payload stage is judged on its own samples only
            if holdout is not None:
                self._last_holdout = holdout
            holdout = self._last_holdout
        try:
            candidate = self._solve_payload(accumulator, n_samples) if self.payload_stage else self._solve(accumulator)
        except DynIdError as error:      # e.g. a non-finite estimate: no model is made at all
            raise DataError(f"no {'payload' if self.payload_stage else 'model'} from {n_samples} samples: "
                            f"{error}") from None
        holdout_rms, holdout_rsd, previous_rms = math.nan, math.nan, None
        if holdout is not None:
            holdout_rms, holdout_rsd = holdout_residual(candidate, holdout)
            if self.model is not None:
                previous_rms = _rms(self.model.torque(holdout.q, holdout.qd, holdout.qdd) - holdout.tau)
        condition = float(fit_metrics(candidate)["condition_number"])
        rejection = self._gate(holdout_rms, holdout_rsd, condition)
        if not rejection and self.model is not None and self.settings.require_improvement \
                and previous_rms is not None and not holdout_rms <= previous_rms:
            rejection = f"hold-out RMS residual {holdout_rms:.4g} N m exceeds the model in use's {previous_rms:.4g} N m"
        comparison = "" if previous_rms is None else f" (model in use: {previous_rms:.4g} N m)"
        payload = candidate.payload if self.payload_stage else None
        what = "" if payload is None else f" (payload {payload.mass:.4g} kg at {payload.frame})"
        if not rejection:
            self.model = candidate
            self.version += 1
            message = (f"model version {self.version}{what} accepted from {n_samples} samples; hold-out RMS "
                       f"residual {holdout_rms:.4g} N m, RSD {holdout_rsd:.3g}{comparison}; condition number "
                       f"{condition:.4g}")
        else:
            kept = f"keeping version {self.version}" if self.model is not None else "no model in use yet"
            message = f"new model{what} rejected: {rejection}; {kept}"
            self.warnings = self.warnings + [message]
            logger.warning(message)
        return IdentificationOutcome(candidate, not rejection, holdout_rms, previous_rms, message, rejection)

    def _gate(self, holdout_rms: float, holdout_rsd: float, condition: float) -> str:
        return gate_rejection(holdout_rms, holdout_rsd, condition, self.settings.max_holdout_rsd,
                              self.settings.max_condition)

    def _solve_payload(self, accumulator: LeastSquaresAccumulator, n_samples: int) -> DynamicModel:
        """The stage's arm model with the payload of ``accumulator`` attached (its summary in
        ``metrics["payload"]``); DataError when the data determine none."""
        estimate = solve_payload(accumulator, self.robot, self.settings.payload)
        self.warnings = list(estimate.warnings)
        if estimate.payload is None:
            raise DataError("; ".join(estimate.warnings) or "the data determine no payload")
        return self._stage_arm.with_payload(estimate.payload, estimate.summary())

    def _solve(self, accumulator: LeastSquaresAccumulator) -> DynamicModel:
        model = model_from_accumulator(
            accumulator, self.robot, self.settings.identification, self.base, rls=self._rls,
            dropped=self.dropped.counts,
            provenance={"data_source": "stream", "stages": list(self.settings.stages),
                        "pooled": self.settings.pool_stages,
                        **({"conditioning": self.conditioning()} if self._step is not None else {})})
        self.warnings = list(model.metrics["warnings"])
        return model


def fit_metrics(model: DynamicModel) -> dict:
    """The metrics of the fit that made ``model``: its payload's (``metrics["payload"]``: residual RMS,
    condition number, samples of the payload fit) when it carries an identified payload, else its own."""
    payload = model.metrics.get("payload")
    return payload if isinstance(payload, dict) and "condition_number" in payload else model.metrics
