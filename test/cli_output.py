"""Running ``robot-dynid`` in-process as a user's shell would: its exit code and what it printed."""
import contextlib
import io
from typing import NamedTuple

from robot_dynid.cli import main


class Outcome(NamedTuple):
    """What the shell sees of a command: attributes, or unpacked as ``code, out, err``."""

    returncode: int
    stdout: str
    stderr: str


def run(*arguments):
    """``robot-dynid arguments...`` (each turned into a string): its :class:`Outcome`; an argparse error's exit is
    the return code, as the shell sees it."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = main([str(argument) for argument in arguments])
        except SystemExit as exit_:
            code = exit_.code
    return Outcome(code, stdout.getvalue(), stderr.getvalue())
