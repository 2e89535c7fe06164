"""Cylinder RLS: update cost per cylinder-sample, for one cylinder and for six.

Workload: the curtain-wall arm's cylinders (``robot_dynid.hydraulics.simulation``, Table V in SI) on
the bench excitation at 50 Hz with 1 kPa pressure noise; regressor rows ``[x, sgn x', x', cbrt x']``
and the known force computed beforehand (what a node has after converting a message), columns scaled by
``nominal_scales(0.01 m, 0.01 m/s)``. Paths timed:

- ``RecursiveLeastSquares.update`` per sample in a Python loop (the per-message online path), one
  cylinder, and six cylinders (six estimators, one update each per sample);
- ``identify_cylinder`` (RLS, ``update_batch`` with history) per sample, the batch path of the CLI;
- ``identify_cylinder`` (LS) per sample, for comparison.

Goal: under 0.1 ms per cylinder-sample on the online path. Cross-check (AssertionError): the
loop of ``update`` gives the estimate of ``identify_cylinder`` (RLS) to 1e-9 (relative), and fc, fv,
fs of cylinder 1 are within 5 % of Table V.
"""
from __future__ import annotations

import sys
import time

import numpy as np

import machine
from robot_dynid.estimation.estimators import RecursiveLeastSquares
from robot_dynid.hydraulics import simulation
from robot_dynid.hydraulics.cylinder import (cylinder_regressor, identify_cylinder, known_force,
                                             nominal_scales)
from robot_dynid.recordings.signal_processing import differentiate

NAME = "hydraulic"
GOAL_SECONDS = 1e-4           # per cylinder-sample
DURATION = 252.0              # s of bench data (two periods of the paper's slow sine)
QUICK_DURATION = 40.0


def run(quick: bool = False) -> machine.BenchmarkResult:
    machine_description = machine.describe_machine()
    duration = QUICK_DURATION if quick else DURATION
    configs = simulation.curtain_wall_cylinders(_robot())
    truth = simulation.table_v_parameters()
    runs = simulation.simulate_bench(configs, truth, duration=duration, seed=0)
    scales = nominal_scales(0.01, 0.01)
    rows, targets, xdds = [], [], []
    for config, bench in zip(configs, runs):
        xdd = differentiate(bench.x, bench.time, window_samples=7).qdd
        rows.append(cylinder_regressor(bench.x, bench.xd) / scales)
        targets.append(known_force(config.cylinder, bench.xd, xdd, bench.p_a, bench.p_b, bench.load))
        xdds.append(xdd)
    n_samples = runs[0].time.size

    def online(count):
        estimators = [RecursiveLeastSquares(4) for _ in range(count)]
        start = time.perf_counter()
        for k in range(n_samples):
            for index, rls in enumerate(estimators):
                rls.update(rows[index][k], targets[index][k])
        return (time.perf_counter() - start) / (n_samples * count), estimators

    one_seconds, _ = online(1)
    six_seconds, estimators = online(6)
    batch = {}
    for method in ("rls", "ls"):
        start = time.perf_counter()
        result = identify_cylinder(configs[0].cylinder, runs[0].x, runs[0].xd, xdds[0], runs[0].p_a, runs[0].p_b,
                                   load=runs[0].load, method=method, scales=scales)
        batch[method] = ((time.perf_counter() - start) / n_samples, result)
    loop_theta = estimators[0].theta_ / scales
    agreement = float(np.linalg.norm(loop_theta - batch["rls"][1].parameters.as_array())
                      / np.linalg.norm(loop_theta))
    assert agreement < 1e-9, agreement
    error = np.abs(batch["rls"][1].parameters.as_array() / truth[0].as_array() - 1.0)[1:]
    if not quick:
        assert np.all(error < 0.05), error
    goals = (
        machine.Goal("online RLS update, one cylinder [ms per cylinder-sample]", f"< {GOAL_SECONDS * 1e3:g}",
                     f"{one_seconds * 1e3:.4f}", one_seconds < GOAL_SECONDS),
        machine.Goal("online RLS update, six cylinders [ms per cylinder-sample]", f"< {GOAL_SECONDS * 1e3:g}",
                     f"{six_seconds * 1e3:.4f}", six_seconds < GOAL_SECONDS),
    )
    details = (
        f"N = {n_samples} samples at 50 Hz ({duration:g} s), 4 parameters per cylinder.\n\n"
        + machine.markdown_table(
            ["Path", "us per cylinder-sample", "cylinder-samples/s"],
            [["`RecursiveLeastSquares.update` loop, 1 cylinder", f"{one_seconds * 1e6:.1f}",
              machine.rate(1.0 / one_seconds)],
             ["`RecursiveLeastSquares.update` loop, 6 cylinders", f"{six_seconds * 1e6:.1f}",
              machine.rate(1.0 / six_seconds)],
             ["`identify_cylinder` rls (`update_batch`, history)", f"{batch['rls'][0] * 1e6:.1f}",
              machine.rate(1.0 / batch["rls"][0])],
             ["`identify_cylinder` ls (`ols`)", f"{batch['ls'][0] * 1e6:.1f}", machine.rate(1.0 / batch["ls"][0])]])
        + f"\nCross-checks: `update` loop vs `identify_cylinder` (rls) {agreement:.1e} (relative); cylinder 1 "
          f"fc, fv, fs relative errors {', '.join(f'{value:.2%}' for value in error)} (Table V, 1 kPa noise).\n")
    return machine.BenchmarkResult(
        name=NAME, title="Hydraulic cylinder RLS (curtain-wall arm, Table V, 50 Hz)",
        goals=goals, details=details, notes=("Message conversion and differentiation are not included.",),
        machine=machine_description, quick=quick,
        values={"one_cylinder_seconds": one_seconds, "six_cylinders_seconds": six_seconds})


def _robot():
    from pathlib import Path

    from robot_dynid.model.robot_description import load_robot
    return load_robot(Path(__file__).resolve().parents[1] / "config" / "robots" / "curtain_wall_arm.yaml")


if __name__ == "__main__":
    sys.exit(machine.benchmark_main(run, __doc__.splitlines()[0]))
