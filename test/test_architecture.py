"""The package's layering: the core needs no ROS (no rclpy import outside robot_dynid/nodes,
checked two ways), and the core's subpackages import only the layers below them."""
import ast
import pathlib
import subprocess
import sys

import pytest

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
        "robot_dynid.package_files", "robot_dynid.joint_names", "robot_dynid.input_files",
        "robot_dynid.output_files", "robot_dynid.stored_columns"}
LAYERS = {"model": 1, "recordings": 2, "estimation": 3, "experiment": 3, "hydraulics": 4, "reports": 4, "fleet": 5,
          "cli": 6, "nodes": 6}
"""Rank of each subpackage of robot_dynid, bottom-up (the base modules are rank 0): a module imports only from
its own subpackage and lower ranks, as ARCHITECTURE.md draws them."""
SIDEWAYS = {("cli", "nodes")}   # `robot-dynid demo --ros` runs the nodes' graph, imported when it runs


def module_graph():
    """``{module: {imported module: line}}`` over every robot_dynid module, nodes included: every import
    statement anywhere in the file (inside functions too: they run; under TYPE_CHECKING too: a circle through
    one is still a circle), relative imports resolved, ``from package import module`` counted as the module."""
    modules = {".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): path
               for path in sorted(PACKAGE.rglob("*.py"))}
    graph = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges = graph.setdefault(module, {})
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(parent + ([node.module] if node.module else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            else:
                continue
            for target in targets:
                if target in modules and target != module:
                    edges.setdefault(target, node.lineno)
    return graph


def layer_of(module):
    parts = module.split(".")
    return None if module in BASE or len(parts) < 2 else parts[1]


def rank(module):
    return 0 if module in BASE else LAYERS[layer_of(module)]


def upward_edges(graph):
    """``"a imports b (line n)"`` for each import of a higher subpackage, or of another one of the same rank."""
    found = []
    for module, edges in graph.items():
        for target, line in edges.items():
            source_layer, target_layer = layer_of(module), layer_of(target)
            if source_layer == target_layer or (source_layer, target_layer) in SIDEWAYS:
                continue
            if rank(target) > rank(module) or (rank(target) == rank(module) and module not in BASE):
                found.append(f"{module} imports {target} (line {line})")
    return found


def circles(graph):
    """Every strongly connected group of more than one module (Tarjan), each as ``a -> b -> ... -> a``: a
    shortest circle through its first module."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(module):
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == module:
                    break
            if len(group) > 1:
                groups.append(group)

    for module in sorted(graph):
        if module not in index:
            visit(module)
    found = []
    for group in groups:
        start = min(group)
        paths, seen = [[start]], {start}
        while paths:
            path = paths.pop(0)
            following = sorted(target for target in graph[path[-1]] if target in group)
            if start in following:
                found.append(" -> ".join(path + [start]))
                break
            for target in following:
                if target not in seen:
                    seen.add(target)
                    paths.append(path + [target])
    return found


def test_the_import_graph_has_no_circle():
    assert circles(module_graph()) == []


def test_no_module_imports_a_layer_above_its_own():
    graph = module_graph()
    assert {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").exists()} == set(LAYERS)
    assert {module for module in graph if module.count(".") == 1 and layer_of(module) not in LAYERS} <= BASE, \
        "a top-level module that is not a base module"
    assert upward_edges(graph) == []


def test_the_graph_checks_find_a_circle_and_an_upward_edge_and_name_them():
    """Against graphs written by hand: what the two checks must report."""
    graph = {"robot_dynid.errors": {},
             "robot_dynid.model.a": {"robot_dynid.model.b": 3, "robot_dynid.errors": 1},
             "robot_dynid.model.b": {"robot_dynid.model.c": 5},
             "robot_dynid.model.c": {"robot_dynid.model.a": 7, "robot_dynid.estimation.d": 8},
             "robot_dynid.estimation.d": {"robot_dynid.model.a": 2, "robot_dynid.experiment.e": 4},
             "robot_dynid.experiment.e": {},
             "robot_dynid.cli.f": {"robot_dynid.nodes.g": 9, "robot_dynid.fleet.h": 10},
             "robot_dynid.nodes.g": {}, "robot_dynid.fleet.h": {}}
    assert circles(graph) == ["robot_dynid.estimation.d -> robot_dynid.model.a -> robot_dynid.model.b -> "
                              "robot_dynid.model.c -> robot_dynid.estimation.d"]
    assert sorted(upward_edges(graph)) == ["robot_dynid.estimation.d imports robot_dynid.experiment.e (line 4)",
                                           "robot_dynid.model.c imports robot_dynid.estimation.d (line 8)"]
    assert circles({"robot_dynid.model.a": {"robot_dynid.model.b": 1}, "robot_dynid.model.b": {}}) == []


def test_nodes_share_only_node_runtime():
    """A node module imports no other node's module (the demo's graph, which composes them, aside): what
    they share (QoS, message conversions, the life cycle) lives in node_runtime. A node's parameter table may
    have a module of its own, ``<node>_parameters``, which only that node imports."""
    offenders = []
    for path in sorted((PACKAGE / "nodes").glob("*.py")):
        if path.stem in ("__init__", "node_runtime", "demo_graph"):
            continue
        own = ("robot_dynid.nodes.node_runtime", f"robot_dynid.nodes.{path.stem}_parameters")
        offenders += [f"{path.stem} imports {name}" for name in imported_names(path)
                      if name.startswith("robot_dynid.nodes.") and name not in own]
    assert offenders == []


@pytest.mark.parametrize("node", ["feedforward", "identifier", "recorder", "hydraulic_identifier"])
def test_the_serving_and_identifying_nodes_convert_messages_and_decide_nothing(node):
    """These nodes hand every decision to the core: no numerics (numpy) in them, and the feed-forward node, whose
    decisions are model.served_model's and model.feedforward_server's, is under 300 lines."""
    path = PACKAGE / "nodes" / f"{node}.py"
    assert not [name for name in imported_names(path) if name.split(".")[0] in ("numpy", "scipy")]
    if node == "feedforward":
        assert len(path.read_text().splitlines()) < 300


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


def test_no_module_takes_another_modules_private_names():
    """A name with a leading underscore is its module's own: another module that needs it gets a public name
    for it, in the module that is its home (the compiled kernels, private modules by name, aside)."""
    kernels = ("robot_dynid._regressor_kernel", "robot_dynid._online_kernel")
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("robot_dynid") \
                    and node.module not in kernels:
                offenders += [f"{path.relative_to(PACKAGE.parent)}:{node.lineno} takes {node.module}.{alias.name}"
                              for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")
                              and f"{node.module}.{alias.name}" not in kernels]
    assert offenders == []


def test_the_public_names_come_from_their_homes_without_loading_them_at_import():
    """``robot_dynid.NAME`` for every name of robot_dynid.API is the object of the module the table names, and a
    fresh ``import robot_dynid`` loads neither numpy nor pinocchio (the command line's start)."""
    import importlib
    import robot_dynid
    for name, home in robot_dynid.API.items():
        assert getattr(robot_dynid, name) is getattr(importlib.import_module(home), name), name
    assert set(robot_dynid.API) <= set(dir(robot_dynid)) and set(robot_dynid.__all__) >= set(robot_dynid.API)
    with pytest.raises(AttributeError, match="no attribute 'load_robots'"):
        robot_dynid.load_robots
    loaded = subprocess.run([sys.executable, "-c", "import sys, robot_dynid; "
                             "print(sorted({'numpy', 'pinocchio', 'scipy'} & set(sys.modules)))"],
                            capture_output=True, text=True, check=True, cwd=PACKAGE.parent).stdout.strip()
    assert loaded == "[]", loaded


def test_the_api_page_names_every_public_name():
    import robot_dynid
    page = (PACKAGE.parent / "docs" / "api.md").read_text()
    assert [name for name in robot_dynid.API if f"`{name}`" not in page] == []


def _defined_names(tree) -> tuple[set, set]:
    """(public defs and classes, every name bound) at a module's top level."""
    public, bound = set(), set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            if not node.name.startswith("_"):
                public.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound |= {name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name)}
    return public, bound


def test_every_module_lists_its_public_names_in_all():
    """CONTRIBUTING.md: the public API is what a module lists in ``__all__``. Every module has one; it names only
    what the module itself defines (not what it imports), and every function or class without a leading underscore
    (so a new one is public or private by choice)."""
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name in ("__init__.py", "__main__.py"):
            continue
        tree = ast.parse(path.read_text())
        listed = [node.value for node in tree.body if isinstance(node, ast.Assign)
                  and any(getattr(target, "id", None) == "__all__" for target in node.targets)]
        where = path.relative_to(PACKAGE.parent)
        if not listed:
            problems.append(f"{where}: no __all__")
            continue
        names = ast.literal_eval(listed[0])
        public, bound = _defined_names(tree)
        if set(names) - bound:
            problems.append(f"{where}: __all__ names what it does not define: {sorted(set(names) - bound)}")
        if public - set(names):
            problems.append(f"{where}: public but not in __all__: {sorted(public - set(names))}")
        if len(names) != len(set(names)):
            problems.append(f"{where}: __all__ repeats a name")
    assert not problems, "\n".join(problems)
