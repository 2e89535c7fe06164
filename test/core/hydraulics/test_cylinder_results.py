"""Cylinder configuration and results files (SI, unit-mistake detection) and attachment geometry."""
import re

import numpy as np
import pytest
import yaml

from robot_dynid.errors import DataError
from robot_dynid.hydraulics.attachment import CylinderGeometry
from robot_dynid.hydraulics.cylinder import CylinderIdentification, CylinderParameters
from robot_dynid.hydraulics.cylinder_results import (CylinderResult, load_cylinder_config,
                                                     load_cylinder_results, save_cylinder_results)
from robot_dynid.model.robot_loader import load_robot
from repo_paths import ROBOTS

CONFIG = {"cylinders": [
    {"name": "boom", "piston_mass": 4.595, "damping": 2000.0, "area_a": 1.2566e-3, "area_b": 8.765e-4,
     "load": 100.0, "attachment": {"joint": "j1", "moment_arm": 0.12}},
    {"name": "stick", "piston_mass": 4.914, "damping": 2000.0, "area_a": 1.2566e-3, "area_b": 8.765e-4,
     "attachment": {"base": {"link": "j1", "point": [-0.2, 0.1, 0.0]},
                    "rod": {"link": "j2", "point": [-0.4, 0.08, 0.0]}, "reference_length": 0.3}},
]}


