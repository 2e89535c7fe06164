"""Friction model columns against hand-computed values, symmetry, dead band and drift."""
import math

import numpy as np
import pytest

from robot_dynid.errors import DataError, DynIdError
from robot_dynid.model.friction import FRICTION_MODEL_NAMES, FrictionModel, friction_model

SPEEDS = np.array([[0.5, -2.0], [-0.5, 2.0], [0.0, 0.001]])


def test_coulomb_viscous_hand_values():
    columns = friction_model("coulomb_viscous").columns(SPEEDS)
    assert columns.shape == (3, 2, 2)
    np.testing.assert_allclose(columns[0, 0], [1.0, 0.5])
    np.testing.assert_allclose(columns[0, 1], [-1.0, -2.0])
    np.testing.assert_allclose(columns[2, 0], [0.0, 0.0])


def test_stribeck_cbrt_hand_values():
    columns = friction_model("stribeck_cbrt").columns(np.array([[8.0, -0.125]]))
    np.testing.assert_allclose(columns[0, 0], [1.0, 8.0, 2.0])
    np.testing.assert_allclose(columns[0, 1], [-1.0, -0.125, -0.5])


def test_polynomial_hand_values():
    columns = friction_model("polynomial").columns(np.array([[-3.0]]))
    np.testing.assert_allclose(columns[0, 0], [-1.0, -3.0, -9.0, -27.0])


def test_arctan_reproduces_printed_static_model():
    fs, fc, fv, k, vs = 3.0, 2.0, 0.7, 50.0, 0.2
    model = friction_model("arctan", sign_sharpness=k, stribeck_velocity=vs)
    v = np.linspace(-1.5, 1.5, 31)[:, None]
    printed = (fs * (2 / math.pi) * np.arctan(k * v)
               + (fc - fs) * (2 / math.pi) * np.arctan(v / vs) + fv * v)
    torque = model.torque(np.array([[fc, fv, fs]]), v)
    np.testing.assert_allclose(torque, printed, atol=1e-12)
    # at v = vs, atan(1) = pi/4 exactly: the fc column is 1/2
    np.testing.assert_allclose(model.columns(np.array([[vs]]))[0, 0, 0], 0.5)


@pytest.mark.parametrize("name", FRICTION_MODEL_NAMES[1:])
def test_columns_are_odd_in_speed(name):
    v = np.random.default_rng(3).uniform(-2, 2, size=(50, 3))
    model = friction_model(name)
    np.testing.assert_allclose(model.columns(-v), -model.columns(v), atol=1e-15)


@pytest.mark.parametrize("name", FRICTION_MODEL_NAMES[1:])
def test_dead_band_zeroes_slow_samples_only(name):
    model = friction_model(name, dead_band=0.05)
    v = np.array([[0.049, -0.049, 0.05, -0.3]])
    columns = model.columns(v)
    assert np.all(columns[0, :2] == 0.0)
    np.testing.assert_array_equal(columns[0, 2:], friction_model(name).columns(v)[0, 2:])


def test_none_model_has_no_columns():
    assert friction_model("none").columns(SPEEDS).shape == (3, 2, 0)


def test_temperature_drift_columns_and_names():
    model = friction_model("coulomb_viscous", drift="temperature", reference_temperature=20.0)
    assert model.coefficient_names == ("fc", "fv", "fc_dT", "fv_dT")
    columns = model.columns(np.array([[0.5]]), temperature=np.array([[35.0]]))
    np.testing.assert_allclose(columns[0, 0], [1.0, 0.5, 15.0, 7.5])


def test_time_drift_decays_with_elapsed_time():
    model = friction_model("coulomb_viscous", drift="time", warmup_time_constant=600.0)
    assert model.coefficient_names == ("fc", "fv", "fc_cold", "fv_cold")
    columns = model.columns(np.array([[-1.0], [-1.0]]), elapsed=np.array([0.0, 600.0]))
    np.testing.assert_allclose(columns[0, 0], [-1.0, -1.0, -1.0, -1.0])
    np.testing.assert_allclose(columns[1, 0, 2:], [-math.exp(-1.0)] * 2)


def test_missing_drift_inputs_are_named():
    with pytest.raises(DynIdError, match="needs temperature"):
        friction_model("stribeck_cbrt", drift="temperature").columns(SPEEDS)
    with pytest.raises(DynIdError, match="needs elapsed"):
        friction_model("stribeck_cbrt", drift="time").columns(SPEEDS)
    with pytest.raises(DynIdError, match=r"^temperature must have shape \(3 samples, 2 joints\), got \(3, 1\)$"):
        friction_model("stribeck_cbrt", drift="temperature").columns(SPEEDS, np.zeros((3, 1)))
    with pytest.raises(DynIdError, match=r"^elapsed must have shape \(3 samples,\), got \(4,\)$"):
        friction_model("stribeck_cbrt", drift="time").columns(SPEEDS, elapsed=np.zeros(4))


