"""robot-dynid excitation: check a trajectory against a robot's limits, or design one."""
import sys

from robot_dynid.errors import TrajectoryError

__all__ = ["NAME", "HELP", "add_arguments", "main"]

NAME = "excitation"
HELP = "check an excitation trajectory against a robot's limits, or optimise a Fourier excitation"


def add_arguments(parser):
    from robot_dynid.cli.options import add_option_arguments, add_robot_argument, output_file
    from robot_dynid.experiment.excitation import (CRITERIA, DEFAULT_PAYLOAD_DURATION, MAX_HARMONICS, MAX_ITERATIONS,
                                                   MAX_PAYLOAD_DURATION, MAX_PERIOD, MAX_STARTS, PAYLOAD_WRIST_JOINTS)
    from robot_dynid.experiment.trajectories import MAX_GRID_POINTS
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check", help="position, speed and acceleration use per joint; exit 1 on any violation",
        description="Sample a trajectory file and compare it with the robot's position, velocity "
                    "and acceleration limits and with rest-to-rest boundary conditions "
                    "(qd = qdd = 0 at start and end). Exit status 1 when anything is violated.")
    add_robot_argument(check)
    check.add_argument("--trajectory", required=True, metavar="T.yaml",
                       help="trajectory file (see docs/excitation.md)")
    grid = check.add_mutually_exclusive_group()
    grid.add_argument("--points", type=int, default=None,
                      help=f"check grid size over the whole trajectory, at most {MAX_GRID_POINTS} (default 2001)")
    grid.add_argument("--dt", type=float, default=None,
                      help=f"check grid spacing [s]; the grid has at most {MAX_GRID_POINTS} points")
    check.add_argument("--tolerance", type=float, default=1e-3,
                       help="largest |qd| [rad/s] and |qdd| [rad/s^2] accepted at start and end "
                            "(printed coefficients are rounded; default: %(default)s)")
    check.add_argument("--no-rest", action="store_true",
                       help="do not require rest (qd = qdd = 0) at start and end")
    check.add_argument("--json", action="store_true", help="print JSON instead of a table")
    check.set_defaults(_action=_check)

    optimize = actions.add_parser(
        "optimize", help="design a rest-to-rest Fourier excitation minimising a regressor criterion",
        description="Optimise the coefficients of a Fourier excitation (one base frequency) for "
                    "the robot's base regressor, within its limits and starting and ending at "
                    "rest; progress goes to stderr, the design to --out.")
    add_robot_argument(optimize)
    optimize.add_argument("--harmonics", type=int, default=5,
                          help=f"harmonics L, 2 to {MAX_HARMONICS} (default: %(default)s)")
    optimize.add_argument("--period", type=float, default=10.0,
                          help=f"period 2 pi / wf [s], at most {MAX_PERIOD:g} s (default: %(default)s)")
    optimize.add_argument("--criterion", choices=CRITERIA, default="cond",
                          help="cond: condition number of the column-scaled base regressor; "
                               "logdet: -log det(W^T W) (D-optimal); frobenius: ||W||_F ||W^+||_F "
                               "(default: %(default)s)")
    add_option_arguments(optimize, ("friction",))
    optimize.add_argument("--seed", type=int, default=0, help="random seed of the starts (default: 0)")
    optimize.add_argument("--starts", type=int, default=2,
                          help=f"random starts, 1 to {MAX_STARTS} (default: %(default)s)")
    optimize.add_argument("--iterations", type=int, default=200,
                          help=f"SLSQP iterations per start, 1 to {MAX_ITERATIONS} (default: %(default)s)")
    optimize.add_argument("--time-limit", type=float, default=None,
                          help="stop after this many seconds with the best design so far")
    optimize.add_argument("--limit-fraction", type=float, default=0.95,
                          help="fraction of the position range, speed and acceleration limits "
                               "the design may use (default: %(default)s)")
    payload = optimize.add_argument_group("payload excitation (robot-dynid payload identify)")
    payload.add_argument("--payload", action="store_true",
                         help="design the short excitation of a payload identification instead: the payload's ten "
                              "regressor columns well conditioned, mostly the wrist joints moving, the others held at "
                              "--pose, for --duration")
    payload.add_argument("--duration", type=float, default=None,
                         help=f"--payload: length [s], whole periods, at most {MAX_PAYLOAD_DURATION:g} s (default: "
                              f"{DEFAULT_PAYLOAD_DURATION:g})")
    payload.add_argument("--frame", default=None, metavar="FRAME",
                         help="--payload: the payload frame (default: the child link of the last joint; e.g. tool0)")
    payload.add_argument("--moving-joints", type=_names, default=None, metavar="J,J,...",
                         help=f"--payload: the joints that move (default: the last {PAYLOAD_WRIST_JOINTS})")
    payload.add_argument("--pose", type=_numbers, default=None, metavar="Q,Q,...",
                         help="--payload: pose [rad] of all joints, in the robot's order, where the others stay "
                              "(default: zeros moved 5 %% of the range inside the limits)")
    optimize.add_argument("--out", required=True, type=output_file, metavar="T.yaml", help="trajectory file to write")
    optimize.add_argument("--json", action="store_true", help="print the summary as JSON")
    optimize.set_defaults(_action=_optimize)


