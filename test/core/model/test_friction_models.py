"""The friction-model registry: every model declares its columns, names, units and bounds in one module, and a
new model (docs/examples/tanh_friction.py, the example of docs/friction_models.md) is one file that the
regressor, model files, the one-point feed-forward, the consistency bounds and the simulator all take."""
import importlib.util
import pathlib

import numpy as np
import pytest

from robot_dynid.errors import DynIdError
from robot_dynid.estimation.identification import IdentificationSettings, identify
from robot_dynid.estimation.physical_consistency import ParameterLayout, nonnegative_friction
from robot_dynid.experiment.simulation import SimulatedRobot, simulation_parameters
from robot_dynid.model import friction_models
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.feedforward import compute_feedforward
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.recordings.recording import Recording

EXAMPLE = pathlib.Path(__file__).resolve().parents[3] / "docs" / "examples" / "tanh_friction.py"


@pytest.fixture
def tanh_model():
    spec = importlib.util.spec_from_file_location("tanh_friction", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    friction_models.register(module.SHAPE)
    yield module.SHAPE
    friction_models.unregister("tanh")


def test_every_model_has_one_column_per_coefficient_with_a_unit_and_a_typical_value():
    v = np.linspace(-2.0, 2.0, 41)[:, None] * np.ones((1, 3))
    for name in friction_models.names():
        shape = friction_models.shape(name)
        columns = shape.columns(friction_model(name), v, 1.0, np.zeros_like(v))
        assert len(columns) == len(shape.coefficients), name
        for coefficient, column in zip(shape.coefficients, columns):
            assert column.shape == v.shape and np.all(np.isfinite(column)), (name, coefficient.name)
            # friction opposes motion: every column is odd in the speed (a = 0)
            np.testing.assert_allclose(column[::-1], -column, atol=1e-12, err_msg=f"{name} {coefficient.name}")
            value = coefficient.typical(np.array([100.0]), np.array([2.0]))
            assert np.all(np.isfinite(value)) and (value > 0 or not coefficient.nonnegative)


def test_the_package_models_are_found_and_a_second_of_one_name_is_refused():
    assert {"none", "coulomb_viscous", "coulomb_viscous_lead", "stribeck_cbrt", "arctan",
            "polynomial"} <= set(friction_models.names())
    assert friction_models.names()[:2] == ("none", "coulomb_viscous")
    with pytest.raises(DynIdError, match="'coulomb_viscous' is already registered"):
        friction_models.register(friction_models.FrictionShape(
            "coulomb_viscous", "x", (), lambda model, v, scale, a: []))
    with pytest.raises(DynIdError, match="friction model must be one of .* got 'tanh'"):
        friction_model("tanh")
    with pytest.raises(DynIdError, match="one of the package's own"):
        friction_models.unregister("arctan")


def test_units_and_bounds_come_from_the_registry():
    assert nonnegative_friction("arctan") == {"fc": "N m", "fv": "N m s/rad", "fs": "N m"}
    assert nonnegative_friction("stribeck_cbrt") == {"fc": "N m", "fv": "N m s/rad"}
    assert nonnegative_friction("polynomial") == {"f1": "N m", "f2": "N m s/rad"}
    drifting = friction_model("polynomial", drift="temperature")
    assert [drifting.coefficient_unit(name) for name in ("f1", "f3", "f4_dT")] == [
        "N m", "N m s^2/rad^2", "N m s^3/rad^3/K"]
    cold = friction_model("coulomb_viscous", drift="time", warmup_time_constant_2=300.0)
    assert [cold.coefficient_unit(name) for name in ("fv_cold", "fc_cold2")] == ["N m s/rad", "N m"]


def test_a_new_model_is_one_file(tanh_model, er3a_robot, tmp_path):
    """The example's model, registered: its torque is the formula's; a noise-free recording of a robot with it
    identifies the true torques back; its model file reads back; the one-point feed-forward equals the batch
    torque; its Coulomb and viscous levels are bounded >= 0 by the consistency layout."""
    friction = friction_model("tanh", stribeck_velocity=0.05)
    v = np.array([[-1.0, 0.01, 0.2]])
    coefficients = np.array([[1.0, 0.5], [2.0, 0.1], [3.0, 0.0]])
    np.testing.assert_allclose(friction.torque(coefficients, v),
                               coefficients[:, 0] * np.tanh(v / 0.05) + coefficients[:, 1] * v)
    assert friction.to_dict()["stribeck_velocity"] == 0.05 and "reversal_lead" not in friction.to_dict()

    regressor = Regressor(er3a_robot, friction)
    truth = simulation_parameters(regressor, seed=3)
    robot = SimulatedRobot(regressor, truth)
    rng = np.random.default_rng(0)
    time = np.arange(0.0, 20.0, 0.01)
    phases = rng.uniform(0.0, 2.0 * np.pi, (3, er3a_robot.n_joints))
    q = sum(0.4 * np.sin((k + 1) * 0.6 * time[:, None] + phases[k]) for k in range(3))
    qd = sum(0.4 * (k + 1) * 0.6 * np.cos((k + 1) * 0.6 * time[:, None] + phases[k]) for k in range(3))
    qdd = sum(-0.4 * ((k + 1) * 0.6) ** 2 * np.sin((k + 1) * 0.6 * time[:, None] + phases[k]) for k in range(3))
    tau = robot.torques(q, qd, qdd, noise=False)
    recording = Recording(er3a_robot.joint_names, time, q, qd, qdd, tau)
    model = identify(recording, er3a_robot, IdentificationSettings(friction=friction, check_torque_scale=False))
    np.testing.assert_allclose(model.torque(q, qd, qdd), tau, atol=1e-6 * np.abs(tau).max())
    assert model.base.names[-2:] == ("fc6", "fv6")

    path = model.save(tmp_path / "model.yaml")
    loaded = DynamicModel.load(path)
    assert loaded.friction == friction
    np.testing.assert_allclose(loaded.torque(q[:50], qd[:50], qdd[:50]), model.torque(q[:50], qd[:50], qdd[:50]))
    for k in (0, 777, 1999):    # the one-point path of the feed-forward (the node's reference topic)
        one = compute_feedforward(model, er3a_robot.joint_names, q[k], qd[k], qdd[k])
        np.testing.assert_allclose(one[0], tau[k], atol=1e-6 * np.abs(tau).max())

    layout = ParameterLayout.from_regressor(regressor)
    bounded = {regressor.parameter_names[index] for index in layout.nonnegative}
    assert {"fc1", "fv1", "fc6", "fv6"} <= bounded
