"""robot-dynid demo: a simulated identification from end to end, without hardware or ROS.

The simulated robot follows the excitation trajectory; its joint states and noisy torques are
recorded to a rosbag2 with stage markers (one excitation cycle per period), identified from
that bag, and the model is checked on a held-out trajectory against the simulator's noise-free
torques. The bag, a CSV copy and the model file stay in --out for the offline commands.
"""
import pathlib
import shutil

import numpy as np

from robot_dynid.bag_io import BagWriter
from robot_dynid.csv_io import write_csv
from robot_dynid.data_files import read_recording
from robot_dynid.friction import friction_model
from robot_dynid.identification import IdentificationSettings, identify
from robot_dynid.metrics import rms_residual, rsd
from robot_dynid.package_files import find_package_file
from robot_dynid.recording import Recording
from robot_dynid.regressor import Regressor
from robot_dynid.reports import format_joint_metrics, format_model_summary, format_table
from robot_dynid.robot_description import load_robot
from robot_dynid.simulation import SimulatedRobot, simulation_parameters
from robot_dynid.trajectories import FourierTrajectory, load_trajectory, time_grid

NAME = "demo"
HELP = "simulate an arm, record a bag, identify it and validate the model on a held-out trajectory"


def add_arguments(parser):
    parser.add_argument("--robot", default=None, metavar="R.yaml", help="robot description (default: the ER3A)")
    parser.add_argument("--excitation", default=None, metavar="T.yaml",
                        help="excitation trajectory (default: the thesis Table 4.1 trajectory for the ER3A)")
    parser.add_argument("--periods", type=int, default=3, help="excitation periods recorded (default: %(default)s)")
    parser.add_argument("--rate", type=float, default=200.0, help="sample rate [Hz] (default: %(default)s)")
    parser.add_argument("--noise", type=float, default=0.5, help="torque noise std [N m] (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default: %(default)s)")
    parser.add_argument("--out", default="demo_output", help="output directory (default: %(default)s)")


def held_out_trajectory(excitation: FourierTrajectory) -> FourierTrajectory:
    """A different motion through the same workspace: harmonics' roles swapped, another period."""
    return FourierTrajectory(excitation.joint_names, period=1.3 * float(np.max(excitation.period)),
                             q0=excitation.q0, a=0.7 * excitation.b, b=-0.7 * excitation.a)


def record_bag(path, robot, t, q, qd, tau, period):
    if path.exists():
        shutil.rmtree(path)  # the previous demo run's bag
    with BagWriter(path) as bag:
        for cycle in range(int(round(t[-1] / period + 0.5))):
            start = cycle * period
            bag.write_stage(int(start * 1e9), "excitation", cycle, True, experiment_id="demo")
            inside = np.flatnonzero((t >= start) & (t < start + period))
            for k in inside:
                bag.write_joint_state(int(round(t[k] * 1e9)), robot.joint_names, q[k], qd[k], tau[k])
            bag.write_stage(int(round(t[inside[-1]] * 1e9)), "excitation", cycle, False, experiment_id="demo")
    return path


def main(args):
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    robot = load_robot(args.robot or find_package_file("config", "robots", "er3a.yaml"))
    excitation = load_trajectory(args.excitation or find_package_file("config", "trajectories", "er3a_table_4_1.yaml"))
    period = float(np.max(excitation.period))
    friction = friction_model("coulomb_viscous")
    regressor = Regressor(robot, friction)
    truth = simulation_parameters(regressor, seed=args.seed)
    simulator = SimulatedRobot(regressor, truth, np.full(robot.n_joints, args.noise))

    t = time_grid(args.periods * period, dt=1.0 / args.rate)
    q, qd, qdd = excitation.evaluate(t % period)
    tau = simulator.torques(q, qd, qdd, rng=args.seed)
    print(f"1. simulated {robot.name} along the excitation: {args.periods} periods of {period:g} s at "
          f"{args.rate:g} Hz ({len(t)} samples), torque noise {args.noise:g} N m")

    bag_path = record_bag(out / "recording", robot, t, q, qd, tau, period)
    write_csv(out / "recording.csv", Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau, source="demo"))
    print(f"2. recorded {bag_path} (MCAP: /joint_states, /experiment_stage) and {out / 'recording.csv'}")

    recording = read_recording(bag_path, joint_names=robot.joint_names)
    model = identify(recording.select(stage="excitation"), robot, IdentificationSettings(friction=friction),
                     provenance={"data_source": str(bag_path), "segments": "all excitation cycles"})
    model_path = model.save(out / "model.yaml")
    print(f"3. identified from the bag (accelerations by Savitzky-Golay differentiation); model: {model_path}\n")
    print(format_model_summary(model))
    true_base = model.base.projection @ truth
    print("\nidentified versus true base parameters:")
    print(format_table(("parameter", "identified", "std", "true", "error / std"), [
        (name, f"{value:.5g}", f"{std:.2g}", f"{true:.5g}", f"{(value - true) / std:+.2f}" if std > 0 else "-")
        for name, value, std, true in zip(model.base.names, model.values, model.std, true_base)]))

    validation = held_out_trajectory(excitation)
    tv = time_grid(float(np.max(validation.period)), dt=1.0 / args.rate)
    qv, qdv, qddv = validation.evaluate(tv)
    expected = simulator.torques(qv, qdv, qddv, noise=False)
    predicted = model.torque(qv, qdv, qddv)
    rms = rms_residual(predicted, expected)
    print("\n4. feed-forward error on a held-out trajectory against the simulator's noise-free torques:")
    print(format_joint_metrics(robot.joint_names, {
        "RMS error [N m]": rms, "RSD [1]": rsd(predicted, expected), "RMS error / noise std": rms / args.noise,
        "RMS torque [N m]": np.sqrt(np.mean(expected**2, axis=0)),
    }))
    print(f"\noffline: robot-dynid identify --robot <R.yaml> --data {bag_path} --out model.yaml")
    return 0
