"""robot-dynid protocol: plan the identification experiment (cycles of excitation, friction, warmup), or a
payload identification (cycles of a payload stage)."""
import argparse
import logging

from robot_dynid.errors import DataError, TrajectoryError

__all__ = ["NAME", "HELP", "add_arguments", "main"]

logger = logging.getLogger(__name__)

NAME = "protocol"
HELP = "plan the identification experiment: cycles of excitation, friction and warmup stages"
_FORMER_CYCLES_GOES_IN = "0.2.0"
"""The release without ``protocol --cycles N``, the former spelling of ``--cycle-count N`` (CONTRIBUTING.md's
deprecation rule: it works, with a warning, in the release that renamed it)."""


def _take_former_cycles(args) -> None:
    """``--cycles N`` taken as ``--cycle-count N``, with one warning naming the release it goes in."""
    if args.former_cycles is None:
        return
    if args.cycle_count is not None:
        raise DataError("--cycles N is the former spelling of --cycle-count N: give --cycle-count alone")
    logger.warning("protocol --cycles %d is renamed --cycle-count %d (--cycles is a list of cycles in identify, "
                   "validate, payload and hydraulic); --cycles goes in robot-dynid %s", args.former_cycles,
                   args.former_cycles, _FORMER_CYCLES_GOES_IN)
    args.cycle_count = args.former_cycles


def add_arguments(parser):
    from robot_dynid.cli.options import add_robot_argument, output_file
    from robot_dynid.experiment.protocol import (DEFAULT_SPEED_FRACTIONS, MAX_CYCLES, MAX_EXCITATION_COUNT,
                                                 MAX_EXCITATION_PERIODS, MAX_LEVEL_DURATION, MAX_SPEED_LEVELS,
                                                 MAX_STAGE_DURATION)
    add_robot_argument(parser)
    parser.add_argument("--cycle-count", type=int, default=None, metavar="N",
                        help=f"cycles per test, 1 to {MAX_CYCLES} (default: 24; 1 with --payload); the former "
                             "--cycles N, a name that is a list of cycles in identify, validate, payload and hydraulic")
    parser.add_argument("--cycles", dest="former_cycles", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--excitation", metavar="T.yaml", default=None, action="append",
                        help="Fourier excitation file; repeat for several distinct excitations per cycle, played "
                             "one after the other (default: --excitation-count random safe ones, seeds 0, 1, ...)")
    parser.add_argument("--excitation-count", type=int, default=1, metavar="N",
                        help=f"distinct random excitations per cycle, 1 to {MAX_EXCITATION_COUNT}: several identify "
                             "what one leaves poorly excited (docs/excitation.md) (default: %(default)s)")
    parser.add_argument("--excitation-periods", type=int, default=2,
                        help=f"excitation periods per cycle, 1 to {MAX_EXCITATION_PERIODS} (default: %(default)s)")
    parser.add_argument("--friction-poses", metavar="P.yaml", default=None,
                        help="YAML {poses: {joint: [pose of all joints, rad]}}: pose of the other "
                             "joints while each joint runs its friction test (default: home pose)")
    parser.add_argument("--speed-fractions", type=_fractions,
                        default=DEFAULT_SPEED_FRACTIONS, metavar="F,F,...",
                        help=f"friction speed levels as fractions of the velocity limit, at most {MAX_SPEED_LEVELS} "
                             "(default: 0.05,0.2,0.4,0.6,0.8,1.0)")
    parser.add_argument("--level-duration", type=float, default=None,
                        help=f"time per friction speed level [s], at most {MAX_LEVEL_DURATION:g} s "
                             "(default: shortest that fits)")
    parser.add_argument("--warmup-duration", type=float, default=180.0,
                        help=f"warmup stage per cycle [s], at most {MAX_STAGE_DURATION:g} s (default: %(default)s)")
    parser.add_argument("--rest-duration", type=float, default=0.0,
                        help=f"rest at the start of each cycle [s], at most {MAX_STAGE_DURATION:g} s "
                             "(default: %(default)s)")
    parser.add_argument("--validation", metavar="T.yaml", default=None,
                        help="rest-to-rest trajectory played at the end of each cycle")
    parser.add_argument("--cylinders", metavar="C.yaml", default=None,
                        help="hydraulic arms: cylinder configuration; with --cylinder-stage, each cylinder with an "
                             "attachment (constant moment arm, or two points) gets a cylinder stage")
    parser.add_argument("--cylinder-stage", metavar="S.yaml", default=None,
                        help="cylinder stage (YAML): amplitude [m], angular_frequency [rad/s] or frequency [Hz], "
                             "cycles, ramp_duration [s], centers {cylinder: rad}; played before the excitation "
                             "stage: the cylinder's joint moves so that its rod displacement is x_c + A sin(w t)")
    parser.add_argument("--payload", metavar="T.yaml", default=None,
                        help="plan a payload identification instead: per cycle (after --rest-duration) a payload stage "
                             "playing this Fourier excitation (robot-dynid excitation optimize --payload), marked "
                             "KIND_PAYLOAD; the other stages' options do not apply")
    parser.add_argument("--out", metavar="plan.yaml", type=output_file, default=None, help="write the plan (YAML)")
    parser.add_argument("--json", action="store_true", help="print the cycle's stages as JSON")


