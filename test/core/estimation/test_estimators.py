"""Estimators against closed forms, each other, Monte Carlo statistics and the wrong RLS form."""
import json

import numpy as np
import pytest

from robot_dynid.errors import DynIdError, IdentificationError
from robot_dynid.estimation.estimators import (LeastSquaresAccumulator, RecursiveLeastSquares, ols,
                                               scaled_condition_number, wls)

TRUTH = np.array([1.5, -2.0, 0.7, 3.0])
NOISE = np.array([0.05, 0.8])


def make_problem(rng, n_samples=60, noise=NOISE):
    """Two joints, four parameters; parameter 4 acts on joint 1 only (p_2 = 3)."""
    Y = rng.normal(size=(n_samples, 2, 4)) * np.array([1.0, 10.0, 0.1, 2.0])
    Y[:, 1, 3] = 0.0
    tau = np.einsum("kjp,p->kj", Y, TRUTH) + rng.normal(size=(n_samples, 2)) * noise
    return Y, tau


def test_ols_matches_normal_equation_closed_form():
    Y, tau = make_problem(np.random.default_rng(0))
    W, y = Y.reshape(-1, 4), tau.reshape(-1)
    theta = np.linalg.solve(W.T @ W, W.T @ y)
    result = ols(Y, tau)
    np.testing.assert_allclose(result.theta, theta, rtol=1e-10)
    residual = y - W @ theta
    sigma2 = residual @ residual / (W.shape[0] - 4)
    white = sigma2 * np.linalg.inv(W.T @ W)
    np.testing.assert_allclose(result.uncertainty.white_std, np.sqrt(np.diag(white)), rtol=1e-9)
    # without stamps the reported covariance is the sandwich with each joint's own residual variance
    r = residual.reshape(-1, 2)
    joint_variance = np.tile(np.sum(r**2, axis=0) / (60 - np.array([4, 3])), 60)
    inverse = np.linalg.inv(W.T @ W)
    sandwich = inverse @ (W.T @ (joint_variance[:, None] * W)) @ inverse
    assert result.std_method == "per_joint"
    np.testing.assert_allclose(result.covariance, sandwich, rtol=1e-9)
    np.testing.assert_allclose(result.std, np.sqrt(np.diag(result.covariance)))
    np.testing.assert_allclose(result.uncertainty.per_joint_std, result.std)
    np.testing.assert_allclose(result.relative_std, result.std / np.abs(theta))
    np.testing.assert_allclose(result.residual_rms, np.sqrt(np.mean(r**2, axis=0)))
    # Gautier: joint 1 has 4 active parameters, joint 2 only 3
    np.testing.assert_allclose(result.noise_std,
                               np.sqrt(np.sum(r**2, axis=0) / (60 - np.array([4, 3]))))
    assert (result.n_samples, result.dof, result.method) == (60, 116, "ols")
    Ws = W / np.linalg.norm(W, axis=0)
    assert result.condition_number == pytest.approx(np.linalg.cond(Ws), rel=1e-10)
    assert scaled_condition_number(W) == pytest.approx(np.linalg.cond(Ws), rel=1e-10)


def test_wls_matches_weighted_closed_form():
    Y, tau = make_problem(np.random.default_rng(1))
    W, y = Y.reshape(-1, 4), tau.reshape(-1)
    r = (y - W @ np.linalg.lstsq(W, y, rcond=None)[0]).reshape(-1, 2)
    sigma2 = np.sum(r**2, axis=0) / (60 - np.array([4, 3]))
    s_inv = np.tile(1.0 / sigma2, 60)
    information = W.T @ (s_inv[:, None] * W)
    result = wls(Y, tau)
    np.testing.assert_allclose(result.theta, np.linalg.solve(information, W.T @ (s_inv * y)),
                               rtol=1e-10)
    np.testing.assert_allclose(result.uncertainty.white_std, np.sqrt(np.diag(np.linalg.inv(information))), rtol=1e-9)
    np.testing.assert_allclose(result.noise_std, np.sqrt(sigma2), rtol=1e-12)
    # sandwich with the WLS residuals' own per-joint variances around the weights' information
    r_wls = (y - W @ result.theta).reshape(-1, 2)
    final = np.tile(np.sum(r_wls**2, axis=0) / (60 - np.array([4, 3])), 60)
    inverse = np.linalg.inv(information)
    meat = W.T @ ((s_inv**2 * final)[:, None] * W)
    np.testing.assert_allclose(result.covariance, inverse @ meat @ inverse, rtol=1e-9)
    assert result.method == "wls"


