"""Identification from a live stream of joint states and experiment-stage markers.

A :class:`StreamingIdentifier` receives samples (stamp [s], q [rad], qd [rad/s], tau [N m] in the
robot's joint order) and stage boundaries. It keeps the samples of the current stage in a
bounded buffer of ``max_samples``; when the buffer is full, accelerations are derived by
Savitzky-Golay differentiation over it, the regressor rows of all samples whose window lies
inside the buffer are folded into a :class:`~robot_dynid.estimators.LeastSquaresAccumulator`, and
the newest ``max_samples // 2`` samples stay in the buffer (the first ``h = window // 2`` of them
as overlap, already folded), so every row has the same centred window as in one pass over the
whole stage (only the stage's own edges use the filter's polynomial extrapolation).

When a stage of a selected kind ends (or on :meth:`StreamingIdentifier.identify_now`), the last
``holdout_fraction`` of the stage (at most the samples still buffered, at least
``max_samples // 2 - h`` once the buffer has been folded) is held out, the rest is solved (OLS / WLS, or the RLS estimate),
over the last stage only or pooled with the earlier selected stages, and the candidate model
replaces the model in use only if its RMS torque residual on the held-out samples is not larger
than the model in use's (``require_improvement``).

Online mode (``method="rls"``): every sample also updates a recursive least-squares estimate
with forgetting. Its acceleration comes from a short Savitzky-Golay window of ``rls_window``
samples evaluated at the window centre, so the row of sample ``k - h_r`` (``h_r = rls_window //
2``) is formed when sample ``k`` arrives: the online estimate lags the stream by ``h_r`` sample
periods (5 samples = 25 ms at 200 Hz with the default). In this mode the hold-out samples have
also updated the RLS estimate, so the acceptance comparison is not strictly out-of-sample.

Samples and stage markers travel on different topics, so either can overtake the other: an end
marker can arrive before the last samples of its stage, a start marker after the first ones.
:class:`StampOrder` puts both back in header-stamp order before they reach the identifier, so a
stage holds exactly the samples stamped within its markers' stamps, as
:func:`robot_dynid.segmentation.label_samples` labels a recorded bag.

The experiment runner marks sub-stages (an excitation stage is a transition, a Fourier period,
more transitions and cycloidal moves, each with its own start and end marker, one label each).
:func:`join_sub_stages` drops the boundaries inside a stage, so the identifier identifies once
per stage and cycle, on all of it, not on each 1 s transition.
"""
from __future__ import annotations

import collections
import dataclasses
import heapq
import logging
import math

import numpy as np
from scipy import signal

from robot_dynid.base_parameters import BaseParameters, compute_base_parameters
from robot_dynid.errors import DataError, DynIdError
from robot_dynid.estimators import LeastSquaresAccumulator, RecursiveLeastSquares
from robot_dynid.identification import (
    IdentificationSettings, iter_regressor_chunks, model_from_accumulator)
from robot_dynid.model import DynamicModel
from robot_dynid.recording import STAGE_KINDS, Recording
from robot_dynid.robot_description import RobotDescription
from robot_dynid.signal_processing import differentiate

logger = logging.getLogger(__name__)


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
        Odd Savitzky-Golay window for the batch accelerations [samples].
    polyorder : int
        Savitzky-Golay polynomial degree.
    rls_window : int
        Odd centred window of the online (RLS) accelerations [samples]; lag ``rls_window // 2``.
    holdout_fraction : float
        Fraction of each stage's last samples held out of the fit to judge the model [1], in [0, 1).
    require_improvement : bool
        Accept a new model only if its hold-out RMS residual is <= that of the model in use.
    gap_factor : float
        A stamp step longer than this times the stage's first step (lost messages) closes the
        derivative segment: the buffer is folded and differentiation restarts after the gap.
    """

    identification: IdentificationSettings = dataclasses.field(default_factory=IdentificationSettings)
    stages: tuple = ("excitation",)
    pool_stages: bool = False
    max_samples: int = 20000
    window: int = 21
    polyorder: int = 3
    rls_window: int = 11
    holdout_fraction: float = 0.2
    require_improvement: bool = True
    gap_factor: float = 1.5

    def __post_init__(self):
        unknown = [kind for kind in self.stages if kind not in STAGE_KINDS]
        if unknown:
            raise DynIdError(f"stages {unknown} are not stage kinds {list(STAGE_KINDS)}")
        for name in ("window", "rls_window"):
            value = getattr(self, name)
            if value % 2 == 0 or value <= self.polyorder:
                raise DynIdError(f"{name} must be odd and exceed polyorder = {self.polyorder}, got {value}")
        if self.max_samples < 4 * self.window:
            raise DynIdError(f"max_samples must be at least 4 * window = {4 * self.window}, "
                             f"got {self.max_samples}")
        if not 0.0 <= self.holdout_fraction < 1.0:
            raise DynIdError(f"holdout_fraction must be in [0, 1), got {self.holdout_fraction!r}")


@dataclasses.dataclass(frozen=True)
class IdentificationOutcome:
    """Result of one identification.

    Attributes
    ----------
    model : DynamicModel
        The candidate.
    accepted : bool
        Whether it replaced the model in use.
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