def _fractions(text):
    try:
        return tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"--speed-fractions: {text!r} is not a comma-separated list of numbers") from None


def _excited_cylinders(path, robot):
    """CylinderExcitation of every cylinder of the configuration ``path`` with an attachment: a constant
    moment arm, or two points (the joint between their links moved so that x follows the sine)."""
    from robot_dynid.experiment.protocol import CylinderExcitation
    from robot_dynid.hydraulics.attachment import displacement_function, driven_joint
    from robot_dynid.hydraulics.cylinder_results import load_cylinder_config
    cylinders = []
    for config in load_cylinder_config(path):
        attachment = config.attachment
        if attachment is None:
            continue
        if attachment.constant:
            cylinders.append(CylinderExcitation(config.name, attachment.joint, attachment.moment_arm))
        else:
            cylinders.append(CylinderExcitation(config.name, driven_joint(robot, attachment, config.name), None,
                                                displacement=displacement_function(robot, attachment, config.name)))
    if not cylinders:
        raise DataError(f"{path}: no cylinder has an attachment (joint and moment_arm, or two points): nothing "
                        "to excite")
    return cylinders


def _fourier(path):
    from robot_dynid.experiment.trajectories import FourierTrajectory, load_trajectory
    trajectory = load_trajectory(path)
    if not isinstance(trajectory, FourierTrajectory):
        raise TrajectoryError(f"{path}: the excitation must be a fourier trajectory, got {trajectory.kind}")
    return trajectory


def _plan(args, robot):
    from robot_dynid.experiment.protocol import (build_payload_protocol, build_protocol, load_cylinder_stage,
                                                 load_friction_poses)
    from robot_dynid.experiment.trajectories import load_trajectory
    if args.payload is not None:
        given = (("--excitation", args.excitation), ("--friction-poses", args.friction_poses),
                 ("--level-duration", args.level_duration), ("--validation", args.validation),
                 ("--cylinders", args.cylinders), ("--cylinder-stage", args.cylinder_stage))
        other = [option for option, value in given if value is not None]
        if other:
            raise DataError(f"--payload plans the payload stage alone: {', '.join(other)} do not apply")
        return build_payload_protocol(robot, _fourier(args.payload),
                                      cycles=1 if args.cycle_count is None else args.cycle_count,
                                      rest_duration=args.rest_duration)
    excitation = None if args.excitation is None else [_fourier(path) for path in args.excitation]
    poses = None if args.friction_poses is None else load_friction_poses(args.friction_poses, robot)
    validation = None if args.validation is None else load_trajectory(args.validation)
    cylinder_stage = None
    if (args.cylinders is None) != (args.cylinder_stage is None):
        raise DataError("--cylinders and --cylinder-stage go together: the configuration names the cylinders, "
                        "their joints and moment arms, the stage file their motion")
    if args.cylinders is not None:
        cylinder_stage = load_cylinder_stage(args.cylinder_stage, _excited_cylinders(args.cylinders, robot))
    return build_protocol(
        robot, cycles=24 if args.cycle_count is None else args.cycle_count, excitation=excitation,
        excitation_periods=args.excitation_periods, friction_poses=poses, speed_fractions=args.speed_fractions,
        excitation_count=args.excitation_count if args.excitation is None else 1,
        friction_level_duration=args.level_duration, warmup_duration=args.warmup_duration,
        rest_duration=args.rest_duration, validation=validation, cylinder_stage=cylinder_stage)


def main(args):
    from robot_dynid.experiment.protocol import save_plan
    from robot_dynid.model.robot_loader import load_robot
    from robot_dynid.reports.json_text import dumps
    _take_former_cycles(args)
    robot = load_robot(args.robot)
    plan = _plan(args, robot)
    if args.out is not None:
        save_plan(plan, args.out)
    if args.json:
        data = plan.to_dict()
        print(dumps({key: data[key] for key in ("robot", "joints", "cycles", "cycle_duration",
                                                "notes", "stage_columns", "cycle_stages")}))
        return 0
    print(f"{robot.name}: {plan.cycles} cycles of {plan.cycle_duration:.1f} s "
          f"({plan.duration / 60.0:.1f} min in all)")
    for kind, seconds in plan.stage_durations().items():
        print(f"  {kind:<11} {seconds:8.1f} s per cycle")
    if plan.settings.get("friction_level_duration") is not None:
        print(f"friction: {plan.settings['friction_level_duration']:g} s per speed level")
    for note in plan.notes:
        print(f"note: {note}")
    print(f"{'start':>8} {'end':>8}  {'kind':<11} {'name':<12} {'joint':<8} {'speed':>6} {'dir':>4}")
    for row in plan.cycle_stages:
        speed = "" if row.speed_fraction is None else f"{row.speed_fraction:.3f}"
        print(f"{row.start_time:8.2f} {row.end_time:8.2f}  {row.kind:<11} {row.label:<12} {row.joint or '':<8} "
              f"{speed:>6} {row.direction:>4}")
    if args.out is not None:
        print(f"plan written to {args.out}")
    return 0
