"""The fused normal equations (Regressor.normal_equations, normal_equations.accumulate_recording) against the
explicit path: the regressor Y formed, its base columns taken and multiplied out with numpy."""
import numpy as np
import pytest

from robot_dynid.errors import DataError
from robot_dynid.estimation import identification
from robot_dynid.estimation.estimators import LeastSquaresAccumulator, QRAccumulator
from robot_dynid.estimation.identification import (ConsistencySettings, IdentificationSettings, identify,
                                                   recording_equations)
from robot_dynid.estimation.normal_equations import RecordingEquations, accumulate_recording
from robot_dynid.estimation.physical_consistency import compress, compress_factors, cvxpy_available
from robot_dynid.experiment.simulation import simulation_parameters
from robot_dynid.model.base_parameters import compute_base_parameters, random_states
from robot_dynid.model.friction import FRICTION_MODEL_NAMES, friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.recording import Recording

TOLERANCE = 1e-10   # relative, as issue 23 asks
#: Samples per case: not a multiple of the kernel's 4 lanes nor of its 32-sample tile.
N_SAMPLES = 203


def robot_file(name):
    return load_robot(find_package_file("config", "robots", name))


@pytest.fixture(scope="module")
def ur5():
    return robot_file("ur5.yaml")


@pytest.fixture(scope="module")
def coupled_wrist():
    return robot_file("er3a_coupled_wrist.yaml")


@pytest.fixture(scope="module")
def linear_track():
    return robot_file("ur5_on_linear_track.yaml")


def frictions():
    """Every friction model without drift, with temperature drift, and with the time drift's two warm-up
    exponentials; a dead band on one of them."""
    models = [friction_model(name) for name in FRICTION_MODEL_NAMES]
    drifting = [name for name in FRICTION_MODEL_NAMES if name != "none"]
    models += [friction_model(name, drift="temperature") for name in drifting]
    models += [friction_model(name, drift="time", warmup_time_constant=600.0, warmup_time_constant_2=60.0)
               for name in drifting]
    models.append(friction_model("coulomb_viscous", dead_band=0.05))
    return models


def states_and_torques(regressor, seed, n_samples=N_SAMPLES):
    rng = np.random.default_rng(seed)
    states = random_states(regressor, n_samples, rng)
    tau = rng.normal(scale=10.0, size=states["q"].shape)
    return states, tau


def explicit_sums(regressor, columns, states, tau):
    """Y formed in full, its columns taken, the sums multiplied out: the reference."""
    Y = regressor.compute(**states)[:, :, columns]
    return (np.einsum("kjp,kjq->jpq", Y, Y), np.einsum("kjp,kj->jp", Y, tau), np.sum(tau**2, axis=0))


def fused_sums(regressor, columns, states, tau):
    n, r = regressor.n_joints, len(columns)
    sums = np.zeros((n, r, r)), np.zeros((n, r)), np.zeros(n)
    regressor.normal_equations(columns, states["q"], states["qd"], states["qdd"], tau, *sums,
                               temperature=states.get("temperature"), elapsed=states.get("elapsed"))
    return sums


def assert_relative(actual, expected, what):
    """Every joint's array equal to TOLERANCE relative to its largest entry."""
    for j, (a, e) in enumerate(zip(actual, expected)):
        scale = max(np.abs(e).max(), np.finfo(float).tiny)
        error = np.abs(a - e).max() / scale
        assert error <= TOLERANCE, f"{what} of joint {j + 1}: {error:.2e} relative"


def assert_fused_equals_explicit(regressor, seed=0, columns=None):
    columns = list(compute_base_parameters(regressor).independent) if columns is None else columns
    states, tau = states_and_torques(regressor, seed)
    fused = fused_sums(regressor, columns, states, tau)
    explicit = explicit_sums(regressor, columns, states, tau)
    for name, actual, expected in zip(("gram", "moment"), fused, explicit):
        assert_relative(actual, expected, name)
    np.testing.assert_allclose(fused[2], explicit[2], rtol=TOLERANCE)


@pytest.mark.parametrize("friction", frictions(), ids=lambda f: f"{f.name}-{f.drift}-{f.dead_band:g}")
def test_fused_base_equations_equal_the_explicit_ones_for_every_friction_model(ur5, friction):
    assert_fused_equals_explicit(Regressor(ur5, friction, armature=True, offset=True))


