"""robot-dynid identify: identify a model from recordings and write the model artifact."""
import dataclasses
import functools
import pathlib

from robot_dynid.errors import DataError

__all__ = ["NAME", "HELP", "add_arguments", "no_torques", "main"]

NAME = "identify"
HELP = "identify base parameters from rosbag2 or CSV recordings and write a model file"


def add_arguments(parser):
    from robot_dynid.cli.options import (add_cycles_argument, add_cylinders_argument, add_data_arguments,
                                         add_model_structure_arguments, add_option_arguments, add_stage_argument,
                                         add_stage_detection_arguments, add_torque_check_argument, non_negative_number,
                                         output_file)
    add_model_structure_arguments(parser)
    add_data_arguments(parser, several=True)
    add_torque_check_argument(parser)
    add_option_arguments(parser, ("method", "forgetting"))
    add_stage_argument(parser)
    add_cycles_argument(parser)
    add_stage_detection_arguments(parser)
    conditioning = parser.add_argument_group("data conditioning")
    conditioning.add_argument("--trim", type=non_negative_number("a duration >= 0 [s]"), default=0.0,
                              metavar="SECONDS", help="leave out this much at the start and end of each "
                              "recording (start-up transients) [s] (default: %(default)s)")
    add_option_arguments(conditioning, ("lowpass", "file_offsets", "min_speed"))
    consistent = parser.add_argument_group(
        "physically consistent identification (needs cvxpy)",
        "Every consistent fit is also compared with plain least squares on held-out data (--validate, else "
        "cross-validated) and a warning names the joints it predicts more than 10 % worse.")
    add_option_arguments(consistent, ("consistent", "bounds_file", "prior_weight", "prior_mode"))
    parser.add_argument("--validate", action="append", metavar="FILE", default=[],
                        help="after the fit, report the model's held-out metrics on this recording (repeatable; "
                             "read like --data, all of it)")
    add_cylinders_argument(parser, "the fit (also for --validate; the model file records it, and validate warns "
                                   "when it is run on the model without --cylinders)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON instead of tables")
    parser.add_argument("--out", required=True, type=output_file, metavar="model.yaml",
                        help="model artifact to write (checked before the work starts)")


def no_torques(path, args) -> str:
    """Why the recording at ``path`` has no torques [N m], and which option or topic gives them."""
    from robot_dynid.recordings.bag_io import JOINT_STATE_TYPE, bag_topics
    from robot_dynid.recordings.bag_layout import BAG_TOPICS
    if not (pathlib.Path(path).is_dir() or pathlib.Path(path).suffix in (".mcap", ".db3")):
        return f"{path}: no torques [N m] to identify from: the file has no tau columns (see docs/data_formats.md)"
    topics = bag_topics(pathlib.Path(path).parent if pathlib.Path(path).is_file() else path)
    text = f"{path}: no torques [N m] to identify from: the joint states on {args.joint_states_topic} carry no effort"
    effort, current = BAG_TOPICS["effort"][0], BAG_TOPICS["current"][0]
    counts = {name: topics.get(name, (None, None))[1] for name in (effort, current)}
    if counts[effort] == 0:
        text += (f", and the bag's effort topic {effort} recorded no message (the recorder's effort_topic was set, "
                 "but nothing arrived on it: check that the driver publishes it, e.g. ros2 topic info)")
    if counts[effort]:
        return f"{text}; give --effort-topic {effort} (its {counts[effort]} messages hold the torques)"
    if counts[current]:
        return f"{text}; give --current-topic {current} (its {counts[current]} messages hold motor currents [A])"
    others = [f"{name} ({count} messages)" for name, (msgtype, count) in sorted(topics.items())
              if msgtype == JOINT_STATE_TYPE and count and name != args.joint_states_topic]
    return text + ("; give --effort-topic or --current-topic one of its JointState topics: " + ", ".join(others)
                   if others else "; record the torques: the recorder's effort_topic (or current_topic) set to a "
                   "JointState topic the driver publishes")


