"""Double-exponential friction drift fit recovers the thesis's Table 5.6 coefficients."""
import numpy as np
import pytest

from robot_dynid.errors import DataError
from robot_dynid.model.friction_drift import double_exponential, fit_double_exponential
from reference_tables import reference_table

ROWS = reference_table("er3a_thesis.yaml")["friction_time_fit_table_5_6"]


def test_double_exponential_hand_values():
    # t = t1 = t2 = 10 min: a + (b + c) / e
    assert double_exponential([10.0], 1.0, 2.0, 10.0, 3.0, 10.0)[0] == pytest.approx(
        1.0 + 5.0 / np.e)
    np.testing.assert_allclose(double_exponential([0.0, 1e6], 1.0, 2.0, 5.0, 3.0, 1.0),
                               [6.0, 1.0])


@pytest.mark.parametrize("row", ROWS, ids=[f"joint{row['joint']}" for row in ROWS])
def test_recovers_table_5_6_from_24_cycles(row):
    rng = np.random.default_rng(row["joint"])
    # 24 cycles of 5 min, friction sampled about every 30 s (jitter +-2 s)
    t_min = np.arange(0.0, 120.0 + 1e-9, 0.5) + rng.uniform(-1.0 / 30.0, 1.0 / 30.0, 241)
    t_min[0] = 0.0
    truth = (row["a"], row["b"], row["t1_min"], row["c"], row["t2_min"])
    tau = double_exponential(t_min, *truth) + 0.02 * rng.normal(size=t_min.size)
    fit = fit_double_exponential(t_min, tau)
    assert fit.t1 >= fit.t2
    assert fit.a == pytest.approx(row["a"], rel=0.005)
    assert fit.b == pytest.approx(row["b"], rel=0.02)
    assert fit.c == pytest.approx(row["c"], rel=0.02)
    assert fit.t1 == pytest.approx(row["t1_min"], rel=0.05)
    assert fit.t2 == pytest.approx(row["t2_min"], rel=0.05)
    assert fit.residual_rms == pytest.approx(0.02, rel=0.2)
    # the fitted curve stays within 2.5 noise standard deviations of the true one
    np.testing.assert_allclose(fit(t_min), double_exponential(t_min, *truth), atol=0.05)


def test_time_constants_are_ordered_whatever_the_data_order():
    t_min = np.linspace(0.0, 60.0, 121)
    tau = double_exponential(t_min, 2.0, 5.0, 1.0, 3.0, 20.0)      # short constant given first
    fit = fit_double_exponential(t_min[::-1], tau[::-1])
    assert (fit.t1, fit.t2) == pytest.approx((20.0, 1.0), rel=1e-5)
    assert (fit.b, fit.c) == pytest.approx((3.0, 5.0), rel=1e-5)


def test_validation_messages():
    with pytest.raises(DataError, match=r"^tau must have shape \(10 samples,\), got \(9,\)$"):
        fit_double_exponential(np.arange(10.0), np.arange(9.0))
    with pytest.raises(DataError, match="needs at least 6 distinct times, got 5"):
        fit_double_exponential([0.0, 1.0, 2.0, 3.0, 4.0, 4.0], np.ones(6))
    with pytest.raises(DataError, match=r"^tau must be finite, got nan at sample 0$"):
        fit_double_exponential(np.arange(10.0), np.full(10, np.nan))