@pytest.mark.parametrize("side", ["joint", "motor", "both"])
@pytest.mark.parametrize("friction", [friction_model("coulomb_viscous"), friction_model("arctan", drift="temperature"),
                                      friction_model("stribeck_cbrt", drift="time", warmup_time_constant_2=90.0)],
                         ids=lambda f: f"{f.name}-{f.drift}")
def test_fused_equations_with_a_transmission_equal_the_explicit_ones(coupled_wrist, side, friction):
    assert_fused_equals_explicit(Regressor(coupled_wrist, friction, armature=True, offset=True, friction_side=side))


def test_fused_equations_of_a_prismatic_joint_equal_the_explicit_ones(linear_track):
    assert_fused_equals_explicit(Regressor(linear_track, friction_model("polynomial"), armature=True, offset=True))


def test_every_standard_column_and_chunks_smaller_than_the_data_give_the_same_sums(ur5):
    regressor = Regressor(ur5, friction_model("coulomb_viscous"), armature=True, chunk_size=37)
    assert_fused_equals_explicit(regressor, seed=3, columns=list(range(regressor.n_parameters)))


def test_the_fused_sums_add_to_what_the_arrays_hold(ur5):
    regressor = Regressor(ur5, friction_model("coulomb_viscous"))
    columns = list(compute_base_parameters(regressor).independent)
    states, tau = states_and_torques(regressor, seed=4)
    first = {key: value[:100] for key, value in states.items()}
    second = {key: value[100:] for key, value in states.items()}
    sums = fused_sums(regressor, columns, first, tau[:100])
    regressor.normal_equations(columns, second["q"], second["qd"], second["qdd"], tau[100:], *sums)
    for actual, expected in zip(sums, explicit_sums(regressor, columns, states, tau)):
        assert_relative(np.atleast_2d(actual), np.atleast_2d(expected), "sum")


def test_bad_sums_and_columns_are_refused_naming_them(ur5):
    regressor = Regressor(ur5, friction_model("coulomb_viscous"))
    states, tau = states_and_torques(regressor, seed=5, n_samples=8)
    q, qd, qdd = states["q"], states["qd"], states["qdd"]
    n = regressor.n_joints
    with pytest.raises(DataError, match=r"gram must be a writeable C-ordered float64 array of shape \(6, 2, 2\)"):
        regressor.normal_equations([0, 1], q, qd, qdd, tau, np.zeros((6, 3, 3)), np.zeros((n, 2)), np.zeros(n))
    with pytest.raises(DataError, match=r"^tau must have shape \(8 samples, 6 joints\), got \(8, 5\)$"):
        regressor.normal_equations([0], q, qd, qdd, tau[:, :5], np.zeros((n, 1, 1)), np.zeros((n, 1)), np.zeros(n))
    with pytest.raises(DataError, match=r"^tau must be finite \[N m\], got nan at sample 0, joint shoulder_pan_joint$"):
        regressor.normal_equations([0], q, qd, qdd, np.full_like(tau, np.nan), np.zeros((n, 1, 1)),
                                   np.zeros((n, 1)), np.zeros(n))
    with pytest.raises(ValueError, match=r"columns must be ascending integers in \[0, 72\)"):
        regressor.normal_equations([1, 0], q, qd, qdd, tau, np.zeros((n, 2, 2)), np.zeros((n, 2)), np.zeros(n))
    with pytest.raises(ValueError, match=r"columns must be ascending integers in \[0, 72\)"):
        regressor.normal_equations([72], q, qd, qdd, tau, np.zeros((n, 1, 1)), np.zeros((n, 1)), np.zeros(n))


# --- the pipeline: identify() fused against identify() through the regressor chunks


def random_recording(regressor, seed, n_samples=3000, noise=0.5):
    """Random states (well conditioned), torques of simulation parameters plus noise; stamps 1 s apart so
    that a time drift sees its warm-up (elapsed = stamp)."""
    rng = np.random.default_rng(seed)
    states = random_states(regressor, n_samples, rng)
    theta = simulation_parameters(regressor, seed=seed)
    tau = regressor.torque(theta, states["q"], states["qd"], states["qdd"], temperature=states.get("temperature"),
                           elapsed=np.arange(n_samples, dtype=float))
    tau += rng.normal(scale=noise, size=tau.shape)
    return Recording.from_arrays(regressor.robot.joint_names, np.arange(n_samples, dtype=float), states["q"],
                                 states["qd"], states["qdd"], tau, temperature=states.get("temperature"))


