"""The fleet page, ``DIR/index.html``: one wear verdict per robot, then the evidence (indicator trends with
their null bands, the parameters' comparison), the fleet's spread and every recording's report.

Presentation only: the numbers come from :mod:`robot_dynid.fleet.changes`; the page is laid out with
:mod:`robot_dynid.reports.html` and its figures drawn by :mod:`robot_dynid.reports.figures`. The verdicts and
the table of findings (:func:`finding_rows`) are those the CLI prints.
"""
from __future__ import annotations

import datetime
import html as html_text
import os
import pathlib

import numpy as np

from robot_dynid.fleet.changes import drive_parameters, FleetAnalysis, PARAMETER_NOTE
from robot_dynid.reports import html

__all__ = ["FINDING_COLUMNS", "finding_rows", "wear_method_text", "fleet_verdict", "write_fleet_page"]

FINDING_COLUMNS = ("robot", "indicator", "baseline", "latest", "change", "change [%]", "threshold", "t [1]",
                   "dof", "adjusted p", "since")
"""Columns of the table of wear found (the page's and the CLI's)."""


def _time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _link(target: str | None, text: str) -> str:
    return "-" if not target else f'<a href="{html_text.escape(target)}">{html_text.escape(text)}</a>'


def _image(path, caption: str) -> str:
    return html.image(path, caption).replace(f'src="{path.name}"', f'src="figures/{path.name}"')


def _with_unit(value: float, unit: str, digits: int = 4) -> str:
    return f"{html.number(value, digits)} {unit}"


def finding_rows(analysis: FleetAnalysis) -> list[tuple]:
    """The wear found in every robot's latest recording, one row of :data:`FINDING_COLUMNS` per indicator,
    strongest first within a robot; values with their units."""
    rows = []
    for robot_id, changes in analysis.robots.items():
        for finding in changes.findings:
            unit = finding["unit"]
            rows.append((robot_id, finding["name"], _with_unit(finding["baseline"], unit),
                         _with_unit(finding["value"], unit), _with_unit(finding["change"], f"{unit}", 3),
                         html.number(finding["change_percent"], 3), _with_unit(finding["threshold"], unit, 3),
                         f"{finding['t']:.1f}", f"{finding['dof']:.0f}", f"{finding['p_adjusted']:.2g}",
                         finding["since"]))
    return rows


def wear_method_text(analysis: FleetAnalysis) -> str:
    """How the verdicts were reached, in one paragraph (the page's and the CLI's)."""
    sources = sorted({reference.motion_source for reference, *_ in analysis.references.values()})
    return (f"Wear: each recording's indicators (friction at {', '.join(f'{f:g}' for f in _fractions(analysis))} of "
            f"each joint's velocity limit, gravity torque at three reference poses, torque RMS along the reference "
            f"motion ({', '.join(sources) or 'built-in'})) against its robot's baseline, in the spread between "
            f"recordings the fleet shows; {analysis.n_wear_tests} tests corrected together by "
            f"{analysis.correction_name} at level {analysis.level:g}; a change is wear where it is significant and at "
            f"least {100 * analysis.practical_fraction:g} % of the joint's friction.")


def _fractions(analysis: FleetAnalysis):
    fractions = {fraction for reference, *_ in analysis.references.values() for fraction in reference.speed_fractions}
    return sorted(fractions)


