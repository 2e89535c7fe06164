"""robot-dynid fleet: identify a fleet's recordings on Dask, keep the results, flag what changed."""
import argparse
import datetime
import os
import pathlib
import shutil
import sys

__all__ = ["NAME", "HELP", "add_arguments", "main"]

NAME = "fleet"
HELP = ("identify every recording of a fleet manifest as a task on Dask distributed, keep the results in a "
        "database, give one wear verdict per robot (friction, gravity and torque indicators against the spread "
        "between recordings the fleet shows, multiple comparisons corrected) and write a fleet page")


def _worker_count(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 1024:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of worker processes from 1 to 1024")
    return value


def add_arguments(parser):
    from robot_dynid.cli.options import (add_model_structure_arguments, add_option_arguments, add_reading_arguments,
                                         number_in, open_unit_interval, output_directory, positive_number)
    from robot_dynid.estimation.estimators import BATCH_METHODS
    from robot_dynid.estimation.wear import PRACTICAL_FRACTION
    from robot_dynid.fleet.changes import CORRECTIONS, DEFAULT_LEVEL, DEFAULT_OUTLIER_SPREADS
    from robot_dynid.estimation.quality_gate import gate_interval, gate_range
    from robot_dynid.fleet.task_options import READING_DEFAULTS, TaskOptions
    gate = TaskOptions()
    add_model_structure_arguments(parser)
    parser.add_argument("--manifest", required=True, metavar="fleet.csv",
                        help="CSV with columns robot_id, recorded_at (ISO 8601), data (bag directory or CSV file) and "
                             "optionally robot (a description per row), stage and torque_check (true/false: check "
                             "the row's torques, see --no-torque-check); relative paths are relative to the "
                             "manifest; on a cluster every worker must read them at those paths (docs/fleets.md)")
    cluster = parser.add_mutually_exclusive_group()
    cluster.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                         help="run the tasks on this Dask scheduler's workers (dask scheduler / dask worker)")
    cluster.add_argument("--workers", type=_worker_count, metavar="N",
                         help="run the tasks on a local cluster of N worker processes (default: one per usable core)")
    add_option_arguments(parser, ("method", "lowpass", "min_speed", "check_torque_scale"),
                         choices={"method": BATCH_METHODS})
    add_reading_arguments(parser.add_argument_group("reading the recordings"), only=READING_DEFAULTS)
    checks = parser.add_argument_group("quality gate (as the identifier node's)")
    checks.add_argument("--holdout-fraction", type=number_in("1", **gate_range("holdout_fraction")),
                        default=gate.holdout_fraction, metavar="FRACTION",
                        help=f"last part of each recording's samples held out of its fit to judge it [1], in "
                             f"{gate_interval('holdout_fraction')} (default: %(default)s)")
    checks.add_argument("--max-holdout-rsd", type=number_in("1", **gate_range("max_holdout_rsd")),
                        default=gate.max_holdout_rsd, metavar="RSD",
                        help=f"reject a model whose hold-out RSD is not below this [1], in "
                             f"{gate_interval('max_holdout_rsd')} (default: %(default)s)")
    checks.add_argument("--max-condition", type=number_in("1", **gate_range("max_condition")),
                        default=gate.max_condition, metavar="COND",
                        help=f"reject a model whose condition number is not below this [1], in "
                             f"{gate_interval('max_condition')} (default: %(default)s)")
    changes = parser.add_argument_group("change detection")
    changes.add_argument("--baseline", default="first", metavar="first|MODEL",
                         help="what each robot is compared with: its first identified recording, or a model file "
                              "from identify for every robot (default: %(default)s)")
    changes.add_argument("--level", type=open_unit_interval, default=DEFAULT_LEVEL,
                         help="significance level over the whole fleet (default: %(default)s)")
    changes.add_argument("--correction", choices=CORRECTIONS, default="holm",
                         help="holm: family-wise error rate (an unchanged fleet raises any flag with probability at "
                              "most --level); bh: Benjamini-Hochberg false discovery rate (default: %(default)s)")
    changes.add_argument("--practical-fraction", type=number_in("1", 0.0, 1.0), default=PRACTICAL_FRACTION,
                         metavar="FRACTION",
                         help="a change smaller than this fraction of the joint's friction torque (at the fastest "
                              "reference speed) is not reported as wear [1] (default: %(default)s: about what "
                              "friction moves between a cold and a warm robot; docs/fleets.md)")
    changes.add_argument("--wear-parameter", action="append", default=[], metavar="NAME",
                         help="a base parameter to summarise per joint besides friction in the parameter evidence "
                              "(repeatable), e.g. Ia3")
    changes.add_argument("--outlier-spreads", type=positive_number("a number > 0 [1]"),
                         default=DEFAULT_OUTLIER_SPREADS, metavar="K",
                         help="a robot's parameter is far from the fleet median where its latest value lies more "
                              "than K robust spreads (1.4826 MAD) from it, significantly (default: %(default)s)")
    parser.add_argument("--no-reports", action="store_true",
                        help="make no report per recording (faster; the fleet page then links models only)")
    parser.add_argument("--json", action="store_true",
                        help='print {"verdicts": {ID: "..."}, "wear": {...}, "robots": {ID: {"verdict": ..., "wear": '
                             '{"findings": [...], ...}, "parameters": {...}}}, ...} instead of the summary')
    parser.add_argument("--out", required=True, type=output_directory, metavar="DIR",
                        help="fleet.sqlite (results database), models/, reports/, index.html")


