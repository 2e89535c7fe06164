"""Online recursive least squares for a 6-DOF arm with friction: updates per second.

Workload: UR5 (config/robots/ur5.yaml), coulomb_viscous friction, base parameters from
``compute_base_parameters`` (48 for this arm), N uniformly random states within the joint
limits, noise-free torques from physically consistent parameters. Paths timed in the same run
(each a Python loop over the N samples, the rounds interleaved, the best round kept):

- fast online step: ``Regressor.online().compute`` (one sample's regressor into reused buffers,
  inputs trusted) + the base columns (``np.take`` into a buffer) +
  ``RecursiveLeastSquares.update_trusted`` (the compiled recursion, ``_online_kernel.c``);
- checked online step: ``Regressor.compute_one`` + ``BaseParameters.select`` +
  ``RecursiveLeastSquares.update`` (the same arithmetic after the checks, bit for bit);
- baseline, the step before the compiled recursion: ``compute_one`` + ``select`` + the numpy
  recursion (``RecursiveLeastSquares._update_by_solve``, what ``update`` ran until then);
- the update alone (rows computed beforehand): trusted, checked, numpy;
- one sample's regressor alone: the trusted call, ``compute_one``, and pinocchio's
  ``computeJointTorqueRegressor(model, data, q, v, a)`` (6 x 60 inertial columns; the
  single-sample call an online loop over pinocchio makes);
- ``RecursiveLeastSquares.update_batch`` over the same rows (one call, same recursion);
- baseline: the batch path, ``Regressor.compute`` on all N states + ``select`` +
  ``LeastSquaresAccumulator.add``.

What the online identifier runs per sample, on N samples of a smooth trajectory at 1 kHz
(``bench_identification.excitation_trajectory``; accelerations must come from positions):

- online step with accelerations, ``streaming.OnlineEstimator.add`` (what ``add_sample`` runs):
  the last ``rls_window`` (11) samples as views of a ring buffer made once,
  ``signal_processing.centre_derivative`` (cubic fit at the window centre: compiled
  Savitzky-Golay sum when the stamps are uniform) + the fast online step above;
- baseline, the same step as it was before (``BEFORE``): slices of the ring per sample, the numpy
  derivative (``weights @ q / h**2`` after a numpy uniformity check), ``compute_one``, ``select``,
  the numpy recursion;
- ``centre_derivative`` alone, on uniform stamps (compiled, and the numpy formula it replaced) and
  on stamps with 20 us (std) jitter (then ``local_polynomial_fit`` in the samples' own time);
- ``StreamingIdentifier.add_sample`` with ``method="rls"`` and default settings on STREAM_SAMPLES
  samples (sample checks, gap check, buffer, online step, one fold of the buffer into the normal
  equations), on uniform and on jittered stamps.

Cross-checks (AssertionError): after N updates from ``P0 = 1e6 I`` the RLS estimate equals the
true base parameters ``K @ theta`` and the batch OLS estimate to 1e-6 (relative), the fast step
equals the checked one bit for bit, the numpy recursion agrees with the compiled one to 1e-9, and
``update_batch`` reproduces the loop of ``update``; the paths with accelerations from positions
reach ``K @ theta`` to 1e-3 (the differentiation's error on noise-free data).
"""
from __future__ import annotations

import sys
import time

import numpy as np
import pinocchio as pin

import bench_identification
import machine
from robot_dynid.estimation.estimators import LeastSquaresAccumulator, RecursiveLeastSquares
from robot_dynid.estimation.identification import IdentificationSettings
from robot_dynid.estimation.streaming import OnlineEstimator, StreamingIdentifier, StreamingSettings
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.robot_description import build_pinocchio_model
from robot_dynid.recordings.signal_processing import SAVGOL_UNIFORMITY, _centre_coefficients, centre_derivative

NAME = "rls"
GOAL_RATE = 5000.0            # [updates/s] of the checked online steps
ACCELERATIONS_GOAL = 60000.0  # [updates/s] of the online step with accelerations (issue 23: 3x 20.9 kHz)
PINOCCHIO_GOAL = 1.0          # one sample's regressor at least as fast as pinocchio's single-sample call
INITIAL_COVARIANCE = 1e6
AGREEMENT = 1e-6
DIFFERENTIATED_AGREEMENT = 1e-3
SAMPLE_RATE = 1000.0          # [Hz] of the trajectory samples
JITTER = 20e-6                # [s] std of the jittered stamps
STREAM_SAMPLES = 25_000       # > StreamingSettings.max_samples: one fold of the buffer
QUICK_STREAM_SAMPLES = 2_000
BEFORE = "0da50c7"            # the source whose online step the baselines reproduce (main before issue 23)


