"""Real files at the kernel's speed: ``robot-dynid identify`` on MCAP, sqlite3 and CSV recordings of 10 min
and 1 h at 1 kHz (6 joints), against the in-memory identification of the same data and a bare read of the
file's bytes (the I/O floor), measured in one run.

Data: as bench_identification.py (UR5, config/robots/ur5.yaml, coulomb_viscous friction, a 5-harmonic
Fourier trajectory at 80 % of the limits, torques from the regressor with physically consistent parameters
plus 0.5 N m white noise), sampled at 1 kHz from absolute ROS time 1.7e9 s:

- MCAP and sqlite3 bags of ``sensor_msgs/msg/JointState`` on ``/joint_states`` (positions, velocities,
  efforts of the 6 joints, frame_id ``base_link``, received 150 us after the stamp), written by rosbags'
  Writer (not by the recorder): the message bytes come from rosbags' CDR serialiser, one message serialised
  and its stamp and values patched per sample (checked against the serialiser on a few hundred messages);
- a CSV file of time, q, qd, tau (17 significant digits) written by numpy.

Rows, each command in a fresh process, REPEATS times, the best wall time (peak resident memory from
``/usr/bin/time``, the largest of the runs):

1. ``robot-dynid identify --robot ur5.yaml --data FILE --friction coulomb_viscous --out model.yaml``;
2. (a) in memory: a fresh process builds the same samples as a :class:`Recording` (not timed) and times
   ``pipeline.run`` (derivatives, conditioning) plus ``identify`` on it;
3. (b) the I/O floor: a fresh process reads the file's bytes (``readinto`` one reused 8 MiB buffer; a bag
   directory's storage files), the file already in the page cache (each file is read once before).

Goals (issue 35): 1 h on MCAP within 8 s and 400 MB peak (its fields kept in files:
robot_dynid.stored_columns), within 3x (in-memory identification + bare read); sqlite3 and CSV within
2x of MCAP's time; the models identified from the three files agree with each other to 1e-10 relative
(the same samples, so the same numbers) and the recordings read by the fast readers equal those of the
general path (rosbags' deserializer, Python CSV parser) bit for bit (the 10 min files).

    .venv/bin/python bench/bench_files.py [--quick] [--hour] [--out BENCHMARKS.md]

``--hour`` adds the 1 h rows (about 1 GB per bag; generating the files takes minutes, not timed).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import machine
from bench_identification import NOISE_STD, SAMPLE_RATE, workload

NAME = "files"
TEN_MINUTES = 600.0           # [s]
HOUR = 3600.0                 # [s]
QUICK_DURATION = 20.0         # [s]
START_NS = 1_700_000_000 * 10**9
RECEIVE_DELAY_NS = 150_000
FRAME_ID = "base_link"
TOPIC = "/joint_states"
GENERATE_CHUNK = 50_000
GOAL_SECONDS = 8.0
GOAL_BYTES = 400e6
GOAL_FLOOR_FACTOR = 3.0
GOAL_FORMAT_FACTOR = 2.0
AGREEMENT = 1e-10
REPEATS = 2
"""Fresh-process runs of each timed row; the best counts (the machine is shared: see its load)."""
ROBOT = machine.ROBOTS / "ur5.yaml"
FRICTION = "coulomb_viscous"


# --------------------------------------------------------------------------- data

def sample_blocks(duration: float):
    """Yield ``(stamps_ns (m,), q, qd, tau (m, 6))`` of the workload, GENERATE_CHUNK samples at a time, and
    the joint names first."""
    _, n_samples, rng, regressor, theta, trajectory = workload(quick=True)
    n_samples = int(round(duration * SAMPLE_RATE))
    yield regressor.robot.joint_names
    for start in range(0, n_samples, GENERATE_CHUNK):
        stop = min(start + GENERATE_CHUNK, n_samples)
        index = np.arange(start, stop)
        t = index / SAMPLE_RATE
        q, qd, qdd = trajectory.evaluate(t)
        tau = regressor.torque(theta, q, qd, qdd) + rng.normal(scale=NOISE_STD, size=q.shape)
        yield START_NS + index * int(1e9 / SAMPLE_RATE), q, qd, tau


def joint_state_rows(typestore, names, stamps_ns, q, qd, tau) -> np.ndarray:
    """CDR bytes (m, L) of JointState messages: one serialised by rosbags, stamps and values patched in."""
    types = typestore.types
    message_type, header_type, time_type = (types["sensor_msgs/msg/JointState"], types["std_msgs/msg/Header"],
                                            types["builtin_interfaces/msg/Time"])

    def serialise(stamp_ns, position, velocity, effort):
        header = header_type(stamp=time_type(sec=int(stamp_ns // 10**9), nanosec=int(stamp_ns % 10**9)),
                             frame_id=FRAME_ID)
        message = message_type(header=header, name=list(names), position=position, velocity=velocity,
                               effort=effort)
        return np.frombuffer(typestore.serialize_cdr(message, "sensor_msgs/msg/JointState"), np.uint8)

    n = len(names)
    marks = [np.full(n, 1000.0 + k) for k in range(3)]
    template = serialise(0, *marks)
    offsets = [template.tobytes().find(mark[:1].tobytes()) for mark in marks]
    rows = np.tile(template, (len(stamps_ns), 1))
    rows[:, 4:8] = (stamps_ns // 10**9).astype("<i4")[:, None].view(np.uint8)
    rows[:, 8:12] = (stamps_ns % 10**9).astype("<u4")[:, None].view(np.uint8)
    for offset, values in zip(offsets, (q, qd, tau)):
        rows[:, offset:offset + 8 * n] = np.ascontiguousarray(values, dtype="<f8").view(np.uint8)
    for index in range(0, len(stamps_ns), max(1, len(stamps_ns) // 100)):
        expected = serialise(int(stamps_ns[index]), q[index], qd[index], tau[index])
        machine.require(np.array_equal(rows[index], expected), "patched JointState bytes differ from rosbags'")
    return rows


def write_bag(path: Path, storage: str, duration: float) -> int:
    """A bag of the workload's JointStates written by rosbags' Writer; its messages."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore
    typestore = get_typestore(Stores.ROS2_JAZZY)
    plugin = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}[storage]
    blocks = sample_blocks(duration)
    names = next(blocks)
    count = 0
    with Writer(path, version=8, storage_plugin=plugin) as writer:
        connection = writer.add_connection(TOPIC, "sensor_msgs/msg/JointState", typestore=typestore)
        for stamps, q, qd, tau in blocks:
            rows = joint_state_rows(typestore, names, stamps, q, qd, tau)
            for receive_ns, row in zip((stamps + RECEIVE_DELAY_NS).tolist(), rows):
                writer.write(connection, receive_ns, row.tobytes())
            count += len(stamps)
    return count


