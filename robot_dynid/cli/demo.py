"""robot-dynid demo: a simulated identification from end to end, without hardware.

With ROS 2 (rclpy and the built interfaces), the demo starts the graph of ``launch/demo.launch.py``
in one process (:mod:`robot_dynid.nodes.demo_graph`): sim_robot follows the protocol plan that
experiment_runner plays (two short cycles of excitation, friction ladders and warm-up, set in
``config/demo.yaml``, which also sets the runner's ``autostart``: no ``~/start`` call), the
recorder writes the bag with the stage markers, the identifier identifies the excitation stages
as they end and feedforward serves the model. The identified
base parameters are printed beside the simulator's true ones, and the feed-forward torques from
the ComputeFeedforward service on a held-out trajectory are compared with the simulator's
noise-free torques.

``--offline`` (and, with a note, any install without rclpy) runs the core-only demo instead: the
simulator follows the excitation trajectory, the samples go to a bag (with stage markers) and a
CSV file, the bag is identified, and the model is checked on the same held-out trajectory.
The bag and the model file stay in --out for the offline commands.

``--engine mujoco`` (:mod:`robot_dynid.experiment.engines`) has MuJoCo simulate the arm instead of the
identifier's own regressor: by default the ER3A with the armature, damping and friction loss of
``config/robots/er3a_mujoco.yaml``, identified with armature and the ``coulomb_viscous_lead`` friction model.
The feed-forward error on the held-out trajectory (against the engine's noise-free torques) is reported for
the identified model and for the true parameters in the same friction model family: the second is the model
mismatch (zero with the regressor engine), the difference the identification error. ``--json`` prints
``{"engine", "robot", "joint_names", "feedforward_error": {"identified": [...], "true_parameters": [...]}}``
(RMS per joint [N m]) on stdout, the rest of the output on stderr.

``--closed-loop`` (:mod:`robot_dynid.cli.closed_loop_demo`, MuJoCo): the ROS demo's identification, then a
held-out motion through the feedforward node into sim_robot arms under a 1 kHz PD (``mode: control``): PD alone,
identified and true-parameter feed-forward on both feed-forward paths, a payload served mid-run, friction warming
up with a static and a drift model; tracking error per joint, the path's latency, the goals of issue 34,
``report/closed_loop.html``; ``--json`` adds ``closed_loop``.

``--drift`` (:mod:`robot_dynid.cli.drift_demo`): a cold start whose friction drifts as a double exponential in
running time (compressed time constants), with the feed-forward error over time of a static model, the drift
model served and online friction tracking; it runs those cores in-process, not the ROS graph (which would take
the run's minutes in real time; the ROS tests cover the nodes' paths). ``--json``:
``{"feedforward_error": {"static", "drift_model", "tracked"}, ...}`` (RMS over joints and samples of the last
third of the run [N m]).
"""
from __future__ import annotations

import contextlib
import argparse
import dataclasses
import pathlib
import re
import shutil
import sys
import time
from typing import TYPE_CHECKING

from robot_dynid.errors import DataError, DynIdError

__all__ = ["NAME", "HELP", "HELD_OUT_RATE", "MAX_PERIODS", "MAX_RATE", "MAX_SAMPLES", "MUJOCO_ROBOT", "MUJOCO_FRICTION",
           "add_arguments", "ros_namespace", "node_parameters", "held_out_trajectory", "held_out_motion", "print_model",
           "print_feedforward_error", "feedforward_summary", "fresh", "main", "run_drift_demo", "run", "robot_file_of",
           "engine_parameters", "identify_options", "GraphIdentification", "run_graph", "run_closed_loop_graph",
           "identify_in_graph", "record_bag", "follow_excitation", "run_offline", "write_report"]

if TYPE_CHECKING:
    from robot_dynid.model.dynamic_model import DynamicModel

NAME = "demo"
HELP = "simulate an arm, record a bag, identify it and validate the model on a held-out trajectory"
HELD_OUT_RATE = 100.0  # Hz, points of the held-out trajectory
MAX_PERIODS = 100       # --periods: the demo identifies well from 3
MAX_RATE = 10_000.0     # Hz, --rate: above any joint-state rate of an arm's driver
MAX_SAMPLES = 1_000_000  # of the offline demo's recording (--periods x period x --rate); the bag takes minutes then
#: The MuJoCo demo's robot, and the friction model family of its identification and true parameters.
MUJOCO_ROBOT = ("config", "robots", "er3a_mujoco.yaml")
MUJOCO_FRICTION = "coulomb_viscous_lead"


