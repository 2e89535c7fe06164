"""robot-dynid base-parameters: the identifiable parameter set of a robot model."""

__all__ = ["NAME", "HELP", "add_arguments", "main"]

NAME = "base-parameters"
HELP = "list the base (identifiable) parameters of a robot model: count, names, expressions"


def add_arguments(parser):
    from robot_dynid.cli.options import add_model_structure_arguments
    add_model_structure_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def main(args):
    from robot_dynid.cli.options import settings_from_args
    from robot_dynid.model.base_parameters import compute_base_parameters
    from robot_dynid.model.robot_loader import load_robot
    from robot_dynid.reports.json_text import dumps
    robot = load_robot(args.robot)
    regressor = settings_from_args(args, robot).regressor(robot)
    base = compute_base_parameters(regressor)
    if args.json:
        print(dumps({
            "robot": robot.name, "joint_names": list(robot.joint_names),
            "n_standard": regressor.n_parameters, "n_base": base.rank,
            "base_parameters": [{"name": n, "expression": e} for n, e in zip(base.names, base.expressions())],
        }))
        return 0
    print(f"{robot.name}: {base.rank} base parameters out of {regressor.n_parameters} standard parameters")
    width = max(len(name) for name in base.names)
    for name, expression in zip(base.names, base.expressions()):
        print(f"  {name:<{width}}  = {expression}")
    return 0
