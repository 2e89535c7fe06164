"""robot-dynid demo: leaves a bag, a CSV and a model that the offline commands reproduce."""
import numpy as np

from robot_dynid.cli import main
from robot_dynid.cli.demo import held_out_trajectory
from robot_dynid.model import DynamicModel
from robot_dynid.package_files import find_package_file
from robot_dynid.simulation import SimulatedRobot, simulation_parameters
from robot_dynid.trajectories import load_trajectory, time_grid


def test_demo_output_identifies_offline_and_predicts_held_out_torques(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--periods", "2", "--noise", "0.5"]) == 0
    printed = capsys.readouterr().out
    assert "feed-forward error on a held-out trajectory" in printed
    model = DynamicModel.load(out / "model.yaml")

    robot_file = find_package_file("config", "robots", "er3a.yaml")
    for data in (out / "recording", out / "recording.csv"):
        offline = tmp_path / f"offline_{data.suffix or 'bag'}.yaml"
        assert main(["identify", "--robot", str(robot_file), "--data", str(data), "--out", str(offline)]) == 0
        again = DynamicModel.load(offline)
        assert again.base.names == model.base.names
        # The CSV holds the analytic accelerations, the bag needs them differentiated: both agree to noise level.
        np.testing.assert_allclose(again.values, model.values, atol=3 * model.std.max() + 1e-9)

    simulator = SimulatedRobot(model.regressor, simulation_parameters(model.regressor, seed=1), np.zeros(6))
    validation = held_out_trajectory(load_trajectory(find_package_file("config", "trajectories",
                                                                       "er3a_table_4_1.yaml")))
    q, qd, qdd = validation.evaluate(time_grid(float(np.max(validation.period)), dt=0.01))
    error = model.torque(q, qd, qdd) - simulator.torques(q, qd, qdd, noise=False)
    assert np.sqrt(np.mean(error**2)) < 0.2 * 0.5
