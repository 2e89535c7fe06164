"""The fast online step against the checked one, bit for bit on the same inputs: the trusted regressor
(``Regressor.online``) against ``Regressor.compute_one``, ``RecursiveLeastSquares.update_trusted`` against
``update``, the online estimator's step against the checked calls in sequence, and the compiled pieces
against their formulas."""
import numpy as np
import pytest
from scipy import signal

from robot_dynid import _online_kernel
from robot_dynid.errors import DataError
from robot_dynid.estimation.estimators import RecursiveLeastSquares
from robot_dynid.estimation.streaming import OnlineEstimator
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.friction import FrictionModel
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.signal_processing import centre_derivative


def robot(name):
    return load_robot(find_package_file("config", "robots", name))


FRICTIONS = [
    FrictionModel("coulomb_viscous"),
    FrictionModel("coulomb_viscous", dead_band=0.3),
    FrictionModel("stribeck_cbrt"),
    FrictionModel("arctan"),
    FrictionModel("polynomial"),
    FrictionModel("coulomb_viscous_lead"),
    FrictionModel("coulomb_viscous", drift="temperature"),
    FrictionModel("arctan", drift="time", warmup_time_constant_2=300.0),
    FrictionModel(),
]


def states(robot_description, rng):
    n = robot_description.n_joints
    return rng.uniform(-1.5, 1.5, n), rng.uniform(-1.0, 1.0, n), rng.uniform(-3.0, 3.0, n)


@pytest.mark.parametrize("friction", FRICTIONS, ids=lambda f: f"{f.name}-{f.drift}-{f.dead_band:g}")
@pytest.mark.parametrize("robot_file, side", [("ur5.yaml", None), ("ur5_on_linear_track.yaml", None),
                                              ("er3a_coupled_wrist.yaml", "motor"),
                                              ("er3a_coupled_wrist.yaml", "both"),
                                              ("er3a_coupled_wrist.yaml", "joint")])
def test_online_regressor_and_compute_one_equal_the_checked_batch_path_bit_for_bit(friction, robot_file, side):
    description = robot(robot_file)
    regressor = Regressor(description, friction, armature=True, offset=True, friction_side=side)
    online = regressor.online()
    rng = np.random.default_rng(7)
    for _ in range(5):
        q, qd, qdd = states(description, rng)
        qd[0] = 0.1                           # inside the dead band of the model that has one
        temperature = rng.uniform(20.0, 60.0, description.n_joints) if friction.needs_temperature else None
        elapsed = float(rng.uniform(0.0, 3000.0)) if friction.needs_elapsed else None
        # the checked batch path on one sample (what compute_one ran before it took the trusted path)
        expected = regressor.compute(q[None], qd[None], qdd[None],
                                     temperature=None if temperature is None else temperature[None],
                                     elapsed=None if elapsed is None else np.array([elapsed]))[0]
        got = online.compute(q, qd, qdd, temperature, elapsed)
        assert got is online.Y and got.shape == (description.n_joints, regressor.n_parameters)
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(regressor.compute_one(q, qd, qdd, temperature=temperature, elapsed=elapsed),
                                      expected)


def test_compute_one_returns_its_own_array():
    """compute_one runs on per-thread buffers: a result is not overwritten by the next call."""
    description = robot("ur5.yaml")
    regressor = Regressor(description, FrictionModel("coulomb_viscous"))
    rng = np.random.default_rng(5)
    first_states, second_states = states(description, rng), states(description, rng)
    first = regressor.compute_one(*first_states)
    kept = first.copy()
    second = regressor.compute_one(*second_states)
    np.testing.assert_array_equal(first, kept)
    assert not np.array_equal(first, second)


def test_online_regressor_result_is_the_batch_regressor():
    """Independent of compute_one: the same sample in a batch of random ones (the kernel's other lanes)."""
    description = robot("ur5.yaml")
    regressor = Regressor(description, FrictionModel("coulomb_viscous"), offset=True)
    rng = np.random.default_rng(3)
    q, qd, qdd = (rng.uniform(-1.0, 1.0, (9, 6)) for _ in range(3))
    batch = regressor.compute(q, qd, qdd)
    online = regressor.online()
    for k in range(9):
        np.testing.assert_allclose(online.compute(q[k], qd[k], qdd[k]), batch[k], rtol=1e-13, atol=1e-12)


def test_the_compiled_fill_of_the_online_regressor_refuses_an_output_it_cannot_write():
    """OneSample.fill (the online regressor's call for sign-type joint friction) writes only a float64 (n, p)."""
    regressor = Regressor(robot("ur5.yaml"), FrictionModel("coulomb_viscous"))
    fill = regressor._compiled_one_sample(regressor.online().states, np.zeros((1, 6, 2))).fill
    with pytest.raises(ValueError, match=rf"fill needs out \(6, {regressor.n_parameters}\), got \(6, 3\)"):
        fill(np.zeros((6, 3)))
    with pytest.raises(ValueError, match="out must be a C-contiguous 2-dimensional float64 array"):
        fill(np.zeros((6, regressor.n_parameters), dtype=np.float32))
    with pytest.raises(TypeError, match="fill takes out, got 0 arguments"):
        fill()


