"""The ``robot-dynid`` command line: one module per subcommand.

Each subcommand module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``main(args) -> int``. Only these ``main`` functions decide exit codes: the core raises
:class:`robot_dynid.errors.DynIdError`, which is reported here as one line on stderr.
"""
import argparse
import importlib
import logging
import sys

from robot_dynid import __version__
from robot_dynid.errors import DynIdError

SUBCOMMAND_MODULES = (
    "robot_dynid.cli.base_parameters",
    "robot_dynid.cli.identify",
    "robot_dynid.cli.stages",
    "robot_dynid.cli.predict",
    "robot_dynid.cli.excitation",
    "robot_dynid.cli.protocol",
    "robot_dynid.cli.demo",
)


def build_parser():
    parser = argparse.ArgumentParser(
        prog="robot-dynid",
        description="Identify the dynamic model of a robot arm from recorded data "
        "(rosbag2 or CSV) and compute feed-forward torques from it.",
    )
    parser.add_argument("--version", action="version", version=f"robot-dynid {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in SUBCOMMAND_MODULES:
        module = importlib.import_module(module_name)
        sub = subparsers.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(sub)
        sub.set_defaults(_main=module.main)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args._main(args) or 0)
    except DynIdError as error:
        print(f"robot-dynid {args.command}: error: {error}", file=sys.stderr)
        return 2
    except FileNotFoundError as error:
        print(f"robot-dynid {args.command}: error: file not found: {error.filename}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
