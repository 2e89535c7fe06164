"""Hydraulic cylinder model and its identification against the hydraulic paper's tables.

Units are SI (see robot_dynid.hydraulics.cylinder); the paper's table is in millimetres and is
converted here: fv [N s/mm] x 1000 = [N s/m], fs [N (s/mm)^(1/3)] x 10 = [N (s/m)^(1/3)],
c = 2 N s/mm = 2000 N s/m. Not in the paper, assumed here: bore 40 mm / rod 22 mm
(A_a = 1.2566e-3 m^2, A_b = 8.765e-4 m^2), stiffness K = 3 N/mm = 3000 N/m, load 100 N,
rod-side pressure 5 bar, pressure noise 1 kPa (0.01 bar) per chamber, 50 Hz.
"""
import math

import numpy as np
import pytest

from reference_tables import reference_table
from robot_dynid.errors import DynIdError
from robot_dynid.estimation.estimators import RecursiveLeastSquares
from robot_dynid.hydraulics.cylinder import (CylinderParameters, HydraulicCylinder,
                                             cylinder_regressor, identify_cylinder, known_force,
                                             nominal_scales, settling_sample, simulate_cylinder,
                                             sinusoidal_displacement)

AREA_A = math.pi * 0.020**2
AREA_B = AREA_A - math.pi * 0.011**2
STIFFNESS = 3000.0
LOAD = 100.0
NOISE = 1e3            # Pa per chamber
RATE = 50.0            # Hz
# the paper's x = 6 mm sin(0.05 t) plus two faster sines: speeds from 0 to 18 mm/s, so that
# x', cbrt(x') and sgn(x') differ over the data (the paper's alone reaches 0.3 mm/s)
RICH_AMPLITUDES = (0.006, 0.02, 0.005)
RICH_FREQUENCIES = (0.05, 0.3, 2.3)


def table_v(joint):
    """Cylinder and true parameters of ``joint`` (1-6) from Tables IV and V, in SI."""
    table = reference_table("curtain_wall_arm.yaml")["cylinders"]
    row = table["stribeck_table_V"][joint - 1]
    cylinder = HydraulicCylinder(piston_mass=table["piston_mass_kg"][joint - 1],
                                 damping=table["damping_c"] * 1000.0, area_a=AREA_A, area_b=AREA_B)
    return cylinder, CylinderParameters(STIFFNESS, row["fc"], row["fv"] * 1000.0, row["fs"] * 10.0)


def noisy(pressures, rng, noise=NOISE):
    return (pressures.p_a + noise * rng.normal(size=pressures.p_a.size),
            pressures.p_b + noise * rng.normal(size=pressures.p_b.size))


def test_regressor_hand_values():
    np.testing.assert_allclose(cylinder_regressor([0.002, 0.0], [-0.008, 0.0]),
                               [[0.002, -1.0, -0.008, -0.2], [0.0, 0.0, 0.0, 0.0]])


def test_paper_units_convert_to_the_same_friction_force():
    # at 0.3 mm/s the paper's joint-1 friction is 20.77 + 7.83 * 0.3 - 15.15 * cbrt(0.3) N
    expected = 20.77 + 7.83 * 0.3 - 15.15 * 0.3 ** (1.0 / 3.0)
    _, parameters = table_v(1)
    assert parameters.friction([3e-4])[0] == pytest.approx(expected, rel=1e-12)


def test_simulated_pressure_hand_value():
    # m x'' = 2 kg * 1 m/s^2 = 2 N; c x' = 2 N; K x = 3 N; F_d = 10 + 1 - 2 = 9 N; F_L = 5 N
    cylinder = HydraulicCylinder(piston_mass=2.0, damping=2.0, area_a=1e-3, area_b=5e-4)
    parameters = CylinderParameters(stiffness=3.0, fc=10.0, fv=1.0, fs=-2.0)
    pressures = simulate_cylinder(cylinder, parameters, [1.0], [1.0], [1.0], load=5.0,
                                  back_pressure=5e5)
    np.testing.assert_allclose(pressures.p_a, [(21.0 + 5e5 * 5e-4) / 1e-3])
    np.testing.assert_allclose(pressures.p_b, [5e5])
    # the left-hand side without inertia, damping and load is the unknowns' part, 3 + 9 N
    np.testing.assert_allclose(known_force(cylinder, [1.0], [1.0], pressures.p_a,
                                           pressures.p_b, 5.0), [12.0])


