"""robot-dynid payload: identify a tool or load with the arm's model fixed; attach it to a model or detach it."""
import pathlib

from robot_dynid.errors import DataError

__all__ = ["NAME", "HELP", "add_arguments", "main"]

NAME = "payload"
HELP = ("identify a payload (tool, gripper, part: mass [kg], centre of mass [m], inertia [kg m^2]) with the arm's "
        "model fixed, attach it to a model or detach it")


def add_arguments(parser):
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    _add_identify_parser(actions)
    _add_attach_parser(actions)
    _add_detach_parser(actions)


def _add_identify_parser(actions):
    """The identify action: the recordings, the payload's frame and known values, the inertia's prior, the output."""
    from robot_dynid.cli.options import (add_cycles_argument, add_data_arguments, add_stage_argument,
                                         add_torque_check_argument, number_in, output_file, positive_number)
    from robot_dynid.model.payload_defaults import (DEFAULT_DENSITY, DEFAULT_MAX_COM_DISTANCE, IMPLAUSIBLE_MASS_FACTOR,
                                                    MAX_DENSITY, MAX_EXTENT, MAX_MASS, MIN_DENSITY, MIN_MASS,
                                                    PRIOR_STD_FRACTION)
    identify = actions.add_parser(
        "identify", help="estimate a payload's ten inertial parameters from the residual of the arm's model",
        description="With the arm's model fixed, fit the payload's mass, centre of mass and inertia (ten "
                    "parameters, or nine with --mass) to the torques the arm's model does not explain, physically "
                    "consistent (mass > 0, inertia about the centre of mass positive semidefinite, triangle "
                    "inequalities; needs cvxpy), with standard deviations robust to correlated residuals and 95 % "
                    "intervals (docs/payloads.md). The inertia has a prior (the solid body the mass and centre of mass "
                    "imply, or --inertia), whose share is stated; values the data do not determine otherwise are "
                    "written as null and named, never filled in. With --unloaded (the same motion recorded without "
                    "the load) the fit is differential: the arm model's error cancels. About a minute of wrist motion "
                    "(robot-dynid excitation optimize --payload) is enough.")
    identify.add_argument("--model", required=True, metavar="arm.yaml",
                          help="the arm's model artifact (a payload it carries is left out)")
    add_data_arguments(identify, several=True)
    add_torque_check_argument(identify)
    identify.add_argument("--frame", default=None, metavar="FRAME",
                          help="frame of the payload, fixed to the last link: its link frame (default: the child link "
                               "of the last joint) or a URDF link fixed below it such as tool0")
    identify.add_argument("--mass", type=number_in("kg", MIN_MASS, MAX_MASS), default=None, metavar="KG",
                          help=f"known mass [kg], in [{MIN_MASS:g}, {MAX_MASS:g}]: estimate only the centre of mass "
                               "and inertia")
    add_stage_argument(identify)
    add_cycles_argument(identify)
    identify.add_argument("--unloaded", action="append", metavar="FILE", default=[],
                          help="the same motion recorded without the load, one per --data file in their order: the "
                               "arm model's residual on it, aligned in time by the motion, is subtracted (differential "
                               "identification); motions that differ are refused (read like --data, stages as --stage)")
    identify.add_argument("--inertia", type=number_in("kg m^2", -MAX_MASS * MAX_EXTENT**2, MAX_MASS * MAX_EXTENT**2),
                          nargs=6, default=None,
                          metavar=("IXX", "IXY", "IXZ", "IYY", "IYZ", "IZZ"),
                          help="prior of the inertia about the centre of mass [kg m^2] (CAD values) instead of the "
                               "solid body's; its std is "
                               f"{PRIOR_STD_FRACTION:g} of its largest principal moment")
    identify.add_argument("--density", type=number_in("kg/m^3", MIN_DENSITY, MAX_DENSITY), default=DEFAULT_DENSITY,
                          metavar="KG_PER_M3",
                          help="density of the solid body (a cylinder from the frame through the centre of mass, or a "
                               "sphere) whose inertia is the prior [kg/m^3] (default: %(default)s)")
    identify.add_argument("--no-inertia-prior", action="store_true",
                          help="no prior on the inertia: what the data do not determine is written as null")
    identify.add_argument("--holdout", action="append", metavar="FILE", default=[],
                          help="report each joint's RMS torque error without and with the payload on this recording, "
                               "not fitted on, and warn naming the joints the payload makes worse (repeatable; read "
                               "like --data, all of it)")
    identify.add_argument("--max-com-distance", type=positive_number("a distance > 0 [m]"),
                          default=DEFAULT_MAX_COM_DISTANCE, metavar="M",
                          help="a centre of mass farther than this from the frame [m] is reported as implausible, as "
                               f"is a mass above {IMPLAUSIBLE_MASS_FACTOR:g} times the robot's rated_payload "
                               "(default: %(default)s m)")
    identify.add_argument("--json", action="store_true", help="print the payload file's content as JSON")
    identify.add_argument("--out", required=True, type=output_file, metavar="payload.yaml",
                          help="payload file to write (checked before the work starts)")
    identify.set_defaults(_action=_identify)