def add_arguments(parser):
    from robot_dynid.cli.options import add_robot_argument, output_directory
    from robot_dynid.experiment.engines import ENGINE_NAMES
    parser.add_argument("--out", default="demo_output", type=output_directory,
                        help="output directory (default: %(default)s)")
    parser.add_argument("--offline", action="store_true",
                        help="core-only demo without ROS nodes (what runs anyway when rclpy is not installed)")
    add_robot_argument(parser, default="the ER3A; with --engine mujoco config/robots/er3a_mujoco.yaml")
    parser.add_argument("--engine", default="regressor", choices=ENGINE_NAMES,
                        help="the simulator's physics: the identifier's own regressor, or MuJoCo (an independent "
                             'engine, pip install "robot-dynid[sim]"; armature, damping and friction loss from the '
                             "robot's simulation: section, identified with armature and friction "
                             f"{MUJOCO_FRICTION}) (default: %(default)s)")
    parser.add_argument("--json", action="store_true",
                        help="print the feed-forward errors [N m] on the held-out trajectory as JSON on stdout "
                             "(identified model and true parameters, per joint); the rest goes to stderr")
    parser.add_argument("--hydraulic", action="store_true",
                        help="core-only hydraulic demo: the curtain-wall arm's cylinders on a bench, then the arm; "
                             "identifies the cylinders and then the arm (two-stage) and prints both tables")
    parser.add_argument("--drift", action="store_true",
                        help="friction that drifts from a cold start (double exponential in running time, time "
                             "constants 240 s and 40 s): feed-forward error over time of a static model, the drift "
                             "model served and online tracking; runs the cores in-process, not the ROS graph; with "
                             "--json: feedforward_error {static, drift_model, tracked} [N m], RMS over joints of "
                             "the last third of the run")
    parser.add_argument("--closed-loop", action="store_true",
                        help="on MuJoCo: identify as the ROS demo does, then play a held-out motion through the "
                             "feedforward node into arms under a 1 kHz PD (PD alone, identified and true-parameter "
                             "feed-forward, a 2 kg payload served mid-run, friction warming up with a static and a "
                             "drift model); prints RMS and peak tracking error [rad] and torque [N m] per joint, the "
                             "path's latency, writes report/closed_loop.html; with --json under closed_loop")
    parser.add_argument("--closed-loop-duration", type=float, default=8.0, metavar="S",
                        help="--closed-loop: duration of the held-out motion [s], 1 to 60 (default: %(default)s)")
    parser.add_argument("--drift-duration", type=float, default=600.0, metavar="S",
                        help="--drift: running time simulated [s], 60 to 7200 (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed of the true parameters and the noise (default: config/demo.yaml, sim_robot)")
    parser.add_argument("--noise", type=float, default=None,
                        help="torque noise std [N m] (default: config/demo.yaml, sim_robot)")
    graph = parser.add_argument_group("ROS demo (the nodes in one process)")
    graph.add_argument("--params-file", action="append", default=[], metavar="P.yaml",
                       help="parameter file with sections for any of the demo's nodes, applied after "
                            "config/demo.yaml (repeatable), e.g. a shorter plan")
    graph.add_argument("--namespace", default="", metavar="NS", type=ros_namespace,
                       help="ROS namespace of every node (e.g. robot1): demos in two namespaces run side by side")
    offline = parser.add_argument_group("--offline demo")
    offline.add_argument("--excitation", default=None, metavar="T.yaml",
                         help="excitation trajectory (default: the thesis Table 4.1 trajectory for the ER3A)")
    offline.add_argument("--periods", type=int, default=3,
                         help=f"excitation periods recorded, 1 to {MAX_PERIODS} (default: %(default)s)")
    offline.add_argument("--rate", type=float, default=None,
                         help=f"sample rate [Hz], at most {MAX_RATE:g} Hz (default: sim_robot's, "
                              f"config/sim_robot.yaml); the simulated recording holds at most {MAX_SAMPLES} samples")