def rls_rows(rng, n_updates=60, m=6, p=12):
    Phi = rng.normal(size=(n_updates, m, p))
    Phi[:, :, -1] = 0.0                       # a column never excited: zeros the kernel skips
    theta = rng.normal(size=p)
    return Phi, Phi @ theta + 0.01 * rng.normal(size=(n_updates, m))


@pytest.mark.parametrize("forgetting, limit, noise", [
    (1.0, None, None), (0.98, 5.0, None), (0.995, None, [0.5, 1.0, 2.0, 1.0, 0.1, 3.0])])
def test_rls_update_trusted_equals_update_bit_for_bit(forgetting, limit, noise):
    rng = np.random.default_rng(11)
    Phi, y = rls_rows(rng)
    checked = RecursiveLeastSquares(12, forgetting, initial_covariance=10.0, covariance_limit=limit)
    trusted = RecursiveLeastSquares(12, forgetting, initial_covariance=10.0, covariance_limit=limit)
    noise_array = None if noise is None else np.array(noise)
    for Phi_k, y_k in zip(Phi, y):
        returned = checked.update(Phi_k, y_k, noise)
        assert trusted.update_trusted(Phi_k, y_k, noise_array) is None
        np.testing.assert_array_equal(trusted.theta_, checked.theta_)
        np.testing.assert_array_equal(trusted.covariance_, checked.covariance_)
        np.testing.assert_array_equal(returned, checked.theta_)
    np.testing.assert_array_equal(checked.covariance_, checked.covariance_.T)
    assert trusted.n_updates_ == checked.n_updates_ == len(Phi)
    if limit is not None:
        assert np.linalg.eigvalsh(trusted.covariance_)[-1] <= limit * (1 + 1e-9)


