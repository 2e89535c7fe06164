"""The report of a test (``robot-dynid report``) and of a model comparison (``robot-dynid compare``).

:func:`make_report` runs the analyses of :mod:`robot_dynid.estimation.cycles` and
:mod:`~robot_dynid.estimation.friction_stages` on labelled recordings and writes ``index.html``
(figures beside it as PNG files), ``summary.json`` and, when it identified the model itself,
``model.yaml``. Which data are which (:func:`split_segments`):

- identification: the samples of the chosen stages (default ``excitation``) outside the held-out
  cycles;
- held-out: the ``validation`` stage, recordings given for validation, and the held-out cycles'
  samples of the chosen stages; without a model and without other held-out data, the last cycle
  when there are two or more. Each file's held-out data get their own table and figure
  (:func:`held_out_groups`): one file's poor fit is not averaged away by another's.

With a low-pass model, every table is given twice, labelled: against the filtered measured torques (as the
model's training torques) and against the raw ones.
"""
from __future__ import annotations

import dataclasses
import logging
import pathlib
from typing import Sequence

import numpy as np

from robot_dynid.errors import DataError
from robot_dynid.estimation.analysis_defaults import (DEFAULT_FRICTION_SPEED, DEFAULT_SPEED_THRESHOLD,
                                                      DEFAULT_WARM_CYCLES)
from robot_dynid.estimation.identification import IdentificationSettings, identify, plausibility
from robot_dynid.estimation.torque_scale import check_torque_scale
from robot_dynid.estimation.validation import RAW_LABEL, judge_fit
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.robot_description import RobotDescription
from robot_dynid.recordings.recording import Recording
from robot_dynid.recordings.stage_detection import DEFAULT_PLATEAU_TOLERANCE, REST_THRESHOLD
from robot_dynid.recordings.stages import StageInterval
from robot_dynid.estimation import cycles as per_cycle
from robot_dynid.estimation import friction_stages
from robot_dynid.estimation.comparison import DEFAULT_SIGNIFICANCE, compare_models
from robot_dynid.estimation.progress import Progress, no_progress
from robot_dynid.reports import html
from robot_dynid.reports.tables import model_summary, stamp_quality_summary, std_description

__all__ = ["ReportOptions", "split_segments", "held_out_groups", "make_report", "make_comparison"]

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class ReportOptions:
    """What the report analyses.

    Attributes
    ----------
    stage : tuple of str
        Stage kinds of the identification data (and of the per-cycle fits).
    speed_threshold : float
        [rad/s] samples of a joint slower than this do not count for its relative RMSD.
    warm_cycles : int
        Cycles left out of the warm statistics.
    friction_speed : float
        [1] speed level (fraction of the velocity limit) followed over time.
    gravity : {"auto", "always", "never"}
        Gravity removal of the friction fits (:func:`~robot_dynid.estimation.friction_stages.friction_analysis`).
    plateau_tolerance : float
        [1] of the constant-velocity plateaus.
    rest_threshold : float
        [rad/s] friction-fit samples slower than this are left out.
    holdout_cycles : tuple of int or None
        Cycles held out of the identification; None: automatic (module docstring).
    pools : tuple of tuple of int
        Cycles pooled into one fit each, for the cross-verification.
    """

    stage: tuple[str, ...] = ("excitation",)
    speed_threshold: float = DEFAULT_SPEED_THRESHOLD
    warm_cycles: int = DEFAULT_WARM_CYCLES
    friction_speed: float = DEFAULT_FRICTION_SPEED
    gravity: str = "auto"
    plateau_tolerance: float = DEFAULT_PLATEAU_TOLERANCE
    rest_threshold: float = REST_THRESHOLD
    holdout_cycles: tuple[int, ...] | None = None
    pools: tuple[tuple[int, ...], ...] = ()


def _cycles_of(recording: Recording, stage) -> list[int]:
    if recording.stage is None or recording.cycle is None:
        return []
    in_stage = np.isin(recording.stage, list(stage))
    return sorted(int(c) for c in np.unique(recording.cycle[in_stage]) if c >= 0)


