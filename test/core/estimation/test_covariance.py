"""The covariances of least squares (estimation/covariance.py) against refits, closed forms and a coverage study.

The coverage study identifies the ER3A from recordings of test/real_world.py: torques from pinocchio's RNEA (not the
project's regressor) plus exact Coulomb friction with its reversals, noise of a different size on every joint, AR(1)
in time (rho 0.9), an unmodelled ripple, the motion repeated twice without cycle labels. The truth is the simulated
links and friction through the base-parameter map, checked first against least squares on the noise-free torques.
"""
import logging

import numpy as np
import pytest
from scipy import stats

from real_world import Effects, excitation, simulate, with_true_accelerations
from repo_paths import ROBOTS
from robot_dynid.estimation.covariance import (MAX_BLOCKS, MIN_BLOCK_DURATION, NORMAL_QUANTILE, T_QUANTILES,
                                               BlockEquations, detect_period, interval_quantile, phase_times)
from robot_dynid.estimation.estimators import LeastSquaresAccumulator, ols, wls
from robot_dynid.estimation.identification import IdentificationSettings, identify
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.friction import friction_model
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.recordings.recording import Recording

TRUTH = np.array([1.5, -2.0, 0.7, 3.0])


def ar1_problem(rng, n_samples=400, rate=20.0, rho=0.9):
    """Two joints, four parameters, AR(1) noise of different size per joint; phases [s] of a 20 s recording."""
    Y = rng.normal(size=(n_samples, 2, 4)) * np.array([1.0, 10.0, 0.1, 2.0])
    noise = np.zeros((n_samples, 2))
    for k in range(1, n_samples):
        noise[k] = rho * noise[k - 1] + np.sqrt(1 - rho**2) * rng.normal(size=2)
    tau = np.einsum("kjp,p->kj", Y, TRUTH) + noise * np.array([0.05, 0.8])
    return Y, tau, np.arange(n_samples) / rate


@pytest.mark.parametrize("fit", [ols, wls])
def test_the_block_jackknife_is_the_spread_of_the_refits_that_leave_each_block_out(fit):
    """V = (B - 1) / B sum_b (theta_(-b) - theta)(theta_(-b) - theta)^T, each theta_(-b) an actual refit without
    block b's samples (WLS: with the full fit's weights)."""
    Y, tau, phase = ar1_problem(np.random.default_rng(0))
    result = fit(Y, tau, phase=phase)
    assert result.std_method == "block" and result.uncertainty.n_blocks == 20
    weights = np.ones(2) if fit is ols else 1.0 / result.noise_std**2
    block = np.floor(phase / MIN_BLOCK_DURATION).astype(int)
    shifts = []
    for b in range(20):
        keep = block != b
        W = (Y[keep] * np.sqrt(weights)[None, :, None]).reshape(-1, 4)
        y = (tau[keep] * np.sqrt(weights)[None, :]).reshape(-1)
        shifts.append(np.linalg.lstsq(W, y, rcond=None)[0] - result.theta)
    shifts = np.array(shifts)
    np.testing.assert_allclose(result.covariance, 19 / 20 * shifts.T @ shifts, rtol=1e-8)
    assert result.uncertainty.interval_dof == 19
    assert interval_quantile(0.05, 19) == pytest.approx(stats.t.ppf(0.975, 19))


def test_interval_quantiles_are_scipys():
    # the 95 % quantiles are a table (no scipy.special at a command's start): scipy's values, bit for bit since
    # scipy 1.17 (Boost's Student t quantile); before, stdtrit inverted cdflib's t distribution to about 1e-8
    import scipy
    from scipy.special import ndtri, stdtrit
    assert len(T_QUANTILES) == MAX_BLOCKS - 1
    assert NORMAL_QUANTILE == float(ndtri(0.975)) == interval_quantile() == interval_quantile(0.05, np.inf)
    scipys = tuple(float(stdtrit(dof, 0.975)) for dof in range(1, MAX_BLOCKS))
    if tuple(int(part) for part in scipy.__version__.split(".")[:2]) >= (1, 17):
        assert T_QUANTILES == scipys
    else:
        np.testing.assert_allclose(T_QUANTILES, scipys, rtol=1e-7)
    for dof in range(1, MAX_BLOCKS):
        assert interval_quantile(0.05, dof) == interval_quantile(0.05, np.int64(dof)) == T_QUANTILES[dof - 1]
        assert interval_quantile(0.05, float(dof)) == T_QUANTILES[dof - 1]
    for level, dof in ((0.05, 7.5), (0.05, MAX_BLOCKS), (0.05, 0.5), (0.1, 9), (0.1, None)):    # scipy's
        expected = ndtri(1.0 - level / 2.0) if dof is None else stdtrit(dof, 1.0 - level / 2.0)
        assert interval_quantile(level, dof) == float(expected)


