"""ARCHITECTURE.md's module tree names every module of robot_dynid, and nothing that does not exist."""
import pathlib

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
