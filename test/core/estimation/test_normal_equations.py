"""RecordingEquations: every pass over recordings' equations (normal equations, folds, QR factors, residuals),
against the base regressor formed in full and multiplied out with numpy."""
import warnings

import numpy as np
import pytest

from robot_dynid.estimation import identification, normal_equations
from robot_dynid.estimation.normal_equations import RecordingEquations, iter_regressor_chunks
from robot_dynid.experiment.trajectories import FourierTrajectory, time_grid
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.recording import Recording
from robot_dynid.recordings.signal_processing import lowpass_filter

RATE = 200.0    # Hz


@pytest.fixture(scope="module")
def arm():
    robot = load_robot(find_package_file("config", "robots", "ur5.yaml"))
    regressor = Regressor(robot, friction_model("coulomb_viscous"))
    return regressor, compute_base_parameters(regressor)


def recording(regressor, seed, duration=8.0, source=None):
    """A smooth Fourier motion with torques of random parameters plus noise (the equations' values do not
    matter here, only that every pass sums the same ones)."""
    robot = regressor.robot
    rng = np.random.default_rng(seed)
    scale = 0.1 * np.array([limit.velocity for limit in robot.limits])[:, None]
    trajectory = FourierTrajectory(robot.joint_names, period=4.0, q0=np.zeros(robot.n_joints),
                                   a=rng.normal(size=(robot.n_joints, 3)) * scale,
                                   b=rng.normal(size=(robot.n_joints, 3)) * scale)
    t = time_grid(duration, dt=1.0 / RATE)
    q, qd, qdd = trajectory.evaluate(t)
    tau = regressor.compute(q, qd, qdd) @ rng.normal(size=regressor.n_parameters)
    tau += rng.normal(scale=0.3, size=tau.shape)
    return Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau, source=source or f"seed{seed}")


def full_base_regressor(regressor, base, data):
    return base.select(regressor.compute(data.q, data.qd, data.qdd))


def gram_of(Y, tau):
    return (np.einsum("kjp,kjq->jpq", Y, Y), np.einsum("kjp,kj->jp", Y, tau), np.sum(tau**2, axis=0))


def test_parallel_filtering_in_chunks_equals_filtering_each_run_whole(arm):
    """The regressor is filtered in overlapping chunks (bounded memory); the reference filters the whole
    regressor of each contiguous run at once (scipy's sosfiltfilt through lowpass_filter). A gap in the
    stamps (a stage selection) starts a new run."""
    regressor, base = arm
    whole = recording(regressor, 5, duration=16.0)
    data = whole.take(np.r_[0:1500, 1700:whole.n_samples])
    chunks = list(iter_regressor_chunks(regressor, base, data, chunk_size=400, lowpass=8.0))
    Y = np.concatenate([chunk[0] for chunk in chunks])
    filtered_tau = np.concatenate([chunk[1] for chunk in chunks])
    full = full_base_regressor(regressor, base, data)
    for run in (slice(0, 1500), slice(1500, None)):
        expected = lowpass_filter(full[run], 8.0, RATE)
        np.testing.assert_allclose(Y[run], expected, rtol=0, atol=1e-9 * np.abs(expected).max())
        np.testing.assert_allclose(filtered_tau[run], lowpass_filter(data.tau[run], 8.0, RATE), atol=1e-12)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "through-the-regressor"])
