"""The tests mirror the package: the tests of robot_dynid/<subpackage>/ live in test/core/<subpackage>/, those of
the base modules (robot_dynid/*.py) in test/core/ itself, and the nodes' and the CLI's in test/ros and test/cli."""
import pathlib

TEST = pathlib.Path(__file__).resolve().parent
PACKAGE = TEST.parent / "robot_dynid"
FACES = ("cli", "nodes")


def test_core_test_folders_are_the_core_subpackages():
    subpackages = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").exists()} - set(FACES)
    folders = {path.name for path in (TEST / "core").iterdir() if path.is_dir() and path.name != "__pycache__"}
    assert folders <= subpackages, f"test/core folders that are no core subpackage: {sorted(folders - subpackages)}"


def test_the_tests_directly_in_test_core_are_those_of_base_modules():
    """A test file in test/core/ itself names a base module (test_validators.py tests robot_dynid/validators.py)."""
    base = {path.stem for path in PACKAGE.glob("*.py") if not path.stem.startswith("_")}
    stray = [path.name for path in sorted((TEST / "core").glob("test_*.py"))
             if path.stem.removeprefix("test_") not in base]
    assert stray == [], f"test/core/ holds tests of no base module (move them to test/core/<subpackage>/): {stray}"


def test_make_test_runs_every_test_file():
    """Each test file or folder of test/ is in the Makefile's CORE_TESTS or SERIAL_TESTS (a file named in neither
    never runs in CI: test_architecture_doc.py did not, and its tree fell behind the package)."""
    makefile = (TEST.parent / "Makefile").read_text().replace("\\\n", " ")
    named = set()
    for variable in ("CORE_TESTS", "SERIAL_TESTS"):
        line = next(line for line in makefile.splitlines() if line.startswith(f"{variable} :="))
        named.update(word.rstrip("/") for word in line.split(":=", 1)[1].split())
    entries = {f"test/{path.name}" for path in TEST.iterdir()
               if (path.is_dir() and any(path.rglob("test_*.py")))
               or (path.name.startswith("test_") and path.suffix == ".py")}
    covered = {entry for entry in entries if entry in named or any(entry.startswith(name + "/") for name in named)}
    assert sorted(entries - covered) == []


def test_each_test_file_is_named_after_a_module_of_its_subpackage():
    """test/core/<subpackage>/test_<module>[_<aspect>].py: the module (or sub-subpackage) it tests is in its name, so
    that the tests of robot_dynid/fleet/store.py are found in test/core/fleet/test_store.py."""
    stray = []
    for folder in sorted(path for path in (TEST / "core").iterdir() if path.is_dir() and path.name != "__pycache__"):
        modules = {path.stem for path in (PACKAGE / folder.name).iterdir()
                   if path.suffix == ".py" and not path.stem.startswith("_")
                   or (path / "__init__.py").exists()}
        for path in sorted(folder.glob("test_*.py")):
            name = path.stem.removeprefix("test_")
            if not any(name == module or name.startswith(module + "_") for module in modules):
                stray.append(f"{folder.name}/{path.name}")
    assert stray == [], f"test files named after no module of their subpackage: {stray}"
