"""What the robust covariance costs and whether its intervals hold.

1. Cost: ``identify()`` of ten minutes at 1 kHz (the data of bench_identification.py: UR5, 5-harmonic Fourier
   trajectory of period 10 s, regressor torques with 0.5 N m white noise), wall time and peak memory, and its
   parts (best of three) with and without the time blocks of the ``block`` covariance, in the same run: the fused
   accumulation
   into a ``LeastSquaresAccumulator`` with blocks (one kernel call per block) and without, finding the motion's
   period (``phase_times``), and the solve with the jackknife and with the per-joint sandwich only.
2. Coverage (test/core/estimation/test_covariance.py's study, more repetitions): the ER3A identified by OLS and
   WLS from recordings of test/real_world.py (pinocchio RNEA torques, exact Coulomb friction, per-joint noise
   1-10 % of each joint's RMS torque, AR(1) rho 0.9, a 2 % ripple, a 10 s period played twice, 100 Hz); the share
   of 95 % intervals holding the true base parameters, per std and per parameter class.
3. Payloads (test/core/estimation/test_payload_transfer.py's data): a 2.8 kg tool on the UR5 with the arm's model
   5 % off on every link, mass error and 95 % interval with and without ``--unloaded``, over several excitations.
"""
from __future__ import annotations

import gc
import logging
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

import machine
from bench_identification import build_recording, workload
from robot_dynid.estimation.covariance import phase_times
from robot_dynid.estimation.estimators import LeastSquaresAccumulator
from robot_dynid.estimation.identification import IdentificationSettings, identify
from robot_dynid.estimation.normal_equations import accumulate_recording
from robot_dynid.estimation.payload import (PayloadSettings, differential_recording, identify_payload,
                                            payload_accumulator, solve_payload)
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.friction import friction_model
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test"))
from real_world import Effects, excitation, model_off, simulate, with_true_accelerations  # noqa: E402

NAME = "covariance"
DURATION = 600.0              # [s] of the cost measurement
QUICK_DURATION = 60.0
REPETITIONS = 100
QUICK_REPETITIONS = 20
PAYLOAD_RUNS = 10
REPEAT = 3                    # the parts of the cost: best of this many
QUICK_PAYLOAD_RUNS = 3
NOISE_FRACTION = np.array([0.01, 0.02, 0.03, 0.05, 0.1, 0.03])
TOOL = (2.8, np.array([0.01, -0.02, 0.08]),                     # kg, m and kg m^2 in the UR5's last link frame
        np.array([[0.01, 0.001, -0.002], [0.001, 0.012, 0.0005], [-0.002, 0.0005, 0.008]]))
PAYLOAD_NOISE = np.array([0.01, 0.01, 0.02, 0.03, 0.05, 0.05])


def cost(quick: bool) -> tuple[list, dict]:
    """Rows of the cost table and the raw numbers."""
    _, _, rng, regressor, theta, trajectory = workload(True)
    duration = QUICK_DURATION if quick else DURATION
    n_samples = int(round(duration * 1000.0))
    recording = build_recording(regressor, trajectory, theta, n_samples, rng)
    robot = regressor.robot
    settings = IdentificationSettings(friction=regressor.friction)
    base = compute_base_parameters(regressor)
    memory = machine.PeakMemory()
    gc.collect()
    memory.reset()
    held = memory.current()
    clock = time.perf_counter()
    model = identify(recording, robot, settings, base=base)
    identify_seconds = time.perf_counter() - clock
    identify_peak = memory.peak()
    machine.require(model.std_method == "block", f"identify reported {model.std_method} std, not block")
    timings = {"phase": machine.best_time(lambda: phase_times(recording.time, recording.cycle, recording.q), REPEAT)}
    phase = phase_times(recording.time, recording.cycle, recording.q)
    accumulators = {}
    for blocks in (True, False):
        def accumulate():
            accumulator = LeastSquaresAccumulator(robot.n_joints, base.rank, blocks=blocks)
            accumulate_recording(accumulator, settings.regressor(robot), base, recording, phase=phase)
            accumulators[blocks] = accumulator

        timings[f"accumulate {blocks}"] = machine.best_time(accumulate, REPEAT)
        timings[f"solve {blocks}"] = machine.best_time(
            lambda: accumulators[blocks].solve("ols", parameter_names=base.names), REPEAT)
        accumulators[blocks] = (accumulators[blocks], None)
    blocks = accumulators[True][0].blocks_
    added = timings["phase"] + timings["accumulate True"] - timings["accumulate False"] \
        + timings["solve True"] - timings["solve False"]
    rows = [["`identify()` (block std, the default), whole", f"{identify_seconds:.2f}", machine.megabytes(held),
             machine.megabytes(identify_peak)],
            ["finding the motion's period (`phase_times`)", f"{timings['phase']:.3f}", "-", "-"],
            [f"fused accumulation, {blocks.n_blocks} blocks of {blocks.block_duration:g} s",
             f"{timings['accumulate True']:.2f}", "-", f"+{machine.megabytes(blocks.nbytes())} (blocks)"],
            ["fused accumulation, no blocks", f"{timings['accumulate False']:.2f}", "-", "-"],
            ["solve with the block jackknife", f"{timings['solve True']:.3f}", "-", "-"],
            ["solve, per-joint sandwich only", f"{timings['solve False']:.3f}", "-", "-"],
            ["**added by the robust covariance**", f"**{added:.2f}**", "-",
             f"**{machine.megabytes(blocks.nbytes())}**"]]
    return rows, {"n_samples": n_samples, "identify_seconds": identify_seconds, "added_seconds": added,
                  "block_bytes": blocks.nbytes(), "n_blocks": blocks.n_blocks, "identify_peak": identify_peak,
                  **timings}


