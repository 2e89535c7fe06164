"""robot-dynid identify: identify a model from a recording and write the model artifact."""
from robot_dynid.cli.options import (
    add_data_arguments, add_model_structure_arguments, add_stage_detection_arguments, friction_from_args,
    output_file, parse_cycles, read_data,
)
from robot_dynid.excitation import robot_limit_arrays
from robot_dynid.identification import METHODS, IdentificationSettings, identify
from robot_dynid.reports import format_model_summary
from robot_dynid.robot_description import load_robot
from robot_dynid.segmentation import select_stages

NAME = "identify"
HELP = "identify base parameters from a rosbag2 or CSV recording and write a model file"


def add_arguments(parser):
    add_model_structure_arguments(parser)
    add_data_arguments(parser)
    parser.add_argument("--method", default="ols", choices=METHODS,
                        help="ordinary / weighted (per-joint noise) least squares, or recursive LS")
    parser.add_argument("--forgetting", type=float, default=1.0, help="RLS forgetting factor in (0, 1]")
    parser.add_argument("--stage", action="append", metavar="NAME",
                        help="use only samples of this stage kind (repeatable), e.g. excitation; without "
                             "stage markers (or a CSV stage column) the stages are detected from the motion: "
                             "rest, friction (one joint at constant speed) and excitation (two or more "
                             "joints moving, warm-up and validation included)")
    parser.add_argument("--cycles", type=parse_cycles, metavar="LIST",
                        help="use only these cycles, pooled: e.g. 3,9,16 or 0-5 (needs stage markers or a "
                             "cycle column: cycles cannot be detected from the motion)")
    add_stage_detection_arguments(parser)
    parser.add_argument("--out", required=True, type=output_file, metavar="model.yaml",
                        help="model artifact to write (checked before the work starts)")


def main(args):
    robot = load_robot(args.robot)
    recording = read_data(args, robot)
    selection = select_stages(recording, args.stage, args.cycles,
                              velocity_limits=robot_limit_arrays(robot, recording.joint_names)[2],
                              rest_threshold=args.rest_threshold)
    if selection.note:
        print(selection.note)
    settings = IdentificationSettings(friction=friction_from_args(args), armature=args.armature,
                                      offset=args.offset, method=args.method, forgetting=args.forgetting)
    provenance = {"data_source": str(args.data),
                  "segments": {"stage": args.stage or "all", "cycles": args.cycles or "all"}}
    if selection.note:
        provenance["stage_detection"] = selection.note
    model = identify(selection.recording, robot, settings, provenance=provenance)
    model.save(args.out)
    print(format_model_summary(model))
    print(f"model written to {args.out}")
    return 0