def test_validation_messages():
    with pytest.raises(DynIdError, match=r"^friction model must be one of \[.*'coulomb_viscous'.*\], got 'lugre'$"):
        friction_model("lugre")
    with pytest.raises(DynIdError, match="dead_band must be finite and >= 0, got -0.1"):
        friction_model("coulomb_viscous", dead_band=-0.1)
    with pytest.raises(DynIdError, match="sign_sharpness must be finite and > 0, got 0.0"):
        friction_model("arctan", sign_sharpness=0.0)
    with pytest.raises(DynIdError, match="stribeck_velocity must be finite and > 0"):
        friction_model("arctan", stribeck_velocity=float("nan"))
    with pytest.raises(DynIdError, match="warmup_time_constant must be finite and > 0"):
        friction_model("polynomial", warmup_time_constant=-5.0)
    with pytest.raises(DynIdError, match=r"^friction drift must be one of \[.*\], got 'humidity'$"):
        friction_model("polynomial", drift="humidity")
    with pytest.raises(DynIdError, match="needs a friction model, got name 'none'"):
        friction_model("none", drift="time")
    with pytest.raises(DynIdError, match=r"unknown friction constant\(s\) \['k'\]"):
        friction_model("arctan", k=3.0)
    with pytest.raises(DynIdError, match="dead_band must be a number"):
        friction_model("arctan", dead_band="0.1")
    with pytest.raises(DynIdError, match=r"^qd must have shape \(samples, joints\), got \(3,\)$"):
        friction_model("arctan").columns(np.zeros(3))
    with pytest.raises(DynIdError, match=r"^coefficients must have shape \(2 joints, 2 coefficients\), got \(4,\)$"):
        friction_model("coulomb_viscous").torque(np.zeros(4), SPEEDS)


def test_dict_round_trip():
    model = friction_model("arctan", dead_band=0.01, sign_sharpness=40.0, drift="temperature",
                           reference_temperature=25.0)
    assert FrictionModel.from_dict(model.to_dict()) == model
    with pytest.raises(DynIdError, match="unknown friction constant"):
        FrictionModel.from_dict({"name": "arctan", "speed": 1.0})


def test_lead_model_takes_the_sign_of_the_velocity_ahead():
    """fc sgn(v + tau_r a) + fv v, by hand: decelerating into a reversal the sign flips tau_r before v does."""
    model = friction_model("coulomb_viscous_lead", reversal_lead=0.01)
    v = np.array([[0.05, 0.02, -0.005, 0.0]])
    a = np.array([[-2.0, -3.0, 1.0, 0.0]])        # v + 0.01 a: 0.03, -0.01, 0.005, 0
    np.testing.assert_array_equal(model.columns(v, qdd=a)[0], [[1.0, 0.05], [-1.0, 0.02], [1.0, -0.005], [0.0, 0.0]])
    np.testing.assert_array_equal(model.columns(v)[0, :, 0], [1.0, 1.0, -1.0, 0.0])   # steady motion: sgn(v)
    assert friction_model("coulomb_viscous_lead", reversal_lead=0.0).columns(v, qdd=a).tolist() == \
        friction_model("coulomb_viscous").columns(v).tolist()
    np.testing.assert_allclose(model.torque([[2.0, 0.5]] * 4, v, qdd=a)[0], [2.025, -1.99, 1.9975, 0.0])
    with pytest.raises(DynIdError, match=r"reversal_lead must be finite and in \[0, 0.1\] \[s\], got 0.5"):
        friction_model("coulomb_viscous_lead", reversal_lead=0.5)
    with pytest.raises(DataError, match=r"^qdd must have shape \(1 sample, 4 joints\), got \(1, 2\)$"):
        model.columns(v, qdd=a[:, :2])


def test_the_regressor_gives_the_lead_model_the_accelerations_of_each_friction_row():
    """Joint rows see qdd, motor rows T qdd (a coupled wrist: motor 6 turns with q5 + q6)."""
    from robot_dynid.model.regressor import Regressor
    from robot_dynid.model.robot_loader import load_robot
    from robot_dynid.package_files import find_package_file
    robot = load_robot(find_package_file("config", "robots", "er3a_coupled_wrist.yaml"))
    lead = friction_model("coulomb_viscous_lead", reversal_lead=0.02)
    q = np.zeros((1, 6))
    qd = np.array([[0.0, 0.0, 0.0, 0.0, 0.001, 0.001]])        # motor 6: 50 (qd5 + qd6) = 0.1 rad/s
    qdd = np.array([[0.0, 0.0, 0.0, 0.0, -0.2, -0.2]])         # motor 6: -20 rad/s^2; 0.1 - 0.02 * 20 < 0
    for side, name, expected in (("joint", "fc6", -1.0), ("motor", "fc_m6", -1.0)):
        regressor = Regressor(robot, lead, friction_side=side)
        column = regressor.parameter_names.index(name)
        assert regressor.compute(q, qd, qdd)[0, 5, column] == pytest.approx(expected * (50.0 if side == "motor"
                                                                                        else 1.0))
        assert regressor.compute(q, qd, 0.0 * qdd)[0, 5, column] > 0.0


def test_reversal_lead_is_written_only_for_the_model_that_uses_it():
    assert "reversal_lead" not in friction_model("coulomb_viscous").to_dict()
    model = friction_model("coulomb_viscous_lead", reversal_lead=0.004)
    assert model.to_dict()["reversal_lead"] == 0.004 and FrictionModel.from_dict(model.to_dict()) == model
