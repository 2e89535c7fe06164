"""The timing of a recording's stamps: jitter, gaps, repeated stamps, and whether they were measured.

Derivatives, filters and resampling take the stamps at their word. :func:`stamp_quality` says what
they are, from the stamps as read (before any resampling; :func:`~robot_dynid.recordings.pipeline.read_recording`
attaches the report to ``Recording.stamp_quality``):

- ``median_step`` [s] ``h``: the median of the steps ``time[i + 1] - time[i]``; ``rate = 1 / h`` [Hz];
- gaps: steps longer than :data:`~robot_dynid.recordings.signal_processing.GAP_STEPS` ``h`` (at least
  one sample missing at the median rate); each gap misses ``round(step / h) - 1`` samples (the gap rule:
  :func:`~robot_dynid.recordings.signal_processing.gap_steps`);
- jitter [s]: RMS and largest ``|step - h|`` over the steps that are not gaps;
- repeated stamps: samples the reader dropped for a stamp equal to an earlier one (the bag reader
  keeps the first; a CSV file with a repeated time is refused);
- the nominal-grid test: the stamps are fitted by a grid ``t0 + k h'`` (``k`` counting the periods
  of every step, so a grid with missing samples is still a grid); when every stamp lies within
  :data:`NOMINAL_GRID_TOLERANCE` of it, the stamps look computed (``k / f`` by the driver or a
  conversion) rather than measured: a software stamp of a real sample jitters by far more than
  that at every rate arm drivers publish (100 Hz to 5 kHz). A warning says so: late, early or
  lost samples then go unseen, and their timing errors go into the derivatives and torques.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from robot_dynid.recordings.recording import REPEATED_STAMP, Recording
from robot_dynid.recordings.signal_processing import GAP_STEPS, gap_threshold
from robot_dynid.recordings.time_base import grid_line

__all__ = ["NOMINAL_GRID_TOLERANCE", "MIN_STEPS_TO_JUDGE", "StampQuality", "stamp_quality", "recording_stamp_quality"]
NOMINAL_GRID_TOLERANCE = 1e-6
"""[s] stamps all within this of a uniform grid look computed, not measured (module docstring): ten
times the float64 resolution of absolute ROS time in seconds (2.4e-7 s), below the jitter of any
software stamp."""
MIN_STEPS_TO_JUDGE = 20
"""[1] fewer steps than this are not judged for a nominal grid."""


@dataclasses.dataclass(frozen=True)
class StampQuality:
    """The timing of one recording's stamps (module docstring).

    Attributes
    ----------
    source : str
        The recording's file.
    n_stamps : int
        Stamps kept (strictly increasing).
    repeated : int
        Samples dropped for a repeated stamp.
    median_step : float
        [s] ``h``; nan with fewer than 2 stamps.
    jitter_rms, jitter_max : float
        [s] RMS and largest ``|step - h|`` over the steps that are not gaps; nan without such steps.
    n_gaps : int
        Steps longer than :data:`~robot_dynid.recordings.signal_processing.GAP_STEPS` ``h``.
    missing : int
        Samples missing in the gaps at the median rate.
    longest_gap : float
        [s] the longest step that is a gap; 0 without gaps.
    first_gap : float
        [s] after the first stamp, the start of the first gap; nan without gaps.
    grid_step : float
        [s] ``h'`` of the best-fitting grid ``t0 + k h'`` (more exact than ``median_step`` on a grid);
        nan with fewer than :data:`MIN_STEPS_TO_JUDGE` steps.
    grid_deviation : float
        [s] the largest distance of a stamp from that grid; nan as ``grid_step``.
    time_base : str
        Which clock derivatives were fitted in and why (:mod:`robot_dynid.recordings.time_base`); '' before the
        choice.
    """

    source: str
    n_stamps: int
    repeated: int
    median_step: float
    jitter_rms: float
    jitter_max: float
    n_gaps: int
    missing: int
    longest_gap: float
    first_gap: float
    grid_step: float
    grid_deviation: float
    time_base: str = ""

    @property
    def rate(self) -> float:
        """[Hz] ``1 / median_step``; nan with fewer than 2 stamps."""
        return 1.0 / self.median_step if self.median_step > 0.0 else math.nan

    @property
    def nominal_grid(self) -> bool:
        """Every stamp within :data:`NOMINAL_GRID_TOLERANCE` of a uniform grid (module docstring)."""
        return bool(self.grid_deviation <= NOMINAL_GRID_TOLERANCE)

    def describe(self) -> str:
        """One line: rate, jitter, gaps and repeated stamps."""
        if not self.median_step > 0.0:
            return f"{self.source}: {self.n_stamps} stamp(s), too few to judge their timing"
        text = (f"{self.source}: {self.n_stamps} stamps at {self.rate:.4g} Hz (median step {_ms(self.median_step)}); "
                f"jitter {_ms(self.jitter_rms)} RMS, largest {_ms(self.jitter_max)}; ")
        if self.n_gaps:
            text += (f"{self.n_gaps} gap(s) longer than {GAP_STEPS:g} steps ({self.missing} samples missing, longest "
                     f"{self.longest_gap:.4g} s, the first {self.first_gap:.4g} s after the start)")
        else:
            text += f"no gap longer than {GAP_STEPS:g} steps"
        text += f"; {self.repeated} repeated stamp(s) dropped" if self.repeated else "; no repeated stamp"
        return text + (f"; {self.time_base}" if self.time_base else "")

    def warnings(self) -> list[str]:
        """The nominal-grid warning (module docstring), or none."""
        if not self.nominal_grid:
            return []
        return [f"{self.source}: every stamp lies within {self.grid_deviation * 1e6:.2g} us of a uniform "
                f"{1.0 / self.grid_step:.6g} Hz grid: the stamps look computed (k / f), not measured; a real "
                "sample's stamp jitters by more. Late, early or lost samples go unseen and their timing errors go "
                "into the derivatives and torques; stamp each sample when it is measured (the driver's read time) if "
                "you can"]

    def to_dict(self) -> dict:
        """Plain numbers (nan as None), with ``rate`` [Hz], ``nominal_grid`` and ``warnings``; seconds throughout."""
        data = {key: None if isinstance(value, float) and math.isnan(value) else value
                for key, value in dataclasses.asdict(self).items()}
        rate = self.rate
        return {**data, "rate": None if math.isnan(rate) else rate, "nominal_grid": self.nominal_grid,
                "warnings": self.warnings()}


def _ms(seconds: float) -> str:
    return "-" if math.isnan(seconds) else f"{seconds * 1e3:.3g} ms"


def stamp_quality(time, repeated: int = 0, source: str = "<stamps>", time_base: str = "") -> StampQuality:
    """The timing of stamps ``time`` (N,) [s], strictly increasing (module docstring).

    Parameters
    ----------
    time : array_like, shape (N,)
        [s] the stamps as read (absolute ROS time or from 0).
    repeated : int
        Samples dropped before for a repeated stamp.
    source : str
        Named in the report's lines.
    time_base : str
        The clock derivatives use, said in the report (:attr:`StampQuality.time_base`).
    """
    time = np.asarray(time, dtype=float)
    nan = math.nan
    if time.size < 2:
        return StampQuality(source, int(time.size), int(repeated), nan, nan, nan, 0, 0, 0.0, nan, nan, nan, time_base)
    relative = time - time[0]
    steps = np.diff(relative)
    step = float(np.median(steps))
    gaps = steps > gap_threshold(step)
    n_gaps = int(np.count_nonzero(gaps))
    longest_gap, first_gap = (float(steps[gaps].max()), float(relative[np.argmax(gaps)])) if n_gaps else (0.0, nan)
    jitter_rms = jitter_max = nan
    if n_gaps < steps.size:
        regular = steps[~gaps]
        regular -= step
        jitter_max = max(float(regular.max()), -float(regular.min()))
        regular *= regular
        jitter_rms = float(np.sqrt(np.mean(regular)))
        del regular
    periods = np.divide(steps, step, out=steps)
    del steps
    np.maximum(np.rint(periods, out=periods), 1.0, out=periods)
    missing = int(np.sum(periods[gaps] - 1.0))
    grid_step = grid_deviation = nan
    if periods.size >= MIN_STEPS_TO_JUDGE:
        k = np.empty(time.size)
        k[0] = 0.0
        np.cumsum(periods, out=k[1:])
        del periods
        grid_step, grid_deviation = _grid_fit(k, relative)
    return StampQuality(
        source=source, n_stamps=int(time.size), repeated=int(repeated), median_step=step,
        jitter_rms=jitter_rms, jitter_max=jitter_max, n_gaps=n_gaps, missing=missing, longest_gap=longest_gap,
        first_gap=first_gap, grid_step=float(grid_step), grid_deviation=grid_deviation, time_base=time_base)


_FIT_BLOCK = 65536
"""Stamps [1] per block of the grid fit's sums: its temporaries are a few arrays of this length."""


def _grid_fit(k, relative) -> tuple[float, float]:
    """Step ``h'`` [s] of the least-squares grid (:func:`~robot_dynid.recordings.time_base.grid_line`) through
    stamps ``relative`` (N,) [s] at grid indices ``k`` (N,), and the largest distance [s] of a stamp from it,
    :data:`_FIT_BLOCK` stamps at a time."""
    blocks = [slice(start, start + _FIT_BLOCK) for start in range(0, k.size, _FIT_BLOCK)]
    step, intercept = grid_line(lambda: ((k[block], relative[block]) for block in blocks), k.size)
    deviation = max(float(np.max(np.abs(relative[block] - (intercept + step * k[block])))) for block in blocks)
    return step, deviation


def recording_stamp_quality(recording: Recording, time_base: str = "") -> StampQuality:
    """:func:`stamp_quality` of a recording as read: its stamps, the samples it dropped for a repeated
    stamp (reasons ending in :data:`~robot_dynid.recordings.recording.REPEATED_STAMP`), its source, the clock its
    derivatives use (``time_base``)."""
    repeated = sum(entry.count for reason, entry in recording.dropped.items() if reason.endswith(REPEATED_STAMP))
    return stamp_quality(recording.time, repeated, recording.source, time_base)
