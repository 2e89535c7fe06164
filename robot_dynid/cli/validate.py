"""robot-dynid validate: a model's held-out metrics on recordings it was not fitted on."""

import dataclasses

__all__ = ["NAME", "HELP", "add_arguments", "main"]

NAME = "validate"
HELP = ("a model's per-joint RMS [N m], RSD, relative RMSD and NRMS on held-out recordings, with a warning "
        "where they leave the speeds and accelerations the model was identified on")


def add_arguments(parser):
    from robot_dynid.cli.options import (add_cycles_argument, add_cylinders_argument, add_data_arguments,
                                         add_raw_argument, add_speed_threshold_argument, add_stage_argument,
                                         add_torque_check_argument)
    parser.add_argument("--model", required=True, metavar="model.yaml", help="model artifact from identify")
    add_data_arguments(parser, several=True)
    add_raw_argument(parser)
    add_torque_check_argument(parser)
    add_stage_argument(parser)
    add_cycles_argument(parser)
    add_speed_threshold_argument(parser)
    add_cylinders_argument(parser, "the comparison, as identify --cylinders does (give the same file the model "
                                   "was identified with)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def main(args):
    from robot_dynid.cli.options import load_cylinders, model_conditioning, progress, read_validation_data
    from robot_dynid.estimation.consistency_check import held_out_comparison
    from robot_dynid.estimation.validation import validate_model
    from robot_dynid.hydraulics.two_stage import cylinder_subtraction_warning
    from robot_dynid.model.dynamic_model import DynamicModel
    from robot_dynid.reports.json_text import dumps
    from robot_dynid.reports.tables import format_stamp_quality, format_validation, stamp_quality_summary
    model = DynamicModel.load(args.model)
    cylinders = load_cylinders(args)
    conditioning = model_conditioning(args, model)
    recordings = []
    for path in progress(args.data, "reading recordings"):
        recordings.append(read_validation_data(args, model.robot, cylinders, path, conditioning, args.stage,
                                               args.cycles, payload=model.payload))
    validation = validate_model(model, recordings, args.speed_threshold, conditioning.lowpass,
                                ("raw: " if args.raw else "as the model's training data: ") + conditioning.describe())
    mismatch = cylinder_subtraction_warning(model.provenance, str(args.model), args.cylinders, cylinders)
    if mismatch:
        validation = dataclasses.replace(validation, warnings=(mismatch,) + validation.warnings)
    check = held_out_comparison(model, recordings)      # a consistent model against its least-squares values
    if check is not None and check["warning"]:
        validation = dataclasses.replace(validation, warnings=validation.warnings + (check["warning"],))
    stamps = [recording.stamp_quality for recording in recordings]
    if args.json:
        print(dumps({"model": str(args.model), **validation.to_dict(), "stamps": stamp_quality_summary(stamps),
                     "least_squares_check": check}))
        return 0
    if any(stamps):
        print(format_stamp_quality(stamps))
    print(format_validation(validation, model.robot.effort_unit))
    if check is not None:
        print(check["text"])
    return 0