def identify_both_ways(monkeypatch, recordings, robot, settings):
    fused = identify(recordings, robot, settings)
    with monkeypatch.context() as patch:
        patch.setattr(RecordingEquations, "fused", property(lambda equations: False))
        explicit = identify(recordings, robot, settings, base=fused.base)
    return fused, explicit


@pytest.mark.parametrize("method", ["ols", "wls"])
@pytest.mark.parametrize("robot_name, friction, side", [
    ("ur5.yaml", friction_model("coulomb_viscous"), None),
    ("ur5.yaml", friction_model("arctan", drift="temperature"), None),
    ("er3a_coupled_wrist.yaml", friction_model("coulomb_viscous", drift="time", warmup_time_constant=900.0,
                                               warmup_time_constant_2=120.0), "both"),
], ids=["ur5", "ur5-temperature", "coupled-wrist-time-drift"])
def test_identify_fused_equals_identify_through_the_regressor(monkeypatch, method, robot_name, friction, side):
    robot = robot_file(robot_name)
    settings = IdentificationSettings(friction=friction, armature=True, offset=True, method=method,
                                      friction_side=side, check_torque_scale=False)
    regressor = settings.regressor(robot)
    recordings = [random_recording(regressor, seed) for seed in (1, 2)]
    fused, explicit = identify_both_ways(monkeypatch, recordings, robot, settings)
    for name in ("values", "std"):
        actual, expected = getattr(fused, name), getattr(explicit, name)
        np.testing.assert_allclose(actual, expected, rtol=TOLERANCE, atol=TOLERANCE * np.abs(expected).max(),
                                   err_msg=name)
    assert fused.metrics["n_samples"] == explicit.metrics["n_samples"] == 6000


def test_the_fused_path_is_taken_only_where_nothing_needs_the_regressor(ur5):
    regressor = Regressor(ur5, friction_model("coulomb_viscous"))
    base = compute_base_parameters(regressor)

    def fused(settings, offsets=False):
        return recording_equations([], regressor, base, settings, offsets).fused

    assert fused(IdentificationSettings())
    assert fused(IdentificationSettings(method="wls"))
    assert not fused(IdentificationSettings(lowpass=5.0))
    assert not fused(IdentificationSettings(method="rls"))
    assert not fused(IdentificationSettings(), offsets=True)


def test_accumulate_recording_refuses_an_accumulator_of_another_shape(ur5):
    regressor = Regressor(ur5, friction_model("coulomb_viscous"))
    base = compute_base_parameters(regressor)
    recording = random_recording(regressor, seed=1, n_samples=50)
    with pytest.raises(DataError, match=r"accumulator of \(n, p\) = \(6, 3\) for a regressor of 6 joints and 48 base"):
        accumulate_recording(LeastSquaresAccumulator(6, 3), regressor, base, recording)


# --- the consistent fit's compression: from the Gram matrices, or from QR factors beyond the limit


def stacked_problem(seed, condition, noise=1e-3):
    """Per-joint rows W_j (N, r) with scaled condition number about ``condition``, and targets."""
    rng = np.random.default_rng(seed)
    n, samples, r = 3, 400, 8
    left = np.linalg.qr(rng.normal(size=(n * samples, r)))[0]
    right = np.linalg.qr(rng.normal(size=(r, r)))[0]
    W = (left * np.geomspace(1.0, 1.0 / condition, r)) @ right.T
    W = W * rng.uniform(0.1, 10.0, r)          # column scales that the compression undoes
    Y = W.reshape(samples, n, r)
    tau = Y @ rng.normal(size=r) + rng.normal(scale=noise, size=(samples, n))
    return Y, tau


