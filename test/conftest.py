"""Test-wide setup: keep ROS 2 traffic on this machine and give each pytest process its own domain."""
import os

# Small dense linear algebra (QR, SVD, 6x6 products) slows down up to 100x when OpenBLAS
# threads compete with other processes on 2 cores; set before numpy is first imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pathlib  # noqa: E402
import tempfile  # noqa: E402

import pytest  # noqa: E402

from ros_domain import claim_ros_domain  # noqa: E402

TEST_DOMAIN_IDS = range(1, 101)   # the benchmarks take 150..199


def pytest_configure(config):
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    os.environ["ROS_DOMAIN_ID"] = str(claim_ros_domain(TEST_DOMAIN_IDS, "robot_dynid_test_domains"))
    os.environ.setdefault("MPLCONFIGDIR", tempfile.mkdtemp(prefix="robot_dynid_mpl_"))


@pytest.fixture
def repo_root():
    return pathlib.Path(__file__).resolve().parent.parent


def pytest_sessionfinish(session, exitstatus):
    """No node process outlives the session (a failed test may leave one running)."""
    import sys
    if "ros_graph" in sys.modules:
        sys.modules["ros_graph"].kill_started_nodes()
