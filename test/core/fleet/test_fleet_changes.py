"""Multiple comparisons (Holm, Benjamini-Hochberg) against hand computations from their definitions
(METHODS.md section 10), and the family-wise error rate they promise on simulated null p-values."""
import numpy as np
import pytest

from robot_dynid.errors import DynIdError
from robot_dynid.fleet.changes import benjamini_hochberg, correct, holm, two_sided_p


def test_holm_steps_down_and_stops_at_the_first_p_value_above_its_threshold():
    # sorted 0.005 <= 0.05/4, 0.01 <= 0.05/3, 0.03 > 0.05/2: stop (0.04 <= 0.05/1 is not reached)
    adjusted, rejected = holm([0.01, 0.04, 0.03, 0.005], 0.05)
    assert rejected.tolist() == [True, False, False, True]
    # adjusted: running max of (m - k + 1) p_(k) = 0.02, 0.03, 0.06, max(0.06, 0.04)
    np.testing.assert_allclose(adjusted, [0.03, 0.06, 0.06, 0.02])


def test_benjamini_hochberg_steps_up_past_a_p_value_above_its_own_threshold():
    # k = 3: 0.039 > 3 * 0.05 / 4 = 0.0375, but k = 4: 0.04 <= 0.05, so all four are rejected; Holm stops at 0.02
    adjusted, rejected = benjamini_hochberg([0.01, 0.02, 0.039, 0.04], 0.05)
    assert rejected.all()
    np.testing.assert_allclose(adjusted, [0.04, 0.04, 0.04, 0.04])   # min over j >= k of 4 p_(j) / j
    assert holm([0.01, 0.02, 0.039, 0.04], 0.05)[1].tolist() == [True, False, False, False]
    assert benjamini_hochberg([0.001, 0.2, 0.03, 0.04], 0.05)[1].tolist() == [True, False, False, False]


def test_two_sided_p_of_the_normal_quantiles():
    np.testing.assert_allclose(two_sided_p([1.959963984540054, -2.5758293035489, 0.0, np.inf]),
                               [0.05, 0.01, 1.0, 0.0], atol=1e-12)


@pytest.mark.parametrize("method", ["holm", "bh"])
def test_an_unchanged_fleet_raises_a_flag_at_most_at_the_stated_rate(method):
    """2000 fleets of 384 true null hypotheses: the share with any flag stays at the level (within three binomial
    standard deviations), where the uncorrected tests flag almost every fleet."""
    rng = np.random.default_rng(7)
    level, fleets, tests = 0.05, 2000, 384
    any_flag = np.array([correct(rng.uniform(size=tests), level, method)[1].any() for _ in range(fleets)])
    assert any_flag.mean() <= level + 3 * np.sqrt(level * (1 - level) / fleets)
    assert np.mean(rng.uniform(size=(fleets, tests)).min(axis=1) <= level) > 0.99


def test_bad_levels_and_p_values_are_refused():
    with pytest.raises(DynIdError, match=r"significance level must be finite and in \(0, 1\), got 1.5"):
        holm([0.1], 1.5)
    with pytest.raises(DynIdError, match=r"p-values must lie in \[0, 1\]"):
        benjamini_hochberg([0.1, np.nan])
    with pytest.raises(DynIdError, match=r"correction must be one of \['holm', 'bh'\], got 'bonferroni'"):
        correct([0.1], 0.05, "bonferroni")
