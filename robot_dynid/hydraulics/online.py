"""Online identification of hydraulic cylinders, sample by sample (the ``hydraulic_identifier`` node's core).

For each cylinder (:class:`~robot_dynid.hydraulics.cylinder.HydraulicCylinder`) and each sample
``(t, x, x', p_a, p_b, F_L)`` in SI (m, m/s, Pa, N):

1. ``x''`` [m/s^2] by a causal derivative of the velocity (:class:`CausalDerivative`: the slope
   of the least-squares line through the velocities of the last ``acceleration_window`` seconds,
   in their own stamps; it lags by about half the window). The first sample, and the first after
   a gap longer than ``max_gap``, only primes it.
2. The regressor row ``phi = [x, sgn x', x', cbrt x'] / s`` (:func:`cylinder_regressor` divided by
   the nominal column scales ``s`` of :func:`nominal_scales`) and the known force
   ``y = p_a A_a - p_b A_b - F_L - m x'' - c x'`` [N] (:func:`known_force`).
3. One update of :class:`~robot_dynid.estimation.estimators.RecursiveLeastSquares` with
   forgetting ``mu`` (the correct gain, METHODS.md section 4):
   ``K = P phi / (mu + phi^T P phi)``, ``theta += K (y - phi^T theta)``, ``P = (I - K phi^T) P / mu``.
4. The forgetting-weighted residual cost and sample count, exactly as least squares weights them::

       J_k = mu J_(k-1) + e_k eps_k        (e a priori, eps a posteriori residual [N])
       N_k = mu N_(k-1) + 1

   so ``sigma^2 = J / (N - 4)`` [N^2], the residual RMS ``sqrt(J / N)`` [N], and the standard
   deviations ``sqrt(diag(sigma^2 P)) / s`` in the parameters' units. Without forgetting and from
   a vague start this is the batch least-squares solution and its covariance ``sigma^2 (W^T W)^-1``.
5. Convergence: the estimate has converged when, over the last ``convergence_window`` seconds,
   every parameter stayed within ``max(band |theta_i|, std_i)`` of its current value
   (:func:`settling_sample`), after at least ``min_samples`` samples.
6. For the results file (:meth:`OnlineCylinderIdentifier.result`), the samples until the estimates
   settle as ``robot-dynid hydraulic identify`` counts them: until every parameter stays within
   ``max(CONVERGENCE_BAND |final_i|, std_i)`` of the final estimate. Instead of the whole history, the
   smallest and largest estimate of every block the estimator received (at most :data:`PENDING_SAMPLES`
   samples) are kept, at most :data:`MAX_BLOCKS` blocks (beyond, neighbours merge); so the count is
   rounded up to the end of its block: exact to a block (1 s at 50 Hz, two after 10,000 blocks), in
   bounded memory.

Messages are checked by :func:`select_samples`, which says why one cannot be used (reasons
below); nothing here raises on bad input from a live stream.
"""
from __future__ import annotations

import dataclasses
import math
from collections import deque
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DynIdError
from robot_dynid.estimation.estimators import RECURSIVE_METHOD, build_estimator
from robot_dynid.recordings.cylinder_data import MAX_DISPLACEMENT, MAX_PRESSURE, MAX_SPEED, MIN_PEAK_PRESSURE
from robot_dynid.hydraulics.cylinder import (CONVERGENCE_BAND, HYDRAULIC_PARAMETER_NAMES, CylinderIdentification,
                                             CylinderParameters, HydraulicCylinder, cylinder_regressor,
                                             known_force, nominal_scales, settling_sample)
from robot_dynid.hydraulics.cylinder_results import CylinderConfig, CylinderResult
from robot_dynid.joint_names import index_in
from robot_dynid.recordings.joint_states import NameSelector, duplicate_names, empty_names

__all__ = ["N_PARAMETERS", "LIVE_SETTINGS", "EMPTY_NAMES", "DUPLICATE_NAMES", "STAMP_NOT_INCREASING", "PENDING_SAMPLES",
           "MAX_BLOCKS", "OnlineSettings", "CausalDerivative", "CylinderEstimate", "OnlineCylinderIdentifier",
           "CylinderStateEntries", "cylinder_selector", "select_samples", "OnlineHydraulicIdentifier"]

