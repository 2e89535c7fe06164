"""robot-dynid demo --drift: a cold start whose friction drifts; static, drift-model and tracked feed-forwards."""
import json

from robot_dynid.cli import main


def test_drift_demo_json_orders_the_three_feedforwards(capsys):
    assert main(["demo", "--drift", "--json", "--drift-duration", "120"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    error = summary["feedforward_error"]
    assert set(error) == {"static", "drift_model", "tracked"} and summary["unit"] == "N m"
    # over 80-120 s the warm model misses the cold excess (about 30 % of the friction); the served drift model
    # is within the identification noise, and the tracked model between the two
    assert error["drift_model"] < 0.1 * error["static"], error
    assert error["tracked"] < 0.5 * error["static"], error
    assert summary["tracked_models"] >= 1
    assert "running time [s]" in captured.err and "drift model served" in captured.err


def test_drift_demo_refuses_what_it_does_not_take(capsys):
    assert main(["demo", "--drift", "--drift-duration", "10"]) == 2
    assert "--drift-duration must be" in capsys.readouterr().err
    assert main(["demo", "--drift", "--offline"]) == 2
    assert "--drift takes neither" in capsys.readouterr().err
