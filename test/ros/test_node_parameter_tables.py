"""Each node's parameter table is what the node declares and what its config file says (issue 38 item 4).

The nodes are built in this process from their tables (their defaults; the hydraulic identifier with one
cylinder, which it needs to start) and their parameters read back as ``ros2 param describe`` shows them; the
config files are read as the ROS parameter parser reads them (YAML) and compared with the tables' defaults.
"""
import importlib
import sys

import pytest
import yaml
from rclpy.parameter import Parameter

from repo_paths import REPO
from robot_dynid.nodes.node_runtime import NodeParameter, ParameterTable, declare_table
from ros_graph import construct_node

NODES = ("experiment_runner", "recorder", "identifier", "feedforward", "sim_robot", "hydraulic_identifier")
RCLPY_PARAMETERS = {"use_sim_time", "start_type_description_service"}
"""What rclpy declares on every node (the second from Jazzy on)."""


def table(node) -> ParameterTable:
    return importlib.import_module(f"robot_dynid.nodes.{node}").PARAMETERS


@pytest.mark.parametrize("node", NODES)
def test_the_node_declares_its_table_row_by_row(context, tmp_path, node):
    """Every declared parameter (but rclpy's own) is a row; each descriptor carries the row's
    description and unit, is read-only exactly when the row is not live, and has the range of the row's check."""
    built = construct_node(node, context, tmp_path)
    rows = {row.name: row for row in table(node).rows}
    declared = sorted(set(built._parameters) - RCLPY_PARAMETERS)
    assert declared == sorted(rows), sorted(set(declared) ^ set(rows))
    for name, descriptor in zip(declared, built.describe_parameters(declared)):
        row = rows[name]
        assert descriptor.description.startswith(row.description), (name, descriptor.description)
        assert not row.unit or descriptor.description.endswith(f" [{row.unit}]"), (name, descriptor.description)
        assert descriptor.read_only is not row.live, name
        bounds = row.bounds if row.bounds is not None else getattr(row.check, "bounds", None)
        ranges = list(descriptor.floating_point_range) + list(descriptor.integer_range)
        assert [(r.from_value, r.to_value) for r in ranges] == ([] if bounds is None else [tuple(bounds)]), name


@pytest.mark.parametrize("node", NODES)
def test_the_config_file_is_the_table(node):
    """config/<node>.yaml is tools/config_files.py's text of the table, and the values it sets are the table's
    defaults (examples only where the row says the config sets one)."""
    path = REPO / "config" / f"{node}.yaml"
    text = path.read_text(encoding="utf-8")
    assert text == table(node).config_text(), f"{path} is stale: run python tools/config_files.py"
    configured = yaml.safe_load(text)[f"/**/{node}"]["ros__parameters"]
    for row in table(node).rows:
        if row.in_config:
            assert configured[row.name] == row.example, row.name
        elif isinstance(row.default, Parameter.Type):
            assert row.name not in configured, row.name          # commented out: unset stays unset
        else:
            assert configured[row.name] == row.default and type(configured[row.name]) is type(row.default), row.name
    assert all(line.startswith("#") or len(line) <= 120 for line in text.splitlines())


def test_a_live_row_without_its_apply_or_an_unknown_name_is_a_programming_error(context):
    import rclpy.node
    rows = ParameterTable("scratch", rows=(NodeParameter("rate", 1.0, "a rate", "Hz", live=True),
                                           NodeParameter("name", "", "a name")))
    node = rclpy.node.Node("scratch", context=context)
    try:
        with pytest.raises(ValueError, match=r"live parameters \['rate'\]"):
            declare_table(node, rows)
        with pytest.raises(ValueError, match=r"not in the table: \['nam'\]"):
            declare_table(node, rows, apply={"rate": print}, rules={"nam": lambda check: check})
    finally:
        node.destroy_node()


@pytest.mark.parametrize("value, text", [(1.0, "1.0"), (1e-06, "1.0e-06"), (0.0095, "0.0095"), ("", '""'),
                                         ("yes", '"yes"'), ("1.5", '"1.5"'), ("mcap", "mcap"), (True, "true"),
                                         ([0.05, 1.0], "[0.05, 1.0]"), (["a", "on"], '[a, "on"]'), (20000, "20000")])
def test_config_values_read_back_as_the_same_type_and_value(value, text):
    """A double keeps its point (a ROS double, not an integer), a string YAML would read as a bool or number is
    quoted; the ROS parameter parser (YAML) reads each back as the value."""
    from robot_dynid.nodes.node_runtime import _yaml_value
    assert _yaml_value(value) == text
    assert yaml.safe_load(text) == value and type(yaml.safe_load(text)) is type(value)


def test_the_tool_finds_a_stale_file_and_writes_it_again(tmp_path):
    """tools/config_files.py in its own process: --check on the repository's files passes; on a copy with one file
    edited by hand it exits 1 naming that file, and without --check it writes the file back from the table."""
    import shutil
    import subprocess
    tool = [sys.executable, str(REPO / "tools" / "config_files.py")]
    assert subprocess.run([*tool, "--check"], capture_output=True, text=True).returncode == 0
    for node in NODES:
        shutil.copy(REPO / "config" / f"{node}.yaml", tmp_path)
    (tmp_path / "recorder.yaml").write_text("# edited by hand\n", encoding="utf-8")
    checked = subprocess.run([*tool, "--check", "--directory", str(tmp_path)], capture_output=True, text=True)
    assert checked.returncode == 1 and f"{tmp_path / 'recorder.yaml'}: differs" in checked.stdout, checked
    assert checked.stdout.count("up to date") == len(NODES) - 1
    assert subprocess.run([*tool, "--directory", str(tmp_path)], capture_output=True).returncode == 0
    assert (tmp_path / "recorder.yaml").read_text(encoding="utf-8") == table("recorder").config_text()
