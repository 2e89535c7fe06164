"""The paths users give for writing (model files, results, reports, bags), checked before any work is done.

A path is refused in one line naming it, whatever the file system answers: a name longer than the file
system takes (``File name too long``), a NUL byte, a directory where a file is meant or a file where a
directory is, a special file (``/dev/zero`` or ``/dev/null`` would take the model and keep nothing), something
that is not a directory above it, a place without write permission or on a read-only file system. The last
two are found by trying: an existing file is opened for appending (nothing is changed), a new one's nearest
existing directory gets a probe file, removed at once; ``os.access`` would not do (it says yes to root on
places no one can write, such as ``/sys``). Missing directories below that directory are made when the file
is written, not by the check.
"""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from robot_dynid.errors import DataError

__all__ = ["NAME_MAX", "check_output_path"]

NAME_MAX = 255
"""[bytes] longest name of one path component (Linux's ext4, xfs, btrfs and tmpfs all take 255)."""


def _stat(path: Path, text: str, what: str, error) -> os.stat_result | None:
    """``os.stat`` of ``path``, None where it does not exist; ``error`` for anything else the system says."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as problem:
        raise error(f"{text}: cannot write the {what}: {_reason(problem)}") from None


def _reason(problem: OSError) -> str:
    return "read-only file system" if problem.errno == errno.EROFS else problem.strerror or str(problem)


def _probe(directory: Path, text: str, what: str, error) -> None:
    """``error`` unless a file can be created in ``directory`` (a probe, removed at once)."""
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".robot_dynid_probe_"):
            pass
    except OSError as problem:
        raise error(f"{text}: cannot write the {what}: {directory}: {_reason(problem)}") from None


def check_output_path(path, what: str = "file", error: type[Exception] = DataError, directory: bool = False) -> str:
    """``path`` as given if a ``what`` (a file, or a directory with ``directory``) can be written there.

    Raises
    ------
    error
        One line naming the path and the reason (module docstring).
    """
    text = os.fspath(path)
    if not text:
        raise error(f"the {what} path is empty; give a path")
    if "\0" in text:
        raise error(f"{text!r}: the {what} path holds a NUL byte")
    path = Path(text)
    long = next((part for part in path.parts if len(os.fsencode(part)) > NAME_MAX), None)
    if long is not None:
        raise error(f"{text[:60]}...: cannot write the {what}: a name in the path is {len(os.fsencode(long))} bytes "
                    f"long, more than the file system's {NAME_MAX} (File name too long)")
    status = _stat(path, text, what, error)
    if status is None:
        existing = next((parent for parent in path.parents if _stat(parent, text, what, error) is not None),
                        Path("."))
        if not existing.is_dir():
            raise error(f"{text}: cannot write the {what}: {existing} is not a directory")
        _probe(existing, text, what, error)
        return text
    if directory:
        if not stat.S_ISDIR(status.st_mode):
            raise error(f"{text}: is not a directory; give a directory for the {what}")
        _probe(path, text, what, error)
        return text
    if stat.S_ISDIR(status.st_mode):
        raise error(f"{text}: is a directory; give a file name for the {what}")
    if not stat.S_ISREG(status.st_mode):
        raise error(f"{text}: is a special file (a device, FIFO or socket), not a regular file; give a file for the "
                    f"{what}")
    try:
        with open(path, "ab"):
            pass
    except OSError as problem:
        raise error(f"{text}: cannot write the {what}: {_reason(problem)}") from None
    return text