def test_compression_from_qr_factors_equals_the_gram_compression_on_well_conditioned_data():
    Y, tau = stacked_problem(seed=1, condition=10.0)
    gram = LeastSquaresAccumulator(3, 8).add(Y, tau)
    qr = QRAccumulator(3, 8)
    for chunk in np.array_split(np.arange(Y.shape[0]), 5):
        qr.add(Y[chunk], tau[chunk])
    weights = np.array([1.0, 4.0, 0.25])
    expected = compress(gram.gram_, gram.moment_, gram.torque_square_sum_, weights)
    actual = compress_factors(qr.factors(), weights)
    np.testing.assert_allclose(actual.R.T @ actual.R, expected.R.T @ expected.R, rtol=1e-10,
                               atol=1e-10 * np.abs(expected.R.T @ expected.R).max())
    np.testing.assert_allclose(actual.R.T @ actual.c, expected.R.T @ expected.c, rtol=1e-10)
    np.testing.assert_allclose(actual.constant, expected.constant, rtol=1e-8)
    np.testing.assert_allclose(actual.inverse_gram, expected.inverse_gram, rtol=1e-9,
                               atol=1e-9 * np.abs(expected.inverse_gram).max())


def test_qr_factors_keep_the_least_squares_solution_where_the_gram_matrix_loses_it():
    """cond(W_s) = 1e6, cond(G_s) = 1e12 (far beyond GRAM_CONDITION_LIMIT): the factors' solution agrees with
    numpy's lstsq of the stacked rows to cond(W) eps, the Gram matrix's only to cond(W)^2 eps."""
    Y, tau = stacked_problem(seed=2, condition=1e6, noise=0.0)
    W, target = Y.reshape(-1, 8), tau.reshape(-1)
    reference = np.linalg.lstsq(W, target, rcond=None)[0]
    factors = compress_factors(QRAccumulator(3, 8).add(Y, tau).factors(), rank_tolerance=1e-12)
    from_factors = np.linalg.solve(factors.R, factors.c)
    error = np.linalg.norm(from_factors - reference) / np.linalg.norm(reference)
    gram = LeastSquaresAccumulator(3, 8).add(Y, tau)
    squared = compress(gram.gram_, gram.moment_, gram.torque_square_sum_, rank_tolerance=1e-12)
    gram_error = np.linalg.norm(np.linalg.solve(squared.R, squared.c) - reference) / np.linalg.norm(reference)
    assert error < 1e-8 and gram_error > 1e3 * error


def test_qr_accumulator_eliminates_the_nuisance_columns_as_the_gram_accumulator_does():
    Y, tau = stacked_problem(seed=3, condition=30.0)
    offsets = np.zeros(Y.shape[:2] + (3,))
    offsets[:, np.arange(3), np.arange(3)] = 1.0
    with_offsets = np.concatenate([Y, offsets], axis=2)
    reduced, _ = LeastSquaresAccumulator(3, 11).add(with_offsets, tau).eliminate(8)
    expected = compress(reduced.gram_, reduced.moment_, reduced.torque_square_sum_)
    actual = compress_factors(QRAccumulator(3, 11, n_keep=8).add(with_offsets, tau).factors())
    np.testing.assert_allclose(actual.R.T @ actual.R, expected.R.T @ expected.R, rtol=1e-9,
                               atol=1e-10 * np.abs(expected.R.T @ expected.R).max())
    np.testing.assert_allclose(actual.constant, expected.constant, rtol=1e-7)


@pytest.mark.skipif(not cvxpy_available(), reason="the consistent fit needs cvxpy")
@pytest.mark.parametrize("file_offsets", [False, True])
def test_a_consistent_fit_beyond_the_gram_limit_is_compressed_by_qr_and_agrees(monkeypatch, ur5, file_offsets):
    settings = IdentificationSettings(friction=friction_model("coulomb_viscous"), check_torque_scale=False,
                                      consistency=ConsistencySettings(check=False), file_offsets=file_offsets)
    recordings = [random_recording(settings.regressor(ur5), seed=seed, n_samples=2000) for seed in (6, 7)]
    gram = identify(recordings, ur5, settings)
    monkeypatch.setattr(identification, "GRAM_CONDITION_LIMIT", 1.0)
    qr = identify(recordings, ur5, settings, base=gram.base)
    assert gram.metrics["consistency"]["compression"] == "gram"
    assert qr.metrics["consistency"]["compression"] == "qr"
    assert gram.metrics["consistency"]["gram_condition"] == qr.metrics["consistency"]["gram_condition"] > 1.0
    np.testing.assert_allclose(qr.values, gram.values, rtol=1e-5, atol=1e-6 * np.abs(gram.values).max())