def test_the_folds_of_several_recordings_are_their_equations_and_add_up_to_the_fit(arm, fused):
    """Five recordings make five folds (one recording each); each fold's sums are numpy's of that recording's
    base regressor, and the folds together are the whole accumulation."""
    regressor, base = arm
    recordings = [recording(regressor, seed, duration=2.0) for seed in range(5)]
    equations = RecordingEquations(recordings, regressor, base, chunk_size=150, batch=fused)
    assert equations.fused is fused
    folds = equations.folds()
    assert folds.kind == "recordings" and len(folds.fits) == 5 and folds.scoring is None
    for fold, data in zip(folds.fits, recordings):
        gram, moment, square = gram_of(full_base_regressor(regressor, base, data), data.tau)
        np.testing.assert_allclose(fold.gram_, gram, rtol=1e-10, atol=1e-10 * np.abs(gram).max())
        np.testing.assert_allclose(fold.moment_, moment, rtol=1e-10, atol=1e-10 * np.abs(moment).max())
        np.testing.assert_allclose(fold.torque_square_sum_, square, rtol=1e-12)
    whole = equations.accumulate()
    np.testing.assert_allclose(sum(fold.gram_ for fold in folds.fits), whole.gram_, rtol=1e-10,
                               atol=1e-10 * np.abs(whole.gram_).max())
    assert folds.n_samples == whole.n_samples == sum(data.n_samples for data in recordings)


def test_filtered_folds_are_scored_on_their_unfiltered_equations(arm):
    regressor, base = arm
    data = recording(regressor, 7, duration=10.0)
    folds = RecordingEquations([data], regressor, base, lowpass=10.0).folds()
    assert folds.kind == "blocks of consecutive samples" and len(folds.scoring) == len(folds.fits) == 5
    bounds = np.linspace(0, data.n_samples, 6).astype(int)
    Y = full_base_regressor(regressor, base, data)
    for k, (fit, scoring) in enumerate(zip(folds.fits, folds.scoring)):
        rows = slice(bounds[k], bounds[k + 1])
        gram, _, square = gram_of(Y[rows], data.tau[rows])
        np.testing.assert_allclose(scoring.gram_, gram, rtol=1e-10, atol=1e-10 * np.abs(gram).max())
        np.testing.assert_allclose(scoring.torque_square_sum_, square, rtol=1e-12)
        assert not np.allclose(fit.torque_square_sum_, square, rtol=1e-3)    # the fit's are filtered


def test_qr_factors_minimise_the_offsets_out_as_the_stacked_least_squares_does(arm):
    """Offsets per recording and joint are nuisance columns: ``||R_j x - z_j||^2 + rho_j^2`` equals the
    residual of ``x`` with each joint's offset in each recording at its best (the mean residual there)."""
    regressor, base = arm
    recordings = [recording(regressor, seed, duration=2.0) for seed in (11, 12)]
    equations = RecordingEquations(recordings, regressor, base, chunk_size=170, offsets=True)
    assert equations.n_parameters == base.rank + 2 * regressor.n_joints and not equations.fused
    factors = equations.qr_factors()
    x = np.random.default_rng(3).normal(size=base.rank)
    expected = np.zeros(regressor.n_joints)
    for data in recordings:
        residual = data.tau - full_base_regressor(regressor, base, data) @ x
        expected += np.sum((residual - residual.mean(axis=0)) ** 2, axis=0)
    R, z, rho = factors[:, :-1, :-1], factors[:, :-1, -1], factors[:, -1, -1]
    got = np.sum((np.einsum("jpq,q->jp", R, x) - z) ** 2, axis=1) + rho**2
    np.testing.assert_allclose(got, expected, rtol=1e-9)


def test_residuals_are_summed_over_the_equations_min_speed_keeps(arm):
    regressor, base = arm
    data = recording(regressor, 21, duration=4.0)
    equations = RecordingEquations([data], regressor, base, min_speed=0.05)
    kept = np.abs(data.qd) >= 0.05
    assert not kept.all() and kept.any()
    theta = np.random.default_rng(4).normal(size=base.rank)
    residual = (full_base_regressor(regressor, base, data) @ theta - data.tau) * kept
    np.testing.assert_allclose(equations.residual_sum_of_squares(theta), np.sum(residual**2, axis=0), rtol=1e-10)
    np.testing.assert_array_equal(equations.accumulate().equations_, kept.sum(axis=0))


def test_names_that_moved_here_still_work_from_identification_with_a_warning():
    with pytest.warns(DeprecationWarning, match="identification.slow_equations moved to .*normal_equations"):
        moved = identification.slow_equations
    assert moved is normal_equations.slow_equations
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert identification.identify is not None
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        identification.no_such_name
