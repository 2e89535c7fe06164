"""``ros2 param set`` on a running node, over DDS: a change takes effect or is refused with a reason.

Every node reads most parameters once, at its start: those are read-only, and a set is refused naming
the parameter (before, the set succeeded and changed nothing). Parameters a node can take while it runs
are checked like at the start and refused with the same message when out of range; taking effect is
tested where it shows (the identifier's quality gate: test_identifier_node).
"""
import pytest

from ros_graph import start_node, stop_node

# node: (arguments it needs to start, a read-only parameter, a value of its type within its range)
READ_ONLY = {
    "experiment_runner": ((), "rate_hz", 250.0),
    "sim_robot": ((), "noise_std", 0.1),
    "feedforward": ((), "reference_timeout", 1.0),
    "recorder": ((), "flush_period", 2.0),
    "identifier": ((), "max_samples", 30000),
    "hydraulic_identifier": (("-p", "cylinder_names:=[boom]", "-p", "piston_masses:=[10.0]", "-p", "damping:=[100.0]",
                              "-p", "areas_a:=[0.001]", "-p", "areas_b:=[0.0005]"), "forgetting", 0.99),
}


def started(node, arguments, tmp_path):
    namespace = f"/live_{node}"
    if node == "recorder":
        arguments = (*arguments, "-p", f"bag_path:={tmp_path / 'bag'}")
    log = tmp_path / f"{node}.log"
    return start_node(node, "-r", f"__ns:={namespace}", *arguments, log_path=log), f"{namespace}/{node}", log


@pytest.mark.parametrize("node", READ_ONLY)
def test_a_parameter_read_at_the_start_is_refused_naming_it_and_keeps_its_value(graph, node, tmp_path):
    arguments, name, value = READ_ONLY[node]
    process, path, log = started(node, arguments, tmp_path)
    try:
        graph.wait_until_spinning(path)
        before = graph.get_parameters(path, name)
        [result] = graph.set_parameters(path, **{name: value})
        assert not result.successful and result.reason == f"Trying to set a read-only parameter: {name}.", result
        assert graph.get_parameters(path, name) == before
    finally:
        assert stop_node(process) == 0, log.read_text()


def test_a_live_parameter_out_of_range_is_refused_with_the_starts_message_and_a_good_value_is_taken(graph,
                                                                                                    tmp_path):
    process, path, log = started("feedforward", (), tmp_path)
    try:
        graph.wait_until_spinning(path)
        [refused] = graph.set_parameters(path, standstill_velocity=5.0)
        assert not refused.successful
        assert refused.reason == "parameter standstill_velocity must be finite and in (0, 1] [rad/s], got 5.0"
        assert graph.get_parameters(path, "standstill_velocity") == [0.01]
        [taken] = graph.set_parameters(path, standstill_velocity=0.05)
        assert taken.successful, taken.reason
        assert graph.get_parameters(path, "standstill_velocity") == [0.05]
        # SetParameters (ros2 param set, several at once) takes each on its own: the live one, not the other
        results = graph.set_parameters(path, standstill_velocity=0.02, reference_timeout=1.0)
        assert [result.successful for result in results] == [True, False], results
        assert graph.get_parameters(path, "standstill_velocity", "reference_timeout") == [0.02, 0.5]
    finally:
        assert stop_node(process) == 0, log.read_text()
