"""Launch files name only executables and parameter files that the build installs.

launch_ros is not on PyPI, so the files are read as syntax trees here; where launch_ros is
importable (a real ROS 2 install), test_launch_files_start also launches each one for real.
"""
import ast
import importlib.util
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
LAUNCH_FILES = sorted((REPO / "launch").glob("*.launch.py"))
PREFIX = pathlib.Path(sys.prefix)


def node_calls(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Node":
            yield {kw.arg: kw.value for kw in node.keywords}


def string_literals(tree):
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def test_there_are_launch_files():
    assert {p.name for p in LAUNCH_FILES} >= {"feedforward.launch.py"}


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_names_installed_executables(path):
    calls = list(node_calls(path))
    assert calls, f"{path.name} starts no Node"
    for call in calls:
        assert ast.literal_eval(call["package"]) == "robot_dynid"
        executable = ast.literal_eval(call["executable"])
        assert (PREFIX / "lib" / "robot_dynid" / executable).is_file(), \
            f"{path.name}: executable {executable} is not installed in {PREFIX}/lib/robot_dynid"


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_parameter_files_are_installed(path):
    yaml_names = [s for s in string_literals(ast.parse(path.read_text())) if s.endswith(".yaml")]
    for name in yaml_names:
        assert (PREFIX / "share" / "robot_dynid" / "config" / name).is_file(), \
            f"{path.name}: parameter file config/{name} is not installed"


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_arguments_have_descriptions(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "DeclareLaunchArgument":
            assert any(kw.arg == "description" for kw in node.keywords), ast.unparse(node)


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_files_start(path):
    if importlib.util.find_spec("launch_ros") is None or importlib.util.find_spec("ros2cli") is None:
        pytest.skip("launch_ros / ros2cli are not installed (not on PyPI); launch files were checked statically")
    process = subprocess.Popen(["ros2", "launch", str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        process.wait(timeout=5)
        pytest.fail(f"{path.name} exited early with {process.returncode}: {process.stdout.read().decode()}")
    except subprocess.TimeoutExpired:
        process.terminate()
        process.wait(timeout=10)
