"""Friction-stage numerics (estimation.friction_stages) against analytic curves with known coefficients."""
import numpy as np
import pytest

from robot_dynid.errors import DataError
from robot_dynid.estimation.friction_stages import FRICTION_COEFFICIENTS, fit_joint_friction, friction_columns, plateau

IM, MPX, MPY = 0.3, 1.2, -0.8                   # [kg m^2], [N m], [N m]
F = np.array([0.9, 0.25, -0.05, 0.02])          # f1 [N m], f2 [N m s/rad], f3 [N m s^2/rad^2], f4 [N m s^3/rad^3]


def stroke_samples():
    """A joint swinging through +-1.5 rad at speeds up to 2 rad/s in both directions (400 samples)."""
    t = np.linspace(0.0, 8.0, 400)
    q = 1.5 * np.sin(1.3 * t) + 0.2
    qd = 1.5 * 1.3 * np.cos(1.3 * t)
    qdd = -1.5 * 1.3**2 * np.sin(1.3 * t)
    return q, qd, qdd


def analytic_friction(v):
    return F[0] * np.sign(v) + F[1] * v + F[2] * v * np.abs(v) + F[3] * v**3


def test_friction_columns_are_the_thesis_polynomial():
    v = np.array([-2.0, -0.5, 0.5, 3.0])
    assert FRICTION_COEFFICIENTS == ("f1", "f2", "f3", "f4")
    np.testing.assert_allclose(friction_columns(v) @ F, analytic_friction(v), rtol=1e-14)


def test_the_fit_recovers_inertia_gravity_and_friction_of_an_analytic_torque():
    q, qd, qdd = stroke_samples()
    tau = IM * qdd - MPX * np.sin(q) - MPY * np.cos(q) + analytic_friction(qd)
    fit = fit_joint_friction(q, qd, qdd, tau, "j2", "cycle 1", with_gravity=True, horizontal=False)
    assert fit.inertia == pytest.approx(IM, rel=1e-9)
    assert fit.gravity == pytest.approx((MPX, MPY), rel=1e-9)
    np.testing.assert_allclose(fit.coefficients, F, rtol=1e-8, atol=1e-10)
    assert fit.residual_rms < 1e-10 and fit.n_samples == 400 and fit.gravity_removed
    np.testing.assert_allclose(fit.friction([-1.0, 0.5]), analytic_friction(np.array([-1.0, 0.5])), rtol=1e-8)
    np.testing.assert_allclose(fit.removed([0.0], [2.0]), [IM * 2.0 - MPY], rtol=1e-9)


def test_without_gravity_the_fit_has_inertia_and_friction_only():
    q, qd, qdd = stroke_samples()
    tau = IM * qdd + analytic_friction(qd)
    fit = fit_joint_friction(q, qd, qdd, tau, "j1", "-", with_gravity=False, horizontal=True)
    assert fit.gravity is None and fit.inertia == pytest.approx(IM, rel=1e-9)
    np.testing.assert_allclose(fit.coefficients, F, rtol=1e-8, atol=1e-10)


def test_a_stage_that_cannot_determine_the_fit_is_refused_naming_the_joint():
    q, qd, qdd = stroke_samples()
    with pytest.raises(DataError, match=r"joint j3 \(cycle 2\): 5 friction samples for 7 unknowns"):
        fit_joint_friction(q[:5], qd[:5], qdd[:5], qd[:5], "j3", "cycle 2", with_gravity=True, horizontal=False)
    constant = np.full(50, 0.5)             # one speed, no acceleration: the columns are dependent
    with pytest.raises(DataError, match=r"joint j3 \(cycle 2\): its friction stage does not determine the 5 "
                                        r"parameters of the friction fit"):
        fit_joint_friction(constant, constant, np.zeros(50), constant, "j3", "cycle 2", with_gravity=False,
                           horizontal=True)


def test_the_plateau_is_the_longest_run_within_the_tolerance_of_the_cruise_speed():
    ramp = np.linspace(0.0, 1.0, 10, endpoint=False)
    cruise = 1.0 + 0.01 * np.array([1, -1] * 10)
    speed = np.concatenate((ramp, cruise, ramp[::-1]))
    assert plateau(speed, +1) == slice(10, 30)
    assert plateau(-speed, -1) == slice(10, 30)
    assert plateau(speed, -1) is None                    # no motion in that direction
    assert plateau(speed[:4], +1) is None                # fewer than MIN_PLATEAU_SAMPLES
