"""Metrics against values computed by hand."""
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from robot_dynid.errors import DataError
from robot_dynid.estimation.metrics import (condition_number, cross_validation,
                                            parameter_statistics, relative_rmsd, residual_std,
                                            rms_residual, rsd, self_validation, validation_report)

TAU = np.array([[1.0, 2.0], [3.0, -4.0]])
TAU_HAT = np.array([[1.5, 2.0], [2.0, -4.5]])       # errors [[0.5, 0], [-1, -0.5]]
QD = np.array([[0.0, 1.0], [1.0, 0.05]])


def test_residual_metrics_hand_values():
    np.testing.assert_allclose(rms_residual(TAU_HAT, TAU), [math.sqrt(0.625), math.sqrt(0.125)])
    np.testing.assert_allclose(rsd(TAU_HAT, TAU), [math.sqrt(1.25 / 10), math.sqrt(0.25 / 20)])
    # joint 1 errors 0.5, -1: mean -0.25, deviations +-0.75 -> 1.125 / (2 - 1)
    np.testing.assert_allclose(residual_std(TAU_HAT, TAU), [math.sqrt(1.125), math.sqrt(0.125)])


def test_rsd_edge_cases():
    zero = np.zeros((3, 1))
    assert rsd(zero, zero)[0] == 0.0
    assert rsd(np.ones((3, 1)), zero)[0] == math.inf


def test_relative_rmsd_excludes_slow_samples():
    # per joint: joint 1 keeps sample 2 (error -1, torque 3), joint 2 keeps sample 1 (exact)
    np.testing.assert_allclose(relative_rmsd(TAU_HAT, TAU, QD, 0.1), [1.0 / 3.0, 0.0])
    # any: both samples have a slow joint, nothing is left
    assert np.all(np.isnan(relative_rmsd(TAU_HAT, TAU, QD, 0.1, exclude="any")))
    # zero threshold counts everything: equals the RSD
    np.testing.assert_allclose(relative_rmsd(TAU_HAT, TAU, QD, 0.0), rsd(TAU_HAT, TAU))


def test_condition_number_of_scaled_regressor():
    assert condition_number(np.array([[1.0, 0.0], [0.0, 1000.0]])) == pytest.approx(1.0)
    # unit columns [1,1]/sqrt2 and [1,0]: Gram eigenvalues 1 +- 1/sqrt2 -> cond 1 + sqrt2
    assert condition_number(np.array([[1.0, 1.0], [1.0, 0.0]])) == pytest.approx(1 + math.sqrt(2))
    Y = np.array([[1.0, 1.0], [1.0, 0.0]]).reshape(1, 2, 2)
    assert condition_number(Y) == pytest.approx(1 + math.sqrt(2))
    assert condition_number(np.array([[1.0, 2.0], [2.0, 4.0]])) == math.inf


def test_parameter_statistics_hand_values():
    stats = parameter_statistics([[1.0, -2.0], [3.0, -1.0], [2.0, -4.0]], names=("fc1", "fv1"))
    np.testing.assert_allclose(stats.mean, [2.0, -7.0 / 3.0])
    np.testing.assert_allclose(stats.minimum, [1.0, -4.0])
    np.testing.assert_allclose(stats.maximum, [3.0, -1.0])
    np.testing.assert_allclose(stats.relative_range, [2.0 / 3.0, 3.0])
    np.testing.assert_allclose(stats.start_end_difference, [1.0, -2.0])
    np.testing.assert_allclose(stats.std, [1.0, math.sqrt(7.0 / 3.0)])
    assert stats.to_dict()["names"] == ["fc1", "fv1"] and stats.n_cycles == 3
    single = parameter_statistics([[0.0, 5.0]])
    np.testing.assert_array_equal(single.std, [0.0, 0.0])
    np.testing.assert_array_equal(single.relative_range, [0.0, 0.0])


def test_validation_report_collects_metrics():
    report = validation_report(TAU_HAT, TAU, QD, speed_threshold=0.1, joint_names=("a", "b"))
    np.testing.assert_allclose(report.rms, [math.sqrt(0.625), math.sqrt(0.125)])
    np.testing.assert_allclose(report.relative_rmsd, [1.0 / 3.0, 0.0])
    np.testing.assert_array_equal(report.n_moving, [1, 1])
    data = json.loads(json.dumps(report.to_dict()))
    assert data["joint_names"] == ["a", "b"] and data["n_samples"] == 2


def fit_gain(segment):
    """tau = g qd with g by least squares: g = sum(qd tau) / sum(qd^2)."""
    gain = np.sum(segment.qd * segment.tau) / np.sum(segment.qd**2)
    return lambda other: gain * other.qd


def test_self_and_cross_validation_with_a_prediction_function():
    first = SimpleNamespace(qd=np.array([[1.0], [2.0]]), tau=np.array([[2.0], [4.0]]))   # g = 2
    second = SimpleNamespace(qd=np.array([[1.0], [1.0]]), tau=np.array([[3.0], [3.0]]))  # g = 3
    reports = cross_validation(fit_gain, [first, second])
    assert reports[0][0].rms[0] == pytest.approx(0.0, abs=1e-15)
    assert reports[0][1].rms[0] == pytest.approx(1.0)                 # 2 predicts 3
    assert reports[1][0].rms[0] == pytest.approx(math.sqrt(2.5))      # errors 1 and 2
    diagonal = self_validation(fit_gain, [first, second])
    assert [report.rms[0] for report in diagonal] == pytest.approx([0.0, 0.0], abs=1e-15)


def test_metric_validation_messages():
    with pytest.raises(DataError, match=r"^tau_hat must have shape \(2 samples, 2 joints\), got \(2,\)$"):
        rms_residual(TAU_HAT[:, 0], TAU)
    with pytest.raises(DataError, match=r"^tau must have shape \(samples, joints\), got \(2,\)$"):
        rsd(TAU_HAT[:, 0], TAU[:, 0])
    with pytest.raises(DataError, match="residual_std needs at least 2 samples, got 1"):
        residual_std(TAU_HAT[:1], TAU[:1])
    with pytest.raises(DataError, match=r"^speed_threshold must be finite and >= 0 \[rad/s\], got -1.0$"):
        relative_rmsd(TAU_HAT, TAU, QD, -1.0)
    with pytest.raises(DataError, match="exclude must be one of"):
        relative_rmsd(TAU_HAT, TAU, QD, 0.1, exclude="all")
    with pytest.raises(DataError, match=r"^qd must have shape \(2 samples, 2 joints\), got \(1, 2\)$"):
        relative_rmsd(TAU_HAT, TAU, QD[:1], 0.1)
    with pytest.raises(DataError, match=r"^estimates must have shape \(cycles, parameters\), got \(3,\)$"):
        parameter_statistics(np.zeros(3))
    with pytest.raises(DataError, match="names has 1 entries, expected p = 2"):
        parameter_statistics(np.zeros((2, 2)), names=("a",))
    with pytest.raises(DataError, match="joint_names has 3 entries, expected n = 2"):
        validation_report(TAU_HAT, TAU, QD, joint_names=("a", "b", "c"))
    with pytest.raises(DataError, match="segments is empty"):
        cross_validation(fit_gain, [])
    with pytest.raises(DataError, match=r"^Y must have 2 or 3 dimensions, got shape \(3,\)$"):
        condition_number(np.zeros(3))