def _wear_series(changes, coverage=0.95):
    """Per shown indicator: (name, quantity, unit, times, values, std, baseline, band, threshold, flagged): the
    friction at each joint's fastest reference speed, and every indicator flagged or significant somewhere."""
    wear = changes.wear
    indicators = wear.indicators
    fastest = {}
    for k, indicator in enumerate(indicators):
        if indicator.kind == "friction" and indicator.speed >= fastest.get(indicator.joint, (-1.0, 0))[0]:
            fastest[indicator.joint] = (indicator.speed, k)
    shown = sorted({k for _, k in fastest.values()}
                   | set(np.flatnonzero(wear.significant.any(axis=0) | wear.flagged.any(axis=0)).tolist()))
    band = wear.statistics.band(coverage) if wear.statistics is not None else None
    compared = {id(record): i for i, record in enumerate(wear.compared)}
    series = []
    for k in shown:
        indicator = indicators[k]
        times, values, std, bands, flags = [], [], [], [], []
        for record, values_of in wear.history:
            i = compared.get(id(record))
            times.append(_time(record.recorded_at))
            values.append(values_of.values[k])
            std.append(values_of.std[k])
            bands.append(float("nan") if i is None or band is None else band[i, k])
            flags.append(bool(i is not None and wear.flagged.shape[0] and wear.flagged[i, k]))
        quantity = indicator.quantity.split()[-1] if indicator.kind != "friction" else "friction"
        series.append((f"{indicator.joint}: {indicator.quantity} {indicator.condition}", quantity, indicator.unit,
                       times, values, std, float(wear.baseline.values[k]), bands, float(wear.thresholds[k]), flags))
    return series


def _shown_path(path: str, out: pathlib.Path) -> str:
    """A recording's path as the page shows it: relative to the page's folder (the machine's absolute paths say
    nothing to a reader elsewhere and break when the fleet's folder moves)."""
    try:
        return pathlib.Path(os.path.relpath(path, out)).as_posix()
    except ValueError:                        # another drive (Windows)
        return str(path)


def _shown_paths_in(text: str | None, path: str, out: pathlib.Path) -> str | None:
    """``text`` (a failure's reason) with ``path`` written as :func:`_shown_path` writes it."""
    return text.replace(str(path), _shown_path(path, out)) if text else text


def _parameter_unit(name: str, model) -> str:
    """The SI unit of a base parameter of ``model``: its leading standard parameter's
    (:meth:`~robot_dynid.model.regressor.Regressor.parameter_unit`: ``Izz2R`` -> kg m^2, a prismatic joint's
    friction in N and m, a temperature drift's coefficient per K)."""
    return model.regressor.parameter_unit(name)


def _trend_series(changes, names):
    """(name, unit, times, values, std, flagged, baseline) of ``names`` over the robot's identified recordings."""
    identified = [record for record in changes.records if record.model is not None
                  and tuple(record.model.base.names) == changes.names]
    flagged_at = {id(record): changes.flagged[i] for i, record in enumerate(changes.compared)}
    series = []
    for name in names:
        k = changes.names.index(name)
        times = [_time(record.recorded_at) for record in identified]
        values = [record.model.values[k] for record in identified]
        std = [record.model.std[k] for record in identified]
        flags = [bool(flagged_at[id(record)][k]) if id(record) in flagged_at else False for record in identified]
        series.append((name, _parameter_unit(name, changes.reference), times, values, std, flags,
                       (changes.reference.values[k], changes.reference.std[k])))
    return series


def fleet_verdict(analysis: FleetAnalysis) -> tuple[str, bool | None]:
    """The page's first line: which robots changed and how, in words (their verdicts), and how many did not;
    ``(text, good)`` with good False when one wears, None when none could be tested."""
    worn = [changes for changes in analysis.robots.values() if changes.findings]
    tested = [changes for changes in analysis.robots.values() if changes.wear.statistics is not None]
    if worn:
        return (f"{len(worn)} of {len(analysis.robots)} robots changed: "
                + "; ".join(changes.verdict for changes in worn)
                + f"; {len(tested) - len(worn)} tested unchanged", False)
    if tested:
        return f"no robot changed: {len(tested)} of {len(analysis.robots)} tested, none beyond the fleet's spread", True
    return f"no robot tested yet ({len(analysis.robots)} robots): each needs two identified recordings", None


