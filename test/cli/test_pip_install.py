"""`pip install .` into a clean venv without any ROS wheel gives a working robot-dynid CLI.

This is the offline-user path of the README: the core and CLI must neither import nor need
rclpy, and the shipped configs and interface definitions must come with the package.
"""
import os
import shutil
import subprocess
import sys

import pytest

from repo_paths import REPO

# The clean venv must not see this environment's packages: `colcon test` (and a sourced ROS setup)
# put the install prefix on PYTHONPATH, where pip would find numpy & co. already "installed" and the
# venv's Python would import rclpy, and AMENT_PREFIX_PATH, where robot_dynid would find its configs.
CLEAN_ENV = {name: value for name, value in os.environ.items()
             if name not in ("PYTHONPATH", "AMENT_PREFIX_PATH", "COLCON_PREFIX_PATH", "CMAKE_PREFIX_PATH")}


@pytest.fixture(scope="module")
def clean_venv(tmp_path_factory):
    root = tmp_path_factory.mktemp("pip_install")
    source = root / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".venv*", "build", ".git", "__pycache__",
                                                                "demo_output", "*.egg-info"))
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=CLEAN_ENV)
    python = venv / "bin" / "python"
    # sys.executable's venv has the ROS bootstrapper; the new venv is created from the base interpreter.
    result = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", str(source)],
                            capture_output=True, text=True, env=CLEAN_ENV)
    assert result.returncode == 0, result.stdout + result.stderr
    return venv


def run(venv, *args):
    return subprocess.run([str(venv / "bin" / "robot-dynid"), *args], capture_output=True, text=True, env=CLEAN_ENV)


def test_no_ros_in_the_clean_venv(clean_venv):
    result = subprocess.run([str(clean_venv / "bin" / "python"), "-c", "import rclpy"], capture_output=True,
                            env=CLEAN_ENV)
    assert result.returncode != 0


def test_help_lists_the_subcommands(clean_venv):
    result = run(clean_venv, "--help")
    assert result.returncode == 0, result.stderr
    for command in ("base-parameters", "identify", "predict", "excitation", "protocol", "demo"):
        assert command in result.stdout


def test_shipped_robot_config_gives_literature_base_parameter_count(clean_venv):
    python = clean_venv / "bin" / "python"
    script = ("from robot_dynid.package_files import find_package_file; "
              "print(find_package_file('config', 'robots', 'puma560.yaml'))")
    config = subprocess.run([str(python), "-c", script], capture_output=True, text=True, cwd="/",
                            check=True, env=CLEAN_ENV).stdout.strip()
    assert "package_data" in config
    result = run(clean_venv, "base-parameters", "--robot", config, "--friction", "none")
    assert result.returncode == 0, result.stderr
    assert "36 base parameters" in result.stdout


def test_bags_with_stage_markers_round_trip_without_ros(clean_venv, tmp_path):
    """The ExperimentStage definition ships in the package data of a pip install."""
    script = f"""
from robot_dynid.recordings.bag_io import BagWriter, read_bag
with BagWriter({str(tmp_path / 'bag')!r}) as bag:
    bag.write_stage(0, "excitation", 3, True)
    for k in range(5):
        bag.write_joint_state(k * 10_000_000, ["a"], [0.1 * k], [1.0], [2.0])
    bag.write_stage(40_000_000, "excitation", 3, False)
recording = read_bag({str(tmp_path / 'bag')!r})
print(*sorted(set(map(str, recording.stage))), *sorted(set(recording.cycle.tolist())), recording.n_samples)
"""
    result = subprocess.run([str(clean_venv / "bin" / "python"), "-c", script], capture_output=True, text=True,
                            cwd="/", env=CLEAN_ENV)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["excitation", "3", "5"]


def test_demo_without_ros_says_so_and_runs_the_core_only_demo(clean_venv, tmp_path):
    """The demo's settings (config/demo.yaml, config/sim_robot.yaml) ship in the package data."""
    result = run(clean_venv, "demo", "--out", str(tmp_path / "demo"), "--periods", "1", "--rate", "100")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("note: ROS 2 is not available here")
    assert "torque noise 0.5 N m" in result.stdout   # sim_robot's noise_std in config/demo.yaml
    assert "feed-forward error on a held-out trajectory" in result.stdout
    assert (tmp_path / "demo" / "model.yaml").is_file() and (tmp_path / "demo" / "recording").is_dir()