def _relative_error(estimate, reference) -> float:
    return float(np.linalg.norm(estimate - reference) / np.linalg.norm(reference))


def _per_sample(step, n_samples: int) -> float:
    """Wall time [s] of ``step(k)`` for k = 0..n_samples-1."""
    start = time.perf_counter()
    for k in range(n_samples):
        step(k)
    return time.perf_counter() - start


def _interleaved(paths: dict, n_samples: int, rounds: int, before=None) -> dict:
    """Best wall time [s] of ``_per_sample(step, n_samples)`` for each ``{name: step}``, in ``rounds``
    alternating rounds; ``before[name]()`` (untimed) runs before each of that path's rounds."""
    best = {name: float("inf") for name in paths}
    for _ in range(rounds):
        for name, step in paths.items():
            if before and name in before:
                before[name]()
            best[name] = min(best[name], _per_sample(step, n_samples))
    return best


def numpy_centre_derivative(q, time_, polyorder: int = 3, order: int = 2):
    """``centre_derivative``'s uniform-stamp path as it was in numpy before the compiled one (the
    baseline; jittered stamps went, and go, to the local fit)."""
    window = len(time_)
    step = (time_[-1] - time_[0]) / (window - 1)
    if abs(time_[1:] - time_[:-1] - step).max() <= SAVGOL_UNIFORMITY * step:
        return _centre_coefficients(window, polyorder, order) @ q / step**order
    return centre_derivative(q, time_, polyorder, order)


