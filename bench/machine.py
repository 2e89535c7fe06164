"""What every benchmark shares: the machine description, timing, peak memory, the result table
and the Markdown section it writes into BENCHMARKS.md.

Benchmarks are plain scripts (not tests). Each module has ``run(quick: bool) ->
BenchmarkResult`` and calls :func:`benchmark_main` from its ``__main__`` block, which gives it
``--quick`` and ``--out FILE`` (replace only its own section in FILE).

Importing this module puts the repository root first on ``sys.path`` so that the benchmarks
measure the source tree, not a copy installed into ``.venv``.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import platform
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

ROBOTS = REPOSITORY / "config" / "robots"
BENCHMARKS_FILE = REPOSITORY / "BENCHMARKS.md"

BENCHMARKS_HEADER = """\
# Benchmarks

Speed and memory of the core and of the ROS 2 nodes on the machine named in each section. Every
benchmark compares the code path it measures with a baseline timed **in the same run** (a plain
Python loop over pinocchio, the batch path, a subscriber that only counts, an empty service, ...),
so the ratios carry over between machines better than the absolute rates do. Absolute times also
depend on the load of the machine, which each section records (load average at the start).

Run all benchmarks and rewrite this file (bootstraps `.venv` first):

    make bench

or directly, from the repository root:

    .venv/bin/python bench/run_all.py --out BENCHMARKS.md          # all, about 20 minutes
    .venv/bin/python bench/run_all.py --skip excitation recorder --out BENCHMARKS.md
    .venv/bin/python bench/run_all.py --quick                       # smoke run, prints only
    .venv/bin/python bench/bench_identification.py --out BENCHMARKS.md   # one section only

The machine line of each section names numpy's BLAS and its thread setting. On a machine
shared with other jobs, multi-threaded OpenBLAS can be several times slower than one thread
for the small products used here (`--blas-threads 1`, or `OPENBLAS_NUM_THREADS=1` for a
single script).

The node benchmarks (recorder, identifier, feedforward) start the installed node executables in their own
processes, with the source tree first on PYTHONPATH, and keep DDS traffic on loopback in a
ROS_DOMAIN_ID of their own (150..199; the tests take 1..100).

Each script exits 0 even when a goal is missed: a missed goal is a `FAIL` in its table, not an
error. A numerical cross-check that fails (the benchmarked path disagreeing with its baseline)
stops the script with an AssertionError.
"""

_SECTION = "<!-- bench:{name}:{edge} -->"


# --------------------------------------------------------------------------- machine

def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine()
    found = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return found.group(1).strip() if found else platform.machine()


def _total_memory_bytes() -> int | None:
    try:
        found = re.search(r"^MemTotal:\s*(\d+) kB", Path("/proc/meminfo").read_text(),
                          re.MULTILINE)
    except OSError:
        return None
    return int(found.group(1)) * 1024 if found else None


def _usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _source_revision() -> str:
    try:
        revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPOSITORY,
                                  capture_output=True, text=True, check=True).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                 cwd=REPOSITORY, capture_output=True, text=True,
                                 check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"{revision} (with uncommitted changes)" if changed else revision


def _blas() -> str:
    """numpy's BLAS library and the thread count asked for through the environment."""
    import numpy
    try:
        blas = numpy.show_config(mode="dicts")["Build Dependencies"]["blas"]
        library = f"{blas['name']} {blas['version']}"
    except (KeyError, TypeError, ValueError):
        library = "unknown BLAS"
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(variable):
            return f"{library} ({variable}={os.environ[variable]})"
    return f"{library} (default threads)"