N_PARAMETERS = len(HYDRAULIC_PARAMETER_NAMES)
LIVE_SETTINGS = ("convergence_window", "convergence_band", "min_samples")
"""The settings of :class:`OnlineSettings` that can change while samples come (the convergence test, made at
every estimate); the others shape the estimator's state (its scaling, covariance, forgetting, derivative)."""

EMPTY_NAMES = empty_names("cylinder")
DUPLICATE_NAMES = duplicate_names("cylinder")
STAMP_NOT_INCREASING = "stamp not after the cylinder's previous sample"

PENDING_SAMPLES = 50
"""Samples of a cylinder collected before they go to the estimator as one block (1 s at 50 Hz)."""
MAX_BLOCKS = 10_000
"""Blocks whose estimate envelopes a cylinder keeps for the settling count (then neighbours merge)."""


@dataclass(frozen=True)
class OnlineSettings:
    """Settings of :class:`OnlineCylinderIdentifier` (see the module docstring).

    Attributes
    ----------
    forgetting : float
        mu in (0, 1]; 1: plain least squares. Memory about ``1 / (1 - mu)`` samples.
    initial_covariance : float
        P0 on the scaled columns (identity times this; the scaled parameters are forces [N]).
    displacement_scale, velocity_scale : float
        Typical ``|x|`` [m] and ``|x'|`` [m/s], the column scales (:func:`nominal_scales`).
    acceleration_window : float
        [s] of velocities the causal derivative fits.
    max_gap : float
        [s] between two samples of a cylinder beyond which the derivative starts again.
    convergence_window : float
        [s] the estimate must have stayed in its band to count as converged.
    convergence_band : float
        Relative half-width of the band [fraction of ``|theta|``]; the std is its floor.
    min_samples : int
        Samples before convergence can be declared.
    """

    forgetting: float = 1.0
    initial_covariance: float = 1e6
    displacement_scale: float = 0.006
    velocity_scale: float = 3e-4
    acceleration_window: float = 0.1
    max_gap: float = 0.5
    convergence_window: float = 10.0
    convergence_band: float = CONVERGENCE_BAND
    min_samples: int = 100

    def __post_init__(self) -> None:
        validators.fraction(self.forgetting, "forgetting", DynIdError)
        for name, unit in (("initial_covariance", None), ("displacement_scale", "m"), ("velocity_scale", "m/s"),
                           ("acceleration_window", "s"), ("max_gap", "s"), ("convergence_window", "s")):
            validators.positive(getattr(self, name), name, DynIdError, unit)
        validators.fraction(self.convergence_band, "convergence_band", DynIdError)
        validators.count(self.min_samples, "min_samples", DynIdError, minimum=N_PARAMETERS + 1)

    @property
    def scales(self) -> np.ndarray:
        """The column scales, shape (4,): [m, 1, m/s, (m/s)^(1/3)]."""
        return nominal_scales(self.displacement_scale, self.velocity_scale)


class CausalDerivative:
    """Derivative of a sampled signal from its past only: the slope of the least-squares line
    through the samples of the last ``window`` seconds (at least two), at their own stamps.

    Exact for a linear signal; for a smooth one it estimates the derivative about ``window / 2``
    before the newest sample.

    Parameters
    ----------
    window : float
        [s] (> 0).
    max_gap : float
        [s]: a sample farther than this from the previous one starts afresh.
    """

    def __init__(self, window: float, max_gap: float):
        self.window = validators.positive(window, "window", DynIdError, "s")
        self.max_gap = validators.positive(max_gap, "max_gap", DynIdError, "s")
        self._samples: deque = deque()

    def reset(self) -> None:
        self._samples.clear()

    def add(self, t: float, value: float) -> float | None:
        """Add the sample ``value`` at ``t`` [s] (after the previous one); return the derivative
        [unit of value / s], or None while fewer than two samples are at hand."""
        if self._samples and t - self._samples[-1][0] > self.max_gap:
            self._samples.clear()
        self._samples.append((t, value))
        while len(self._samples) > 2 and self._samples[0][0] < t - self.window:
            self._samples.popleft()
        if len(self._samples) < 2:
            return None
        count = len(self._samples)
        mean_t = sum(sample[0] for sample in self._samples) / count
        mean_v = sum(sample[1] for sample in self._samples) / count
        covariance = sum((ts - mean_t) * (vs - mean_v) for ts, vs in self._samples)
        return covariance / sum((ts - mean_t) ** 2 for ts, _ in self._samples)


