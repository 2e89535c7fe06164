"""One ROS_DOMAIN_ID per process, so that concurrent test and benchmark processes on one machine
never hear each other: an exclusive lock on a file per domain id, held for the process's life."""
from __future__ import annotations

import fcntl
import pathlib
import tempfile

_locks = {}


def claim_ros_domain(domain_ids: range, lock_directory: str) -> int:
    """Lock and return the first id of ``domain_ids`` no other process holds (ids above 232
    fail in DDS); lock files live in ``$TMPDIR/<lock_directory>``. A second call in the same
    process returns the id already held."""
    if lock_directory in _locks:
        return _locks[lock_directory][0]
    directory = pathlib.Path(tempfile.gettempdir()) / lock_directory
    directory.mkdir(exist_ok=True)
    for domain_id in domain_ids:
        handle = open(directory / f"{domain_id}.lock", "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        _locks[lock_directory] = (domain_id, handle)
        return domain_id
    raise RuntimeError(f"every ROS domain id {domain_ids.start}..{domain_ids.stop - 1} is held by "
                       f"another process ({directory})")
