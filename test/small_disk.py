"""A real small file system for tests of a full disk: a tmpfs mounted on a test's directory (root only)."""
from __future__ import annotations

import contextlib
import subprocess

import pytest


@contextlib.contextmanager
def small_disk(directory, size="2m"):
    """Mount a tmpfs of ``size`` (mount's units: 2m = 2 MiB) on ``directory`` (created); unmount when done.
    Skips the test, saying why, where mounting is not permitted (not root, no CAP_SYS_ADMIN)."""
    directory.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a {size} tmpfs on {directory} for a full-disk test: {mounted.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "--lazy", str(directory)], check=True)
