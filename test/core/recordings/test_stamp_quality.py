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
