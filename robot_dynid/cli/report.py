"""robot-dynid report: the analyses of a test as an HTML page with figures and a JSON summary."""
import pathlib

from robot_dynid.errors import DynIdError

__all__ = ["NAME", "HELP", "add_arguments", "main", "tracking_report"]

NAME = "report"
HELP = ("analyse a test (torque fits, base parameters, per-cycle identification, friction stages and drift, "
        "self/cross-verification) into an HTML report with figures and summary.json")


def add_arguments(parser):
    from robot_dynid.cli.options import (MODEL_STRUCTURE_OPTIONS, add_data_arguments, add_model_structure_arguments,
                                         add_option_arguments, add_raw_argument, add_speed_threshold_argument,
                                         add_stage_argument, add_stage_detection_arguments, add_torque_check_argument,
                                         number_in, output_directory, parse_cycles, positive_number)
    from robot_dynid.estimation.identification_options import OPTIONS
    from robot_dynid.estimation.analysis_defaults import (DEFAULT_FORGETTING, DEFAULT_FRICTION_SPEED,
                                                          DEFAULT_WARM_CYCLES, GRAVITY_MODES)
    from robot_dynid.recordings.stage_detection import DEFAULT_PLATEAU_TOLERANCE
    add_model_structure_arguments(parser)
    add_data_arguments(parser, several=True)
    add_raw_argument(parser)
    add_torque_check_argument(parser)
    identification = parser.add_argument_group("identification (as identify's; without --model)")
    add_option_arguments(identification, [name for name in OPTIONS
                                          if name not in MODEL_STRUCTURE_OPTIONS + ("check_torque_scale",)])
    add_stage_detection_arguments(parser)
    parser.add_argument("--model", metavar="model.yaml", default=None,
                        help="model to report on (default: identified from the data with the model structure "
                             "options and written to DIR/model.yaml)")
    parser.add_argument("--out", required=True, type=output_directory, metavar="DIR",
                        help="report directory: index.html, summary.json, PNG figures")
    add_stage_argument(parser, default="excitation; the identification data and the per-cycle fits")
    holdout = parser.add_mutually_exclusive_group()
    holdout.add_argument("--holdout-cycles", type=parse_cycles, metavar="LIST",
                         help="cycles held out of the identification and shown as held-out data (default: the last "
                              "cycle when the model is identified here and there is no other held-out data); at most "
                              "10000")
    holdout.add_argument("--no-holdout", action="store_true", help="hold no cycle out")
    parser.add_argument("--validate", action="append", default=[], metavar="FILE",
                        help="held-out recording (all its samples; repeatable; read like --data)")
    parser.add_argument("--pool", action="append", type=parse_cycles, default=[], metavar="LIST",
                        help="also fit these cycles pooled (e.g. 3,9,16, at most 10000) and cross-verify the fit on "
                             "every cycle (repeatable)")
    parser.add_argument("--warm-cycles", type=int, default=DEFAULT_WARM_CYCLES, metavar="K",
                        help="statistics over cycles are also given without the first K (default: %(default)s)")
    parser.add_argument("--friction-speed", type=positive_number("a speed fraction > 0 [1]"),
                        default=DEFAULT_FRICTION_SPEED, metavar="FRACTION",
                        help="friction speed level followed over time, as a fraction of the velocity limit (the "
                             "nearest level of the data is used; default: %(default)s)")
    parser.add_argument("--gravity", choices=GRAVITY_MODES, default="auto",
                        help="remove gravity from the friction stages: auto: for joints whose axis is not vertical "
                             "(their motion is not horizontal); always; never (default: %(default)s)")
    parser.add_argument("--plateau-tolerance", type=positive_number("a fraction > 0 [1]"),
                        default=DEFAULT_PLATEAU_TOLERANCE, metavar="FRACTION",
                        help="a friction sample is at constant velocity within this fraction of its stroke's "
                             "cruise speed (default: %(default)s)")
    add_speed_threshold_argument(parser)
    parser.add_argument("--json", action="store_true", help="print summary.json's content instead of the path")
    parser.add_argument("--tracking", action="store_true",
                        help="instead of the report: track the friction of --model over --data as the identifier's "
                             "track_friction mode does (RLS with forgetting, rigid body fixed) and plot the tracked "
                             "coefficients against time [s] in DIR/tracking.png")
    parser.add_argument("--tracking-forgetting", type=number_in("1", 0.0, 1.0, allow_minimum=False),
                        default=DEFAULT_FORGETTING, metavar="MU",
                        help="--tracking: RLS forgetting factor per sample in (0, 1]; memory about 1 / (1 - MU) "
                             "samples (default: %(default)s, the identifier's tracking_forgetting)")


