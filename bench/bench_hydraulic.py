"""Hydraulic cylinders: RLS update cost per cylinder-sample (one and six cylinders), kinematics of six.

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

Cylinder kinematics: ``CylinderGeometry.motion`` (x, x', x'', moment arms) of the six cylinders on the
arm (c1 anchored to the world, c2..c6 across one joint each) along 10 minutes of a joint motion at 50 Hz
(each joint its own sine), per sample, against the implementation it replaced (source c67c480), timed in
the same run on the first PREVIOUS_SAMPLES samples: per sample, ``length_and_arms`` by pinocchio frame
Jacobians at ``q`` and at ``q +- h q'`` (x'' by a central difference of the moment arms along q'). Goal:
at least 10x faster. Cross-check (AssertionError): both give x, x' and the moment arms to 1e-12 m and x''
to 1e-7 m/s^2 (the central difference's error).
"""
from __future__ import annotations

import sys
import time

import numpy as np
import pinocchio as pin

import machine
from robot_dynid.estimation.estimators import RecursiveLeastSquares
from robot_dynid.hydraulics import simulation
from robot_dynid.hydraulics.attachment import WORLD, CylinderGeometry
from robot_dynid.hydraulics.cylinder import (cylinder_regressor, identify_cylinder, known_force,
                                             nominal_scales)
from robot_dynid.recordings.signal_processing import differentiate

NAME = "hydraulic"
GOAL_SECONDS = 1e-4           # per cylinder-sample
DURATION = 252.0              # s of bench data (two periods of the paper's slow sine)
QUICK_DURATION = 40.0
ARM_DURATION = 600.0          # s of arm motion at 50 Hz for CylinderGeometry.motion
QUICK_ARM_DURATION = 20.0
PREVIOUS_SAMPLES = 1000       # samples the previous implementation is timed on
QUICK_PREVIOUS_SAMPLES = 100
GEOMETRY_GOAL_RATIO = 10.0
DIRECTIONAL_STEP = 1e-6       # s, the previous implementation's central difference along q'