@pytest.mark.parametrize("method, iterations", [("ols", 1), ("wls", 1), ("wls", 3)])
def test_accumulator_agrees_with_in_memory_fit(method, iterations):
    Y, tau = make_problem(np.random.default_rng(2), n_samples=300)
    phase = np.arange(300) * 0.05          # 15 s at 20 Hz: 15 blocks of 1 s
    expected = ols(Y, tau, phase=phase) if method == "ols" else wls(Y, tau, iterations=iterations, phase=phase)
    first = LeastSquaresAccumulator(2, 4)
    for start in range(0, 200, 37):
        rows = slice(start, min(start + 37, 200))
        first.add(Y[rows], tau[rows], phase[rows])
    second = LeastSquaresAccumulator(2, 4).add(Y[200:], tau[200:], phase[200:])
    result = first.merge(second).solve(method, iterations=iterations)
    assert first.n_samples == 300
    assert (result.std_method, result.uncertainty.n_blocks) == ("block", 15)
    for field in ("theta", "covariance", "std", "noise_std", "residual_rms"):
        np.testing.assert_allclose(getattr(result, field), getattr(expected, field), rtol=1e-8,
                                   err_msg=field)
    for field in ("white_std", "per_joint_std"):
        np.testing.assert_allclose(getattr(result.uncertainty, field), getattr(expected.uncertainty, field),
                                   rtol=1e-8, err_msg=field)
    assert result.condition_number == pytest.approx(expected.condition_number, rel=1e-8)
    assert (result.dof, result.method) == (expected.dof, method)
    residual = tau - np.einsum("kjp,p->kj", Y, result.theta)
    np.testing.assert_allclose(first.residual_sum_of_squares(result.theta),
                               np.sum(residual**2, axis=0), rtol=1e-8)


def test_rank_deficiency_names_the_parameters():
    Y, tau = make_problem(np.random.default_rng(3))
    Y[:, :, 2] = 2.0 * Y[:, :, 0]
    names = ("m1", "mx1", "fc1", "fv1")
    with pytest.raises(IdentificationError, match=r"rank 3 of 4.*indices \[0, 2\] \(m1, fc1\)"):
        ols(Y, tau, parameter_names=names)
    accumulator = LeastSquaresAccumulator(2, 4).add(Y, tau)
    with pytest.raises(IdentificationError, match=r"indices \[0, 2\] \(m1, fc1\)"):
        accumulator.solve("wls", parameter_names=names)
    Y[:, :, 1] = 0.0
    with pytest.raises(IdentificationError, match=r"rank 2 of 4.*indices \[0, 1, 2\]"):
        ols(Y, tau)


def test_estimator_validation_messages():
    Y, tau = make_problem(np.random.default_rng(4))
    with pytest.raises(DynIdError, match=r"^Y must have shape \(samples, joints, parameters\), got \(60, 8\)$"):
        ols(Y.reshape(60, 8), tau)
    with pytest.raises(DynIdError, match=r"^tau must have shape \(60 samples, 2 joints\), got \(60,\)$"):
        ols(Y, tau[:, 0])
    with pytest.raises(DynIdError, match=r"^tau must be finite \[N m\], got nan at sample 7, joint 1$"):
        ols(Y, np.where((np.arange(60) == 7)[:, None] & (np.arange(2) == 1), np.nan, tau))
    with pytest.raises(DynIdError, match="parameter_names has 2 entries, expected p = 4"):
        wls(Y, tau, parameter_names=("a", "b"))
    with pytest.raises(IdentificationError, match="need more equations than parameters"):
        ols(Y[:2], tau[:2])
    with pytest.raises(IdentificationError, match="joint 1: 4 samples for 4 parameters"):
        ols(Y[:4], tau[:4])
    with pytest.raises(DynIdError, match="iterations must be an integer >= 1, got 0"):
        wls(Y, tau, iterations=0)
    with pytest.raises(DynIdError, match=r"^Y must have shape \(samples, 2 joints, 5 parameters\), got "):
        LeastSquaresAccumulator(2, 5).add(Y, tau)
    with pytest.raises(DynIdError, match=r"^theta must have shape \(4 parameters,\), got \(3,\)$"):
        LeastSquaresAccumulator(2, 4).residual_sum_of_squares(np.zeros(3))
    with pytest.raises(DynIdError, match="method must be one of"):
        LeastSquaresAccumulator(2, 4).add(Y, tau).solve("ridge")
    with pytest.raises(DynIdError, match=r"cannot merge .* \(3, 4\) into \(2, 4\)"):
        LeastSquaresAccumulator(2, 4).merge(LeastSquaresAccumulator(3, 4))
    with pytest.raises(DynIdError, match="n_joints must be an integer >= 1, got 0"):
        LeastSquaresAccumulator(0, 4)


