"""Conditioning of recordings: noise estimates against known noise, the derivative window chosen by rate and
noise against the bound it promises, rest as standing still (never a reversal or a creep), the record a model
keeps."""
import math

import numpy as np
import pytest
from scipy import optimize, special

from robot_dynid.errors import DataError
from robot_dynid.recordings import conditioning
from robot_dynid.recordings.conditioning import (ACCELERATION_NOISE_FRACTION, Conditioning,
                                                 conditioning_from_provenance, derivative_plan, noise_std,
                                                 stationary_mask)
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


def test_an_hours_noise_and_acceleration_rms_come_from_blocks_spread_over_it():
    """An hour at 1 kHz (3.6 million samples) whose noise doubles halfway through: the noise estimate from the
    evenly spread blocks is the hour's (1.4826 times the median absolute value of an equal mixture of N(0, s) and
    N(0, 2 s): the root of 0.5 erf(m / (s sqrt 2)) + 0.5 erf(m / (2 s sqrt 2)) = 0.5), and the plan's acceleration
    RMS is the motion's own (closed form) within 2 % (the 0.2 s cubic fit itself smooths the 4.1 rad/s harmonic;
    moving joints are told at 5 % of the largest RMS)."""
    t = np.arange(3_600_000) / 1000.0
    q, _, qdd = smooth_motion(t)
    sigma = np.array([1e-5, 3e-5])
    scale = np.where(t < 1800.0, 1.0, 2.0)[:, None]
    noisy = q + np.random.default_rng(2).normal(0.0, 1.0, q.shape) * sigma * scale
    half_mass = optimize.brentq(lambda m: 0.5 * special.erf(m / math.sqrt(2.0))
                                + 0.5 * special.erf(m / (2.0 * math.sqrt(2.0))) - 0.5, 0.1, 10.0)
    np.testing.assert_allclose(noise_std(noisy), 1.4826 * half_mass * sigma, rtol=0.01)
    plan = derivative_plan(t, noisy)
    np.testing.assert_allclose(plan.acceleration_rms, np.sqrt(np.mean(qdd**2, axis=0)), rtol=0.02)


def test_the_chosen_window_keeps_the_acceleration_noise_below_its_bound_at_100_hz():
    """Velocities recorded at 100 Hz with noise 0.01 rad/s: the accelerations derived with the default window
    differ from the true ones by at most the promised fraction of their RMS (plus the fit's small bias)."""
    t = np.arange(3000) / 100.0
    q, qd, qdd = smooth_motion(t)
    noisy = qd + np.random.default_rng(2).normal(0.0, 0.01, qd.shape)
    recording = condition(Recording.from_arrays(JOINTS, t, q, noisy), Conditioning(velocity_at_rest="measured"))
    plan = recording.conditioning["derivatives"]
    assert plan["qdd"] == "velocities" and plan["chosen"]
    inside = slice(plan["window_samples"], -plan["window_samples"])
    error = np.sqrt(np.mean((recording.qdd[inside] - qdd[inside]) ** 2, axis=0))
    signal = np.sqrt(np.mean(qdd**2, axis=0))
    assert np.all(error <= 1.2 * ACCELERATION_NOISE_FRACTION * signal), error / signal
    # the shortest window does not keep it: the choice did something
    short = condition(Recording.from_arrays(JOINTS, t, q, noisy),
                      Conditioning(derivative_window=0.07, velocity_at_rest="measured"))
    short_error = np.sqrt(np.mean((short.qdd[inside] - qdd[inside]) ** 2, axis=0))
    assert np.any(short_error > 2 * ACCELERATION_NOISE_FRACTION * signal), short_error / signal


def test_accelerations_come_from_recorded_velocities_unless_asked():
    t = np.arange(1000) / 200.0
    q, qd, _ = smooth_motion(t)
    plan = derivative_plan(t, q, qd)
    assert (plan.qd_source, plan.qdd_source) == ("recorded", "velocities")
    recording = condition(Recording.from_arrays(JOINTS, t, q, qd),
                          Conditioning(accelerations_from_positions=True, velocity_at_rest="measured"))
    assert recording.conditioning["derivatives"]["qdd"] == "positions"
    np.testing.assert_array_equal(recording.qd, qd)          # the recorded velocities stay


def test_rest_is_standing_still_for_the_dwell_never_a_reversal_or_a_creep():
    """Positions with 5 urad noise at 100 Hz: a 0.5 s hold is at rest (all of it); a 0.1 s hold is not (shorter than
    the 0.2 s dwell); a reversal (a sine through zero velocity, 0.5 rad at 1 rad/s) and a creep at 2 mrad/s
    (0.4 mrad over the dwell, 80 noise std) never are."""
    t = np.arange(0.0, 6.0, 0.01)
    hold = np.where(t < 1.0, 0.3, np.where(t < 1.5, 0.3, 0.3 + 0.5 * (t - 1.5)))      # still until 1.5 s
    short = np.where((t >= 2.0) & (t < 2.1), 0.0, 0.2 * np.sin(3.0 * t))             # 0.1 s pause only
    reversal = 0.5 * np.sin(2.0 * t)
    creep = 0.002 * t
    q = np.stack([hold, short, reversal, creep], axis=1) + np.random.default_rng(1).normal(0.0, 5e-6, (t.size, 4))
    still = stationary_mask(t, q)
    assert np.all(still[t < 1.49, 0]) and not np.any(still[t > 1.55, 0])
    assert not np.any(still[:, 1:])


