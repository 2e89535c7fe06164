"""Held-out validation of an identified model on recordings it was not fitted on.

Per joint, with ``e = tau_model - tau_measured`` [N m] over the validation samples:

- ``rms``: ``sqrt(mean e^2)`` [N m]; ``rsd``: ``sqrt(sum e^2 / sum tau^2)`` [1];
- ``relative_rmsd``: the RSD over the samples where the joint moves faster than
  ``speed_threshold`` [rad/s] (slow samples are dominated by the friction discontinuity at rest;
  :func:`robot_dynid.estimation.metrics.relative_rmsd`);
- ``nrms``: ``rms / (2 * effort limit)`` [1], the normalisation FloBaRoID reports (for comparison
  with it), None for a joint without an effort limit; ``mean_nrms`` is its mean over the joints
  that have one.

Held-out data are conditioned as the model's training data were (``provenance.conditioning``:
resampling, derivatives, velocity 0 at rest; :mod:`robot_dynid.recordings.conditioning`), and where
the model was identified with a low-pass filter, measured and predicted torques are filtered alike
(``lowpass``), so that a held-out RSD and the training RSD printed beside it are computed the same
way; ``conditioning`` says on what the numbers were computed. The filter removes the noise from both
sides, so such numbers flatter the model (on a 7-axis arm, 0.0015 mean NRMS against filtered torques,
0.0031 against raw ones): with ``lowpass`` the same samples are also scored against the raw measured
torques (``raw_report``, ``raw_nrms``), and both are labelled wherever they are shown
(:attr:`ModelValidation.scored_against`).

A model is trusted only on the range it was identified on: where the validation data move faster
or accelerate harder than the identification data (``metrics.identified_range`` of the model), a
warning names the joint, the share of samples and how far beyond (friction polynomials and
stiffness-like terms extrapolate badly).
"""
from __future__ import annotations

import dataclasses
import pathlib
from typing import Sequence

import numpy as np

from robot_dynid.errors import DataError
from robot_dynid.estimation.analysis_defaults import DEFAULT_SPEED_THRESHOLD
from robot_dynid.estimation.normal_equations import contiguous_runs
from robot_dynid.estimation.metrics import ValidationReport, prediction_report, share_of
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.recordings.recording import Recording
from robot_dynid.recordings.signal_processing import lowpass_filter, sample_interval

__all__ = ["RAW_LABEL", "ModelValidation", "validate_model", "range_warnings", "GOOD_HELD_OUT_RSD", "OVERFIT_RATIO",
           "FitVerdict", "judge_fit"]

RAW_LABEL = "raw measured torques (unfiltered)"
"""What :attr:`ModelValidation.raw_report` compares the model with."""

_RANGE_FIELDS = (("max_speed", "qd", "move faster", "rad/s"),
                 ("max_acceleration", "qdd", "accelerate harder", "rad/s^2"))


@dataclasses.dataclass(frozen=True)
class ModelValidation:
    """Metrics of a model on validation data (module docstring).

    ``report`` holds the per-joint RMS, RSD, residual std and relative RMSD; ``nrms`` (n,) with
    NaN where a joint has no effort limit; ``warnings`` the range warnings; ``sources`` the files;
    ``conditioning`` what the data were conditioned with (one line; '' when not said); ``lowpass``
    [Hz] the filter applied alike to measured and predicted torques (None: none), and then
    ``raw_report`` / ``raw_nrms`` the same samples scored against the raw measured torques.
    """

    report: ValidationReport
    nrms: np.ndarray
    warnings: tuple[str, ...]
    sources: tuple[str, ...]
    conditioning: str = ""
    lowpass: float | None = None
    raw_report: ValidationReport | None = None
    raw_nrms: np.ndarray | None = None

    @property
    def mean_nrms(self) -> float | None:
        return _mean_known(self.nrms)

    @property
    def raw_mean_nrms(self) -> float | None:
        return None if self.raw_nrms is None else _mean_known(self.raw_nrms)

    @property
    def scored_against(self) -> str:
        """What ``report`` compares the model with (a label)."""
        if self.lowpass is None:
            return "measured torques"
        return f"measured torques low-pass filtered at {self.lowpass:g} Hz, as the model's training torques were"

    def to_dict(self) -> dict:
        """Per joint ``{rms, rsd, relative_rmsd, nrms}`` and the totals, JSON/YAML friendly; with a low-pass,
        ``raw`` holds the same against the raw measured torques."""
        raw = None
        if self.raw_report is not None:
            raw = {"scored_against": RAW_LABEL, "joints": _joint_metrics(self.raw_report, self.raw_nrms),
                   "mean_nrms": self.raw_mean_nrms}
        return {
            "sources": list(self.sources),
            "n_samples": self.report.n_samples,
            "speed_threshold": self.report.speed_threshold,
            "scored_against": self.scored_against,
            "lowpass": self.lowpass,
            "joints": _joint_metrics(self.report, self.nrms),
            "mean_nrms": self.mean_nrms,
            "raw": raw,
            "warnings": list(self.warnings),
            "conditioning": self.conditioning,
        }


