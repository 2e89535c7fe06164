"""Online recursive least squares for a 6-DOF arm with friction: updates per second.

Workload: UR5 (config/robots/ur5.yaml), coulomb_viscous friction, base parameters from
``compute_base_parameters`` (48 for this arm), N uniformly random states within the joint
limits, noise-free torques from physically consistent parameters. Paths timed in the same run:

- online step, per sample in a Python loop: ``Regressor.compute_one`` + ``BaseParameters.select``
  + ``RecursiveLeastSquares.update`` with the 6 joint rows (what an online node does per
  message);
- the update alone (regressor rows computed beforehand), and the regressor part alone;
- ``RecursiveLeastSquares.update_batch`` over the same rows (one call, same recursion);
- baseline: the batch path, ``Regressor.compute`` on all N states + ``select`` +
  ``LeastSquaresAccumulator.add``.

Cross-check (AssertionError): after N updates from ``P0 = 1e6 I`` the RLS estimate equals the
true base parameters ``K @ theta`` and the batch OLS estimate to 1e-6 (relative), and
``update_batch`` reproduces the loop of ``update`` to 1e-9.
"""
from __future__ import annotations

import sys
import time

import machine
import numpy as np

from robot_dynid.estimation.estimators import LeastSquaresAccumulator, RecursiveLeastSquares
from robot_dynid.model.base_parameters import compute_base_parameters

NAME = "rls"
GOAL_RATE = 5000.0            # [updates/s]
INITIAL_COVARIANCE = 1e6
AGREEMENT = 1e-6


def _relative_error(estimate, reference) -> float:
    return float(np.linalg.norm(estimate - reference) / np.linalg.norm(reference))


def _per_sample(step, n_samples: int) -> float:
    """Wall time [s] of ``step(k)`` for k = 0..n_samples-1."""
    start = time.perf_counter()
    for k in range(n_samples):
        step(k)
    return time.perf_counter() - start


def run(quick: bool = False) -> machine.BenchmarkResult:
    """Time the paths and cross-check them (see the module docstring)."""
    machine_description = machine.describe_machine()
    n_samples = 500 if quick else 5000
    rng = np.random.default_rng(20260522)
    regressor = machine.ur5_regressor()
    base = compute_base_parameters(regressor)
    q, qd, qdd = machine.random_states(regressor.robot, n_samples, rng)
    theta = machine.physical_parameters(regressor, rng)
    tau = regressor.torque(theta, q, qd, qdd)
    truth = base.projection @ theta

    rls = RecursiveLeastSquares(base.rank, initial_covariance=INITIAL_COVARIANCE)

    def online_step(k):
        Y_base = base.select(regressor.compute_one(q[k], qd[k], qdd[k]))
        rls.update(Y_base, tau[k])

    online_seconds = _per_sample(online_step, n_samples)
    online_theta = rls.theta_.copy()

    rows_per_sample = np.empty((n_samples, regressor.n_joints, base.rank))

    def regressor_step(k):
        rows_per_sample[k] = base.select(regressor.compute_one(q[k], qd[k], qdd[k]))

    regressor_seconds = _per_sample(regressor_step, n_samples)

    rls.reset()
    update_seconds = _per_sample(lambda k: rls.update(rows_per_sample[k], tau[k]), n_samples)
    loop_theta = rls.theta_.copy()

    rls.reset()
    clock = time.perf_counter()
    batch_theta = rls.update_batch(rows_per_sample, tau)
    update_batch_seconds = time.perf_counter() - clock

    accumulator = LeastSquaresAccumulator(regressor.n_joints, base.rank)

    def batch_path():
        accumulator.__init__(regressor.n_joints, base.rank)
        accumulator.add(base.select(regressor.compute(q, qd, qdd)), tau)

    batch_seconds = machine.best_time(batch_path, 3)
    ols_theta = accumulator.solve("ols").theta

    errors = {"rls_vs_truth": _relative_error(online_theta, truth),
              "rls_vs_ols": _relative_error(online_theta, ols_theta),
              "update_batch_vs_loop": _relative_error(batch_theta, loop_theta)}
    machine.require(errors["rls_vs_truth"] < AGREEMENT,
                    f"RLS differs from K @ theta by {errors['rls_vs_truth']:.2e} (relative)")
    machine.require(errors["rls_vs_ols"] < AGREEMENT,
                    f"RLS differs from batch OLS by {errors['rls_vs_ols']:.2e} (relative)")
    machine.require(errors["update_batch_vs_loop"] < 1e-9,
                    f"update_batch differs from the update loop by "
                    f"{errors['update_batch_vs_loop']:.2e}")

    rates = {"online": n_samples / online_seconds, "update": n_samples / update_seconds,
             "regressor": n_samples / regressor_seconds,
             "update_batch": n_samples / update_batch_seconds,
             "batch": n_samples / batch_seconds}
    goals = (
        machine.Goal("online step (compute_one + select + update)", f">= {GOAL_RATE:,.0f} /s",
                     f"{machine.rate(rates['online'])} /s", rates["online"] >= GOAL_RATE),
        machine.Goal("`RecursiveLeastSquares.update` alone", "info",
                     f"{machine.rate(rates['update'])} /s", None),
        machine.Goal("online / batch path (samples/s ratio)", "info",
                     f"{rates['online'] / rates['batch']:.3f}x", None),
    )
    path_rows = [
        ["online step: `compute_one` + `select` + `update`", rates["online"]],
        ["`compute_one` + `select` alone", rates["regressor"]],
        ["`RecursiveLeastSquares.update` alone (6 x 48 rows)", rates["update"]],
        ["`RecursiveLeastSquares.update_batch` (same recursion, one call)",
         rates["update_batch"]],
        ["baseline: batch `compute` + `select` + `LeastSquaresAccumulator.add`", rates["batch"]],
    ]
    details = (
        f"N = {n_samples} samples, {regressor.n_joints} joint rows and {base.rank} base "
        f"parameters per update, P0 = {INITIAL_COVARIANCE:g} I, forgetting 1.\n\n"
        + machine.markdown_table(
            ["Path", "samples/s", "us/sample", "vs batch path"],
            [[label, machine.rate(value), f"{1e6 / value:.1f}",
              f"{value / rates['batch']:.3f}x"] for label, value in path_rows])
        + f"\nCross-checks (relative error of the parameter vector): RLS vs `K @ theta` "
          f"{errors['rls_vs_truth']:.1e}, RLS vs batch OLS {errors['rls_vs_ols']:.1e}, "
          f"`update_batch` vs `update` loop {errors['update_batch_vs_loop']:.1e}.\n")
    notes = ("Torques are noise-free so that the RLS and OLS estimates must agree with the "
             "true base parameters; noise does not change the cost of an update.",)
    return machine.BenchmarkResult(
        name=NAME, title="Online RLS (UR5, 6 DOF, coulomb_viscous, 48 base parameters)",
        goals=goals, details=details, notes=notes, machine=machine_description, quick=quick,
        values={"n_samples": n_samples, "rates": rates, "errors": errors})


if __name__ == "__main__":
    sys.exit(machine.benchmark_main(run, __doc__.splitlines()[0]))
