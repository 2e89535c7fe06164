"""What the command line imports when it starts: only what the command given uses (times in BENCHMARKS.md, files)."""
import subprocess
import sys

import pytest

HEAVY = ("scipy", "pinocchio", "matplotlib", "rosbags", "cvxpy", "dask", "mujoco", "pyarrow")


def imported_after(arguments):
    """The HEAVY modules in sys.modules after ``robot-dynid arguments`` ran in a new process (SystemExit of
    --help included)."""
    script = ("import sys\nfrom robot_dynid.cli import main\n"
              f"try:\n    main({arguments!r})\nexcept SystemExit:\n    pass\n"
              f"print(sorted(name for name in {HEAVY!r} if name in sys.modules))")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return eval(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("arguments", [["--help"], ["--version"], ["export-urdf", "--help"]])
def test_help_imports_no_numeric_library(arguments):
    assert imported_after(arguments) == []


def test_help_of_the_command_line_imports_neither_numpy_nor_the_subcommands_dependencies():
    script = ("import sys\nfrom robot_dynid.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
              "print(sorted(name for name in sys.modules if name.split('.')[0] in ('numpy', 'yaml') or "
              "name.startswith('robot_dynid.') and not name.startswith(('robot_dynid.cli', 'robot_dynid.errors'))))")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_bag_repair_imports_no_identification_library(tmp_path):
    """(scipy comes with robot_dynid.recordings.recording, which imports signal_processing.)"""
    assert set(imported_after(["bag", "repair", str(tmp_path / "absent")])) <= {"rosbags", "scipy"}
