"""The ``robot-dynid`` command line: one module per subcommand.

Each subcommand module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``main(args) -> int``. Only these ``main`` functions decide exit codes: the core raises
:class:`robot_dynid.errors.DynIdError`, which is reported here as one line on stderr, as are
bad arguments (pointing to the subcommand's help), files that cannot be read or written (exit 2)
and Ctrl-C (exit 130). Anything else is a bug: one line saying so (exit 3), the traceback with
``--verbose``. Each log message (warnings of the ``warnings`` module included) is printed once
(:class:`OncePerMessage`).
"""
import argparse
import importlib
import logging
import sys
import traceback

from robot_dynid import __version__
from robot_dynid.errors import DynIdError, one_line

SUBCOMMAND_MODULES = (
    "robot_dynid.cli.base_parameters",
    "robot_dynid.cli.identify",
    "robot_dynid.cli.stages",
    "robot_dynid.cli.predict",
    "robot_dynid.cli.validate",
    "robot_dynid.cli.report",
    "robot_dynid.cli.compare",
    "robot_dynid.cli.fleet",
    "robot_dynid.cli.export_urdf",
    "robot_dynid.cli.excitation",
    "robot_dynid.cli.protocol",
    "robot_dynid.cli.demo",
    "robot_dynid.cli.bag",
    "robot_dynid.cli.hydraulic",
    "robot_dynid.cli.payload",
)


class OneLineErrorParser(argparse.ArgumentParser):
    """Bad arguments as one line on stderr (no usage block), exit 2, pointing to the help of the (sub)command
    whose arguments they are."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class OncePerMessage(logging.Filter):
    """Each log message emitted once: a repeat (the same level and text, e.g. from a loop over recordings or
    cycles) is dropped, and so is a record the core marks ``returned`` (``extra={"returned": True}``: the warning
    is also in the result the command prints, such as a model's ``metrics["warnings"]``)."""

    def __init__(self):
        super().__init__()
        self.seen = set()

    def filter(self, record):
        if getattr(record, "returned", False):
            return False
        key = (record.levelno, record.getMessage())
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


def _point_to_subcommands(parser):
    """Give every subcommand's parser (nested ones too) as the ``_parser`` default, so that arguments it does not
    know are its error, not the top-level parser's."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.set_defaults(_parser=sub)
                _point_to_subcommands(sub)


def build_parser(command=None):
    """The command line's parser; ``command`` given: only that subcommand's arguments are added (the others are
    listed by name and help: their modules import what they need when they run, so a command starts without
    the others' dependencies)."""
    parser = OneLineErrorParser(
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
        if command is None or command == module.NAME:
            module.add_arguments(sub)
            sub.set_defaults(_main=module.main)
    _point_to_subcommands(parser)
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(next((word for word in argv if not word.startswith("-")), ""))
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        getattr(args, "_parser", parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    root = logging.getLogger()
    level = root.level
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(OncePerMessage())
    handler.setLevel(logging.INFO if args.verbose else logging.WARNING)
    root.setLevel(min(level or logging.WARNING, handler.level))
    root.addHandler(handler)
    logging.captureWarnings(True)
    try:
        return _run(args)
    finally:
        logging.captureWarnings(False)
        root.removeHandler(handler)
        root.setLevel(level)


def _run(args):
    """The subcommand's ``main``, its exceptions turned into one line on stderr and an exit code."""
    prefix = f"robot-dynid {args.command}: error:"
    try:
        return int(args._main(args) or 0)
    except DynIdError as error:
        print(f"{prefix} {one_line(error)}", file=sys.stderr)
        return 2
    except OSError as error:
        where = f"{error.filename}: " if error.filename else ""
        print(f"{prefix} {where}{error.strerror or error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"robot-dynid {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # a bug, not bad input: say so in one line, the traceback with -v
        if args.verbose:
            traceback.print_exc()
        print(f"robot-dynid {args.command}: internal error ({one_line(error)}); "
              "please report it with the output of --verbose", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