def monte_carlo(noise, runs=200, seed=5, wls_iterations=1):
    """Estimates and reported std of OLS and WLS over repeated noise draws on one regressor."""
    rng = np.random.default_rng(seed)
    Y, _ = make_problem(rng, n_samples=40)
    clean = np.einsum("kjp,p->kj", Y, TRUTH)
    draws = {"ols": ([], []), "wls": ([], [])}
    results = []
    for _ in range(runs):
        tau = clean + rng.normal(size=clean.shape) * noise
        for method, result in (("ols", ols(Y, tau)),
                               ("wls", wls(Y, tau, iterations=wls_iterations))):
            draws[method][0].append(result.theta)
            draws[method][1].append(result.std)
        results.append(result)
    return {**{method: (np.array(theta), np.array(std)) for method, (theta, std) in draws.items()},
            "wls_results": results}


def test_monte_carlo_ols_is_unbiased_and_reports_its_spread():
    runs = 200
    estimates, reported_std = monte_carlo(np.array([0.3, 0.3]), runs)["ols"]
    empirical_std = estimates.std(axis=0, ddof=1)
    standard_error = empirical_std / np.sqrt(runs)
    assert np.all(np.abs(estimates.mean(axis=0) - TRUTH) < 3.5 * standard_error)
    # the sample std of 200 draws has a relative spread of 1/sqrt(2 * 199) = 5 %; allow 15 %
    np.testing.assert_allclose(reported_std.mean(axis=0), empirical_std, rtol=0.15)


def test_monte_carlo_wls_beats_ols_when_joint_noise_differs():
    draws = monte_carlo(NOISE)
    ols_variance = draws["ols"][0].var(axis=0, ddof=1)
    wls_estimates, wls_reported_std = draws["wls"]
    wls_variance = wls_estimates.var(axis=0, ddof=1)
    assert np.all(wls_variance <= ols_variance)
    assert np.sum(wls_variance) < 0.5 * np.sum(ols_variance)
    # one pass: the quiet joint's sigma is overestimated from OLS residuals, so the white std (A^-1) is
    # conservative; the sandwich with the final residuals' own variances reports the spread
    white = np.array([result.uncertainty.white_std for result in draws["wls_results"]])
    assert np.all(white.mean(axis=0) > np.sqrt(wls_variance))
    np.testing.assert_allclose(wls_reported_std.mean(axis=0), np.sqrt(wls_variance), rtol=0.2)


def test_monte_carlo_iterated_wls_reports_its_spread():
    draws = monte_carlo(NOISE, wls_iterations=5)
    wls_estimates, wls_reported_std = draws["wls"]
    wls_variance = wls_estimates.var(axis=0, ddof=1)
    assert np.all(wls_variance <= draws["ols"][0].var(axis=0, ddof=1))
    # sigma_j is estimated from 40 samples per joint, so allow 20 %
    np.testing.assert_allclose(wls_reported_std.mean(axis=0), np.sqrt(wls_variance), rtol=0.2)


def rls_problem(seed=6, n_samples=400, noise=0.01):
    rng = np.random.default_rng(seed)
    Phi = rng.normal(size=(n_samples, 3)) * np.array([1.0, 5.0, 0.2])
    return Phi, Phi @ TRUTH[:3] + noise * rng.normal(size=n_samples)


def test_rls_without_forgetting_equals_batch_least_squares():
    Phi, y = rls_problem()
    rls = RecursiveLeastSquares(3, forgetting=1.0, initial_covariance=1e8)
    theta = rls.update_batch(Phi, y)
    batch = np.linalg.lstsq(Phi, y, rcond=None)[0]
    np.testing.assert_allclose(theta, batch, rtol=1e-6)
    np.testing.assert_allclose(rls.covariance_, np.linalg.inv(Phi.T @ Phi), rtol=1e-5)
    assert rls.n_updates_ == 400


def test_multi_output_rls_equals_weighted_batch():
    Y, tau = make_problem(np.random.default_rng(7))
    variance = NOISE**2
    rls = RecursiveLeastSquares(4, initial_covariance=1e8)
    rls.update_batch(Y, tau, noise_variance=variance)
    W, y = Y.reshape(-1, 4), tau.reshape(-1)
    s_inv = np.tile(1.0 / variance, len(Y))
    expected = np.linalg.solve(W.T @ (s_inv[:, None] * W), W.T @ (s_inv * y))
    np.testing.assert_allclose(rls.theta_, expected, rtol=1e-6)


