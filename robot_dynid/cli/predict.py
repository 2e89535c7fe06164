"""robot-dynid predict: torques of a model along recorded motion, written as CSV."""
from robot_dynid.cli.options import add_data_arguments, bag_topics_from_args
from robot_dynid.csv_io import write_torques_csv
from robot_dynid.data_files import read_recording
from robot_dynid.model import DynamicModel

NAME = "predict"
HELP = "compute a model's joint torques for every sample of a recording (CSV: time, tau.<joint>)"


def add_arguments(parser):
    parser.add_argument("--model", required=True, metavar="model.yaml", help="model artifact from identify")
    add_data_arguments(parser)
    parser.add_argument("--out", required=True, metavar="torques.csv", help="CSV to write")


def main(args):
    model = DynamicModel.load(args.model)
    recording = read_recording(args.data, joint_names=model.joint_names, **bag_topics_from_args(args, model.robot))
    tau = model.torque(recording.q, recording.qd, recording.qdd,
                       temperature=recording.temperature, elapsed=recording.elapsed)
    write_torques_csv(args.out, recording.time, model.joint_names, tau)
    dropped = f" ({recording.n_dropped} rows with NaN/inf dropped)" if recording.n_dropped else ""
    print(f"{recording.n_samples} samples predicted{dropped}; written to {args.out}")
    return 0
