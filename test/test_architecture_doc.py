"""ARCHITECTURE.md's module tree names every module of robot_dynid, and nothing that does not exist."""
import importlib
import inspect
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NAME_COLUMN = 30   # where the tree's descriptions start


def tree_paths(text):
    """Repository paths the first code block of ``text`` names: each line's name column (before
    :data:`NAME_COLUMN`) holds names separated by ", ", relative to the directory entry (a name ending
    in "/") that is one indentation step (two spaces) above; a blank name column continues a description."""
    lines = text.split("```")[1].splitlines()[1:]
    directories, paths = {}, []
    for line in lines:
        names = line[:NAME_COLUMN].strip()
        if not names:
            continue
        assert len(line) <= NAME_COLUMN or line[NAME_COLUMN - 1] == " ", f"name column overflows: {line!r}"
        level = (len(line) - len(line.lstrip())) // 2
        parent = "".join(directories[above] for above in range(level))
        for name in names.split(", "):
            paths.append(parent + name)
            if name.endswith("/"):
                directories[level] = name
    return paths


def test_the_tree_reader_follows_indentation_and_lists():
    assert tree_paths("```\n" + "\n".join(
        name.ljust(NAME_COLUMN) + "text" for name in ("a/", "  b.py, c/", "    d.py", "  e.py", "", "f, g/h.sh"))
        + "\n```") == ["a/", "a/b.py", "a/c/", "a/c/d.py", "a/e.py", "f", "g/h.sh"]


@pytest.fixture(scope="module")
def named():
    return tree_paths((ROOT / "ARCHITECTURE.md").read_text())


def test_every_path_the_tree_names_exists(named):
    assert [path for path in named if not (ROOT / path).exists()] == []


def test_every_module_and_kernel_of_robot_dynid_is_in_the_tree(named):
    modules = sorted(str(path.relative_to(ROOT)) for pattern in ("*.py", "*.c", "*.h")
                     for path in (ROOT / "robot_dynid").rglob(pattern) if path.name != "__init__.py")
    assert len(modules) > 100
    assert [module for module in modules if module not in named] == []


def resolve(reference: str, modules: set):
    """The object a dotted ``reference`` of the prose names: a module path's tail (``signal_processing.X``,
    ``model.feedforward.X``), then attributes; a leading capitalised name is a class found in any module. None when
    nothing by that name exists."""
    parts = reference.removeprefix("robot_dynid.").split(".")
    for split in range(len(parts), 0, -1):
        suffix = ".".join(parts[:split])
        homes = sorted(name for name in modules if name == suffix or name.endswith("." + suffix))
        if homes:
            candidates = [importlib.import_module(f"robot_dynid.{home}") for home in homes]
            break
    else:
        split = 1
        candidates = [getattr(importlib.import_module(f"robot_dynid.{name}"), parts[0], None)
                      for name in sorted(modules) if parts[0][0].isupper()]
    for value in candidates:
        for attribute in parts[split:]:
            owner, value = value, getattr(value, attribute, None)
            if value is None and isinstance(owner, type) and f"self.{attribute} =" in inspect.getsource(owner):
                value = attribute       # an instance attribute the class sets
        if value is not None:
            return value
    return None


def test_every_code_name_the_prose_cites_exists():
    """ARCHITECTURE.md's claims name their homes (`signal_processing.gap_threshold`,
    `identification.model_from_accumulator`): each name must exist where it says, so a claim cannot outlive the code
    it points to."""
    modules = {".".join(path.relative_to(ROOT / "robot_dynid").with_suffix("").parts).removesuffix(".__init__")
               for path in (ROOT / "robot_dynid").rglob("*.py")
               if "nodes" not in path.parts} - {"__init__"} | {"_online_kernel", "_regressor_kernel"}
    text = (ROOT / "ARCHITECTURE.md").read_text()
    references = sorted(set(re.findall(r"`((?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*)`", text)))
    cited = [reference for reference in references if not reference.endswith((".py", ".msg", ".srv"))
             and not reference.startswith(("robot_dynid.msg", "robot_dynid.srv", "nodes.", "node_runtime."))]
    assert len(cited) > 15
    assert resolve("signal_processing.no_such_rule", modules) is None and resolve("Regressor.nothing", modules) is None
    assert [reference for reference in cited if resolve(reference, modules) is None] == []
    nodes = (ROOT / "robot_dynid" / "nodes")
    assert "def declare_table" in (nodes / "node_runtime.py").read_text() and (nodes / "demo_graph.py").exists()