def previous_motion(geometry: CylinderGeometry, q, qd, qdd):
    """x, x', x'' (N, c) and moment arms (N, c, n) as ``CylinderGeometry.motion`` computed them up to
    source c67c480 (two-point attachments only), with a workspace of its own."""
    model, data = geometry.model, geometry.model.createData()
    frames = {name: model.getFrameId(f"{name}_link") for name in geometry.robot.joint_names}

    def point_kinematics(point):
        if point.link == WORLD:
            return np.asarray(point.point, dtype=float), np.zeros((3, geometry.n_joints))
        frame = frames[point.link]
        placement = data.oMf[frame]
        position = placement.act(np.asarray(point.point, dtype=float))
        jacobian = pin.getFrameJacobian(model, data, frame, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        return position, jacobian[:3] - pin.skew(position - placement.translation) @ jacobian[3:]

    def length_and_arms(sample):
        pin.computeJointJacobians(model, data, sample)
        pin.updateFramePlacements(model, data)
        lengths, arms = np.empty(len(geometry.attachments)), np.zeros((len(geometry.attachments), geometry.n_joints))
        for index, attachment in enumerate(geometry.attachments):
            base, base_jacobian = point_kinematics(attachment.base)
            rod, rod_jacobian = point_kinematics(attachment.rod)
            lengths[index] = float(np.linalg.norm(rod - base))
            arms[index] = ((rod - base) / lengths[index]) @ (rod_jacobian - base_jacobian)
        return lengths, arms

    lengths, arms = (np.array(values) for values in zip(*(length_and_arms(sample) for sample in q)))
    arm_rates = np.array([(length_and_arms(sample + DIRECTIONAL_STEP * rate)[1]
                           - length_and_arms(sample - DIRECTIONAL_STEP * rate)[1]) / (2.0 * DIRECTIONAL_STEP)
                          for sample, rate in zip(q, qd)])
    xd = np.einsum("kcn,kn->kc", arms, qd)
    xdd = np.einsum("kcn,kn->kc", arms, qdd) + np.einsum("kcn,kn->kc", arm_rates, qd)
    offsets = np.array([attachment.reference_length for attachment in geometry.attachments])
    return lengths - offsets, xd, xdd, arms


def arm_motion(n_joints: int, duration: float, rate: float = 50.0):
    """q [rad], qd [rad/s], qdd [rad/s^2] (N, n): joint j moves as 0.2..0.45 rad sin(w_j t), w_j 0.3..1.1 rad/s."""
    time = np.arange(0.0, duration, 1.0 / rate)[:, None]
    amplitude, frequency = np.linspace(0.2, 0.45, n_joints), np.linspace(0.3, 1.1, n_joints)
    return (amplitude * np.sin(frequency * time), amplitude * frequency * np.cos(frequency * time),
            -amplitude * frequency**2 * np.sin(frequency * time))


def geometry_timings(robot, configs, quick: bool) -> dict:
    """Seconds per sample of ``CylinderGeometry.motion`` and of :func:`previous_motion`, and their
    largest differences (module docstring)."""
    geometry = CylinderGeometry(robot, [config.attachment for config in configs], [config.name for config in configs])
    q, qd, qdd = arm_motion(robot.n_joints, QUICK_ARM_DURATION if quick else ARM_DURATION)
    start = time.perf_counter()
    motion = geometry.motion(q, qd, qdd)
    seconds = time.perf_counter() - start
    count = QUICK_PREVIOUS_SAMPLES if quick else PREVIOUS_SAMPLES
    start = time.perf_counter()
    previous = previous_motion(geometry, q[:count], qd[:count], qdd[:count])
    previous_seconds = time.perf_counter() - start
    differences = {name: float(np.abs(new[:count] - old).max()) for name, new, old in
                   zip(("x", "xd", "xdd", "moment_arms"), (motion.x, motion.xd, motion.xdd, motion.moment_arms),
                       previous)}
    for name, tolerance in (("x", 1e-12), ("xd", 1e-12), ("moment_arms", 1e-12), ("xdd", 1e-7)):
        machine.require(differences[name] < tolerance, f"CylinderGeometry.motion {name} differs from the previous "
                                                       f"implementation by {differences[name]:.1e}")
    return {"samples": q.shape[0], "seconds": seconds, "per_sample": seconds / q.shape[0],
            "previous_samples": count, "previous_per_sample": previous_seconds / count, "differences": differences}


def run(quick: bool = False) -> machine.BenchmarkResult:
    machine_description = machine.describe_machine()
    duration = QUICK_DURATION if quick else DURATION
    robot = _robot()
    configs = simulation.curtain_wall_cylinders(robot)
    geometry = geometry_timings(robot, configs, quick)
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
    speedup = geometry["previous_per_sample"] / geometry["per_sample"]
    goals = (
        machine.Goal("online RLS update, one cylinder [ms per cylinder-sample]", f"< {GOAL_SECONDS * 1e3:g}",
                     f"{one_seconds * 1e3:.4f}", one_seconds < GOAL_SECONDS),
        machine.Goal("online RLS update, six cylinders [ms per cylinder-sample]", f"< {GOAL_SECONDS * 1e3:g}",
                     f"{six_seconds * 1e3:.4f}", six_seconds < GOAL_SECONDS),
        machine.Goal("`CylinderGeometry.motion`, six cylinders, per sample: previous / now",
                     f">= {GEOMETRY_GOAL_RATIO:g}x", f"{speedup:.1f}x ({geometry['previous_per_sample'] * 1e3:.3f} -> "
                     f"{geometry['per_sample'] * 1e3:.4f} ms)", speedup >= GEOMETRY_GOAL_RATIO),
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
          f"fc, fv, fs relative errors {', '.join(f'{value:.2%}' for value in error)} (Table V, 1 kPa noise).\n\n"
        + f"Cylinder kinematics: six cylinders on the curtain-wall arm, {geometry['samples']:,} samples "
          f"({geometry['samples'] / 50.0:g} s at 50 Hz) of joint sines; the previous implementation on the first "
          f"{geometry['previous_samples']:,}.\n\n"
        + machine.markdown_table(
            ["Path", "ms per sample", "samples/s", "10 min at 50 Hz [s]"],
            [["`CylinderGeometry.motion`, six cylinders, per sample (one pinocchio call per sample, numpy "
              "over the samples)", f"{geometry['per_sample'] * 1e3:.4f}", machine.rate(1.0 / geometry["per_sample"]),
              f"{geometry['per_sample'] * 30000:.1f}"],
             ["baseline: the previous `CylinderGeometry.motion` (c67c480): per sample, pinocchio frame Jacobians "
              "at q and q +- h q'", f"{geometry['previous_per_sample'] * 1e3:.3f}",
              machine.rate(1.0 / geometry["previous_per_sample"]), f"{geometry['previous_per_sample'] * 30000:.1f}"]])
        + "\nCross-check, largest difference from the previous implementation: "
        + ", ".join(f"{name} {value:.1e}" for name, value in geometry["differences"].items())
        + " (x'' now from pinocchio's Jacobian time derivative, before by a central difference).\n")
    return machine.BenchmarkResult(
        name=NAME, title="Hydraulic cylinders: RLS and kinematics (curtain-wall arm, Table V, 50 Hz)",
        goals=goals, details=details, notes=("Message conversion and differentiation are not included.",),
        machine=machine_description, quick=quick,
        values={"one_cylinder_seconds": one_seconds, "six_cylinders_seconds": six_seconds,
                "geometry": geometry})


def _robot():
    from pathlib import Path

    from robot_dynid.model.robot_loader import load_robot
    return load_robot(Path(__file__).resolve().parents[1] / "config" / "robots" / "curtain_wall_arm.yaml")


if __name__ == "__main__":
    sys.exit(machine.benchmark_main(run, __doc__.splitlines()[0]))
