"""Running ``robot-dynid`` in-process as a user's shell would: its exit code and what it printed."""
import contextlib
import io
from types import SimpleNamespace

from robot_dynid.cli import main


def run(*arguments):
    """``robot-dynid arguments...`` (each turned into a string): ``returncode``, ``stdout``, ``stderr``; an
    argparse error's exit is the return code, as the shell sees it."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = main([str(argument) for argument in arguments])
        except SystemExit as exit_:
            code = exit_.code
    return SimpleNamespace(returncode=code, stdout=stdout.getvalue(), stderr=stderr.getvalue())
