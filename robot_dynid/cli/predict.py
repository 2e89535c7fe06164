"""robot-dynid predict: torques of a model along recorded motion, written as CSV."""

NAME = "predict"
HELP = "compute a model's joint torques for every sample of a recording (CSV: time, tau.<joint>)"


def add_arguments(parser):
    from robot_dynid.cli.options import add_data_arguments, add_raw_argument, output_file
    parser.add_argument("--model", required=True, metavar="model.yaml", help="model artifact from identify")
    add_data_arguments(parser)
    add_raw_argument(parser)
    parser.add_argument("--out", required=True, type=output_file, metavar="torques.csv", help="CSV to write")


def main(args):
    from robot_dynid.cli.options import model_conditioning, read_data
    from robot_dynid.model.dynamic_model import DynamicModel
    from robot_dynid.recordings.csv_io import write_torques_csv
    from robot_dynid.recordings.recording import describe_dropped
    model = DynamicModel.load(args.model)
    recording = read_data(args, model.robot, conditioning=model_conditioning(args, model)).recording
    tau = model.torque(recording.q, recording.qd, recording.qdd,
                       temperature=recording.temperature, elapsed=recording.elapsed)
    write_torques_csv(args.out, recording.time, model.joint_names, tau)
    dropped = f" ({recording.n_dropped} dropped: {describe_dropped(recording.dropped)})" if recording.n_dropped else ""
    print(f"{recording.n_samples} samples predicted{dropped}; written to {args.out}")
    return 0
