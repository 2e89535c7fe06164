"""The real-world recording generator (test/real_world.py) holds what its docstring promises: exact derivatives
through rests, true rests, noise of the stated size and correlation, stale rows and stamps as described."""
import numpy as np
import pytest

from real_world import Effects, excitation, simulate, with_rests
from repo_paths import ROBOTS
from robot_dynid.model.robot_loader import load_robot


@pytest.fixture(scope="module")
def robot():
    return load_robot(ROBOTS / "er3a.yaml")


def test_motion_with_rests_has_the_derivatives_of_its_positions_and_stops(robot):
    motion = with_rests(excitation(robot, seed=3), [(2.0, 0.5, 1.0), (6.0, 0.3, 0.5)])
    t = np.linspace(0.0, 9.0, 90001)
    q, qd, qdd = motion.evaluate(t)
    assert np.abs(np.gradient(q, t, axis=0) - qd)[5:-5].max() < 1e-5 * np.abs(qd).max()
    assert np.abs(np.gradient(qd, t, axis=0) - qdd)[5:-5].max() < 1e-4 * np.abs(qdd).max()
    dwell = (t >= 2.5) & (t <= 3.5)
    assert np.all(qd[dwell] == 0.0) and np.ptp(q[dwell], axis=0).max() == 0.0
    # each rest costs its ramp (half on the way down, half up) and its dwell of the trajectory's own time
    assert motion.clock(t)[0][-1] == pytest.approx(9.0 - 1.5 - 0.8, abs=1e-12)


def test_noise_has_the_stated_size_per_joint_and_lag_one_correlation(robot):
    noise = np.array([0.1, 0.5, 0.3, 0.05, 0.05, 0.02])
    sim = simulate(robot, excitation(robot), 60.0, 500.0, Effects(noise=noise, rho=0.9), seed=4)
    error = sim.recording.tau - sim.truth.tau
    np.testing.assert_allclose(np.std(error, axis=0), noise, rtol=0.15)
    lag_one = [np.corrcoef(e[1:], e[:-1])[0, 1] for e in error.T]
    np.testing.assert_allclose(lag_one, 0.9, atol=0.03)


def test_receive_stamps_jitter_around_the_sensor_clock_and_stale_rows_repeat_the_previous(robot):
    sim = simulate(robot, excitation(robot), 10.0, 100.0,
                   Effects(stamps="receive", jitter=0.2, drop=0.02, repeat=0.05, quantum=1e-4), seed=5)
    recording, truth = sim.recording, sim.truth
    offset = recording.time - truth.time
    assert 0.0015 < np.max(np.abs(offset)) <= 0.002 + 1e-12
    assert recording.n_samples == pytest.approx(0.98 * 1001, abs=1)
    same = [np.all(values[1:] == values[:-1], axis=1) for values in (recording.q, recording.tau)]
    stale = same[0] & same[1]
    assert np.count_nonzero(stale) == pytest.approx(0.05 * recording.n_samples, abs=3)
    np.testing.assert_allclose(recording.q / 1e-4, np.round(recording.q / 1e-4), atol=1e-6)
