"""robot-dynid base-parameters / identify / predict, called in-process through cli.main([...]).

Data come from the simulator with known standard parameters, so the identified base parameters
have an independent expected value: the base projection of the true parameters.
"""
import dataclasses
import json

import numpy as np
from scipy import stats
import pytest
import yaml

from cli_output import run
from robot_dynid.cli import main
from robot_dynid.experiment.simulation import SimulatedRobot, plausible_parameters
from robot_dynid.experiment.trajectories import FourierTrajectory, time_grid
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.bag_io import JOINT_STATE_TYPE, BagWriter
from robot_dynid.recordings.csv_io import read_csv, write_csv
from robot_dynid.recordings.recording import Recording
import torque_cases
from torque_cases import write_description

ROBOT = find_package_file("config", "robots", "ur5.yaml")
NOISE = 0.3  # N m


def excitation(robot, seed, period=8.0, harmonics=4, amplitude=0.12):
    """A random Fourier excitation whose speeds are about ``amplitude`` of the velocity limits."""
    rng = np.random.default_rng(seed)
    n = robot.n_joints
    scale = amplitude * np.array([lim.velocity for lim in robot.limits])[:, None]
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


def test_predict_of_a_resampled_low_pass_model_writes_its_grid_unfiltered(simulated, tmp_path, capsys):
    """A model identified with --resample 100 --lowpass 2 predicts on the 100 Hz grid, and its torques are the
    model's along the true motion there (a 2 Hz filter would cut the 0.5-3 Hz excitation's torques visibly)."""
    robot, simulator, truth, data, directory = simulated
    model_path = tmp_path / "filtered.yaml"
    assert main(["identify", "--robot", str(ROBOT), "--data", str(data), "--resample", "100", "--lowpass", "2",
                 "--out", str(model_path)]) == 0
    out = tmp_path / "torques.csv"
    capsys.readouterr()
    assert main(["predict", "--model", str(model_path), "--data", str(data), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "times: the uniform 100 Hz grid" in printed and "not low-pass filtered" in printed
    predicted = np.loadtxt(out, delimiter=",", skiprows=1)
    np.testing.assert_allclose(np.diff(predicted[:, 0]), 0.01, atol=1e-9)
    q, qd, qdd = excitation(robot, seed=11).evaluate(predicted[:, 0])
    model = DynamicModel.load(model_path)
    np.testing.assert_allclose(predicted[:, 1:], model.torque(q, qd, qdd), atol=0.05 * NOISE + 1e-3)


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


def two_recordings(simulated, tmp_path, offsets=((0.0,) * 6, (0.0,) * 6), rate=200.0):
    """Two recordings of different excitations of the simulated UR5, torques shifted by ``offsets`` [N m]."""
    robot, simulator, _, _, _ = simulated
    paths = []
    for index, (seed, offset) in enumerate(zip((21, 22), offsets)):
        t = time_grid(2 * 8.0, dt=1.0 / rate)
        q, qd, qdd = excitation(robot, seed=seed).evaluate(t)
        tau = simulator.torques(q, qd, qdd, rng=seed) + np.array(offset)
        paths.append(tmp_path / f"run{index}.csv")
        write_csv(paths[-1], Recording.from_arrays(robot.joint_names, t + 1000.0 * index, q, qd, qdd, tau))
    return paths


def test_several_recordings_are_stacked_as_one_least_squares_problem(simulated, tmp_path):
    """Against numpy's lstsq on the two files' regressors stacked (a second solver)."""
    robot, _, _, _, _ = simulated
    paths = two_recordings(simulated, tmp_path)
    assert main(["identify", "--robot", str(ROBOT), "--data", str(paths[0]), "--data", str(paths[1]),
                 "--out", str(tmp_path / "m.yaml")]) == 0
    model = DynamicModel.load(tmp_path / "m.yaml")
    rows, torques = [], []
    for path in paths:
        data = read_csv(path)
        rows.append(model.base.select(model.regressor.compute(data.q, data.qd, data.qdd)).reshape(-1, model.base.rank))
        torques.append(data.tau.reshape(-1))
    expected = np.linalg.lstsq(np.vstack(rows), np.concatenate(torques), rcond=None)[0]
    np.testing.assert_allclose(model.values, expected, rtol=1e-8, atol=1e-8 * np.abs(expected).max())
    assert model.provenance["data_source"] == [str(path) for path in paths]
    assert model.metrics["n_samples"] == 2 * 3201


def test_file_offsets_recover_a_torque_sensor_zeroed_differently_per_recording(simulated, tmp_path, capsys):
    robot, _, truth, _, _ = simulated
    offsets = ((1.5, -0.8, 0.4, 0.0, 0.3, -0.2), (-1.0, 0.6, -0.5, 0.2, 0.0, 0.1))
    paths = two_recordings(simulated, tmp_path, offsets)
    arguments = ["identify", "--robot", str(ROBOT), "--data", str(paths[0]), "--data", str(paths[1])]
    assert main(arguments + ["--file-offsets", "--out", str(tmp_path / "offsets.yaml")]) == 0
    assert "torque offset per recording [N m]" in capsys.readouterr().out
    model = DynamicModel.load(tmp_path / "offsets.yaml")
    estimated = np.array([[model.metrics["file_offsets"][str(path)][joint] for joint in robot.joint_names]
                          for path in paths])
    # the offset of a joint is seen against its gravity and friction terms: a few 1e-2 N m at 0.3 N m noise
    np.testing.assert_allclose(estimated, offsets, atol=0.05)
    z = (model.values - model.base.projection @ truth) / model.std
    assert np.abs(z).max() < 5.0, dict(zip(model.base.names, z.round(1)))
    assert main(arguments + ["--file-offsets", "--consistent", "--out", str(tmp_path / "consistent.yaml")]) == 0
    consistent = DynamicModel.load(tmp_path / "consistent.yaml")
    estimated = np.array([[consistent.metrics["file_offsets"][str(path)][joint] for joint in robot.joint_names]
                          for path in paths])
    np.testing.assert_allclose(estimated, offsets, atol=0.05)      # eliminated, then back-substituted
    assert main(arguments + ["--out", str(tmp_path / "plain.yaml")]) == 0
    plain = DynamicModel.load(tmp_path / "plain.yaml")
    # offsets ignored: biased, far beyond the white-noise std; the robust std, which counts such model error, covers it
    error = plain.values - plain.base.projection @ truth
    assert np.abs(error / plain.white_std).max() > 10.0 and plain.std_method == "block"
    assert np.abs(error / plain.std).max() < stats.t.ppf(0.995, plain.interval_dof)
    assert main(arguments + ["--file-offsets", "--offset", "--out", str(tmp_path / "x.yaml")]) == 2
    assert "not both" in capsys.readouterr().err


def test_derive_replaces_a_lagging_driver_velocity(simulated, tmp_path):
    """Drivers' velocities often come out of a filter with a lag: 20 ms here. The viscous friction fitted
    on them is off; --derive differentiates the positions instead and recovers it."""
    robot, simulator, truth, data, _ = simulated
    recording = read_csv(data)
    lag = 4                                          # samples of 5 ms
    lagging = np.vstack([np.repeat(recording.qd[:1], lag, axis=0), recording.qd[:-lag]])
    write_csv(tmp_path / "lagging.csv", Recording.from_arrays(robot.joint_names, recording.time, recording.q,
                                                              lagging, None, recording.tau))
    errors = {}
    for name, extra in (("recorded", []), ("derived", ["--derive"])):
        assert main(["identify", "--robot", str(ROBOT), "--data", str(tmp_path / "lagging.csv"),
                     "--out", str(tmp_path / f"{name}.yaml")] + extra) == 0
        model = DynamicModel.load(tmp_path / f"{name}.yaml")
        errors[name] = np.abs((model.values - model.base.projection @ truth) / model.std).max()
    assert errors["derived"] < 5.0 < errors["recorded"], errors


def test_lowpass_parallel_filtering_keeps_the_truth_and_needs_uniform_stamps(simulated, tmp_path, capsys):
    robot, _, truth, data, _ = simulated
    assert main(["identify", "--robot", str(ROBOT), "--data", str(data), "--lowpass", "20",
                 "--out", str(tmp_path / "filtered.yaml")]) == 0
    model = DynamicModel.load(tmp_path / "filtered.yaml")
    # a 20 Hz cutoff is far above the 0.5 Hz excitation: both sides keep the motion, the noise is halved
    z = (model.values - model.base.projection @ truth) / model.std
    assert np.abs(z).max() < 5.0, dict(zip(model.base.names, z.round(1)))
    recording = read_csv(data)
    # samples taken at irregular instants, stamped exactly (+-1 ms at 200 Hz): the stamps are the clock
    simulator = simulated[1]
    irregular = recording.time + np.random.default_rng(0).uniform(-0.001, 0.001, recording.n_samples)
    q, qd, qdd = excitation(robot, seed=11).evaluate(irregular)
    write_csv(tmp_path / "irregular.csv", Recording.from_arrays(robot.joint_names, irregular, q, qd, qdd,
                                                                simulator.torques(q, qd, qdd, rng=3)))
    assert main(["identify", "--robot", str(ROBOT), "--data", str(tmp_path / "irregular.csv"), "--lowpass", "20",
                 "--out", str(tmp_path / "x.yaml")]) == 2
    assert "--lowpass needs uniformly sampled data" in capsys.readouterr().err
    assert main(["identify", "--robot", str(ROBOT), "--data", str(tmp_path / "irregular.csv"), "--lowpass", "20",
                 "--resample", "200", "--out", str(tmp_path / "x.yaml")]) == 0
    # the same samples stamped on arrival (receive times jittering about the uniform clock they were taken on):
    # recognised, differentiated and filtered on that clock
    jittered = recording.time + np.random.default_rng(0).uniform(-0.001, 0.001, recording.n_samples)
    write_csv(tmp_path / "jittered.csv", Recording.from_arrays(robot.joint_names, jittered, recording.q, recording.qd,
                                                               recording.qdd, recording.tau))
    capsys.readouterr()
    assert main(["identify", "--robot", str(ROBOT), "--data", str(tmp_path / "jittered.csv"), "--lowpass", "20",
                 "--out", str(tmp_path / "x.yaml")]) == 0
    assert "derivatives on the nominal grid" in capsys.readouterr().out
    retimed = DynamicModel.load(tmp_path / "x.yaml")
    np.testing.assert_allclose(retimed.values, model.values, atol=1e-6 * np.abs(model.values).max())


def test_validate_reports_held_out_metrics_and_warns_beyond_the_identified_range(simulated, tmp_path, capsys):
    """The metrics against numpy on the model's own predictions; NRMS against UR5's effort limits (150 and 28 N m);
    a validation at twice the speed leaves the identified range."""
    robot, simulator, _, data, _ = simulated
    model_path = tmp_path / "m.yaml"
    held_out = tmp_path / "held_out.csv"
    t = time_grid(8.0, dt=0.005)
    q, qd, qdd = excitation(robot, seed=11).evaluate(t + 0.37)      # the identified motion, new noise: in range
    write_csv(held_out, Recording.from_arrays(robot.joint_names, t, q, qd, qdd, simulator.torques(q, qd, qdd, rng=31)))
    assert main(["identify", "--robot", str(ROBOT), "--data", str(data), "--validate", str(held_out),
                 "--out", str(model_path)]) == 0
    assert f"validation on {held_out}" in capsys.readouterr().out
    assert main(["validate", "--model", str(model_path), "--data", str(held_out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    model, recording = DynamicModel.load(model_path), read_csv(held_out)
    error = model.torque(recording.q, recording.qd, recording.qdd) - recording.tau
    rms = np.sqrt(np.mean(error**2, axis=0))
    for j, joint in enumerate(robot.joint_names):
        assert report["joints"][joint]["rms"] == pytest.approx(rms[j], rel=1e-9)
        assert report["joints"][joint]["nrms"] == pytest.approx(rms[j] / (2 * robot.limits[j].effort), rel=1e-9)
    assert report["warnings"] == []
    # no sample as fast as 1000 rad/s: the relative RMSD is undefined, written as null (strict JSON, not NaN)
    assert main(["validate", "--model", str(model_path), "--data", str(held_out), "--json",
                 "--speed-threshold", "1000"]) == 0
    strict = json.loads(capsys.readouterr().out, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
    assert all(strict["joints"][joint]["relative_rmsd"] is None for joint in robot.joint_names), strict["joints"]
    assert main(["validate", "--model", str(model_path), "--data", str(held_out), "--speed-threshold", "1000"]) == 0
    table = capsys.readouterr().out.splitlines()
    rows = table[table.index(next(line for line in table if line.startswith("-----"))) + 1:][:robot.n_joints]
    assert [row.split()[0] for row in rows] == list(robot.joint_names)
    assert all(row.split()[3] == "-" and row.split()[4] != "-" for row in rows), rows    # NRMS: UR5 has limits
    assert "-: undefined (rel. RMSD, no sample of the joint at |qd| >= 1000 rad/s)" in table
    fast = excitation(robot, seed=11, period=4.0, amplitude=0.24)    # twice the speed, four times the acceleration
    t = time_grid(4.0, dt=0.005)
    q, qd, qdd = fast.evaluate(t)
    write_csv(tmp_path / "fast.csv", Recording.from_arrays(robot.joint_names, t, q, qd, qdd,
                                                           simulator.torques(q, qd, qdd, rng=32)))
    assert main(["validate", "--model", str(model_path), "--data", str(tmp_path / "fast.csv")]) == 0
    out = capsys.readouterr().out
    assert "move faster than the model was identified on" in out and "accelerate harder" in out


def test_consistent_identification_exports_a_urdf_whose_dynamics_are_the_model(simulated, tmp_path, capsys):
    """--consistent on data with an unmodelled spring (5 N m/rad on joint 2): every link's pseudo-inertia
    (computed here with numpy) is positive semidefinite, friction >= 0, the exported URDF's RNEA (pinocchio)
    equals the model's rigid-body torques; OLS on the same data absorbs the spring into impossible
    inertias, and its plausibility check (in the JSON summary) says so."""
    pin = pytest.importorskip("pinocchio")
    robot, simulator, _, data, _ = simulated
    recording = read_csv(data)
    tau = recording.tau.copy()
    tau[:, 1] -= 5.0 * (recording.q[:, 1] - 0.2)
    write_csv(tmp_path / "spring.csv", Recording.from_arrays(robot.joint_names, recording.time, recording.q,
                                                             recording.qd, recording.qdd, tau))
    assert main(["identify", "--robot", str(ROBOT), "--data", str(tmp_path / "spring.csv"), "--consistent",
                 "--json", "--out", str(tmp_path / "consistent.yaml")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["metrics"]["plausibility"]["consistent"] is True
    model = DynamicModel.load(tmp_path / "consistent.yaml")
    for link in range(robot.n_joints):
        m, mx, my, mz, ixx, ixy, iyy, ixz, iyz, izz = model.standard[10 * link:10 * link + 10]
        inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        pseudo = np.block([[0.5 * np.trace(inertia) * np.eye(3) - inertia, np.array([[mx], [my], [mz]])],
                           [np.array([[mx, my, mz]]), np.array([[m]])]])
        assert np.linalg.eigvalsh(pseudo).min() > -1e-9, (link, np.linalg.eigvalsh(pseudo))
    friction = {name: value for name, value in zip(model.base.standard_names, model.standard)
                if name[:2] in ("fc", "fv")}
    assert min(friction.values()) >= -1e-9, friction
    assert [name for name, _ in model.links] == [f"{joint}_link" for joint in robot.joint_names]

    assert main(["export-urdf", "--model", str(tmp_path / "consistent.yaml"), "--out", str(tmp_path / "arm.urdf")]) == 0
    capsys.readouterr()
    exported = pin.buildModelFromXML((tmp_path / "arm.urdf").read_text())
    exported.gravity = pin.Motion(np.array(robot.gravity), np.zeros(3))
    data_pin = exported.createData()
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, qd, qdd = (rng.uniform(-1.0, 1.0, robot.n_joints) for _ in range(3))
        expected = model.regressor.compute(q[None], qd[None], qdd[None])[0][:, :10 * robot.n_joints] \
            @ model.standard[:10 * robot.n_joints]
        np.testing.assert_allclose(pin.rnea(exported, data_pin, q, qd, qdd), expected, rtol=1e-9,
                                   atol=1e-9 * np.abs(expected).max())

    assert main(["identify", "--robot", str(ROBOT), "--data", str(tmp_path / "spring.csv"), "--json",
                 "--out", str(tmp_path / "ols.yaml")]) == 0
    plausibility = json.loads(capsys.readouterr().out)["metrics"]["plausibility"]
    # more than a std away in the robust std, which count the unmodelled spring as model error (3 in white std)
    assert plausibility["consistent"] is False and plausibility["distance_std"] > 1.0, plausibility
    assert plausibility["messages"][0].startswith("base parameters are not physically consistent")


def test_a_dead_band_beyond_the_velocity_limits_is_refused_naming_the_option_and_joints(simulated, capsys):
    """UR5: every joint's velocity limit is 3.15 rad/s (config/robots/ur5.yaml); --dead-band 1e308 would
    silently remove all friction."""
    _, _, _, data, directory = simulated
    assert main(["identify", "--robot", str(ROBOT), "--data", str(data), "--dead-band", "1e308",
                 "--out", str(directory / "dead_band.yaml")]) == 2
    error = capsys.readouterr().err.strip()
    assert "--dead-band = 1e+308 rad/s is at or above the velocity limit of joint(s) shoulder_pan_joint (3.15 " \
           "rad/s)" in error and "\n" not in error, error
    assert not (directory / "dead_band.yaml").exists()


@pytest.mark.parametrize("efforts", [0, 40])
def test_a_bag_without_torques_names_its_effort_topic_and_the_option_to_give(simulated, tmp_path, capsys, efforts):
    """Joint states without effort, and the recorder's effort topic /joint_efforts in the bag with no message (its
    topic never delivered while recording) or with 40 messages of torques that --effort-topic would read."""
    robot = simulated[0]
    bag = tmp_path / "bag"
    with BagWriter(bag) as writer:
        writer.add_topic("/joint_efforts", JOINT_STATE_TYPE)
        for k in range(40):
            stamp = 1_700_000_000_000_000_000 + k * 5_000_000
            writer.write_joint_state(stamp, robot.joint_names, np.full(6, 0.01 * k), np.full(6, 0.1))
            if k < efforts:
                message = writer.typestore.types[JOINT_STATE_TYPE](
                    header=writer.header(stamp), name=list(robot.joint_names), position=np.zeros(6),
                    velocity=np.array([]), effort=np.ones(6))
                writer.write("/joint_efforts", JOINT_STATE_TYPE, message, stamp)
    code = main(["identify", "--robot", str(ROBOT), "--data", str(bag), "--out", str(tmp_path / "model.yaml")])
    error = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in error and "velocities" not in error, error
    expected = (f"{bag}: no torques [N m] to identify from: the joint states on /joint_states carry no effort" +
                ("; give --effort-topic /joint_efforts (its 40 messages hold the torques)" if efforts else
                 ", and the bag's effort topic /joint_efforts recorded no message (the recorder's effort_topic was "
                 "set, but nothing arrived on it"))
    assert expected in error, error


def test_a_transmission_puts_friction_and_armature_on_the_motors_unless_told_otherwise(simulated, capsys):
    """base-parameters of the coupled-wrist ER3A name motor-side parameters (fc_m6, Ia_m6) by default and
    joint-side ones with --friction-side joint; a motor side for a robot without motors is one line."""
    coupled = find_package_file("config", "robots", "er3a_coupled_wrist.yaml")
    assert main(["base-parameters", "--robot", str(coupled), "--armature", "--json"]) == 0
    names = [row["name"] for row in json.loads(capsys.readouterr().out)["base_parameters"]]
    assert {"fc_m6", "fv_m6", "Ia_m6"} <= set(names) and "fc6" not in names
    assert main(["base-parameters", "--robot", str(coupled), "--armature", "--friction-side", "joint", "--json"]) == 0
    names = [row["name"] for row in json.loads(capsys.readouterr().out)["base_parameters"]]
    assert "fc6" in names and not any("_m" in name for name in names)
    assert main(["identify", "--robot", str(ROBOT), "--data", str(simulated[3]), "--friction-side", "motor",
                 "--out", "never.yaml"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.endswith("--friction-side 'motor' needs motors: robot 'ur5' has no transmission (add "
                          "transmission.motor_from_joint to its description, see docs/robot_description.md)"), error


def robot_with_inertials(path, inertial, mass_factor=1.0):
    """UR5 with an ``inertial:`` entry per joint from standard parameters ``inertial`` (60,), masses times
    ``mass_factor`` (centres of mass and inertias about them kept): a CAD prior, possibly biased."""
    from robot_dynid.model.link_inertials import inertial_from_parameters
    data = yaml.safe_load(ROBOT.read_text())
    for j, joint in enumerate(data["joints"]):
        link = inertial_from_parameters(inertial[10 * j:10 * j + 10])
        joint["inertial"] = {"mass": float(link.mass * mass_factor), "com": [float(x) for x in link.com],
                             "inertia": [float(x) for x in link.inertia]}
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_prior_biased_by_25_percent_that_worsens_held_out_error_is_named_and_an_unbiased_one_is_not(
        tmp_path, capsys):
    """Two short, noisy recordings (4 s, 0.5 N m) and a strong regularised prior (weight 1e5: std 0.3 % of the link
    scales). With the true inertials as prior, the consistent fit predicts the recording it was not fitted on as
    well as least squares (cross-validated over the two); with every mass 25 % too high it predicts the shoulder
    and elbow far worse, and the warning names them. On a held-out recording the same; --prior-weight auto
    picks a weaker prior for the biased one, and then nothing is worse."""
    robot = load_robot(ROBOT)
    regressor = Regressor(robot, friction_model("coulomb_viscous"))
    inertial = plausible_parameters(robot, seed=5)
    truth = np.concatenate([inertial, np.tile([2.0, 1.0], 6)])
    simulator = SimulatedRobot(regressor, truth, np.full(6, 0.5))
    data = []
    for seed in (11, 12):
        t = time_grid(4.0, dt=0.01)
        q, qd, qdd = excitation(robot, seed=seed, period=4.0, amplitude=0.06).evaluate(t)
        write_csv(tmp_path / f"run{seed}.csv", Recording.from_arrays(robot.joint_names, t, q, qd, qdd,
                                                                     simulator.torques(q, qd, qdd, rng=seed)))
        data += ["--data", str(tmp_path / f"run{seed}.csv")]
    t = time_grid(9.0, dt=0.01)
    q, qd, qdd = excitation(robot, seed=99, period=9.0).evaluate(t)
    write_csv(tmp_path / "held_out.csv", Recording.from_arrays(robot.joint_names, t, q, qd, qdd,
                                                               simulator.torques(q, qd, qdd, rng=99)))
    unbiased = robot_with_inertials(tmp_path / "unbiased.yaml", inertial)
    biased = robot_with_inertials(tmp_path / "biased.yaml", inertial, 1.25)

    def identify(robot_file, *options):
        assert main(["identify", "--robot", str(robot_file), *data, "--consistent", "--prior-mode", "regularised",
                     *options, "--json", "--out", str(tmp_path / "model.yaml")]) == 0
        metrics = json.loads(capsys.readouterr().out)["metrics"]
        return metrics["consistency"], [text for text in metrics["warnings"] if "plain least squares" in text]

    consistency, warnings = identify(unbiased, "--prior-weight", "1e5")
    check = consistency["least_squares_check"]
    assert check["data"].startswith("held-out folds (cross-validated over 2 recordings)")
    assert check["worse"] == [] and warnings == [], check["text"]
    consistency, warnings = identify(biased, "--prior-weight", "1e5")
    check = consistency["least_squares_check"]
    assert {"shoulder_lift_joint", "elbow_joint"} <= set(check["worse"]), check["text"]
    assert check["joints"]["shoulder_lift_joint"]["increase"] > 0.25
    assert len(warnings) == 1 and "shoulder_lift_joint (" in warnings[0] and "elbow_joint (" in warnings[0]
    assert "the prior (the robot description's inertial data) costs most" in warnings[0]
    assert consistency["prior_increase"] > 10 * consistency["constraint_increase"]

    consistency, warnings = identify(biased, "--prior-weight", "1e6", "--validate", str(tmp_path / "held_out.csv"))
    check = consistency["least_squares_check"]
    assert check["data"] == f"held-out recording(s) {tmp_path / 'held_out.csv'}"
    assert "shoulder_lift_joint" in check["worse"] and "shoulder_lift_joint (" in warnings[0]
    model = DynamicModel.load(tmp_path / "model.yaml")      # the check against numpy on the same held-out file
    recording = read_csv(tmp_path / "held_out.csv")
    least_squares = np.array(model.metrics["consistency"]["least_squares_values"])
    standard = np.zeros(model.regressor.n_parameters)
    standard[list(model.base.independent)] = least_squares
    errors = [np.sqrt(np.mean((tau - recording.tau) ** 2, axis=0)) for tau in (
        model.torque(recording.q, recording.qd, recording.qdd),
        model.regressor.torque(standard, recording.q, recording.qd, recording.qdd))]
    assert check["joints"]["shoulder_lift_joint"]["increase"] == pytest.approx(errors[0][1] / errors[1][1] - 1.0,
                                                                               rel=1e-6)
    assert main(["validate", "--model", str(tmp_path / "model.yaml"), "--data", str(tmp_path / "held_out.csv"),
                 "--json"]) == 0                       # validate makes the same comparison
    report = json.loads(capsys.readouterr().out)
    assert report["least_squares_check"]["worse"] == check["worse"]
    assert any("shoulder_lift_joint (" in warning for warning in report["warnings"])

    consistency, warnings = identify(biased, "--prior-weight", "auto")
    assert consistency["prior_weight"] < 1e5 and warnings == [], consistency["least_squares_check"]["text"]
    assert set(consistency["prior_weight_scores"]) == {"0.1", "1", "10", "100", "1000", "10000", "100000", "1e+06"}


def test_identify_and_validate_report_the_stamps_and_warn_of_a_nominal_grid(simulated, tmp_path, capsys):
    """The simulated CSV's stamps are exactly k / 200 Hz: identify and validate print their timing and the
    nominal-grid warning, in text and JSON; stamps with 20 us of jitter and two samples lost get the report
    (2 missing in one gap) and no warning."""
    robot, _, _, data, _ = simulated
    assert main(["identify", "--robot", str(ROBOT), "--data", str(data), "--out", str(tmp_path / "m.yaml")]) == 0
    out = capsys.readouterr().out
    assert f"stamps of {data}: 4801 stamps at 200 Hz" in out
    assert f"warning: {data}: every stamp lies within" in out and "uniform 200 Hz grid" in out
    recording = read_csv(data)
    keep = np.r_[0:1000, 1002:recording.n_samples]
    time = recording.time[keep] + np.random.default_rng(0).normal(0.0, 20e-6, keep.size)
    measured = tmp_path / "measured.csv"
    columns = (getattr(recording, field)[keep] for field in ("q", "qd", "qdd", "tau"))
    write_csv(measured, Recording.from_arrays(robot.joint_names, time, *columns))
    assert main(["validate", "--model", str(tmp_path / "m.yaml"), "--data", str(measured), "--json"]) == 0
    stamps = json.loads(capsys.readouterr().out)["stamps"]
    assert len(stamps) == 1 and stamps[0]["source"] == str(measured)
    assert (stamps[0]["n_stamps"], stamps[0]["n_gaps"], stamps[0]["missing"]) == (4799, 1, 2)
    assert stamps[0]["nominal_grid"] is False and stamps[0]["warnings"] == []
    assert main(["identify", "--robot", str(ROBOT), "--data", str(measured), "--validate", str(data), "--json",
                 "--out", str(tmp_path / "m2.yaml")]) == 0
    stamps = json.loads(capsys.readouterr().out)["stamps"]
    assert [entry["nominal_grid"] for entry in stamps] == [False, True]
    assert main(["validate", "--model", str(tmp_path / "m.yaml"), "--data", str(data)]) == 0
    out = capsys.readouterr().out
    assert out.index(f"stamps of {data}") < out.index("validation on") and "uniform 200 Hz grid" in out


PIPELINE_STEPS = ("read", "check_and_drop", "resample", "differentiate", "condition_at_rest", "select")
ENTERED_ONCE = ("robot_dynid.recordings.data_files", "robot_dynid.recordings.csv_io",
                "robot_dynid.recordings.data_checks", "robot_dynid.recordings.stamp_quality",
                "robot_dynid.recordings.stage_detection")


def test_identify_takes_each_file_through_the_pipeline_steps_once_in_order(simulated, capsys):
    """Each --data file goes through recordings.pipeline's six steps once, in the order its docstring states, and
    enters the modules of reading, checking and selecting once (identify's path used to go back and forth between
    the CLI's options, data_files and data_checks)."""
    import collections
    import sys
    robot, _, _, data, directory = simulated
    steps, entered, stack = [], collections.Counter(), []

    def profile(frame, event, arg):
        if event == "call":
            module = frame.f_globals.get("__name__")
            if module == "robot_dynid.recordings.pipeline" and frame.f_code.co_name in PIPELINE_STEPS:
                steps.append(frame.f_code.co_name)
            if (module in ENTERED_ONCE and module not in stack and "robot_dynid.recordings.pipeline" in stack
                    and frame.f_code.co_name != "<module>"):       # a module's first import runs its body
                entered[module] += 1
            stack.append(module)
        elif event == "return" and stack:
            stack.pop()

    sys.setprofile(profile)
    try:
        code = main(["identify", "--robot", str(ROBOT), "--data", str(data), "--data", str(data), "--derive",
                     "--resample", "200", "--stage", "excitation", "--out", str(directory / "steps.yaml")])
    finally:
        sys.setprofile(None)
    assert code == 0, capsys.readouterr().err
    assert steps == list(PIPELINE_STEPS) * 2
    assert entered == {module: 2 for module in ENTERED_ONCE}


def test_each_warning_is_printed_once(tmp_path):
    """The same file read twice (as data and as held-out data) logs its stale rows twice, and the poorly excited
    parameters are logged and also printed with the model: each is printed once."""
    robot = write_description(torque_cases.described(), tmp_path / "ur5_prior.yaml")
    effects = dataclasses.replace(torque_cases.EFFECTS, repeat=0.05)
    write_csv(tmp_path / "stale.csv", torque_cases.run(effects=effects, source="stale.csv").recording)
    code, out, err = run("identify", "--robot", robot, "--data", tmp_path / "stale.csv", "--validate",
                         tmp_path / "stale.csv", "--out", tmp_path / "m.yaml")
    assert code == 0, err
    printed = out + err
    assert printed.count("repeat the previous row's positions, velocities and torques") == 1, printed
    assert printed.count("poorly excited base parameters") == 1, printed
    lines = [line for line in printed.splitlines() if "warning" in line.lower()]
    assert len(lines) == len(set(lines)), lines
