"""robot-dynid hydraulic identify: each cylinder's stiffness and Stribeck friction from recorded
displacements and chamber pressures (SI), written as a results file and a Stribeck-curve CSV."""
from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

from robot_dynid.errors import DataError

__all__ = ["NAME", "HELP", "CURVE_POINTS", "add_arguments", "stribeck_curves", "identify_main", "format_cylinder_table",
           "main", "run_demo"]

if TYPE_CHECKING:
    import numpy as np

NAME = "hydraulic"
HELP = "hydraulic cylinders: identify stiffness K [N/m] and Stribeck friction fc [N], fv [N s/m], fs [N (s/m)^(1/3)]"
CURVE_POINTS = 201


def add_arguments(parser):
    from robot_dynid.cli.options import add_cycles_argument, add_option_arguments, add_stage_argument, output_file
    from robot_dynid.estimation.estimators import METHOD_NAMES, estimator
    from robot_dynid.recordings.bag_layout import DEFAULT_HYDRAULIC_TOPIC, DEFAULT_STAGE_TOPIC
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    identify = actions.add_parser("identify", help=HELP, description=HELP)
    identify.add_argument("--config", required=True, metavar="C.yaml",
                          help="cylinders: name, piston_mass [kg], damping [N s/m], area_a, area_b [m^2], optional "
                               "load [N] and attachment (see docs/hydraulic_arms.md)")
    identify.add_argument("--data", required=True, metavar="FILE",
                          help="CSV (time [s], x.<name> [m], xd.<name> [m/s] optional, pa.<name>, pb.<name> [Pa], "
                               "load.<name> [N] optional, stage and cycle optional) or rosbag2 directory with "
                               "HydraulicCylinderState messages")
    identify.add_argument("--topic", default=DEFAULT_HYDRAULIC_TOPIC, help="bag only (default: %(default)s)")
    add_stage_argument(identify)
    add_cycles_argument(identify)
    identify.add_argument("--stage-topic", default=DEFAULT_STAGE_TOPIC,
                          help="bag only: robot_dynid/msg/ExperimentStage markers (default: %(default)s)")
    identify.add_argument("--method", choices=METHOD_NAMES, default="rls",
                          help="; ".join(f"{name}: {estimator(name).summary}" for name in METHOD_NAMES)
                          + " (default: %(default)s)")
    add_option_arguments(identify, ("forgetting",))
    identify.add_argument("--json", action="store_true", help="print JSON instead of a table")
    identify.add_argument("--out", required=True, type=output_file, metavar="cylinders.yaml",
                          help="results file (YAML, SI)")
    identify.add_argument("--curve", type=output_file, metavar="FILE.csv",
                          help="Stribeck curves: velocity [m/s] and friction.<name> [N] (default: next to --out, "
                               "<out>_stribeck.csv)")


def stribeck_curves(results, samples) -> tuple[list[str], np.ndarray]:
    """Friction force [N] against velocity [m/s] of every cylinder, over +- the largest recorded speed."""
    import numpy as np
    top = max(float(np.max(np.abs(sample.xd))) for sample in samples)
    velocity = np.linspace(-top, top, CURVE_POINTS)
    header = ["velocity"] + [f"friction.{result.name}" for result in results]
    return header, np.column_stack([velocity] + [result.parameters.friction(velocity) for result in results])


def identify_main(args) -> int:
    from robot_dynid.cli.options import progress
    from robot_dynid.hydraulics.cylinder import identify_cylinder
    from robot_dynid.hydraulics.cylinder_results import (CylinderResult, load_cylinder_config, results_to_dict,
                                                         save_cylinder_results)
    from robot_dynid.recordings.csv_io import write_columns
    from robot_dynid.recordings.cylinder_data import read_cylinder_data
    from robot_dynid.reports.json_text import dumps
    configs = load_cylinder_config(args.config)
    samples = read_cylinder_data(args.data, [config.name for config in configs], topic=args.topic, stage=args.stage,
                                 cycles=args.cycles, stage_topic=args.stage_topic)
    results = []
    for config, sample in progress(list(zip(configs, samples)), "identifying cylinders"):
        load = sample.load if sample.load is not None else (config.load or 0.0)
        identification = identify_cylinder(config.cylinder, sample.x, sample.xd, sample.xdd, sample.p_a,
                                           sample.p_b, load=load, forgetting=args.forgetting, method=args.method)
        results.append(CylinderResult.from_identification(config, identification, sample.sample_interval,
                                                          forgetting=args.forgetting))
    curve = pathlib.Path(args.curve) if args.curve else \
        pathlib.Path(args.out).with_name(pathlib.Path(args.out).stem + "_stribeck.csv")
    if curve.is_dir():
        raise DataError(f"{curve} is a directory; give the Stribeck curve a file name with --curve")
    provenance = {"data": str(args.data), "config": str(args.config)}
    if args.stage or args.cycles:
        provenance["segments"] = {"stage": args.stage or "all", "cycles": args.cycles or "all"}
    save_cylinder_results(args.out, results, provenance)
    write_columns(curve, *stribeck_curves(results, samples))
    if args.json:
        print(dumps({**results_to_dict(results, provenance), "results_file": str(args.out),
                     "curve_file": str(curve)}))
        return 0
    print(format_cylinder_table(results))
    print(f"results written to {args.out}, Stribeck curves to {curve}")
    return 0


