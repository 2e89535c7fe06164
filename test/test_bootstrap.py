"""tools/bootstrap.sh's pieces that can be checked without installing anything: the rewrite of the
ROS wheels' CMake include paths, its failure reports, and the minimum-versions requirements."""
import configparser
import pathlib
import re
import subprocess
import sys

import pytest

from repo_paths import REPO

BOOTSTRAP = REPO / "tools" / "bootstrap.sh"

# As the cp312 (Jazzy) and cp311 (Kilted) wheels export them.
EXPORT = """set_target_properties(std_msgs::std_msgs__rosidl_generator_py PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "/opt/python/{tag}-{tag}/include/python{version};\
/opt/python/{tag}-{tag}/lib/python{version}/site-packages/numpy/_core/include;${{_IMPORT_PREFIX}}/include"
)
"""


def bootstrap_function(*arguments, cwd=None):
    """Run one function of tools/bootstrap.sh (sourced, so its main does not run)."""
    script = 'source "$1"; shift; report_failures; "$@"'
    return subprocess.run(["bash", "-c", script, "bash", str(BOOTSTRAP), *map(str, arguments)],
                          capture_output=True, text=True, cwd=cwd, timeout=60)


@pytest.fixture
def prefix(tmp_path):
    """A venv-like prefix whose share/ holds CMake exports of cp312 and cp311 wheels."""
    root = tmp_path / "venv"
    for package, tag, version in (("std_msgs", "cp312", "3.12"), ("sensor_msgs", "cp311", "3.11")):
        directory = root / "share" / package / "cmake"
        directory.mkdir(parents=True)
        (directory / f"{package}__rosidl_generator_pyExport.cmake").write_text(
            EXPORT.format(tag=tag, version=version))
        (directory / f"{package}Config.cmake").write_text("# nothing to rewrite\n")
    return root


def exports(root):
    return {path.relative_to(root): path.read_text() for path in sorted(root.rglob("*.cmake"))}


def test_rewrite_points_any_cp3xx_tag_at_this_python_and_numpy(prefix):
    numpy_include = prefix / "lib" / "python3.12" / "site-packages" / "numpy" / "_core" / "include"
    result = bootstrap_function("rewrite_include_paths", prefix, "/usr/include/python3.12", numpy_include)
    assert result.returncode == 0, result.stderr
    assert "pointing the wheels' CMake exports" in result.stderr
    for path, text in exports(prefix).items():
        assert "/opt/python" not in text, path
        if path.name.endswith("Export.cmake"):
            assert f'"/usr/include/python3.12;{numpy_include};${{_IMPORT_PREFIX}}/include"' in text, text


def test_second_rewrite_changes_nothing_and_says_nothing(prefix):
    numpy_include = prefix / "lib" / "python3.12" / "site-packages" / "numpy" / "_core" / "include"
    arguments = ("rewrite_include_paths", prefix, "/usr/include/python3.12", numpy_include)
    assert bootstrap_function(*arguments).returncode == 0
    before = exports(prefix)
    again = bootstrap_function(*arguments)
    assert again.returncode == 0, again.stderr
    assert again.stderr == ""
    assert exports(prefix) == before


def test_rewrite_follows_numpy_to_its_new_include_directory(prefix):
    """numpy 1.x keeps its headers in numpy/core/include, 2.x in numpy/_core/include."""
    site = prefix / "lib" / "python3.12" / "site-packages"
    assert bootstrap_function("rewrite_include_paths", prefix, "/py", site / "numpy/_core/include").returncode == 0
    result = bootstrap_function("rewrite_include_paths", prefix, "/py", site / "numpy/core/include")
    assert result.returncode == 0, result.stderr
    text = exports(prefix)[pathlib.Path("share/std_msgs/cmake/std_msgs__rosidl_generator_pyExport.cmake")]
    assert f"/py;{site}/numpy/core/include;" in text
    assert "_core" not in text


def test_an_unknown_build_machine_path_is_an_error_naming_it(prefix):
    (prefix / "share" / "std_msgs" / "cmake" / "odd.cmake").write_text(
        'set(x "/opt/python/cp312-cp312/lib/libpython3.12.so")\n')
    result = bootstrap_function("rewrite_include_paths", prefix, "/py", "/np")
    assert result.returncode == 3
    assert "/opt/python/cp312-cp312/lib/libpython3.12.so" in result.stderr
    assert "retry with: bash tools/bootstrap.sh" in result.stderr


def test_a_failing_command_names_its_step_line_and_the_retry(tmp_path):
    result = bootstrap_function("parse_arguments", "--distro", "jazzy")
    assert result.returncode == 0, result.stderr
    script = ('source "$1"; parse_arguments --distro jazzy; report_failures; step="colcon build"; '
              "ls /nonexistent-robot-dynid-path; echo not reached")
    result = subprocess.run(["bash", "-c", script, "bash", str(BOOTSTRAP)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode != 0
    assert "not reached" not in result.stdout
    assert re.search(r"step 'colcon build' failed: 'ls /nonexistent-robot-dynid-path' exited with status 2 "
                     r"\(tools/bootstrap.sh line \d+\)", result.stderr), result.stderr
    assert "retry with: bash tools/bootstrap.sh --distro jazzy (logs in build/jazzy/)" in result.stderr


@pytest.mark.parametrize("arguments, message", [
    (["--distro", "humble"], "unknown distribution 'humble'"),
    (["--jazzy"], "unknown argument '--jazzy'"),
])
def test_bad_arguments_are_refused_before_anything_is_installed(arguments, message):
    result = subprocess.run(["bash", str(BOOTSTRAP), *arguments], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert message in result.stderr
    assert "--distro kilted|jazzy" in result.stderr


def test_minimum_versions_are_setup_cfg_floors_exactly():
    result = subprocess.run([sys.executable, str(REPO / "tools" / "minimum_constraints.py"),
                             str(REPO / "setup.cfg"), str(REPO / "requirements" / "python.txt")],
                            capture_output=True, text=True, check=True)
    pins = dict(re.match(r"([A-Za-z0-9._-]+)==([^;\s]+)", line).groups()
                for line in result.stdout.splitlines() if "==" in line)
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    declared = config["options"]["install_requires"] + "".join(config["options.extras_require"].values())
    floors = dict(re.findall(r"^\s*([A-Za-z0-9._-]+)\s*>=\s*([0-9][^\s;,]*)", declared, re.MULTILINE))
    assert floors, "setup.cfg declares no lower bound"
    for name, version in floors.items():
        assert pins.get(name) == version, f"{name}>={version} in setup.cfg, {pins.get(name)} in minimum.txt"
    assert "pytest" in pins   # the test tools come from requirements/python.txt