def _rms(residual: np.ndarray) -> float:
    return float(np.sqrt(np.mean(residual**2))) if residual.size else float("nan")


class StreamingIdentifier:
    """Identify a robot's base parameters from a sample stream, stage by stage (see module doc).

    Parameters
    ----------
    robot : RobotDescription
    settings : StreamingSettings
    base : BaseParameters, optional
        Computed from random states when not given.

    Attributes
    ----------
    model : DynamicModel or None
        The model in use.
    version : int
        Number of accepted models.
    n_dropped : int
        Samples dropped (non-finite values or stamps not increasing).
    warnings : list of str
        Warnings of the last identification.
    """

    def __init__(self, robot: RobotDescription, settings: StreamingSettings = StreamingSettings(),
                 base: BaseParameters | None = None):
        self.robot = robot
        self.settings = settings
        self.regressor = settings.identification.regressor(robot)
        self.base = base if base is not None else compute_base_parameters(self.regressor)
        self.model = None
        self.version = 0
        self.n_dropped = 0
        self.warnings = []
        self.stage = None
        self._pooled = self._new_accumulator()
        self._pooled_samples = 0
        self._rls = (RecursiveLeastSquares(self.base.rank, forgetting=settings.identification.forgetting)
                     if self.method == "rls" else None)
        self._reset_stage(None)

    @property
    def method(self) -> str:
        return self.settings.identification.method

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
        return LeastSquaresAccumulator(self.robot.n_joints, self.base.rank)

    def _reset_stage(self, kind):
        self.stage = kind
        self._buffer = []
        self._stage_count = 0
        self._step = None
        self._folded = False
        self._stage_accumulator = self._new_accumulator()
        if self._rls is not None and kind is not None and not self.settings.pool_stages:
            self._rls.reset()
        self._window = collections.deque(maxlen=self.settings.rls_window)

    @property
    def collecting(self) -> bool:
        return self.stage in self.settings.stages

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
        if not self.collecting:
            self._reset_stage(None)
            return None
        try:
            fit, holdout, n_samples = self._stage_data()
            self._pooled.merge(fit)
            self._pooled_samples += n_samples
            return self._identify(self._pooled if self.settings.pool_stages else fit, holdout, n_samples)
        finally:
            self._reset_stage(None)

    def identify_now(self) -> IdentificationOutcome:
        """Identify from the selected data so far, including the open stage, without ending it."""
        if self.collecting and self._stage_count:
            fit, holdout, n_samples = self._stage_data()
            if self.settings.pool_stages or not n_samples:
                fit = self._new_accumulator().merge(self._pooled).merge(fit)
                n_samples += self._pooled_samples
            return self._identify(fit, holdout, n_samples)
        if not self._pooled_samples:
            raise DataError(f"no samples of stages {list(self.settings.stages)} received yet")
        return self._identify(self._pooled, None, self._pooled_samples)

    def add_sample(self, stamp: float, q, qd, tau) -> bool:
        """Add one sample (q [rad], qd [rad/s], tau [N m], shape (n,)); False if it was dropped.

        Samples outside a selected stage are ignored (True). Non-finite values and stamps not
        after the previous one are dropped and counted in ``n_dropped``.
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
        if not np.all(np.isfinite(row)) or (self._buffer and stamp <= self._buffer[-1][0]):
            self.n_dropped += 1
            return False
        if self._buffer:
            step = stamp - self._buffer[-1][0]
            if self._step is None:
                self._step = step
            elif step > self.settings.gap_factor * self._step:
                self._close_segment()
            elif self._step > self.settings.gap_factor * step:
                # the step taken as the sample period was itself a gap: the segment restarts at the last sample
                self._close_segment(keep=1)
                self._step = step
        self._buffer.append(row)
        self._stage_count += 1
        if self._rls is not None:
            self._update_online(row)
        if len(self._buffer) >= self.settings.max_samples:
            self._fold()
        return True

    def _update_online(self, row):
        self._window.append(row)
        if len(self._window) < self._window.maxlen:
            return
        window = np.array(self._window)
        n = self.robot.n_joints
        step = (window[-1, 0] - window[0, 0]) / (len(window) - 1)
        coefficients = signal.savgol_coeffs(len(window), self.settings.polyorder, deriv=2, delta=step, use="dot")
        centre = window[len(window) // 2]
        qdd = coefficients @ window[:, 1:1 + n]
        Y = self.regressor.compute_one(centre[1:1 + n], centre[1 + n:1 + 2 * n], qdd)
        self._rls.update(self.base.select(Y), centre[1 + 2 * n:])

    def _rows(self, buffer: np.ndarray) -> Recording:
        n = self.robot.n_joints
        derivatives = differentiate(buffer[:, 1:1 + n], buffer[:, 0], window_samples=self.settings.window,
                                    polyorder=self.settings.polyorder)
        return Recording.from_arrays(self.robot.joint_names, buffer[:, 0], buffer[:, 1:1 + n],
                                     buffer[:, 1 + n:1 + 2 * n], derivatives.qdd, buffer[:, 1 + 2 * n:],
                                     source="stream")

    def _accumulate(self, accumulator, recording: Recording):
        chunk_size = self.settings.identification.chunk_size
        for Y_base, tau in iter_regressor_chunks(self.regressor, self.base, recording, chunk_size):
            accumulator.add(Y_base, tau)

    @property
    def _first_row(self) -> int:
        """Rows before this were folded already (overlap kept for their derivative window)."""
        return self.settings.window // 2 if self._folded else 0

    def _fold(self):
        """Fold all but the newest ``max_samples // 2`` samples; they stay for the hold-out."""
        keep = self.settings.max_samples // 2
        buffer = np.array(self._buffer)
        stop = len(buffer) - keep + self.settings.window // 2
        self._accumulate(self._stage_accumulator, self._rows(buffer).take(np.arange(self._first_row, stop)))
        self._buffer = self._buffer[-keep:]
        self._folded = True

    def _close_segment(self, keep: int = 0):
        """A gap in the stamps before the buffer's last ``keep`` samples: fold the buffer up to the gap (its
        own edges extrapolated) and start the derivatives afresh from those samples."""
        closed = self._buffer[:len(self._buffer) - keep]
        if len(closed) >= self.settings.window:
            buffer = np.array(closed)
            self._accumulate(self._stage_accumulator, self._rows(buffer).take(np.arange(self._first_row, len(buffer))))
        else:
            self.n_dropped += max(0, len(closed) - self._first_row)
        logger.warning("gap in the sample stamps after %.6f s: derivatives restart", closed[-1][0])
        self._buffer = self._buffer[len(closed):]
        self._folded = False

    def _stage_data(self):
        """Fit accumulator (stage so far minus hold-out), hold-out Recording or None, fit samples."""
        buffer = np.array(self._buffer)
        first = self._first_row
        available = len(buffer) - first
        if len(buffer) < self.settings.window and self._stage_accumulator.n_samples:
            self.n_dropped += len(buffer) - first
            return self._new_accumulator().merge(self._stage_accumulator), None, self._stage_accumulator.n_samples
        if len(buffer) < self.settings.window:
            raise DataError(f"stage {self.stage} has {len(buffer)} samples buffered, fewer than the "
                            f"derivative window of {self.settings.window}")
        n_holdout = min(int(round(self.settings.holdout_fraction * self._stage_count)), available - 1)
        rows = self._rows(buffer)
        fit = self._new_accumulator().merge(self._stage_accumulator)
        self._accumulate(fit, rows.take(np.arange(first, len(buffer) - n_holdout)))
        holdout = rows.take(np.arange(len(buffer) - n_holdout, len(buffer))) if n_holdout > 0 else None
        return fit, holdout, fit.n_samples

    def _identify(self, accumulator, holdout: Recording | None, n_samples: int) -> IdentificationOutcome:
        candidate = self._solve(accumulator)
        holdout_rms, previous_rms = float("nan"), None
        if holdout is not None:
            holdout_rms = _rms(candidate.torque(holdout.q, holdout.qd, holdout.qdd) - holdout.tau)
            if self.model is not None:
                previous_rms = _rms(self.model.torque(holdout.q, holdout.qd, holdout.qdd) - holdout.tau)
        accepted = (self.model is None or not self.settings.require_improvement or previous_rms is None
                    or holdout_rms <= previous_rms)
        comparison = ("" if previous_rms is None else
                      f" (model in use: {previous_rms:.4g} N m)")
        if accepted:
            self.model = candidate
            self.version += 1
            message = (f"model version {self.version} accepted from {n_samples} samples; hold-out RMS "
                       f"residual {holdout_rms:.4g} N m{comparison}")
        else:
            message = (f"new model rejected: hold-out RMS residual {holdout_rms:.4g} N m exceeds the model "
                       f"in use's {previous_rms:.4g} N m; keeping version {self.version}")
            self.warnings = self.warnings + [message]
            logger.warning(message)
        return IdentificationOutcome(candidate, accepted, holdout_rms, previous_rms, message)

    def _solve(self, accumulator: LeastSquaresAccumulator) -> DynamicModel:
        model = model_from_accumulator(
            accumulator, self.robot, self.settings.identification, self.base, rls=self._rls,
            n_dropped=self.n_dropped,
            provenance={"data_source": "stream", "stages": list(self.settings.stages),
                        "pooled": self.settings.pool_stages})
        self.warnings = list(model.metrics["warnings"])
        return model


