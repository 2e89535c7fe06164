"""Identification from one hour at 1 kHz (3.6 million samples, 6 joints, coulomb_viscous
friction): wall time and peak memory.

Data: UR5 (config/robots/ur5.yaml) on a 5-harmonic Fourier trajectory (period 10 s, random
coefficients scaled to 80 % of the velocity and acceleration limits), torques from the
regressor with physically consistent parameters plus white noise (0.5 N m).

Paths, in one process:

1. ``identify(recording, robot, settings)`` on a :class:`Recording` held in memory (the
   end-to-end path of ``robot-dynid identify``): wall time and the process's peak resident
   memory while it runs, which includes the recording itself (25 doubles per sample: time,
   q, qd, qdd, tau).
2. streaming: the same data generated chunk by chunk from the trajectory and folded into a
   ``LeastSquaresAccumulator`` through the regressor (the explicit path, which ``identify`` takes
   with low-pass filtering, file offsets or RLS; without them it fuses the regressor with the
   products, timed by bench_fused.py), each stage timed: trajectory, regressor, base columns,
   accumulator. As a baseline for the
   accumulator, the per-joint Gram matrices of the first REFERENCE_SAMPLES samples are also
   formed with plain BLAS products (``Y_j.T @ Y_j``), timed apart and excluded from the
   path's time.

Building the recording (trajectory, torques, ``Recording.from_arrays`` copies) is measured
separately and not part of path 1. Peak memory is ``VmHWM`` reset through
``/proc/self/clear_refs`` before each path (see ``machine.PeakMemory``). When ``identify``
misses its time goal, it is profiled with cProfile on the first 10 minutes of the recording.

Cross-checks (AssertionError): every identified base parameter lies within 6 standard
deviations of the true one, ``K @ theta_true``; the accumulator's Gram matrices equal the BLAS
baseline's on the same samples.
"""
from __future__ import annotations

import cProfile
import gc
import io
import pstats
import sys
import time

import numpy as np

import machine
from robot_dynid.estimation.estimators import LeastSquaresAccumulator
from robot_dynid.estimation.identification import IdentificationSettings, identify
from robot_dynid.experiment.trajectories import FourierTrajectory
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.recordings.recording import Recording

NAME = "identification"
SAMPLE_RATE = 1000.0          # [Hz]
FULL_DURATION = 3600.0        # [s]
QUICK_DURATION = 60.0         # [s]
PERIOD = 10.0                 # [s]
HARMONICS = 5
LIMIT_FRACTION = 0.8
NOISE_STD = 0.5               # [N m]
CHUNK_SIZE = IdentificationSettings().chunk_size
GOAL_SECONDS = 30.0
GOAL_BYTES = 1e9
PROFILED_SAMPLES = 600_000
#: The BLAS baseline of the accumulator runs on the chunks within the first this many samples.
REFERENCE_SAMPLES = 200_000
PROFILE_ROWS = 8
#: Calls whose cumulative time the profile reports: (module file, function).
KEY_CALLS = (("identification.py", "identify"), ("estimators.py", "add"),
             ("regressor.py", "compute"), ("base_parameters.py", "select"),
             ("base_parameters.py", "compute_base_parameters"), ("estimators.py", "solve"))


def excitation_trajectory(robot, rng) -> FourierTrajectory:
    """Random Fourier trajectory scaled to LIMIT_FRACTION of the velocity and acceleration
    limits (checked on a 1 ms grid over one period), centred at q0 = 0."""
    a = rng.normal(size=(robot.n_joints, HARMONICS))
    b = rng.normal(size=(robot.n_joints, HARMONICS))
    raw = FourierTrajectory(robot.joint_names, PERIOD, np.zeros(robot.n_joints), a, b)
    _, qd, qdd = raw.evaluate(np.arange(0.0, PERIOD, 1.0 / SAMPLE_RATE))
    velocity = np.array([limits.velocity for limits in robot.limits])
    acceleration = np.array([limits.acceleration for limits in robot.limits])
    scale = LIMIT_FRACTION * np.minimum(velocity / np.abs(qd).max(axis=0),
                                        acceleration / np.abs(qdd).max(axis=0))
    return FourierTrajectory(robot.joint_names, PERIOD, np.zeros(robot.n_joints),
                             a * scale[:, None], b * scale[:, None])


