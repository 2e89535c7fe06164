"""robot-dynid base-parameters / identify / predict, called in-process through cli.main([...]).

Data come from the simulator with known standard parameters, so the identified base parameters
have an independent expected value: the base projection of the true parameters.
"""
import json

import numpy as np
import pytest
import yaml

from robot_dynid.bag_io import JOINT_STATE_TYPE, BagWriter
from robot_dynid.cli import main
from robot_dynid.csv_io import read_csv, write_csv
from robot_dynid.friction import friction_model
from robot_dynid.model import DynamicModel
from robot_dynid.package_files import find_package_file
from robot_dynid.recording import Recording
from robot_dynid.regressor import Regressor
from robot_dynid.robot_description import load_robot
from robot_dynid.simulation import SimulatedRobot, plausible_parameters
from robot_dynid.trajectories import FourierTrajectory, time_grid

ROBOT = find_package_file("config", "robots", "ur5.yaml")
NOISE = 0.3  # N m


def excitation(robot, seed, period=8.0, harmonics=4):
    rng = np.random.default_rng(seed)
    n = robot.n_joints
    scale = 0.12 * np.array([lim.velocity for lim in robot.limits])[:, None]
    return FourierTrajectory(robot.joint_names, period=period, q0=np.zeros(n),
                             a=rng.normal(0.0, 1.0, (n, harmonics)) * scale,
                             b=rng.normal(0.0, 1.0, (n, harmonics)) * scale)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    robot = load_robot(ROBOT)
    friction = friction_model("coulomb_viscous")
    regressor = Regressor(robot, friction)
    rng = np.random.default_rng(5)
    truth = np.concatenate([plausible_parameters(robot, seed=5),
                            np.column_stack([rng.uniform(1, 3, 6), rng.uniform(0.5, 2, 6)]).ravel()])
    simulator = SimulatedRobot(regressor, truth, np.full(6, NOISE))
    trajectory = excitation(robot, seed=11)
    t = time_grid(3 * 8.0, dt=0.005)
    q, qd, qdd = trajectory.evaluate(t)
    tau = simulator.torques(q, qd, qdd, rng=3)
    directory = tmp_path_factory.mktemp("cli")
    data = directory / "data.csv"
    write_csv(data, Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau, source="sim"))
    return robot, simulator, truth, data, directory


