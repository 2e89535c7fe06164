"""Regressor throughput for a 6-DOF arm: the compiled batch kernel against a per-sample Python
loop over pinocchio's C++ regressor.

Workload: UR5 (config/robots/ur5.yaml), coulomb_viscous friction (72 columns), N uniformly
random states within the joint limits. Paths timed in the same run, interleaved (each timed
several times, alternating with the others, best time kept, so a burst of load on a shared
machine hits all paths alike):

- ``Regressor.compute(q, qd, qdd, out=Y)`` into a preallocated (N, n, p) array, as the baseline
  writes into one (the goal);
- ``Regressor.compute(q, qd, qdd)`` allocating its output: a fresh array's first touch costs
  page faults that can exceed the computation, reported apart;
- ``Regressor.compute_one`` per sample in a Python loop (the online path);
- baseline: ``pinocchio.computeJointTorqueRegressor(model, data, q, v, a)`` per sample in a
  Python loop, result copied into a preallocated (N, n, 10 n) array (inertial columns only).

Cross-checks (AssertionError when they fail): the batch equals ``compute_one``; ``Y @ theta``
of the batch equals ``pinocchio.rnea`` for physically consistent link inertias (set on the
model through pinocchio's own ``SE3.act(Inertia)``, an independent route from link frame to
joint frame), and so does the baseline's regressor; friction columns are ``sgn(qd)`` and
``qd``.
"""
from __future__ import annotations

import sys
import time

import numpy as np
import pinocchio as pin

import machine  # noqa: F401  (puts the source tree first on sys.path)
from robot_dynid.model.robot_description import build_pinocchio_model, link_frame_placements

NAME = "regressor"
GOAL_RATIO = 10.0
CHECKED_SAMPLES = 200


def _rnea_model(regressor, theta):
    """Pinocchio model of the robot with the link inertias of ``theta`` (link frame, pinocchio
    order) moved to the joint frames by ``SE3.act``."""
    model = build_pinocchio_model(regressor.robot)
    for i, placement in enumerate(link_frame_placements(model)):
        link_inertia = pin.Inertia.FromDynamicParameters(theta[10 * i:10 * (i + 1)])
        model.inertias[i + 1] = placement.act(link_inertia)
    return model


def cross_check(regressor, Y_batch, Y_pinocchio, q, qd, qdd, rng) -> dict:
    """The numerical agreements listed in the module docstring; returns the worst errors."""
    n = regressor.n_joints
    inertial = regressor.slices["inertial"]
    checked = range(min(CHECKED_SAMPLES, q.shape[0]))
    Y_one = np.array([regressor.compute_one(q[k], qd[k], qdd[k]) for k in checked])
    scale = np.abs(Y_one).max()
    one_error = np.abs(Y_batch[:len(checked)] - Y_one).max() / scale
    machine.require(one_error < 1e-10, f"compute and compute_one differ by {one_error:.2e} "
                                       "(relative to max |Y|)")

    theta = machine.physical_parameters(regressor, rng)
    model = _rnea_model(regressor, theta)
    data = model.createData()
    tau_rnea = np.array([pin.rnea(model, data, q[k], qd[k], qdd[k]) for k in checked])
    tau_scale = np.abs(tau_rnea).max()
    tau_batch = Y_batch[:len(checked), :, inertial] @ theta[inertial]
    batch_error = np.abs(tau_batch - tau_rnea).max() / tau_scale
    machine.require(batch_error < 1e-10, f"batch Y @ theta differs from pinocchio.rnea by "
                                         f"{batch_error:.2e} (relative)")
    joint_frame_theta = np.concatenate([model.inertias[i + 1].toDynamicParameters()
                                        for i in range(n)])
    baseline_error = np.abs(Y_pinocchio[:len(checked)] @ joint_frame_theta
                            - tau_rnea).max() / tau_scale
    machine.require(baseline_error < 1e-10, "pinocchio regressor @ joint-frame parameters "
                                            f"differs from rnea by {baseline_error:.2e}")

    friction = regressor.slices["friction"]
    coulomb = Y_batch[:, np.arange(n), friction.start + 2 * np.arange(n)]
    viscous = Y_batch[:, np.arange(n), friction.start + 2 * np.arange(n) + 1]
    friction_error = max(np.abs(coulomb - np.sign(qd)).max(), np.abs(viscous - qd).max())
    machine.require(friction_error < 1e-12, f"friction columns differ from sgn(qd), qd by "
                                            f"{friction_error:.2e}")
    return {"compute_one": one_error, "batch_vs_rnea": batch_error,
            "pinocchio_vs_rnea": baseline_error, "friction": friction_error}