def split_segments(recordings: Sequence[Recording], stage: Sequence[str], holdout_cycles, automatic: bool
                   ) -> tuple[list[Recording], list[Recording], tuple[int, ...], list[str]]:
    """(identification recordings, held-out recordings, held-out cycles, notes); see the module docstring.

    Raises
    ------
    DataError
        A recording has no stage labels, or no identification samples are left (naming it).
    """
    notes = []
    cycles = sorted({c for recording in recordings for c in _cycles_of(recording, stage)})
    has_validation = any(r.stage is not None and np.any(r.stage == "validation") for r in recordings)
    if holdout_cycles is None:
        holdout_cycles = (cycles[-1],) if automatic and not has_validation and len(cycles) >= 2 else ()
        if holdout_cycles:
            notes.append(f"cycle {holdout_cycles[0]} held out of the identification (the last one)")
    identification, held_out = [], []
    for recording in recordings:
        if recording.stage is None:
            raise DataError(f"{recording.source} has no stage labels")
        in_stage = np.isin(recording.stage, list(stage))
        held = in_stage & (np.isin(recording.cycle, list(holdout_cycles)) if recording.cycle is not None
                           else np.zeros(recording.n_samples, dtype=bool))
        if np.any(in_stage & ~held):
            identification.append(recording.take(in_stage & ~held))
        if np.any(held):
            held_out.append(recording.take(held))
        if np.any(recording.stage == "validation"):
            held_out.append(recording.select(stage="validation"))
    if not identification:
        raise DataError(f"no samples of stage {list(stage)} outside the held-out cycles {list(holdout_cycles)} "
                        f"in {', '.join(r.source for r in recordings)}")
    return identification, held_out, tuple(holdout_cycles), notes


def _parameter_rows(model: DynamicModel):
    poor = {entry["name"] for entry in model.metrics.get("poorly_excited", [])}
    rows, classes = [], []
    for row in model.parameter_table():
        relative = row["relative_std"]
        if not poor and not relative <= 1.0:
            poor.add(row["name"])
        rows.append((row["name"], model.regressor.parameter_unit(row["name"]), html.number(row["value"], 6),
                     html.number(row["std"], 3),
                     *((html.number(row["white_std"], 3),) if "white_std" in row else ()),
                     "-" if not np.isfinite(relative) else f"{100 * relative:.1f}%", row["expression"]))
        classes.append("poor" if row["name"] in poor else "")
    return rows, classes, poor


def _metrics_tables(fit) -> list[str]:
    """The fit's metrics table, labelled with the torques it scores against; with a low-pass, a second one
    against the raw measured torques."""
    validation = fit.validation
    tables = [(validation.scored_against, validation.report, validation.nrms)]
    if validation.raw_report is not None:
        tables.append((RAW_LABEL, validation.raw_report, validation.raw_nrms))
    parts = []
    for label, report, nrms in tables:
        parts += [html.paragraph(f"against {label}:"), html.table(
            ("joint", "RMS [N m]", "RSD [1]", f"rel. RMSD (|qd| >= {report.speed_threshold:g} rad/s) [1]",
             "residual std [N m]", "NRMS [1]", "samples counted"),
            [(joint, html.number(report.rms[j]), html.number(report.rsd[j]), html.number(report.relative_rmsd[j]),
              html.number(report.residual_std[j]), html.number(nrms[j]), str(report.n_moving[j]))
             for j, joint in enumerate(report.joint_names)])]
    return parts


def held_out_groups(held_out: Sequence[Recording]) -> list[list[Recording]]:
    """The held-out recordings grouped by file (``source``), in the order the files first occur: each file is
    judged on its own, never merged into one number with the others."""
    groups: dict[str, list[Recording]] = {}
    for recording in held_out:
        groups.setdefault(recording.source, []).append(recording)
    return list(groups.values())


