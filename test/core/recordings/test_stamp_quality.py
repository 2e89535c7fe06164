"""The timing report of a recording's stamps, against hand-counted stamps and a real bag."""
import math

import numpy as np
import pytest

from robot_dynid.recordings.bag_io import BagWriter
from robot_dynid.recordings.pipeline import read_recording
from robot_dynid.recordings.stamp_quality import stamp_quality

START = 1_700_000_000.0   # s, a ROS time: float64 resolves it to 2.4e-7 s


def hand_made_stamps():
    """200 stamps at 100 Hz; stamp 10 late by 1 ms; stamps 50, 51 and 120 lost."""
    k = np.delete(np.arange(200), [50, 51, 120])
    time = START + k * 0.01
    time[k == 10] += 0.001
    return time


def test_jitter_gaps_and_repeated_stamps_are_counted_as_by_hand():
    report = stamp_quality(hand_made_stamps(), repeated=4, source="hand.csv")
    # 197 stamps, 196 steps: two gaps (49 -> 52: 3 steps, 2 missing; 119 -> 121: 2 steps, 1 missing), 194 regular
    # steps of which two (9 -> 10, 10 -> 11) are 1 ms off
    assert report.n_stamps == 197 and report.repeated == 4
    assert report.median_step == pytest.approx(0.01, abs=1e-6)
    assert report.n_gaps == 2 and report.missing == 3
    assert report.longest_gap == pytest.approx(0.03, abs=1e-6)
    assert report.first_gap == pytest.approx(0.49, abs=1e-6)
    assert report.jitter_rms == pytest.approx(0.001 * math.sqrt(2 / 194), rel=1e-3)
    assert report.jitter_max == pytest.approx(0.001, rel=1e-3)
    assert not report.nominal_grid and report.warnings() == []
    line = report.describe()
    assert line.startswith("hand.csv: 197 stamps at 100 Hz") and "2 gap(s)" in line and "3 samples missing" in line
    assert "4 repeated stamp(s) dropped" in line
    data = report.to_dict()
    assert data["rate"] == pytest.approx(100.0, rel=1e-4) and data["n_gaps"] == 2 and data["nominal_grid"] is False


def test_stamps_exactly_on_k_over_f_are_called_a_nominal_grid_and_jittered_ones_are_not():
    k = np.delete(np.arange(5000), [700, 701, 2500])        # a grid with lost samples is still a grid
    exact = (round(START * 1e9) + np.round(k * 1e9 / 250.0)).astype(np.int64)   # 250 Hz, whole nanoseconds
    report = stamp_quality(exact * 1e-9, source="grid.bag")
    assert report.nominal_grid and report.grid_deviation < 1e-6
    assert len(report.warnings()) == 1 and "uniform 250 Hz grid" in report.warnings()[0]
    assert report.to_dict()["warnings"] == report.warnings()
    # a driver's software stamps: 20 us of jitter
    jittered = exact * 1e-9 + np.random.default_rng(1).normal(0.0, 20e-6, exact.size)
    report = stamp_quality(jittered, source="measured.bag")
    assert not report.nominal_grid and report.warnings() == []
    assert report.jitter_rms == pytest.approx(20e-6 * math.sqrt(2), rel=0.1)   # a step differs two stamps


def test_a_bag_with_repeated_stamps_reports_them(tmp_path):
    names = ["j1", "j2"]
    stamps = [round(START * 1e9) + i * 10_000_000 + int(np.random.default_rng(i).integers(0, 50_000))
              for i in range(100)]
    stamps[40] = stamps[39]                                   # a driver publishing one sample twice
    stamps[70] = stamps[69]
    with BagWriter(tmp_path / "bag") as bag:
        for i, stamp in enumerate(stamps):
            bag.write_joint_state(stamp, names, [0.01 * i, 0.0], [0.0, 0.0], [1.0, 2.0])
    report = read_recording(tmp_path / "bag", names, resample=200.0).stamp_quality
    assert report.repeated == 2 and report.n_stamps == 98      # counted on the stamps as read, not resampled
    assert report.median_step == pytest.approx(0.01, abs=1e-4) and not report.nominal_grid


EPOCH = 1.8e9             # s, absolute stamps of the coming years


def stamps_and_indices(kind, n=200_000, rate=1000.0):
    """``n`` stamps (s, absolute) of a ``rate`` Hz driver and the index k of the period each was taken in."""
    rng = np.random.default_rng(4)
    k = np.arange(n, dtype=float)
    if kind == "dropped":           # 1 % of the samples lost, 20 us of jitter
        k = np.delete(k, rng.choice(n, n // 100, replace=False))
    time = EPOCH + k / rate + rng.normal(0.0, 20e-6, k.size)
    if kind == "drifting":          # a clock 50 ppm fast, wandering by 0.5 ms
        time = EPOCH + k / rate * (1 + 50e-6) + 0.5e-3 * np.sin(k / 3e4) + rng.normal(0.0, 20e-6, k.size)
    return time, k - k[0]


@pytest.mark.parametrize("kind", ["jittered", "drifting", "dropped"])
def test_the_grid_fitted_is_numpys_least_squares_line(kind):
    """The grid through 200,000 stamps (several blocks of sums) is np.polyfit's line through (k, time - time[0]):
    the same step to 1e-12, the same largest distance to 1e-11 s (the stamps, 200 s after the first, resolve
    4e-14 s)."""
    time, k = stamps_and_indices(kind)
    relative = time - time[0]
    step, intercept = np.polyfit(k, relative, 1)
    report = stamp_quality(time)
    assert report.grid_step == pytest.approx(step, rel=1e-12, abs=0.0)
    assert report.grid_deviation == pytest.approx(np.max(np.abs(relative - (intercept + step * k))), rel=0.0,
                                                  abs=1e-11)
    assert not report.nominal_grid


@pytest.mark.parametrize("start", [0.0, EPOCH])
def test_stamps_off_a_line_by_a_pattern_orthogonal_to_it_fit_that_line(start):
    """Stamps ``start + h k + a s_k`` with s = (+1, -1, -1, +1) repeated: s sums to 0 and to 0 times k over every
    four stamps, so the least-squares line is ``start + h k`` exactly and every stamp lies ``a`` from it, to twice
    the resolution of the stamps (float64's spacing at the last one: 5.7e-14 s from 0, 2.4e-7 s at an absolute
    start)."""
    h, a, n = 0.004, 3e-5, 100_000
    k = np.arange(n, dtype=float)
    time = start + h * k + a * np.tile([1.0, -1.0, -1.0, 1.0], n // 4)
    report = stamp_quality(time)
    assert report.grid_step == pytest.approx(h, rel=1e-12 if start == 0.0 else 1e-9, abs=0.0)
    assert report.grid_deviation == pytest.approx(a, rel=0.0, abs=2 * np.spacing(time[-1]))
