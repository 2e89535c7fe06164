"""Test-wide setup: keep ROS 2 traffic on this machine and give each pytest process its own domain."""
import os

# Small dense linear algebra (QR, SVD, 6x6 products) slows down up to 100x when OpenBLAS
# threads compete with other processes on 2 cores; set before numpy is first imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import fcntl  # noqa: E402
import pathlib  # noqa: E402
import tempfile  # noqa: E402

import pytest  # noqa: E402

_domain_lock = None


def _claim_ros_domain():
    """Hold an exclusive lock on one ROS_DOMAIN_ID (1..100) for this process's lifetime."""
    global _domain_lock
    lock_dir = pathlib.Path(tempfile.gettempdir()) / "robot_dynid_test_domains"
    lock_dir.mkdir(exist_ok=True)
    for domain_id in range(1, 101):
        handle = open(lock_dir / f"{domain_id}.lock", "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        _domain_lock = handle
        return domain_id
    raise RuntimeError(f"all ROS domain ids 1..100 are in use by other test processes ({lock_dir})")


def pytest_configure(config):
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    os.environ["ROS_DOMAIN_ID"] = str(_claim_ros_domain())
    os.environ.setdefault("MPLCONFIGDIR", tempfile.mkdtemp(prefix="robot_dynid_mpl_"))


@pytest.fixture
def repo_root():
    return pathlib.Path(__file__).resolve().parent.parent
