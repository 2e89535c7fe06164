"""The fleet page, ``DIR/index.html``: robots, flags, trends, the fleet's spread and every recording's report.

Presentation only: the numbers come from :mod:`robot_dynid.fleet.changes`; the page is laid out with
:mod:`robot_dynid.reports.html` and its figures drawn by :mod:`robot_dynid.reports.figures`.
"""
from __future__ import annotations

import datetime
import html as html_text
import pathlib

import numpy as np

from robot_dynid.fleet.changes import drive_parameters, FleetAnalysis
from robot_dynid.reports import html


def _time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _link(target: str | None, text: str) -> str:
    return "-" if not target else f'<a href="{html_text.escape(target)}">{html_text.escape(text)}</a>'


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
        series.append((name, "SI", times, values, std, flags,
                       (changes.reference.values[k], changes.reference.std[k])))
    return series


def write_fleet_page(out, analysis: FleetAnalysis, results, run_summary: dict) -> pathlib.Path:
    """Write ``out/index.html`` (figures beside it in ``out/figures``); returns its path.

    ``results``: the run's :class:`~robot_dynid.fleet.run.EntryResult` s; ``run_summary``: counts of the run
    (identified, reused, failed) and the database file.
    """
    from robot_dynid.reports import figures
    out = pathlib.Path(out)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    parts = [html.paragraph(
        f"{len(analysis.robots)} robots, {len(results)} recordings: {run_summary['identified']} identified in this "
        f"run, {run_summary['reused']} taken from the database ({run_summary['database']}), {run_summary['failed']} "
        f"failed. Change detection: each recording's base parameters against its robot's baseline in combined "
        f"standard deviations, {analysis.n_tests} tests corrected together by {analysis.correction_name}; flagged "
        f"where the adjusted p-value is at most {analysis.level:g}.")]
    rows, classes = [], []
    for robot_id, changes in analysis.robots.items():
        records = changes.records
        failed = sum(record.status != "identified" for record in records)
        flagged = changes.flagged_names
        rows.append((robot_id, str(len(records)), str(failed), records[-1].recorded_at if records else "-",
                     changes.baseline, ", ".join(flagged) or "-", ", ".join(changes.far) or "-"))
        classes.append("poor" if flagged or changes.far else "")
    parts += [html.heading("Robots"),
              html.table(("robot", "recordings", "failed", "latest", "baseline", "flagged parameters",
                          "far from the fleet median"), rows, classes)]
    failures = [result for result in results if result.status != "identified"]
    if failures:
        parts += [html.heading("Failed recordings"),
                  html.table(("robot", "recorded at", "data", "reason"),
                             [(r.entry.robot_id, r.entry.key[1], r.entry.data, r.reason) for r in failures])]
    parts.append(html.heading("Trends per robot"))
    for robot_id, changes in analysis.robots.items():
        parts.append(html.heading(robot_id, 3))
        if changes.reference is not None:
            friction = list(drive_parameters(changes.reference))
            wanted = friction + [name for name in (*analysis.wear_parameters, *changes.flagged_names)
                                 if name in changes.names and name not in friction]
            if wanted:
                path = figures.trend_figure(_trend_series(changes, wanted), out / "figures" / f"trend_{robot_id}.png",
                                            f"{robot_id}: friction, wear indicators and flagged parameters (+-2 std; "
                                            "red: flagged)")
                parts.append(html.image(path, f"{robot_id}: parameters over time").replace(
                    f'src="{path.name}"', f'src="figures/{path.name}"'))
        parts += [html.paragraph(note, note=True) for note in changes.notes]
        recording_rows = []
        compared = {id(record): i for i, record in enumerate(changes.compared)}
        for record in changes.records:
            i = compared.get(id(record))
            flagged = [name for k, name in enumerate(changes.names) if changes.flagged[i, k]] if i is not None else []
            recording_rows.append(
                f"<tr><td class=text>{html_text.escape(record.recorded_at)}</td>"
                f"<td class=text>{html_text.escape(record.data)}</td><td class=text>{record.status}</td>"
                f"<td class=text>{html_text.escape(', '.join(flagged) or record.reason or '-')}</td>"
                f"<td class=text>{_link(record.model_file, 'model')}</td>"
                f"<td class=text>{_link(record.report and record.report + '/index.html', 'report')}</td></tr>")
        parts.append("<table><tr><th>recorded at</th><th>data</th><th>status</th><th>flagged / reason</th>"
                     "<th>model</th><th>report</th></tr>\n" + "\n".join(recording_rows) + "</table>")
    parts.append(html.heading("Fleet spread"))
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
        parts.append(html.image(path, f"{label}: distance to the fleet median").replace(
            f'src="{path.name}"', f'src="figures/{path.name}"'))
        values = np.asarray(group["values"], float)
        parts.append(html.table(
            ("parameter", "median", "spread (1.4826 MAD)", "min", "max", "far from the median"),
            [(name, html.number(median[k]), html.number(spread[k], 3), html.number(values[:, k].min()),
              html.number(values[:, k].max()),
              ", ".join(robot for i, robot in enumerate(group["robots"]) if far[i, k]) or "-")
             for k, name in enumerate(names)]))
    return html.write_page(out / "index.html", "Fleet", parts)