def test_noise_free_identification_is_exact_with_significant_inertia():
    cylinder, truth = table_v(1)
    cylinder = HydraulicCylinder(50.0, cylinder.damping, AREA_A, AREA_B)
    time = np.arange(0.0, 20.0, 1.0 / RATE)
    x, xd, xdd = sinusoidal_displacement(time, amplitude=0.006, angular_frequency=2.0)
    assert np.max(np.abs(50.0 * xdd)) > 1.0        # m x'' reaches 1.2 N: not negligible
    pressures = simulate_cylinder(cylinder, truth, x, xd, xdd, load=LOAD)
    for method in ("rls", "ls"):
        result = identify_cylinder(cylinder, x, xd, xdd, pressures.p_a, pressures.p_b, load=LOAD,
                                   initial_covariance=1e8, method=method)
        np.testing.assert_allclose(result.parameters.as_array(), truth.as_array(), rtol=1e-6)
        assert result.residual_rms < 1e-6
    assert result.history is None
    rls = identify_cylinder(cylinder, x, xd, xdd, pressures.p_a, pressures.p_b, load=LOAD)
    assert rls.history.shape == (time.size, 4)


@pytest.mark.parametrize("joint", range(1, 7))
def test_recovers_table_v_friction_with_realistic_pressure_noise(joint):
    cylinder, truth = table_v(joint)
    time = np.arange(0.0, 4 * math.pi / 0.05, 1.0 / RATE)      # two periods of the slow sine, 4.2 min
    x, xd, xdd = sinusoidal_displacement(time, RICH_AMPLITUDES, RICH_FREQUENCIES)
    p_a, p_b = noisy(simulate_cylinder(cylinder, truth, x, xd, xdd, load=LOAD), np.random.default_rng(joint))
    expected = truth.as_array()
    results = {method: identify_cylinder(cylinder, x, xd, xdd, p_a, p_b, load=LOAD, method=method)
               for method in ("rls", "ls")}
    for result in results.values():
        estimate = result.parameters.as_array()
        # fc, fv, fs within 5 % of the truth and within 3 of their standard errors
        np.testing.assert_array_less(np.abs(estimate - expected)[1:] / np.abs(expected[1:]), 0.05)
        np.testing.assert_array_less(np.abs(estimate - expected), 3.0 * result.std)
        # the residual is the pressure noise seen through both areas
        assert result.residual_rms == pytest.approx(NOISE * math.hypot(AREA_A, AREA_B), rel=0.05)
    # RLS without forgetting from a vague start is least squares: a second method agrees
    np.testing.assert_allclose(results["rls"].parameters.as_array(), results["ls"].parameters.as_array(),
                               rtol=1e-5)
    np.testing.assert_allclose(results["rls"].std, results["ls"].std, rtol=1e-3)
    assert 0 < results["rls"].convergence_samples < time.size


@pytest.mark.parametrize("joint", [1, 6])
def test_recovers_table_v_under_the_paper_excitation_with_low_noise(joint):
    """The paper's own slow excitation (0.3 mm/s at most) separates fv from fs only with very quiet
    pressures: 0.2 kPa here."""
    cylinder, truth = table_v(joint)
    time = np.arange(0.0, 2 * math.pi / 0.05, 1.0 / RATE)
    x, xd, xdd = sinusoidal_displacement(time)
    p_a, p_b = noisy(simulate_cylinder(cylinder, truth, x, xd, xdd, load=LOAD), np.random.default_rng(joint),
                     noise=200.0)
    result = identify_cylinder(cylinder, x, xd, xdd, p_a, p_b, load=LOAD)
    estimate, expected = result.parameters.as_array(), truth.as_array()
    assert np.all(np.abs(estimate - expected) < 4.0 * result.std)
    np.testing.assert_array_less(np.abs(estimate - expected) / np.abs(expected), [0.005, 0.03, 0.30, 0.15])


def test_printed_rls_form_fails_on_cylinder_data():
    """The paper's printed gain ``P phi / (phi^T P phi - 1)`` and update ``P = I - K phi^T P`` on the
    same scaled cylinder data: P loses positive definiteness or the estimate diverges, where the
    correct recursion converges."""
    cylinder, truth = table_v(1)
    time = np.arange(0.0, 60.0, 1.0 / RATE)
    x, xd, xdd = sinusoidal_displacement(time, RICH_AMPLITUDES, RICH_FREQUENCIES)
    p_a, p_b = noisy(simulate_cylinder(cylinder, truth, x, xd, xdd, load=LOAD), np.random.default_rng(0))
    regressor = cylinder_regressor(x, xd)
    target = known_force(cylinder, xd, xdd, p_a, p_b, LOAD)
    scales = nominal_scales(0.01, 0.01)
    P, theta = 1e6 * np.eye(4), np.zeros(4)
    smallest_eigenvalue = np.inf
    with np.errstate(all="ignore"):
        for phi, y in zip(regressor / scales, target):
            gain = P @ phi / (phi @ P @ phi - 1.0)
            theta = theta + gain * (y - phi @ theta)
            P = np.eye(4) - np.outer(gain, phi) @ P
            smallest_eigenvalue = min(smallest_eigenvalue, np.linalg.eigvalsh(0.5 * (P + P.T))[0])
    error = np.abs(theta / scales - truth.as_array()) / np.abs(truth.as_array())
    assert smallest_eigenvalue < 0.0 or not np.all(error < 0.5)
    correct = identify_cylinder(cylinder, x, xd, xdd, p_a, p_b, load=LOAD, scales=scales)
    assert np.all(np.linalg.eigvalsh(np.asarray(correct.state["covariance"])) > 0.0)
    np.testing.assert_array_less(np.abs(correct.parameters.as_array() - truth.as_array())[1:3]
                                 / np.abs(truth.as_array()[1:3]), 0.05)