def _task_options(args):
    from robot_dynid.cli.options import option_values
    from robot_dynid.fleet.task_options import READING_DEFAULTS, TaskOptions
    identification = option_values(args)
    reading = {name: getattr(args, name) for name in READING_DEFAULTS}
    return TaskOptions(identification, reading, args.max_holdout_rsd, args.max_condition, args.holdout_fraction,
                       report=not args.no_reports)


def _identified(args, entries, options, store, out):
    """The manifest rows' results on the cluster, in the manifest's (robot, date) order; a line per result on a
    stderr that is no terminal (and without --json)."""
    from robot_dynid.cli.options import progress
    from robot_dynid.fleet.run import open_client, run_fleet
    results = []
    with open_client(args.scheduler, args.workers) as client:
        for result in progress(run_fleet(client, entries, os.path.abspath(args.robot), options, store, out),
                               "recordings", len(entries)):
            results.append(result)
            if not sys.stderr.isatty() and not args.json:
                print(f"[{len(results)}/{len(entries)}] {result.entry.robot_id} {result.entry.key[1]}: "
                      f"{'reused' if result.reused else result.status}"
                      + (f" ({result.reason})" if result.status == "failed" else ""), file=sys.stderr)
    order = {entry.key: index for index, entry in enumerate(sorted(entries, key=lambda e: e.key))}
    results.sort(key=lambda result: order[result.entry.key])
    return results


def _histories(results, out):
    """Each robot's :class:`~robot_dynid.fleet.changes.FleetRecord` list from the results; rows that reuse one
    identified recording share its model object (10,000 rows, one model in memory)."""
    from robot_dynid.fleet.changes import FleetRecord
    from robot_dynid.model.dynamic_model import DynamicModel
    histories, loaded = {}, {}
    for result in results:
        model = None
        if result.status == "identified":
            if result.model_file not in loaded:
                loaded[result.model_file] = DynamicModel.load(out / result.model_file)
            model = loaded[result.model_file]
        histories.setdefault(result.entry.robot_id, []).append(FleetRecord(
            result.entry.robot_id, result.entry.key[1], result.entry.data, result.status, result.reason, model,
            result.model_file, result.report))
    return histories


