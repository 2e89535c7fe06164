"""Where time goes: cProfile of robot-dynid identify, report and fleet on a realistic recording.

Workload: a simulated UR5 (test/simulated_fleet.py: pinocchio RNEA torques of plausible links,
Coulomb and viscous friction, 0.3 N m noise) on the fleet's excitation motion, DURATION s at RATE
Hz, written as a CSV file of time, positions, velocities and torques only (accelerations derived
by ``identify`` from the velocities, as from a real driver); no stage markers (the excitation stage
is detected from the motion). Each command runs in its own process, as a user starts it, under
``python -m cProfile`` (imports included), coulomb_viscous friction:

- ``robot-dynid identify --robot ur5.yaml --data FILE --out model.yaml``;
- ``robot-dynid report --robot ur5.yaml --data FILE --out DIR`` (figures, HTML page);
- ``robot-dynid fleet --robot ur5.yaml --manifest fleet.csv --workers 1 --out DIR`` over FLEET_COPIES
  recordings of FLEET_DURATION s; the client's profile (Dask workers run in other processes), then
  ``robot_dynid.fleet.tasks.identify_entry`` of one of them in this process under cProfile: what a
  worker runs per recording.

For each: wall time, the functions with the most own time (tottime) and the largest cumulative
entries of the package. Also timed: ``import robot_dynid.cli`` and how much of it is cvxpy (it must
be none: cvxpy is imported by the plausibility check and the consistent fit only, when they run).
"""
from __future__ import annotations

import io
import os
import pathlib
import pstats
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

import machine
sys.path.insert(0, str(machine.REPOSITORY / "test"))     # the simulated fleet of the tests

from robot_dynid.fleet.task_options import TaskOptions     # noqa: E402
from robot_dynid.fleet.tasks import identify_entry        # noqa: E402
from robot_dynid.model.robot_loader import load_robot                     # noqa: E402
from simulated_fleet import arm_recording, excitation, FIRST_DAY, ROBOT   # noqa: E402

NAME = "profile"
RATE = 500.0              # [Hz]
DURATION = 300.0          # [s]
FLEET_DURATION = 60.0     # [s]
FLEET_COPIES = 4
TOP = 8


def write_csv(path: pathlib.Path, arm: int, week: int, duration: float) -> int:
    """A recording of ``duration`` s as CSV (time, q, qd, tau; 10 significant digits); its samples."""
    robot = load_robot(ROBOT)
    recording = arm_recording(robot, arm, week, None, RATE, duration, excitation(robot))
    fields = ("q", "qd", "tau")
    header = ",".join(["time"] + [f"{field}.{joint}" for field in fields for joint in robot.joint_names])
    table = np.column_stack([recording.time] + [getattr(recording, field) for field in fields])
    np.savetxt(path, table, fmt="%.10g", delimiter=",", header=header, comments="")
    return recording.n_samples


def profiled_command(arguments: list[str], profile: pathlib.Path) -> float:
    """Wall time [s] of ``robot-dynid arguments`` in a new process under cProfile (into ``profile``)."""
    entry_point = pathlib.Path(sys.prefix) / "bin" / "robot-dynid"      # installed by the colcon build
    command = [sys.executable, "-m", "cProfile", "-o", str(profile), str(entry_point), *arguments]
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(machine.REPOSITORY),
                                                              os.environ.get("PYTHONPATH", "")]))
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=machine.REPOSITORY)
    seconds = time.perf_counter() - start
    machine.require(result.returncode == 0, f"robot-dynid {arguments[0]} failed:\n{result.stderr[-3000:]}")
    return seconds


def _label(key) -> str:
    filename, line, function = key
    if filename == "~":
        return f"`{function}`"
    path = pathlib.Path(filename)
    parts = path.parts
    if "robot_dynid" in parts:
        shown = "/".join(parts[parts.index("robot_dynid"):])
    elif "site-packages" in parts:
        shown = "/".join(parts[parts.index("site-packages") + 1:])
    else:
        shown = path.name
    return f"`{shown}:{line} {function}`"


def top_rows(stats: pstats.Stats, total: float, sort: str, only_package: bool = False) -> list[list[str]]:
    """The TOP entries by ``sort`` ("tottime" or "cumtime"): label, calls, own and cumulative seconds, share."""
    entries = []
    for key, (_, calls, tottime, cumtime, _) in stats.stats.items():
        if only_package and "robot_dynid" not in key[0]:
            continue
        entries.append((tottime if sort == "tottime" else cumtime, key, calls, tottime, cumtime))
    entries.sort(key=lambda entry: -entry[0])
    return [[_label(key), f"{calls:,}", f"{tottime:.2f}", f"{cumtime:.2f}", f"{100 * value / total:.0f} %"]
            for value, key, calls, tottime, cumtime in entries[:TOP]]


