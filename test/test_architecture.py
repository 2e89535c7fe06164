"""The package's layering: the core needs no ROS (no rclpy import outside robot_dynid/nodes,
checked two ways), and the core's subpackages import only the layers below them."""
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


BASE = {"robot_dynid", "robot_dynid.errors", "robot_dynid.validators", "robot_dynid.yaml_files",
        "robot_dynid.package_files", "robot_dynid.joint_names", "robot_dynid.input_files"}
LAYERS = {
    "recordings": set(),
    "model": {"estimation.estimators"},   # the estimator names a model file may record
    "estimation": {"model", "recordings"},
    "experiment": {"model", "recordings"},
    "hydraulics": {"model", "estimation", "recordings"},   # online checks share recordings.cylinder_data's limits
    "reports": {"model", "estimation", "recordings"},
    "fleet": {"model", "estimation", "recordings", "reports"},   # Dask tasks, results database, change detection
    "cli": {"model", "estimation", "experiment", "recordings", "hydraulics", "reports", "fleet",
            "nodes"},   # nodes only inside `robot-dynid demo --ros`, imported when it runs
}
"""Per subpackage of robot_dynid, what else of the package it may import (besides itself and the
base modules). Mirrors the layering in ARCHITECTURE.md."""


def test_subpackages_import_only_the_layers_below():
    layered = set(LAYERS) | {"nodes"}
    assert {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").exists()} == layered
    offenders = []
    for module, path in core_modules():
        if path.parent == PACKAGE:
            assert module in BASE, f"{module} is a top-level module but not a base module"
            continue
        layer = path.relative_to(PACKAGE).parts[0]
        allowed = LAYERS[layer] | {layer}
        for name in imported_names(path):
            if not name.startswith("robot_dynid.") or name in BASE:
                continue
            target = name.removeprefix("robot_dynid.")
            if not any(target == other or target.startswith(other + ".") for other in allowed):
                offenders.append(f"{module} imports {name}")
    assert offenders == []


def test_nodes_share_only_node_runtime():
    """A node module imports no other node's module (the demo's graph, which composes them, aside): what
    they share (QoS, message conversions, the life cycle) lives in node_runtime."""
    offenders = []
    for path in sorted((PACKAGE / "nodes").glob("*.py")):
        if path.stem in ("__init__", "node_runtime", "demo_graph"):
            continue
        offenders += [f"{path.stem} imports {name}" for name in imported_names(path)
                      if name.startswith("robot_dynid.nodes.") and name != "robot_dynid.nodes.node_runtime"]
    assert offenders == []


def test_estimators_registry_imports_only_base_modules():
    path = PACKAGE / "estimation" / "estimators.py"
    package_imports = {name for name in imported_names(path) if name.startswith("robot_dynid")}
    assert package_imports <= BASE


def test_matplotlib_only_in_the_figure_module_and_not_at_startup():
    importing = {module for module, path in core_modules()
                 if any(name.partition(".")[0] == "matplotlib" for name in imported_names(path))}
    assert importing <= {"robot_dynid.reports.figures"}, importing
    script = ("import sys\nfrom robot_dynid.cli import build_parser; build_parser()\n"
              "import robot_dynid.reports.report, robot_dynid.reports.figures\n"
              "assert 'matplotlib' not in sys.modules and 'tqdm' not in sys.modules, 'imported at startup'\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_every_robot_dynid_import_in_the_repository_names_an_existing_module_and_name():
    """Imports inside functions (bench/ loads its workloads lazily) fail only when they run: a module moved
    by a refactoring left the rls benchmark unable to start. Every ``from robot_dynid... import name`` in the
    package, the tests, bench/ and tools/ must resolve."""
    import importlib
    missing = []
    for directory in ("robot_dynid", "test", "bench", "tools", "launch"):
        for path in sorted((PACKAGE.parent / directory).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(
                        "robot_dynid"):
                    where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
                    if node.module.split(".")[:2] in (["robot_dynid", "msg"], ["robot_dynid", "srv"]):
                        continue   # generated interfaces: built by colcon, imported by the ROS tests
                    try:
                        module = importlib.import_module(node.module)
                    except ImportError as error:
                        if not (getattr(error, "name", None) or "robot_dynid").startswith("robot_dynid"):
                            continue   # an optional dependency this environment lacks (rclpy without ROS)
                        missing.append(f"{where}: {error}")
                        continue
                    missing += [f"{where}: {node.module} has no {alias.name!r}" for alias in node.names
                                if alias.name != "*" and not hasattr(module, alias.name)
                                and importlib.util.find_spec(f"{node.module}.{alias.name}") is None]
    assert not missing, "\n".join(missing)
