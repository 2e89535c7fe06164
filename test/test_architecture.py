"""The core must not need ROS: no rclpy import outside robot_dynid/nodes, checked two ways."""
import ast
import pathlib
import subprocess
import sys

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "robot_dynid"
ROS_ONLY = ("rclpy", "rcl_interfaces", "sensor_msgs", "std_msgs", "trajectory_msgs", "builtin_interfaces",
            "robot_dynid.msg", "robot_dynid.srv")


def core_modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent)
        if relative.parts[1] == "nodes":
            continue
        yield ".".join(relative.with_suffix("").parts).removesuffix(".__init__"), path


def imported_names(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


def test_no_ros_import_in_core_source():
    offenders = {
        module: name
        for module, path in core_modules()
        for name in imported_names(path)
        if any(name == ros or name.startswith(ros + ".") for ros in ROS_ONLY)
    }
    assert offenders == {}


def test_core_and_cli_import_with_ros_unavailable():
    modules = [module for module, _ in core_modules()]
    assert "robot_dynid.cli" in modules and len(modules) > 5
    blocker = "; ".join(f"sys.modules[{name!r}] = None" for name in ROS_ONLY)
    script = (
        f"import sys, importlib; {blocker}\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "from robot_dynid.cli import build_parser; build_parser()\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
