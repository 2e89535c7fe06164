"""robot-dynid hydraulic identify: each cylinder's stiffness and Stribeck friction from recorded
displacements and chamber pressures (SI), written as a results file and a Stribeck-curve CSV."""
import json
import pathlib

import numpy as np

from robot_dynid.cli.options import output_file
from robot_dynid.errors import DataError
from robot_dynid.hydraulics.cylinder import CYLINDER_METHODS, HYDRAULIC_PARAMETER_UNITS, identify_cylinder
from robot_dynid.hydraulics.cylinder_results import (CylinderResult, load_cylinder_config, results_to_dict,
                                                     save_cylinder_results)
from robot_dynid.recordings.bag_io import DEFAULT_HYDRAULIC_TOPIC
from robot_dynid.recordings.csv_io import write_columns
from robot_dynid.recordings.cylinder_data import read_cylinder_data

NAME = "hydraulic"
HELP = "hydraulic cylinders: identify stiffness K [N/m] and Stribeck friction fc [N], fv [N s/m], fs [N (s/m)^(1/3)]"
CURVE_POINTS = 201


def forgetting_factor(text):
    """argparse type of a forgetting factor in (0, 1]."""
    import argparse
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a forgetting factor in (0, 1], got {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a forgetting factor in (0, 1], got {text!r}")
    return value


def add_arguments(parser):
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    identify = actions.add_parser("identify", help=HELP, description=HELP)
    identify.add_argument("--config", required=True, metavar="C.yaml",
                          help="cylinders: name, piston_mass [kg], damping [N s/m], area_a, area_b [m^2], optional "
                               "load [N] and attachment (see README, Hydraulic arms)")
    identify.add_argument("--data", required=True, metavar="FILE",
                          help="CSV (time [s], x.<name> [m], xd.<name> [m/s] optional, pa.<name>, pb.<name> [Pa], "
                               "load.<name> [N] optional) or rosbag2 directory with HydraulicCylinderState messages")
    identify.add_argument("--topic", default=DEFAULT_HYDRAULIC_TOPIC, help="bag only (default: %(default)s)")
    identify.add_argument("--method", choices=CYLINDER_METHODS, default="rls",
                          help="rls: recursive least squares, sample by sample; ls: batch least squares "
                               "(default: %(default)s)")
    identify.add_argument("--forgetting", type=forgetting_factor, default=1.0, metavar="MU",
                          help="RLS forgetting factor mu in (0, 1]; memory about 1/(1 - mu) samples "
                               "(default: %(default)s)")
    identify.add_argument("--json", action="store_true", help="print JSON instead of a table")
    identify.add_argument("--out", required=True, type=output_file, metavar="cylinders.yaml",
                          help="results file (YAML, SI)")
    identify.add_argument("--curve", type=output_file, metavar="FILE.csv",
                          help="Stribeck curves: velocity [m/s] and friction.<name> [N] (default: next to --out, "
                               "<out>_stribeck.csv)")


def stribeck_curves(results, samples) -> tuple[list[str], np.ndarray]:
    """Friction force [N] against velocity [m/s] of every cylinder, over +- the largest recorded speed."""
    top = max(float(np.max(np.abs(sample.xd))) for sample in samples)
    velocity = np.linspace(-top, top, CURVE_POINTS)
    header = ["velocity"] + [f"friction.{result.name}" for result in results]
    return header, np.column_stack([velocity] + [result.parameters.friction(velocity) for result in results])


def identify_main(args) -> int:
    configs = load_cylinder_config(args.config)
    samples = read_cylinder_data(args.data, [config.name for config in configs], topic=args.topic)
    results = []
    for config, sample in zip(configs, samples):
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
    save_cylinder_results(args.out, results, provenance)
    write_columns(curve, *stribeck_curves(results, samples))
    if args.json:
        print(json.dumps({**results_to_dict(results, provenance), "results_file": str(args.out),
                          "curve_file": str(curve)}, indent=2))
        return 0
    print(format_cylinder_table(results))
    print(f"results written to {args.out}, Stribeck curves to {curve}")
    return 0


def format_cylinder_table(results) -> str:
    """The identified cylinders as a text table: estimate +- std per parameter, residual, convergence."""
    names = ("K", "fc", "fv", "fs")
    lines = ["cylinder  method  " + "  ".join(f"{name} [{unit}]".rjust(24) for name, unit in
                                              zip(names, HYDRAULIC_PARAMETER_UNITS))
             + "  residual RMS [N]  converged after"]
    for result in results:
        cells = "  ".join(f"{value:>12.5g} +- {std:<8.2g}" for value, std in
                          zip(result.parameters.as_array(), result.std))
        converged = "-" if result.convergence_samples is None else \
            f"{result.convergence_samples} samples ({result.convergence_time:.3g} s)"
        lines.append(f"{result.name:<8}  {result.method:<6}  {cells}  {result.residual_rms:>16.4g}  {converged}")
    return "\n".join(lines)


def main(args):
    return identify_main(args)
