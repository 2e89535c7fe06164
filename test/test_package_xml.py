"""package.xml declares, by its rosdep key, every package the code imports.

The imports are read from the source (robot_dynid/, launch/, test/), so a new import without a
package.xml entry, or a package.xml entry no import needs any more, fails here. No ROS needed.
"""
import ast
import pathlib
import re
import sys
import xml.etree.ElementTree as ElementTree

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

ROSDEP_KEYS = {
    # top-level module: the rosdep key whose install provides it
    "numpy": "python3-numpy",
    "scipy": "python3-scipy",
    "yaml": "python3-yaml",
    "pinocchio": "pinocchio",
    "rosbags": "python3-rosbags-pip",
    "lz4": "python3-lz4",
    "backports": "python3-rosbags-pip",     # backports.zstd has no key; rosbags requires it (Python < 3.14)
    "cvxpy": "python3-cvxpy-pip",
    "matplotlib": "python3-matplotlib",
    "tqdm": "python3-tqdm",
    "rclpy": "rclpy",
    "rcl_interfaces": "rcl_interfaces",
    "rosgraph_msgs": "rosgraph_msgs",
    "builtin_interfaces": "builtin_interfaces",
    "std_msgs": "std_msgs",
    "std_srvs": "std_srvs",
    "sensor_msgs": "sensor_msgs",
    "trajectory_msgs": "trajectory_msgs",
    "launch": "launch",
    "launch_ros": "launch_ros",
    "ament_index_python": "ament_index_python",
    "pytest": "python3-pytest",
}
WITHOUT_ROSDEP_KEY = {"mcap", "dask", "distributed", "mujoco", "pyarrow"}
"""Modules no rosdep key provides: package.xml must say so in a comment (the tests that use them skip
without them; robot-dynid fleet says how to install Dask)."""
LATER_STANDARD_LIBRARY = {"compression"}
"""Standard library from Python 3.14 (compression.zstd), imported only there."""
NOT_IMPORTED = {"rosidl_default_runtime"}
"""Run-time dependencies no module imports by name (the generated interface code needs them)."""

SOURCES = {
    # directory: the dependency tags that make a package available to its code
    "robot_dynid": ("depend", "exec_depend"),
    "launch": ("depend", "exec_depend"),
    "test": ("depend", "exec_depend", "test_depend"),
}


def declared(*tags):
    root = ElementTree.parse(ROOT / "package.xml").getroot()
    return {element.text.strip() for tag in tags for element in root.findall(tag)}


def local_modules():
    """This repository's own top-level modules: the package and the test helpers (pythonpath = test)."""
    return {"robot_dynid"} | {path.stem for path in (ROOT / "test").rglob("*.py")}


def imports(directory):
    """{top-level module: first 'file:line' importing it} over the .py files under ``directory``."""
    found = {}
    for path in sorted((ROOT / directory).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.partition(".")[0], f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def third_party(found):
    local = local_modules()
    return {module: where for module, where in found.items()
            if module not in sys.stdlib_module_names and module not in local
            and module not in LATER_STANDARD_LIBRARY}


@pytest.mark.parametrize("directory", sorted(SOURCES))
def test_every_imported_package_is_declared_by_its_rosdep_key(directory):
    modules = third_party(imports(directory))
    assert "numpy" in modules or directory == "launch", "the import scan found nothing it should"
    unknown = {module: where for module, where in modules.items()
               if module not in ROSDEP_KEYS and module not in WITHOUT_ROSDEP_KEY}
    assert not unknown, (f"imported, but with no rosdep key in this test's ROSDEP_KEYS: {unknown}; "
                         "declare the key in package.xml and add the module to the table")
    keys = declared(*SOURCES[directory])
    missing = {module: f"{ROSDEP_KEYS[module]} (imported at {where})" for module, where in modules.items()
               if module in ROSDEP_KEYS and ROSDEP_KEYS[module] not in keys}
    assert not missing, f"package.xml lacks a <{'> or <'.join(SOURCES[directory])}> for {missing}"


def test_packages_without_a_rosdep_key_are_explained_in_package_xml():
    comments = " ".join(re.findall(r"<!--(.*?)-->", (ROOT / "package.xml").read_text(), re.S))
    imported = set().union(*(third_party(imports(directory)) for directory in SOURCES))
    for module in WITHOUT_ROSDEP_KEY:
        assert module in imported, f"{module} is no longer imported: drop it from WITHOUT_ROSDEP_KEY"
        assert re.search(rf"\b{module}\b", comments), f"package.xml has no comment saying how {module} is installed"


def test_every_run_time_dependency_is_imported_somewhere():
    imported = set().union(*(third_party(imports(directory)) for directory in ("robot_dynid", "launch")))
    needed = {ROSDEP_KEYS[module] for module in imported if module in ROSDEP_KEYS} | NOT_IMPORTED
    stale = declared("depend", "exec_depend") - needed
    assert not stale, f"package.xml declares run-time dependencies no code imports: {sorted(stale)}"


def test_compiled_kernel_declares_python_headers():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    assert "Python3_add_library(_regressor_kernel" in cmake
    assert "python3-dev" in declared("build_depend", "depend")


def test_scan_sees_imports_inside_functions_and_guards():
    """cvxpy is imported inside functions, backports.zstd under a version check, the ROS messages in
    robot_dynid/nodes: the scan must see them all."""
    modules = third_party(imports("robot_dynid"))
    assert {"cvxpy", "backports", "rclpy", "rcl_interfaces", "lz4"} <= set(modules), sorted(modules)
