"""Run every benchmark of bench/ and write their sections into BENCHMARKS.md.

    .venv/bin/python bench/run_all.py [--quick] [--skip-excitation] [--skip NAME ...]
                                      [--only NAME ...] [--blas-threads N] [--out BENCHMARKS.md]

Each benchmark module has ``run(quick: bool)`` returning a ``machine.BenchmarkResult`` (or
Markdown text, or a dict with a ``"markdown"`` entry). Sections of benchmarks not run this time
stay in the file as they were, with their own date. Exit status 0 when every benchmark ran
(missed goals included), 1 when one raised (its section then holds the error).
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
import traceback
from pathlib import Path

import machine

BENCHMARKS = ("regressor", "identification", "fused", "consistent", "rls", "excitation", "recorder",
              "identifier", "feedforward", "hydraulic", "payload", "covariance", "fleet", "profile", "files",
              "closed_loop", "request_size", "startup", "fleet_bags")
SLOW = ("consistent", "excitation", "recorder", "identifier", "fleet", "profile", "files", "closed_loop",
        "request_size", "fleet_bags")     # fleet_bags writes 45 GB of bags (deleted at its end)
BENCH_DIRECTORY = Path(__file__).resolve().parent


def section_markdown(result, name: str) -> str:
    """Markdown of whatever a benchmark's ``run()`` returned."""
    if isinstance(result, machine.BenchmarkResult):
        return result.markdown()
    if isinstance(result, str):
        return result
    if isinstance(result, dict) and isinstance(result.get("markdown"), str):
        return result["markdown"]
    if isinstance(result, dict):
        rows = [[f"`{key}`", value] for key, value in result.items()]
        return (f"## {name}\n\n{machine.machine_markdown(machine.describe_machine())}\n\n"
                + machine.markdown_table(["Quantity", "Value"], rows))
    raise TypeError(f"benchmark {name} returned {type(result).__name__}; expected a "
                    "BenchmarkResult, Markdown text or a dict")


def _failure_markdown(name: str, error: BaseException) -> str:
    return (f"## {name}\n\n{machine.machine_markdown(machine.describe_machine())}\n\n"
            f"**The benchmark raised** `{type(error).__name__}: {error}` (no numbers this "
            "run).\n")


def run_benchmark(name: str, quick: bool) -> tuple[str, str, bool | None]:
    """Run ``bench_<name>.py``: (section key, Markdown, passed: None if it raised)."""
    module = importlib.import_module(f"bench_{name}")
    key = getattr(module, "NAME", name)
    try:
        result = module.run(quick=quick)
    except Exception as error:   # one broken benchmark must not hide the others' numbers
        traceback.print_exc()
        return key, _failure_markdown(name, error), None
    passed = result.passed if isinstance(result, machine.BenchmarkResult) else True
    return key, section_markdown(result, name), passed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes (seconds); the goals are not meaningful then")
    parser.add_argument("--skip-excitation", action="store_true",
                        help="skip the excitation-design benchmark (it takes minutes)")
    parser.add_argument("--skip", nargs="+", choices=BENCHMARKS, default=(),
                        help="skip these benchmarks (the recorder runs 10 minutes)")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, default=None,
                        help="run only these benchmarks")
    parser.add_argument("--out", type=Path, default=None,
                        help="Markdown file to update (e.g. BENCHMARKS.md); print only if absent")
    parser.add_argument("--blas-threads", type=int, default=None, metavar="N",
                        help="threads of numpy's BLAS (default: the library's choice, all "
                             "cores); 1 gives steadier numbers on a shared machine")
    args = parser.parse_args(argv)
    if args.blas_threads is not None:
        if "numpy" in sys.modules:
            parser.error("--blas-threads must be applied before numpy is imported")
        for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[variable] = str(args.blas_threads)

    skipped = set(args.skip) | ({"excitation"} if args.skip_excitation else set())
    selected = [name for name in (args.only or BENCHMARKS) if name not in skipped]
    sections, verdicts = {}, []
    for name in selected:
        if not (BENCH_DIRECTORY / f"bench_{name}.py").exists():
            print(f"[run_all] bench_{name}.py not found, skipped", file=sys.stderr)
            verdicts.append((name, "absent"))
            continue
        note = " (slow)" if name in SLOW else ""
        print(f"[run_all] {name}{note} ...", file=sys.stderr, flush=True)
        clock = time.perf_counter()
        key, markdown, passed = run_benchmark(name, args.quick)
        seconds = time.perf_counter() - clock
        sections[key] = markdown
        verdict = {True: "all goals met", False: "goal(s) missed", None: "ERROR"}[passed]
        if args.quick and passed is not None:
            verdict = "quick run, goals not meaningful"
        verdicts.append((name, f"{verdict}, {seconds:.0f} s"))
        print(markdown, flush=True)
    if args.out is not None and sections:
        machine.write_sections(args.out, sections)
        print(f"[run_all] updated {args.out}: {', '.join(sections)}", file=sys.stderr)
    for name, verdict in verdicts:
        print(f"[run_all] {name}: {verdict}", file=sys.stderr)
    return 1 if any(verdict.startswith("ERROR") for _, verdict in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
