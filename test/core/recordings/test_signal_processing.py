"""Filtering, differentiation, torque conversion and resampling against closed forms."""
import math
import re
from fractions import Fraction

import numpy as np
import pytest
from scipy import signal

from robot_dynid.errors import DataError
from robot_dynid.model.robot_description import current_to_torque
from robot_dynid.recordings import signal_processing
from robot_dynid.recordings.signal_processing import (centre_derivative, differentiate,
                                                      local_polynomial_fit, lowpass_filter,
                                                      resample_streams, resample_uniform,
                                                      sample_interval, savitzky_golay, savitzky_golay_weights)

RATE = 100.0                       # Hz
TIME = np.arange(0.0, 20.0, 1.0 / RATE)


def sine_fit(x, time, frequency):
    """Amplitude and phase [rad] of the component at ``frequency`` by least squares."""
    w = 2 * math.pi * frequency
    basis = np.column_stack([np.sin(w * time), np.cos(w * time)])
    s, c = np.linalg.lstsq(basis, x, rcond=None)[0]
    return math.hypot(s, c), math.atan2(c, s)


def test_savitzky_golay_derivatives_of_a_sine():
    w = 2 * math.pi * 0.5                       # 0.5 Hz, amplitude 1 rad
    q = np.column_stack([np.sin(w * TIME), 0.5 * np.cos(w * TIME)])
    result = differentiate(q, TIME, window_seconds=0.21, polyorder=4)
    assert result.window == 21
    interior = slice(result.window, -result.window)
    qd_exact = np.column_stack([w * np.cos(w * TIME), -0.5 * w * np.sin(w * TIME)])
    qdd_exact = np.column_stack([-w**2 * np.sin(w * TIME), -0.5 * w**2 * np.cos(w * TIME)])
    # a degree-4 fit over +-0.1 s of a pi rad/s sine: truncation error ~ (w h)^4 / 5!, well
    # below 1e-4 of the derivative amplitude
    assert np.max(np.abs(result.qd - qd_exact)[interior]) < 1e-4 * w
    assert np.max(np.abs(result.qdd - qdd_exact)[interior]) < 1e-3 * w**2
    assert np.max(np.abs(result.q - q)[interior]) < 1e-6
    # the end windows fit one polynomial to the first / last 21 samples: less accurate
    assert np.max(np.abs(result.qd - qd_exact)) < 1e-3 * w
    assert np.max(np.abs(result.qdd - qdd_exact)) < 1e-2 * w**2


def test_savitzky_golay_has_no_lag_on_noisy_data():
    rng = np.random.default_rng(0)
    w = 2 * math.pi * 0.3
    q = np.sin(w * TIME) + 1e-4 * rng.normal(size=TIME.size)
    qd = differentiate(q, TIME, window_samples=41, polyorder=3).qd
    amplitude, phase = sine_fit(qd, TIME, 0.3)
    assert amplitude == pytest.approx(w, rel=2e-3)
    assert phase == pytest.approx(math.pi / 2, abs=2e-3)     # cos = sin shifted by pi/2, no lag


def test_local_fit_on_a_uniform_grid_is_savitzky_golay():
    """scipy's Savitzky-Golay filter (mode interp: the end windows are fitted too) is the reference."""
    q = np.column_stack([np.sin(3.0 * TIME), TIME**2])
    fitted = local_polynomial_fit(q, TIME, 21, 3)
    for order in range(3):
        expected = signal.savgol_filter(q, 21, 3, deriv=order, delta=1.0 / RATE, axis=0)
        np.testing.assert_allclose(fitted[order], expected, rtol=1e-9, atol=1e-9 * np.max(np.abs(expected)))


