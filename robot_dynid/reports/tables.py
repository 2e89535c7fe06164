"""Plain-text reports of identified models and validation results (what the CLI and demo print)."""
from __future__ import annotations

import numpy as np

from robot_dynid.estimation.covariance import describe
from robot_dynid.estimation.validation import RAW_LABEL
from robot_dynid.recordings.conditioning import conditioning_from_provenance
from robot_dynid.recordings.recording import describe_dropped, dropped_from_dict

__all__ = ["format_table", "std_description", "format_parameters", "format_joint_metrics", "format_dropped",
           "format_model_summary", "format_training_conditioning", "format_consistency", "model_summary",
           "format_stamp_quality", "stamp_quality_summary", "format_validation"]


def format_table(header, rows):
    """Left-aligned text table; numbers are expected pre-formatted as strings."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip()
             for row in (header, *rows)]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def std_description(model) -> str:
    """What a model's std are, one line (the same in the CLI, ``--json`` and the HTML pages): ``std: <method>``
    (:func:`~robot_dynid.estimation.covariance.describe`), and why it is not the robust one where it is not."""
    uncertainty = model.metrics.get("uncertainty")
    uncertainty = uncertainty if isinstance(uncertainty, dict) else {}
    text = describe(model.std_method, (model.interval_dof or -1) + 1, uncertainty.get("block_duration"))
    note = uncertainty.get("note")
    return f"std: {text}" + (f" ({note})" if note else "")


def format_parameters(model):
    """The base parameter table: value, std (the model's :attr:`std_method`), its white-noise std beside it when the
    model keeps it, relative std, expression; then :func:`std_description`."""
    white = model.white_std is not None
    rows = [(row["name"], f"{row['value']:.6g}", f"{row['std']:.3g}",
             *((f"{row['white_std']:.3g}",) if white else ()),
             "-" if not np.isfinite(row["relative_std"]) else f"{row['relative_std']:.1%}",
             row["expression"])
            for row in model.parameter_table()]
    header = ("parameter", "value", "std", *(("white std",) if white else ()), "rel. std",
              "expression (standard parameters)")
    return format_table(header, rows) + "\n" + std_description(model)


def format_joint_metrics(joint_names, columns):
    """``columns``: mapping of column title to a per-joint mapping or sequence of floats; NaN (the
    metric does not apply to the joint) is printed ``-``."""
    rows = []
    for index, joint in enumerate(joint_names):
        cells = [joint]
        for values in columns.values():
            value = values[joint] if isinstance(values, dict) else values[index]
            cells.append("-" if np.isnan(value) else f"{value:.4g}")
        rows.append(cells)
    return format_table(("joint", *columns), rows)


def format_dropped(dropped):
    """``{reason: {count, first_time}}`` (model metrics) as text; 'none' when empty."""
    return describe_dropped(dropped_from_dict(dropped or {})) or "none"


def format_model_summary(model):
    metrics = model.metrics
    parts = [
        f"robot {model.robot.name}: {model.base.rank} base parameters, friction {model.friction.name}, "
        f"method {model.method}, {metrics.get('n_samples', '?')} samples used, "
        f"{metrics.get('n_dropped', 0)} left out ({format_dropped(metrics.get('dropped'))})",
        format_parameters(model),
        "",
        format_joint_metrics(model.joint_names, {
            f"RMS residual [{model.robot.effort_unit}]": metrics["residual_rms"], "RSD [1]": metrics["rsd"],
        }),
        f"condition number of the scaled base regressor: {metrics['condition_number']:.4g}",
        *format_training_conditioning(model.provenance),
    ]
    if metrics.get("file_offsets"):
        parts += ["torque offset per recording [N m] (estimated with the model, not part of it):",
                  format_table(("recording", *model.joint_names), [
                      (source, *(f"{offsets[joint]:.4g}" for joint in model.joint_names))
                      for source, offsets in metrics["file_offsets"].items()])]
    consistency = metrics.get("consistency")
    if consistency:
        parts.append(format_consistency(consistency))
    if model.links:
        parts += ["links (mass [kg], centre of mass [m] and inertia about it [kg m^2] in the link frame):",
                  format_table(("link", "mass", "com", "inertia [ixx, ixy, ixz, iyy, iyz, izz]"), [
                      (name, f"{link.mass:.4g}", " ".join(f"{x:.4g}" for x in link.com),
                       " ".join(f"{x:.4g}" for x in link.inertia)) for name, link in model.links])]
    plausibility = metrics.get("plausibility") or {}
    parts += [f"plausibility: {text}" for text in plausibility.get("messages", [])]
    parts += [f"warning: {text}" for text in metrics.get("warnings", [])]
    return "\n".join(parts)


def format_training_conditioning(provenance) -> list[str]:
    """What the training residuals above were computed on (``provenance.conditioning``): the conditioning's
    settings, then per recording its derivative fit and the share of samples given velocity 0 at rest; no
    line for a model that does not record it."""
    conditioning = conditioning_from_provenance(provenance or {})
    if conditioning is None:
        return []
    lines = [f"residuals on the training data conditioned as: {conditioning.describe()}"]
    for source, applied in provenance["conditioning"].get("recordings", {}).items():
        derivatives = applied.get("derivatives")
        parts = []
        if derivatives:
            how = ("chosen by cross-validation of the fit" if applied.get("derivative_window_choice")
                   else "chosen by rate and noise" if derivatives.get("chosen") else "given")
            velocities = "as recorded" if derivatives["qd"] == "recorded" else f"from {derivatives['qd']}"
            parts.append(f"velocities {velocities}, accelerations from {derivatives['qdd']} over "
                         f"{derivatives['window_samples']} samples = {derivatives['window_s']:.3g} s ({how})")
        at_rest = {joint: share for joint, share in (applied.get("at_rest") or {}).items() if share > 0.0}
        if at_rest:
            shares = (f"{joint} {100 * share:.2g} %" for joint, share in at_rest.items())
            parts.append("velocity 0 where standing still: " + ", ".join(shares))
        if parts:
            lines.append(f"  {source}: {'; '.join(parts)}")
    return lines


def format_consistency(consistency: dict) -> str:
    """The consistent fit's line (``metrics["consistency"]``): what its residual costs over plain least squares, in
    noise variances, and what from: the constraints (the best consistent fit's cost) and the prior (the rest; the
    regulariser without a prior); then its comparison with least squares (``least_squares_check``)."""
    active = ", ".join(consistency["active"]) or "none"
    head = f"physically consistent fit (prior: {consistency['prior']}, {consistency['mode']}): its residual is " \
           f"{consistency['residual_increase']:.3g} noise variances above plain least squares"
    if "constraint_increase" not in consistency:      # a model file written before the split was recorded
        return f"{head}; active constraints: {active}"
    source = "the prior" if consistency["prior"] != "none" else "the regulariser making the standard set unique"
    text = (f"{head}: {max(consistency['constraint_increase'], 0.0):.3g} from the constraints (active: {active}), "
            f"{max(consistency['prior_increase'], 0.0):.3g} from {source}")
    if consistency.get("prior_weight") is not None:
        text += f"; prior weight {consistency['prior_weight']:g}"
    check = consistency.get("least_squares_check")
    if check:
        text += "\n" + check["text"]
    return text


def model_summary(model) -> dict:
    """What :func:`format_model_summary` prints, as plain data for JSON: the structure, the base
    parameter table and the model's metrics."""
    return {"robot": model.robot.name, "joint_names": list(model.joint_names), "friction": model.friction.name,
            "method": model.method, "n_base": model.base.rank, "std_method": model.std_method,
            "std_description": std_description(model), "interval_dof": model.interval_dof,
            "base_parameters": model.parameter_table(),
            "links": None if model.links is None else [{"name": name, **link.to_dict()} for name, link in model.links],
            "metrics": model.metrics}


def format_stamp_quality(reports) -> str:
    """The timing of each recording's stamps (:class:`~robot_dynid.recordings.stamp_quality.StampQuality`, None
    skipped): a ``stamps:`` line each, then its ``warning:`` lines; a line said before is not repeated."""
    lines = []
    for report in reports:
        if report is not None:
            said = [f"stamps of {report.describe()}"] + [f"warning: {text}" for text in report.warnings()]
            lines += [line for line in said if line not in lines]    # a file read as data and as held-out data
    return "\n".join(lines)


def stamp_quality_summary(reports) -> list[dict]:
    """:meth:`StampQuality.to_dict` of each report (None skipped), for JSON."""
    return [report.to_dict() for report in reports if report is not None]


def format_validation(validation, effort_unit: str = "N m") -> str:
    """Text table of a :class:`~robot_dynid.estimation.validation.ModelValidation`: what it was computed on (the
    conditioning, the torques scored against), with a low-pass a second table against the raw measured torques,
    and its warnings; ``effort_unit`` heads the RMS column (:attr:`RobotDescription.effort_unit`)."""
    report = validation.report
    lines = [f"validation on {', '.join(validation.sources)} ({report.n_samples} samples)"
             + (f", conditioned {validation.conditioning}" if validation.conditioning else "") + ":",
             f"against {validation.scored_against}:",
             _validation_table(report, validation.nrms, effort_unit)]
    if validation.mean_nrms is not None:
        lines.append(f"mean NRMS over joints with an effort limit: {validation.mean_nrms:.4g}")
    if validation.raw_report is not None:
        lines += [f"against the {RAW_LABEL}:", _validation_table(validation.raw_report, validation.raw_nrms,
                                                                 effort_unit)]
        if validation.raw_mean_nrms is not None:
            lines.append(f"mean NRMS over joints with an effort limit: {validation.raw_mean_nrms:.4g}")
    undefined = []
    if np.isnan(report.relative_rmsd).any():
        undefined.append(f"rel. RMSD, no sample of the joint at |qd| >= {report.speed_threshold:g} rad/s")
    if np.isnan(validation.nrms).any():
        undefined.append("NRMS, no effort limit for the joint in the robot file")
    if undefined:
        lines.append(f"-: undefined ({'; '.join(undefined)})")
    lines += [f"warning: {text}" for text in validation.warnings]
    return "\n".join(lines)


def _validation_table(report, nrms, effort_unit: str) -> str:
    return format_joint_metrics(report.joint_names, {
        f"RMS [{effort_unit}]": report.rms, "RSD [1]": report.rsd,
        f"rel. RMSD (|qd| >= {report.speed_threshold:g} rad/s)": report.relative_rmsd,
        "NRMS (RMS / 2 effort limit)": nrms})
