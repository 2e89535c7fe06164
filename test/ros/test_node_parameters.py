"""Node parameters that every node shares, given a bad value: one line naming the parameter and what it
accepts, exit 2, no traceback (installed executables, real processes)."""
import pytest

from ros_graph import start_node


@pytest.mark.parametrize("node, parameter", [
    ("identifier", "joint_states_qos"),
    ("recorder", "joint_states_qos"),
    ("feedforward", "joint_states_qos"),
    ("hydraulic_identifier", "qos"),
])
def test_an_unknown_qos_choice_is_refused_naming_the_parameter_and_the_choices(tmp_path, node, parameter):
    bag = ["-p", f"bag_path:={tmp_path / 'bag'}"] if node == "recorder" else []   # never into the source tree
    process = start_node(node, "-p", f"{parameter}:=fast", *bag, log_path=tmp_path / "node.log")
    assert process.wait(timeout=60) == 2, (tmp_path / "node.log").read_text()
    log = (tmp_path / "node.log").read_text()
    assert f"parameter {parameter} is 'fast'; expected one of ['reliable', 'best_effort', 'sensor_data']" in log, log
    assert "Traceback" not in log, log
