"""A real Dask cluster for tests: ``dask scheduler`` and ``dask worker`` as separate processes on loopback.

Ports are chosen free; each process runs in its own session (a worker's nanny starts the worker
processes), and :meth:`DaskTestCluster.close` ends those sessions by their process ids, first with
SIGTERM, then SIGKILL.
"""
from __future__ import annotations

import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

REPOSITORY = pathlib.Path(__file__).resolve().parent.parent
START_TIMEOUT = 90.0   # s: two worker processes importing numpy, scipy and pinocchio on a busy 2-core machine


def _signal_session(process, signal_number):
    """Send ``signal_number`` to the session (process group) started with ``process``, if any of it is left."""
    try:
        os.killpg(process.pid, signal_number)
    except ProcessLookupError:
        pass


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class DaskTestCluster:
    """A scheduler and ``workers`` single-threaded worker processes; ``address`` is the scheduler's."""

    def __init__(self, workers: int = 2, log_directory=None):
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen] = []
        dask = pathlib.Path(sys.executable).parent / "dask"
        environment = {**os.environ, "OPENBLAS_NUM_THREADS": "1",
                       "PYTHONPATH": os.pathsep.join([str(REPOSITORY), os.environ.get("PYTHONPATH", "")])}
        self.logs = pathlib.Path(log_directory) if log_directory else None
        try:
            self._start([str(dask), "scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard"],
                        environment, "scheduler")
            self._start([str(dask), "worker", self.address, "--nworkers", str(workers), "--nthreads", "1",
                         "--no-dashboard", "--host", "127.0.0.1"], environment, "worker")
            self._wait_for_workers(workers)
        except BaseException:
            self.close()
            raise

    def _start(self, command, environment, name):
        output = open(self.logs / f"{name}.log", "wb") if self.logs else subprocess.DEVNULL
        self.processes.append(subprocess.Popen(command, env=environment, stdout=output, stderr=subprocess.STDOUT,
                                               start_new_session=True, cwd=self.logs or None))

    def _wait_for_workers(self, count):
        from distributed import Client
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                with Client(self.address, timeout=5) as client:
                    client.wait_for_workers(count, timeout=max(1.0, deadline - time.monotonic()))
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def tasks_run(self, prefix: str) -> int:
        """How many tasks whose key starts with ``prefix`` (the function's name) the scheduler saw finish
        (``state_counts`` counts every state a task entered)."""
        from distributed import Client

        def count(dask_scheduler, prefix=prefix):
            task_prefix = dask_scheduler.task_prefixes.get(prefix)
            return 0 if task_prefix is None else int(task_prefix.state_counts.get("memory", 0)
                                                     + task_prefix.state_counts.get("erred", 0))
        with Client(self.address, timeout=10) as client:
            return client.run_on_scheduler(count)

    def close(self):
        for process in reversed(self.processes):
            _signal_session(process, signal.SIGTERM)
        for process in reversed(self.processes):
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                pass
            _signal_session(process, signal.SIGKILL)     # what is left of its session (a nanny's workers)
            process.wait()
        self.processes.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