def describe_machine() -> dict:
    """CPU, cores, RAM, versions, load and source revision of this run."""
    import numpy
    import pinocchio
    import scipy
    memory = _total_memory_bytes()
    return {
        "cpu": _cpu_model(),
        "cores": _usable_cores(),
        "ram_gb": None if memory is None else memory / 1e9,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "pinocchio": pinocchio.__version__,
        "blas": _blas(),
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "source": _source_revision(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def machine_markdown(machine: dict) -> str:
    ram = "unknown RAM" if machine["ram_gb"] is None else f"{machine['ram_gb']:.1f} GB RAM"
    load = ("" if machine["load_average"] is None
            else f", load average {machine['load_average']:.2f} at start")
    return (f"Measured {machine['date']} on {machine['cpu']}, {machine['cores']} usable cores, "
            f"{ram}, {machine['os']}; Python {machine['python']}, numpy {machine['numpy']}, "
            f"scipy {machine['scipy']}, pinocchio {machine['pinocchio']}, "
            f"{machine['blas']}{load}; "
            f"source {machine['source']}.")


# --------------------------------------------------------------------------- measuring

def best_time(function, repeat: int) -> float:
    """Shortest wall time [s] of ``repeat`` calls of ``function()`` (the least disturbed)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def require(condition: bool, message: str) -> None:
    """A numerical cross-check of a benchmark (kept under ``python -O``, unlike assert)."""
    if not condition:
        raise AssertionError(message)


class PeakMemory:
    """Peak resident memory of this process [bytes] since :meth:`reset`.

    On Linux, writing 5 to ``/proc/self/clear_refs`` resets the high-water mark ``VmHWM`` to
    the current resident size, so one process can measure several phases. Where that is not
    possible the peak is the process's lifetime maximum (``ru_maxrss``) and
    :attr:`resettable` is False: report it as an upper bound.
    """

    def __init__(self) -> None:
        self.resettable = False

    def reset(self) -> "PeakMemory":
        try:
            Path("/proc/self/clear_refs").write_text("5")
            self.resettable = _status_bytes("VmHWM") is not None
        except OSError:
            self.resettable = False
        return self

    def peak(self) -> int:
        if self.resettable:
            return _status_bytes("VmHWM")
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    @staticmethod
    def current() -> int | None:
        """Resident memory now [bytes] (None off Linux)."""
        return _status_bytes("VmRSS")


def _status_bytes(field: str) -> int | None:
    try:
        found = re.search(rf"^{field}:\s*(\d+) kB", Path("/proc/self/status").read_text(),
                          re.MULTILINE)
    except OSError:
        return None
    return int(found.group(1)) * 1024 if found else None


def megabytes(value: float | None) -> str:
    return "n/a" if value is None else f"{value / 1e6:.0f} MB"


def rate(value: float) -> str:
    """A throughput [1/s] with thousands separators."""
    return f"{value:,.0f}"


# --------------------------------------------------------------------------- results

@dataclasses.dataclass(frozen=True)
class Goal:
    """One target of a benchmark: ``passed`` is None for information only."""

    metric: str
    target: str
    measured: str
    passed: bool | None


@dataclasses.dataclass(frozen=True)
class BenchmarkResult:
    """What a benchmark's ``run()`` returns; :meth:`markdown` is its BENCHMARKS.md section.

    Attributes
    ----------
    name : str
        Section key in BENCHMARKS.md (``regressor``, ``identification``, ...).
    title : str
    goals : tuple of Goal
    details : str
        Further Markdown (tables of every path measured).
    notes : tuple of str
    machine : dict
        From :func:`describe_machine`.
    quick : bool
    values : dict
        The raw numbers, for scripts that compare runs.
    """

    name: str
    title: str
    goals: tuple
    details: str
    notes: tuple
    machine: dict
    quick: bool
    values: dict

    @property
    def passed(self) -> bool:
        return all(goal.passed is not False for goal in self.goals)

    def markdown(self) -> str:
        mode = "quick smoke run (reduced sizes; goals are not meaningful)" if self.quick \
            else "full run"
        lines = [f"## {self.title}", "", machine_markdown(self.machine) + f" Mode: {mode}.", "",
                 "| Goal | Target | Measured | Result |", "|---|---|---|---|"]
        for goal in self.goals:
            verdict = {True: "pass", False: "**FAIL**", None: "info"}[goal.passed]
            if self.quick and goal.passed is not None:
                verdict = f"({verdict.strip('*').lower()}, quick)"
            lines.append(f"| {goal.metric} | {goal.target} | {goal.measured} | {verdict} |")
        lines += ["", self.details.strip()]
        if self.notes:
            lines += ["", "Notes:", ""] + [f"- {note}" for note in self.notes]
        return "\n".join(lines) + "\n"


def markdown_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def replace_section(document: str, name: str, markdown: str) -> str:
    """``document`` with the section ``name`` (between its markers) replaced by ``markdown``,
    or appended when absent."""
    start, end = (_SECTION.format(name=name, edge=edge) for edge in ("start", "end"))
    block = f"{start}\n{markdown.rstrip()}\n{end}\n"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end) + r"\n?", re.DOTALL)
    if pattern.search(document):
        return pattern.sub(lambda _: block, document, count=1)
    return document.rstrip("\n") + "\n\n" + block


def write_sections(path: Path, sections: dict) -> None:
    """Replace (or append) ``{name: markdown}`` sections of ``path``, keeping the others; the
    header above the first section is rewritten."""
    path = Path(path)
    document = path.read_text() if path.exists() else ""
    first = document.find("<!-- bench:")
    document = BENCHMARKS_HEADER + ("\n" + document[first:] if first >= 0 else "")
    for name, markdown in sections.items():
        document = replace_section(document, name, markdown)
    path.write_text(document)


def benchmark_main(run, description: str, argv=None) -> int:
    """Command line of one benchmark script: run it, print its Markdown, optionally update
    its section of a BENCHMARKS.md file."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true",
                        help="small sizes, a few seconds; for checking that the script runs")
    parser.add_argument("--out", type=Path, default=None,
                        help="Markdown file whose section of this benchmark is replaced")
    args = parser.parse_args(argv)
    result = run(quick=args.quick)
    print(result.markdown())
    if args.out is not None:
        write_sections(args.out, {result.name: result.markdown()})
    return 0


# --------------------------------------------------------------------------- shared workload

def ur5_regressor(friction: str = "coulomb_viscous", **options):
    """The 6-DOF workload of the benchmarks: UR5 (config/robots/ur5.yaml) with friction;
    ``options`` go to ``Regressor``."""
    from robot_dynid.model.friction import friction_model
    from robot_dynid.model.regressor import Regressor
    from robot_dynid.model.robot_loader import load_robot
    return Regressor(load_robot(ROBOTS / "ur5.yaml"), friction_model(friction), **options)


def panda_regressor(friction: str = "coulomb_viscous", **options):
    """The 7-DOF workload: Franka Panda arm (config/robots/panda.yaml, modified DH, no inertial
    data) with friction; ``options`` go to ``Regressor``."""
    from robot_dynid.model.friction import friction_model
    from robot_dynid.model.regressor import Regressor
    from robot_dynid.model.robot_loader import load_robot
    return Regressor(load_robot(ROBOTS / "panda.yaml"), friction_model(friction), **options)


def random_states(robot, n_samples: int, rng):
    """Uniform random q in [-pi, pi] [rad], qd and qdd within the joint limits, each
    (n_samples, n)."""
    import numpy as np
    velocity = np.array([limits.velocity for limits in robot.limits])
    acceleration = np.array([limits.acceleration for limits in robot.limits])
    shape = (n_samples, robot.n_joints)
    return (rng.uniform(-np.pi, np.pi, shape), rng.uniform(-1.0, 1.0, shape) * velocity,
            rng.uniform(-1.0, 1.0, shape) * acceleration)


def physical_parameters(regressor, rng):
    """A physically consistent ``theta`` (p,) in the regressor's order.

    Link ``i``: mass U(1, 6) kg, centre of mass U(-0.1, 0.1) m per axis, the rotational
    inertia of a solid ellipsoid with semi-axes U(0.03, 0.15) m turned by a random rotation
    (built as ``pinocchio.Inertia`` and read back with ``toDynamicParameters``, i.e. about the
    link frame origin); friction ``fc`` U(1, 5) N m, ``fv`` U(0.5, 3) N m s/rad; any other
    friction or joint column U(0.1, 1).
    """
    import numpy as np
    import pinocchio as pin
    theta = rng.uniform(0.1, 1.0, regressor.n_parameters)
    names = regressor.parameter_names
    for i in range(regressor.n_joints):
        mass = rng.uniform(1.0, 6.0)
        x, y, z = rng.uniform(0.03, 0.15, 3) ** 2
        principal = mass / 5.0 * np.diag([y + z, x + z, x + y])
        rotation = pin.exp3(rng.normal(size=3))
        inertia = pin.Inertia(mass, rng.uniform(-0.1, 0.1, 3),
                              rotation @ principal @ rotation.T)
        theta[10 * i:10 * (i + 1)] = inertia.toDynamicParameters()
    for index, name in enumerate(names):
        if name.startswith("fc"):
            theta[index] = rng.uniform(1.0, 5.0)
        elif name.startswith("fv"):
            theta[index] = rng.uniform(0.5, 3.0)
    return theta