def _names(text):
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _numbers(text):
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"{text!r} is not a comma-separated list of numbers [rad]") from None


def main(args):
    return args._action(args)


def _check(args):
    from robot_dynid.experiment.trajectories import load_trajectory
    from robot_dynid.experiment.trajectory_checks import check_trajectory
    from robot_dynid.model.robot_loader import load_robot
    from robot_dynid.reports.json_text import dumps
    robot = load_robot(args.robot)
    trajectory = load_trajectory(args.trajectory)
    check = check_trajectory(robot, trajectory, n_points=args.points, dt=args.dt,
                             tolerance=args.tolerance, require_rest=not args.no_rest)
    print(dumps(check.to_dict()) if args.json else check.format_table())
    return 0 if check.ok else 1


def _print_progress(update):
    if update.iteration == 1 or update.iteration % 10 == 0:
        print(f"start {update.start + 1}/{update.n_starts} iteration {update.iteration}: "
              f"{update.value:.6g} (best {update.best_value:.6g}, {update.elapsed:.1f} s)",
              file=sys.stderr, flush=True)


def _optimize(args):
    from robot_dynid.experiment.excitation import (DEFAULT_PAYLOAD_DURATION, optimize_excitation,
                                                   optimize_payload_excitation)
    from robot_dynid.experiment.trajectories import save_trajectory
    from robot_dynid.model.friction import friction_model
    from robot_dynid.model.robot_loader import load_robot
    from robot_dynid.reports.json_text import dumps
    robot = load_robot(args.robot)
    common = dict(harmonics=args.harmonics, period=args.period, criterion=args.criterion, seed=args.seed,
                  n_starts=args.starts, limit_fraction=args.limit_fraction, max_iterations=args.iterations,
                  time_limit=args.time_limit, progress=_print_progress)
    if args.payload:
        design = optimize_payload_excitation(
            robot, duration=DEFAULT_PAYLOAD_DURATION if args.duration is None else args.duration, frame=args.frame,
            moving_joints=args.moving_joints, pose=args.pose, **common)
    else:
        given = [option for option, value in (("--duration", args.duration), ("--frame", args.frame),
                                              ("--moving-joints", args.moving_joints), ("--pose", args.pose))
                 if value is not None]
        if given:
            raise TrajectoryError(f"{', '.join(given)} only apply with --payload")
        design = optimize_excitation(robot, friction=friction_model(args.friction), **common)
    save_trajectory(design.trajectory, args.out)
    if args.json:
        print(dumps(design.to_dict()))
        return 0
    what = f"payload excitation of {design.trajectory.duration:g} s, " if args.payload else ""
    print(f"{robot.name}: {what}{design.criterion} {design.value:.6g} (random start "
          f"{design.initial_value:.6g}), condition number {design.condition_number:.4g}, "
          f"{design.elapsed:.1f} s, written to {args.out}")
    if design.shrink < 1.0:
        print(f"amplitudes shrunk to {design.shrink:.2f} to clear the dense-grid check")
    print("peak speed / velocity limit per joint:")
    for name, fraction in zip(design.trajectory.joint_names, design.speed_fractions):
        print(f"  {name:<10} {fraction:6.3f}")
    return 0