def _statistics_table(cycles, statistics, model: DynamicModel):
    return html.table(
        ("parameter", "unit", "mean", "min", "max", "(max-min)/|max|", "end - start", "std"),
        [(name, model.regressor.parameter_unit(name), *(html.number(getattr(statistics, key)[k]) for key in (
            "mean", "minimum", "maximum", "relative_range", "start_end_difference", "std")))
         for k, name in enumerate(cycles.names)])


def make_report(out, robot: RobotDescription, recordings: Sequence[Recording],
                intervals: Sequence[Sequence[StageInterval]], model: DynamicModel | None = None,
                settings: IdentificationSettings | None = None, validation: Sequence[Recording] = (),
                options: ReportOptions = ReportOptions(), progress: Progress = no_progress,
                sources: Sequence[str] = (), check_torques: bool = True) -> dict:
    """Analyse a test and write the report into directory ``out``; return the summary.

    Parameters
    ----------
    out : path
        Directory (made if absent): index.html, summary.json, PNG figures, model.yaml (when the
        model is identified here).
    robot : RobotDescription
    recordings : sequence of Recording
        Labelled with stages (and cycles, for the per-cycle analyses), joints matched by name.
    intervals : sequence of sequences of StageInterval
        Each recording's stages (friction strokes with joint, speed level and direction).
    model : DynamicModel, optional
        The model to report on; identified from the identification data with ``settings`` if None.
    validation : sequence of Recording
        Held-out recordings (all their samples).
    options : ReportOptions
    progress : callable
        Wraps the long loops (:data:`~robot_dynid.estimation.cycles.Progress`).
    sources : sequence of str
        The data files, for the page.
    check_torques : bool
        With a given ``model``, check the identification data's torques against the description's inertial data
        and the model's payload (:func:`~robot_dynid.estimation.torque_scale.check_torque_scale`, as
        identification does with ``settings.check_torque_scale``).
    """
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    recordings = [recording.reorder(robot.joint_names) for recording in recordings]
    identification, held_out, holdout, notes = split_segments(recordings, options.stage, options.holdout_cycles,
                                                              automatic=model is None and not validation)
    held_out = held_out + [recording.reorder(robot.joint_names) for recording in validation]
    identified_here = model is None
    if model is None:
        model = identify(identification, robot, settings or IdentificationSettings(),
                         provenance={"data_source": list(sources),
                                     "segments": {"stage": list(options.stage), "held_out_cycles": list(holdout)}})
        model.save(out / "model.yaml")
    elif tuple(model.joint_names) != tuple(robot.joint_names):
        raise DataError(f"the model's joints {list(model.joint_names)} are not the robot's {list(robot.joint_names)}")
    elif check_torques:
        for recording in identification:
            check_torque_scale(recording, robot, model.payload)
    summary = {"robot": robot.name, "data": list(sources), "identified_here": identified_here,
               "model": model_summary(model), "speed_threshold": options.speed_threshold,
               "stage": list(options.stage), "held_out_cycles": list(holdout)}
    page = _Page(out, summary, notes)
    _model_section(page, robot, model, [*recordings, *validation], sources, identified_here)
    _torque_fit_section(page, model, identification, held_out, options.speed_threshold)
    _parameter_section(page, model)
    _cycle_section(page, model, recordings, options, progress)
    _friction_section(page, model, recordings, intervals, robot, options)
    if notes:
        page.parts += [html.heading("Notes")] + [html.paragraph(text, note=True) for text in notes]
    summary["notes"] = notes
    summary["figures"] = page.figures
    html.write_page(out / "index.html", f"Identification report: {robot.name}", page.parts)
    html.write_json(out / "summary.json", summary)
    return summary


@dataclasses.dataclass
class _Page:
    """A report page being written: the directory ``out``, the summary, the notes, its parts (HTML) and figures."""

    out: pathlib.Path
    summary: dict
    notes: list
    parts: list = dataclasses.field(default_factory=list)
    figures: list = dataclasses.field(default_factory=list)

    def figure(self, draw, name, *arguments, caption, **keywords):
        """``draw(*arguments, out / name, **keywords)`` and the image with ``caption`` on the page."""
        path = draw(*arguments, self.out / name, **keywords)
        self.figures.append(path.name)
        self.parts.append(html.image(path, caption))