def cumulative(stats: pstats.Stats, path_end: str, function: str) -> float:
    """Cumulative seconds of the largest profile entry whose file ends with ``path_end`` and whose function is
    ``function`` (0 when none)."""
    return max((cumtime for (filename, _, name), (_, _, _, cumtime, _) in stats.stats.items()
                if filename.endswith(path_end) and name == function), default=0.0)


def start_seconds() -> float:
    """Wall time [s] of the command line's start, ``build_parser()`` in a new process, without a profiler (less
    the bare interpreter's start with numpy)."""
    environment = dict(os.environ, PYTHONPATH=str(machine.REPOSITORY))

    def wall(code: str) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=environment)
        return time.perf_counter() - start

    return min(wall("import robot_dynid.cli; robot_dynid.cli.build_parser()") for _ in range(3)) - \
        min(wall("import numpy") for _ in range(3))


def import_costs() -> dict:
    """[s] of the command line's start (``import robot_dynid.cli``, ``build_parser()``: every subcommand's
    module) in a new process, and of cvxpy within it (-X importtime)."""
    command = [sys.executable, "-X", "importtime", "-c", "import robot_dynid.cli, sys; "
               "robot_dynid.cli.build_parser(); print('cvxpy' in sys.modules)"]
    environment = dict(os.environ, PYTHONPATH=str(machine.REPOSITORY))
    result = subprocess.run(command, capture_output=True, text=True, env=environment)
    cumulative = {}
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        fields = [field.strip() for field in line.removeprefix("import time:").split("|")]
        if fields[1].isdigit():
            cumulative[fields[2].strip()] = int(fields[1]) * 1e-6
    top_level = sum(seconds for name, seconds in cumulative.items() if "." not in name)
    return {"cli": top_level, "cvxpy": cumulative.get("cvxpy", 0.0), "cvxpy_imported": result.stdout.strip() == "True"}


def imports_cvxpy(stats: pstats.Stats) -> bool:
    """Whether the profiled run executed any of cvxpy's code (imported it)."""
    return any("cvxpy" in filename for filename, _, _ in stats.stats)


