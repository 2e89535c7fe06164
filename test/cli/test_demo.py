"""robot-dynid demo: the in-process ROS graph, and the core-only demo; both leave a bag and a model
that the offline commands reproduce."""
import re
import sys

import numpy as np
import pytest
import yaml

from robot_dynid.cli import main
from robot_dynid.cli.demo import held_out_motion
from robot_dynid.experiment.simulation import SimulatedRobot, simulation_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.package_files import find_package_file
from short_plan import write_short_plan


def test_offline_demo_output_identifies_offline_and_predicts_held_out_torques(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--offline", "--out", str(out), "--periods", "2", "--rate", "200", "--noise", "0.5",
                 "--seed", "1"]) == 0
    printed = capsys.readouterr().out
    assert "feed-forward error on a held-out trajectory" in printed
    assert "report (torque fits, parameters per cycle, friction stages;" in printed
    assert str(out / "report" / "index.html") in printed and (out / "report" / "summary.json").is_file()
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
    _, q, qd, qdd = held_out_motion(model.robot)
    error = model.torque(q, qd, qdd) - simulator.torques(q, qd, qdd, noise=False)
    assert np.sqrt(np.mean(error**2)) < 0.2 * 0.5


def printed_column(printed, section, column, joints):
    """Per-joint values of ``column`` in the first table after the line containing ``section``."""
    lines = printed[printed.index(section):].splitlines()
    header = next(line for line in lines if line.startswith("joint "))
    index = re.split(r"\s{2,}", header).index(column)
    rows = {line.split()[0]: re.split(r"\s{2,}", line) for line in lines if line.split()[:1] and
            line.split()[0] in joints}
    return np.array([float(rows[joint][index]) for joint in joints])


def test_ros_demo_runs_the_graph_in_process_and_reports_the_services_torques(tmp_path, capsys, er3a_robot):
    pytest.importorskip("rclpy")
    robot = er3a_robot
    write_short_plan(robot, tmp_path / "plan.yaml", seed=3)
    (tmp_path / "short.yaml").write_text(yaml.safe_dump(
        {"experiment_runner": {"ros__parameters": {"plan_file": str(tmp_path / "plan.yaml"), "start_delay": 1.0}}}))
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--seed", "3", "--params-file", str(tmp_path / "short.yaml")]) == 0
    printed = capsys.readouterr().out
    assert "the identifier published model version 1" in printed
    assert "identified versus true base parameters" in printed

    # the torques the service gave are the model file's: the printed errors are recomputed from it
    model = DynamicModel.load(out / "model.yaml")
    simulator = SimulatedRobot(model.regressor, simulation_parameters(model.regressor, seed=3), np.zeros(6))
    _, q, qd, qdd = held_out_motion(robot)
    rms = np.sqrt(np.mean((model.torque(q, qd, qdd) - simulator.torques(q, qd, qdd, noise=False)) ** 2, axis=0))
    shown = printed_column(printed, "from the ComputeFeedforward service", "RMS error [N m]", robot.joint_names)
    np.testing.assert_allclose(shown, rms, rtol=1e-3)
    assert rms.max() < 0.2 * 0.5   # as in test/ros/test_end_to_end.py: 5x the expected least-squares error
    assert (out / "recording" / "metadata.yaml").is_file()
    assert f"--data {out / 'recording'}" in printed
    assert "report (torque fits" in printed and (out / "report" / "index.html").is_file()


@pytest.mark.parametrize("content, message", [
    ("sim_robot: [1, \n", r"is not valid YAML"),
    ("sim_robto:\n  ros__parameters: {noise_std: 1.0}\n", r"'sim_robto' is not one of the demo's nodes \['recorder'"),
    ("sim_robot:\n  noise_std: 1.0\n", r"sim_robot needs a mapping 'ros__parameters: \{name: value\}'"),
    ("sim_robot:\n  ros__parameters: {noise: 1.0}\n", r"sim_robot has no parameter 'noise'"),
    ("sim_robot:\n  ros__parameters: {noise_std: abc}\n",
     r"sim_robot: .*'noise_std' to 'abc' of type 'STRING', expecting type 'DOUBLE'"),
    ("sim_robot:\n  ros__parameters: {noise_std: [1.0]}\n",     # (an integer is taken for a double, as 1.0)
     r"sim_robot: .*'noise_std'.*'DOUBLE_ARRAY', expecting type 'DOUBLE'"),
])
def test_ros_demo_names_what_is_wrong_in_a_parameter_file(tmp_path, capsys, content, message):
    pytest.importorskip("rclpy")
    (tmp_path / "bad.yaml").write_text(content)
    assert main(["demo", "--out", str(tmp_path / "demo"), "--params-file", str(tmp_path / "bad.yaml")]) == 2
    error = capsys.readouterr().err
    assert re.search(message, error), error
    assert str(tmp_path / "bad.yaml") in error


def test_the_mujoco_engine_without_mujoco_is_one_line_saying_how_to_install_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco", None)
    assert main(["demo", "--offline", "--engine", "mujoco", "--out", str(tmp_path / "demo")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and 'pip install "robot-dynid[sim]"' in error, error