def _add_attach_parser(actions):
    """The attach action: a model and a payload file in, the model with the payload out."""
    from robot_dynid.cli.options import output_file, positive_number
    from robot_dynid.model.payload_defaults import DEFAULT_MAX_COM_DISTANCE
    attach = actions.add_parser(
        "attach", help="a model artifact with a payload attached (replacing any it has)",
        description="Write the model with the payload of a payload file (identified, or written by hand: frame, "
                    "mass [kg], com [m], inertia [kg m^2] about the centre of mass) attached; predict, validate, "
                    "export-urdf and the feedforward node then include it. A payload that is not physically "
                    "consistent, not finite, at a frame the robot does not have, or holds undetermined values "
                    "is refused.")
    attach.add_argument("--model", required=True, metavar="arm.yaml", help="model artifact")
    attach.add_argument("--payload", required=True, metavar="payload.yaml", help="payload file")
    attach.add_argument("--max-com-distance", type=positive_number("a distance > 0 [m]"),
                        default=DEFAULT_MAX_COM_DISTANCE, metavar="M",
                        help="warn when the centre of mass is farther than this from the frame [m] (default: "
                             "%(default)s m)")
    attach.add_argument("--out", required=True, type=output_file, metavar="arm_tool.yaml", help="model file to write")
    attach.set_defaults(_action=_attach)


def _add_detach_parser(actions):
    """The detach action: a model in, the model without its payload out."""
    from robot_dynid.cli.options import output_file
    detach = actions.add_parser("detach", help="a model artifact without its payload",
                                description="Write the model without its payload (the arm alone).")
    detach.add_argument("--model", required=True, metavar="arm_tool.yaml", help="model artifact")
    detach.add_argument("--out", required=True, type=output_file, metavar="arm.yaml", help="model file to write")
    detach.set_defaults(_action=_detach)


def main(args):
    return args._action(args)


def _recordings(args, paths, robot, select):
    from robot_dynid.cli.options import progress, read_data
    recordings = []
    for path in progress(paths, "reading recordings"):
        recording = read_data(args, robot, path, stage=args.stage if select else None,
                              cycles=args.cycles if select else None).selection.recording
        if recording.n_samples == 0:
            raise DataError(f"{path}: no samples left" + (" in the selected stages and cycles" if select else ""))
        recordings.append(recording)
    return recordings