def test_forgetting_follows_a_step_of_fv_within_30_s():
    cylinder, before = table_v(2)
    after = CylinderParameters(before.stiffness, before.fc, 1.2 * before.fv, before.fs)
    time = np.arange(0.0, 120.0, 1.0 / RATE)
    step = time >= 60.0
    x, xd, xdd = sinusoidal_displacement(time, (0.004, 0.01, 0.003), (0.05, 1.1, 2.9))
    pressures = [simulate_cylinder(cylinder, truth, x[part], xd[part], xdd[part], load=LOAD)
                 for truth, part in ((before, ~step), (after, step))]
    rng = np.random.default_rng(3)
    p_a = np.concatenate([pressure.p_a for pressure in pressures]) + NOISE * rng.normal(size=time.size)
    p_b = np.concatenate([pressure.p_b for pressure in pressures]) + NOISE * rng.normal(size=time.size)
    tracking = identify_cylinder(cylinder, x, xd, xdd, p_a, p_b, load=LOAD, forgetting=0.995)
    fv = tracking.history[:, 2]
    settled_before = (time > 30.0) & ~step
    np.testing.assert_array_less(np.abs(fv[settled_before] / before.fv - 1.0), 0.05)
    np.testing.assert_array_less(np.abs(fv[time >= 90.0] / after.fv - 1.0), 0.05)
    # without forgetting the estimate after the step is a compromise between both, off the new value
    remembering = identify_cylinder(cylinder, x, xd, xdd, p_a, p_b, load=LOAD)
    assert abs(remembering.parameters.fv / after.fv - 1.0) > 0.05


def test_settling_sample_hand_values():
    history = np.array([[0.0], [1.5], [1.01], [0.99], [1.0]])
    assert settling_sample(history, [1.0]) == 3            # within 2 % from the third sample on
    assert settling_sample(history, [1.0], band=0.6) == 2
    assert settling_sample(history, [1.0], floor=[1.0]) == 1
    assert settling_sample(np.array([[0.0], [1.0]]), [1.0]) == 2


def test_hydraulic_validation_messages():
    with pytest.raises(DynIdError, match=r"^angular_frequency must have shape \(2 sines,\), got \(1,\)$"):
        sinusoidal_displacement(np.arange(3.0), [0.1, 0.2], 1.0)
    with pytest.raises(DynIdError, match=r"^time must be finite \[s\], got nan at time\[1\]$"):
        sinusoidal_displacement([0.0, np.nan])
    with pytest.raises(DynIdError, match=r"cylinder area_a must be finite and > 0 \[m\^2\]"):
        HydraulicCylinder(piston_mass=1.0, damping=2.0, area_a=0.0, area_b=1.0)
    with pytest.raises(DynIdError, match=r"cylinder piston_mass must be finite and >= 0 \[kg\]"):
        HydraulicCylinder(piston_mass=-1.0, damping=2.0, area_a=1.0, area_b=1.0)
    with pytest.raises(DynIdError, match="signals must have the same length"):
        cylinder_regressor([1.0, 2.0], [1.0])
    with pytest.raises(DynIdError, match=r"^x must have shape \(samples,\), got \(2, 1\)$"):
        cylinder_regressor(np.ones((2, 1)), np.ones(2))
    with pytest.raises(DynIdError, match=r"^theta must have shape \(4 parameters,\), got \(2,\)$"):
        CylinderParameters.from_array([1.0, 2.0])
    with pytest.raises(DynIdError, match=r"velocity scale must be finite and > 0 \[m/s\]"):
        nominal_scales(0.01, 0.0)
    cylinder = HydraulicCylinder(piston_mass=1.0, damping=2.0, area_a=1.0, area_b=1.0)
    with pytest.raises(DynIdError, match="need more than 4 samples, got 3"):
        identify_cylinder(cylinder, *np.ones((5, 3)))
    with pytest.raises(DynIdError, match=r"method must be one of \['ols', 'wls', 'rls', 'ls'\], got 'ridge'"):
        identify_cylinder(cylinder, *np.ones((5, 10)), method="ridge")
    # a regressor row shorter than its RLS is caught by the estimator, not silently broadcast
    with pytest.raises(DynIdError, match="phi must have shape"):
        RecursiveLeastSquares(4).update(np.ones(3), 1.0)