def test_without_stamps_or_with_too_few_blocks_the_per_joint_std_is_reported_and_says_why():
    Y, tau, phase = ar1_problem(np.random.default_rng(1), n_samples=80)        # 4 s: 4 blocks
    result = ols(Y, tau, phase=phase)
    assert result.std_method == "per_joint" and "only 4 time blocks" in result.uncertainty.note
    assert ols(Y, tau).uncertainty.note.startswith("no stamps")
    accumulator = LeastSquaresAccumulator(2, 4).add(Y[:40], tau[:40], phase[:40]).add(Y[40:], tau[40:])
    assert "40 of 80 samples came without stamps" in accumulator.solve().uncertainty.note


def test_blocks_stay_within_the_memory_bound_and_keep_every_sample():
    """Ten minutes in 2 s chunks: block durations double, at most MAX_BLOCKS blocks, their sums are the totals."""
    rng = np.random.default_rng(2)
    accumulator = LeastSquaresAccumulator(2, 4)
    for start in range(0, 600, 2):
        Y = rng.normal(size=(40, 2, 4))
        accumulator.add(Y, Y @ TRUTH + rng.normal(size=(40, 2)), start + np.arange(40) / 20.0)
    blocks = accumulator.blocks_
    assert MAX_BLOCKS // 2 <= blocks.n_blocks <= MAX_BLOCKS and blocks.block_duration == 16.0
    grams, moments, counts = blocks.arrays()
    np.testing.assert_allclose(grams.sum(axis=0), accumulator.gram_, rtol=1e-12)
    np.testing.assert_allclose(moments.sum(axis=0), accumulator.moment_, rtol=1e-12)
    assert counts.sum() == accumulator.n_samples == 12000
    assert blocks.nbytes() <= MAX_BLOCKS * 2 * (4 * 4 + 4 + 1 + 1) * 8
    # merging a finer accumulator coarsens it to the coarser duration first
    finer = LeastSquaresAccumulator(2, 4).add(rng.normal(size=(40, 2, 4)), rng.normal(size=(40, 2)),
                                              np.arange(40) / 20.0)
    merged = BlockEquations(2, 4).merge(finer.blocks_).merge(blocks)
    assert merged.block_duration == 16.0 and merged.n_samples == 12040


def test_the_phase_restarts_at_each_labelled_cycle_and_folds_a_repeated_motion():
    robot = load_robot(ROBOTS / "er3a.yaml")
    t = np.arange(0.0, 30.0, 0.01)
    cycle = np.repeat([0, 1, 2], 1000)
    np.testing.assert_allclose(phase_times(t, cycle), np.tile(np.arange(1000) * 0.01, 3), atol=1e-9)
    motion = excitation(robot, seed=3, period=7.3)
    sim = simulate(robot, motion, 40.0, 500.0, Effects(stamps="receive", jitter=0.3, drop=0.05, quantum=1e-4), seed=1)
    period = detect_period(sim.recording.time, sim.recording.q)
    assert period == pytest.approx(7.3, abs=1e-3)
    phase = phase_times(sim.recording.time, None, sim.recording.q)
    assert phase.max() < 7.3 and np.all(np.abs(np.mod(sim.recording.time - sim.recording.time[0], period) - phase)
                                        < 1e-9)


def test_a_motion_that_does_not_repeat_has_no_period():
    robot = load_robot(ROBOTS / "er3a.yaml")
    sim = simulate(robot, excitation(robot, seed=3, period=30.0), 25.0, 100.0, seed=1)
    assert detect_period(sim.recording.time, sim.recording.q) is None
    assert detect_period(sim.recording.time, np.zeros_like(sim.recording.q)) is None      # at rest