def run(quick: bool = False) -> machine.BenchmarkResult:
    """Write the recordings, profile the commands (see the module docstring)."""
    machine_description = machine.describe_machine()
    duration, fleet_duration = (20.0, 10.0) if quick else (DURATION, FLEET_DURATION)
    directory = pathlib.Path(tempfile.mkdtemp(prefix="robot_dynid_bench_profile_"))
    robot = os.fspath(ROBOT)
    sections, walls = {}, {}
    try:
        data = directory / "recording.csv"
        n_samples = write_csv(data, 0, 0, duration)
        rows = ["robot_id,recorded_at,data"]
        for copy in range(FLEET_COPIES):
            write_csv(directory / f"arm{copy}.csv", copy, 0, fleet_duration)
            rows.append(f"arm{copy},{FIRST_DAY.isoformat()},arm{copy}.csv")
        (directory / "fleet.csv").write_text("\n".join(rows) + "\n")
        imports = import_costs()
        imports["start"] = start_seconds()
        commands = {
            "identify": ["identify", "--robot", robot, "--data", str(data), "--out", str(directory / "model.yaml")],
            "report": ["report", "--robot", robot, "--data", str(data), "--out", str(directory / "report")],
            "fleet": ["fleet", "--robot", robot, "--manifest", str(directory / "fleet.csv"), "--workers", "1",
                      "--out", str(directory / "fleet")],
        }
        for name, arguments in commands.items():
            profile = directory / f"{name}.prof"
            walls[name] = profiled_command(arguments, profile)
            sections[name] = pstats.Stats(str(profile), stream=io.StringIO())
        import cProfile
        worker = cProfile.Profile()
        identify_entry(os.fspath(directory / "arm1.csv"), robot, None, TaskOptions())       # warm: imports
        start = time.perf_counter()
        worker.enable()
        outcome = identify_entry(os.fspath(directory / "arm2.csv"), robot, None, TaskOptions())
        worker.disable()
        walls["fleet task"] = time.perf_counter() - start
        machine.require(outcome.status == "identified", f"identify_entry: {outcome.status}")
        sections["fleet task"] = pstats.Stats(worker, stream=io.StringIO())
    finally:
        shutil.rmtree(directory, ignore_errors=True)

    goals = [machine.Goal("cvxpy imported when the command line starts (`build_parser`: every subcommand)", "no",
                          f"{'yes' if imports['cvxpy_imported'] else 'no'} (the start's imports take "
                          f"{imports['cli']:.2f} s, cvxpy {imports['cvxpy']:.2f} s of it)",
                          not imports["cvxpy_imported"])]
    goals += [machine.Goal(f"cvxpy imported by `robot-dynid {name}` (the plausibility check's solver; "
                           "needed only when no consistent preimage is found without it)", "info",
                           "yes" if imports_cvxpy(sections[name]) else "no", None)
              for name in ("identify", "report", "fleet")]
    goals += [machine.Goal(f"`robot-dynid {name}` wall time under cProfile" if name != "fleet task" else
                           "one fleet task (`identify_entry` with its report) in process", "info",
                           f"{walls[name]:.1f} s", None) for name in walls]
    details = [f"Recording: {n_samples:,} samples ({duration:g} s at {RATE:g} Hz, 6 joints; CSV of time, q, qd, "
               f"tau); fleet: {FLEET_COPIES} recordings of {fleet_duration:g} s, one worker process. Shares are of "
               "each profile's total time (cProfile's own overhead included: it slows Python-heavy code more "
               "than numpy and C).\n"]
    for name, stats in sections.items():
        total = stats.total_tt
        details.append(f"\n### {name}: {walls[name]:.1f} s wall, {total:.1f} s profiled\n\nOwn time (tottime):\n\n"
                       + machine.markdown_table(["Function", "calls", "own [s]", "cumulative [s]", "own share"],
                                                top_rows(stats, total, "tottime"))
                       + "\nLargest cumulative entries of robot_dynid:\n\n"
                       + machine.markdown_table(["Function", "calls", "own [s]", "cumulative [s]",
                                                 "cumulative share"],
                                                top_rows(stats, total, "cumtime", only_package=True)))
    importing = [f"`{name}`" for name in ("identify", "report", "fleet") if imports_cvxpy(sections[name])]
    report_figures = cumulative(sections["report"], "reports/report.py", "figure")
    page = cumulative(sections["fleet"], "fleet/page.py", "write_fleet_page")
    waiting = sum(tottime for (filename, _, name), (_, _, tottime, _, _) in sections["fleet"].stats.items()
                  if name == "<method 'acquire' of '_thread.lock' objects>")
    task_figures = cumulative(sections["fleet task"], "reports/report.py", "figure")
    loading = sum(tottime for (_, _, name), (_, _, tottime, _, _) in sections["identify"].stats.items()
                  if "_load_from_filelike" in name)
    notes = (
        f"The three largest remaining costs: (1) figures (matplotlib: drawing, text layout, PNG encoding): "
        f"{report_figures:.1f} s of `report`, {task_figures:.1f} of the {walls['fleet task']:.1f} s of a fleet task "
        f"(its torque-fit figures), {page:.1f} s of `fleet`'s client for the fleet page's trend figures; (2) the "
        f"command line's start, which imports every subcommand's modules: {imports['start']:.2f} s without a "
        f"profiler (scipy.signal, imported by recordings.conditioning, pulls in scipy.stats, interpolate and "
        f"optimize), paid by every command and every Dask worker; (3) reading the CSV (`numpy.loadtxt`): "
        f"{loading:.2f} s of `identify` for {n_samples:,} rows. The identification itself (differentiation, "
        "regressor, normal equations, solve) is a small share of each.",
        f"`fleet`'s client waits {waiting:.1f} s for its worker (the lock acquisitions): the worker's time is "
        "the fleet task's profile above, once per recording, and its process start.",
        ("cvxpy (`import cvxpy` alone takes about 1 s) is " + (
            f"imported by {', '.join(importing)}: the plausibility check found no consistent standard set mapping "
            "onto the identified base parameters without a solver and solved its program" if importing else
            "not imported by `identify`, `report` or `fleet` on this recording: the plausibility check finds a "
            "consistent standard set mapping onto the identified base parameters without a solver "
            "(`physical_consistency._consistent_preimage`)") + ". Before (source 0da50c7) every identification "
         "imported cvxpy and solved the nearest-consistent-set program."),
    )
    return machine.BenchmarkResult(
        name=NAME, title="Where time goes: identify, report and fleet under cProfile (UR5, coulomb_viscous)",
        goals=tuple(goals), details="".join(details), notes=notes, machine=machine_description, quick=quick,
        values={"walls": walls, "imports": imports, "n_samples": n_samples})


if __name__ == "__main__":
    sys.exit(machine.benchmark_main(run, __doc__.splitlines()[0]))
