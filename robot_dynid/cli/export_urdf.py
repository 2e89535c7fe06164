"""robot-dynid export-urdf: a URDF holding a model's identified link inertials."""
import pathlib

from robot_dynid.errors import DynIdError, RobotDescriptionError

__all__ = ["NAME", "HELP", "add_arguments", "main"]

NAME = "export-urdf"
HELP = ("write a URDF with a model's identified link inertials (mass, centre of mass, inertia); needs standard "
        "parameters (identify --consistent)")


def add_arguments(parser):
    from robot_dynid.cli.options import output_file
    parser.add_argument("--model", required=True, metavar="model.yaml", help="model artifact with standard parameters")
    parser.add_argument("--urdf", default=None, metavar="IN.urdf",
                        help="URDF robots: the URDF whose link inertials to replace, with the model's joints and "
                             "joint frames (default: the URDF in the model); DH robots get a URDF built from the table")
    parser.add_argument("--out", required=True, type=output_file, metavar="OUT.urdf", help="URDF file to write")


def main(args):
    from robot_dynid.input_files import read_text
    from robot_dynid.model.dynamic_model import DynamicModel
    from robot_dynid.model.urdf_export import export_urdf, identifiability_warnings
    model = DynamicModel.load(args.model)
    urdf_text = None if args.urdf is None else read_text(args.urdf, "URDF", RobotDescriptionError)
    try:
        text = export_urdf(model, urdf_text)
    except RobotDescriptionError as error:
        raise RobotDescriptionError(f"{args.urdf or args.model}: {error}") from None
    except DynIdError as error:
        raise DynIdError(f"{args.model}: {error}") from None
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    for warning in identifiability_warnings(model):
        print(f"warning: {warning}")
    kind = "built from its DH table" if model.robot.urdf is None else f"of {args.urdf or 'the model'}"
    print(f"URDF {kind} with the identified inertials of {len(model.joint_names)} links of robot "
          f"{model.robot.name!r} written to {args.out}")
    return 0
