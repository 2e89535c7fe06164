"""Conditioning of recordings: noise estimates against known noise, the derivative window chosen by rate and
noise against the bound it promises, velocity 0 at rest with hysteresis, the record a model keeps."""
import math

import numpy as np
import pytest

from robot_dynid.errors import DataError
from robot_dynid.recordings.conditioning import (ACCELERATION_NOISE_FRACTION, Conditioning,
                                                 conditioning_from_provenance, derivative_plan, noise_std, rest_mask)
from robot_dynid.recordings.pipeline import condition
from robot_dynid.recordings.recording import Recording

JOINTS = ("a", "b")


def smooth_motion(t):
    """Two joints of a few harmonics below 1 Hz: q [rad], qd [rad/s], qdd [rad/s^2]."""
    w = np.array([[1.3, 2.9], [0.7, 4.1]])           # rad/s, per joint and harmonic
    amplitude = np.array([[0.8, 0.1], [0.5, 0.05]])  # rad
    q = np.stack([np.sum(amplitude[j] * np.sin(np.outer(t, w[j])), axis=1) for j in range(2)], axis=1)
    qd = np.stack([np.sum(amplitude[j] * w[j] * np.cos(np.outer(t, w[j])), axis=1) for j in range(2)], axis=1)
    qdd = np.stack([np.sum(-amplitude[j] * w[j]**2 * np.sin(np.outer(t, w[j])), axis=1) for j in range(2)], axis=1)
    return q, qd, qdd


def test_noise_estimates_find_white_noise_and_quantisation_on_a_moving_signal():
    t = np.arange(20000) / 1000.0
    q, _, _ = smooth_motion(t)
    rng = np.random.default_rng(1)
    noisy = q + rng.normal(0.0, [1e-4, 3e-4], q.shape)
    np.testing.assert_allclose(noise_std(noisy), [1e-4, 3e-4], rtol=0.05)
    step = 1e-6                                             # encoder resolution [rad]
    quantised = np.round(q / step) * step
    np.testing.assert_allclose(noise_std(quantised), step / math.sqrt(12.0), rtol=0.25)


def test_the_chosen_window_keeps_the_acceleration_noise_below_its_bound_at_100_hz():
    """Velocities recorded at 100 Hz with noise 0.01 rad/s: the accelerations derived with the default window
    differ from the true ones by at most the promised fraction of their RMS (plus the fit's small bias)."""
    t = np.arange(3000) / 100.0
    q, qd, qdd = smooth_motion(t)
    noisy = qd + np.random.default_rng(2).normal(0.0, 0.01, qd.shape)
    recording = condition(Recording.from_arrays(JOINTS, t, q, noisy), Conditioning(zero_velocity_at_rest=False))
    plan = recording.conditioning["derivatives"]
    assert plan["qdd"] == "velocities" and plan["chosen"]
    inside = slice(plan["window_samples"], -plan["window_samples"])
    error = np.sqrt(np.mean((recording.qdd[inside] - qdd[inside]) ** 2, axis=0))
    signal = np.sqrt(np.mean(qdd**2, axis=0))
    assert np.all(error <= 1.2 * ACCELERATION_NOISE_FRACTION * signal), error / signal
    # the shortest window does not keep it: the choice did something
    short = condition(Recording.from_arrays(JOINTS, t, q, noisy),
                      Conditioning(derivative_window=0.07, zero_velocity_at_rest=False))
    short_error = np.sqrt(np.mean((short.qdd[inside] - qdd[inside]) ** 2, axis=0))
    assert np.any(short_error > 2 * ACCELERATION_NOISE_FRACTION * signal), short_error / signal


def test_accelerations_come_from_recorded_velocities_unless_asked():
    t = np.arange(1000) / 200.0
    q, qd, _ = smooth_motion(t)
    plan = derivative_plan(t, q, qd)
    assert (plan.qd_source, plan.qdd_source) == ("recorded", "velocities")
    recording = condition(Recording.from_arrays(JOINTS, t, q, qd),
                          Conditioning(accelerations_from_positions=True, zero_velocity_at_rest=False))
    assert recording.conditioning["derivatives"]["qdd"] == "positions"
    np.testing.assert_array_equal(recording.qd, qd)          # the recorded velocities stay


def test_rest_is_below_four_noise_sigmas_and_noise_up_to_eight_inside_it_does_not_end_it():
    """Noise sigma 0.25 rad/s: rest below 1, kept through 1.5 between rest samples; the run of 1.5, 1.8 rising
    into a motion and 1.2 after it are not rest (no sample below 1 on that side)."""
    qd = np.array([[0.0], [0.5], [1.5], [0.7], [1.5], [1.8], [3.0], [1.2], [0.5], [0.4], [2.5]])
    expected = [True, True, True, True, False, False, False, False, True, True, False]
    assert rest_mask(qd, [0.25]).ravel().tolist() == expected


def test_quantised_positions_at_rest_give_no_velocity_and_moving_ones_keep_theirs():
    """A joint held still for 2 s between motions, its encoder (1 urad) dithering by a count with 2 urad of
    vibration, no velocities recorded: the derived velocity at rest is noise that flips sign; conditioned, it
    is 0 there and untouched in motion."""
    t = np.arange(6000) / 1000.0
    q, qd, _ = smooth_motion(t)
    still = (t > 2.0) & (t < 4.0)
    q[still], qd[still] = q[np.argmax(still) - 1], 0.0
    q = np.round((q + np.random.default_rng(3).normal(0.0, 2e-6, q.shape)) / 1e-6) * 1e-6
    raw = condition(Recording.from_arrays(JOINTS, t, q), Conditioning(zero_velocity_at_rest=False))
    inside = still & (t > 2.2) & (t < 3.8)
    assert np.mean(raw.qd[inside, 0] > 0.0) > 0.05 and np.mean(raw.qd[inside, 0] < 0.0) > 0.05   # flips
    conditioned = condition(Recording.from_arrays(JOINTS, t, q), Conditioning())
    assert np.all(conditioned.qd[inside] == 0.0)
    moving = np.abs(qd) > 0.05
    np.testing.assert_array_equal(conditioned.qd[moving], raw.qd[moving])
    assert conditioned.conditioning["at_rest"]["a"] > 0.25


def test_a_models_record_of_its_conditioning_is_checked():
    settings = Conditioning(resample=200.0, derivative_window=0.05, lowpass=20.0)
    assert conditioning_from_provenance({"conditioning": {"settings": settings.to_dict()}}) == settings
    assert conditioning_from_provenance({}) is None
    with pytest.raises(DataError, match=r"provenance\.conditioning\.settings: lowpass must be finite and in "
                                        r"\(0, inf\) \[Hz\], got -1"):
        conditioning_from_provenance({"conditioning": {"settings": {**settings.to_dict(), "lowpass_hz": -1}}})
    with pytest.raises(DataError, match=r"unknown key 'window'"):
        conditioning_from_provenance({"conditioning": {"settings": {**settings.to_dict(), "window": 1}}})
