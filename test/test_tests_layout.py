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