def _write_summary(out, analysis, results, counts, index):
    """summary.json in ``out`` (robot by robot: about 15 kB per recording in all); its content with the robots'
    entries left empty."""
    from robot_dynid.reports.json_text import write_streamed
    run = {**counts, "recordings": len(results),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    summary = {**analysis.to_dict(robots=False), "run": run,
               "failed": [{"robot_id": r.entry.robot_id, "recorded_at": r.entry.key[1], "data": r.entry.data,
                           "reason": r.reason} for r in results if r.status == "failed"],
               "database": str(out / "fleet.sqlite"), "index": str(index)}
    with open(out / "summary.json", "w") as stream:
        write_streamed(stream, summary, "robots", analysis.robot_dicts())
        stream.write("\n")
    return summary


def _print_summary(summary, analysis, results, counts, level, out, index):
    """The run's counts, failures (``summary["failed"]``), wear verdicts and findings and each robot's flagged
    parameters and those far from the fleet median."""
    from robot_dynid.fleet.changes import PARAMETER_NOTE
    from robot_dynid.fleet.page import FINDING_COLUMNS, finding_rows, wear_method_text
    from robot_dynid.reports.tables import format_table
    print(f"{len(results)} recordings: {counts['identified']} identified, {counts['reused']} taken from the database, "
          f"{counts['failed']} failed")
    for failure in summary["failed"]:
        print(f"failed: {failure['robot_id']} {failure['recorded_at']} {failure['data']}: {failure['reason']}")
    print("wear:")
    for verdict in analysis.verdicts.values():
        print(f"  {verdict}")
    rows = finding_rows(analysis)
    if rows:
        print("wear found (latest recordings):")
        print(format_table(FINDING_COLUMNS, rows))
    print(wear_method_text(analysis))
    print(f"parameters (evidence: {PARAMETER_NOTE}): {analysis.n_tests} tests, {analysis.correction_name} at level "
          f"{level:g}")
    for robot_id, changes in analysis.robots.items():
        flagged = ", ".join(changes.flagged_names) or "nothing flagged"
        far = list(changes.far)
        print(f"  {robot_id}: {flagged}" + (f"; far from the fleet median: {', '.join(far)}" if far else ""))
    print(f"fleet page written to {index} (database {out / 'fleet.sqlite'})")


def main(args):
    from robot_dynid.cli.options import settings_from_args
    from robot_dynid.fleet.changes import analyse_fleet
    from robot_dynid.fleet.manifest import read_manifest
    from robot_dynid.fleet.page import write_fleet_page
    from robot_dynid.fleet.run import reference_motions, store_wear_indicators
    from robot_dynid.fleet.store import FleetStore
    from robot_dynid.model.dynamic_model import DynamicModel
    from robot_dynid.model.robot_loader import load_robot
    from robot_dynid.reports.figures import pyplot
    pyplot()        # matplotlib missing: say so before any work
    robot = load_robot(args.robot)
    options = _task_options(args)
    settings_from_args(args, robot)     # refused options: one line before any task starts
    baseline = "first" if args.baseline == "first" else DynamicModel.load(args.baseline)
    entries = read_manifest(args.manifest)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with FleetStore(out / "fleet.sqlite") as store:
        results = _identified(args, entries, options, store, out)
        analysis = analyse_fleet(_histories(results, out), baseline, args.level, args.correction,
                                 args.wear_parameter, args.outlier_spreads, reference_motions(store, results),
                                 practical_fraction=args.practical_fraction)
        store_wear_indicators(store, analysis)
    counts = {"identified": sum(r.status == "identified" and not r.reused for r in results),
              "reused": sum(r.reused for r in results), "failed": sum(r.status == "failed" for r in results),
              "database": "fleet.sqlite"}
    index = write_fleet_page(out, analysis, results, counts)
    summary = _write_summary(out, analysis, results, counts, index)
    if args.json:
        with open(out / "summary.json") as stream:
            shutil.copyfileobj(stream, sys.stdout)
        return 0
    _print_summary(summary, analysis, results, counts, args.level, out, index)
    return 0
