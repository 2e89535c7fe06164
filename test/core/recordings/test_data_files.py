"""Reading a recording whatever its format: derivatives of a bag that lost messages."""
import numpy as np
import pytest

from robot_dynid.errors import DataError
from robot_dynid.recordings.bag_io import BagWriter
from robot_dynid.recordings.pipeline import SHORT_RUN, complete_derivatives, read_recording
from robot_dynid.recordings.recording import Recording

JOINTS = ("j1", "j2")
RATE = 500.0  # Hz
OMEGA = np.array([2.0, 5.0])  # rad/s of q_j = sin(omega_j t)


def motion(t):
    """Positions [rad] and their exact accelerations [rad/s^2] (the independent reference)."""
    phase = np.outer(t, OMEGA)
    return np.sin(phase), OMEGA * np.cos(phase), -OMEGA**2 * np.sin(phase)


def test_lost_messages_are_fitted_through_and_long_gaps_split_the_derivatives(tmp_path):
    k = np.arange(1800)
    # short losses (1, 3 and 10 samples) lie inside the 25-sample window: the fit uses the stamps it has;
    # 100 and 99 lost samples are gaps (more than half a window): sample 1400 is left alone between them
    lost = {400, 1000, 1001, 1002, *range(1200, 1210), *range(1300, 1400), *range(1401, 1500)}
    kept = np.array([i for i in k if i not in lost])
    t = 100.0 + kept / RATE
    q, qd, qdd = motion(t - 100.0)
    with BagWriter(tmp_path / "bag") as bag:
        for row, stamp in enumerate(t):
            bag.write_joint_state(round(stamp * 1e9), JOINTS, q[row], qd[row], np.zeros(2))
    recording = read_recording(tmp_path / "bag", joint_names=JOINTS)
    assert recording.n_samples == kept.size - 1 and 100.0 + 1400 / RATE not in recording.time
    assert list(recording.dropped) == [SHORT_RUN] and recording.dropped[SHORT_RUN].count == 1
    assert recording.dropped[SHORT_RUN].first_time == pytest.approx(100.0 + 1400 / RATE)
    expected = motion(recording.time - 100.0)[2]
    inside = np.ones(recording.n_samples, bool)   # next to a gap or an end the window is one-sided: looser
    for gap_start in np.flatnonzero(np.diff(recording.time) > 50 / RATE):
        inside[max(0, gap_start - 12):gap_start + 14] = False
    inside[:13] = inside[-13:] = False
    # cubic fit over 0.05 s (0.07 s where 10 samples are missing): bias ~ (omega T)^2 / 10 of omega^2,
    # below 0.5 % at omega = 5 rad/s
    assert np.all(np.abs(recording.qdd[inside] - expected[inside]) < 5e-3 * OMEGA**2)
    assert np.all(np.abs(recording.qdd[~inside] - expected[~inside]) < 2e-2 * OMEGA**2)


def test_jittered_stamps_give_the_derivatives_of_the_motion_at_the_stamps(tmp_path):
    """Drivers stamp samples 1.9-2.1 ms apart; the derivatives must follow the actual stamps. A
    uniform Savitzky-Golay fit assuming 2 ms steps is off by about 10 % of the speed here."""
    rng = np.random.default_rng(4)
    t = 50.0 + np.cumsum(rng.uniform(0.8, 1.2, 2000)) / RATE           # +-20 % of the 2 ms step
    q, qd, qdd = motion(t - 50.0)
    recording = complete_derivatives(Recording.from_arrays(JOINTS, t, q, tau=np.zeros_like(q)))
    inside = slice(13, -13)
    assert np.all(np.abs(recording.qd[inside] - qd[inside]) < 1e-4 * OMEGA)
    assert np.all(np.abs(recording.qdd[inside] - qdd[inside]) < 3e-3 * OMEGA**2)


def test_a_recording_with_only_runs_shorter_than_the_window_names_the_window():
    t = np.array([0.0, 0.002, 0.004, 1.0, 1.002])
    recording = Recording.from_arrays(JOINTS, t, np.zeros((5, 2)), tau=np.zeros((5, 2)))
    with pytest.raises(DataError, match="no run of samples between gaps in the stamps holds the 25-sample "
                                        r"derivative window \(0.05 s at 0.002 s per sample; longest run 3"):
        complete_derivatives(recording)


def test_a_50_hz_recording_gets_a_window_of_seven_samples(tmp_path):
    """At 50 Hz (the hydraulic arm's rate) 0.05 s is 3 samples, too few for a cubic fit."""
    t = np.arange(500) / 50.0
    omega = np.array([0.5, 2.0])
    q = np.sin(np.outer(t, omega))
    recording = complete_derivatives(Recording.from_arrays(JOINTS, t, q, tau=np.zeros_like(q)))
    expected = -omega**2 * q
    inside = slice(3, -3)
    # cubic Savitzky-Golay over 7 samples (0.12 s span): bias ~ (omega h)^2 / 10 relative, < 1 %
    assert np.all(np.abs(recording.qdd[inside] - expected[inside]) < 1e-2 * omega**2)
    np.testing.assert_allclose(recording.qd[inside], (omega * np.cos(np.outer(t, omega)))[inside],
                               rtol=0, atol=1e-3)


def test_resampling_has_a_maximum_rate_and_factor():
    """--resample: at most 10 kHz and 10 samples per recorded one, refused before the grid is made."""
    from robot_dynid.recordings.pipeline import resample_recording
    t = np.arange(101) / 100.0                      # 1 s at 100 Hz
    recording = Recording.from_arrays(("a",), t, np.sin(t)[:, None], source="run.csv")
    assert resample_recording(recording, 1000.0).n_samples == 1001          # 10 times: accepted
    with pytest.raises(DataError, match=r"^run.csv: resampling 101 samples at 2000 Hz would make 2000, more than 10 "
                                        r"times as many: a rate near the recording's \(100 Hz\)$"):
        resample_recording(recording, 2000.0)
    with pytest.raises(DataError, match=r"^resample rate must be finite and in \(0, 10000\] \[Hz\], got 1000000000.0$"):
        resample_recording(recording, 1e9)