def write(tmp_path, data, name="c.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def curtain_wall_arm():
    return load_robot(ROBOTS / "curtain_wall_arm.yaml")


def test_config_round_trip_through_results(tmp_path):
    configs = load_cylinder_config(write(tmp_path, CONFIG))
    assert [config.name for config in configs] == ["boom", "stick"]
    assert configs[0].cylinder.area_a == 1.2566e-3 and configs[0].load == 100.0
    assert configs[1].attachment.reference_length == 0.3
    identification = CylinderIdentification(
        parameters=CylinderParameters(3000.0, 20.77, 7830.0, -151.5), std=np.array([1.0, 0.1, 10.0, 0.5]),
        history=None, residual_rms=1.5, state=None, method="rls", convergence_samples=500, n_samples=6000)
    results = [CylinderResult.from_identification(config, identification, 0.02, forgetting=0.999)
               for config in configs]
    path = tmp_path / "cylinders.yaml"
    save_cylinder_results(path, results, provenance={"data": "x.csv"})
    text = path.read_text()
    save_cylinder_results(tmp_path / "again.yaml", results, provenance={"data": "x.csv"})
    assert (tmp_path / "again.yaml").read_text() == text          # deterministic
    loaded = load_cylinder_results(path)
    assert loaded[1].config == configs[1] and loaded[0].config == configs[0]
    np.testing.assert_array_equal(loaded[0].parameters.as_array(), [3000.0, 20.77, 7830.0, -151.5])
    np.testing.assert_array_equal(loaded[0].std, [1.0, 0.1, 10.0, 0.5])
    assert loaded[0].convergence_time == pytest.approx(10.0)       # 500 samples at 50 Hz
    assert yaml.safe_load(text)["units"]["fs"] == "N (s/m)^(1/3)"


@pytest.mark.parametrize("change, message", [
    ({"area_a": 1256.6}, r"cylinder 'boom'.area_a = 1256.6 m\^2 .* looks like mm\^2"),
    ({"area_b": 2e-3}, r"cylinder 'boom'.area_b = 0.002 m\^2 exceeds area_a"),
    ({"piston_mass": -1.0}, r"cylinder 'boom'.piston_mass must be finite and >= 0 \[kg\]"),
    ({"damping": "fast"}, r"cylinder 'boom'.damping must be finite and >= 0 \[N s/m\], got 'fast'"),
    ({"attachment": {"joint": "j1", "moment_arm": 120.0}}, r"moment_arm = 120 m .* looks like mm"),
    ({"attachment": {"base": {"link": "world", "point": [100.0, 0.0, 250.0]},
                     "rod": {"link": "j1", "point": [0.0, 0.0, 0.0]}}}, r"base.point is 269.258 m .* looks like mm"),
    ({"colour": "red"}, r"cylinders\[0\]: unknown key 'colour'"),
])
def test_config_errors_name_cylinder_key_and_unit(tmp_path, change, message):
    data = {"cylinders": [dict(CONFIG["cylinders"][0], **change)]}
    with pytest.raises(DataError, match=message):
        load_cylinder_config(write(tmp_path, data))


def test_config_structure_errors(tmp_path):
    with pytest.raises(DataError, match="missing key 'area_b'"):
        load_cylinder_config(write(tmp_path, {"cylinders": [{k: v for k, v in CONFIG["cylinders"][0].items()
                                                             if k != "area_b"}]}))
    with pytest.raises(DataError, match=re.escape("c.yaml: cylinders lists cylinder(s) ['boom'] more than once")):
        load_cylinder_config(write(tmp_path, {"cylinders": [CONFIG["cylinders"][0]] * 2}))
    with pytest.raises(DataError, match="not a cylinder results file"):
        load_cylinder_results(write(tmp_path, CONFIG))


def test_moment_arms_match_a_finite_difference_of_the_length():
    robot = curtain_wall_arm()
    configs = load_cylinder_config_from(CONFIG)
    geometry = CylinderGeometry(robot, [config.attachment for config in configs], ["boom", "stick"])
    rng = np.random.default_rng(0)
    step = 1e-6
    for q in rng.uniform(-0.3, 0.3, size=(5, robot.n_joints)):
        _, arms = geometry.length_and_arms(q)
        for joint in range(robot.n_joints):
            dq = np.zeros(robot.n_joints)
            dq[joint] = step
            expected = (geometry.length_and_arms(q + dq)[0] - geometry.length_and_arms(q - dq)[0]) / (2 * step)
            np.testing.assert_allclose(arms[:, joint], expected, atol=1e-8)
        assert abs(arms[1, 1]) > 0.02 and np.all(arms[1, 2:] == 0.0)     # the stick cylinder spans j2 only


def test_cylinder_accelerations_match_finite_differences_of_the_motion():
    robot = curtain_wall_arm()
    configs = load_cylinder_config_from(CONFIG)
    geometry = CylinderGeometry(robot, [config.attachment for config in configs], ["boom", "stick"])
    time = np.arange(0.0, 2.0, 1e-3)
    q = np.outer(0.3 * np.sin(1.5 * time), np.ones(robot.n_joints))
    qd = np.outer(0.45 * np.cos(1.5 * time), np.ones(robot.n_joints))
    qdd = np.outer(-0.675 * np.sin(1.5 * time), np.ones(robot.n_joints))
    motion = geometry.motion(q, qd, qdd)
    np.testing.assert_allclose(motion.xd[1:-1], (motion.x[2:] - motion.x[:-2]) / 2e-3, atol=1e-6)
    np.testing.assert_allclose(motion.xdd[1:-1], (motion.xd[2:] - motion.xd[:-2]) / 2e-3, atol=1e-5)


def test_motion_of_six_cylinders_with_a_world_attachment_matches_finite_differences():
    """Cylinder c1 is anchored to the world, c2..c6 span one joint each; every joint moves at its own rate."""
    from robot_dynid.hydraulics.simulation import curtain_wall_cylinders
    robot = curtain_wall_arm()
    configs = curtain_wall_cylinders(robot)
    geometry = CylinderGeometry(robot, [config.attachment for config in configs], [config.name for config in configs])
    time = np.arange(0.0, 1.0, 1e-3)
    amplitude, frequency = np.linspace(0.2, 0.45, 6), np.linspace(0.8, 2.3, 6)
    q = amplitude * np.sin(frequency * time[:, None])
    qd = amplitude * frequency * np.cos(frequency * time[:, None])
    qdd = -amplitude * frequency**2 * np.sin(frequency * time[:, None])
    motion = geometry.motion(q, qd, qdd)
    np.testing.assert_allclose(motion.x, geometry.displacement(q), atol=1e-15)
    np.testing.assert_allclose(motion.xd[1:-1], (motion.x[2:] - motion.x[:-2]) / 2e-3, atol=1e-6)
    np.testing.assert_allclose(motion.xdd[1:-1], (motion.xd[2:] - motion.xd[:-2]) / 2e-3, atol=1e-5)
    assert np.abs(motion.xdd).max() > 0.01
    step = 1e-6
    for k in (0, 400, 999):
        for joint in range(robot.n_joints):
            dq = np.zeros(robot.n_joints)
            dq[joint] = step
            expected = (geometry.displacement(q[k] + dq) - geometry.displacement(q[k] - dq))[0] / (2 * step)
            np.testing.assert_allclose(motion.moment_arms[k, :, joint], expected, atol=1e-8)


def test_coincident_attachment_points_name_the_cylinder_and_the_configuration():
    import pinocchio as pin
    from robot_dynid.model.robot_description import build_pinocchio_model
    robot = curtain_wall_arm()
    model = build_pinocchio_model(robot)
    data = model.createData()
    pin.framesForwardKinematics(model, data, np.zeros(robot.n_joints))
    base_point = np.array([0.05, 0.02, 0.0])
    world = data.oMf[model.getFrameId("j1_link")].act(base_point)
    rod_point = data.oMf[model.getFrameId("j2_link")].actInv(world)      # the same place at q = 0 only
    configs = load_cylinder_config_from({"cylinders": [dict(CONFIG["cylinders"][1], attachment={
        "base": {"link": "j1", "point": base_point.tolist()},
        "rod": {"link": "j2", "point": [float(value) for value in rod_point]}})]})
    geometry = CylinderGeometry(robot, [configs[0].attachment], ["stick"])
    q = np.zeros((3, robot.n_joints))
    q[0] = 0.1
    assert geometry.length_and_arms(q[0])[0][0] > 1e-3
    message = r"cylinder 'stick': its attachment points coincide \(length .* m < 1e-06 m\) at q = \[0.0, 0.0, 0.0"
    with pytest.raises(DataError, match=message):
        geometry.motion(q, np.zeros_like(q), np.zeros_like(q))


def test_attachment_to_an_unknown_joint():
    configs = load_cylinder_config_from({"cylinders": [dict(CONFIG["cylinders"][0],
                                                            attachment={"joint": "j9", "moment_arm": 0.1})]})
    message = ("cylinder 'boom': attachment lists unknown joint(s) ['j9']; robot 'curtain_wall_arm' has "
               "['j1', 'j2', 'j3', 'j4', 'j5', 'j6']")
    with pytest.raises(DataError, match=re.escape(message)):
        CylinderGeometry(curtain_wall_arm(), [configs[0].attachment], ["boom"])


def load_cylinder_config_from(data):
    from robot_dynid.hydraulics.cylinder_results import cylinder_config_from_dict
    return cylinder_config_from_dict(data)
