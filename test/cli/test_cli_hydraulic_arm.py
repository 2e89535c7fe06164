"""identify / validate --cylinders on the simulated curtain-wall arm (robot_dynid.hydraulics.simulation).

The cylinders are the simulation's own (Table V in SI, written as a results file with the true values), so
the only errors left are the pressure noise and the rigid-body fit. Expected values, independent of the
two-stage code under test:

- noise: 1 kPa per chamber through both areas and each cylinder's moment arm,
  ``sqrt(mean_k r_j(q_k)^2) * 1 kPa * hypot(A_a, A_b)`` per joint (cylinder j drives joint j alone);
- cylinder torque: the simulator's noise-free hydraulic torque less the rigid-body torque it was asked
  for, i.e. what the cylinders' own inertia, damping, stiffness and friction take (the simulator solves
  their force balance, not the regressor the two-stage code subtracts).
"""
import json

import numpy as np
import pytest
import yaml

from robot_dynid.cli import main
from robot_dynid.experiment.excitation import random_excitation
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.experiment.trajectories import time_grid
from robot_dynid.hydraulics import simulation
from robot_dynid.hydraulics.cylinder_results import CylinderResult, save_cylinder_results
from robot_dynid.hydraulics.two_stage import cylinder_geometry
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.recordings.csv_io import write_csv
from robot_dynid.recordings.recording import Recording
from repo_paths import ROBOTS

ROBOT = ROBOTS / "curtain_wall_arm.yaml"
DT = 0.04   # s


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    """Files of a hydraulic arm: true cylinder results, an identification and a held-out recording (CSV), the
    model identified with --cylinders, and the held-out expectations."""
    directory = tmp_path_factory.mktemp("hydraulic_arm")
    robot = load_robot(ROBOT)
    configs = simulation.curtain_wall_cylinders(robot)
    truth = simulation.table_v_parameters()
    cylinders = directory / "cylinders.yaml"
    save_cylinder_results(cylinders, [CylinderResult(config, parameters, np.zeros(4), 0.0, "ls", 1)
                                      for config, parameters in zip(configs, truth)])
    regressor = Regressor(robot, friction_model("none"))
    theta = plausible_parameters(robot, 0)
    files, held_out = [], {}
    for label, trajectory, duration, seed in (
            ("excitation", random_excitation(robot, harmonics=5, period=20.0, amplitude_fraction=0.8, seed=1),
             40.0, 2),
            ("held_out", random_excitation(robot, harmonics=4, period=10.0, amplitude_fraction=0.5, seed=7),
             10.0, 3)):
        t = time_grid(duration, dt=DT)
        q, qd, qdd = trajectory.evaluate(t % float(np.max(trajectory.period)))
        rigid = np.einsum("kjp,p->kj", regressor.compute(q, qd, qdd), theta)
        tau = simulation.hydraulic_torques(robot, configs, truth, q, qd, qdd, rigid, seed=seed)
        path = directory / f"{label}.csv"
        write_csv(path, Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau, source=label))
        files.append(path)
        if label == "held_out":
            noiseless = simulation.hydraulic_torques(robot, configs, truth, q, qd, qdd, rigid, noise=0.0)
            arms = cylinder_geometry(robot, configs).motion(q, qd, qdd).moment_arms      # (N, cylinder, joint)
            held_out = {
                "noise": np.sqrt(np.mean(np.sum(arms**2, axis=1), axis=0)) * simulation.PRESSURE_NOISE
                * np.hypot(simulation.AREA_A, simulation.AREA_B),
                "cylinder_torque": np.sqrt(np.mean((noiseless - rigid) ** 2, axis=0))}
    model = directory / "model.yaml"
    assert main(["identify", "--robot", str(ROBOT), "--data", str(files[0]), "--friction", "none",
                 "--cylinders", str(cylinders), "--out", str(model)]) == 0
    return {"robot": robot, "cylinders": cylinders, "data": files[0], "held_out": files[1], "model": model,
            "directory": directory, **held_out}


def validate(capsys, *arguments):
    capsys.readouterr()
    assert main(["validate", *map(str, arguments), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def rms(result, robot):
    return np.array([result["joints"][joint]["rms"] for joint in robot.joint_names])


def test_validate_with_cylinders_is_at_the_noise_level_and_without_counts_the_cylinder_torque(arm, capsys):
    robot = arm["robot"]
    with_cylinders = validate(capsys, "--model", arm["model"], "--data", arm["held_out"], "--cylinders",
                              arm["cylinders"])
    assert not [warning for warning in with_cylinders["warnings"] if "cylinder" in warning]
    np.testing.assert_allclose(rms(with_cylinders, robot), arm["noise"], rtol=0.15)
    without = validate(capsys, "--model", arm["model"], "--data", arm["held_out"])
    # residual = cylinder torque + noise (+ the small fit error): their squares add
    expected = np.hypot(arm["cylinder_torque"], rms(with_cylinders, robot))
    np.testing.assert_allclose(rms(without, robot), expected, rtol=0.02)
    assert np.all(rms(without, robot) > 2.0 * rms(with_cylinders, robot))
    warning = without["warnings"][0]
    assert "identified with the cylinder torques of" in warning and "give --cylinders" in warning


def test_the_model_records_the_subtraction_and_a_mismatch_is_a_warning(arm, capsys, tmp_path):
    text = arm["model"].read_text()
    assert f"cylinders: {arm['cylinders']}" in text
    assert "cylinder_torques_subtracted:\n  - c1\n" in text
    plain = tmp_path / "plain.yaml"
    assert main(["identify", "--robot", str(ROBOT), "--data", str(arm["data"]), "--friction", "none",
                 "--out", str(plain)]) == 0
    result = validate(capsys, "--model", plain, "--data", arm["held_out"], "--cylinders", arm["cylinders"])
    assert any("identified without --cylinders" in warning for warning in result["warnings"])
    capsys.readouterr()
    assert main(["validate", "--model", str(arm["model"]), "--data", str(arm["held_out"])]) == 0
    assert "warning: " + str(arm["model"]) + " was identified with the cylinder torques" in capsys.readouterr().out


def test_validate_cylinders_without_attachments_is_one_line(arm, capsys, tmp_path):
    results = yaml.safe_load(arm["cylinders"].read_text())
    del results["cylinders"][0]["cylinder"]["attachment"]
    broken = tmp_path / "no_attachment.yaml"
    broken.write_text(yaml.safe_dump(results))
    assert main(["validate", "--model", str(arm["model"]), "--data", str(arm["held_out"]),
                 "--cylinders", str(broken)]) == 2
    error = capsys.readouterr().err
    assert "cylinder 'c1' has no attachment" in error and "Traceback" not in error
