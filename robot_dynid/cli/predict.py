"""robot-dynid predict: torques of a model along recorded motion, written as CSV.

The rows are the samples as the model's training data were conditioned (or as ``--raw`` reads them): a model
identified with ``--resample HZ`` predicts on that uniform grid, receive-time stamps are put back on the sensor's
clock, samples the checks drop are left out (each said in the output). The torques are the model's: never low-pass
filtered, whatever the model's ``--lowpass`` (that filter is for comparing with measured torques)."""

__all__ = ["NAME", "HELP", "add_arguments", "main"]

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
    resampled = recording.conditioning.get("resampled_hz")
    clock = (recording.conditioning.get("time_base") or {}).get("kind")
    if resampled:
        print(f"times: the uniform {resampled:g} Hz grid the model's training data were resampled to")
    elif clock == "grid":
        print("times: the sensor's clock recovered from receive-time stamps (stamp report of validate)")
    if model.provenance.get("conditioning", {}).get("settings", {}).get("lowpass_hz") and not args.raw:
        print("torques: the model's, not low-pass filtered (the model's --lowpass filters measured and predicted "
              "torques alike only when they are compared)")
    return 0