def _model_section(page, robot, model, recordings, sources, identified_here):
    """What the model is, its conditioning and plausibility, and how the recordings' stamps were."""
    plausible = model.metrics.get("plausibility") or plausibility(
        robot, per_cycle.settings_of(model), model.base, model.values, model.std)
    page.parts += [html.paragraph(f"robot {robot.name}; data: {', '.join(sources) or '-'}; model: "
                                  + ("identified here (model.yaml)" if identified_here else "given")
                                  + f" ({model.base.rank} base parameters, friction {model.friction.name}, method "
                                    f"{model.method}, {model.metrics.get('n_samples', '?')} samples)")]
    if identified_here:
        page.parts.append('<p>model file: <a href="model.yaml">model.yaml</a></p>')
    condition = model.metrics.get("condition_number")
    page.parts.append(html.paragraph(f"condition number of the scaled base regressor: {html.number(condition)}"))
    page.parts += [html.paragraph(f"plausibility: {text}", note=True) for text in plausible.get("messages", [])]
    stamps = [recording.stamp_quality for recording in recordings if recording.stamp_quality]
    page.summary["stamps"] = stamp_quality_summary(stamps)
    page.parts += [html.paragraph(f"stamps of {report.describe()}") for report in stamps]
    page.parts += [html.paragraph(f"warning: {text}", note=True) for report in stamps for text in report.warnings()]
    page.summary["condition_number"] = condition
    page.summary["plausibility"] = plausible


def _torque_fit_section(page, model, identification, held_out, speed_threshold):
    """Measured against model torque on the identification data and on each held-out file; the verdict first on
    the page."""
    from robot_dynid.reports import figures
    fits = [(per_cycle.torque_fit(model, identification, "identification", speed_threshold),
             "torque_identification.png")]
    groups = held_out_groups(held_out)
    for index, group in enumerate(groups, start=1):
        name = pathlib.Path(group[0].source).name
        fits.append((per_cycle.torque_fit(model, group, f"held-out {name}", speed_threshold),
                     "torque_held_out.png" if len(groups) == 1 else f"torque_held_out_{index}.png"))
    if not groups:
        page.notes.append("no held-out data (no validation stage, no held-out cycle, no --validate file)")
    page.summary["torque_fits"] = [fit.to_dict() for fit, _ in fits]
    verdict = judge_fit(fits[0][0].validation, [fit.validation for fit, _ in fits[1:]])
    page.summary["verdict"] = verdict.to_dict()
    page.parts.insert(0, html.verdict(verdict.text, verdict.good))
    page.parts.append(html.heading("Measured against model torque"))
    for fit, file_name in fits:
        page.parts.append(html.heading(f"{fit.segment} data ({', '.join(dict.fromkeys(fit.validation.sources))})",
                                       3))
        page.parts += _metrics_tables(fit)
        page.parts += [html.paragraph(f"warning: {text}", note=True) for text in fit.validation.warnings]
        page.figure(figures.torque_fit_figure, file_name, fit,
                    caption=f"measured and model torque per joint on the {fit.segment} data, residuals on the right")


def _parameter_section(page, model):
    """The base parameters with their std, poorly excited ones marked."""
    rows, classes, poor = _parameter_rows(model)
    page.parts += [html.heading("Base parameters"),
                   html.paragraph("rows in red: poorly excited (a one-std error moves a joint's torque, RMS over the "
                                  "robot's range of motion, by more than the identification's threshold, 10 % of its "
                                  "RMS measured torque by default); a base parameter is in the unit of its leading "
                                  "standard parameter"),
                   html.paragraph(std_description(model)),
                   html.table(("parameter", "unit", "value", "std",
                               *(("white std",) if model.white_std is not None else ()),
                               "rel. std", "expression (standard parameters)"), rows, classes)]
    page.summary["poorly_excited"] = sorted(poor)
    page.summary["std_description"] = std_description(model)


