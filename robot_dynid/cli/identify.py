"""robot-dynid identify: identify a model from a recording and write the model artifact."""
from robot_dynid.cli.options import (
    add_data_arguments, add_model_structure_arguments, bag_topics_from_args, friction_from_args, parse_cycles,
)
from robot_dynid.data_files import read_recording
from robot_dynid.identification import METHODS, IdentificationSettings, identify
from robot_dynid.reports import format_model_summary
from robot_dynid.robot_description import load_robot

NAME = "identify"
HELP = "identify base parameters from a rosbag2 or CSV recording and write a model file"


def add_arguments(parser):
    add_model_structure_arguments(parser)
    add_data_arguments(parser)
    parser.add_argument("--method", default="ols", choices=METHODS,
                        help="ordinary / weighted (per-joint noise) least squares, or recursive LS")
    parser.add_argument("--forgetting", type=float, default=1.0, help="RLS forgetting factor in (0, 1]")
    parser.add_argument("--stage", action="append", metavar="NAME",
                        help="use only samples of this stage kind (repeatable), e.g. excitation")
    parser.add_argument("--cycles", type=parse_cycles, metavar="LIST",
                        help="use only these cycles, pooled: e.g. 3,9,16 or 0-5")
    parser.add_argument("--out", required=True, metavar="model.yaml", help="model artifact to write")


def main(args):
    robot = load_robot(args.robot)
    recording = read_recording(args.data, joint_names=robot.joint_names, **bag_topics_from_args(args))
    selected = recording.select(stage=args.stage, cycles=args.cycles)
    settings = IdentificationSettings(friction=friction_from_args(args), armature=args.armature,
                                      offset=args.offset, method=args.method, forgetting=args.forgetting)
    model = identify(selected, robot, settings, provenance={
        "data_source": str(args.data),
        "segments": {"stage": args.stage or "all", "cycles": args.cycles or "all"},
    })
    model.save(args.out)
    print(format_model_summary(model))
    print(f"model written to {args.out}")
    return 0
