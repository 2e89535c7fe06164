"""The model artifact: deterministic YAML that round-trips, strict loading, torques equal to RNEA."""
import numpy as np
import pytest
import yaml

from robot_dynid.base_parameters import compute_base_parameters
from robot_dynid.errors import ModelFileError
from robot_dynid.friction import FrictionModel, friction_model
from robot_dynid.model import DynamicModel
from robot_dynid.package_files import find_package_file
from robot_dynid.regressor import Regressor
from robot_dynid.robot_description import load_robot
from robot_dynid.simulation import plausible_parameters
from rnea_reference import rnea_torques


@pytest.fixture(scope="module")
def er3a_model():
    """ER3A (modified DH: link frames are pinocchio's joint frames) with known parameters."""
    robot = load_robot(find_package_file("config", "robots", "er3a.yaml"))
    friction = friction_model("coulomb_viscous")
    base = compute_base_parameters(Regressor(robot, friction))
    inertial = plausible_parameters(robot, seed=4)
    coefficients = np.column_stack([np.linspace(1, 3, 6), np.linspace(0.5, 1.5, 6)])
    truth = np.concatenate([inertial, coefficients.ravel()])
    model = DynamicModel(robot, friction, False, False, base, base.projection @ truth,
                         np.full(base.rank, 0.01), metrics={"condition_number": 12.5},
                         provenance={"data_source": "unit test"})
    return model, inertial, coefficients


def rnea_with_friction(robot, inertial, coefficients, q, qd, qdd):
    return rnea_torques(robot, inertial, q, qd, qdd) + coefficients[:, 0] * np.sign(qd) + coefficients[:, 1] * qd


def test_torque_equals_rnea_plus_friction_for_one_point_and_a_batch(er3a_model):
    model, inertial, coefficients = er3a_model
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.uniform(-1, 1, (3, 8, 6))
    batch = model.torque(q, qd, qdd)
    assert batch.shape == (8, 6)
    for k in range(8):
        expected = rnea_with_friction(model.robot, inertial, coefficients, q[k], qd[k], qdd[k])
        np.testing.assert_allclose(batch[k], expected, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(model.torque(q[k], qd[k], qdd[k]), expected, rtol=1e-9, atol=1e-9)


def test_artifact_round_trips_byte_for_byte(er3a_model, tmp_path):
    model, _, _ = er3a_model
    path = model.save(tmp_path / "model.yaml")
    loaded = DynamicModel.load(path)
    assert loaded.to_yaml() == path.read_text()
    rng = np.random.default_rng(1)
    q, qd, qdd = rng.uniform(-1, 1, (3, 5, 6))
    np.testing.assert_array_equal(loaded.torque(q, qd, qdd), model.torque(q, qd, qdd))
    data = yaml.safe_load(path.read_text())
    assert data["units"]["inertial_parameter_order"] == ["m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz",
                                                         "Izz"]
    assert data["model"]["joint_names"] == list(model.robot.joint_names)
    assert [row["name"] for row in data["base_parameters"]["table"]] == list(model.base.names)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(schema_version=2), r"schema_version 2 is not supported"),
    (lambda d: d.update(schema="other"), r"schema is 'other'"),
    (lambda d: d.update(extra=1), r"unknown key\(s\) \['extra'\]"),
    (lambda d: d["model"].pop("friction"), r"missing key 'friction'"),
    (lambda d: d["base_parameters"]["table"].pop(), r"table does not match base_parameters.structure: missing \['fv6'\], unexpected \[\]"),
])
def test_malformed_artifacts_are_rejected_by_name(er3a_model, edit, message):
    model, _, _ = er3a_model
    data = yaml.safe_load(model.to_yaml())
    edit(data)
    with pytest.raises(ModelFileError, match=message):
        DynamicModel.from_dict(data)


def test_wrong_input_shape_names_the_field(er3a_model):
    model, _, _ = er3a_model
    with pytest.raises(ValueError, match=r"qd has shape \(1, 5\), expected \(N, 6\)"):
        model.torque(np.zeros(6), np.zeros(5), np.zeros(6))


def test_model_without_friction_has_no_friction_columns():
    robot = load_robot(find_package_file("config", "robots", "er3a.yaml"))
    base = compute_base_parameters(Regressor(robot, FrictionModel()))
    assert not any(name.startswith(("fc", "fv")) for name in base.names)