def coverage(quick: bool) -> tuple[list, dict]:
    """Rows of the coverage table (method, std, inertial, friction, all, worst parameter)."""
    robot = load_robot(find_package_file("config", "robots", "er3a.yaml"))
    rows, values = [], {}
    for method in ("ols", "wls"):
        settings = IdentificationSettings(friction=friction_model("coulomb_viscous"), friction_side="joint",
                                          check_torque_scale=False, method=method)
        base = compute_base_parameters(settings.regressor(robot))
        friction = np.array([name.startswith("f") for name in base.names])
        hits = {"white": [], "per_joint": [], "block": []}
        for seed in range(QUICK_REPETITIONS if quick else REPETITIONS):
            motion = excitation(robot, seed=100 + seed, period=10.0)
            clean = simulate(robot, motion, 20.0, 100.0, Effects(noise=0.0), seed=seed)
            ripple = 0.02 * np.sqrt(np.mean(clean.truth.tau**2, axis=0))
            sim = simulate(robot, motion, 20.0, 100.0, Effects(noise_fraction=NOISE_FRACTION, rho=0.9, ripple=ripple),
                           seed=seed)
            accumulator = LeastSquaresAccumulator(robot.n_joints, base.rank)
            accumulate_recording(accumulator, settings.regressor(robot), base, with_true_accelerations(sim))
            result = accumulator.solve(method)
            truth = sim.truth
            error = np.abs(result.theta - base.projection @ np.concatenate(
                [truth.links, np.ravel(np.column_stack([truth.coulomb, truth.viscous]))]))
            normal = stats.norm.ppf(0.975)
            hits["white"].append(error <= normal * result.uncertainty.white_std)
            hits["per_joint"].append(error <= normal * result.uncertainty.per_joint_std)
            hits["block"].append(error <= stats.t.ppf(0.975, result.uncertainty.interval_dof) * result.std)
        for std, table in hits.items():
            table = np.array(table)
            shares = [table[:, ~friction].mean(), table[:, friction].mean(), table.mean(), table.mean(axis=0).min()]
            values[f"{method} {std}"] = shares
            rows.append([method.upper(), std, *(f"{share:.3f}" for share in shares)])
    return rows, values