def ros_namespace(text):
    """``text`` if it is a ROS namespace (tokens of letters, digits and _, not starting with a digit,
    separated by /), else argparse's error naming it."""
    if text.strip("/") and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*", text.strip("/")):
        raise argparse.ArgumentTypeError(f"{text!r} is not a ROS namespace (letters, digits, _ and /; "
                                         "a token does not start with a digit)")
    return text


def node_parameters(node):
    """The parameters ``node`` gets in the demo from config/<node>.yaml and config/demo.yaml (no --params-file)."""
    from robot_dynid.package_files import find_package_file
    from robot_dynid.yaml_files import parameter_file_node, read_yaml
    parameters = {}
    for name in (f"{node}.yaml", "demo.yaml"):
        sections = read_yaml(find_package_file("config", name), what="parameter file") or {}
        for key, section in sections.items():
            if parameter_file_node(key) == node:
                parameters.update(section.get("ros__parameters", {}))
    return parameters


def held_out_trajectory(robot):
    """A motion the identification never saw: a random rest-to-rest excitation (seed 7, 4 harmonics, 8 s)
    through 40 % of the joint ranges, unlike any plan or excitation file."""
    from robot_dynid.experiment.excitation import random_excitation
    return random_excitation(robot, harmonics=4, period=8.0, amplitude_fraction=0.4, seed=7)


def held_out_motion(robot):
    """(t (N,) [s], q, qd, qdd (N, n) [rad, rad/s, rad/s^2]) of :func:`held_out_trajectory` at HELD_OUT_RATE."""
    import numpy as np
    from robot_dynid.experiment.trajectories import time_grid
    trajectory = held_out_trajectory(robot)
    t = time_grid(float(np.max(trajectory.period)), dt=1.0 / HELD_OUT_RATE)
    return (t, *trajectory.evaluate(t))


def print_model(model, true_parameters):
    """The identified model (parameters with std, per-joint RMS/RSD) and its parameters against the truth."""
    from robot_dynid.reports.tables import format_model_summary, format_table
    print(format_model_summary(model))
    true_base = model.base.projection @ true_parameters
    print("\nidentified versus true base parameters:")
    print(format_table(("parameter", "identified", "std", "true", "error / std"), [
        (name, f"{value:.5g}", f"{std:.2g}", f"{true:.5g}", f"{(value - true) / std:+.2f}" if std > 0 else "-")
        for name, value, std, true in zip(model.base.names, model.values, model.std, true_base)]))


def print_feedforward_error(joint_names, predicted, expected, noise_std, true_parameters=None):
    """Per joint: RMS error and RSD of ``predicted`` (N, n) [N m] against ``expected`` (N, n) [N m], and the RMS
    error of ``true_parameters`` (N, n) [N m] (the true parameters' torques in the model's family) when given.
    Returns the RMS errors (n,) [N m] of ``predicted`` and of ``true_parameters`` (or None)."""
    import numpy as np
    from robot_dynid.estimation.metrics import rms_residual, rsd
    from robot_dynid.reports.tables import format_joint_metrics
    rms = rms_residual(predicted, expected)
    columns = {"RMS error [N m]": rms, "RSD [1]": rsd(predicted, expected), "RMS error / noise std": rms / noise_std}
    true_rms = None if true_parameters is None else rms_residual(true_parameters, expected)
    if true_rms is not None:
        columns["true parameters' RMS error [N m]"] = true_rms
    columns["RMS torque [N m]"] = np.sqrt(np.mean(expected**2, axis=0))
    print(format_joint_metrics(joint_names, columns))
    return rms, true_rms


def feedforward_summary(engine, robot, errors):
    """The --json document: engine, robot, joint names and the RMS feed-forward errors [N m]."""
    identified, true_parameters = errors
    return {"engine": engine, "robot": robot.name, "joint_names": list(robot.joint_names), "unit": "N m",
            "feedforward_error": {"identified": list(identified), "true_parameters": list(true_parameters)}}


def fresh(path):
    """``path``, after removing what a previous demo run left there."""
    if path.exists():
        shutil.rmtree(path)
    return path