def test_rest_judged_piece_by_piece_is_the_mask_of_one_piece(monkeypatch):
    """The rest mask of a long recording is judged REST_PIECE rows at a time with the stretches that reach into
    them: the same mask to the bit, for holds across a piece's border, one shorter than the dwell, a gap in the
    stamps inside a hold (a stretch over it does not count) and quantised positions (the band's encoder count
    from every piece's steps)."""
    rng = np.random.default_rng(4)
    t = np.arange(3000) / 1000.0
    t[1800:] += 0.3                                            # 0.3 s of lost messages in the third hold
    q = np.column_stack([np.sin(2.0 * t), 0.5 * np.cos(3.0 * t), 0.1 * t])
    for start, stop in [(250, 700), (980, 1100), (1650, 1950), (2600, 3000)]:
        q[start:stop] = q[start - 1]
    q = np.round((q + rng.normal(0.0, 2e-6, q.shape)) / 1e-6) * 1e-6
    monkeypatch.setattr(conditioning, "REST_PIECE", 10**9)
    whole = stationary_mask(t, q)
    assert whole[300:600].all() and not whole[990:1090].any()          # 0.45 s held: rest; 0.12 s: not
    for piece in (97, 500, 2999):
        monkeypatch.setattr(conditioning, "REST_PIECE", piece)
        np.testing.assert_array_equal(stationary_mask(t, q), whole, err_msg=f"pieces of {piece} rows")


def test_quantised_positions_at_rest_give_no_velocity_and_moving_ones_keep_theirs():
    """A joint held still for 2 s between motions, its encoder (1 urad) dithering by a count with 2 urad of
    vibration, no velocities recorded: the derived velocity at rest is noise that flips sign; conditioned, it
    is 0 there and untouched in motion."""
    t = np.arange(6000) / 1000.0
    q, qd, _ = smooth_motion(t)
    still = (t > 2.0) & (t < 4.0)
    q[still], qd[still] = q[np.argmax(still) - 1], 0.0
    q = np.round((q + np.random.default_rng(3).normal(0.0, 2e-6, q.shape)) / 1e-6) * 1e-6
    raw = condition(Recording.from_arrays(JOINTS, t, q), Conditioning(velocity_at_rest="measured"))
    inside = still & (t > 2.2) & (t < 3.8)
    assert np.mean(raw.qd[inside, 0] > 0.0) > 0.05 and np.mean(raw.qd[inside, 0] < 0.0) > 0.05   # flips
    conditioned = condition(Recording.from_arrays(JOINTS, t, q), Conditioning())
    assert np.all(conditioned.qd[inside] == 0.0)
    moving = np.abs(qd) > 0.05
    moving[np.argmax(still) - 1] = False           # the hold starts at this sample's position
    np.testing.assert_array_equal(conditioned.qd[moving], raw.qd[moving])
    assert conditioned.conditioning["at_rest"]["a"] > 0.25
    assert "for 0.2 s or more" in conditioned.conditioning["rest_rule"]


def test_recorded_velocities_are_used_as_measured_by_default_and_zeroed_at_rest_only_when_asked():
    """The same hold with velocities recorded (noise 1 mrad/s): auto keeps them, zero sets them to 0 where the joint
    stands still and nowhere else."""
    t = np.arange(6000) / 1000.0
    q, qd, _ = smooth_motion(t)
    still = (t > 2.0) & (t < 4.0)
    q[still], qd[still] = q[np.argmax(still) - 1], 0.0
    recorded = qd + np.random.default_rng(4).normal(0.0, 1e-3, qd.shape)
    auto = condition(Recording.from_arrays(JOINTS, t, q, recorded), Conditioning())
    np.testing.assert_array_equal(auto.qd, recorded)
    zeroed = condition(Recording.from_arrays(JOINTS, t, q, recorded), Conditioning(velocity_at_rest="zero"))
    assert np.all(zeroed.qd[still & (t > 2.01) & (t < 3.99)] == 0.0)
    moving = ~still
    moving[np.argmax(still) - 1] = False           # the hold starts at this sample's position
    np.testing.assert_array_equal(zeroed.qd[moving], recorded[moving])


def test_models_written_before_velocity_at_rest_read_with_its_meaning():
    old = {**Conditioning().to_dict(), "zero_velocity_at_rest": True}
    del old["velocity_at_rest"]
    assert Conditioning.from_dict(old).velocity_at_rest == "zero"
    assert Conditioning.from_dict({**old, "zero_velocity_at_rest": False}).velocity_at_rest == "measured"
    with pytest.raises(DataError, match="velocity_at_rest must be one of"):
        Conditioning(velocity_at_rest="sometimes")


def test_a_models_record_of_its_conditioning_is_checked():
    settings = Conditioning(resample=200.0, derivative_window=0.05, lowpass=20.0)
    assert conditioning_from_provenance({"conditioning": {"settings": settings.to_dict()}}) == settings
    assert conditioning_from_provenance({}) is None
    with pytest.raises(DataError, match=r"provenance\.conditioning\.settings: lowpass must be finite and in "
                                        r"\(0, inf\) \[Hz\], got -1"):
        conditioning_from_provenance({"conditioning": {"settings": {**settings.to_dict(), "lowpass_hz": -1}}})
    with pytest.raises(DataError, match=r"unknown key 'window'"):
        conditioning_from_provenance({"conditioning": {"settings": {**settings.to_dict(), "window": 1}}})