def test_base_parameters_of_puma560_match_the_literature_count(capsys):
    assert main(["base-parameters", "--robot", str(find_package_file("config", "robots", "puma560.yaml")),
                 "--friction", "none", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n_base"] == 36
    assert report["n_standard"] == 60
    assert len(report["base_parameters"]) == 36


def test_identify_recovers_true_base_parameters_and_predicts_held_out_motion(simulated, capsys):
    robot, simulator, truth, data, directory = simulated
    model_path = directory / "model.yaml"
    assert main(["identify", "--robot", str(ROBOT), "--data", str(data), "--friction", "coulomb_viscous",
                 "--out", str(model_path)]) == 0
    assert "condition number" in capsys.readouterr().out
    model = DynamicModel.load(model_path)
    true_base = model.base.projection @ truth
    z = (model.values - true_base) / model.std
    assert np.all(np.abs(z) < 5.0), dict(zip(model.base.names, np.round(z, 1)))

    held_out = excitation(robot, seed=99, period=9.0)
    t = time_grid(9.0, dt=0.01)
    q, qd, qdd = held_out.evaluate(t)
    error = model.torque(q, qd, qdd) - simulator.torques(q, qd, qdd, noise=False)
    assert np.sqrt(np.mean(error**2)) < 0.2 * NOISE


def test_identify_from_motor_currents_equals_identify_from_torques(simulated, tmp_path, capsys):
    """The same motion recorded once with torques and once with motor currents i = tau / (k_t r):
    identifying with --current-topic and a robot file holding k_t and r gives the same model."""
    robot, _, _, data, _ = simulated
    recording = read_csv(data)
    description = yaml.safe_load(open(ROBOT, encoding="utf-8"))
    constants, ratios = [0.3, 0.3, 0.2, -0.1, 0.1, 0.1], [100.0, 100.0, 80.0, 60.0, 50.0, 50.0]
    for joint, constant, ratio in zip(description["joints"], constants, ratios):
        joint.update(torque_constant=constant, gear_ratio=ratio)
    robot_file = tmp_path / "ur5_drives.yaml"
    robot_file.write_text(yaml.safe_dump(description))
    currents = recording.tau / (np.array(constants) * np.array(ratios))
    bags = {"torques": tmp_path / "torques", "currents": tmp_path / "currents"}
    with BagWriter(bags["torques"]) as torques, BagWriter(bags["currents"]) as motors:
        for k, stamp in enumerate(np.round(recording.time * 1e9).astype(np.int64)):
            torques.write_joint_state(int(stamp), robot.joint_names, recording.q[k], recording.qd[k],
                                      recording.tau[k])
            motors.write_joint_state(int(stamp), robot.joint_names, recording.q[k], recording.qd[k])
            motors.write("/motor_currents", JOINT_STATE_TYPE, motors.typestore.types[JOINT_STATE_TYPE](
                header=motors.header(int(stamp)), name=list(robot.joint_names)[::-1], position=np.array([]),
                velocity=np.array([]), effort=currents[k, ::-1].copy()), int(stamp))
    models = {}
    for name, extra in (("torques", []), ("currents", ["--current-topic", "/motor_currents"])):
        out = tmp_path / f"{name}.yaml"
        assert main(["identify", "--robot", str(robot_file), "--data", str(bags[name]), "--out", str(out)]
                    + extra) == 0
        models[name] = DynamicModel.load(out)
    np.testing.assert_allclose(models["currents"].values, models["torques"].values, rtol=1e-9,
                               atol=1e-9 * np.abs(models["torques"].values).max())
    del description["joints"][2]["torque_constant"]
    robot_file.write_text(yaml.safe_dump(description))
    assert main(["identify", "--robot", str(robot_file), "--data", str(bags["currents"]), "--current-topic",
                 "/motor_currents", "--out", str(tmp_path / "none.yaml")]) == 2
    assert f"joint {robot.joint_names[2]!r} has no torque_constant [N m/A]" in capsys.readouterr().err


def test_predict_writes_model_torques_for_every_row(simulated, tmp_path):
    robot, simulator, truth, data, directory = simulated
    model_path = directory / "model_for_predict.yaml"
    assert main(["identify", "--robot", str(ROBOT), "--data", str(data), "--out", str(model_path)]) == 0
    out = tmp_path / "torques.csv"
    assert main(["predict", "--model", str(model_path), "--data", str(data), "--out", str(out)]) == 0
    header = out.read_text().splitlines()[0].split(",")
    assert header == ["time"] + [f"tau.{name}" for name in robot.joint_names]
    predicted = np.loadtxt(out, delimiter=",", skiprows=1)
    recorded = read_csv(data)
    assert predicted.shape == (recorded.n_samples, 7)
    noise_free = simulator.torques(recorded.q, recorded.qd, recorded.qdd, noise=False)
    assert np.sqrt(np.mean((predicted[:, 1:] - noise_free) ** 2)) < 0.2 * NOISE


def test_identify_names_a_missing_joint_column(simulated, tmp_path, capsys):
    robot, _, _, data, _ = simulated
    lines = data.read_text().splitlines()
    header = lines[0].split(",")
    drop = header.index(f"tau.{robot.joint_names[2]}")
    (tmp_path / "bad.csv").write_text("\n".join(
        ",".join(cell for i, cell in enumerate(line.split(",")) if i != drop) for line in lines[:200]) + "\n")
    assert main(["identify", "--robot", str(ROBOT), "--data", str(tmp_path / "bad.csv"),
                 "--out", str(tmp_path / "m.yaml")]) == 2
    assert f"tau.{robot.joint_names[2]}" in capsys.readouterr().err
    assert not (tmp_path / "m.yaml").exists()


def test_identify_rejects_a_robot_file_in_degrees(tmp_path, capsys):
    text = ROBOT.read_text()
    robot = load_robot(ROBOT)
    degrees = f"{np.degrees(robot.limits[0].velocity):.1f}"
    bad = tmp_path / "ur5_degrees.yaml"
    bad.write_text(text.replace(f"velocity_limit: {robot.limits[0].velocity}", f"velocity_limit: {degrees}", 1))
    assert bad.read_text() != text
    assert main(["base-parameters", "--robot", str(bad)]) == 2
    assert "degrees" in capsys.readouterr().err


def test_identify_stops_on_a_csv_in_degrees_and_drops_a_corrupt_torque(simulated, tmp_path, capsys):
    robot, _, _, data, _ = simulated
    recording = read_csv(data)
    degrees = recording.q.copy()
    degrees[:, 1] = np.degrees(degrees[:, 1])
    write_csv(tmp_path / "degrees.csv", Recording.from_arrays(robot.joint_names, recording.time, degrees,
                                                              recording.qd, recording.qdd, recording.tau))
    assert main(["identify", "--robot", str(ROBOT), "--data", str(tmp_path / "degrees.csv"),
                 "--out", str(tmp_path / "m.yaml")]) == 2
    error = capsys.readouterr().err
    assert f"column q.{robot.joint_names[1]}" in error and "looks like degrees" in error, error
    tau = recording.tau.copy()
    tau[50, 3] = 1e300
    write_csv(tmp_path / "spike.csv", Recording.from_arrays(robot.joint_names, recording.time, recording.q,
                                                            recording.qd, recording.qdd, tau))
    assert main(["identify", "--robot", str(ROBOT), "--data", str(tmp_path / "spike.csv"),
                 "--out", str(tmp_path / "m.yaml")]) == 0
    model = DynamicModel.load(tmp_path / "m.yaml")
    assert model.metrics["n_dropped"] == 1 and np.all(np.isfinite(model.values))
    [(reason, entry)] = model.metrics["dropped"].items()
    assert reason.startswith(f"|torque| of {robot.joint_names[3]} above") and entry["first_time"] == recording.time[50]