def exact_weights(window, polyorder, order):
    """Savitzky-Golay weights in rational arithmetic: row ``order`` of (V^T V)^-1 V^T times order!, V the
    Vandermonde matrix of the integer offsets -w//2 .. w//2 (the normal equations solved exactly)."""
    offsets = range(-(window // 2), window // 2 + 1)
    n = polyorder + 1
    rows = [[sum(Fraction(t) ** (i + j) for t in offsets) for j in range(n)] + [Fraction(int(i == order))]
            for i in range(n)]
    for column in range(n):         # Gauss-Jordan on the symmetric positive definite moment matrix
        rows[column] = [value / rows[column][column] for value in rows[column]]
        for r in range(n):
            if r != column:
                rows[r] = [a - rows[r][column] * b for a, b in zip(rows[r], rows[column])]
    solution = [row[n] for row in rows]     # (V^T V)^-1 e_order
    return np.array([float(math.factorial(order) * sum(solution[j] * Fraction(t) ** j for j in range(n)))
                     for t in offsets])


@pytest.mark.parametrize("window, polyorder, order", [(5, 2, 2), (21, 3, 1), (201, 4, 0), (401, 3, 2)])
def test_savitzky_golay_weights_are_the_exact_least_squares_ones(window, polyorder, order):
    """To 1e-13 of the exact rational weights, where scipy's savgol_coeffs (unscaled offsets) is off by 7e-9 for
    degree 4 over 201 samples."""
    exact = exact_weights(window, polyorder, order)
    np.testing.assert_allclose(savitzky_golay_weights(window, polyorder, order), exact, rtol=0,
                               atol=1e-13 * np.abs(exact).max())
    np.testing.assert_allclose(savitzky_golay_weights(window, polyorder, order, delta=0.004), exact / 0.004**order,
                               rtol=0, atol=1e-13 * np.abs(exact).max() / 0.004**order)


@pytest.mark.parametrize("window", [5, 21, 201])
def test_savitzky_golay_filter_is_scipys_with_the_end_windows_fitted(window):
    """scipy.signal.savgol_filter (mode interp) on a random walk of 6 joints, every derivative the identification
    uses: the same to 1e-11 of the signal, the first and last window // 2 samples included."""
    x = np.cumsum(np.random.default_rng(1).normal(size=(3000, 6)), axis=0)
    for order in range(3):
        expected = signal.savgol_filter(x, window, 3, deriv=order, delta=0.001, axis=0)
        np.testing.assert_allclose(savitzky_golay(x, window, 3, order, 0.001), expected, rtol=0,
                                   atol=1e-11 * np.abs(expected).max())
    np.testing.assert_allclose(savitzky_golay(x[:, 0], window, 3, 1, 0.001),
                               signal.savgol_filter(x[:, 0], window, 3, deriv=1, delta=0.001), rtol=0,
                               atol=1e-11 * np.abs(expected).max())


def test_non_uniform_stamps_are_fitted_in_their_own_time():
    """Against numpy's polyfit of each window (a second method), with stamps jittered by +-30 % and
    samples missing; the uniform fast path is not taken."""
    rng = np.random.default_rng(1)
    t = np.cumsum(rng.uniform(0.7, 1.3, 400)) / RATE
    t = np.delete(t, [50, 51, 52, 200])
    q = np.column_stack([np.sin(2.0 * t), np.exp(0.3 * t)])
    result = differentiate(q, t, window_samples=15, polyorder=3)
    assert not result.uniform and result.window == 15
    for i in (0, 3, 7, 49, 50, 150, t.size - 8, t.size - 1):
        start = min(max(i - 7, 0), t.size - 15)
        window = slice(start, start + 15)
        for j in range(2):
            polynomial = np.polynomial.Polynomial.fit(t[window] - t[i], q[window, j], 3)
            assert result.q[i, j] == pytest.approx(polynomial(0.0), abs=1e-9)
            assert result.qd[i, j] == pytest.approx(polynomial.deriv(1)(0.0), rel=1e-7, abs=1e-9)
            assert result.qdd[i, j] == pytest.approx(polynomial.deriv(2)(0.0), rel=1e-6, abs=1e-7)


def test_resample_uniform_interpolates_positions_by_spline_and_the_rest_linearly_within_runs():
    t = np.array([0.0, 0.11, 0.19, 0.32, 0.4, 0.5, 2.0, 2.1, 2.2, 2.3])   # a gap after 0.5 s
    q = t**3                                   # a cubic: the not-a-knot spline reproduces it exactly
    tau = 2.0 * t + 1.0
    result = resample_uniform(t, 10.0, cubic={"q": q}, linear={"tau": tau[:, None]}, breaks=[6])
    expected_time = np.concatenate([np.arange(6) / 10.0, 2.0 + np.arange(4) / 10.0])
    np.testing.assert_allclose(result.time, expected_time, atol=1e-12)
    np.testing.assert_allclose(result.values["q"], expected_time**3, atol=1e-12)
    np.testing.assert_allclose(result.values["tau"][:, 0], 2.0 * expected_time + 1.0, atol=1e-12)
    assert result.source.tolist() == [0, 0, 2, 2, 4, 5, 6, 7, 8, 9]     # last stamp at or before
    assert result.n_lost == 0


def test_lowpass_keeps_a_slow_sine_and_halves_the_cutoff_component():
    slow = np.sin(2 * math.pi * 1.0 * TIME + 0.3)
    fast = np.sin(2 * math.pi * 30.0 * TIME)
    filtered = lowpass_filter(np.column_stack([slow + fast, slow]), cutoff=5.0,
                              sample_rate=RATE, order=4)
    interior = slice(200, -200)
    # |H(1 Hz)|^2 = 1 / (1 + (1/5)^8) and |H(30 Hz)|^2 = 1 / (1 + 6^8): slow kept, fast gone
    assert np.max(np.abs(filtered[interior, 0] - slow[interior])) < 1e-3
    amplitude, phase = sine_fit(filtered[:, 1], TIME, 1.0)
    assert amplitude == pytest.approx(1.0 / (1.0 + 0.2**8), rel=1e-4)
    assert phase == pytest.approx(0.3, abs=1e-4)
    at_cutoff = lowpass_filter(np.sin(2 * math.pi * 5.0 * TIME), 5.0, RATE)
    amplitude, phase = sine_fit(at_cutoff[interior], TIME[interior], 5.0)
    assert amplitude == pytest.approx(0.5, rel=1e-3)       # forward-backward: |H(fc)|^2 = 1/2
    assert phase == pytest.approx(0.0, abs=1e-3)


def test_current_to_torque_hand_values():
    current = np.array([[1.0, 2.0], [-0.5, 0.0]])
    torque = current_to_torque(current, [0.5, 0.2], [100.0, 50.0], efficiency=[0.9, 1.0])
    np.testing.assert_allclose(torque, [[45.0, 20.0], [-22.5, 0.0]])
    np.testing.assert_allclose(current_to_torque(current, 0.1, 10.0), current)


def test_resample_streams_interpolates_inside_overlap_only():
    streams = {
        "q": (np.array([0.0, 1.0, 2.0, 3.0]), np.array([0.0, 10.0, 20.0, 30.0])),
        "tau": (np.array([0.5, 1.5, 2.5, 3.5]), np.array([[1.0, -1.0], [3.0, -3.0], [5.0, -5.0], [7.0, -7.0]])),
    }
    result = resample_streams(streams, [0.0, 0.5, 1.0, 2.25, 3.0, 3.2])
    np.testing.assert_array_equal(result.time, [0.5, 1.0, 2.25, 3.0])
    assert result.overlap == (0.5, 3.0) and result.n_outside == 2
    np.testing.assert_allclose(result.values["q"], [5.0, 10.0, 22.5, 30.0])
    np.testing.assert_allclose(result.values["tau"], [[1.0, -1.0], [2.0, -2.0], [4.5, -4.5],
                                                      [6.0, -6.0]])


def test_signal_processing_validation_messages():
    x = np.sin(TIME)
    with pytest.raises(DataError, match="cutoff must be below the Nyquist frequency 50 Hz"):
        lowpass_filter(x, 50.0, RATE)
    with pytest.raises(DataError, match=r"cutoff must be finite and > 0 \[Hz\], got -1.0"):
        lowpass_filter(x, -1.0, RATE)
    with pytest.raises(DataError, match="x has 15 samples along axis 0; an order-4 zero-phase "
                                        "filter needs more than 15"):
        lowpass_filter(x[:15], 5.0, RATE)
    with pytest.raises(DataError, match="order must be an integer >= 1"):
        lowpass_filter(x, 5.0, RATE, order=0)
    jittered = TIME.copy()
    jittered[10] += 0.002
    with pytest.raises(DataError, match="time is not uniformly sampled"):
        sample_interval(jittered)
    repeated = re.escape(f"{float(TIME[11])!r} s")
    with pytest.raises(DataError, match=rf"^time must be strictly increasing: time\[11\] = {repeated} <= time\[10\] = "
                                        rf"{repeated}$"):
        differentiate(x, np.where(np.arange(TIME.size) == 10, TIME[11], TIME), window_samples=11)
    with pytest.raises(DataError, match=r"^time must be strictly increasing: time\[2\] = 1.0 s <= time\[1\] = 1.0 s$"):
        sample_interval([0.0, 1.0, 1.0])
    with pytest.raises(DataError, match="give exactly one of window_samples and window_seconds"):
        differentiate(x, TIME)
    with pytest.raises(DataError, match="window_samples must be odd, got 10"):
        differentiate(x, TIME, window_samples=10)
    with pytest.raises(DataError, match=r"window_seconds = 0.03 s \(3 samples .*\) must exceed "
                                        "polyorder = 3"):
        differentiate(x, TIME, window_seconds=0.03)
    with pytest.raises(DataError, match="exceeds the 5 samples of q"):
        differentiate(x[:5], TIME[:5], window_samples=7)
    with pytest.raises(DataError, match="polyorder must be an integer >= 2, got 1"):
        differentiate(x, TIME, window_samples=11, polyorder=1)
    with pytest.raises(DataError, match=r"^gear_ratio must be a scalar or have shape \(2 joints,\), got \(3,\)$"):
        current_to_torque(np.ones((3, 2)), 0.1, [1.0, 2.0, 3.0])
    with pytest.raises(DataError, match=r"^efficiency must be <= 1, got 1.2 at joint 1$"):
        current_to_torque(np.ones((3, 2)), 0.1, 10.0, efficiency=[0.9, 1.2])
    with pytest.raises(DataError, match=r"^torque_constant must be non-zero \[N m/A\], got 0.0 at joint 1$"):
        current_to_torque(np.ones((3, 2)), [0.1, 0.0], 10.0)
    with pytest.raises(DataError, match=r"^current must be finite \[A\], got inf at sample 2, joint 0$"):
        current_to_torque([[1.0, 1.0], [1.0, 1.0], [np.inf, 1.0]], 0.1, 10.0)
    with pytest.raises(DataError, match=r"streams \['a', 'b'\] do not overlap"):
        resample_streams({"a": ([0.0, 1.0], [0.0, 1.0]), "b": ([2.0, 3.0], [0.0, 1.0])}, [0.5])
    with pytest.raises(DataError, match="stream 'a' time must be strictly increasing"):
        resample_streams({"a": ([1.0, 0.0], [0.0, 1.0])}, [0.5])
    with pytest.raises(DataError, match="stream 'a' values must have 2 samples"):
        resample_streams({"a": ([0.0, 1.0], [0.0, 1.0, 2.0])}, [0.5])


def test_centre_derivative_of_one_window_uniform_and_not():
    """Online use: the acceleration at a window's centre, against numpy's polyfit of the window."""
    rng = np.random.default_rng(2)
    for t in (np.arange(11) / RATE, np.cumsum(rng.uniform(0.7, 1.3, 11)) / RATE):
        q = np.column_stack([np.sin(3.0 * t), np.cos(2.0 * t)])
        expected = [np.polynomial.Polynomial.fit(t - t[5], q[:, j], 3).deriv(2)(0.0) for j in range(2)]
        np.testing.assert_allclose(centre_derivative(q, t), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("jitter", [0.0, 0.2])
def test_an_encoder_at_rest_has_derivatives_of_exactly_zero(jitter):
    """Positions that repeat exactly (an encoder holding its count) over a fit's whole window: the fitted
    polynomial is the constant, so velocity and acceleration are 0 exactly, not round-off of either sign (which a
    friction model's sign(qd) took for motion: a positions-only model's error was 6 times larger); the moving
    part keeps the polynomial fit's derivatives."""
    rng = np.random.default_rng(3)
    step = 0.002
    time = np.cumsum(step * (1.0 + jitter * rng.uniform(-1.0, 1.0, 3000)))
    q = np.where(time < 2.0, 0.3 * np.sin(2.0 * time), 0.3 * np.sin(4.0)).reshape(-1, 1) + 0.123456789
    result = differentiate(q, time, window_samples=21)
    rest = time > 2.0 + 21 * 1.3 * step
    assert np.all(result.qd[rest] == 0.0) and np.all(result.qdd[rest] == 0.0)
    moving = time < 2.0 - 21 * 1.3 * step
    np.testing.assert_allclose(result.qd[moving, 0], 0.6 * np.cos(2.0 * time[moving]), atol=1e-5)


@pytest.mark.parametrize("jitter", [0.0, 0.2], ids=["uniform", "jittered"])
def test_only_the_derivatives_asked_for_are_computed_and_equal_the_full_set(jitter):
    """``orders`` leaves the others None (an hour at 1 kHz: 173 MB each); what is computed is what the full
    computation gives, the rest-to-zero rule included (an encoder holding its count on the last 30 samples)."""
    rng = np.random.default_rng(5)
    time = 0.002 * (np.arange(400) + jitter * rng.uniform(-0.5, 0.5, 400))
    q = np.column_stack([np.sin(3.0 * time), np.cos(2.0 * time)])
    q[-30:] = q[-31]
    full = differentiate(q, time, window_samples=11)
    for orders in [(1,), (2,), (1, 2), (0,)]:
        part = differentiate(q, time, window_samples=11, orders=orders)
        for order, name in enumerate(("q", "qd", "qdd")):
            if order in orders:
                np.testing.assert_array_equal(getattr(part, name), getattr(full, name))
            else:
                assert getattr(part, name) is None
    assert np.all(full.qd[-20:] == 0.0) and np.all(full.qdd[-20:] == 0.0)
    with pytest.raises(DataError, match="orders must be some of 0, 1, 2"):
        differentiate(q, time, window_samples=11, orders=(3,))


@pytest.mark.parametrize("jitter", [0.0, 0.2], ids=["uniform", "jittered"])
@pytest.mark.parametrize("window", [5, 21, 101])
def test_a_long_run_differentiated_in_pieces_gives_the_numbers_of_one_piece(monkeypatch, jitter, window):
    """A run longer than DERIVATIVE_PIECE is fitted piece by piece with half a window on either side: each row's
    fit uses the same samples, step and stamp rule as in one piece, so the numbers are the same to the bit, at the
    run's edges (their end fits), at the pieces' borders (the last piece a few rows long) and where an encoder
    holds its count (the rest-to-zero rule) across a border."""
    rng = np.random.default_rng(7)
    n = 1003
    time = 0.001 * (np.arange(n) + jitter * rng.uniform(-0.5, 0.5, n))
    q = np.column_stack([np.sin(3.0 * time), np.cos(2.0 * time) + 1e-4 * rng.standard_normal(n)])
    q[450:600, 0] = q[449, 0]
    q = np.round(q / 1e-6) * 1e-6       # an encoder's counts: equal neighbours where it is slow
    monkeypatch.setattr(signal_processing, "DERIVATIVE_PIECE", 10**9)
    whole = differentiate(q, time, window_samples=window)
    for piece in (100, 500, 999):       # 999: the last piece 4 rows, shorter than every window but the first
        monkeypatch.setattr(signal_processing, "DERIVATIVE_PIECE", piece)
        pieces = differentiate(q, time, window_samples=window)
        for name in ("q", "qd", "qdd"):
            np.testing.assert_array_equal(getattr(pieces, name), getattr(whole, name), err_msg=f"{name}, {piece}")
        assert pieces.uniform == whole.uniform == (jitter == 0.0)
    assert np.all(whole.qd[500:550, 0] == 0.0)


def test_derivative_pieces_cover_the_run_once_and_hold_every_window():
    """Every row comes out of exactly one piece, and each piece holds the centred window of each of its rows (the
    run's first and last windows where a row is nearer an edge)."""
    for n, window, piece in [(1000, 21, 100), (1003, 101, 999), (50, 49, 10), (21, 21, 7)]:
        covered = np.zeros(n, dtype=int)
        for start, stop, first, last in signal_processing.derivative_pieces(n, window, piece):
            covered[start:stop] += 1
            rows = np.arange(start, stop)
            window_first = np.clip(rows - window // 2, 0, n - window)
            assert first <= window_first.min() and window_first.max() + window <= last
            assert (first == 0 or first + window // 2 <= start) and (last == n or stop + window // 2 <= last)
        assert np.all(covered == 1)