@pytest.fixture(scope="module")
def study():
    """50 recordings of 20 s at 100 Hz of different excitations (10 s period, played twice), identified by OLS."""
    logging.disable(logging.WARNING)
    robot = load_robot(ROBOTS / "er3a.yaml")
    settings = IdentificationSettings(friction=friction_model("coulomb_viscous"), friction_side="joint",
                                      check_torque_scale=False)
    base = compute_base_parameters(settings.regressor(robot))
    fraction = np.array([0.01, 0.02, 0.03, 0.05, 0.1, 0.03])          # noise of each joint's own RMS torque
    results = []
    try:
        for seed in range(50):
            motion = excitation(robot, seed=100 + seed, period=10.0)
            clean = simulate(robot, motion, 20.0, 100.0, Effects(noise=0.0), seed=seed)
            ripple = 0.02 * np.sqrt(np.mean(clean.truth.tau**2, axis=0))
            sim = simulate(robot, motion, 20.0, 100.0, Effects(noise_fraction=fraction, rho=0.9, ripple=ripple),
                           seed=seed)
            truth = sim.truth
            standard = np.concatenate([truth.links, np.ravel(np.column_stack([truth.coulomb, truth.viscous]))])
            if seed == 0:   # the base-parameter map against least squares on noise-free RNEA torques
                noise_free = Recording.from_arrays(robot.joint_names, truth.time, truth.q, truth.qd, truth.qdd,
                                                   truth.rigid + truth.friction)
                exact = identify(noise_free, robot, settings, base=base)
                np.testing.assert_allclose(exact.values, base.projection @ standard, rtol=1e-6,
                                           atol=1e-6 * np.abs(exact.values).max())
            model = identify(with_true_accelerations(sim), robot, settings, base=base)
            results.append((model, base.projection @ standard))
    finally:
        logging.disable(logging.NOTSET)
    return base, results


def test_95_percent_intervals_of_the_block_std_contain_the_truth_and_the_white_ones_do_not(study):
    base, results = study
    friction = np.array([name.startswith("f") for name in base.names])
    robust, white = [], []
    for model, truth in results:
        assert model.std_method == "block" and model.interval_dof >= 9   # the period found: 10 blocks or 11
        error = np.abs(model.values - truth)
        robust.append(error <= stats.t.ppf(0.975, model.interval_dof) * model.std)
        white.append(error <= stats.norm.ppf(0.975) * model.white_std)
    robust, white = np.array(robust), np.array(white)
    for name, columns in (("inertial", ~friction), ("friction", friction)):
        assert robust[:, columns].mean() >= 0.90, (name, robust[:, columns].mean())
        assert white[:, columns].mean() < 0.70, (name, white[:, columns].mean())


def test_a_block_that_alone_sees_a_parameter_makes_it_the_cluster_sandwich_and_says_which():
    """Leaving out the only block that moves parameter 3 leaves it unidentifiable: no jackknife there; the
    covariance is B / (B - 1) A^-1 sum_b s_b s_b^T A^-1, the scores s_b = Y_b^T (tau_b - Y_b theta) summed by hand."""
    rng = np.random.default_rng(5)
    Y, tau, phase = ar1_problem(rng)
    block = np.floor(phase / MIN_BLOCK_DURATION).astype(int)
    Y[block != 4, :, 3] = 0.0
    tau = np.einsum("kjp,p->kj", Y, TRUTH) + rng.normal(0.0, 0.1, tau.shape)
    result = ols(Y, tau, phase=phase)
    assert result.std_method == "block"
    assert "without block 5 of 20 the parameters are not identifiable" in result.uncertainty.note
    W = Y.reshape(-1, 4)
    inverse = np.linalg.inv(W.T @ W)
    residual = tau - np.einsum("kjp,p->kj", Y, result.theta)
    scores = np.array([np.einsum("kjp,kj->p", Y[block == b], residual[block == b]) for b in range(20)])
    np.testing.assert_allclose(result.covariance, 20 / 19 * inverse @ scores.T @ scores @ inverse, rtol=1e-8)