def interleaved_best(paths: dict, rounds: int) -> dict:
    """Best wall time [s] of each ``{name: function}``, timed in ``rounds`` alternating
    rounds."""
    best = {name: float("inf") for name in paths}
    for _ in range(rounds):
        for name, function in paths.items():
            start = time.perf_counter()
            function()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def run(quick: bool = False) -> machine.BenchmarkResult:
    """Time the paths and cross-check them (see the module docstring)."""
    machine_description = machine.describe_machine()
    n_samples, rounds = (1000, 2) if quick else (10000, 7)
    rng = np.random.default_rng(20260522)
    regressor = machine.ur5_regressor()
    q, qd, qdd = machine.random_states(regressor.robot, n_samples, rng)
    n, p = regressor.n_joints, regressor.n_parameters

    Y_batch = np.empty((n_samples, n, p))
    model = build_pinocchio_model(regressor.robot)
    data = model.createData()
    Y_pinocchio = np.empty((n_samples, n, 10 * n))

    def pinocchio_loop():
        for k in range(n_samples):
            Y_pinocchio[k] = pin.computeJointTorqueRegressor(model, data, q[k], qd[k], qdd[k])

    def compute_one_loop():
        for k in range(n_samples):
            regressor.compute_one(q[k], qd[k], qdd[k])

    clock = time.perf_counter()
    regressor.compute(q, qd, qdd, out=Y_batch)
    first = time.perf_counter() - clock
    pinocchio_loop()
    times = interleaved_best({
        "batch": lambda: regressor.compute(q, qd, qdd, out=Y_batch),
        "batch_allocating": lambda: regressor.compute(q, qd, qdd),
        "pinocchio_loop": pinocchio_loop,
    }, rounds)
    times.update(interleaved_best({"compute_one": compute_one_loop}, max(1, rounds // 3)))

    errors = cross_check(regressor, Y_batch, Y_pinocchio, q, qd, qdd, rng)
    rates = {name: n_samples / seconds for name, seconds in times.items()}
    ratio = rates["batch"] / rates["pinocchio_loop"]
    goals = (
        machine.Goal("batch into a preallocated array / pinocchio loop, samples/s",
                     f">= {GOAL_RATIO:.0f}x", f"{ratio:.1f}x", ratio >= GOAL_RATIO),
        machine.Goal("batch throughput", "info", f"{machine.rate(rates['batch'])} samples/s",
                     None),
        machine.Goal("batch allocating its output / pinocchio loop", "info",
                     f"{rates['batch_allocating'] / rates['pinocchio_loop']:.1f}x", None),
        machine.Goal("compute_one / pinocchio loop", "info",
                     f"{rates['compute_one'] / rates['pinocchio_loop']:.2f}x", None),
    )

    def row(label, columns, value):
        return [label, columns, machine.rate(value), f"{1e6 / value:.2f}",
                f"{value / rates['pinocchio_loop']:.2f}x"]

    rows = [row("`Regressor.compute(..., out=Y)`, preallocated (batch)", f"{n} x {p}",
                rates["batch"]),
            row("`Regressor.compute(...)`, allocating", f"{n} x {p}", rates["batch_allocating"]),
            row("`Regressor.compute_one` loop", f"{n} x {p}", rates["compute_one"]),
            row("baseline: `pinocchio.computeJointTorqueRegressor` loop", f"{n} x {10 * n}",
                rates["pinocchio_loop"])]
    details = (f"N = {n_samples} random states of the UR5 with coulomb_viscous friction (best of "
               f"{rounds} interleaved rounds; first batch call {first * 1e3:.1f} ms).\n\n"
               + machine.markdown_table(
                   ["Path", "Y per sample", "samples/s", "us/sample", "vs baseline"], rows)
               + "\nCross-checks (max error relative to the largest entry): batch vs "
               f"`compute_one` {errors['compute_one']:.1e}; batch `Y @ theta` vs "
               f"`pinocchio.rnea` {errors['batch_vs_rnea']:.1e}; baseline regressor vs `rnea` "
               f"{errors['pinocchio_vs_rnea']:.1e}; friction columns vs `sgn(qd)`, `qd` "
               f"{errors['friction']:.1e}.\n")
    notes = (
        "The batch produces 72 columns per joint (inertial in link-frame parameters plus "
        "friction); the baseline only pinocchio's 60 inertial columns in joint-frame "
        "parameters, so the ratio understates the batch's advantage slightly.",
        "The batch is a C kernel (robot_dynid/_regressor_kernel.c): four samples per vector "
        "register, rows assembled in an L1-resident tile and streamed to memory. Writing the "
        "3.5 kB of Y per sample is a large part of its time; an array allocated by the call "
        "also pays first-touch page faults, which is why identification reuses one chunk "
        "buffer (`compute(..., out=)`).",
        "`compute_one` runs the same kernel on one sample; its time is Python call overhead "
        "(input checks, friction columns).",
    )
    return machine.BenchmarkResult(
        name=NAME, title="Regressor throughput (UR5, 6 DOF, coulomb_viscous friction)",
        goals=goals, details=details, notes=notes, machine=machine_description, quick=quick,
        values={"n_samples": n_samples, "rates": rates, "ratio": ratio, "errors": errors})


if __name__ == "__main__":
    sys.exit(machine.benchmark_main(run, __doc__.splitlines()[0]))
