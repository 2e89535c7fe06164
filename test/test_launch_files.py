"""Launch files name only executables and parameter files that the build installs.

launch_ros is not on PyPI, so the files are read as syntax trees here; where launch_ros is
importable (a real ROS 2 install), test_launch_files_start also launches each one for real.
"""
import ast
import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest

from repo_paths import REPO

LAUNCH_FILES = sorted((REPO / "launch").glob("*.launch.py"))
PREFIX = pathlib.Path(sys.prefix)


def node_calls(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Node":
            yield {kw.arg: kw.value for kw in node.keywords}


def string_literals(tree):
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def declared_arguments(tree):
    return {ast.literal_eval(node.args[0]) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "DeclareLaunchArgument"}


def node_table(executable):
    """The node's parameter table (``PARAMETERS`` of its module)."""
    return importlib.import_module(f"robot_dynid.nodes.{executable}").PARAMETERS


def node_parameter_names(executable):
    """Parameters the node declares: its table's, and use_sim_time (rclpy declares it)."""
    return {"use_sim_time", *node_table(executable).names}


def node_arguments(path):
    """{executable: launch arguments named in its ``parameters=``} of every Node call in ``path``."""
    tree = ast.parse(path.read_text())
    arguments = declared_arguments(tree) - {"params_file"}   # a parameter file, not a parameter
    result = {}
    for call in node_calls(path):
        named = set(string_literals(call["parameters"])) & arguments if "parameters" in call else set()
        result[ast.literal_eval(call["executable"])] = named
    return result


def test_there_are_launch_files():
    assert {p.name for p in LAUNCH_FILES} >= {"feedforward.launch.py", "identification.launch.py", "demo.launch.py"}


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_configurations_are_declared(path):
    tree = ast.parse(path.read_text())
    used = {ast.literal_eval(node.args[0]) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "LaunchConfiguration"
            and isinstance(node.args[0], ast.Constant)}
    assert used <= declared_arguments(tree), f"{path.name}: undeclared {used - declared_arguments(tree)}"


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_arguments_given_to_a_node_are_its_parameters(path):
    """An argument that names no parameter of the node would be accepted and silently ignored."""
    for executable, arguments in node_arguments(path).items():
        unknown = arguments - node_parameter_names(executable)
        assert not unknown, f"{path.name}: {executable} has no parameter(s) {sorted(unknown)}"


def node_topic_defaults(executable):
    """{parameter: default} of the node's ``*_topic`` parameters."""
    return {row.name: row.default for row in node_table(executable).rows if row.name.endswith("_topic")}


def module_dict(path, name):
    """The literal dict assigned to ``name`` at the top of ``path`` ({} if none)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name:
            return ast.literal_eval(node.value)
    return {}


def argument_defaults(path):
    return {ast.literal_eval(node.args[0]): ast.literal_eval(kw.value)
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "DeclareLaunchArgument"
            for kw in node.keywords if kw.arg == "default_value" and isinstance(kw.value, ast.Constant)}


def test_nodes_use_relative_topic_names():
    """A relative name lands in the node's namespace; an absolute default would escape it."""
    nodes = [module.stem for module in sorted((REPO / "robot_dynid" / "nodes").glob("*.py"))
             if "\nPARAMETERS = ParameterTable(" in module.read_text()]
    assert len(nodes) == 6, nodes
    for node in nodes:
        for parameter, default in node_topic_defaults(node).items():
            assert not default.startswith("/"), f"{node}.{parameter} defaults to absolute {default!r}"
    for path in sorted((REPO / "config").glob("*.yaml")):
        for line in path.read_text().splitlines():
            found = re.match(r"\s+\w+_topic:\s*(\S+)", line)
            assert not (found and found.group(1).strip("\"'").startswith("/")), f"{path.name}: {line.strip()}"


@pytest.mark.parametrize("name", ["identification.launch.py", "feedforward.launch.py"])
def test_every_topic_of_the_launched_nodes_is_remapped_from_its_relative_name(name):
    """Each node's ``*_topic`` parameter is an argument; the argument remaps the node's relative default
    (TOPICS), or switches an optional input on under a relative name (OPTIONAL_TOPICS); a node started
    only when such an argument is given (CONDITIONAL_NODES) defaults that input to the relative name."""
    path = REPO / "launch" / name
    topics, optional = module_dict(path, "TOPICS"), module_dict(path, "OPTIONAL_TOPICS")
    conditional = module_dict(path, "CONDITIONAL_NODES")
    defaults = argument_defaults(path)
    executables = {ast.literal_eval(call["executable"]) for call in node_calls(path)}
    for executable in executables:
        for parameter, default in node_topic_defaults(executable).items():
            assert parameter in topics or parameter in optional, f"{name}: {executable}.{parameter} not remapped"
            if parameter in topics:
                assert topics[parameter] == default, f"{executable}.{parameter}: {default!r} is not remapped"
            elif conditional.get(executable) == parameter:
                assert default == optional[parameter] and defaults[parameter] == "", \
                    f"{executable}.{parameter}: {default!r} is not the optional input's relative name"
            else:
                assert default == "" and defaults[parameter] == "", f"{executable}.{parameter} is not optional"
    for executable, parameter in conditional.items():
        assert executable in executables and parameter in optional, f"{name}: CONDITIONAL_NODES {executable}"
        assert f'optional[CONDITIONAL_NODES["{executable}"]]' in path.read_text(), f"{executable} always starts"
    for argument, topic in {**topics, **optional}.items():
        assert not topic.startswith("/"), f"{name}: {argument} remaps an absolute name"
        assert defaults[argument] in (topic, ""), f"{name}: {argument} defaults to {defaults[argument]!r}"
        assert "remappings" in path.read_text()


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_namespace_and_use_sim_time_reach_every_node(path):
    tree = ast.parse(path.read_text())
    assert {"namespace", "use_sim_time"} <= declared_arguments(tree)
    common = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            common[getattr(node.targets[0], "id", None)] = {ast.literal_eval(k) for k in node.value.keys if k}
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "Node":
            given = {kw.arg for kw in call.keywords if kw.arg}
            given |= {key for kw in call.keywords if kw.arg is None for key in common.get(kw.value.id, ())}
            assert "namespace" in given, f"{path.name}: {ast.unparse(call)[:80]} has no namespace"
    assert '"use_sim_time":' in path.read_text(), f"{path.name} does not set use_sim_time"
    for included in (s for s in string_literals(tree) if s.endswith(".launch.py")):
        assert re.search(r'"namespace", "use_sim_time"', path.read_text()), f"{path.name}: {included}"


def test_demo_launch_starts_the_simulator_and_includes_the_other_launch_files():
    text = (REPO / "launch" / "demo.launch.py").read_text()
    assert set(node_arguments(REPO / "launch" / "demo.launch.py")) == {"sim_robot"}
    included = {s for s in string_literals(ast.parse(text)) if s.endswith(".launch.py")}
    assert included == {"identification.launch.py", "feedforward.launch.py"}
    assert all((PREFIX / "share" / "robot_dynid" / "launch" / name).is_file() for name in included)
    assert "demo.yaml" in string_literals(ast.parse(text))


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
    yaml_names = [s for s in string_literals(ast.parse(path.read_text())) if re.fullmatch(r"[\w.-]+\.yaml", s)]
    assert yaml_names, f"{path.name} names no parameter file"
    for name in yaml_names:
        assert (PREFIX / "share" / "robot_dynid" / "config" / name).is_file(), \
            f"{path.name}: parameter file config/{name} is not installed"


@pytest.mark.parametrize("path", [p for p in LAUNCH_FILES if p.name != "demo.launch.py"], ids=lambda p: p.name)
def test_arguments_that_set_parameters_keep_the_configured_value_unless_given(path):
    """A non-empty default would override config/<node>.yaml and params_file every time: the
    arguments a node takes as parameters (not the topic remappings, not namespace/use_sim_time)
    default to empty."""
    tree = ast.parse(path.read_text())
    defaults = {ast.literal_eval(node.args[0]): ast.literal_eval(kw.value)
                for node in ast.walk(tree)
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "DeclareLaunchArgument"
                for kw in node.keywords if kw.arg == "default_value"}
    parameters = set().union(*(node_parameter_names(executable) for executable in node_arguments(path)))
    setting = {name for name in defaults if name in parameters and not name.endswith("_topic")} - {"use_sim_time"}
    assert setting, f"{path.name}: no argument sets a parameter"
    assert {name: defaults[name] for name in setting if defaults[name]} == {}


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