def _arm_torques(recording, args, robot, cylinders, path):
    """The reading pipeline's ``adjust`` of identify: DataError without torques (:func:`no_torques`), the
    cylinders' internal torques subtracted for a hydraulic arm."""
    from robot_dynid.cli.options import subtract_cylinders
    if recording.tau is None:
        raise DataError(no_torques(path, args))
    return subtract_cylinders(recording, robot, cylinders)


def main(args):
    from robot_dynid.cli.options import (conditioning_from_args, load_cylinders, progress, read_data,
                                         read_validation_data, settings_from_args)
    from robot_dynid.estimation.consistency_check import held_out_comparison
    from robot_dynid.estimation.derivative_window import window_chooser
    from robot_dynid.estimation.identification import identify
    from robot_dynid.estimation.validation import validate_model
    from robot_dynid.hydraulics.two_stage import cylinder_provenance
    from robot_dynid.model.robot_loader import load_robot
    from robot_dynid.reports.json_text import dumps
    from robot_dynid.reports.tables import (format_model_summary, format_stamp_quality, format_validation,
                                            model_summary, stamp_quality_summary)
    robot = load_robot(args.robot)
    settings = settings_from_args(args, robot)
    if args.validate and settings.consistency is not None:     # compared on the held-out data instead
        settings = dataclasses.replace(settings, consistency=dataclasses.replace(settings.consistency, check=False))
    cylinders = load_cylinders(args)
    recordings, notes, stamps = [], [], []
    conditioning = conditioning_from_args(args, settings.lowpass)
    # no --derivative-window: chosen on the first file by cross-validating this fit, then used for every file
    choose = window_chooser(robot, settings) if conditioning.derivative_window is None else None
    for path in progress(args.data, "reading recordings"):
        reading = read_data(args, robot, path, conditioning, stage=args.stage, cycles=args.cycles, trim=args.trim,
                            adjust=functools.partial(_arm_torques, args=args, robot=robot, cylinders=cylinders,
                                                     path=path), choose_window=choose)
        if choose is not None:
            conditioning = dataclasses.replace(conditioning, derivative_window=reading.recording.conditioning[
                "settings"]["derivative_window_s"])
            choose = None
        stamps.append(reading.recording.stamp_quality)
        if reading.selection.note:
            notes.append(reading.selection.note)
        recordings.append(reading.selection.recording)
    provenance = {"data_source": list(map(str, args.data)) if len(args.data) > 1 else str(args.data[0]),
                  "segments": {"stage": args.stage or "all", "cycles": args.cycles or "all"}}
    if notes:
        provenance["stage_detection"] = notes if len(notes) > 1 else notes[0]
    if cylinders is not None:
        provenance.update(cylinder_provenance(args.cylinders, cylinders))
    model = identify(recordings, robot, settings, provenance=provenance, progress=progress)
    held_out = [read_validation_data(args, robot, cylinders, path, conditioning) for path in args.validate]
    stamps += [recording.stamp_quality for recording in held_out]
    validations = [validate_model(model, [recording], lowpass=settings.lowpass,
                                  conditioning="as the training data: " + conditioning.describe())
                   for recording in held_out]
    if validations:
        model.metrics["validation"] = [validation.to_dict() for validation in validations]
    check = held_out_comparison(model, held_out)
    if check is not None:
        model.metrics["consistency"]["least_squares_check"] = check
        model.metrics["warnings"] += [check["warning"]] if check["warning"] else []
    model.save(args.out)
    if args.json:
        print(dumps({**model_summary(model), "model_file": str(args.out), "stamps": stamp_quality_summary(stamps)}))
        return 0
    for note in notes:
        print(note)
    if any(stamps):
        print(format_stamp_quality(stamps))
    print(format_model_summary(model))
    for validation in validations:
        print()
        print(format_validation(validation, model.robot.effort_unit))
    print(f"model written to {args.out}")
    return 0