class StepBefore:
    """``OnlineEstimator.add`` as it was at ``BEFORE``: ring slices per sample, the numpy derivative,
    ``compute_one``, ``select`` and the numpy recursion (the baseline of the online step)."""

    def __init__(self, regressor, base, rls, window: int, polyorder: int):
        self.regressor, self.base, self.rls, self.window, self.polyorder = regressor, base, rls, window, polyorder
        n = regressor.n_joints
        self._ring = np.empty((2 * window, 1 + 3 * n))
        self._q, self._qd, self._tau = slice(1, 1 + n), slice(1 + n, 1 + 2 * n), slice(1 + 2 * n, 1 + 3 * n)
        self._count = 0

    def add(self, row):
        position = self._count % self.window
        self._ring[position] = row
        self._ring[position + self.window] = row
        self._count += 1
        if self._count < self.window:
            return
        window = self._ring[position + 1:position + 1 + self.window]
        centre = window[self.window // 2]
        qdd = numpy_centre_derivative(window[:, self._q], window[:, 0], self.polyorder)
        Y = self.regressor.compute_one(centre[self._q], centre[self._qd], qdd)
        Phi, y = self.base.select(Y), np.asarray(centre[self._tau], dtype=float)
        self.rls._update_by_solve(Phi, y, 1.0)


def trajectory_samples(regressor, theta, stamps):
    """q, qd, noise-free tau (each (N, n)) on the excitation trajectory at ``stamps`` [s]."""
    trajectory = bench_identification.excitation_trajectory(regressor.robot,
                                                            np.random.default_rng(11))
    q, qd, qdd = trajectory.evaluate(stamps)
    return q, qd, regressor.torque(theta, q, qd, qdd)


def online_with_accelerations(regressor, base, theta, n_samples: int, rounds: int):
    """Best wall times [s] of n_samples updates of ``streaming.OnlineEstimator`` (what
    ``StreamingIdentifier.add_sample`` runs in RLS mode) with accelerations from an 11-sample
    window, and of the step as it was before (:class:`StepBefore`), on trajectory samples; the
    window is filled before the clock starts. Returns ({path: seconds}, {path: estimate})."""
    window_length = StreamingSettings().rls_window
    stamps = np.arange(n_samples + window_length - 1) / SAMPLE_RATE
    q, qd, tau = trajectory_samples(regressor, theta, stamps)
    rows = np.column_stack([stamps, q, qd, tau])
    steps, estimators = {}, {}
    for name, kind in (("online_accelerations", OnlineEstimator), ("online_accelerations_before", StepBefore)):
        rls = RecursiveLeastSquares(base.rank, initial_covariance=INITIAL_COVARIANCE)
        estimators[name] = kind(regressor, base, rls, window_length, StreamingSettings().polyorder)
        steps[name] = (lambda k, add=estimators[name].add: add(rows[window_length - 1 + k]))

    def refill(name):
        def fill():
            estimator = estimators[name]
            estimator.rls.reset()
            estimator._count = 0
            for row in rows[:window_length - 1]:
                estimator.add(row)
        return fill

    seconds = _interleaved(steps, n_samples, rounds, before={name: refill(name) for name in steps})
    for name, estimator in estimators.items():
        machine.require(estimator.rls.n_updates_ == n_samples,
                        f"{name}: {estimator.rls.n_updates_} RLS updates for {n_samples} samples")
    return seconds, {name: estimator.rls.theta_.copy() for name, estimator in estimators.items()}


def centre_derivative_seconds(regressor, theta, n_samples: int, jitter: float, rounds: int) -> dict:
    """Best wall times [s] of n_samples ``centre_derivative`` calls on 11-sample windows (and of the
    numpy formula it replaced on uniform stamps)."""
    window_length = StreamingSettings().rls_window
    rng = np.random.default_rng(5)
    stamps = np.arange(n_samples + window_length) / SAMPLE_RATE
    stamps = stamps + (rng.normal(scale=jitter, size=stamps.size) if jitter else 0.0)
    q, _, _ = trajectory_samples(regressor, theta, stamps)
    windows = [(q[k:k + window_length], stamps[k:k + window_length]) for k in range(n_samples)]
    out = np.empty(q.shape[1])
    paths = {"compiled": lambda k: centre_derivative(*windows[k], out=out)}
    if not jitter:
        paths["numpy"] = lambda k: numpy_centre_derivative(*windows[k])
        for k in range(0, n_samples, 97):
            np.testing.assert_allclose(centre_derivative(*windows[k]), numpy_centre_derivative(*windows[k]),
                                       rtol=1e-9, atol=1e-9)
    return _interleaved(paths, n_samples, rounds)


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
    n_samples, rounds = (500, 2) if quick else (5000, 5)
    rng = np.random.default_rng(20260522)
    regressor = machine.ur5_regressor()
    base = compute_base_parameters(regressor)
    q, qd, qdd = machine.random_states(regressor.robot, n_samples, rng)
    theta = machine.physical_parameters(regressor, rng)
    tau = regressor.torque(theta, q, qd, qdd)
    truth = base.projection @ theta
    n = regressor.n_joints

    checked = RecursiveLeastSquares(base.rank, initial_covariance=INITIAL_COVARIANCE)
    fast = RecursiveLeastSquares(base.rank, initial_covariance=INITIAL_COVARIANCE)
    before = RecursiveLeastSquares(base.rank, initial_covariance=INITIAL_COVARIANCE)
    online = regressor.online()
    independent = np.asarray(base.independent, dtype=np.intp)
    base_rows = np.empty((n, base.rank))

    def fast_step(k):
        np.take(online.compute(q[k], qd[k], qdd[k]), independent, axis=-1, out=base_rows, mode="clip")
        fast.update_trusted(base_rows, tau[k])

    def checked_step(k):
        checked.update(base.select(regressor.compute_one(q[k], qd[k], qdd[k])), tau[k])

    def step_before(k):
        before._update_by_solve(base.select(regressor.compute_one(q[k], qd[k], qdd[k])), tau[k], 1.0)

    resets = {name: rls.reset for name, rls in (("online_fast", fast), ("online", checked),
                                                ("online_before", before))}
    times = _interleaved({"online_fast": fast_step, "online": checked_step, "online_before": step_before},
                         n_samples, rounds, before=resets)
    fast_theta, online_theta, before_theta = fast.theta_.copy(), checked.theta_.copy(), before.theta_.copy()
    machine.require(np.array_equal(fast_theta, online_theta) and np.array_equal(fast.covariance_, checked.covariance_),
                    "the fast online step differs from the checked one")

    rows_per_sample = base.select(regressor.compute(q, qd, qdd))
    Y_pinocchio = np.empty((n, 10 * n))
    model = build_pinocchio_model(regressor.robot)
    data = model.createData()

    def pinocchio_one(k):
        Y_pinocchio[:] = pin.computeJointTorqueRegressor(model, data, q[k], qd[k], qdd[k])

    times.update(_interleaved({
        "regressor_fast": lambda k: online.compute(q[k], qd[k], qdd[k]),
        "regressor": lambda k: regressor.compute_one(q[k], qd[k], qdd[k]),
        "pinocchio_one": pinocchio_one}, n_samples, rounds))
    times.update(_interleaved({
        "update_trusted": lambda k: fast.update_trusted(rows_per_sample[k], tau[k]),
        "update": lambda k: checked.update(rows_per_sample[k], tau[k]),
        "update_numpy": lambda k: before._update_by_solve(rows_per_sample[k], tau[k], 1.0)},
        n_samples, rounds,
        before={"update_trusted": fast.reset, "update": checked.reset, "update_numpy": before.reset}))
    loop_theta = checked.theta_.copy()

    checked.reset()
    clock = time.perf_counter()
    batch_theta = checked.update_batch(rows_per_sample, tau)
    update_batch_seconds = time.perf_counter() - clock

    accumulator = LeastSquaresAccumulator(regressor.n_joints, base.rank)

    def batch_path():
        accumulator.__init__(regressor.n_joints, base.rank)
        accumulator.add(base.select(regressor.compute(q, qd, qdd)), tau)

    batch_seconds = machine.best_time(batch_path, 3)
    ols_theta = accumulator.solve("ols").theta

    errors = {"rls_vs_truth": _relative_error(online_theta, truth),
              "rls_vs_ols": _relative_error(online_theta, ols_theta),
              "numpy_vs_compiled": _relative_error(before_theta, online_theta),
              "update_batch_vs_loop": _relative_error(batch_theta, loop_theta)}
    machine.require(errors["rls_vs_truth"] < AGREEMENT,
                    f"RLS differs from K @ theta by {errors['rls_vs_truth']:.2e} (relative)")
    machine.require(errors["rls_vs_ols"] < AGREEMENT,
                    f"RLS differs from batch OLS by {errors['rls_vs_ols']:.2e} (relative)")
    machine.require(errors["numpy_vs_compiled"] < 1e-9,
                    f"the numpy recursion differs from the compiled one by {errors['numpy_vs_compiled']:.2e}")
    machine.require(errors["update_batch_vs_loop"] < 1e-9,
                    f"update_batch differs from the update loop by "
                    f"{errors['update_batch_vs_loop']:.2e}")

    accelerated, accelerated_theta = online_with_accelerations(regressor, base, theta, n_samples, rounds)
    times.update(accelerated)
    derivative = centre_derivative_seconds(regressor, theta, n_samples, 0.0, rounds)
    times.update({"centre_derivative": derivative["compiled"], "centre_derivative_numpy": derivative["numpy"],
                  "centre_derivative_jitter": centre_derivative_seconds(regressor, theta, n_samples, JITTER,
                                                                        rounds)["compiled"]})
    stream_count = QUICK_STREAM_SAMPLES if quick else STREAM_SAMPLES
    stream_uniform, stream_uniform_theta = stream_samples(regressor, base, theta, stream_count,
                                                          0.0)
    stream_jittered, stream_jittered_theta = stream_samples(regressor, base, theta,
                                                            stream_count, JITTER)
    for label, estimate in (("online step with accelerations", accelerated_theta["online_accelerations"]),
                            ("the same, as before", accelerated_theta["online_accelerations_before"]),
                            ("add_sample, uniform stamps", stream_uniform_theta),
                            ("add_sample, jittered stamps", stream_jittered_theta)):
        errors[label] = _relative_error(estimate, truth)
        machine.require(quick or errors[label] < DIFFERENTIATED_AGREEMENT,   # quick: too short
                        f"{label}: RLS differs from K @ theta by {errors[label]:.2e} (relative)")

    rates = {name: n_samples / seconds for name, seconds in times.items()}
    rates.update({"update_batch": n_samples / update_batch_seconds, "batch": n_samples / batch_seconds,
                  "add_sample": stream_count / stream_uniform, "add_sample_jitter": stream_count / stream_jittered})
    accelerations_ratio = rates["online_accelerations"] / rates["online_accelerations_before"]
    fast_vs_pinocchio = rates["regressor_fast"] / rates["pinocchio_one"]
    one_vs_pinocchio = rates["regressor"] / rates["pinocchio_one"]
    goals = (
        machine.Goal("online step with accelerations (`OnlineEstimator.add`: window, `centre_derivative`, "
                     "trusted regressor, base columns, `update_trusted`)", f">= {ACCELERATIONS_GOAL:,.0f} /s",
                     f"{machine.rate(rates['online_accelerations'])} /s ({accelerations_ratio:.1f}x the step "
                     f"before, {machine.rate(rates['online_accelerations_before'])} /s in this run)",
                     rates["online_accelerations"] >= ACCELERATIONS_GOAL),
        machine.Goal("one sample's regressor, the trusted call (`Regressor.online().compute`) / pinocchio "
                     "`computeJointTorqueRegressor`, same samples", f">= {PINOCCHIO_GOAL:g}x",
                     f"{fast_vs_pinocchio:.2f}x ({1e6 / rates['regressor_fast']:.2f} vs "
                     f"{1e6 / rates['pinocchio_one']:.2f} us)", fast_vs_pinocchio >= PINOCCHIO_GOAL),
        machine.Goal("one sample's regressor, the checked call (`Regressor.compute_one`) / pinocchio",
                     f">= {PINOCCHIO_GOAL:g}x", f"{one_vs_pinocchio:.2f}x ({1e6 / rates['regressor']:.2f} us)",
                     one_vs_pinocchio >= PINOCCHIO_GOAL),
        machine.Goal("checked online step (`compute_one` + `select` + `update`)", f">= {GOAL_RATE:,.0f} /s",
                     f"{machine.rate(rates['online'])} /s", rates["online"] >= GOAL_RATE),
        machine.Goal("`RecursiveLeastSquares.update_trusted` alone / the numpy recursion", "info",
                     f"{rates['update_trusted'] / rates['update_numpy']:.1f}x "
                     f"({machine.rate(rates['update_trusted'])} /s)", None),
        machine.Goal("`StreamingIdentifier.add_sample` (rls), uniform / jittered stamps", "info",
                     f"{machine.rate(rates['add_sample'])} /s / "
                     f"{machine.rate(rates['add_sample_jitter'])} /s", None),
    )
    path_rows = [
        ["fast online step: `Regressor.online().compute` + `np.take` + `update_trusted`", rates["online_fast"]],
        ["checked online step: `compute_one` + `select` + `update` (same bits)", rates["online"]],
        ["baseline: `compute_one` + `select` + numpy recursion (the step before)", rates["online_before"]],
        ["one sample's regressor: `Regressor.online().compute` (trusted)", rates["regressor_fast"]],
        ["one sample's regressor: `Regressor.compute_one` (checked)", rates["regressor"]],
        ["baseline: pinocchio `computeJointTorqueRegressor`, one sample (6 x 60)", rates["pinocchio_one"]],
        ["`RecursiveLeastSquares.update_trusted` alone (6 x 48 rows, compiled)", rates["update_trusted"]],
        ["`RecursiveLeastSquares.update` alone (checks + compiled)", rates["update"]],
        ["baseline: the numpy recursion alone (`_update_by_solve`, `update` before)", rates["update_numpy"]],
        ["`RecursiveLeastSquares.update_batch` (same recursion, one call)", rates["update_batch"]],
        ["online step with accelerations (`OnlineEstimator.add`): ring views + `centre_derivative` + fast step",
         rates["online_accelerations"]],
        ["baseline: the same step before (ring slices, numpy derivative, checked regressor, numpy recursion)",
         rates["online_accelerations_before"]],
        ["`centre_derivative` alone, uniform stamps (compiled Savitzky-Golay sum)", rates["centre_derivative"]],
        ["baseline: its numpy formula (uniformity check + `weights @ q / h**2`)", rates["centre_derivative_numpy"]],
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
        f"parameters per update, P0 = {INITIAL_COVARIANCE:g} I, forgetting 1; per-sample loops best of "
        f"{rounds} interleaved rounds. The baselines 'before' reproduce the online step of {BEFORE} "
        "(numpy recursion and derivative) in this run.\n\n"
        + machine.markdown_table(
            ["Path", "samples/s", "us/sample", "vs batch path"],
            [[label, machine.rate(value), f"{1e6 / value:.1f}",
              f"{value / rates['batch']:.3f}x"] for label, value in path_rows])
        + f"\nCross-checks (relative error of the parameter vector): RLS vs `K @ theta` "
          f"{errors['rls_vs_truth']:.1e}, RLS vs batch OLS {errors['rls_vs_ols']:.1e}, the fast step vs the "
          f"checked one 0 (bit for bit), numpy recursion vs compiled {errors['numpy_vs_compiled']:.1e}, "
          f"`update_batch` vs `update` loop {errors['update_batch_vs_loop']:.1e}; "
          "accelerations from positions (11-sample cubic fit, noise-free trajectory at "
          f"{SAMPLE_RATE:g} Hz) vs `K @ theta`: online step "
          f"{errors['online step with accelerations']:.1e} (before: {errors['the same, as before']:.1e}), "
          f"`add_sample` {errors['add_sample, uniform stamps']:.1e} (uniform) and "
          f"{errors['add_sample, jittered stamps']:.1e} (jittered).\n")
    notes = ("Torques are noise-free so that the RLS and OLS estimates must agree with the "
             "true base parameters; noise does not change the cost of an update.",
             "The compiled recursion (robot_dynid/_online_kernel.c) factorises the 6 x 6 innovation covariance "
             "(Cholesky), updates P on its upper triangle and skips the zeros of the rows: the two 48 x 48 x 6 "
             "products are most of its time. pinocchio's call returns only the 60 inertial columns, in joint-frame "
             "parameters; ours 72 with friction.",
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