def payloads(quick: bool) -> tuple[list, dict]:
    """Rows of the payload table: mass error and 95 % interval, plain and differential, per excitation (the data of
    test/core/estimation/test_payload_transfer.py)."""
    robot = load_robot(find_package_file("config", "robots", "ur5_urdf.yaml"))
    links = plausible_parameters(robot, seed=1)
    model = model_off(robot, links, friction_model("coulomb_viscous"), 0.05)

    def run(seed, noise_seed, load, shift=0.0):
        motion = excitation(robot, seed=seed, period=20.0, amplitude=0.3)
        effects = Effects(noise_fraction=PAYLOAD_NOISE, rho=0.9)
        return with_true_accelerations(simulate(robot, motion, 60.0, 200.0, effects, links=links, payload=load,
                                                seed=noise_seed), shift)

    rows, errors = [], {"plain": [], "differential": [], "covered": [], "plain covered": []}
    for seed in range(11, 11 + (QUICK_PAYLOAD_RUNS if quick else PAYLOAD_RUNS)):
        loaded = run(seed, 1, TOOL)
        differential_data, _ = differential_recording(model, loaded, run(seed, 2, None, shift=3.7))
        estimates = (("plain", identify_payload(model, loaded)),
                     ("differential", solve_payload(payload_accumulator(model, differential_data), robot,
                                                    PayloadSettings())))
        cells = [str(seed)]
        for name, estimate in estimates:
            mass, std, q = estimate.fields[0], estimate.field_std[0], estimate.interval_quantile
            errors[name].append(mass / TOOL[0] - 1.0)
            errors["covered" if name == "differential" else "plain covered"].append(abs(mass - TOOL[0]) <= q * std)
            cells += [f"{100 * (mass / TOOL[0] - 1.0):+.2f} %", f"+-{100 * q * std / TOOL[0]:.2f} %",
                      f"{abs(mass - TOOL[0]) / estimate.white_field_std[0]:.1f}"]
        rows.append(cells)
    return rows, errors


def run(quick: bool = False) -> machine.BenchmarkResult:
    machine_description = machine.describe_machine()
    logging.disable(logging.WARNING)
    try:
        cost_rows, cost_values = cost(quick)
        coverage_rows, coverage_values = coverage(quick)
        payload_rows, payload_values = payloads(quick)
    finally:
        logging.disable(logging.NOTSET)
    minutes = cost_values["n_samples"] / 60000.0
    goals = (
        machine.Goal(f"time the robust covariance adds to `identify()` of {minutes:g} min at 1 kHz",
                     "< 10 % of identify", f"{cost_values['added_seconds']:.2f} s of "
                     f"{cost_values['identify_seconds']:.1f} s",
                     cost_values["added_seconds"] < 0.1 * cost_values["identify_seconds"]),
        machine.Goal("coverage of the 95 % block intervals (OLS, every parameter)", ">= 0.90",
                     f"{coverage_values['ols block'][2]:.3f}", coverage_values["ols block"][2] >= 0.9),
        machine.Goal("differential payload mass within 3 % (5 % arm model error)", "every run",
                     f"largest {100 * max(map(abs, payload_values['differential'])):.2f} %",
                     max(map(abs, payload_values["differential"])) < 0.03),
    )
    details = (
        f"Cost on {cost_values['n_samples']:,} samples (UR5, 48 base parameters, OLS):\n\n"
        + machine.markdown_table(["Path", "wall [s]", "resident before", "peak"], cost_rows)
        + "\nCoverage of the 95 % intervals (t with the blocks' dof for `block`, normal otherwise), share of "
          f"{QUICK_REPETITIONS if quick else REPETITIONS} recordings x parameters:\n\n"
        + machine.markdown_table(["method", "std", "inertial", "friction", "all", "worst parameter"], coverage_rows)
        + "\nPayload (2.8 kg, arm model 5 % off): mass error, 95 % interval half-width, and the error in white-noise "
          "std, plain and with `--unloaded`:\n\n"
        + machine.markdown_table(["excitation seed", "plain error", "plain interval", "plain error / white std",
                                  "differential error", "differential interval",
                                  "differential error / white std"], payload_rows)
        + f"\nDifferential intervals hold the true mass in {sum(payload_values['covered'])} of "
          f"{len(payload_values['covered'])} runs; plain ones in {sum(payload_values['plain covered'])}.\n")
    notes = ("The cost is measured on bench_identification.py's data (one 10 s period repeated): the period is found "
             "and the blocks pool the same stretch of every period.",)
    return machine.BenchmarkResult(NAME, "Robust covariance: cost, coverage, payloads", goals, details, notes,
                                   machine_description, quick,
                                   {"cost": cost_values, "coverage": coverage_values,
                                    "payload": {key: list(map(float, value))
                                                for key, value in payload_values.items()}})


if __name__ == "__main__":
    print(run(quick="--quick" in sys.argv).markdown())