def _chunks(n_samples: int):
    for start in range(0, n_samples, CHUNK_SIZE):
        yield start, min(start + CHUNK_SIZE, n_samples)


def build_recording(regressor, trajectory, theta, n_samples: int, rng) -> Recording:
    """The whole recording in memory: trajectory and noisy torques chunk by chunk."""
    time_s = np.arange(n_samples) / SAMPLE_RATE
    n = regressor.n_joints
    q, qd, qdd, tau = (np.empty((n_samples, n)) for _ in range(4))
    for start, stop in _chunks(n_samples):
        q[start:stop], qd[start:stop], qdd[start:stop] = trajectory.evaluate(time_s[start:stop])
        tau[start:stop] = regressor.torque(theta, q[start:stop], qd[start:stop],
                                           qdd[start:stop])
        tau[start:stop] += rng.normal(scale=NOISE_STD, size=(stop - start, n))
    return Recording.from_arrays(regressor.robot.joint_names, time_s, q, qd, qdd, tau,
                                 source="bench: UR5 Fourier excitation")


def stream(regressor, base, trajectory, theta, n_samples: int, rng) -> dict:
    """Generate and accumulate chunk by chunk; seconds per stage and the OLS result."""
    stages = dict.fromkeys(("trajectory", "regressor", "torque", "base columns",
                            "accumulator", "solve"), 0.0)
    accumulator = LeastSquaresAccumulator(regressor.n_joints, base.rank)
    n = regressor.n_joints
    reference_gram = np.zeros((n, base.rank, base.rank))
    reference_seconds, reference_samples, reference = 0.0, 0, None
    buffer = np.empty((min(CHUNK_SIZE, n_samples), n, regressor.n_parameters))  # as identify()
    for start, stop in _chunks(n_samples):
        clock = time.perf_counter()
        q, qd, qdd = trajectory.evaluate(np.arange(start, stop) / SAMPLE_RATE)
        stages["trajectory"] += time.perf_counter() - clock
        clock = time.perf_counter()
        Y = regressor.compute(q, qd, qdd, out=buffer[:stop - start])
        stages["regressor"] += time.perf_counter() - clock
        clock = time.perf_counter()
        tau = np.einsum("kjp,p->kj", Y, theta) + rng.normal(scale=NOISE_STD, size=(stop - start, n))
        stages["torque"] += time.perf_counter() - clock
        clock = time.perf_counter()
        Y_base = base.select(Y)
        stages["base columns"] += time.perf_counter() - clock
        clock = time.perf_counter()
        accumulator.add(Y_base, tau)
        stages["accumulator"] += time.perf_counter() - clock
        if start < REFERENCE_SAMPLES:
            clock = time.perf_counter()
            for j in range(n):
                reference_gram[j] += Y_base[:, j, :].T @ Y_base[:, j, :]
            reference_seconds += time.perf_counter() - clock
            reference_samples, reference = stop, accumulator.gram_.copy()
    clock = time.perf_counter()
    result = accumulator.solve("ols", parameter_names=base.names)
    stages["solve"] += time.perf_counter() - clock
    gram_error = np.abs(reference_gram - reference).max() / np.abs(reference_gram).max()
    machine.require(gram_error < 1e-12, f"accumulator Gram matrices differ from per-joint "
                                        f"Y_j^T Y_j by {gram_error:.2e} (relative)")
    return {"stages": stages, "result": result, "reference_seconds": reference_seconds,
            "reference_samples": reference_samples}


def profile_identify(recording, robot, settings, base) -> str:
    """cProfile of identify() on the first PROFILED_SAMPLES samples, as a Markdown table."""
    subset = recording.take(slice(0, min(PROFILED_SAMPLES, recording.n_samples)))
    profiler = cProfile.Profile()
    profiler.enable()
    identify(subset, robot, settings, base=base)
    profiler.disable()
    stats = pstats.Stats(profiler, stream=io.StringIO()).stats
    total = sum(entry[2] for entry in stats.values())

    def label(filename, line, function):
        if filename == "~":
            return f"`{function}`"
        location = filename.replace(str(machine.REPOSITORY) + "/", "").split("site-packages/")[-1]
        return f"`{function}` ({location}:{line})"

    own = [[label(*key), entry[1], f"{entry[2]:.2f}", f"{100 * entry[2] / total:.0f} %"]
           for key, entry in sorted(stats.items(), key=lambda item: -item[1][2])[:PROFILE_ROWS]]
    cumulative = [[label(*key), entry[1], f"{entry[3]:.2f}", f"{100 * entry[3] / total:.0f} %"]
                  for key, entry in stats.items()
                  if (key[0].rsplit("/", 1)[-1], key[2]) in KEY_CALLS]
    cumulative.sort(key=lambda row: -float(row[2]))
    header = ["Function", "calls", "time [s]", "share"]
    return (f"cProfile of `identify()` (base parameters given) on the first "
            f"{subset.n_samples:,} samples "
            f"({total:.2f} s in total). Main calls, time including callees:\n\n"
            + machine.markdown_table(header, cumulative)
            + "\nFunctions by own time:\n\n" + machine.markdown_table(header, own))