def main(args):
    from robot_dynid.reports.json_text import dumps
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.hydraulic:
        if args.engine != "regressor" or args.json:
            raise DynIdError("--hydraulic takes neither --engine nor --json")
        from robot_dynid.cli.hydraulic import run_demo
        return run_demo(out, seed=0 if args.seed is None else args.seed)
    if args.drift:
        return run_drift_demo(args)
    if args.closed_loop:
        if args.offline or args.hydraulic:
            raise DynIdError("--closed-loop runs the ROS graph on MuJoCo; it takes neither --offline nor --hydraulic")
        args.engine = "mujoco"
    if args.engine == "mujoco":
        from robot_dynid.experiment.mujoco_engine import import_mujoco
        import_mujoco()      # before any work: one line saying how to install it
    if not args.json:
        return run(args, out)
    summary = {}
    with contextlib.redirect_stdout(sys.stderr):
        code = run(args, out, summary)
    if code == 0:
        print(dumps(summary))
    return code


def run_drift_demo(args):
    """``--drift``: the table on stdout (stderr with --json, the summary on stdout)."""
    from robot_dynid import validators
    from robot_dynid.reports.json_text import dumps
    from robot_dynid.cli.drift_demo import run_drift
    if args.engine != "regressor" or args.offline:
        raise DynIdError("--drift takes neither --engine mujoco nor --offline (it runs in-process anyway)")
    validators.in_range(args.drift_duration, "--drift-duration", DataError, "s", 60.0, 7200.0)
    noise = 0.05 if args.noise is None else validators.positive(args.noise, "--noise", DataError, "N m")
    seed = 0 if args.seed is None else args.seed
    if not args.json:
        run_drift(seed, noise, args.drift_duration)
        return 0
    with contextlib.redirect_stdout(sys.stderr):
        summary = run_drift(seed, noise, args.drift_duration)
    print(dumps(summary))
    return 0


def run(args, out, summary=None):
    """The ROS demo, or the offline one; ``summary`` (a dict) receives the --json document."""
    summary = {} if summary is None else summary
    if args.offline and (args.params_file or args.namespace):
        raise DynIdError("--params-file and --namespace configure the ROS demo's nodes; --offline runs none")
    if not args.offline:
        try:
            from robot_dynid.nodes import demo_graph
        except ImportError as error:
            if args.closed_loop:
                raise DynIdError(f"--closed-loop runs the ROS graph, and ROS 2 is not available here ({error})") \
                    from None
            if args.params_file or args.namespace:
                raise DynIdError(f"--params-file and --namespace configure the ROS demo's nodes, and ROS 2 is not "
                                 f"available here ({error}); leave them out to run the core-only demo") from None
            print(f"note: ROS 2 is not available here ({error}); running the core-only demo (--offline)\n")
        else:
            try:
                if args.closed_loop:
                    return run_closed_loop_graph(args, out, demo_graph.DemoGraph, summary)
                return run_graph(args, out, demo_graph.DemoGraph, summary)
            except demo_graph.INTERRUPTIONS:
                print(f"\ninterrupted; what was recorded is in {out / 'recording'}", file=sys.stderr)
                return 130
    return run_offline(args, out, summary)


def robot_file_of(args):
    """--robot, or the engine's default robot (None: the nodes' own default, the ER3A)."""
    from robot_dynid.package_files import find_package_file
    if args.robot:
        return str(args.robot)
    return str(find_package_file(*MUJOCO_ROBOT)) if args.engine == "mujoco" else None


def engine_parameters(engine):
    """What the demo sets for ``engine`` beyond the parameter files: {node: {parameter: value}}."""
    from robot_dynid.experiment.mujoco_engine import MUJOCO_MIN_SPEED, MUJOCO_REVERSAL_LEAD
    if engine != "mujoco":
        return {}
    return {"sim_robot": {"engine": "mujoco", "friction": MUJOCO_FRICTION},
            "identifier": {"friction": MUJOCO_FRICTION, "reversal_lead": MUJOCO_REVERSAL_LEAD, "armature": True,
                           "min_speed": MUJOCO_MIN_SPEED}}


