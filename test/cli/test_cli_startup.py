"""What the command line imports when it starts: only what the command given uses (times in BENCHMARKS.md,
startup)."""
import dataclasses
import subprocess
import sys

import numpy as np
import pytest

from repo_paths import ROBOTS

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


def test_no_commands_help_imports_pinocchio_rosbags_or_scipy():
    """A command's parser takes its defaults from modules that load neither the robot model's library nor the bag
    reader (pinocchio and rosbags cost a --help 0.1 s each: payload, compare, excitation, protocol, demo, bag and
    hydraulic --help imported one of them); each --help in turn, what it added to sys.modules."""
    from robot_dynid.cli import SUBCOMMAND_MODULES
    names = [__import__(module, fromlist=["NAME"]).NAME for module in SUBCOMMAND_MODULES]
    script = ("import sys\nfrom robot_dynid.cli import main\nadded = {}\n"
              f"for name in {names!r}:\n"
              "    try:\n        main([name, '--help'])\n    except SystemExit:\n        pass\n"
              f"    added[name] = sorted(heavy for heavy in {HEAVY!r} if heavy in sys.modules)\n"
              "print(added)")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert eval(result.stdout.strip().splitlines()[-1]) == {name: [] for name in names}


def test_base_parameters_imports_no_scipy():
    """base-parameters: numpy, PyYAML and pinocchio; its rank-revealing QR is numpy's (base_parameters), not
    scipy.linalg's (0.2 s)."""
    assert imported_after(["base-parameters", "--robot", str(ROBOTS / "ur5.yaml")]) == ["pinocchio"]


@pytest.fixture(scope="module")
def payload_files(tmp_path_factory):
    """An arm model of the UR5 URDF (Coulomb and viscous friction) and a minute at 250 Hz of it carrying a 2.8 kg tool
    at tool0, 1 % noise, as CSV (bench_payload's data at half its rate)."""
    from robot_dynid.experiment.excitation import random_excitation
    from robot_dynid.experiment.simulation import plausible_parameters
    from robot_dynid.model.base_parameters import compute_base_parameters
    from robot_dynid.model.dynamic_model import DynamicModel
    from robot_dynid.model.friction import friction_model
    from robot_dynid.model.payload import Payload
    from robot_dynid.model.regressor import Regressor
    from robot_dynid.model.robot_loader import load_robot
    from robot_dynid.recordings.csv_io import write_csv
    from robot_dynid.recordings.recording import Recording
    directory = tmp_path_factory.mktemp("startup_payload")
    robot = load_robot(ROBOTS / "ur5_urdf.yaml")
    friction = friction_model("coulomb_viscous")
    regressor = Regressor(robot, friction)
    base = compute_base_parameters(regressor)
    theta = np.zeros(regressor.n_parameters)
    theta[:10 * robot.n_joints] = plausible_parameters(robot, seed=1)
    theta[regressor.slices["friction"]] = np.tile([2.0, 1.5], robot.n_joints)
    arm = DynamicModel(robot, friction, False, False, base, base.projection @ theta, np.full(base.rank, 1e-3))
    arm.save(directory / "arm.yaml")
    trajectory = dataclasses.replace(random_excitation(robot, 5, 10.0, 0.5, seed=3), duration=60.0)
    t = np.arange(0.0, 60.0, 1.0 / 250.0)
    q, qd, qdd = trajectory.evaluate(t)
    tool = Payload("tool0", 2.8, (0.01, -0.02, 0.08), (0.01, 0.001, -0.002, 0.012, 0.0005, 0.008))
    tau = arm.with_payload(tool).torque(q, qd, qdd)
    tau += np.random.default_rng(1).normal(size=tau.shape) * 0.01 * np.sqrt(np.mean(tau**2, axis=0))
    write_csv(directory / "data.csv", Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau))
    return directory


def test_payload_identify_on_a_csv_imports_neither_scipy_nor_rosbags(payload_files):
    """payload identify on a CSV whose least-squares payload is consistent: no solver (cvxpy), no bag reader
    (rosbags, imported where a bag is read), no scipy (its intervals' t quantile is covariance's table)."""
    out = payload_files / "payload.yaml"
    assert imported_after(["payload", "identify", "--model", str(payload_files / "arm.yaml"), "--data",
                           str(payload_files / "data.csv"), "--frame", "tool0", "--out", str(out)]) == ["pinocchio"]
    assert out.exists() and "t with" in out.read_text()       # a block std: its t quantile came from the table
