"""YAML files and texts read within limits: nesting, alias expansion ("billion laughs"), integers beyond the
float range, size; each refused in one line naming the source and where, with either PyYAML parser."""
import sys
import time

import pytest
import yaml

from robot_dynid import yaml_files
from robot_dynid.errors import ModelFileError, TrajectoryError
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.yaml_files import MAX_YAML_DEPTH, MAX_YAML_NODES, load_yaml, read_yaml

LOADERS = [yaml_files._PythonLimitedLoader] + ([yaml_files._LibyamlLimitedLoader] if yaml.__with_libyaml__ else [])


@pytest.fixture(params=LOADERS, ids=lambda loader: loader.__name__.strip("_"))
def loader(request, monkeypatch):
    """Each parser the module can run on (libyaml's where PyYAML has it, the Python one otherwise)."""
    monkeypatch.setattr(yaml_files, "_LimitedLoader", request.param)


def billion_laughs(levels=9):
    """Ten aliases of the level below at each level: 10 ** levels strings once expanded, 10 levels written."""
    lines = ["lol0: &lol0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"lol{k}: &lol{k} [{', '.join([f'*lol{k - 1}'] * 10)}]" for k in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def test_a_billion_laughs_document_is_refused_at_once(loader):
    started = time.monotonic()
    with pytest.raises(TrajectoryError, match=r"^poses.yaml: the friction poses file holds more than 1000000 values "
                                              r"\(aliases counted as the values they repeat\) \(line 6, column \d+\)$"):
        load_yaml(billion_laughs(), "poses.yaml", TrajectoryError, "friction poses file")
    assert time.monotonic() - started < 5.0
    # lol5 on line 6 is the first to expand beyond 10 ** 6; up to lol4 (111111 values) the document loads as PyYAML
    # loads it
    assert load_yaml(billion_laughs(4)) == yaml.safe_load(billion_laughs(4))


def test_an_alias_to_the_node_that_holds_it_is_refused(loader):
    assert yaml.safe_load("a: &x [1, *x]")["a"][1] is not None       # PyYAML builds a recursive list
    with pytest.raises(TrajectoryError, match=r"^p.yaml: the plan holds alias \*x inside the node it names"):
        load_yaml("a: &x [1, *x]", "p.yaml", TrajectoryError, "plan")


def test_1000_deep_nesting_is_refused_at_the_depth_limit(loader):
    with pytest.raises(RecursionError):
        yaml.safe_load("[" * 1000 + "]" * 1000)
    with pytest.raises(ModelFileError, match=rf"^m: the model artifact nests deeper than {MAX_YAML_DEPTH} levels "
                                             rf"\(line 2, column {MAX_YAML_DEPTH + 3}\)$"):   # the mapping is level 1
        load_yaml("x: 1\ny: " + "[" * 1000 + "]" * 1000, "m", ModelFileError, "model artifact")
    deepest = "[" * MAX_YAML_DEPTH + "]" * MAX_YAML_DEPTH
    assert load_yaml(deepest) == yaml.safe_load(deepest)


def test_integers_beyond_the_float_range_are_refused_with_their_line(loader):
    if hasattr(sys, "get_int_max_str_digits"):     # Python >= 3.10.7: its digit limit, not a YAML error
        with pytest.raises(ValueError, match="integer string conversion"):
            yaml.safe_load("a: " + "9" * 5000)
    with pytest.raises(ModelFileError, match=r"^m.yaml: the model artifact holds an integer of 5000 characters, beyond "
                                             r"the float range \(\|x\| < 1.8e308\) \(line 2, column 5\)$"):
        load_yaml("a: 1\nb: [" + "9" * 5000 + "]", "m.yaml", ModelFileError, "model artifact")
    for text in ("1" + "0" * 309, "-" + "1" * 400, "0x1" + "0" * 256, "0b1" + "0" * 1024):     # each > 1.8e308
        with pytest.raises(ModelFileError, match=r"holds an integer beyond the float range .*\(line 1, column 4\)$"):
            load_yaml("a: " + text, "m.yaml", ModelFileError)
    largest = int(sys.float_info.max)
    assert load_yaml(f"a: {largest}\nb: -{largest}\nc: 0x{largest:x}") == {"a": largest, "b": -largest, "c": largest}


def test_what_is_not_yaml_names_the_line(loader):
    with pytest.raises(TrajectoryError, match=r"^t: the text is not valid YAML: .*\(line 1, column 4\)"):
        load_yaml("a: [1, 2\nb: 3", "t", TrajectoryError)
    with pytest.raises(TrajectoryError, match=r"^t: the text must be text, got bytes$"):
        load_yaml(b"a: 1", "t", TrajectoryError)


def test_a_text_above_the_size_limit_is_refused(monkeypatch):
    monkeypatch.setattr(yaml_files, "MAX_TEXT_BYTES", 100)
    with pytest.raises(ModelFileError, match=r"^msg: the model artifact has 101 characters, above the limit of "):
        load_yaml("#" * 101, "msg", ModelFileError, "model artifact")


def test_files_go_through_the_same_limits(tmp_path):
    path = tmp_path / "robot.yaml"
    path.write_text("name: arm\nmass: " + "7" * 5000 + "\n")
    with pytest.raises(TrajectoryError, match=r"robot.yaml: the robot description holds an integer of 5000 "
                                              r"characters.*\(line 2, column 7\)$"):
        read_yaml(path, TrajectoryError, "robot description")
    path.write_bytes(b"\xef\xbb\xbfname: arm\n")           # a byte-order mark, as some editors write
    assert read_yaml(path) == {"name": "arm"}


@pytest.mark.parametrize("artifact", [
    "[" * 1000 + "]" * 1000,
    "schema_version: " + "1" * 5000,
    "schema_version: 2\nmetrics:\n" + "".join("  " + line + "\n" for line in billion_laughs().splitlines()),
])
def test_a_model_message_beyond_the_limits_is_a_model_file_error(artifact):
    with pytest.raises(ModelFileError, match=r"^IdentifiedModel.artifact_yaml: the model artifact (nests|holds)"):
        DynamicModel.from_yaml(artifact, source="IdentifiedModel.artifact_yaml")


def test_the_node_budget_is_documented_and_generous_for_the_shipped_files():
    from robot_dynid.package_files import find_package_file
    for path in sorted(find_package_file("config").rglob("*.yaml")):
        read_yaml(path)
    assert MAX_YAML_NODES == 1_000_000 and MAX_YAML_DEPTH == 100      # as docs/command_line.md states