@dataclass(frozen=True)
class CylinderEstimate:
    """The current estimate of one cylinder.

    Attributes
    ----------
    parameters : ndarray, shape (4,)
        K [N/m], fc [N], fv [N s/m], fs [N (s/m)^(1/3)]; NaN before ``N_PARAMETERS + 1`` samples.
    std : ndarray, shape (4,)
        Their standard deviations, same units; NaN likewise.
    residual_rms : float
        [N], forgetting-weighted; NaN before the first sample.
    samples : int
        Samples used.
    converged : bool
    stamp : float
        [s] of the newest sample used (NaN before any).
    """

    parameters: np.ndarray
    std: np.ndarray
    residual_rms: float
    samples: int
    converged: bool
    stamp: float


class OnlineCylinderIdentifier:
    """RLS identification of one cylinder, one sample at a time (module docstring).

    Parameters
    ----------
    cylinder : HydraulicCylinder
        Known data (SI).
    settings : OnlineSettings
    """

    def __init__(self, cylinder: HydraulicCylinder, settings: OnlineSettings = OnlineSettings()):
        self.cylinder = cylinder
        self.settings = settings
        self.scales = settings.scales
        self.rls = build_estimator(RECURSIVE_METHOD, N_PARAMETERS, forgetting=settings.forgetting,
                                   initial_covariance=settings.initial_covariance)
        self.derivative = CausalDerivative(settings.acceleration_window, settings.max_gap)
        self.reset()

    def reset(self) -> None:
        """Forget every sample."""
        self.rls.reset()
        self.derivative.reset()
        self.cost = 0.0            # J [N^2]
        self.weight = 0.0          # N, forgetting-weighted
        self.samples = 0
        self.last_stamp = -math.inf
        self._pending: list = []   # (t, x, xd, xdd, p_a, p_b, load) not yet in the estimator
        self._recent_t = np.empty(0)                    # stamps [s] of the last convergence_window
        self._recent = np.empty((0, N_PARAMETERS))      # estimates after them, in parameter units
        self._first_stamp = math.nan                    # [s] of the first sample used
        self._block_ends: list = []                     # samples used after each block
        self._block_low: list = []                      # (4,) smallest estimate in each block
        self._block_high: list = []                     # (4,) largest estimate in each block

    def add(self, t: float, x: float, xd: float, p_a: float, p_b: float, load: float = 0.0) -> str | None:
        """Use one sample: ``t`` [s], ``x`` [m], ``xd`` [m/s], ``p_a``, ``p_b`` [Pa], ``load`` [N]
        (checked by :func:`select_samples`). Returns None, or the reason the sample is not used
        (a stamp not after the previous one); the sample that primes the derivative returns
        None but updates nothing else.

        Samples are passed to the estimator in blocks of up to :data:`PENDING_SAMPLES` (the
        regressor and known force computed for a block at once, the recursion per sample) and
        before every :meth:`estimate`: the same estimates as sample by sample, at a fraction of
        the cost."""
        if not t > self.last_stamp:
            return STAMP_NOT_INCREASING
        self.last_stamp = t
        xdd = self.derivative.add(t, xd)
        if xdd is None:
            return None
        self._pending.append((t, x, xd, xdd, p_a, p_b, load))
        if not self.samples:
            self._first_stamp = t
        self.samples += 1
        if len(self._pending) >= PENDING_SAMPLES:
            self.flush()
        return None

    def flush(self) -> None:
        """Pass the pending samples to the estimator (steps 2-4 of the module docstring)."""
        if not self._pending:
            return
        t, x, xd, xdd, p_a, p_b, load = (np.array(column) for column in zip(*self._pending))
        self._pending = []
        phi = cylinder_regressor(x, xd) / self.scales
        y = known_force(self.cylinder, xd, xdd, p_a, p_b, load)
        before = self.rls.theta_.copy()
        history = self.rls.update_batch(phi, y, return_history=True)
        prior = y - np.einsum("kp,kp->k", phi, np.vstack([before, history[:-1]]))
        posterior = y - np.einsum("kp,kp->k", phi, history)
        mu = self.settings.forgetting
        decay = mu ** np.arange(y.size - 1, -1, -1.0)
        self.cost = mu**y.size * self.cost + float(decay @ (prior * posterior))
        self.weight = mu**y.size * self.weight + float(decay.sum())
        estimates = history / self.scales
        self._recent_t = np.concatenate([self._recent_t, t])
        self._recent = np.vstack([self._recent, estimates])
        self._add_block(self.samples, estimates)
        # keep the newest stamp at or before the window's start, so a full window is recognised
        first = max(0, int(np.searchsorted(self._recent_t, t[-1] - self.settings.convergence_window,
                                           side="right")) - 1)
        self._recent_t, self._recent = self._recent_t[first:], self._recent[first:]

    def _add_block(self, end: int, estimates: np.ndarray) -> None:
        """Keep the envelope of ``estimates`` (k, 4), the estimates after the samples up to ``end``."""
        self._block_ends.append(end)
        self._block_low.append(estimates.min(axis=0))
        self._block_high.append(estimates.max(axis=0))
        if len(self._block_ends) > MAX_BLOCKS:
            pairs = range(0, len(self._block_ends), 2)
            last = len(self._block_ends) - 1
            self._block_ends = [self._block_ends[min(i + 1, last)] for i in pairs]
            self._block_low = [np.minimum(self._block_low[i], self._block_low[min(i + 1, last)]) for i in pairs]
            self._block_high = [np.maximum(self._block_high[i], self._block_high[min(i + 1, last)]) for i in pairs]

    def settling_samples(self, final, floor) -> int:
        """Samples until every estimate stays within ``max(CONVERGENCE_BAND |final_i|, floor_i)`` of ``final``
        (4,) [parameter units] (:func:`settling_sample` of the whole history), rounded up to the end of
        the block it falls in (module docstring, step 6); needs an estimate."""
        self.flush()
        envelope = np.empty((2 * len(self._block_ends), N_PARAMETERS))
        envelope[0::2], envelope[1::2] = self._block_low, self._block_high
        row = settling_sample(envelope, final, floor=floor, band=CONVERGENCE_BAND)
        return 1 if row == 1 else min(self._block_ends[(row - 2) // 2] + 1, self.samples)

    @property
    def sample_interval(self) -> float:
        """Mean interval [s] between the samples used (NaN before two)."""
        return (self.last_stamp - self._first_stamp) / (self.samples - 1) if self.samples > 1 else math.nan

    def has_estimate(self) -> bool:
        """Whether the samples so far (forgetting-weighted) are more than the 4 parameters."""
        self.flush()
        return self.weight > N_PARAMETERS

    def _std(self) -> np.ndarray:
        sigma2 = max(self.cost, 0.0) / (self.weight - N_PARAMETERS)
        return np.sqrt(np.clip(np.diag(self.rls.covariance_), 0.0, None) * sigma2) / self.scales

    def estimate(self) -> CylinderEstimate:
        """The current :class:`CylinderEstimate` (after every sample so far)."""
        self.flush()
        if self.weight <= N_PARAMETERS:
            nan = np.full(N_PARAMETERS, np.nan)
            rms = math.sqrt(max(self.cost, 0.0) / self.weight) if self.weight > 0 else math.nan
            return CylinderEstimate(nan, nan.copy(), rms, self.samples, False,
                                    self.last_stamp if self.samples else math.nan)
        theta = self.rls.theta_ / self.scales
        std = self._std()
        converged = bool(
            self.samples >= self.settings.min_samples
            and self._recent_t[-1] - self._recent_t[0] >= self.settings.convergence_window
            and settling_sample(self._recent, theta, floor=std, band=self.settings.convergence_band) == 1)
        return CylinderEstimate(theta, std, math.sqrt(max(self.cost, 0.0) / self.weight), self.samples,
                                converged, self.last_stamp)

    def result(self) -> CylinderIdentification:
        """The estimate as a :class:`CylinderIdentification`, for the results file; needs more
        than 4 samples."""
        estimate = self.estimate()
        if self.weight <= N_PARAMETERS:
            raise DynIdError(f"cylinder identification needs more than {N_PARAMETERS} samples, got {self.samples}")
        return CylinderIdentification(
            parameters=CylinderParameters.from_array(estimate.parameters), std=estimate.std, history=None,
            residual_rms=estimate.residual_rms, state=self.rls.get_state(), method=RECURSIVE_METHOD,
            convergence_samples=self.settling_samples(estimate.parameters, estimate.std), scales=self.scales.copy(),
            n_samples=self.samples)


@dataclass(frozen=True)
class CylinderStateEntries:
    """The usable entries of one HydraulicCylinderState message, each (k,) in the message's order:
    ``names``, ``x`` [m], ``xd`` [m/s], ``p_a``, ``p_b`` [Pa], ``load`` [N] (None: the message
    has no loads)."""

    names: tuple
    x: np.ndarray
    xd: np.ndarray
    p_a: np.ndarray
    p_b: np.ndarray
    load: np.ndarray | None


def cylinder_selector(known: Sequence[str]) -> NameSelector:
    """The selector of HydraulicCylinderState messages naming any of the cylinders ``known``
    (:class:`~robot_dynid.recordings.joint_states.NameSelector`)."""
    return NameSelector(known, "cylinder", ("position", "velocity", "pressure_a", "pressure_b"), subset=True)


def select_samples(names: Sequence[str], known: Sequence[str] | NameSelector, position, velocity, pressure_a,
                   pressure_b, external_load=()) -> CylinderStateEntries | str:
    """The values of one message, or the reason it cannot be used.

    Reasons: those of :mod:`robot_dynid.recordings.joint_states` for cylinders (:data:`EMPTY_NAMES`,
    :data:`DUPLICATE_NAMES`, ``"unknown cylinder(s) [...]"`` for a name not in ``known``,
    ``"empty <field>"`` for an empty position, velocity or pressure, ``LENGTH_MISMATCH``
    (``position``, ``velocity`` and the pressures must hold one value per name, ``external_load``
    one per name or none), ``NON_FINITE``), and unit mistakes naming the cylinder, by the
    limits of :mod:`robot_dynid.recordings.cylinder_data`: both pressures below 1e4 Pa and not both
    zero (bar or MPa), one above 1e9 Pa, a position beyond 5 m (mm), a velocity beyond 10 m/s (mm/s).

    Parameters
    ----------
    names : sequence of str
        The message's cylinder names.
    known : sequence of str or NameSelector
        The configured cylinders, or their :func:`cylinder_selector`.
    position, velocity, pressure_a, pressure_b : array_like, shape (len(names),)
        [m], [m/s], [Pa], [Pa].
    external_load : array_like, shape (len(names),) or (0,)
        [N].
    """
    selector = known if isinstance(known, NameSelector) else cylinder_selector(known)
    selected = selector.select(names, position=position, velocity=velocity, pressure_a=pressure_a,
                               pressure_b=pressure_b, external_load=external_load)
    if isinstance(selected, str):
        return selected
    x, xd, p_a, p_b = (selected[field] for field in ("position", "velocity", "pressure_a", "pressure_b"))
    for k, name in enumerate(names):
        problem = _unit_problem(x[k], xd[k], p_a[k], p_b[k])
        if problem:
            return f"cylinder {name}: {problem}"
    return CylinderStateEntries(tuple(names), x, xd, p_a, p_b, selected["external_load"])


def _unit_problem(x: float, xd: float, p_a: float, p_b: float) -> str:
    """A unit mistake of one sample, by the limits the recording reader applies to whole columns
    (:mod:`robot_dynid.recordings.cylinder_data`); '' when none."""
    largest = max(abs(p_a), abs(p_b))
    if 0.0 < largest < MIN_PEAK_PRESSURE:
        return (f"pressures {p_a:g} and {p_b:g} Pa are both below {MIN_PEAK_PRESSURE:g} Pa (0.1 bar): bar or MPa, "
                "not Pa (HydraulicCylinderState pressures are in Pa)")
    if largest > MAX_PRESSURE:
        return f"pressures {p_a:g} and {p_b:g} Pa: above {MAX_PRESSURE:g} Pa (10 kbar), not Pa"
    if abs(x) > MAX_DISPLACEMENT:
        return f"position {x:g} m is beyond {MAX_DISPLACEMENT:g} m: millimetres, not metres?"
    if abs(xd) > MAX_SPEED:
        return f"velocity {xd:g} m/s is beyond {MAX_SPEED:g} m/s: mm/s, not m/s?"
    return ""


class OnlineHydraulicIdentifier:
    """One :class:`OnlineCylinderIdentifier` per configured cylinder, fed message by message.

    Parameters
    ----------
    cylinders : mapping of str to HydraulicCylinder
        By name, in the order estimates are reported.
    settings : OnlineSettings
    loads : mapping of str to float, optional
        Constant external load F_L [N] per cylinder, used when a message carries none (default 0).
    """

    def __init__(self, cylinders: Mapping[str, HydraulicCylinder], settings: OnlineSettings = OnlineSettings(),
                 loads: Mapping[str, float] | None = None):
        if not cylinders:
            raise DynIdError("no cylinders configured")
        self.names = tuple(cylinders)
        self.trackers = {name: OnlineCylinderIdentifier(cylinder, settings) for name, cylinder in cylinders.items()}
        self.selector = cylinder_selector(self.names)
        loads = dict(loads or {})
        index_in(self.names, list(loads), "loads", "the configuration", kind="cylinder", error=DynIdError)
        self.loads = {name: validators.number(loads.get(name, 0.0), f"cylinder {name}: load", DynIdError)
                      for name in self.names}

    def retune(self, **changes) -> None:
        """Replace settings of :data:`LIVE_SETTINGS` for every cylinder (checked as :class:`OnlineSettings`
        checks them); the estimates so far stay."""
        fixed = sorted(set(changes) - set(LIVE_SETTINGS))
        if fixed:
            raise DynIdError(f"settings {fixed} cannot change while identifying; those that can: {list(LIVE_SETTINGS)}")
        for tracker in self.trackers.values():
            tracker.settings = dataclasses.replace(tracker.settings, **changes)

    def add(self, stamp: float, names: Sequence[str], position, velocity, pressure_a, pressure_b,
            external_load=()) -> list[str]:
        """Use one HydraulicCylinderState message stamped ``stamp`` [s] (fields as in
        :func:`select_samples`); return the reasons for what was not used (empty: all used). A
        message that fails :func:`select_samples` is skipped whole."""
        samples = select_samples(names, self.selector, position, velocity, pressure_a, pressure_b, external_load)
        if isinstance(samples, str):
            return [samples]
        problems = []
        for k, name in enumerate(samples.names):
            load = self.loads[name] if samples.load is None else samples.load[k]
            problem = self.trackers[name].add(stamp, samples.x[k], samples.xd[k], samples.p_a[k], samples.p_b[k],
                                              load)
            if problem:
                problems.append(f"cylinder {name}: {problem}")
        return problems

    def estimates(self) -> dict:
        """``{name: CylinderEstimate}`` in the configured order."""
        return {name: tracker.estimate() for name, tracker in self.trackers.items()}

    def results(self, configs: Mapping[str, CylinderConfig]) -> list[CylinderResult]:
        """The results file's entries (:func:`~robot_dynid.hydraulics.cylinder_results.save_cylinder_results`,
        as ``robot-dynid hydraulic identify`` writes them, convergence included) of every cylinder with an
        estimate (:meth:`OnlineCylinderIdentifier.has_estimate`), in the configured order; ``configs``:
        the :class:`CylinderConfig` of each cylinder by name."""
        return [CylinderResult.from_identification(configs[name], tracker.result(), tracker.sample_interval,
                                                   forgetting=tracker.settings.forgetting)
                for name, tracker in self.trackers.items() if tracker.has_estimate()]

    def reset(self) -> None:
        for tracker in self.trackers.values():
            tracker.reset()