def test_rls_update_equals_the_textbook_recursion():
    """The compiled recursion against the gain form K = P Phi^T (mu S + Phi P Phi^T)^-1 in numpy."""
    rng = np.random.default_rng(5)
    Phi, y = rls_rows(rng, n_updates=40)
    rls = RecursiveLeastSquares(12, 0.99, initial_covariance=100.0, covariance_limit=1e9)
    theta, P = np.zeros(12), 100.0 * np.eye(12)
    noise = rng.uniform(0.5, 2.0, 6)
    for Phi_k, y_k in zip(Phi, y):
        gain = P @ Phi_k.T @ np.linalg.inv(0.99 * np.diag(noise) + Phi_k @ P @ Phi_k.T)
        theta = theta + gain @ (y_k - Phi_k @ theta)
        P = (P - gain @ Phi_k @ P) / 0.99
        rls.update(Phi_k, y_k, noise)
    np.testing.assert_allclose(rls.theta_, theta, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(rls.covariance_, P, rtol=1e-9, atol=1e-12 * np.abs(P).max())


def test_rls_kernel_leaves_the_state_when_the_innovation_covariance_is_not_positive_definite():
    theta, P = np.ones(3), np.eye(3)
    result = _online_kernel.rls_update(theta, P, np.zeros((2, 3)), np.ones(2), np.zeros(2), 1.0)
    assert result is None
    np.testing.assert_array_equal(theta, np.ones(3))
    np.testing.assert_array_equal(P, np.eye(3))
    with pytest.raises(ValueError, match="phi must be a C-contiguous 2-dimensional float64 array"):
        _online_kernel.rls_update(theta, P, np.zeros(3), np.ones(1), None, 1.0)
    with pytest.raises(ValueError, match="forgetting must be in"):
        _online_kernel.rls_update(theta, P, np.zeros((1, 3)), np.ones(1), None, 1.5)


def test_centre_derivative_is_the_savitzky_golay_sum_on_uniform_stamps_and_the_local_fit_otherwise():
    rng = np.random.default_rng(2)
    time = 0.3 + 0.002 * np.arange(11)
    q = rng.normal(size=(11, 4))
    weights = signal.savgol_coeffs(11, 3, deriv=2, delta=1.0, use="dot")
    np.testing.assert_allclose(centre_derivative(q, time), weights @ q / 0.002 ** 2, rtol=1e-12)
    out = np.empty(4)
    assert centre_derivative(q, time, out=out) is out
    jittered = time + rng.normal(scale=2e-5, size=11)
    polynomial = np.polynomial.polynomial.polyfit(jittered - jittered[5], q, 3)
    np.testing.assert_allclose(centre_derivative(q, jittered), 2.0 * polynomial[2], rtol=1e-8)


def test_online_estimator_step_equals_the_checked_calls_bit_for_bit():
    """Window, derivative, regressor, base columns, update: OnlineEstimator (trusted calls on views of its
    ring) against the checked calls on copies cut from the sample arrays."""
    description = robot("ur5.yaml")
    regressor = Regressor(description, FrictionModel("coulomb_viscous"))
    base = compute_base_parameters(regressor)
    rng = np.random.default_rng(9)
    n_samples, window, n = 80, 11, description.n_joints
    stamps = 0.001 * np.arange(n_samples)
    stamps[40:] += rng.normal(scale=2e-5, size=n_samples - 40)     # the local fit's path too
    q, qd, tau = (rng.uniform(-1.0, 1.0, (n_samples, n)) for _ in range(3))
    online = OnlineEstimator(regressor, base, RecursiveLeastSquares(base.rank), window, polyorder=3)
    reference = RecursiveLeastSquares(base.rank)
    for k in range(n_samples):
        online.add(np.concatenate([[stamps[k]], q[k], qd[k], tau[k]]))
        if k + 1 < window:
            continue
        rows = slice(k + 1 - window, k + 1)
        centre = k + 1 - window + window // 2
        qdd = centre_derivative(q[rows].copy(), stamps[rows].copy(), 3)
        reference.update(base.select(regressor.compute_one(q[centre], qd[centre], qdd)), tau[centre])
        np.testing.assert_array_equal(online.rls.theta_, reference.theta_)
        np.testing.assert_array_equal(online.rls.covariance_, reference.covariance_)
    assert online.rls.n_updates_ == n_samples - window + 1


@pytest.mark.parametrize("friction", [FrictionModel("coulomb_viscous", dead_band=0.3),
                                      FrictionModel("coulomb_viscous_lead")], ids=lambda f: f.name)
def test_compute_one_reads_arrays_lists_tuples_and_integers_like_the_batch_path(friction):
    """compute_one reads its states in C where the friction allows (joint-side sign friction): every form a
    caller passes gives the batch regressor of the float64 values, bit for bit, in a new array each call."""
    description = robot("ur5_on_linear_track.yaml")
    regressor = Regressor(description, friction, armature=True, offset=True)
    rng = np.random.default_rng(11)
    q, qd, qdd = states(description, rng)
    qd[1] = 0.1                                   # inside the dead band
    qdd[:3] = [2, -1, 0]                          # integral values, given as ints below
    expected = regressor.compute(q[None], qd[None], qdd[None])[0]
    wide = np.zeros((3, 2 * description.n_joints))
    wide[:, ::2] = q, qd, qdd
    forms = {"arrays": (q, qd, qdd), "lists": (list(q), list(qd), [int(v) if v.is_integer() else v for v in qdd]),
             "tuples": (tuple(q), tuple(qd), tuple(qdd)), "float32": (q.astype(np.float32), qd, qdd),
             "strided": (wide[0, ::2], wide[1, ::2], wide[2, ::2])}
    results = []
    for name, (a, b, c) in forms.items():
        results.append(regressor.compute_one(a, b, c))
        reference = (regressor.compute(np.float64(np.float32(q))[None], qd[None], qdd[None])[0] if name == "float32"
                     else expected)
        np.testing.assert_array_equal(results[-1], reference, err_msg=name)
    assert len({id(result) for result in results}) == len(results)


@pytest.mark.parametrize("states_of, message", [
    (lambda q: (q[:-1], q, q), r"^q must have shape \(7 joints,\), got \(6,\)$"),
    (lambda q: (q, np.where(np.arange(7) == 2, np.nan, q), q),
     r"^qd must be finite \[rad/s or m/s\], got nan at joint shoulder_lift_joint$"),
    (lambda q: (q, q, [*q[:-1], float("inf")]),
     r"^qdd must be finite \[rad/s\^2 or m/s\^2\], got inf at joint wrist_3_joint$"),
    (lambda q: (q, q, ["a"] * 7),
     r"^qdd must be an array of numbers \[rad/s\^2 or m/s\^2\], got \['a', 'a', 'a', 'a', 'a', 'a', 'a'\]$"),
])
def test_compute_one_refuses_bad_states_naming_them(states_of, message):
    regressor = Regressor(robot("ur5_on_linear_track.yaml"), FrictionModel("coulomb_viscous"))
    with pytest.raises(DataError, match=message):
        regressor.compute_one(*states_of(np.linspace(-0.5, 0.5, 7)))


def test_compute_one_from_several_threads_gives_each_its_own_samples_regressor():
    """One compiled object serves every thread (it keeps the GIL from reading the states to the result)."""
    import threading
    description = robot("ur5.yaml")
    regressor = Regressor(description, FrictionModel("coulomb_viscous"))
    rng = np.random.default_rng(13)
    samples = [states(description, rng) for _ in range(64)]
    expected = [regressor.compute(q[None], qd[None], qdd[None])[0] for q, qd, qdd in samples]
    wrong = []

    def work(offset):
        for repeat in range(200):
            k = (offset + repeat) % len(samples)
            if not np.array_equal(regressor.compute_one(*samples[k]), expected[k]):
                wrong.append(k)

    threads = [threading.Thread(target=work, args=(offset,)) for offset in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []
