"""The interpolation between JointTrajectory points: against scipy's piecewise Bernstein Hermite
(``BPoly.from_derivatives``, built from the same values by another method), and its refusal outside the points."""
import numpy as np
import pytest
from scipy.interpolate import BPoly

from robot_dynid.model.joint_trajectory import points_at


@pytest.mark.parametrize("orders", [1, 2, 3])
def test_points_at_is_the_hermite_of_the_fields_the_points_carry(orders):
    """Linear, cubic and quintic through four uneven points of two joints: values and derivatives at 50 times."""
    times = np.array([0.0, 0.3, 0.45, 1.0])
    rng = np.random.default_rng(7)
    fields = [rng.normal(size=(4, 2)) for _ in range(orders)]
    at = np.linspace(0.001, 0.999, 50)
    values = points_at(times, *fields, *([None] * (3 - orders)), at)
    spline = BPoly.from_derivatives(times, np.stack(fields, axis=1))
    for order in range(3):
        if order < orders:
            np.testing.assert_allclose(values[order], spline(at, order), rtol=1e-10, atol=1e-10)
        else:
            assert values[order] is None


def test_points_at_refuses_times_outside_the_points():
    times = np.array([0.0, 1.0])
    positions = np.zeros((2, 1))
    for at in (0.0, 1.0, -0.5, 1.5):
        with pytest.raises(ValueError, match="strictly inside"):
            points_at(times, positions, None, None, [at])
