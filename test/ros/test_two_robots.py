"""Two simulated arms identified side by side in one ROS domain, in the namespaces robot1 and robot2.

Each is a ``robot-dynid demo --namespace`` process (sim_robot, experiment_runner, recorder,
identifier and feedforward, all with relative names) with its own true parameters (seeds 3 and
4). If a topic or service escaped its namespace, an identifier would fit the other arm's samples
too, or the feed-forward service of the other arm would answer: each model must predict its own
arm's noise-free torques and not the other's.
"""
import pathlib
import subprocess
import sys

import numpy as np
import yaml

from robot_dynid.cli.demo import held_out_motion
from robot_dynid.experiment.simulation import SimulatedRobot, simulation_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from short_plan import write_short_plan

SEEDS = {"robot1": 3, "robot2": 4}


def held_out_rms(model, seed):
    """RMS error [N m] per joint of ``model`` against the noise-free torques of the arm of ``seed``."""
    simulator = SimulatedRobot(model.regressor, simulation_parameters(model.regressor, seed=seed), np.zeros(6))
    _, q, qd, qdd = held_out_motion(model.robot)
    return np.sqrt(np.mean((model.torque(q, qd, qdd) - simulator.torques(q, qd, qdd, noise=False)) ** 2, axis=0))


def test_two_arms_in_two_namespaces_each_get_their_own_model(tmp_path, er3a_robot):
    robot = er3a_robot
    write_short_plan(robot, tmp_path / "plan.yaml", seed=3)
    (tmp_path / "short.yaml").write_text(yaml.safe_dump(
        {"/**/experiment_runner": {"ros__parameters": {
            "plan_file": str(tmp_path / "plan.yaml"), "start_delay": 1.0}},
         "/**/sim_robot": {"ros__parameters": {"rate": 200.0}}}))   # two graphs share 2 cores
    processes = {name: subprocess.Popen(
        [str(pathlib.Path(sys.prefix) / "bin" / "robot-dynid"), "demo", "--namespace", name, "--seed", str(seed),
         "--out", str(tmp_path / name), "--params-file", str(tmp_path / "short.yaml")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for name, seed in SEEDS.items()}
    outputs = {name: process.communicate(timeout=600)[0] for name, process in processes.items()}
    for name, process in processes.items():
        assert process.returncode == 0, outputs[name]
        assert "started sim_robot, experiment_runner, recorder, identifier and feedforward" in outputs[name]
        assert "the identifier published model version 1" in outputs[name]

    models = {name: DynamicModel.load(tmp_path / name / "model.yaml") for name in SEEDS}
    for name, seed in SEEDS.items():
        other = SEEDS["robot2" if name == "robot1" else "robot1"]
        own = held_out_rms(models[name], seed)
        # the arms' torques differ by up to 5.6 N m (RMS on the held-out motion, joint j2): accuracy is
        # test_demo's to check (500 Hz, 0.1 N m); these 200 Hz models, on a machine two graphs load,
        # only have to tell their arm from the other
        assert own.max() < 1.0, (name, own)
        assert held_out_rms(models[name], other).max() > 4 * own.max(), (name, held_out_rms(models[name], other))