def test_multi_output_rls_with_forgetting_equals_exponentially_weighted_batch():
    """theta_N minimises mu^N |theta|^2_{P0^-1} + sum_k mu^(N-k) |y_k - Phi_k theta|^2_{S^-1};
    P_N = (mu^N P0^-1 + sum_k mu^(N-k) Phi_k^T S^-1 Phi_k)^-1."""
    Y, tau = make_problem(np.random.default_rng(8), n_samples=150)
    mu, p0, variance = 0.98, 10.0, NOISE**2
    rls = RecursiveLeastSquares(4, forgetting=mu, initial_covariance=p0, covariance_limit=1e9)
    rls.update_batch(Y, tau, noise_variance=variance)
    weights = mu ** np.arange(len(Y) - 1, -1, -1)
    information = mu ** len(Y) / p0 * np.eye(4) + np.einsum("k,kji,j,kjl->il", weights, Y, 1.0 / variance, Y)
    moment = np.einsum("k,kji,j,kj->i", weights, Y, 1.0 / variance, tau)
    np.testing.assert_allclose(rls.theta_, np.linalg.solve(information, moment), rtol=1e-8)
    np.testing.assert_allclose(rls.covariance_, np.linalg.inv(information), rtol=1e-8)
    np.testing.assert_array_equal(rls.covariance_, rls.covariance_.T)


def test_innovation_solve_falls_back_to_lu_for_a_matrix_that_is_not_positive_definite():
    from robot_dynid.estimation.estimators import _solve_positive_definite
    rhs = np.arange(6.0).reshape(2, 3)
    for matrix in (np.array([[4.0, 1.0], [1.0, 3.0]]), np.array([[1.0, 2.0], [2.0, 1.0]])):   # SPD, indefinite
        np.testing.assert_allclose(matrix @ _solve_positive_definite(matrix, rhs), rhs, atol=1e-14)


def test_printed_rls_form_diverges_where_correct_form_converges():
    Phi, y = rls_problem(n_samples=300)
    P, theta = 100.0 * np.eye(3), np.zeros(3)
    smallest_eigenvalue = np.inf
    for phi, y_k in zip(Phi, y):
        gain = P @ phi / (phi @ P @ phi - 1.0)          # as printed: "phi^T P phi - 1"
        theta = theta + gain * (y_k - phi @ theta)
        P = np.eye(3) - np.outer(gain, phi) @ P          # as printed: "P = I - K phi^T P"
        smallest_eigenvalue = min(smallest_eigenvalue, np.linalg.eigvalsh(0.5 * (P + P.T))[0])
    assert smallest_eigenvalue < 0.0
    assert np.linalg.norm(theta - TRUTH[:3]) > 10.0

    rls = RecursiveLeastSquares(3, initial_covariance=100.0)
    for phi, y_k in zip(Phi, y):
        rls.update(phi, y_k)
        assert np.linalg.eigvalsh(rls.covariance_)[0] > 0.0
        np.testing.assert_array_equal(rls.covariance_, rls.covariance_.T)
    np.testing.assert_allclose(rls.theta_, TRUTH[:3], atol=0.01)


def test_forgetting_tracks_a_parameter_step():
    rng = np.random.default_rng(8)
    Phi = rng.normal(size=(1000, 2))
    before, after = np.array([1.0, 2.0]), np.array([1.5, 1.0])
    y = np.concatenate([Phi[:500] @ before, Phi[500:] @ after]) + 0.01 * rng.normal(size=1000)
    forgetting = RecursiveLeastSquares(2, forgetting=0.97, initial_covariance=100.0)
    remembering = RecursiveLeastSquares(2, forgetting=1.0, initial_covariance=100.0)
    forgetting.update_batch(Phi, y)
    remembering.update_batch(Phi, y)
    np.testing.assert_allclose(forgetting.theta_, after, atol=0.01)
    # without forgetting the estimate is the average of both regimes, far from either
    assert np.linalg.norm(remembering.theta_ - after) > 0.2


def test_covariance_limit_prevents_wind_up():
    Phi = np.column_stack([np.ones(2000), np.zeros(2000)])
    capped = RecursiveLeastSquares(2, forgetting=0.95, initial_covariance=10.0)
    capped.update_batch(Phi, np.ones(2000))
    assert capped.covariance_limit == 10.0
    assert np.linalg.eigvalsh(capped.covariance_)[-1] <= 10.0 + 1e-9
    # unexcited direction: with no cap it would be 10 / 0.95^2000
    assert capped.covariance_[1, 1] == pytest.approx(10.0)
    np.testing.assert_allclose(capped.theta_, [1.0, 0.0], atol=1e-9)