def format_cylinder_table(results) -> str:
    """The identified cylinders as a text table: estimate +- std per parameter, residual, convergence."""
    from robot_dynid.hydraulics.cylinder import HYDRAULIC_PARAMETER_UNITS
    from robot_dynid.reports.tables import format_table
    header = ("cylinder", "method", *(f"{name} [{unit}]" for name, unit in
                                      zip(("K", "fc", "fv", "fs"), HYDRAULIC_PARAMETER_UNITS)),
              "residual RMS [N]", "converged after")
    rows = [(result.name, result.method,
             *(f"{value:.5g} +- {std:.2g}" for value, std in zip(result.parameters.as_array(), result.std)),
             f"{result.residual_rms:.4g}",
             "-" if result.convergence_samples is None else
             f"{result.convergence_samples} samples ({result.convergence_time:.3g} s)")
            for result in results]
    return format_table(header, rows)


def main(args):
    return identify_main(args)


def run_demo(out, seed: int = 0) -> int:
    """``robot-dynid demo --hydraulic``: simulate the curtain-wall arm's six cylinders on a bench and the arm
    along an excitation, then run ``hydraulic identify`` and ``identify --cylinders`` on the files written
    into ``out``, and compare with the truth."""
    import numpy as np
    from robot_dynid.recordings.csv_io import write_columns
    import yaml

    from robot_dynid.cli import main as cli_main
    from robot_dynid.experiment.excitation import random_excitation
    from robot_dynid.experiment.simulation import plausible_parameters
    from robot_dynid.experiment.trajectories import time_grid
    from robot_dynid.hydraulics import simulation
    from robot_dynid.hydraulics.cylinder_results import config_to_dict, load_cylinder_results
    from robot_dynid.model.friction import friction_model
    from robot_dynid.model.regressor import Regressor
    from robot_dynid.model.robot_loader import load_robot
    from robot_dynid.package_files import find_package_file
    from robot_dynid.recordings.csv_io import write_csv
    from robot_dynid.recordings.recording import Recording

    robot_file = find_package_file("config", "robots", "curtain_wall_arm.yaml")
    robot = load_robot(robot_file)
    configs = simulation.curtain_wall_cylinders(robot)
    truth = simulation.table_v_parameters()
    config_path = out / "cylinder_config.yaml"
    config_path.write_text(yaml.safe_dump({"cylinders": [{"name": config.name, **config_to_dict(config)}
                                                         for config in configs]}, sort_keys=False))
    runs = simulation.simulate_bench(configs, truth, seed=seed)
    bench_path = out / "cylinder_bench.csv"
    header = ["time"] + [f"{field}.{run.name}" for run in runs for field in ("x", "pa", "pb", "load")]
    write_columns(bench_path, header, np.column_stack(
        [runs[0].time] + [values for run in runs for values in (run.x, run.p_a, run.p_b, run.load)]))
    print(f"1. simulated the six cylinders of {robot.name} on a bench: {runs[0].time[-1]:.0f} s at 50 Hz, "
          f"pressure noise {simulation.PRESSURE_NOISE:g} Pa per chamber -> {bench_path}\n")
    results_path = out / "cylinders.yaml"
    status = cli_main(["hydraulic", "identify", "--config", str(config_path), "--data", str(bench_path),
                       "--out", str(results_path)])
    if status:
        return status
    print("\n   identified against true (Table V in SI), error in standard deviations:")
    for result, true in zip(load_cylinder_results(results_path), truth):
        errors = (result.parameters.as_array() - true.as_array()) / result.std
        cells = [f"{name} {value:+.2f}" for name, value in zip(("K", "fc", "fv", "fs"), errors)]
        print(f"   {result.name}: " + ", ".join(cells))

    regressor = Regressor(robot, friction_model("none"))
    theta = plausible_parameters(robot, seed)
    arm_files = []
    for label, trajectory, duration in (
            ("arm_excitation", random_excitation(robot, harmonics=5, period=20.0, amplitude_fraction=0.8,
                                                 seed=seed + 1), 40.0),
            ("arm_held_out", random_excitation(robot, harmonics=4, period=10.0, amplitude_fraction=0.5,
                                               seed=seed + 7), 10.0)):
        t = time_grid(duration, dt=0.02)
        period = float(np.max(trajectory.period))
        q, qd, qdd = trajectory.evaluate(t % period)
        rigid = np.einsum("kjp,p->kj", regressor.compute(q, qd, qdd), theta)
        tau = simulation.hydraulic_torques(robot, configs, truth, q, qd, qdd, rigid, seed=seed + len(arm_files))
        path = out / f"{label}.csv"
        write_csv(path, Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau, source=label))
        arm_files.append(path)
    print(f"\n2. simulated the arm along an excitation ({arm_files[0]}) and a held-out trajectory ({arm_files[1]}): "
          "tau = the cylinders' hydraulic joint torques sum_c r_c(q) (p_a A_a - p_b A_b) [N m]\n")
    status = cli_main(["identify", "--robot", str(robot_file), "--data", str(arm_files[0]), "--friction", "none",
                       "--cylinders", str(results_path), "--validate", str(arm_files[1]),
                       "--out", str(out / "model.yaml")])
    print(f"\noffline: robot-dynid hydraulic identify --config {config_path} --data {bench_path} --out cylinders.yaml"
          f"\n         robot-dynid identify --robot {robot_file} --data {arm_files[0]} --friction none "
          f"--cylinders cylinders.yaml --out model.yaml")
    return status
