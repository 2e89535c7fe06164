"""The quality gate's one definition of its bounds: the intervals the identifier node, the fleet and the
streaming identifier take them from."""
import pytest

from robot_dynid.errors import DynIdError
from robot_dynid.estimation.quality_gate import check_gate_bound, gate_interval
from robot_dynid.estimation.streaming import StreamingSettings
from robot_dynid.fleet.task_options import TaskOptions


def test_the_intervals_read_as_the_node_and_the_fleet_state_them():
    assert gate_interval("max_holdout_rsd") == "(0, 1]"
    assert gate_interval("max_condition") == "(1, 1e12]"
    assert gate_interval("holdout_fraction") == "(0, 1)"


@pytest.mark.parametrize("name, inside, outside", [("max_holdout_rsd", [1e-9, 0.5, 1.0], [0.0, 1.0 + 1e-9, -1.0]),
                                                   ("max_condition", [1.0 + 1e-9, 1e3, 1e12], [1.0, 2e12]),
                                                   ("holdout_fraction", [1e-9, 0.2, 1.0 - 1e-9], [0.0, 1.0, -0.1])])
def test_a_bound_is_taken_inside_its_interval_only(name, inside, outside):
    assert [check_gate_bound(name, value) for value in inside] == inside
    for value in outside + [float("nan"), float("inf")]:
        with pytest.raises(DynIdError, match=rf"^{name} must be finite and in \("):
            check_gate_bound(name, value)


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_the_fleet_and_the_streaming_identifier_refuse_the_same_holdout_fractions(value):
    """No held-out sample leaves the gate nothing to judge a candidate on (each would be rejected), no fitted sample
    nothing to fit: both users of the gate refuse either end in the same words."""
    message = rf"^holdout_fraction must be finite and in \(0, 1\) \[1\], got {value}$"
    with pytest.raises(DynIdError, match=message):
        TaskOptions(holdout_fraction=value)
    with pytest.raises(DynIdError, match=message):
        StreamingSettings(holdout_fraction=value)