def test_state_round_trip_and_reset():
    Phi, y = rls_problem(n_samples=200)
    original = RecursiveLeastSquares(3, forgetting=0.99, theta0=np.ones(3))
    original.update_batch(Phi[:100], y[:100])
    state = json.loads(json.dumps(original.get_state()))
    restored = RecursiveLeastSquares(3).set_state(state)
    for phi, y_k in zip(Phi[100:], y[100:]):
        assert np.array_equal(original.update(phi, y_k), restored.update(phi, y_k))
    np.testing.assert_array_equal(original.covariance_, restored.covariance_)
    assert restored.n_updates_ == 200
    original.reset()
    np.testing.assert_array_equal(original.theta_, np.ones(3))
    np.testing.assert_array_equal(original.covariance_, 1e6 * np.eye(3))
    assert original.n_updates_ == 0


def test_rls_validation_messages():
    with pytest.raises(DynIdError, match=r"forgetting must be in \(0, 1\], got 1.5"):
        RecursiveLeastSquares(2, forgetting=1.5)
    with pytest.raises(DynIdError, match="initial_covariance must be positive definite"):
        RecursiveLeastSquares(2, initial_covariance=[1.0, -1.0])
    with pytest.raises(DynIdError,
                       match=r"^initial_covariance must have shape \(2 parameters, 2 parameters\), got \(3, 3\)$"):
        RecursiveLeastSquares(2, initial_covariance=np.eye(3))
    with pytest.raises(DynIdError, match=r"^theta0 must have shape \(2 parameters,\), got \(1,\)$"):
        RecursiveLeastSquares(2, theta0=[1.0])
    with pytest.raises(DynIdError, match=r"^covariance_limit must be finite and > 0, got -1\.0$"):
        RecursiveLeastSquares(2, covariance_limit=-1.0)
    rls = RecursiveLeastSquares(2)
    with pytest.raises(DynIdError, match=r"^phi must have shape \(2 parameters,\), got \(3,\)$"):
        rls.update(np.ones(3), 1.0)
    with pytest.raises(DynIdError, match=r"^y must have shape \(2 rows of phi,\), got \(1,\)$"):
        rls.update(np.ones((2, 2)), 1.0)
    with pytest.raises(DynIdError, match=r"^noise_variance must be > 0, got 0\.0$"):
        rls.update(np.ones(2), 1.0, noise_variance=0.0)
    with pytest.raises(DynIdError, match="RLS state has n_parameters 3, expected 2"):
        rls.set_state(RecursiveLeastSquares(3).get_state())
    with pytest.raises(DynIdError, match=r"RLS state is missing keys \['covariance'"):
        rls.set_state({"n_parameters": 2})


def test_eliminating_per_joint_nuisance_parameters_leaves_the_same_solution():
    """Offsets seen by one joint each, minimised out of the normal equations: the reduced problem's
    solution and the back-substituted offsets equal numpy's lstsq of the full stacked problem."""
    rng = np.random.default_rng(8)
    n_samples, n_joints, r = 400, 3, 5
    Y = rng.normal(size=(n_samples, n_joints, r))
    offsets = np.zeros((n_samples, n_joints, n_joints))
    offsets[:, np.arange(n_joints), np.arange(n_joints)] = 1.0
    full = np.concatenate([Y, offsets], axis=2)
    tau = full @ rng.normal(size=r + n_joints) + 0.1 * rng.normal(size=(n_samples, n_joints))
    accumulator = LeastSquaresAccumulator(n_joints, r + n_joints).add(full, tau)
    reduced, back_substitute = accumulator.eliminate(r)
    expected = np.linalg.lstsq(full.reshape(-1, r + n_joints), tau.reshape(-1), rcond=None)[0]
    x = reduced.solve().theta
    np.testing.assert_allclose(x, expected[:r], rtol=1e-9)
    np.testing.assert_allclose(back_substitute(x), expected[r:], rtol=1e-9)
    np.testing.assert_allclose(reduced.residual_sum_of_squares(x).sum(),
                               np.sum((full.reshape(-1, r + n_joints) @ expected - tau.reshape(-1))**2), rtol=1e-9)


def test_every_registered_method_is_one_a_model_file_may_record():
    """The model layer keeps the names a model file may record (it is below estimation); the registry and it
    must name the same methods, in the same order (the message naming the choices lists them so)."""
    from robot_dynid.estimation.estimators import ESTIMATORS
    from robot_dynid.model import dynamic_model
    assert tuple(ESTIMATORS) == dynamic_model.METHODS == ("ols", "wls", "rls")
