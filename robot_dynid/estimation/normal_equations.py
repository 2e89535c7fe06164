"""The equations of recordings, ``tau = Y_base(q, qd, qdd) beta``, and every pass identification makes over them.

:class:`RecordingEquations` holds recordings with the regressor and base parameters they are identified in and is
the one place that turns them into equations: the per-joint normal equations of the fit
(:meth:`~RecordingEquations.accumulate`, into a
:class:`~robot_dynid.estimation.estimators.LeastSquaresAccumulator`, and through a recursive estimator), the
cross-validation folds (:meth:`~RecordingEquations.folds`), the QR factors of an ill-conditioned consistent fit
(:meth:`~RecordingEquations.qr_factors`) and exact residuals (:meth:`~RecordingEquations.residual_sum_of_squares`).

Memory is bounded: the regressor is evaluated ``chunk_size`` samples at a time
(:func:`iter_regressor_chunks`), so the stacked regressor of a long recording is never built. Where nothing
needs the regressor itself (no ``lowpass``, no offset columns, a batch method: :attr:`RecordingEquations.fused`)
the compiled kernel adds the base columns' normal equations tile by tile without writing ``Y`` at all
(:func:`accumulate_recording`, :meth:`~robot_dynid.model.regressor.Regressor.normal_equations`).

- ``lowpass`` [Hz]: parallel filtering (Gautier). The torques and every column of the regressor go through the
  same zero-phase Butterworth low-pass filter (:func:`~robot_dynid.recordings.signal_processing.lowpass_filter`),
  so both sides of ``tau = Y pi`` see the same distortion. Each contiguous run of samples is filtered on its own
  (a stage selection or a gap cuts runs); the regressor in chunks that overlap by
  :data:`FILTER_OVERLAP_PERIODS` periods of the cutoff, where the filter's response has died out to below 1e-10.
- ``offsets``: a torque offset column per recording and joint [N m] (a torque sensor re-zeroed between
  recordings), after the base columns.
- ``min_speed`` [rad/s; m/s]: joint j's equation of a sample where ``|qd_j|`` is below it is left out
  (:func:`slow_equations`).
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from robot_dynid.errors import DataError
from robot_dynid.estimation.consistency_check import Folds, fold_pieces
from robot_dynid.estimation.covariance import phase_times
from robot_dynid.estimation.estimators import LeastSquaresAccumulator, QRAccumulator, RecursiveLeastSquares, normal_sums
from robot_dynid.model.base_parameters import BaseParameters
from robot_dynid.model.regressor import Regressor
from robot_dynid.recordings.recording import DropCounter, Recording
from robot_dynid.recordings.signal_processing import gap_breaks, lowpass_filter, sample_interval

__all__ = ["FILTER_OVERLAP_PERIODS", "RecordingEquations", "iter_regressor_chunks", "contiguous_runs",
           "accumulate_recording", "slow_equations"]

FILTER_OVERLAP_PERIODS = 10.0
"""Periods of the cutoff by which filtered regressor chunks overlap (module docstring)."""
_GATHER_ROWS = 65536
"""Rows of a recording gathered at a time where :func:`accumulate_recording` leaves slow equations out."""


@dataclasses.dataclass(frozen=True, eq=False)
class RecordingEquations:
    """The base-parameter equations of ``recordings`` (module docstring), and every pass over them.

    Attributes
    ----------
    recordings : sequence of Recording
        Conditioned recordings (q [rad], qd [rad/s], qdd [rad/s^2], tau [N m]) in the regressor's joint order,
        stacked: their equations are added up, each keeping its own time base.
    regressor : Regressor
    base : BaseParameters
    chunk_size : int
        Samples per regressor evaluation.
    lowpass : float or None
        [Hz] parallel filtering's cutoff.
    min_speed : float
        [rad/s; m/s] slower joint equations are left out; 0 keeps every equation.
    offsets : bool
        A torque offset column per recording and joint after the base columns.
    batch : bool
        The fit is a batch one (a recursive estimator is updated on the regressor's rows, so it needs them).
    """

    recordings: Sequence[Recording]
    regressor: Regressor
    base: BaseParameters
    chunk_size: int = 5000
    lowpass: float | None = None
    min_speed: float = 0.0
    offsets: bool = False
    batch: bool = True

    @property
    def n_joints(self) -> int:
        return self.regressor.n_joints

    @property
    def n_parameters(self) -> int:
        """Columns: the base parameters, then the offsets (n per recording) when ``offsets``."""
        return self.base.rank + (self.n_joints * len(self.recordings) if self.offsets else 0)

    @property
    def fused(self) -> bool:
        """Whether the normal equations are added without the regressor (:func:`accumulate_recording`): no
        parallel filtering (it filters ``Y`` itself), no offset columns and a batch fit."""
        return self.lowpass is None and not self.offsets and self.batch

    def accumulate(self, accumulator: LeastSquaresAccumulator | None = None, rls: RecursiveLeastSquares | None = None,
                   dropped: DropCounter | None = None) -> LeastSquaresAccumulator:
        """Every recording's normal equations added to ``accumulator`` (default a new one, time blocks kept), with
        each sample's phase (:func:`~robot_dynid.estimation.covariance.phase_times`) where it keeps time blocks;
        ``rls`` updated on the same equations; the samples the filter drops counted in ``dropped``."""
        if accumulator is None:
            accumulator = LeastSquaresAccumulator(self.n_joints, self.n_parameters)
        if rls is None and self.fused:
            for recording in self.recordings:
                accumulate_recording(accumulator, self.regressor, self.base, recording, min_speed=self.min_speed)
            return accumulator
        for Y_base, tau, phase, kept in self.chunks(dropped, phases=accumulator.blocks_ is not None):
            accumulator.add(Y_base, tau, phase, kept)
            if rls is not None:
                rls.update_batch(Y_base, tau)
        return accumulator

    def chunks(self, dropped: DropCounter | None = None, phases: bool = False):
        """``(Y_base (M, n, r'), tau (M, n), phase (M,) [s] or None, kept (M, n) or None)`` chunks of every
        recording in turn (:func:`iter_regressor_chunks`), with the offset columns when ``offsets``, the
        equations :func:`slow_equations` leaves out zero in both and ``kept`` saying which; with ``phases``, each
        chunk's phase."""
        for index, recording in enumerate(self.recordings):
            phase = phase_times(recording.time, recording.cycle, recording.q) if phases else None
            for Y_base, tau, rows in _regressor_chunks(self.regressor, self.base, recording, self.chunk_size,
                                                       self.lowpass, dropped):
                if self.offsets:
                    Y_base = _with_offset_columns(Y_base, index, len(self.recordings))
                kept = slow_equations(recording.qd[rows], self.min_speed)
                if kept is not None:
                    Y_base, tau = Y_base * kept[:, :, None], tau * kept
                yield Y_base, tau, None if phase is None else phase[rows], kept

    def folds(self) -> Folds:
        """The cross-validation folds, cut by :func:`~robot_dynid.estimation.consistency_check.fold_pieces`: an
        accumulator of each fold's equations, and where ``lowpass`` filters them, of the same samples' unfiltered
        equations to score on. Base columns only: an offset of a recording left out cannot be predicted."""
        kind, pieces = fold_pieces(self.recordings)
        parts = [dataclasses.replace(self, recordings=piece, offsets=False) for piece in pieces]
        fits = [part.accumulate(LeastSquaresAccumulator(self.n_joints, self.base.rank, blocks=False))
                for part in parts]
        scoring = None if self.lowpass is None else [
            dataclasses.replace(part, lowpass=None).accumulate(
                LeastSquaresAccumulator(self.n_joints, self.base.rank, blocks=False)) for part in parts]
        return Folds(kind, fits, scoring)

    def qr_factors(self) -> np.ndarray:
        """:meth:`~robot_dynid.estimation.estimators.QRAccumulator.factors` of the equations, the base columns kept
        (a second pass over the data)."""
        qr = QRAccumulator(self.n_joints, self.n_parameters, n_keep=self.base.rank)
        for Y_base, tau, _, _ in self.chunks():
            qr.add(Y_base, tau)
        return qr.factors()

    def residual_sum_of_squares(self, theta) -> np.ndarray:
        """Per joint ``||tau_j - Y_j theta||^2`` [N^2 m^2] of ``theta`` (``n_parameters``,) summed from the
        equations themselves (exact where the normal equations' ``c - 2 theta^T b + theta^T G theta`` is rounding
        error)."""
        theta = np.asarray(theta, dtype=float)
        residual_ss = np.zeros(self.n_joints)
        for Y_base, tau, _, _ in self.chunks():
            residual_ss += np.sum((Y_base @ theta - tau) ** 2, axis=0)
        return residual_ss


def iter_regressor_chunks(regressor: Regressor, base: BaseParameters, recording: Recording, chunk_size: int,
                          lowpass: float | None = None, dropped: DropCounter | None = None):
    """Yield ``(Y_base (M, n, r), tau (M, n))`` for consecutive chunks of a recording (the full
    regressor of each chunk is written into one reused buffer); with ``lowpass`` [Hz] both
    filtered alike (module docstring), runs too short for the filter dropped and counted in
    ``dropped``."""
    for Y_base, tau, _ in _regressor_chunks(regressor, base, recording, chunk_size, lowpass, dropped):
        yield Y_base, tau


def _regressor_chunks(regressor, base, recording, chunk_size, lowpass=None, dropped=None):
    """:func:`iter_regressor_chunks` with each chunk's rows of the recording (a slice) as a third item."""
    if lowpass is not None:
        yield from _filtered_chunks(regressor, base, recording, chunk_size, lowpass, dropped)
        return
    elapsed = recording.elapsed
    buffer = np.empty((min(chunk_size, recording.n_samples), recording.n_joints, regressor.n_parameters))
    for start in range(0, recording.n_samples, chunk_size):
        stop = min(start + chunk_size, recording.n_samples)
        yield (_base_regressor(regressor, base, recording, elapsed, start, stop, buffer), recording.tau[start:stop],
               slice(start, stop))


def _base_regressor(regressor, base, recording, elapsed, start, stop, buffer=None):
    """Base regressor (stop - start, n, r) of rows start:stop of ``recording``."""
    temperature = None if recording.temperature is None else recording.temperature[start:stop]
    Y = regressor.compute(recording.q[start:stop], recording.qd[start:stop], recording.qdd[start:stop],
                          temperature=temperature, elapsed=elapsed[start:stop],
                          out=None if buffer is None else buffer[:stop - start])
    return base.select(Y)


def contiguous_runs(time) -> list[np.ndarray]:
    """Row indices of the runs of ``time`` (N,) [s] between gaps (a stage selection, lost samples:
    the gap rule :func:`~robot_dynid.recordings.signal_processing.gap_breaks`)."""
    return np.split(np.arange(len(time)), gap_breaks(time))


def _filtered_chunks(regressor, base, recording, chunk_size, cutoff, dropped):
    elapsed = recording.elapsed
    for run in contiguous_runs(recording.time):
        first, last = int(run[0]), int(run[-1]) + 1
        try:
            rate = 1.0 / sample_interval(recording.time[first:last])
            tau = lowpass_filter(recording.tau[first:last], cutoff, rate)
        except DataError as error:
            if "not uniformly sampled" in str(error):
                raise DataError(f"{recording.source}: --lowpass needs uniformly sampled data; {error} "
                                "(e.g. with --resample HZ)") from None
            if dropped is not None:
                dropped.add(f"in a run too short for the {cutoff:g} Hz low-pass filter",
                            float(recording.time[first]), last - first)
            continue
        overlap = int(np.ceil(FILTER_OVERLAP_PERIODS * rate / cutoff))
        for start in range(first, last, chunk_size):
            stop = min(start + chunk_size, last)
            low, high = max(first, start - overlap), min(last, stop + overlap)
            Y = lowpass_filter(_base_regressor(regressor, base, recording, elapsed, low, high), cutoff, rate)
            yield Y[start - low:stop - low], tau[start - first:stop - first], slice(start, stop)


def _with_offset_columns(Y_base: np.ndarray, index: int, n_recordings: int) -> np.ndarray:
    """``Y_base`` (M, n, r) with the n x n_recordings offset columns: 1 on joint j's rows for the
    offset of joint j in recording ``index``."""
    samples, n_joints, _ = Y_base.shape
    extra = np.zeros((samples, n_joints, n_joints * n_recordings))
    extra[:, np.arange(n_joints), index * n_joints + np.arange(n_joints)] = 1.0
    return np.concatenate([Y_base, extra], axis=2)


def accumulate_recording(accumulator: LeastSquaresAccumulator, regressor: Regressor, base: BaseParameters,
                         recording: Recording, phase=None, min_speed: float = 0.0) -> LeastSquaresAccumulator:
    """Add a recording's base normal equations to ``accumulator`` (n joints, ``base.rank`` parameters)
    by the fused kernel (:meth:`~robot_dynid.model.regressor.Regressor.normal_equations`): the same sums
    as ``accumulator.add`` of every :func:`iter_regressor_chunks` chunk, without writing ``Y``; one kernel
    call per time block of the robust covariance (``accumulator.blocks_``) of the samples' ``phase`` (N,) [s]
    (default :func:`~robot_dynid.estimation.covariance.phase_times` of the recording's stamps and cycles).
    Joint j's equation of a sample where ``|qd_j| < min_speed`` [rad/s; m/s] is left out
    (:func:`slow_equations`): the samples where some joint is that slow go through the regressor instead."""
    if (accumulator.n_joints, accumulator.n_parameters) != (regressor.n_joints, base.rank):
        raise DataError(f"accumulator of (n, p) = ({accumulator.n_joints}, {accumulator.n_parameters}) for a "
                        f"regressor of {regressor.n_joints} joints and {base.rank} base parameters")
    if accumulator.blocks_ is None:
        runs = [(None, 0, recording.n_samples)]
    else:
        if phase is None:
            phase = phase_times(recording.time, recording.cycle, recording.q)
        runs = accumulator.blocks_.runs(phase)
    n, r = accumulator.n_joints, accumulator.n_parameters
    kept = slow_equations(recording.qd, min_speed)
    temperature, elapsed = recording.temperature, recording.elapsed
    sums = {}           # per block: the kernel adds each of its runs in place, then the block is added once
    for key, start, stop in runs:
        if key not in sums:
            sums[key] = [np.zeros((n, r, r)), np.zeros((n, r)), np.zeros(n), 0, np.zeros(n, dtype=np.int64)]
        block = sums[key]
        block[3] += stop - start
        if kept is None:
            _add_rows(regressor, base, recording, slice(start, stop), block, temperature, elapsed)
            block[4] += stop - start
            continue
        all_kept = np.all(kept[start:stop], axis=1)
        fast = np.flatnonzero(all_kept) + start
        for first in range(0, fast.size, _GATHER_ROWS):
            _add_rows(regressor, base, recording, fast[first:first + _GATHER_ROWS], block, temperature, elapsed)
        slow = np.flatnonzero(~all_kept) + start
        for first in range(0, slow.size, _GATHER_ROWS):
            rows = slow[first:first + _GATHER_ROWS]
            Y = base.select(regressor.compute(recording.q[rows], recording.qd[rows], recording.qdd[rows],
                                              temperature=None if temperature is None else temperature[rows],
                                              elapsed=elapsed[rows]))
            mask = kept[rows]
            Y *= mask[:, :, None]
            for total, part in zip(block, normal_sums(Y, recording.tau[rows] * mask)):
                total += part
        block[4] += np.count_nonzero(kept[start:stop], axis=0)
    for key, (gram, moment, square, count, equations) in sums.items():
        accumulator.add_sums(gram, moment, square, count, key, equations)
    return accumulator


def _add_rows(regressor, base, recording, rows, block, temperature, elapsed) -> None:
    """The fused kernel's sums of ``recording``'s ``rows`` (a slice or indices) added to ``block``'s."""
    regressor.normal_equations(base.independent, recording.q[rows], recording.qd[rows], recording.qdd[rows],
                               recording.tau[rows], block[0], block[1], block[2],
                               temperature=None if temperature is None else temperature[rows],
                               elapsed=elapsed[rows])


def slow_equations(qd, min_speed: float) -> np.ndarray | None:
    """The joint equations kept (N, n) where some joint moves slower than ``min_speed`` [rad/s; m/s]: those
    of ``|qd_j| >= min_speed``; None where every equation is kept (``min_speed`` 0, or no sample that slow).

    At rest and through a velocity reversal the torque holds stiction and pre-sliding friction, which no
    friction model here represents; a least-squares fit over those equations takes Coulomb friction too low and
    viscous friction too high (on MuJoCo's friction loss by 10 % and 40 to 70 %; docs/estimation.md)."""
    if min_speed <= 0.0:
        return None
    kept = np.abs(np.asarray(qd)) >= min_speed
    return None if kept.all() else kept
