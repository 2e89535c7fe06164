"""Reading a recording whatever its format: derivatives of a bag that lost messages."""
import numpy as np
import pytest

from robot_dynid.bag_io import BagWriter
from robot_dynid.data_files import complete_derivatives, read_recording
from robot_dynid.errors import DataError
from robot_dynid.recording import Recording

JOINTS = ("j1", "j2")
RATE = 500.0  # Hz
OMEGA = np.array([2.0, 5.0])  # rad/s of q_j = sin(omega_j t)


def motion(t):
    """Positions [rad] and their exact accelerations [rad/s^2] (the independent reference)."""
    phase = np.outer(t, OMEGA)
    return np.sin(phase), OMEGA * np.cos(phase), -OMEGA**2 * np.sin(phase)


def test_lost_messages_restart_the_derivatives_instead_of_failing_the_bag(tmp_path):
    k = np.arange(1500)
    # four gaps; sample 1210 is left alone between two of them, a run shorter than the 25-sample window
    lost = {400, 1000, 1001, 1002, *range(1200, 1210), *range(1211, 1230)}
    kept = np.array([i for i in k if i not in lost])
    t = 100.0 + kept / RATE
    q, qd, qdd = motion(t - 100.0)
    with BagWriter(tmp_path / "bag") as bag:
        for row, stamp in enumerate(t):
            bag.write_joint_state(round(stamp * 1e9), JOINTS, q[row], qd[row], np.zeros(2))
    recording = read_recording(tmp_path / "bag", joint_names=JOINTS)
    assert recording.n_dropped == 1 and recording.n_samples == kept.size - 1
    assert 100.0 + 1210 / RATE not in recording.time
    expected = motion(recording.time - 100.0)[2]
    inside = np.ones(recording.n_samples, bool)   # the Savitzky-Golay edges are fitted, not centred: looser
    for gap_start in np.flatnonzero(np.diff(recording.time) > 1.5 / RATE):
        inside[max(0, gap_start - 12):gap_start + 14] = False
    inside[:13] = inside[-13:] = False
    # cubic Savitzky-Golay over 0.05 s: bias ~0.1 % of the acceleration amplitude omega^2 when centred
    assert np.all(np.abs(recording.qdd[inside] - expected[inside]) < 2e-3 * OMEGA**2)
    assert np.all(np.abs(recording.qdd[~inside] - expected[~inside]) < 2e-2 * OMEGA**2)


def test_a_recording_with_only_runs_shorter_than_the_window_names_the_window():
    t = np.array([0.0, 0.002, 0.004, 1.0, 1.002])
    recording = Recording.from_arrays(JOINTS, t, np.zeros((5, 2)), tau=np.zeros((5, 2)))
    with pytest.raises(DataError, match="window_seconds = 0.05 s .* exceeds the 3 samples of q"):
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
