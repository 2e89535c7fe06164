"""robot-dynid identify: identify a model from recordings and write the model artifact."""
import dataclasses
import functools
import pathlib

from robot_dynid.errors import DataError

from robot_dynid.reports.json_text import dumps
from robot_dynid.cli.options import (add_cylinders_argument, add_data_arguments, add_model_structure_arguments,
                                     add_stage_detection_arguments, add_torque_check_argument, load_cylinders,
                                     conditioning_from_args, non_negative_number, output_file, parse_cycles,
                                     positive_number, progress, read_data, read_validation_data, settings_from_args,
                                     subtract_cylinders)
from robot_dynid.estimation.consistency_check import held_out_comparison
from robot_dynid.estimation.estimators import ESTIMATORS
from robot_dynid.estimation.identification import PRIOR_MODES, identify
from robot_dynid.estimation.validation import validate_model
from robot_dynid.hydraulics.two_stage import cylinder_provenance
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.recordings.bag_io import JOINT_STATE_TYPE, bag_topics
from robot_dynid.recordings.bag_layout import BAG_TOPICS
from robot_dynid.reports.tables import (format_model_summary, format_stamp_quality, format_validation, model_summary,
                                        stamp_quality_summary)

NAME = "identify"
HELP = "identify base parameters from rosbag2 or CSV recordings and write a model file"


def add_arguments(parser):
    add_model_structure_arguments(parser)
    add_data_arguments(parser, several=True)
    add_torque_check_argument(parser)
    parser.add_argument("--method", default="ols", choices=tuple(ESTIMATORS),
                        help="; ".join(f"{name}: {estimator.summary}" for name, estimator in ESTIMATORS.items())
                        + " (default: %(default)s)")
    parser.add_argument("--forgetting", type=float, default=1.0, help="RLS forgetting factor in (0, 1]")
    parser.add_argument("--stage", action="append", metavar="NAME",
                        help="use only samples of this stage kind (repeatable), e.g. excitation; without "
                             "stage markers (or a CSV stage column) the stages are detected from the motion: "
                             "rest, friction (one joint at constant speed) and excitation (two or more "
                             "joints moving, warm-up and validation included)")
    parser.add_argument("--cycles", type=parse_cycles, metavar="LIST",
                        help="use only these cycles, pooled: e.g. 3,9,16 or 0-5, at most 10000 (needs stage markers "
                             "or a cycle column: cycles cannot be detected from the motion)")
    add_stage_detection_arguments(parser)
    conditioning = parser.add_argument_group("data conditioning")
    conditioning.add_argument("--trim", type=non_negative_number("a duration >= 0 [s]"), default=0.0,
                              metavar="SECONDS", help="leave out this much at the start and end of each "
                              "recording (start-up transients) [s] (default: %(default)s)")
    conditioning.add_argument("--lowpass", type=positive_number("a cutoff frequency > 0 [Hz]"), default=None,
                              metavar="HZ", help="filter the torques and every regressor column with the same "
                              "zero-phase Butterworth low-pass (parallel filtering; needs uniform stamps: "
                              "--resample) [Hz]")
    conditioning.add_argument("--file-offsets", action="store_true",
                              help="estimate a torque offset per recording and joint [N m] (sensors re-zeroed "
                                   "between recordings); reported, not part of the model")
    consistent = parser.add_argument_group("physically consistent identification (needs cvxpy)")
    consistent.add_argument("--consistent", action="store_true",
                            help="estimate standard parameters with every link's pseudo-inertia positive "
                                 "semidefinite, Coulomb and viscous friction and armature >= 0; the model then "
                                 "holds them (links: mass, centre of mass, inertia) for export-urdf")
    consistent.add_argument("--bounds", dest="bounds_file", metavar="B.yaml", default=None,
                            help="optional bounds: link mass ranges [kg], total mass [kg], centre-of-mass boxes "
                                 "[m] in the link frames, the margin (see docs/estimation.md)")
    consistent.add_argument("--prior-weight", type=prior_weight, default=None, metavar="WEIGHT",
                            help="--prior-mode regularised: the prior's weight (a Gaussian prior of std "
                                 "1/sqrt(WEIGHT) link scales: mass, mass x length, mass x length^2), a number > 0 "
                                 "[1], or auto: the one of 0.1, 1, 10, ..., 1e6 with the least "
                                 "cross-validated torque error (over the recordings, else the cycles, else 5 blocks of "
                                 "samples) (default: 100). Every consistent fit is also compared with plain least "
                                 "squares on held-out data (--validate, else cross-validated) and a warning names the "
                                 "joints it predicts more than 10 %% worse")
    consistent.add_argument("--prior-mode", choices=PRIOR_MODES + ("none",), default="two_step",
                            help="how the robot description's inertial data (URDF <inertial>, DH inertial:) enters: "
                                 "two_step: the fit closest to it among those within 1 %% of the best consistent "
                                 "residual; regularised: a Gaussian prior of 10 %% of each link's scales; none: "
                                 "ignored, a small regulariser makes the standard parameters unique "
                                 "(default: %(default)s)")
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
    if not (pathlib.Path(path).is_dir() or pathlib.Path(path).suffix in (".mcap", ".db3")):
        return f"{path}: no torques [N m] to identify from: the file has no tau columns (see README: CSV columns)"
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
    if recording.tau is None:
        raise DataError(no_torques(path, args))
    return subtract_cylinders(recording, robot, cylinders)


def prior_weight(text):
    """argparse type of --prior-weight: ``auto`` or a finite number > 0."""
    return "auto" if text == "auto" else positive_number("a weight > 0 [1] or auto")(text)


def main(args):
    robot = load_robot(args.robot)
    settings = settings_from_args(args, robot)
    if args.validate and settings.consistency is not None:     # compared on the held-out data instead
        settings = dataclasses.replace(settings, consistency=dataclasses.replace(settings.consistency, check=False))
    cylinders = load_cylinders(args)
    recordings, notes, stamps = [], [], []
    conditioning = conditioning_from_args(args, settings.lowpass)
    for path in progress(args.data, "reading recordings"):
        reading = read_data(args, robot, path, conditioning, stage=args.stage, cycles=args.cycles, trim=args.trim,
                            adjust=functools.partial(_arm_torques, args=args, robot=robot, cylinders=cylinders,
                                                     path=path))
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
    model = identify(recordings, robot, settings, provenance=provenance)
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