def write_fleet_page(out, analysis: FleetAnalysis, results, run_summary: dict) -> pathlib.Path:
    """Write ``out/index.html`` (figures beside it in ``out/figures``); returns its path.

    ``results``: the run's :class:`~robot_dynid.fleet.run.EntryResult` s; ``run_summary``: counts of the run
    (identified, reused, failed) and the database file.
    """
    from robot_dynid.reports import figures
    out = pathlib.Path(out)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    parts = _summary_parts(analysis, results, run_summary, out)
    parts.append(html.heading("Evidence per robot"))
    for robot_id, changes in analysis.robots.items():
        parts += _robot_parts(robot_id, changes, analysis, out, figures)
    parts += _parameter_parts(analysis)
    parts += _spread_parts(analysis, out, figures)
    return html.write_page(out / "index.html", "Fleet", parts)


def _summary_parts(analysis: FleetAnalysis, results, run_summary: dict, out: pathlib.Path) -> list[str]:
    """The page's head: the fleet's verdict, each robot's wear verdict, the method, the run's counts, the wear
    found and the recordings that failed."""
    parts = [html.verdict(*fleet_verdict(analysis)),
             html.heading("Wear verdicts"),
             html.table(("verdict",), [(changes.verdict,) for changes in analysis.robots.values()],
                        ["poor" if changes.findings else "" for changes in analysis.robots.values()]),
             html.paragraph(wear_method_text(analysis)),
             html.paragraph(
                 f"{len(analysis.robots)} robots, {len(results)} recordings: {run_summary['identified']} identified in "
                 f"this run, {run_summary['reused']} taken from the database ({run_summary['database']}), "
                 f"{run_summary['failed']} failed.")]
    rows = finding_rows(analysis)
    if rows:
        parts += [html.heading("Wear found (latest recordings)"), html.table(FINDING_COLUMNS, rows)]
    failures = [result for result in results if result.status != "identified"]
    if failures:
        parts += [html.heading("Failed recordings"),
                  html.table(("robot", "recorded at", "data", "reason"),
                             [(r.entry.robot_id, r.entry.key[1], _shown_path(r.entry.data, out),
                               _shown_paths_in(r.reason, r.entry.data, out)) for r in failures])]
    return parts


def _robot_parts(robot_id: str, changes, analysis: FleetAnalysis, out: pathlib.Path, figures) -> list[str]:
    """One robot's evidence: its verdict, the wear trend figure, its notes, the trend figure of its friction,
    named and flagged parameters, and the table of its recordings (``figures``: :mod:`robot_dynid.reports.figures`,
    imported by the caller)."""
    parts = [html.heading(robot_id, 3), html.paragraph(changes.verdict)]
    if len(changes.wear.history) >= 2 and changes.wear.baseline is not None:
        path = figures.wear_trend_figure(
            _wear_series(changes), out / "figures" / f"wear_{robot_id}.png",
            f"{robot_id}: wear indicators (+-2 estimation std; grey: 95 % of an unchanged robot's recordings; "
            "dotted: practical threshold; red: wear)")
        parts.append(_image(path, f"{robot_id}: wear indicators over time"))
    parts += [html.paragraph(note, note=True) for note in (*changes.wear_notes, *changes.notes)]
    if changes.reference is not None:
        friction = list(drive_parameters(changes.reference))
        wanted = friction + [name for name in (*analysis.wear_parameters, *changes.flagged_names)
                             if name in changes.names and name not in friction]
        if wanted and len(changes.compared) >= 1:
            path = figures.trend_figure(_trend_series(changes, wanted), out / "figures" / f"trend_{robot_id}.png",
                                        f"{robot_id}: friction, named and flagged base parameters (+-2 std; "
                                        "red: flagged; they depend on the trajectory)")
            parts.append(_image(path, f"{robot_id}: base parameters over time (evidence)"))
    parts.append(_recordings_table(changes, out))
    return parts


