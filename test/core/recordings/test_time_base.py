"""The clock derivatives are fitted in: receive-time stamps are put back on the sensor's uniform clock, measured
instants and exact grids keep their stamps, gaps stay gaps."""
import numpy as np

from robot_dynid.recordings.time_base import choose_time_base, nominal_grid


def positions(instants):
    """Two joints of a smooth motion [rad] sampled at ``instants`` [s] (encoder counts of 1e-5 rad)."""
    q = np.column_stack([0.8 * np.sin(1.3 * instants), 0.3 * np.sin(2.9 * instants + 1.0)])
    return np.round(q / 1e-5) * 1e-5


def test_receive_times_go_back_to_the_clock_the_samples_were_taken_on():
    """Samples on a 500 Hz clock, 2 % lost, stamped on arrival +-20 % of a step late or early: the grid is chosen
    and puts every sample within 1 % of a step of its true instant (the stamps were 20 % off)."""
    rng = np.random.default_rng(2)
    clock = np.arange(10_000) / 500.0
    kept = np.sort(rng.choice(clock.size, int(0.98 * clock.size), replace=False))
    instants = clock[kept]
    stamps = instants + rng.uniform(-0.2, 0.2, instants.size) / 500.0
    base = choose_time_base(stamps, positions(instants))
    assert base.kind == "grid" and base.residual_ratio < 0.5
    assert np.max(np.abs(base.time - instants)) < 0.01 / 500.0
    assert "derivatives on the nominal grid" in base.describe()


def test_measured_instants_keep_their_stamps():
    """Samples taken at irregular instants and stamped exactly: the positions fit the stamps, not a grid."""
    rng = np.random.default_rng(3)
    instants = np.arange(10_000) / 500.0 + rng.uniform(-0.2, 0.2, 10_000) / 500.0
    base = choose_time_base(instants, positions(instants))
    assert base.kind == "stamps" and base.residual_ratio > 1.0
    np.testing.assert_array_equal(base.time, instants)


def test_an_exact_grid_and_an_irregular_clock_are_left_alone_and_gaps_stay_gaps():
    clock = np.arange(5_000) / 1000.0
    assert choose_time_base(clock, positions(clock)).kind == "stamps"
    irregular = np.cumsum(np.random.default_rng(4).uniform(0.5, 1.5, 5_000)) / 1000.0
    assert nominal_grid(irregular) is None and choose_time_base(irregular, positions(irregular)).kind == "stamps"
    # a 0.5 s pause in a jittered 1 kHz stream: the grid counts its periods
    instants = np.concatenate([clock[:2_000], clock[2_500:]])
    stamps = instants + np.random.default_rng(5).uniform(-0.2, 0.2, instants.size) / 1000.0
    base = choose_time_base(stamps, positions(instants))
    assert base.kind == "grid"
    np.testing.assert_allclose(base.time, instants, atol=0.01 / 1000.0)
