"""What the command line imports when it starts: only what the command given uses (times in BENCHMARKS.md,
startup)."""
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
    assert set(imported_after(["bag", "repair", str(tmp_path / "absent")])) <= {"rosbags"}


SUBMODULES = ("scipy.stats", "scipy.signal", "scipy.linalg", "scipy.optimize", "scipy.ndimage", "scipy.interpolate")


def test_no_commands_help_imports_scipy():
    """Every scipy import of the package sits in the function that uses it (0.2-0.5 s each at a command's start:
    `identify --help` took 1.1 s on a quiet machine with them); a command's --help imports none of them."""
    from robot_dynid.cli import SUBCOMMAND_MODULES
    names = [__import__(module, fromlist=["NAME"]).NAME for module in SUBCOMMAND_MODULES]
    script = ("import sys\nfrom robot_dynid.cli import main\n"
              f"for name in {names!r}:\n"
              "    try:\n        main([name, '--help'])\n    except SystemExit:\n        pass\n"
              f"print(sorted(name for name in {SUBMODULES!r} if name in sys.modules))")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
