"""Opening the files users give so that no path hangs or exhausts the process: one error line each.

Special files are refused by ``stat`` before anything opens them (opening a FIFO blocks until a writer
comes; ``/dev/zero`` and other character devices never end), and a file is read only up to a size
limit: :data:`MAX_TEXT_BYTES` for YAML, URDF and model files, :data:`MAX_RECORDING_BYTES` for CSV
recordings. The limits are stated in every message that applies them.
"""
from __future__ import annotations

import os
import stat

from robot_dynid.errors import DataError

__all__ = ["MAX_TEXT_BYTES", "MAX_RECORDING_BYTES", "size_text", "check_input_file", "read_bytes", "read_text",
           "check_directory_files"]

MAX_TEXT_BYTES = 100 * 1024 ** 2
"""Largest YAML, URDF or model file read [bytes]: 100 MiB (the largest shipped one, a URDF, is about 20 KB)."""

MAX_RECORDING_BYTES = 8 * 1024 ** 3
"""Largest CSV recording read [bytes]: 8 GiB, about 4 h of 6 joints with q, qd, qdd, tau at 1 kHz
(text of about 500 bytes per sample); longer recordings belong in a rosbag2."""

_SPECIAL = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
            (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def size_text(n_bytes: int) -> str:
    """``n_bytes`` for a message: ``100 MiB``, ``8 GiB``, ``512 bytes``."""
    for unit, size in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if n_bytes >= size:
            return f"{n_bytes / size:.4g} {unit}"
    return f"{n_bytes} bytes"


def _kind_problem(mode: int, what: str) -> str | None:
    """Why a file of ``mode`` cannot be read as ``what`` (None: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return f"cannot read the {what}: Is a directory"
    kind = next((name for test, name in _SPECIAL if test(mode)), "not a regular file")
    return f"the {what} is {kind}, not a regular file; give a file"


def check_input_file(path, what: str = "file", error: type[Exception] = DataError,
                     limit: int | None = MAX_TEXT_BYTES) -> os.stat_result:
    """The ``os.stat`` of ``path`` (symbolic links followed) if it is a regular file of at most ``limit``
    bytes (None: no limit), checked without opening it.

    Raises
    ------
    error
        One line naming the file: missing or unreadable, a directory, a FIFO, a device or a socket,
        or larger than ``limit`` (both sizes stated).
    """
    path = os.fspath(path)
    try:
        status = os.stat(path)
    except (OSError, ValueError) as problem:      # ValueError: a NUL byte in the path
        raise error(f"{path}: cannot read the {what}: {getattr(problem, 'strerror', None) or problem}") from None
    problem = _kind_problem(status.st_mode, what)
    if problem:
        raise error(f"{path}: {problem}")
    if limit is not None and status.st_size > limit:
        raise error(f"{path}: the {what} is {size_text(status.st_size)}, above the limit of {size_text(limit)}")
    return status


def read_bytes(path, what: str = "file", error: type[Exception] = DataError, limit: int = MAX_TEXT_BYTES) -> bytes:
    """The content of the regular file ``path``, refused as :func:`check_input_file` refuses it; also
    when more than ``limit`` bytes come out of a file whose size said less (``/proc`` files, a file
    growing or replaced while it is read)."""
    check_input_file(path, what, error, limit)
    path = os.fspath(path)
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))   # a FIFO swapped in: no block
    except OSError as problem:
        raise error(f"{path}: cannot read the {what}: {problem.strerror or problem}") from None
    try:
        problem = _kind_problem(os.fstat(descriptor).st_mode, what)
        if problem:
            raise error(f"{path}: {problem}")
        with os.fdopen(descriptor, "rb", closefd=False) as stream:
            content = stream.read(limit + 1)
    except OSError as problem:
        raise error(f"{path}: cannot read the {what}: {problem.strerror or problem}") from None
    finally:
        os.close(descriptor)
    if len(content) > limit:
        raise error(f"{path}: the {what} is larger than the limit of {size_text(limit)}")
    return content


def read_text(path, what: str = "file", error: type[Exception] = DataError, limit: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of the file ``path`` (a leading byte-order mark dropped), refused as
    :func:`read_bytes` refuses it, or when it is not UTF-8."""
    content = read_bytes(path, what, error, limit)
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as problem:
        raise error(f"{os.fspath(path)}: the {what} is not UTF-8 text (byte {problem.start}); "
                    "is it the right file?") from None


def check_directory_files(directory, what: str = "directory", error: type[Exception] = DataError) -> None:
    """Every entry of ``directory`` (not recursive) a regular file or a directory: what a library opening
    the files of, e.g., a rosbag2 directory would otherwise block on (a FIFO) or read without end (a device).

    Raises
    ------
    error
        Naming the first special file and what it is.
    """
    directory = os.fspath(directory)
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except OSError as problem:
        raise error(f"{directory}: cannot read the {what}: {problem.strerror or problem}") from None
    for entry in entries:
        try:
            mode = entry.stat().st_mode
        except OSError:
            continue           # a dangling link: the reader reports the file it misses
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            kind = next((name for test, name in _SPECIAL if test(mode)), "not a regular file")
            raise error(f"{entry.path}: a file of the {what} is {kind}, not a regular file")