def _mean_known(nrms: np.ndarray) -> float | None:
    known = nrms[np.isfinite(nrms)]
    return float(np.mean(known)) if known.size else None


def _joint_metrics(report: ValidationReport, nrms: np.ndarray) -> dict:
    return {joint: {"rms": float(report.rms[j]), "rsd": float(report.rsd[j]),
                    "relative_rmsd": float(report.relative_rmsd[j]),
                    "nrms": None if not np.isfinite(nrms[j]) else float(nrms[j])}
            for j, joint in enumerate(report.joint_names)}


def validate_model(model: DynamicModel, recordings: Sequence[Recording],
                   speed_threshold: float = DEFAULT_SPEED_THRESHOLD, lowpass: float | None = None,
                   conditioning: str = "") -> ModelValidation:
    """The model's metrics on ``recordings`` (joints matched by name; q, qd, qdd, tau needed); with
    ``lowpass`` [Hz], measured and predicted torques filtered alike (zero-phase, per contiguous run;
    uniform stamps needed), runs too short for the filter left out, and the same samples also scored against
    the raw measured torques; ``conditioning`` is recorded."""
    if not recordings:
        raise DataError("no recording to validate the model on")
    joints = model.joint_names
    recordings = [recording.reorder(joints) for recording in recordings]
    for recording in recordings:
        missing = [field for field in ("qd", "qdd", "tau") if getattr(recording, field) is None]
        if missing:
            raise DataError(f"{recording.source}: validation needs {', '.join(missing)}")
    predicted = [model.torque(r.q, r.qd, r.qdd, temperature=r.temperature, elapsed=r.elapsed) for r in recordings]
    measured = [recording.tau for recording in recordings]
    speeds = [recording.qd for recording in recordings]
    raw = None
    if lowpass is not None:
        predicted, measured, speeds, raw = _filtered(recordings, predicted, measured, speeds, lowpass)
    report = prediction_report(zip(predicted, measured, speeds), speed_threshold, joint_names=joints)
    efforts = model.robot.limit_arrays().effort
    raw_report = None
    if raw is not None:
        raw_report = prediction_report(zip(raw[0], raw[1], speeds), speed_threshold, joint_names=joints)
    return ModelValidation(report, report.rms / (2.0 * efforts), tuple(range_warnings(model, recordings)),
                           tuple(recording.source for recording in recordings), conditioning, lowpass, raw_report,
                           None if raw_report is None else raw_report.rms / (2.0 * efforts))


def _filtered(recordings, predicted, measured, speeds, cutoff):
    """Predicted and measured torques low-pass filtered alike per contiguous run (as identification filters
    torques and regressor columns), the speeds, and the same runs' raw predicted and measured torques; the samples
    of runs too short for the filter are left out."""
    kept = ([], [], [])
    raw = ([], [])
    for recording, model_torque, torque, speed in zip(recordings, predicted, measured, speeds):
        for run in contiguous_runs(recording.time):
            try:
                rate = 1.0 / sample_interval(recording.time[run])
                filtered = [lowpass_filter(values[run], cutoff, rate) for values in (model_torque, torque)]
            except DataError as error:
                if "not uniformly sampled" in str(error):
                    raise DataError(f"{recording.source}: the model was identified with a {cutoff:g} Hz low-pass, "
                                    f"which needs uniformly sampled held-out data; {error}") from None
                continue
            for target, values in zip(kept + raw, (*filtered, speed[run], model_torque[run], torque[run])):
                target.append(values)
    if not kept[0]:
        raise DataError(f"no run of the held-out data is long enough for the model's {cutoff:g} Hz low-pass filter")
    return (*kept, raw)


def range_warnings(model: DynamicModel, recordings: Sequence[Recording]) -> list[str]:
    """Where ``recordings`` leave the speeds and accelerations the model was identified on."""
    identified = model.metrics.get("identified_range") or {}
    warnings = []
    for key, field, verb, unit in _RANGE_FIELDS:
        limits = identified.get(key) or {}
        for j, joint in enumerate(model.joint_names):
            if joint not in limits:
                continue
            values = np.abs(np.concatenate([getattr(recording, field)[:, j] for recording in recordings]))
            beyond = values > limits[joint]
            if beyond.any():
                share = share_of(int(np.count_nonzero(beyond)), beyond.size, "validation samples")
                warnings.append(f"{joint}: {share} {verb} than the model was "
                                f"identified on ({float(limits[joint]):.3g} {unit}; up to {values.max():.3g}): "
                                "friction polynomials and stiffness-like terms extrapolate badly")
    return warnings