def _cycle_section(page, model, recordings, options, progress):
    """Each cycle identified on its own, statistics over the cycles, pooled fits, self- and cross-verification."""
    from robot_dynid.reports import figures
    summary, parts = page.summary, page.parts
    segments = []
    if all(r.cycle is not None for r in recordings):
        segments = per_cycle.cycle_segments(recordings, options.stage)
    summary["cycles"] = summary["cross_verification"] = None
    summary["pooled"] = []
    if len(segments) < 2:
        page.notes.append("per-cycle analyses need stage markers (or stage and cycle columns) and two or more cycles")
        return
    poor = set(page.summary["poorly_excited"])
    cycles = per_cycle.identify_cycles(segments, model, options.warm_cycles, progress)
    page.notes += list(cycles.notes)
    segments = [segment for segment in segments if segment.label in cycles.labels]
    summary["cycles"] = cycles.to_dict()
    parts += [html.heading("Per-cycle identification"),
              html.paragraph(f"{len(segments)} cycles, each identified on its own {'/'.join(options.stage)} "
                             "samples with the model's structure")]
    page.figure(figures.parameter_cycles_figure, "parameters_per_cycle.png", cycles, poorly_excited=poor,
                units=[model.regressor.parameter_unit(name) for name in cycles.names],
                caption="base parameters per cycle")
    parts += [html.heading("statistics over all cycles", 3), _statistics_table(cycles, cycles.statistics, model)]
    if cycles.warm_statistics is not None:
        parts += [html.heading(f"statistics without the first {cycles.skipped} cycles", 3),
                  _statistics_table(cycles, cycles.warm_statistics, model)]
    fitted = [(label, m) for label, m in zip(cycles.labels, cycles.models)]
    for pool in options.pools:
        pooled = per_cycle.pooled_fit(segments, pool, model)
        label = f"cycles {','.join(map(str, pool))} pooled"
        fitted.append((label, pooled))
        summary["pooled"].append({"cycles": list(pool), "values": pooled.values.tolist(),
                                  "std": pooled.std.tolist(), "names": list(pooled.base.names)})
    fitted.append(("model", model))
    cross = per_cycle.cross_verification(fitted, segments, options.speed_threshold, progress)
    summary["cross_verification"] = cross.to_dict()
    matrix = cross.matrix("relative_rmsd")
    parts += [html.heading("Self- and cross-verification"),
              html.paragraph("mean relative RMSD over the joints of the parameters of each row predicting the "
                             "data of each column; the diagonal of the cycle rows is the self-verification"),
              html.table(("fitted on \\ predicts", *cross.tested),
                         [(label, *(html.number(value, 3) for value in row))
                          for label, row in zip(cross.fitted, matrix)])]
    page.figure(figures.cross_verification_figure, "cross_verification.png", cross,
                caption="self- and cross-verification")


