"""bounded_minimum: Brent's bounded search, against analytic minima and scipy's implementation of the same method."""
import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from robot_dynid.estimation.scalar_minimum import bounded_minimum

CASES = [
    ("parabola", lambda x: (x - 0.3) ** 2, (-1.0, 2.0), 0.3),
    ("quartic, flat bottom", lambda x: (x - 1.7) ** 4, (0.0, 3.0), 1.7),
    ("cosine", math.cos, (2.0, 4.0), math.pi),
    ("|x - c|, a kink", lambda x: abs(x + 0.123456), (-1.0, 1.0), -0.123456),
    ("minimum at the low end", lambda x: x * x, (0.5, 2.0), 0.5),
    ("minimum at the high end", lambda x: -x, (-3.0, -1.0), -1.0),
    ("x log x", lambda x: x * math.log(x), (0.05, 2.0), math.exp(-1.0)),
]


@pytest.mark.parametrize("name, function, bounds, minimum", CASES, ids=[case[0] for case in CASES])
@pytest.mark.parametrize("xatol", [1e-5, 1e-9])
def test_the_minimum_is_found_within_the_tolerance_as_scipys_method_finds_it(name, function, bounds, minimum,
                                                                             xatol):
    found = bounded_minimum(function, *bounds, xatol=xatol)
    reference = minimize_scalar(function, bounds=bounds, method="bounded", options={"xatol": xatol}).x
    assert bounds[0] <= found <= bounds[1]
    # at an end of the interval the search stops within a few tolerances of it (it never evaluates the end itself)
    assert abs(found - minimum) <= (3.0 if minimum in bounds else 1.0) * (xatol + 1.5e-8 * abs(minimum)), found
    assert found == pytest.approx(reference, rel=0, abs=1e-12)     # the same method, step for step


def test_the_search_is_a_few_dozen_evaluations_and_stops_at_its_budget():
    calls = []

    def counted(x):
        calls.append(x)
        return (x - 0.3) ** 2

    bounded_minimum(counted, -1.0, 2.0, xatol=1e-9)
    assert len(calls) < 40
    calls.clear()
    bounded_minimum(counted, -1.0, 2.0, xatol=1e-9, max_evaluations=5)
    assert len(calls) == 5


def test_a_noisy_function_still_ends_inside_the_interval():
    noise = np.random.default_rng(3).normal(0.0, 1e-3, 1000)
    found = bounded_minimum(lambda x: (x - 0.5) ** 2 + noise[int(abs(x) * 997) % 1000], 0.0, 1.0)
    assert 0.0 <= found <= 1.0 and abs(found - 0.5) < 0.1


@pytest.mark.parametrize("bounds", [(1.0, 0.0), (math.nan, 1.0), (0.0, math.inf)])
def test_an_interval_that_is_not_one_is_refused(bounds):
    with pytest.raises(ValueError, match="interval"):
        bounded_minimum(abs, *bounds)