#: Held-out RSD per joint above which the model is not good enough on that joint [1]: more than a fifth of the
#: torque's RMS unexplained. Identified models of industrial arms reach 0.05-0.15 on well-excited joints.
GOOD_HELD_OUT_RSD = 0.2
#: Held-out RSD above this many times the training RSD: the model fits its data better than it predicts (over-fit,
#: or a motion the training did not cover).
OVERFIT_RATIO = 2.0


@dataclasses.dataclass(frozen=True)
class FitVerdict:
    """Whether a model is good enough, joint by joint, from held-out data (:func:`judge_fit`).

    Attributes
    ----------
    good : bool or None
        True when every joint is good, False when one is not, None without held-out data.
    joints : dict
        Joint name -> why it is not good (only the joints that are not).
    text : str
        One line for the top of a page or a command's output.
    """

    good: bool | None
    joints: dict
    text: str

    def to_dict(self) -> dict:
        return {"good": self.good, "joints": dict(self.joints), "text": self.text,
                "good_held_out_rsd": GOOD_HELD_OUT_RSD, "overfit_ratio": OVERFIT_RATIO}


def judge_fit(training: ModelValidation, held_out: Sequence[ModelValidation]) -> FitVerdict:
    """The verdict on a model from its training fit and its held-out fits: a joint is good when on every held-out
    file its RSD is at most :data:`GOOD_HELD_OUT_RSD` and at most :data:`OVERFIT_RATIO` times its training RSD.
    Where it is not, the reason tells the two cases apart: a held-out RSD far above the training one (the model
    does not carry over to new motion), or one as high on the training data (noise, or an effect the model lacks:
    more data or another friction model, not another fit). The text groups the joints by cause and names the
    held-out files where each cause was found; :attr:`FitVerdict.joints` gives each joint's numbers."""
    names = training.report.joint_names or tuple(f"joint {j + 1}" for j in range(len(training.report.rsd)))
    if not held_out:
        worst = int(np.nanargmax(training.report.rsd)) if np.isfinite(training.report.rsd).any() else 0
        return FitVerdict(None, {}, f"not judged: no held-out data (training RSD at most "
                                    f"{float(np.nanmax(training.report.rsd)):.2g}, {names[worst]}); hold out a "
                                    f"cycle or give a held-out file")
    stacked = np.array([fit.report.rsd for fit in held_out], dtype=float)
    rsd = np.nanmax(stacked, axis=0)
    worst_fit = np.argmax(np.where(np.isnan(stacked), -np.inf, stacked), axis=0)
    reasons, causes = {}, {"carry": [], "noise": []}
    for joint, (name, value, trained) in enumerate(zip(names, rsd, training.report.rsd)):
        where = held_out[worst_fit[joint]].sources
        if trained > 0.0 and value > OVERFIT_RATIO * trained:
            reasons[name] = (f"held-out RSD {value:.2g} is {value / trained:.2g} x its training RSD {trained:.2g} "
                             "(does not carry over to new motion)")
            causes["carry"].append((name, value / trained, where))
        elif not value <= GOOD_HELD_OUT_RSD:
            reasons[name] = (f"held-out RSD {value:.2g} > {GOOD_HELD_OUT_RSD:g}, training {trained:.2g} alike "
                             "(noise, or an effect the model lacks)")
            causes["noise"].append((name, value, where))
    if not reasons:
        return FitVerdict(True, {}, f"good on all {len(names)} joints: held-out RSD at most {float(rsd.max()):.2g} "
                                    f"(limit {GOOD_HELD_OUT_RSD:g})")
    parts = []
    for cause, wording, number in (("carry", "does not carry over to new motion", "held-out RSD up to {:.2g} x "
                                    "training"),
                                   ("noise", "as poor in training (noise, or an effect the model lacks)",
                                    "held-out RSD up to {:.2g}")):
        joints = causes[cause]
        if joints:
            files = sorted({pathlib.Path(source).name for *_, where in joints for source in where})
            parts.append(f"{wording} on {', '.join(name for name, *_ in joints)} ("
                         f"{number.format(max(value for _, value, _ in joints))}"
                         f"{'; ' + ', '.join(files) if files else ''})")
    return FitVerdict(False, reasons, f"not good enough on {len(reasons)} of {len(names)} joints: "
                      + "; ".join(parts))