class StampOrder:
    """Samples and stage markers from two streams, released in header-stamp order.

    An item is held until the sample stream has reached ``latency`` s past its stamp (a sample
    stamped ``>= stamp + latency`` arrived), or until :meth:`flush`; then every held item up to
    that point is released, ordered by stamp, and at equal stamps end markers first, then start
    markers, then samples: a stage holds the samples stamped in ``[start, end)``, so where one
    stage ends and the next starts, a sample on the boundary belongs to the next one, as
    :func:`~robot_dynid.segmentation.label_samples` labels it. So a marker may arrive up to
    ``latency`` s before or after the samples around its stamp and still cut the stage at its
    stamp. A marker without a stamp (``None``, or 0 as an unset ROS header) counts as stamped
    just after the newest sample received; a marker more than ``latency`` late is applied on
    arrival (logged).

    Parameters
    ----------
    latency : float
        [s] >= 0; how far the two streams may be out of step. Samples reach the identifier
        this much later (in stamp time) than they arrive.

    Each ``add_*`` and :meth:`flush` returns the released items in order, as ``("sample",
    payload)`` or ``("marker", payload)`` pairs.

    Attributes
    ----------
    released_until : float
        [s] the largest stamp released so far (-inf before any).
    """

    _END, _START, _SAMPLE, _UNSTAMPED = 0, 1, 2, 3

    def __init__(self, latency: float):
        if isinstance(latency, bool) or not isinstance(latency, (int, float)) or not math.isfinite(latency) \
                or latency < 0.0:
            raise DynIdError(f"latency must be a finite number >= 0 [s], got {latency!r}")
        self.latency = float(latency)
        self._held = []
        self._sequence = 0
        self._head = -math.inf   # newest sample stamp [s]
        self.released_until = -math.inf

    @property
    def pending(self) -> int:
        """Items held."""
        return len(self._held)

    def _push(self, stamp: float, rank: int, item) -> None:
        heapq.heappush(self._held, (stamp, rank, self._sequence, item))
        self._sequence += 1

    def _release(self, upto: float) -> list:
        released = []
        while self._held and self._held[0][0] <= upto:
            stamp, _, _, item = heapq.heappop(self._held)
            self.released_until = max(self.released_until, stamp)
            released.append(item)
        return released

    def add_sample(self, stamp: float, payload) -> list:
        """A sample stamped ``stamp`` [s] arrived; return what is released."""
        stamp = float(stamp)
        self._push(stamp, self._SAMPLE, ("sample", payload))
        self._head = max(self._head, stamp)
        return self._release(self._head - self.latency)

    def add_marker(self, stamp: float | None, start: bool, payload) -> list:
        """A start (``start`` True) or end marker stamped ``stamp`` [s] arrived; return what is released."""
        if stamp is None or stamp == 0.0:
            stamp, rank = self._head, self._UNSTAMPED  # just after every sample received so far
        else:
            stamp, rank = float(stamp), self._START if start else self._END
            if stamp < self.released_until:
                logger.warning("stage marker stamped %.6f s arrived after samples up to %.6f s had been "
                               "released (more than latency = %g s late); applied on arrival",
                               stamp, self.released_until, self.latency)
        self._push(stamp, rank, ("marker", payload))
        return self._release(self._head - self.latency)

    def flush(self) -> list:
        """Release everything held (the sample stream stopped)."""
        return self._release(math.inf)


def join_sub_stages(items: list) -> list:
    """Released items without the boundaries between sub-stages of one stage.

    An end marker directly followed by a start marker of the same kind and cycle at the same
    stamp (the runner's sub-stages: the transition, Fourier and cycloidal parts of one
    excitation stage) continues the stage: both markers are dropped. Marker payloads are
    ``(kind, start, cycle, stamp)``; ``items`` as :class:`StampOrder` releases them (a pair is
    released together: both markers carry the same stamp).
    """
    joined = []
    index = 0
    while index < len(items):
        what, payload = items[index]
        if what == "marker" and not payload[1] and index + 1 < len(items):
            next_what, next_payload = items[index + 1]
            if next_what == "marker" and next_payload[1] and (next_payload[0], next_payload[2], next_payload[3]) \
                    == (payload[0], payload[2], payload[3]):
                index += 2
                continue
        joined.append((what, payload))
        index += 1
    return joined