def main(args):
    import dataclasses
    from robot_dynid.cli.options import (bag_topics_from_args, conditioning_from_args, model_conditioning, progress,
                                         read_data, read_validation_data, settings_from_args)
    from robot_dynid.estimation.derivative_window import window_chooser
    from robot_dynid.model.dynamic_model import DynamicModel
    from robot_dynid.model.robot_loader import load_robot
    from robot_dynid.recordings.data_files import stage_table
    from robot_dynid.recordings.stage_detection import default_rest_threshold
    from robot_dynid.recordings.stages import label_samples
    from robot_dynid.reports.json_text import dumps
    from robot_dynid.reports.report import ReportOptions, make_report
    from robot_dynid.reports.tables import format_stamp_quality
    from robot_dynid.reports.figures import pyplot
    pyplot()        # matplotlib missing: say so before any work
    robot = load_robot(args.robot)
    model = DynamicModel.load(args.model) if args.model else None
    if args.tracking:
        return tracking_report(args, robot, model)
    settings = None if model else settings_from_args(args, robot)
    conditioning = model_conditioning(args, model) if model else conditioning_from_args(args, settings.lowpass)
    if args.warm_cycles < 0:
        raise DynIdError(f"--warm-cycles must be >= 0, got {args.warm_cycles}")
    recordings, intervals, notes = [], [], []
    velocity = robot.limit_arrays().velocity
    # identified here without --derivative-window: the window cross-validated on the first file, as identify does
    choose = window_chooser(robot, settings) if model is None and conditioning.derivative_window is None else None
    for path in progress(args.data, "reading", len(args.data)):
        recording = read_data(args, robot, path, conditioning, choose_window=choose).recording
        if choose is not None:
            conditioning = dataclasses.replace(conditioning, derivative_window=recording.conditioning["settings"][
                "derivative_window_s"])
            choose = None
        table = stage_table(recording, path, robot.limit_arrays(recording.joint_names).velocity, args.rest_threshold,
                            **bag_topics_from_args(args, robot))
        if recording.stage is None:
            recording = recording.with_labels(label_samples(recording.time, table.stages)[0], None)
            notes.append(table.note)
        recordings.append(recording)
        intervals.append(table.stages)
    validation = [read_validation_data(args, robot, None, path, conditioning, payload=model and model.payload)
                  for path in args.validate]
    options = ReportOptions(
        stage=tuple(args.stage or ("excitation",)), speed_threshold=args.speed_threshold,
        warm_cycles=args.warm_cycles, friction_speed=args.friction_speed, gravity=args.gravity,
        plateau_tolerance=args.plateau_tolerance,
        rest_threshold=args.rest_threshold or float(default_rest_threshold(velocity).min()),
        holdout_cycles=() if args.no_holdout else None if args.holdout_cycles is None else tuple(args.holdout_cycles),
        pools=tuple(tuple(pool) for pool in args.pool))
    summary = make_report(args.out, robot, recordings, intervals, model=model, settings=settings,
                          validation=validation, options=options, progress=progress,
                          sources=[str(path) for path in args.data], check_torques=args.check_torque_scale)
    index = pathlib.Path(args.out) / "index.html"
    if args.json:
        print(dumps({**summary, "index": str(index)}))
        return 0
    for note in notes + summary["notes"]:
        print(f"note: {note}")
    for warning in summary["model"]["metrics"].get("warnings", []):
        print(f"warning: {warning}")
    stamps = [recording.stamp_quality for recording in recordings + validation]
    if any(stamps):
        print(format_stamp_quality(stamps))
    print(f"verdict: {summary['verdict']['text']}")
    print(f"report written to {index} ({len(summary['figures'])} figures; summary.json beside it)")
    return 0


def tracking_report(args, robot, model):
    """``--tracking``: the friction of ``model`` tracked over each --data, one figure of the tracked coefficients."""
    from robot_dynid.cli.options import model_conditioning, read_data
    from robot_dynid.reports.json_text import dumps
    from robot_dynid.estimation.friction_tracking import track_recording
    from robot_dynid.reports.figures import tracking_figure
    if model is None:
        raise DynIdError("--tracking needs --model (the model whose rigid body is fixed and friction tracked)")
    if len(args.data) != 1:
        raise DynIdError(f"--tracking takes one --data, got {len(args.data)}")
    history = track_recording(model, read_data(args, robot, args.data[0], model_conditioning(args, model)).recording,
                              args.tracking_forgetting)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    figure = tracking_figure(history, out / "tracking.png")
    if args.json:
        print(dumps({"names": list(history.names), "time": history.time.tolist(),
                     "values": history.values.tolist(), "std": history.std.tolist(), "figure": str(figure)}))
        return 0
    for name, value, std in zip(history.names, history.values[-1], history.std[-1]):
        print(f"{name}: {value:.6g} +- {std:.2g} at the end ({history.time[-1]:.1f} s)")
    print(f"tracked friction plotted in {figure}")
    return 0