def identify_options(engine):
    """The identify options that match the demo's identification of ``engine``."""
    from robot_dynid.experiment.mujoco_engine import MUJOCO_MIN_SPEED
    return f" --friction {MUJOCO_FRICTION} --armature --min-speed {MUJOCO_MIN_SPEED:g}" if engine == "mujoco" else ""


@dataclasses.dataclass(frozen=True)
class GraphIdentification:
    """What the ROS demo identified: the model and its file, the bag, the simulator (true parameters), the robot
    file and the sim_robot parameters it ran with, and the held-out motion with the engine's torques."""

    model: DynamicModel
    model_path: pathlib.Path
    bag_path: pathlib.Path
    simulator: object
    robot_file: str
    sim_parameters: dict
    held_out: tuple


def run_graph(args, out, graph_class, summary):
    identified = identify_in_graph(args, out, graph_class, summary)
    write_report(out, identified.model, identified.bag_path, identified.held_out, "4.")
    return 0


def run_closed_loop_graph(args, out, graph_class, summary):
    """``--closed-loop``: the ROS demo's identification, the closed-loop runs, the report."""
    from robot_dynid.cli.closed_loop_demo import check_duration, run_closed_loop
    duration = check_duration(args.closed_loop_duration)
    identified = identify_in_graph(args, out, graph_class, summary)
    summary["closed_loop"] = run_closed_loop(identified, out, duration, args.namespace)
    write_report(out, identified.model, identified.bag_path, identified.held_out, "6.")
    return 0


def identify_in_graph(args, out, graph_class, summary) -> GraphIdentification:
    """The ROS demo up to its feed-forward errors (steps 1 to 3): play the plan, identify, check the served model on
    the held-out trajectory; ``summary`` receives the --json document."""
    import numpy as np
    import yaml
    from robot_dynid.model.dynamic_model import DynamicModel
    from robot_dynid.package_files import find_package_file
    bag_path, model_path = fresh(out / "recording"), out / "model.yaml"
    sim = {key: value for key, value in (("seed", args.seed), ("noise_std", args.noise)) if value is not None}
    robot_file = robot_file_of(args)
    robot = {"robot_file": robot_file} if robot_file else {}
    engine = engine_parameters(args.engine)
    run_file = out / "demo_parameters.yaml"
    run_file.write_text(yaml.safe_dump({
        "/**/sim_robot": {"ros__parameters": {**engine.get("sim_robot", {}), **sim, **robot}},   # /**/: any namespace
        "/**/experiment_runner": {"ros__parameters": dict(robot)},
        "/**/recorder": {"ros__parameters": {"bag_path": str(bag_path)}},
        "/**/identifier": {"ros__parameters": {**engine.get("identifier", {}), "model_file": str(model_path), **robot}},
    }, sort_keys=False))
    files = [find_package_file("config", "demo.yaml"), *args.params_file, run_file]
    with graph_class(files, namespace=args.namespace) as graph:
        simulator, robot_file = graph.simulator, graph.robot_file
        sim_parameters = {name: graph.nodes["sim_robot"].get_parameter(name).value
                          for name in ("engine", "friction", "seed", "noise_std", "timestep")}
        runner = graph.nodes["experiment_runner"]
        print(f"1. started sim_robot, experiment_runner, recorder, identifier and feedforward in one process "
              f"(parameters: config/<node>.yaml, {', '.join(map(str, files))}); playing a "
              f"{runner.schedule.duration:.0f} s plan of {runner.schedule.plan.cycles} cycle(s) on the "
              f"{simulator.regressor.robot.name} simulated by the {args.engine} engine (torque noise "
              f"{float(np.max(simulator.noise_std)):g} N m), recording to {bag_path}", flush=True)
        graph.run_plan(progress=lambda text: print(text, flush=True))
        message = graph.identified_model()
        model = DynamicModel.from_yaml(message.artifact_yaml, source="IdentifiedModel.artifact_yaml")
        print(f"2. the plan is done; the identifier published model version {message.version} "
              f"(written to {model_path})\n")
        print_model(model, simulator.parameters)
        _, q, qd, qdd = held_out_motion(model.robot)
        predicted = graph.compute_feedforward(model.joint_names, q, qd, qdd, message.version)
    expected = simulator.torques(q, qd, qdd, noise=False)
    print(f"\n3. feed-forward error on a held-out trajectory ({len(q)} points from the ComputeFeedforward service) "
          f"against the {args.engine} engine's noise-free torques, and that of the true parameters in the model's "
          "friction model family (model mismatch; the rest is identification error):")
    errors = print_feedforward_error(model.joint_names, predicted, expected, float(np.max(simulator.noise_std)),
                                     simulator.model_torques(q, qd, qdd))
    summary.update(feedforward_summary(args.engine, model.robot, errors))
    print(f"\nbag {bag_path} (stage markers on /experiment_stage) and model {model_path} stay on disk; offline:\n"
          f"  robot-dynid identify --robot {robot_file} --data {bag_path} --stage excitation"
          f"{identify_options(args.engine)} --out {out / 'model_offline.yaml'}")
    return GraphIdentification(model, model_path, bag_path, simulator, robot_file, sim_parameters,
                               (q, qd, qdd, expected))


