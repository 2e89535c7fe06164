"""The estimator registry: every name builds an estimator that solves an exactly solvable problem."""
import numpy as np
import pytest

from robot_dynid.errors import DynIdError
from robot_dynid.estimation.estimators import (BATCH_METHODS, ESTIMATORS, METHOD_NAMES, METHODS, RECURSIVE_METHOD,
                                               BatchLeastSquares, RecursiveLeastSquares, build_estimator, estimator)

TRUTH = np.array([2.0, -1.0, 0.5])


def exact_problem():
    """Two joints, three parameters, tau = Y @ TRUTH without noise (20 samples)."""
    rng = np.random.default_rng(7)
    Y = rng.normal(size=(20, 2, 3))
    return Y, np.einsum("kjp,p->kj", Y, TRUTH)


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_every_method_name_builds_an_estimator_that_recovers_exact_parameters(method):
    Y, tau = exact_problem()
    built = build_estimator(method, 3, forgetting=1.0, initial_covariance=1e8)
    fitted = built.fit(Y, tau)
    assert fitted is built
    np.testing.assert_allclose(built.theta_, TRUTH, atol=1e-6)
    assert built.batch == estimator(method).batch


def test_the_registry_names_its_methods_kinds_and_alias():
    assert METHODS == ("ols", "wls", "rls")
    assert BATCH_METHODS == ("ols", "wls")
    assert METHOD_NAMES == ("ols", "wls", "rls", "ls")
    assert estimator("ls") is ESTIMATORS["ols"]
    assert [ESTIMATORS[name].batch_method for name in METHODS] == ["ols", "wls", "ols"]
    assert isinstance(build_estimator("wls", 3), BatchLeastSquares) and build_estimator("wls", 3).weighted
    assert not build_estimator("ls", 3).weighted


def test_settings_a_method_does_not_take_are_ignored_and_those_it_takes_applied():
    rls = build_estimator("rls", 3, forgetting=0.9, rank_tolerance=1e-3, covariance_limit=5.0, theta0=[1.0, 2.0, 3.0])
    assert isinstance(rls, RecursiveLeastSquares) and rls.forgetting == 0.9 and rls.covariance_limit == 5.0
    np.testing.assert_array_equal(rls.theta_, [1.0, 2.0, 3.0])
    assert build_estimator(RECURSIVE_METHOD, 2).batch is False
    ols = build_estimator("ols", 3, forgetting=0.9, iterations=2)
    assert isinstance(ols, BatchLeastSquares) and ols.iterations == 2


def test_weights_are_inverse_noise_variances_for_wls_only():
    np.testing.assert_allclose(ESTIMATORS["wls"].joint_weights([0.5, 2.0]), [4.0, 0.25])
    assert ESTIMATORS["ols"].joint_weights([0.5, 2.0]) is None


def test_a_batch_estimator_fits_one_output_given_as_two_dimensional_rows():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(10, 3))
    built = build_estimator("ols", 3).fit(X, X @ TRUTH)
    np.testing.assert_allclose(built.theta_, TRUTH, atol=1e-12)
    assert built.result_.method == "ols"


def test_bad_names_and_settings_are_refused_with_the_known_ones():
    with pytest.raises(DynIdError, match=r"method must be one of \['ols', 'wls', 'rls', 'ls'\], got 'ridge'"):
        build_estimator("ridge", 3)
    with pytest.raises(DynIdError, match=r"estimator settings \['alpha'\] are unknown; expected some of "
                                         r"\['parameter_names', 'rank_tolerance', 'iterations', 'forgetting', "
                                         r"'initial_covariance', 'covariance_limit', 'theta0'\]"):
        build_estimator("ols", 3, alpha=1.0)
    with pytest.raises(DynIdError, match=r"^Y must have shape \(samples, joints, 3 parameters\), got \(10, 1, 4\)$"):
        build_estimator("ols", 3).fit(np.ones((10, 1, 4)), np.ones((10, 1)))