def _within_std(values, std, truth) -> float:
    """Largest ``|value - truth| / std``."""
    return float(np.max(np.abs(values - truth) / std))


def workload(quick: bool):
    """``(duration [s], n_samples, rng, regressor, theta, trajectory)`` of the data (module docstring),
    the random generator after drawing them (bench_fused.py uses the same)."""
    duration = QUICK_DURATION if quick else FULL_DURATION
    rng = np.random.default_rng(20260522)
    regressor = machine.ur5_regressor()
    theta = machine.physical_parameters(regressor, rng)
    trajectory = excitation_trajectory(regressor.robot, rng)
    return duration, int(round(duration * SAMPLE_RATE)), rng, regressor, theta, trajectory


def run(quick: bool = False) -> machine.BenchmarkResult:
    """Build the data, run both paths, check accuracy (see the module docstring)."""
    machine_description = machine.describe_machine()
    duration, n_samples, rng, regressor, theta, trajectory = workload(quick)
    robot = regressor.robot
    settings = IdentificationSettings(friction=regressor.friction)
    memory = machine.PeakMemory()

    memory.reset()
    clock = time.perf_counter()
    recording = build_recording(regressor, trajectory, theta, n_samples, rng)
    gc.collect()
    build_seconds = time.perf_counter() - clock
    build_peak = memory.peak()

    gc.collect()
    memory.reset()
    held = memory.current()
    clock = time.perf_counter()
    model = identify(recording, robot, settings)
    identify_seconds = time.perf_counter() - clock
    identify_peak = memory.peak()
    truth = model.base.projection @ theta
    identify_deviation = _within_std(model.values, model.std, truth)
    machine.require(identify_deviation < 6.0, "identify(): a base parameter is "
                                              f"{identify_deviation:.1f} std from the truth")

    profile = ""
    if identify_seconds > GOAL_SECONDS * n_samples / (FULL_DURATION * SAMPLE_RATE):
        profile = profile_identify(recording, robot, settings, model.base)
    del recording
    gc.collect()

    memory.reset()
    streaming_held = memory.current()
    clock = time.perf_counter()
    streamed = stream(regressor, model.base, trajectory, theta, n_samples,
                      np.random.default_rng(7))
    stream_seconds = time.perf_counter() - clock - streamed["reference_seconds"]
    stream_peak = memory.peak()
    stream_deviation = _within_std(streamed["result"].theta, streamed["result"].std, truth)
    machine.require(stream_deviation < 6.0, "streaming: a base parameter is "
                                            f"{stream_deviation:.1f} std from the truth")
    base_seconds = machine.best_time(lambda: compute_base_parameters(regressor), 1)

    time_target = f"< {GOAL_SECONDS:.0f} s" + (" for 3.6 M samples" if quick else "")
    goals = (
        machine.Goal(f"`identify()` wall time, {n_samples:,} samples", time_target,
                     f"{identify_seconds:.1f} s",
                     None if quick else identify_seconds < GOAL_SECONDS),
        machine.Goal("`identify()` process peak memory (recording included)",
                     f"< {GOAL_BYTES / 1e9:.0f} GB", machine.megabytes(identify_peak),
                     None if quick else identify_peak < GOAL_BYTES),
        machine.Goal("streaming wall time (data generated on the fly)", time_target,
                     f"{stream_seconds:.1f} s", None if quick else stream_seconds < GOAL_SECONDS),
        machine.Goal("streaming process peak memory", f"< {GOAL_BYTES / 1e9:.0f} GB",
                     machine.megabytes(stream_peak), None if quick else stream_peak < GOAL_BYTES),
    )
    stages = streamed["stages"]
    stage_total = sum(stages.values())
    stage_rows = [[stage, f"{seconds:.2f}", f"{100 * seconds / stage_total:.0f} %",
                   f"{1e6 * seconds / n_samples:.2f}"] for stage, seconds in stages.items()]
    reference_per_sample = streamed["reference_seconds"] / streamed["reference_samples"]
    accumulator_per_sample = stages["accumulator"] / n_samples
    stage_rows.append([f"(baseline, not in the path) per-joint BLAS `Y_j.T @ Y_j`, first "
                       f"{streamed['reference_samples']:,} samples",
                       f"{streamed['reference_seconds']:.2f}", "-",
                       f"{1e6 * reference_per_sample:.2f}"])
    memory_note = ("peak = VmHWM after a reset through /proc/self/clear_refs"
                   if memory.resettable else
                   "peak = ru_maxrss, the lifetime maximum of the process (could not reset)")
    details = (
        f"{n_samples:,} samples ({duration:g} s at {SAMPLE_RATE:g} Hz), {robot.n_joints} "
        f"joints, {regressor.n_parameters} standard / {model.base.rank} base parameters, "
        f"chunks of {CHUNK_SIZE} samples, OLS; {memory_note}.\n\n"
        + machine.markdown_table(
            ["Path", "wall [s]", "us/sample", "resident before", "peak"],
            [["building the recording (not timed as identification)", f"{build_seconds:.1f}",
              f"{1e6 * build_seconds / n_samples:.2f}", "-", machine.megabytes(build_peak)],
             ["`identify(recording)`", f"{identify_seconds:.1f}",
              f"{1e6 * identify_seconds / n_samples:.2f}", machine.megabytes(held),
              machine.megabytes(identify_peak)],
             ["streaming chunks into `LeastSquaresAccumulator`", f"{stream_seconds:.1f}",
              f"{1e6 * stream_seconds / n_samples:.2f}", machine.megabytes(streaming_held),
              machine.megabytes(stream_peak)],
             ["`compute_base_parameters` (inside `identify`)", f"{base_seconds:.2f}", "-", "-",
              "-"]])
        + "\nStreaming path, time per stage (accumulator / BLAS baseline per sample: "
          f"{accumulator_per_sample / reference_per_sample:.2f}x):\n\n"
        + machine.markdown_table(["Stage", "seconds", "share", "us/sample"], stage_rows)
        + f"\nAccuracy: identified base parameters within {identify_deviation:.1f} "
          f"(`identify`) and {stream_deviation:.1f} (streaming) standard deviations of "
          f"`K @ theta_true`; condition number {model.metrics['condition_number']:.3g}.\n"
        + ("\n" + profile if profile else ""))
    backend = getattr(regressor, "backend", "numpy")
    notes = [
        f"The recording alone holds {25 * 8 * n_samples / 1e6:.0f} MB (25 float64 per "
        "sample); `Recording.from_arrays` copies its inputs, so building it needs about twice "
        "that.",
        "`identify()` includes `compute_base_parameters` (a fixed cost, see the table); the "
        "streaming path reuses the base parameters `identify()` found.",
        "`identify()` accumulates by the fused kernel (no low-pass, file offsets or RLS here): Y is never "
        "written; the streaming path above is the explicit one (regressor, base columns, accumulator), which "
        "`identify()` keeps for those options. The fused section times both on the same data from a file.",
    ]
    if backend != "numpy":
        notes.append(f"The regressor backend is {backend}: it is compiled (or loaded from its "
                     "cache) while the recording is built, so `identify()` here does not pay "
                     "that; a fresh process does (first-call time in the regressor section).")
    return machine.BenchmarkResult(
        name=NAME, title="Identification from 1 h at 1 kHz (UR5, 6 DOF, coulomb_viscous)",
        goals=goals, details=details, notes=tuple(notes), machine=machine_description,
        quick=quick, values={"n_samples": n_samples, "identify_seconds": identify_seconds,
                             "identify_peak_bytes": identify_peak, "stream_seconds": stream_seconds,
                             "stream_peak_bytes": stream_peak, "build_seconds": build_seconds,
                             "build_peak_bytes": build_peak, "stages": stages})


if __name__ == "__main__":
    sys.exit(machine.benchmark_main(run, __doc__.splitlines()[0]))