def write_csv(path: Path, duration: float) -> int:
    """The workload as a CSV file (time [s, absolute], q, qd, tau; 17 significant digits); its rows."""
    blocks = sample_blocks(duration)
    names = next(blocks)
    count = 0
    with open(path, "w") as handle:
        handle.write(",".join(["time"] + [f"{field}.{joint}" for field in ("q", "qd", "tau") for joint in names])
                     + "\n")
        for stamps, q, qd, tau in blocks:
            seconds = (stamps // 10**9).astype(float) + (stamps % 10**9) * 1e-9
            np.savetxt(handle, np.column_stack([seconds, q, qd, tau]), fmt="%.17g", delimiter=",")
            count += len(stamps)
    return count


# --------------------------------------------------------------------------- measuring


def child(command: list[str]) -> tuple[float, int | None, str]:
    """Wall time [s], peak resident memory [bytes] (``/usr/bin/time``'s maximum resident set size of the child;
    None without it) and stdout of ``command`` run in a new process."""
    timer = shutil.which("time") or "/usr/bin/time"
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        wrapped = [timer, "-f", "%M", "-o", report.name, *command] if Path(timer).exists() else command
        start = time.perf_counter()
        result = subprocess.run(wrapped, capture_output=True, text=True, env=_environment(), cwd=machine.REPOSITORY)
        seconds = time.perf_counter() - start
        machine.require(result.returncode == 0, f"{' '.join(command[:4])} ... failed:\n{result.stderr[-3000:]}")
        text = report.read().split()
    return seconds, int(text[-1]) * 1024 if wrapped is not command and text else None, result.stdout


def _environment() -> dict:
    """The children's environment: the source tree first on the path, and bytecode written and reused (under
    PYTHONPYCACHEPREFIX, outside the tree), as an installed package has it: with PYTHONDONTWRITEBYTECODE set
    (some machines set it) every child compiled every module again, 0.3-0.5 s of each command's start."""
    paths = [str(machine.REPOSITORY), str(machine.REPOSITORY / "bench"), os.environ.get("PYTHONPATH", "")]
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {**environment, "PYTHONPATH": os.pathsep.join(paths),
            "PYTHONPYCACHEPREFIX": str(Path(tempfile.gettempdir()) / "robot_dynid_bench_bytecode")}


def timed_child(code: str) -> tuple[float, int, str]:
    """Run ``code`` (which prints the seconds it times on its last line) in a new process: (those seconds, the
    process's peak memory [bytes], its output)."""
    wrapper = ("import resource, sys\n" + code +
               "\nprint('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)\n")
    _, _, stdout = child([sys.executable, "-c", wrapper])
    lines = stdout.strip().splitlines()
    return float(lines[-2]), int(lines[-1].split()[1]), stdout


def identify_command(data: Path, out: Path) -> list[str]:
    return [str(Path(sys.prefix) / "bin" / "robot-dynid"), "identify", "--robot", str(ROBOT), "--data", str(data),
            "--friction", FRICTION, "--out", str(out)]


IN_MEMORY = """
import time
from pathlib import Path
import numpy as np
import bench_files
from robot_dynid.cli import main
from robot_dynid.recordings import pipeline
from robot_dynid.recordings.bag_io import ns_to_seconds
from robot_dynid.recordings.recording import Recording
import robot_dynid.cli.identify, robot_dynid.estimation.identification, robot_dynid.recordings.conditioning
blocks = bench_files.sample_blocks({duration!r})
names = next(blocks)
parts = list(blocks)
recording = Recording.from_arrays(names, ns_to_seconds(np.concatenate([p[0] for p in parts])),
                                  *(np.concatenate([p[k] for p in parts]) for k in (1, 2)), None,
                                  np.concatenate([p[3] for p in parts]), source="in memory")
del parts
pipeline.read_file = lambda *args, **kwargs: recording
start = time.perf_counter()
code = main({arguments!r})
assert code == 0
print(time.perf_counter() - start)
"""

BARE_READ = """
import time
from pathlib import Path
paths = [Path(p) for p in {paths!r}]
buffer = bytearray(8 << 20)
start = time.perf_counter()
total = 0
for path in paths:
    with open(path, "rb", buffering=0) as handle:
        while True:
            size = handle.readinto(buffer)
            if not size:
                break
            total += size
print(time.perf_counter() - start)
"""


def storage_paths(path: Path) -> list[Path]:
    return sorted(path.glob("*.mcap")) + sorted(path.glob("*.db3")) if path.is_dir() else [path]


def model_values(path: Path) -> np.ndarray:
    from robot_dynid.model.dynamic_model import DynamicModel
    model = DynamicModel.load(path)
    return np.concatenate([model.values, model.std])


def equal_readings(data: Path) -> str:
    """The bulk readers against the general ones on ``data``: rosbags' deserializer for bags, numpy's loadtxt
    for CSV; the largest difference, which must be 0."""
    from robot_dynid.recordings import csv_io
    from robot_dynid.recordings.bag_io import read_bag
    if data.is_dir():
        fast, general = read_bag(data), read_bag(data, bulk=False)
    else:
        fast = csv_io.read_csv(data)
        limit, csv_io._ARROW_MIN_BYTES = csv_io._ARROW_MIN_BYTES, float("inf")
        try:
            general = csv_io.read_csv(data)
        finally:
            csv_io._ARROW_MIN_BYTES = limit
    differences = [0.0]
    for field in ("time", "q", "qd", "tau"):
        a, b = getattr(fast, field), getattr(general, field)
        machine.require(a.shape == b.shape, f"{data}: {field} of shape {a.shape} against {b.shape}")
        differences.append(float(np.max(np.abs(a - b))))
    machine.require(max(differences) == 0.0, f"{data}: the bulk reader differs from the general one by "
                                             f"{max(differences)}")
    return "bit for bit"


def duration_label(duration: float) -> str:
    return f"{duration:g} s" if duration < 60 else f"{duration / 60:g} min" if duration < HOUR else \
        f"{duration / HOUR:g} h"


def run(quick: bool = False, hour: bool = False, directory: Path | None = None) -> machine.BenchmarkResult:
    """Write the files (not timed), then time every row (module docstring)."""
    machine_description = machine.describe_machine()
    keep = directory is not None
    directory = Path(directory or tempfile.mkdtemp(prefix="bench_files_"))
    directory.mkdir(parents=True, exist_ok=True)
    durations = [QUICK_DURATION] if quick else [TEN_MINUTES] + ([HOUR] if hour else [])
    rows, values, goals = [], {}, []
    try:
        for duration in durations:
            label = duration_label(duration)
            files = {"MCAP": directory / f"{duration:g}_mcap", "sqlite3": directory / f"{duration:g}_sqlite3",
                     "CSV": directory / f"{duration:g}.csv"}
            for name, path in files.items():
                if not path.exists():
                    print(f"[files] writing {path}", file=sys.stderr, flush=True)
                    if name == "CSV":
                        write_csv(path, duration)
                    else:
                        write_bag(path, "mcap" if name == "MCAP" else "sqlite3", duration)
            arguments = identify_command(files["CSV"], directory / "memory.yaml")[1:]   # read_file replaced
            memory_runs = [timed_child(IN_MEMORY.format(duration=duration, arguments=arguments))
                           for _ in range(REPEATS)]
            memory_seconds, memory_peak = min(run[0] for run in memory_runs), max(run[1] for run in memory_runs)
            models = {}
            for name, path in files.items():
                size = sum(part.stat().st_size for part in storage_paths(path))
                timed_child(BARE_READ.format(paths=[str(p) for p in storage_paths(path)]))   # into the page cache
                read_seconds, _, _ = timed_child(BARE_READ.format(paths=[str(p) for p in storage_paths(path)]))
                models[name] = directory / f"model_{name}.yaml"
                print(f"[files] identify {path}", file=sys.stderr, flush=True)
                runs = [child(identify_command(path, models[name])) for _ in range(REPEATS)]
                seconds, peak = min(run[0] for run in runs), max(run[1] for run in runs)
                floor = GOAL_FLOOR_FACTOR * (memory_seconds + read_seconds)
                values[(label, name)] = dict(seconds=seconds, peak=peak, read=read_seconds, memory=memory_seconds,
                                             size=size)
                rows.append([label, name, f"{size / 1e6:.0f} MB", f"{seconds:.2f}", machine.megabytes(peak),
                             f"{memory_seconds:.2f}", machine.megabytes(memory_peak), f"{read_seconds:.2f}",
                             f"{seconds / (memory_seconds + read_seconds):.2f}",
                             equal_readings(path) if duration <= TEN_MINUTES else "n/a"])
                values[(label, name)]["floor_ok"] = seconds <= floor
            reference = model_values(models["MCAP"])
            agreement = max(float(np.max(np.abs(model_values(models[name]) - reference)) /
                                  np.max(np.abs(reference))) for name in ("sqlite3", "CSV"))
            values[(label, "agreement")] = agreement
            machine.require(agreement <= AGREEMENT, f"{label}: the models of the three files differ by {agreement:.1e}")
        label = duration_label(durations[-1])
        mcap = values[(label, "MCAP")]
        final = durations[-1] == HOUR
        goals.append(machine.Goal(f"{label} MCAP: `identify` wall time", f"< {GOAL_SECONDS:g} s" if final else "info",
                                  f"{mcap['seconds']:.2f} s", mcap["seconds"] < GOAL_SECONDS if final else None))
        goals.append(machine.Goal(f"{label} MCAP: peak memory",
                                  f"< {GOAL_BYTES / 1e6:.0f} MB" if final else "info", machine.megabytes(mcap["peak"]),
                                  mcap["peak"] < GOAL_BYTES if final else None))
        goals.append(machine.Goal(f"{label} MCAP: within {GOAL_FLOOR_FACTOR:g}x (in-memory identification + bare "
                                  "read)", f"<= {GOAL_FLOOR_FACTOR:g}x",
                                  f"{mcap['seconds'] / (mcap['memory'] + mcap['read']):.2f}x", mcap["floor_ok"]))
        for name in ("sqlite3", "CSV"):
            ratio = values[(label, name)]["seconds"] / mcap["seconds"]
            goals.append(machine.Goal(f"{label} {name}: time against MCAP's", f"<= {GOAL_FORMAT_FACTOR:g}x",
                                      f"{ratio:.2f}x", ratio <= GOAL_FORMAT_FACTOR))
        goals.append(machine.Goal("models of MCAP, sqlite3 and CSV (the same samples)", f"<= {AGREEMENT:g} relative",
                                  f"{max(v for k, v in values.items() if k[1] == 'agreement'):.1e}", True))
        goals.append(machine.Goal("bulk readers against the general ones (rosbags' deserializer, loadtxt)",
                                  "bit for bit", "bit for bit", True))
    finally:
        if not keep:
            shutil.rmtree(directory, ignore_errors=True)
    details = (machine.markdown_table(
        ["recording", "file", "size", "`identify` wall [s]", "`identify` peak", "(a) in memory [s]",
         "(a) peak", "(b) bare read [s]", "ratio to (a) + (b)", "fast reader = general"], rows))
    notes = (
        "(a) is the identify command's work on the same samples held in memory (a fresh process builds the "
        "recording, then `robot_dynid.cli.main` runs with the file reading replaced): the reading pipeline's "
        "checks, derivatives and conditioning, the identification, the model file; its imports are not timed. "
        "(b) reads the file's bytes from the page cache into one 8 MiB buffer.",
        "Peak memory: the child's maximum resident set size (`/usr/bin/time`). The reading holds one block of about "
        "16,384 messages at a time (BagChunks, CsvChunks); a field of more than 64 MB (an hour's: 173 MB each) goes "
        "into a file as it is gathered (stored_columns), which the pipeline and identify read 65,536 samples at a "
        "time; the 10 min files' fields (29 MB) stay in memory. The CSV rows' peak includes pyarrow's reader.",
        "Stored columns, 2026-11-30 (source 10944f2): the 1 h MCAP's peak 938 -> 277 MB, the model bit-identical; "
        "its time unchanged within the machine's noise (by hand, `python -c` running the CLI, three runs "
        "alternating with the code before, source 3ea6187, load 0.9: best 7.28 s before, 7.37 s after; the "
        "fields are written to their files once and read by the checks, the window choice's excerpts, the "
        "derivatives and the accumulation from the page cache).",
        "Bags: MCAP chunks are decoded by their message indexes, JointStates of one byte layout in bulk "
        "(bag_layout.JointStateLayout), the rest by rosbags' deserializer; sqlite3 rows fetched 16,384 at a time. "
        "CSV: pyarrow's reader from 16 MB (numpy's loadtxt below, and without pyarrow).",
        "Before 2026-11-29 (source 2cf5ef0, same machine): 1 h MCAP 32.9 s and 2211 MB, (a) 19.2 s. Since: no "
        "scipy.signal or scipy.stats import (1.1 s), recordings made from recordings share their read-only arrays "
        "(3 s of copies), recording-wide noise and motion estimates from 100 blocks spread over the recording "
        "(4 s), each derivative-window candidate block's estimates computed once. What is left in (a) for 1 h: "
        "the final derivatives (2 s), the fused accumulation (2.5 s), the window choice (2 s), checks (1 s); "
        "importing cvxpy for the plausibility check costs 1 s of the wall time.",
        "1 h MCAP peak 1708 MB before 2026-11-29 13:00 (source 02293d0): the recording copied the reader's arrays "
        "(0.5 GB, now handed over: recording.hand_over) and the final derivatives made three convolutions where "
        "one was used, and their rest mask two N x n temporaries (now only the derivative asked for, the mask "
        "column by column); measured alone on the same file: 1708 -> 1042 MB, the model identical. What remains "
        "is the recording itself (time, q, qd, qdd, tau: 0.72 GB an hour) and its checks' temporaries: under "
        "400 MB needs the streamed pipeline.",
        "1 h CSV peak 1934 MB before 2026-11-29 16:00 (source 85795c9): read_csv kept its chunks and their "
        "concatenation at once; now it gathers them into arrays made once for the file's line count "
        "(recording.GatheredRows, as read_bag does): 1269 MB. stamp_quality's grid fit is a closed-form line "
        "summed in blocks (np.polyfit made 0.3 GB of temporaries an hour).",
        "2026-11-29 21:50 UTC, same machine, shared (load average 1.5 to 1.8), source a60e64a, measured by hand "
        "(fresh process, best of 3 alternating with the code before, 96417f2), not by this "
        "bench: `identify` on the 1 h MCAP 9.52 -> 5.91 s, peak 1037 -> 938 MB; 10 min 2.99 -> 2.57 s, 331 -> 319 "
        "MB; the model files bit-identical. Cut: the checks without whole-recording temporaries (bounds from each "
        "column's extremes, stale rows from their candidates, the nominal grid a closed-form line summed in "
        "blocks instead of np.polyfit), bulk JointState layouts and finite values compared column by column, "
        "finite checks by the sum, derived arrays handed over to the recording, the derivative-plan estimates "
        "shared by the window choice and the derivatives, period detection from the samples that bracket its "
        "grid. In this process the first touch of fresh memory costs more than most arithmetic: what is left for "
        "1 h is reading 3 s (0.9 s of it gathering into the recording's arrays, mostly their first touch), the "
        "fused accumulation 1.7 s, the window choice 0.9 s, the final derivatives 0.6 s, importing cvxpy 0.5 s, "
        "period detection 0.25 s.",
    )
    return machine.BenchmarkResult(
        name=NAME, title="Files: `robot-dynid identify` on MCAP, sqlite3 and CSV at 1 kHz (UR5, 6 joints)",
        goals=tuple(goals), details=details, notes=notes, machine=machine_description, quick=quick,
        values={f"{k[0]} {k[1]}": v for k, v in values.items()})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 s files, a smoke run (goals not meaningful)")
    parser.add_argument("--hour", action="store_true", help="add the 1 h rows (about 4 GB of files)")
    parser.add_argument("--directory", type=Path, default=None,
                        help="where the files are written and kept between runs (default: a temporary one)")
    parser.add_argument("--out", type=Path, default=None, help="Markdown file whose files section is replaced")
    args = parser.parse_args(argv)
    result = run(quick=args.quick, hour=args.hour, directory=args.directory)
    print(result.markdown())
    if args.out is not None:
        machine.write_sections(args.out, {result.name: result.markdown()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
