"""robot-dynid payload identify | attach | detach, and the payload through predict, validate, export-urdf,
excitation optimize --payload and protocol --payload.

Recordings are a minute at 500 Hz of the UR5 URDF arm with a 2.8 kg tool at tool0, torques from pinocchio's
RNEA on pinocchio's own URDF model (``rnea_reference.rnea_urdf_with_payload``) with 1 % noise, written as CSV.
"""
import csv
import dataclasses
import json

import numpy as np
import pinocchio as pin
import pytest
import yaml

from cli_output import run
from rnea_reference import rnea_urdf_with_payload
from robot_dynid.experiment.excitation import random_excitation
from robot_dynid.experiment.protocol import load_plan
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.experiment.trajectories import load_trajectory
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.csv_io import write_csv
from robot_dynid.recordings.recording import Recording

ROBOT = find_package_file("config", "robots", "ur5_urdf.yaml")
INERTIA = np.array([[0.01, 0.001, -0.002], [0.001, 0.012, 0.0005], [-0.002, 0.0005, 0.008]])   # kg m^2
TOOL = ("tool0", 2.8, np.array([0.01, -0.02, 0.08]), INERTIA)


def assert_one_line_error(result, command, *fragments):
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"robot-dynid {command}: error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def payload_file(path, mass=2.8, com=(0.01, -0.02, 0.08), inertia=(0.01, 0.001, -0.002, 0.012, 0.0005, 0.008)):
    path.write_text(yaml.safe_dump({"frame": "tool0", "mass": mass, "com": list(com), "inertia": list(inertia)}))
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The arm's model, a training and a held-out recording with the tool, the robot's link parameters."""
    directory = tmp_path_factory.mktemp("payload")
    robot = load_robot(ROBOT)
    parameters = plausible_parameters(robot, seed=1)
    DynamicModel.from_standard(robot, parameters, std=1e-3).save(directory / "arm.yaml")
    t = np.arange(0.0, 60.0, 1.0 / 500.0)
    for name, seed in (("data", 3), ("holdout", 4)):
        trajectory = dataclasses.replace(random_excitation(robot, 5, 10.0, 0.5, seed=seed), duration=60.0)
        q, qd, qdd = trajectory.evaluate(t)
        tau = rnea_urdf_with_payload(robot.urdf, parameters, TOOL, q, qd, qdd)
        tau += np.random.default_rng(seed).normal(size=tau.shape) * 0.01 * np.sqrt(np.mean(tau**2, axis=0))
        write_csv(directory / f"{name}.csv", Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau))
    return {"dir": directory, "arm": directory / "arm.yaml", "data": directory / "data.csv",
            "holdout": directory / "holdout.csv", "robot": robot, "parameters": parameters}


@pytest.fixture(scope="module")
def identified(files):
    out = files["dir"] / "payload.yaml"
    result = run("payload", "identify", "--model", files["arm"], "--data", files["data"], "--frame", "tool0",
                 "--holdout", files["holdout"], "--out", out)
    assert result.returncode == 0, result.stderr
    return out, result


def test_identify_writes_the_payload_with_its_std_and_residuals(files, identified):
    out, result = identified
    data = yaml.safe_load(out.read_text())
    assert data["schema"] == "robot_dynid/payload" and data["robot"] == "ur5_urdf" and data["frame"] == "tool0"
    assert abs(data["mass"] - 2.8) < 0.028 and np.linalg.norm(np.subtract(data["com"], TOOL[2])) < 0.005
    truth = [INERTIA[i, j] for i, j in [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]]
    assert np.all(np.abs(np.subtract(data["inertia"], truth)) <= 3.0 * np.array(data["std"]["inertia"]))
    assert data["undetermined"] == [] and data["warnings"] == []
    for split in ("training", "holdout"):
        before, after = data["residual"][split]["before"], data["residual"][split]["after"]
        assert set(before) == set(files["robot"].joint_names)
        assert all(after[joint] < 0.1 * before[joint] for joint in before), split
    assert "mass" in result.stdout and "kg" in result.stdout and f"written to {out}" in result.stdout
    assert "(holdout)" in result.stdout


def test_identify_json_is_the_file_content(files, tmp_path):
    result = run("payload", "identify", "--model", files["arm"], "--data", files["data"], "--frame", "tool0",
                 "--mass", "2.8", "--json", "--out", tmp_path / "p.yaml")
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed["mass"] == 2.8 and printed["std"]["mass"] == 0.0 and printed["fit"]["known_mass"] is True
    assert printed["com"] == yaml.safe_load((tmp_path / "p.yaml").read_text())["com"]


def predicted(path):
    with open(path) as stream:
        rows = list(csv.reader(stream))
    return np.array(rows[1:], dtype=float)[:, 1:]


def test_attached_payload_is_in_predict_validate_and_detach_restores_the_arm(files, identified, tmp_path):
    out, _ = identified
    arm_tool = tmp_path / "arm_tool.yaml"
    result = run("payload", "attach", "--model", files["arm"], "--payload", out, "--out", arm_tool)
    assert result.returncode == 0, result.stderr
    assert "attached" in result.stdout and "warning" not in result.stdout
    payload = yaml.safe_load(out.read_text())
    result = run("predict", "--model", arm_tool, "--data", files["holdout"], "--out", tmp_path / "tau.csv")
    assert result.returncode == 0, result.stderr
    robot = files["robot"]
    t = np.arange(0.0, 60.0, 1.0 / 500.0)[::500]
    trajectory = dataclasses.replace(random_excitation(robot, 5, 10.0, 0.5, seed=4), duration=60.0)
    q, qd, qdd = trajectory.evaluate(t)
    identified_body = ("tool0", payload["mass"], payload["com"],
                       np.array([[payload["inertia"][i] for i in row] for row in ((0, 1, 2), (1, 3, 4), (2, 4, 5))]))
    expected = rnea_urdf_with_payload(robot.urdf, files["parameters"], identified_body, q, qd, qdd)
    np.testing.assert_allclose(predicted(tmp_path / "tau.csv")[::500], expected, rtol=1e-9,
                               atol=1e-9 * np.abs(expected).max())
    rms = {}
    for name, model in (("arm", files["arm"]), ("arm_tool", arm_tool)):
        result = run("validate", "--model", model, "--data", files["holdout"], "--json")
        assert result.returncode == 0, result.stderr
        rms[name] = json.loads(result.stdout)["joints"]
    assert all(rms["arm_tool"][j]["rms"] < 0.1 * rms["arm"][j]["rms"] for j in robot.joint_names), rms
    result = run("payload", "detach", "--model", arm_tool, "--out", tmp_path / "arm_again.yaml")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "arm_again.yaml").read_bytes() == files["arm"].read_bytes()


@pytest.mark.parametrize("fields, fragments", [
    ({"mass": -1.0}, ["payload.yaml: payload at 'tool0' is not physically consistent: mass -1.0 kg must be > 0"]),
    ({"inertia": (0.01, 0.0, 0.0, 0.01, 0.0, 0.05)}, ["violate the triangle inequality"]),
    ({"com": (0.0, 0.0, float("inf"))}, ["payload com[2] must be finite, got inf"]),
])
def test_attach_refuses_a_payload_no_body_can_have(files, tmp_path, fields, fragments):
    bad = payload_file(tmp_path / "payload.yaml", **fields)
    result = run("payload", "attach", "--model", files["arm"], "--payload", bad, "--out", tmp_path / "m.yaml")
    assert_one_line_error(result, "payload", *fragments)
    assert not (tmp_path / "m.yaml").exists()


def test_attach_warns_of_an_implausible_payload(files, tmp_path):
    heavy = payload_file(tmp_path / "payload.yaml", mass=12.0)
    result = run("payload", "attach", "--model", files["arm"], "--payload", heavy, "--out", tmp_path / "m.yaml")
    assert result.returncode == 0, result.stderr
    assert ("warning: implausible payload: mass 12 kg is more than 2 times the robot's rated payload of 5 kg"
            in result.stdout)


def test_export_urdf_carries_the_payload_as_a_fixed_link(files, tmp_path):
    arm_tool = tmp_path / "arm_tool.yaml"
    assert run("payload", "attach", "--model", files["arm"], "--payload", payload_file(tmp_path / "p.yaml"),
               "--out", arm_tool).returncode == 0
    result = run("export-urdf", "--model", arm_tool, "--out", tmp_path / "arm_tool.urdf")
    assert result.returncode == 0, result.stderr
    exported = pin.buildModelFromXML((tmp_path / "arm_tool.urdf").read_text())
    assert exported.existFrame("payload")
    data = exported.createData()
    q, qd, qdd = np.random.default_rng(3).uniform(-1.0, 1.0, (3, 5, 6))
    expected = np.array([pin.rnea(exported, data, *state) for state in zip(q, qd, qdd)])
    np.testing.assert_allclose(DynamicModel.load(arm_tool).torque(q, qd, qdd), expected, rtol=1e-9,
                               atol=1e-9 * np.abs(expected).max())


def test_payload_excitation_and_protocol(files, tmp_path):
    trajectory_file, plan_file = tmp_path / "payload_excitation.yaml", tmp_path / "plan.yaml"
    result = run("excitation", "optimize", "--robot", ROBOT, "--payload", "--duration", "30", "--frame", "tool0",
                 "--harmonics", "3", "--starts", "1", "--iterations", "10", "--out", trajectory_file)
    assert result.returncode == 0, result.stderr
    assert "payload excitation of 30 s" in result.stdout
    trajectory = load_trajectory(trajectory_file)
    assert trajectory.duration == 30.0
    q, _, _ = trajectory.evaluate(np.linspace(0.0, 30.0, 301))
    assert np.ptp(q[:, :3], axis=0).max() == 0.0 and np.ptp(q[:, 3:], axis=0).min() > 0.1   # the wrist alone
    result = run("protocol", "--robot", ROBOT, "--payload", trajectory_file, "--out", plan_file)
    assert result.returncode == 0, result.stderr
    plan = load_plan(plan_file)
    assert plan.cycles == 1 and {row.kind for row in plan.cycle_stages} == {"payload"}
    assert_one_line_error(run("excitation", "optimize", "--robot", ROBOT, "--duration", "30", "--out",
                              tmp_path / "x.yaml"), "excitation", "--duration only apply with --payload")
    assert_one_line_error(run("protocol", "--robot", ROBOT, "--payload", trajectory_file, "--validation",
                              trajectory_file), "protocol", "--payload plans the payload stage alone: --validation")


@pytest.fixture(scope="module")
def differential_files(files):
    """An arm model 5 % off on every link and the training motion recorded without the tool (stamps 2.5 s later,
    another noise draw)."""
    directory, robot, parameters = files["dir"], files["robot"], files["parameters"]
    signs = np.random.default_rng(7).choice([-1.0, 1.0], robot.n_joints)
    wrong = (parameters.reshape(-1, 10) * (1.0 + 0.05 * signs)[:, None]).ravel()
    DynamicModel.from_standard(robot, wrong, std=1e-3).save(directory / "arm_wrong.yaml")
    t = np.arange(0.0, 60.0, 1.0 / 500.0)
    trajectory = dataclasses.replace(random_excitation(robot, 5, 10.0, 0.5, seed=3), duration=60.0)
    q, qd, qdd = trajectory.evaluate(t)
    tau = rnea_urdf_with_payload(robot.urdf, parameters, None, q, qd, qdd)
    tau += np.random.default_rng(9).normal(size=tau.shape) * 0.01 * np.sqrt(np.mean(tau**2, axis=0))
    write_csv(directory / "unloaded.csv", Recording.from_arrays(robot.joint_names, t + 2.5, q, qd, qdd, tau))
    return {"arm": directory / "arm_wrong.yaml", "unloaded": directory / "unloaded.csv"}


def test_unloaded_makes_the_fit_differential_and_cancels_the_arm_models_error(files, differential_files, tmp_path):
    common = ["payload", "identify", "--model", differential_files["arm"], "--data", files["data"], "--frame", "tool0"]
    plain = run(*common, "--json", "--out", tmp_path / "plain.yaml")
    assert plain.returncode == 0, plain.stderr
    assert abs(json.loads(plain.stdout)["mass"] - 2.8) > 0.05 * 2.8          # the arm's 5 % error taken as payload
    result = run(*common, "--unloaded", differential_files["unloaded"], "--out", tmp_path / "payload.yaml")
    assert result.returncode == 0, result.stderr
    data = yaml.safe_load((tmp_path / "payload.yaml").read_text())
    assert abs(data["mass"] - 2.8) < 0.03 * 2.8
    low, high = data["uncertainty"]["intervals"]["mass"]
    assert low <= 2.8 <= high and data["uncertainty"]["std_method"] == "block"
    assert data["differential"]["shift"] == pytest.approx(2.5, abs=1e-3)
    assert data["inertia_prior"]["body"].startswith("solid cylinder") and data["undetermined"] == []
    lines = result.stdout.splitlines()
    assert "differential (minus the unloaded run)" in lines[0]
    assert lines[1].startswith("std: robust: jackknife over time blocks") and "95 % interval = value +-" in lines[1]
    assert any(line.startswith("unloaded ") and "aligned with stamps +2.5 s" in line for line in lines)
    assert any(line.split()[:1] == ["mass"] and f"[{low:.6g}, {high:.6g}]" in line for line in lines), lines
    attached = run("payload", "attach", "--model", differential_files["arm"], "--payload", tmp_path / "payload.yaml",
                   "--out", tmp_path / "arm_tool.yaml")
    assert attached.returncode == 0, attached.stderr


def test_unloaded_of_another_motion_or_count_is_one_line(files, differential_files, tmp_path):
    common = ["payload", "identify", "--model", differential_files["arm"], "--data", files["data"], "--frame", "tool0"]
    assert_one_line_error(run(*common, "--unloaded", files["holdout"], "--out", tmp_path / "p.yaml"), "payload",
                          f"{files['holdout']} does not follow the motion of {files['data']}",
                          "record the unloaded run with the same trajectory")
    assert_one_line_error(run(*common, "--data", files["holdout"], "--unloaded", differential_files["unloaded"],
                              "--out", tmp_path / "p.yaml"), "payload", "--unloaded: give one unloaded recording per "
                                                                        "--data file (2)")