def _friction_section(page, model, recordings, intervals, robot, options):
    """The friction strokes: friction against speed per cycle, and its drift over time at one speed level."""
    from robot_dynid.reports import figures
    summary, parts = page.summary, page.parts
    summary["friction"] = summary["friction_drift"] = None
    if not any(friction_stages.friction_intervals(stages) for stages in intervals):
        page.notes.append("no friction strokes (friction stage markers with joint and direction) in the data")
        return
    friction = friction_stages.friction_analysis(recordings, intervals, robot, options.gravity,
                                                 options.plateau_tolerance, options.rest_threshold)
    page.notes += list(friction.notes)
    summary["friction"] = friction.to_dict()
    if not friction.segments:
        return
    drifts = friction_stages.friction_drift(friction, options.friction_speed)
    summary["friction_drift"] = [drift.to_dict() for drift in drifts]
    parts += [html.heading("Friction stages"),
              html.paragraph(f"{len(friction.segments)} constant-velocity plateaus (speed within "
                             f"{options.plateau_tolerance:.0%} of the stroke's cruise speed); per joint and "
                             "cycle the least squares tau = Im q'' [- mPx sin q - mPy cos q] + f1 sgn q' + "
                             "f2 q' + f3 q'|q'| + f4 q'^3, the gravity terms for joints whose axis is not "
                             f"vertical (gravity removal: {options.gravity})")]
    page.figure(figures.friction_speed_figure, "friction_speed.png", friction, model=model,
                caption="friction against speed per cycle")
    parts.append(html.table(
        ("joint", "cycle", "gravity removed", "Im [kg m^2]", "f1 [N m]", "f2 [N m s/rad]",
         "f3 [N m s^2/rad^2]", "f4 [N m s^3/rad^3]", "residual RMS [N m]"),
        [(f.joint, f.label, "yes" if f.gravity_removed else "no (axis vertical)" if f.horizontal else "no",
          html.number(f.inertia), *(html.number(c) for c in f.coefficients), html.number(f.residual_rms))
         for f in friction.fits]))
    page.figure(figures.friction_time_figure, "friction_time.png", drifts,
                caption="friction at one speed level against elapsed time")
    parts.append(html.table(
        ("joint", "speed level", "cycles", "a [N m]", "b [N m]", "t1 [min]", "c [N m]", "t2 [min]",
         "fit residual RMS [N m]"),
        [(d.joint, f"{d.level:.0%}", str(len(d.friction)),
          *((html.number(d.fit.a), html.number(d.fit.b), html.number(d.fit.t1), html.number(d.fit.c),
             html.number(d.fit.t2), html.number(d.fit.residual_rms)) if d.fit else ("-",) * 6))
         for d in drifts]))
    page.notes += [d.note for d in drifts if d.note]


def make_comparison(models: Sequence[DynamicModel], labels: Sequence[str], level: float = DEFAULT_SIGNIFICANCE,
                    out=None) -> dict:
    """Compare models (:func:`~robot_dynid.estimation.comparison.compare_models`); with ``out`` write
    index.html, summary.json and the figures there. Returns the comparison as plain data."""
    comparison = compare_models(models, labels, level)
    summary = comparison.to_dict()
    if out is None:
        return summary
    from robot_dynid.reports import figures
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    parameters = figures.comparison_figure(comparison, out / "parameter_differences.png")
    friction = figures.friction_models_figure(models, labels, out / "friction_models.png")
    header = ["parameter", *(f"{label} value" for label in labels), *(f"{label} std" for label in labels),
              *(f"z {label}" for label in labels[1:])]
    rows, cells = [], {}
    for k, name in enumerate(comparison.names):
        rows.append((name, *(html.number(v, 5) for v in comparison.values[:, k]),
                     *(html.number(s, 3) for s in comparison.std[:, k]),
                     *(html.number(z, 3) for z in comparison.z[:, k])))
        for i in range(len(labels) - 1):
            if comparison.significant[i, k]:
                cells[(k, 1 + 2 * len(labels) + i)] = "sig"
    parts = [html.paragraph(f"reference: {labels[0]}; z = (value - reference) / sqrt(std^2 + std_ref^2) (where a "
                            "std has degrees of freedom, the normal deviate of Student's t p-value); std: "
                            + "; ".join(f"{label}: {method}" for label, method in zip(labels, comparison.std_methods))
                            + f"; significant (bold) where |z| > {comparison.critical:.3g}, a two-sided level of "
                            f"{level:g} per parameter (about {level * len(comparison.names):.1f} of "
                            f"{len(comparison.names)} parameters exceed it by chance)"),
             *([html.paragraph(comparison.payload_note)] if comparison.payload_note else []),
             html.table(header, rows, cell_classes=cells),
             html.image(parameters, "parameter differences in combined standard deviations"),
             html.image(friction, "friction models overlaid")]
    html.write_page(out / "index.html", "Model comparison: " + " / ".join(labels), parts)
    summary["figures"] = [parameters.name, friction.name]
    html.write_json(out / "summary.json", summary)
    return summary