def record_bag(path, robot, t, q, qd, tau, period):
    import numpy as np
    from robot_dynid.recordings.bag_io import BagWriter
    with BagWriter(fresh(path)) as bag:
        for cycle in range(int(round(t[-1] / period + 0.5))):
            start = cycle * period
            bag.write_stage(int(start * 1e9), "excitation", cycle, True, experiment_id="demo")
            inside = np.flatnonzero((t >= start) & (t < start + period))
            for k in inside:
                bag.write_joint_state(int(round(t[k] * 1e9)), robot.joint_names, q[k], qd[k], tau[k])
            bag.write_stage(int(round(t[inside[-1]] * 1e9)), "excitation", cycle, False, experiment_id="demo")
    return path


def follow_excitation(arm, excitation, duration, rate):
    """The arm's samples along ``excitation`` for ``duration`` [s] at ``rate`` [Hz] (t, q, qd, qdd, measured
    tau): its positions, velocities and accelerations every 10 ms as quintic points from t = 0."""
    import numpy as np
    from robot_dynid.experiment.trajectories import time_grid
    points = time_grid(duration, dt=0.01)
    q, qd, qdd = excitation.evaluate(points % float(np.max(excitation.period)))
    arm.follower.command(arm.follower.joint_names, points, q, qd, qdd, start_time=0.0)
    samples = arm.advance(duration - 0.5 / rate)
    return samples.time, samples.q, samples.qd, samples.qdd, samples.measured_torque