def _recordings_table(changes, out: pathlib.Path) -> str:
    """The table of a robot's recordings: when, the data, status, wear found or the reason it failed, the flagged
    parameters, links to its model and report."""
    recording_rows = []
    compared = {id(record): i for i, record in enumerate(changes.compared)}
    wear_compared = {id(record): i for i, record in enumerate(changes.wear.compared)}
    for record in changes.records:
        i = compared.get(id(record))
        flagged = [name for k, name in enumerate(changes.names) if changes.flagged[i, k]] if i is not None else []
        w = wear_compared.get(id(record))
        wear = ([changes.wear.indicators[k].name for k in np.flatnonzero(changes.wear.flagged[w])]
                if w is not None and changes.wear.flagged.shape[0] else [])
        recording_rows.append(
            f"<tr><td class=text>{html_text.escape(record.recorded_at)}</td>"
            f"<td class=text>{html_text.escape(_shown_path(record.data, out))}</td>"
            f"<td class=text>{record.status}</td><td class=text>"
            f"{html_text.escape(', '.join(wear) or _shown_paths_in(record.reason, record.data, out) or '-')}</td>"
            f"<td class=text>{html_text.escape(', '.join(flagged) or '-')}</td>"
            f"<td class=text>{_link(record.model_file, 'model')}</td>"
            f"<td class=text>{_link(record.report and record.report + '/index.html', 'report')}</td></tr>")
    return ("<table><tr><th>recorded at</th><th>data</th><th>status</th><th>wear / reason</th>"
            "<th>flagged parameters (evidence)</th><th>model</th><th>report</th></tr>\n"
            + "\n".join(recording_rows) + "</table>")


def _parameter_parts(analysis: FleetAnalysis) -> list[str]:
    """The parameters section: how they are tested, and each robot's baseline, flagged parameters and those far
    from the fleet median."""
    return [html.heading("Parameters (evidence)"), html.paragraph(
        f"Each recording's base parameters against its robot's baseline in combined standard deviations, "
        f"{analysis.n_tests} tests corrected together by {analysis.correction_name}; flagged where the adjusted "
        f"p-value is at most {analysis.level:g}. {PARAMETER_NOTE[0].upper()}{PARAMETER_NOTE[1:]}."),
        html.table(("robot", "baseline", "flagged parameters", "far from the fleet median"),
                   [(robot_id, changes.baseline, ", ".join(changes.flagged_names) or "-",
                     ", ".join(changes.far) or "-") for robot_id, changes in analysis.robots.items()])]


def _spread_parts(analysis: FleetAnalysis, out: pathlib.Path, figures) -> list[str]:
    """The fleet spread section: per group of robots, the figure of each parameter's distance to the fleet median
    and the table of median, spread, range and the robots far from the median (``figures`` as for
    :func:`_robot_parts`)."""
    parts = [html.heading("Fleet spread of the parameters")]
    models = {robot_id: changes.reference for robot_id, changes in analysis.robots.items()}
    for label, group in analysis.spread.items():
        parts.append(html.paragraph(f"{label}: robots {', '.join(group['robots'])}, their latest models"))
        if "note" in group:
            parts.append(html.paragraph(group["note"], note=True))
            continue
        names, median, spread = group["parameters"], group["median"], group["spread"]
        far = np.asarray(group["far"], bool)
        path = figures.spread_figure(names, group["robots"], group["deviation_in_spreads"], far,
                                     out / "figures" / f"spread_{label.replace(' ', '_')}.png",
                                     analysis.outlier_spreads)
        parts.append(_image(path, f"{label}: distance to the fleet median"))
        values = np.asarray(group["values"], float)
        parts.append(html.table(
            ("parameter", "unit", "median", "spread (1.4826 MAD)", "min", "max", "far from the median"),
            [(name, _parameter_unit(name, models[group["robots"][0]]), html.number(median[k]),
              html.number(spread[k], 3),
              html.number(values[:, k].min()), html.number(values[:, k].max()),
              ", ".join(robot for i, robot in enumerate(group["robots"]) if far[i, k]) or "-")
             for k, name in enumerate(names)]))
    return parts