def _identify(args):
    import yaml
    from robot_dynid.estimation.payload import (FIELD_NAMES, PayloadSettings, differential_recording,
                                                holdout_residuals, payload_accumulator, solve_payload)
    from robot_dynid.model.dynamic_model import DynamicModel
    from robot_dynid.reports.json_text import dumps
    from robot_dynid.reports.tables import format_table
    from robot_dynid.yaml_files import plain_data
    arm = DynamicModel.load(args.model)
    if args.unloaded and len(args.unloaded) != len(args.data):
        raise DataError(f"--unloaded: give one unloaded recording per --data file ({len(args.data)}), in their order; "
                        f"got {len(args.unloaded)}")
    prior = None if args.no_inertia_prior else (tuple(args.inertia) if args.inertia is not None else "solid")
    settings = PayloadSettings(frame=args.frame, mass=args.mass, max_com_distance=args.max_com_distance,
                               inertia_prior=prior, density=args.density)
    loaded = _recordings(args, args.data, arm.robot, select=True)
    unloaded = _recordings(args, args.unloaded, arm.robot, select=True) if args.unloaded else [None] * len(loaded)
    accumulator, alignments = None, []
    for recording, without in zip(loaded, unloaded):
        if without is not None:
            recording, alignment = differential_recording(arm, recording, without)
            alignments.append(alignment)
        accumulator = payload_accumulator(arm, recording, settings.frame, settings.chunk_size, accumulator,
                                          check_torques=args.check_torque_scale)
    differential = None if not alignments else (alignments[0] if len(alignments) == 1 else {"runs": alignments})
    estimate = solve_payload(accumulator, arm.robot, settings, differential=differential)
    holdout = None
    if args.holdout:
        holdout = holdout_residuals(arm, estimate.payload, _recordings(args, args.holdout, arm.robot, select=False),
                                    check_torques=args.check_torque_scale)
    provenance = {"model": str(args.model), "data": [str(path) for path in args.data]}
    if args.unloaded:
        provenance["unloaded"] = [str(path) for path in args.unloaded]
    data = plain_data(estimate.to_file_dict(arm.robot.name, holdout, provenance))
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("# robot_dynid payload (robot-dynid payload identify; docs/payloads.md)\n"
                   + yaml.safe_dump(data, sort_keys=False, width=1000), encoding="utf-8")
    if args.json:
        print(dumps(data))
        return 0
    how = "differential (minus the unloaded run)" if alignments else "the arm's residual"
    print(f"payload at {estimate.frame} of robot {arm.robot.name!r} from {estimate.n_samples} samples of {how} "
          f"({'mass given' if estimate.known_mass else 'ten parameters'}, "
          f"{'physically consistent' if estimate.consistent else 'least squares'}; condition number "
          f"{estimate.condition_number:.4g}):")
    uncertainty = data["uncertainty"]
    print(f"std: {uncertainty['description']}; 95 % interval = value +- {uncertainty['interval_quantile']:.3g} std")
    for alignment in alignments:
        print(f"unloaded {alignment['unloaded']}: aligned with stamps {alignment['shift']:+.4g} s, positions "
              f"{alignment['position_mismatch']:.2g} rad RMS apart ({alignment['relative_mismatch']:.2%} of the "
              f"motion); {alignment['samples']} samples used, {alignment['left_out']} outside the unloaded run")
    units = ["kg"] + ["m"] * 3 + ["kg m^2"] * 6
    white = list(estimate.white_field_std)
    share = {} if estimate.inertia_prior is None else dict(zip(FIELD_NAMES[4:], _field_shares(estimate)))
    rows = []
    for name, value, std, white_std, unit in zip(FIELD_NAMES, estimate.fields, estimate.field_std, white, units):
        if value is None:
            rows.append((name, "undetermined", "", "", "", "", ""))
            continue
        half = uncertainty["interval_quantile"] * std
        rows.append((name, f"{value:.6g}", f"{std:.3g}", f"[{value - half:.6g}, {value + half:.6g}]",
                     f"{white_std:.3g}", f"{share[name]:.2f}" if name in share else "", unit))
    print(format_table(("field", "value", "std", "95 % interval", "white std", "prior share", "unit"), rows))
    if estimate.inertia_prior is not None:
        print(f"inertia prior: {estimate.inertia_prior['body']}, std {estimate.inertia_prior['std']:.3g} kg m^2 per "
              "inertia parameter (prior share: 0 data only, 1 prior only)")
    print(f"{'joint':<24} {'RMS before [N m]':>17} {'after [N m]':>12}")
    for joint in arm.joint_names:
        print(f"{joint:<24} {estimate.residual_before[joint]:17.4g} {estimate.residual_after[joint]:12.4g}")
    if holdout is not None:
        after = holdout["after"]
        for joint in arm.joint_names:
            shown = "-" if after is None else f"{after[joint]:.4g}"
            print(f"{joint + ' (holdout)':<24} {holdout['before'][joint]:17.4g} {shown:>12}")
    for warning in estimate.warnings + ((holdout["warning"],) if holdout and holdout["warning"] else ()):
        print(f"warning: {warning}")
    print(f"written to {args.out}")
    return 0


def _field_shares(estimate):
    """The prior's share of each inertia field (about the centre of mass): that of the parameter about the frame's
    origin on the same axes (the parallel-axis terms come from mass and centre of mass, which the data give)."""
    shares = estimate.inertia_prior["prior_share"]
    return [shares[name] for name in ("Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz")]


def _attach(args):
    from robot_dynid.model.dynamic_model import DynamicModel
    from robot_dynid.model.payload import load_payload, plausibility_warnings
    model = DynamicModel.load(args.model)
    payload = load_payload(args.payload, model.robot)
    loaded = model.with_payload(payload, {"source": f"payload file {args.payload}"})
    loaded.save(args.out)
    replaced = f" (replacing its payload at {model.payload.frame})" if model.payload is not None else ""
    print(f"payload of {payload.mass:.6g} kg at {payload.frame} attached to the model of robot {model.robot.name!r}"
          f"{replaced}; written to {args.out}")
    for warning in plausibility_warnings(payload, model.robot.rated_payload, args.max_com_distance):
        print(f"warning: {warning}")
    return 0


def _detach(args):
    from robot_dynid.model.dynamic_model import DynamicModel
    model = DynamicModel.load(args.model)
    model.without_payload().save(args.out)
    what = "no payload: written unchanged" if model.payload is None else f"payload at {model.payload.frame} detached"
    print(f"model of robot {model.robot.name!r}: {what}; written to {args.out}")
    return 0
