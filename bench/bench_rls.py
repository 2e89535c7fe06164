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

What the online identifier runs per sample, on N samples of a smooth trajectory at 1 kHz
(``bench_identification.excitation_trajectory``; accelerations must come from positions):

- online step with accelerations, ``streaming.OnlineEstimator.add`` (what ``add_sample`` runs):
  the last ``rls_window`` (11) samples as a view of a ring buffer,
  ``signal_processing.centre_derivative`` (cubic fit at the window centre: cached Savitzky-Golay
  weights when the stamps are uniform) + the online step above;
- ``centre_derivative`` alone, on uniform stamps and on stamps with 20 us (std) jitter (then
  ``local_polynomial_fit`` in the samples' own time);
- ``StreamingIdentifier.add_sample`` with ``method="rls"`` and default settings on STREAM_SAMPLES
  samples (sample checks, gap check, buffer, online step, one fold of the buffer into the normal
  equations), on uniform and on jittered stamps.

Cross-checks (AssertionError): after N updates from ``P0 = 1e6 I`` the RLS estimate equals the
true base parameters ``K @ theta`` and the batch OLS estimate to 1e-6 (relative), and
``update_batch`` reproduces the loop of ``update`` to 1e-9; the paths with accelerations from
positions reach ``K @ theta`` to 1e-3 (the differentiation's error on noise-free data).
"""
from __future__ import annotations

import sys
import time

import numpy as np

import bench_identification
import machine
from robot_dynid.estimation.estimators import LeastSquaresAccumulator, RecursiveLeastSquares
from robot_dynid.estimation.identification import IdentificationSettings
from robot_dynid.estimation.streaming import OnlineEstimator, StreamingIdentifier, StreamingSettings
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.recordings.signal_processing import centre_derivative

NAME = "rls"
GOAL_RATE = 5000.0            # [updates/s]
INITIAL_COVARIANCE = 1e6
AGREEMENT = 1e-6
DIFFERENTIATED_AGREEMENT = 1e-3
SAMPLE_RATE = 1000.0          # [Hz] of the trajectory samples
JITTER = 20e-6                # [s] std of the jittered stamps
STREAM_SAMPLES = 25_000       # > StreamingSettings.max_samples: one fold of the buffer
QUICK_STREAM_SAMPLES = 2_000


def _relative_error(estimate, reference) -> float:
    return float(np.linalg.norm(estimate - reference) / np.linalg.norm(reference))


def _per_sample(step, n_samples: int) -> float:
    """Wall time [s] of ``step(k)`` for k = 0..n_samples-1."""
    start = time.perf_counter()
    for k in range(n_samples):
        step(k)
    return time.perf_counter() - start


def trajectory_samples(regressor, theta, stamps):
    """q, qd, noise-free tau (each (N, n)) on the excitation trajectory at ``stamps`` [s]."""
    trajectory = bench_identification.excitation_trajectory(regressor.robot,
                                                            np.random.default_rng(11))
    q, qd, qdd = trajectory.evaluate(stamps)
    return q, qd, regressor.torque(theta, q, qd, qdd)


def online_with_accelerations(regressor, base, theta, n_samples: int, rls) -> float:
    """Wall time [s] of n_samples updates of ``streaming.OnlineEstimator`` (what
    ``StreamingIdentifier.add_sample`` runs in RLS mode) with accelerations from an 11-sample
    window, on trajectory samples; the window is filled before the clock starts."""
    window_length = StreamingSettings().rls_window
    stamps = np.arange(n_samples + window_length - 1) / SAMPLE_RATE
    q, qd, tau = trajectory_samples(regressor, theta, stamps)
    rows = np.column_stack([stamps, q, qd, tau])
    rls.reset()
    online = OnlineEstimator(regressor, base, rls, window_length, StreamingSettings().polyorder)
    for row in rows[:window_length - 1]:
        online.add(row)
    rows = rows[window_length - 1:]
    seconds = _per_sample(lambda k: online.add(rows[k]), n_samples)
    machine.require(rls.n_updates_ == n_samples, f"{rls.n_updates_} RLS updates for {n_samples} samples")
    return seconds


def centre_derivative_seconds(regressor, theta, n_samples: int, jitter: float) -> float:
    """Wall time [s] of n_samples ``centre_derivative`` calls on 11-sample windows."""
    window_length = StreamingSettings().rls_window
    rng = np.random.default_rng(5)
    stamps = np.arange(n_samples + window_length) / SAMPLE_RATE
    stamps = stamps + (rng.normal(scale=jitter, size=stamps.size) if jitter else 0.0)
    q, _, _ = trajectory_samples(regressor, theta, stamps)
    return _per_sample(lambda k: centre_derivative(q[k:k + window_length],
                                                   stamps[k:k + window_length]), n_samples)


def stream_samples(regressor, base, theta, n_samples: int, jitter: float):
    """(wall time [s], RLS estimate) of ``StreamingIdentifier.add_sample`` (method "rls") over
    n_samples trajectory samples in one excitation stage."""
    rng = np.random.default_rng(6)
    stamps = np.arange(n_samples) / SAMPLE_RATE
    stamps = stamps + (rng.normal(scale=jitter, size=n_samples) if jitter else 0.0)
    q, qd, tau = trajectory_samples(regressor, theta, stamps)
    settings = StreamingSettings(identification=IdentificationSettings(
        friction=regressor.friction, method="rls"))
    identifier = StreamingIdentifier(regressor.robot, settings, base=base)
    identifier.start_stage("excitation")
    seconds = _per_sample(lambda k: identifier.add_sample(stamps[k], q[k], qd[k], tau[k]),
                          n_samples)
    machine.require(identifier.n_dropped == 0, f"the identifier dropped "
                                               f"{identifier.n_dropped} samples")
    return seconds, identifier.online_theta


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

    accelerated_seconds = online_with_accelerations(regressor, base, theta, n_samples, rls)
    accelerated_theta = rls.theta_.copy()
    uniform_derivative = centre_derivative_seconds(regressor, theta, n_samples, 0.0)
    jittered_derivative = centre_derivative_seconds(regressor, theta, n_samples, JITTER)
    stream_count = QUICK_STREAM_SAMPLES if quick else STREAM_SAMPLES
    stream_uniform, stream_uniform_theta = stream_samples(regressor, base, theta, stream_count,
                                                          0.0)
    stream_jittered, stream_jittered_theta = stream_samples(regressor, base, theta,
                                                            stream_count, JITTER)
    for label, estimate in (("online step with accelerations", accelerated_theta),
                            ("add_sample, uniform stamps", stream_uniform_theta),
                            ("add_sample, jittered stamps", stream_jittered_theta)):
        errors[label] = _relative_error(estimate, truth)
        machine.require(quick or errors[label] < DIFFERENTIATED_AGREEMENT,   # quick: too short
                        f"{label}: RLS differs from K @ theta by {errors[label]:.2e} (relative)")

    rates = {"online": n_samples / online_seconds, "update": n_samples / update_seconds,
             "regressor": n_samples / regressor_seconds,
             "update_batch": n_samples / update_batch_seconds,
             "batch": n_samples / batch_seconds,
             "online_accelerations": n_samples / accelerated_seconds,
             "centre_derivative": n_samples / uniform_derivative,
             "centre_derivative_jitter": n_samples / jittered_derivative,
             "add_sample": stream_count / stream_uniform,
             "add_sample_jitter": stream_count / stream_jittered}
    goals = (
        machine.Goal("online step (compute_one + select + update)", f">= {GOAL_RATE:,.0f} /s",
                     f"{machine.rate(rates['online'])} /s", rates["online"] >= GOAL_RATE),
        machine.Goal("online step with accelerations (window + `centre_derivative` + the "
                     "above: `streaming.OnlineEstimator.add`)", f">= {GOAL_RATE:,.0f} /s",
                     f"{machine.rate(rates['online_accelerations'])} /s",
                     rates["online_accelerations"] >= GOAL_RATE),
        machine.Goal("`StreamingIdentifier.add_sample` (rls), uniform / jittered stamps", "info",
                     f"{machine.rate(rates['add_sample'])} /s / "
                     f"{machine.rate(rates['add_sample_jitter'])} /s", None),
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
        ["online step with accelerations (`OnlineEstimator.add`): 11-sample window (ring buffer view) + "
         "`centre_derivative` + `compute_one` + `select` + `update`", rates["online_accelerations"]],
        ["`centre_derivative` alone, uniform stamps (cached Savitzky-Golay weights)",
         rates["centre_derivative"]],
        [f"`centre_derivative` alone, stamps with {1e6 * JITTER:g} us jitter (local fit)",
         rates["centre_derivative_jitter"]],
        [f"`StreamingIdentifier.add_sample` (rls), uniform stamps, {stream_count:,} samples",
         rates["add_sample"]],
        [f"`StreamingIdentifier.add_sample` (rls), stamps with {1e6 * JITTER:g} us jitter",
         rates["add_sample_jitter"]],
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
          f"`update_batch` vs `update` loop {errors['update_batch_vs_loop']:.1e}; "
          "accelerations from positions (11-sample cubic fit, noise-free trajectory at "
          f"{SAMPLE_RATE:g} Hz) vs `K @ theta`: online step "
          f"{errors['online step with accelerations']:.1e}, `add_sample` "
          f"{errors['add_sample, uniform stamps']:.1e} (uniform) and "
          f"{errors['add_sample, jittered stamps']:.1e} (jittered).\n")
    notes = ("Torques are noise-free so that the RLS and OLS estimates must agree with the "
             "true base parameters; noise does not change the cost of an update.",
             "`add_sample` is what the identifier node runs per JointState message in RLS mode "
             "(message conversion not included); its cost beyond the online step is the "
             "sample checks (`SampleBounds.reason`), the gap check (median of the last 64 "
             "steps) and the buffer fold every `max_samples / 2` samples.")
    return machine.BenchmarkResult(
        name=NAME, title="Online RLS (UR5, 6 DOF, coulomb_viscous, 48 base parameters)",
        goals=goals, details=details, notes=notes, machine=machine_description, quick=quick,
        values={"n_samples": n_samples, "rates": rates, "errors": errors})


if __name__ == "__main__":
    sys.exit(machine.benchmark_main(run, __doc__.splitlines()[0]))