def run_offline(args, out, summary):
    import numpy as np
    from robot_dynid import validators
    from robot_dynid.estimation.identification import IdentificationSettings, identify
    from robot_dynid.experiment.engines import simulated_arm, simulated_robot
    from robot_dynid.experiment.mujoco_engine import MUJOCO_MIN_SPEED, MUJOCO_REVERSAL_LEAD
    from robot_dynid.experiment.trajectories import load_trajectory, time_grid
    from robot_dynid.model.friction import friction_model
    from robot_dynid.model.robot_loader import load_robot
    from robot_dynid.package_files import find_package_file
    from robot_dynid.recordings.csv_io import write_csv
    from robot_dynid.recordings.pipeline import read_recording
    from robot_dynid.recordings.recording import Recording
    settings = node_parameters("sim_robot")
    seed = settings["seed"] if args.seed is None else args.seed
    noise = settings["noise_std"] if args.noise is None else args.noise
    rate = settings["rate"] if args.rate is None else args.rate
    validators.count(args.periods, "--periods", DataError, maximum=MAX_PERIODS)
    validators.in_range(rate, "--rate", DataError, "Hz", 0.0, MAX_RATE, allow_minimum=False)
    robot_file = robot_file_of(args) or find_package_file("config", "robots", "er3a.yaml")
    robot = load_robot(robot_file)
    excitation = load_trajectory(args.excitation or find_package_file("config", "trajectories", "er3a_table_4_1.yaml"))
    period = float(np.max(excitation.period))
    samples = args.periods * period * rate
    if samples > MAX_SAMPLES:
        raise DataError(f"--periods {args.periods} of {period:g} s at {rate:g} Hz are {samples:.4g} samples, more than "
                        f"the demo's {MAX_SAMPLES}: fewer periods or a lower --rate")
    mujoco = args.engine == "mujoco"
    friction = friction_model(MUJOCO_FRICTION, reversal_lead=MUJOCO_REVERSAL_LEAD) if mujoco \
        else friction_model(settings["friction"])
    simulator = simulated_robot(args.engine, robot, friction, seed, np.full(robot.n_joints, noise))
    truth = simulator.parameters

    if mujoco:
        arm = simulated_arm(simulator, rate, seed=seed, max_lag=args.periods * period + 1.0)
        t, q, qd, qdd, tau = follow_excitation(arm, excitation, args.periods * period, rate)
        how = f"MuJoCo integrated it in steps of {arm.timestep:g} s under computed-torque tracking"
    else:
        t = time_grid(args.periods * period, dt=1.0 / rate)
        q, qd, qdd = excitation.evaluate(t % period)
        tau = simulator.torques(q, qd, qdd, rng=seed)
        how = "torques from the regressor"
    print(f"1. simulated {robot.name} along the excitation: {args.periods} periods of {period:g} s at "
          f"{rate:g} Hz ({len(t)} samples, {how}), torque noise {noise:g} N m")

    bag_path = record_bag(out / "recording", robot, t, q, qd, tau, period)
    write_csv(out / "recording.csv", Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau, source="demo"))
    print(f"2. recorded {bag_path} (MCAP: /joint_states, /experiment_stage) and {out / 'recording.csv'}")

    recording = read_recording(bag_path, joint_names=robot.joint_names)
    model = identify(recording.select(stage="excitation"), robot,
                     IdentificationSettings(friction=friction, armature=mujoco,
                                            min_speed=MUJOCO_MIN_SPEED if mujoco else 0.0),
                     provenance={"data_source": str(bag_path), "segments": "all excitation cycles"})
    model_path = model.save(out / "model.yaml")
    print(f"3. identified from the bag (accelerations by Savitzky-Golay differentiation); model: {model_path}\n")
    print_model(model, truth)

    _, qv, qdv, qddv = held_out_motion(robot)
    expected = simulator.torques(qv, qdv, qddv, noise=False)
    print(f"\n4. feed-forward error on a held-out trajectory against the {args.engine} engine's noise-free torques, "
          "and that of the true parameters in the model's friction model family (model mismatch; the rest is "
          "identification error):")
    errors = print_feedforward_error(robot.joint_names, model.torque(qv, qdv, qddv), expected, noise,
                                     simulator.model_torques(qv, qdv, qddv))
    summary.update(feedforward_summary(args.engine, robot, errors))
    print(f"\noffline: robot-dynid identify --robot {robot_file} --data {bag_path}{identify_options(args.engine)} "
          "--out model.yaml")
    write_report(out, model, bag_path, (qv, qdv, qddv, expected), "5.")
    return 0


def write_report(out, model, bag_path, held_out, step):
    """``robot-dynid report`` of the recorded bag with ``model`` into out/report, the held-out motion
    ``(q, qd, qdd, noise-free tau)`` as validation data; prints the page's path (a note without matplotlib)."""
    import numpy as np
    from robot_dynid.recordings.data_files import stage_table
    from robot_dynid.recordings.pipeline import read_recording
    from robot_dynid.recordings.recording import Recording
    from robot_dynid.reports.report import make_report
    started = time.monotonic()
    robot = model.robot
    recording = read_recording(bag_path, joint_names=robot.joint_names, robot=robot)
    table = stage_table(recording, bag_path, robot.limit_arrays().velocity)
    t = np.arange(len(held_out[0])) / HELD_OUT_RATE
    validation = Recording.from_arrays(robot.joint_names, t, *held_out, source="held-out trajectory (noise-free)")
    try:
        make_report(out / "report", robot, [recording], [table.stages], model=model, validation=[validation],
                    sources=[str(bag_path)])
    except DynIdError as error:
        print(f"\nno report: {error}")
        return None
    print(f"\n{step} report (torque fits, parameters per cycle, friction stages; "
          f"{time.monotonic() - started:.0f} s): {out / 'report' / 'index.html'}")
    return out / "report" / "index.html"
