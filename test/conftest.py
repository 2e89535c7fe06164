"""Test-wide setup: keep ROS 2 traffic on this machine and give each pytest process its own domain."""
import contextlib
import os

# Small dense linear algebra (QR, SVD, 6x6 products) slows down up to 100x when OpenBLAS
# threads compete with other processes on 2 cores; set before numpy is first imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import importlib.util  # noqa: E402
import tempfile  # noqa: E402

import pytest  # noqa: E402

from repo_paths import REPO, ROBOTS  # noqa: E402
from ros_domain import claim_ros_domain  # noqa: E402

TEST_DOMAIN_IDS = range(1, 101)   # the benchmarks take 150..199


# The ROS tests and the checks of the colcon install need rclpy and the colcon-built package
# (tools/bootstrap.sh); in a venv without rclpy (the minimum-versions job, a plain `pip install .`)
# they are not collected, and the header says so. An rclpy that is installed but fails to import
# is an error, not a skip.
ROS_AVAILABLE = importlib.util.find_spec("rclpy") is not None
ROS_TESTS = ["ros", "test_launch_files.py"]
# The fleet tests run a real Dask cluster: without Dask distributed (the optional "fleet" extra) they are
# not collected either.
DASK_AVAILABLE = importlib.util.find_spec("distributed") is not None
MATPLOTLIB_AVAILABLE = importlib.util.find_spec("matplotlib") is not None
FLEET_CLUSTER_TESTS = ["cli/test_cli_fleet.py"]
# The MuJoCo engine's tests need mujoco (pip install "robot-dynid[sim]"); without it they are not collected.
MUJOCO_AVAILABLE = importlib.util.find_spec("mujoco") is not None
MUJOCO_TESTS = ["core/experiment/test_mujoco_engine.py", "cli/test_demo_mujoco.py", "ros/test_end_to_end_mujoco.py",
                "core/experiment/test_closed_loop.py", "cli/test_demo_closed_loop.py", "ros/test_sim_robot_control.py"]
collect_ignore = (([] if ROS_AVAILABLE else list(ROS_TESTS)) + ([] if DASK_AVAILABLE else FLEET_CLUSTER_TESTS)
                  + ([] if MUJOCO_AVAILABLE else MUJOCO_TESTS))


def pytest_report_header(config):
    lines = []
    if not ROS_AVAILABLE:
        lines.append(f"rclpy is not installed: {', '.join(f'test/{path}' for path in ROS_TESTS)} not collected")
    if not DASK_AVAILABLE:
        lines.append(f"Dask distributed is not installed: {', '.join(f'test/{path}' for path in FLEET_CLUSTER_TESTS)} "
                     "not collected")
    if not MUJOCO_AVAILABLE:
        lines.append(f"mujoco is not installed: {', '.join(f'test/{path}' for path in MUJOCO_TESTS)} not collected")
    return lines or None


def pytest_configure(config):
    # Jazzy and later read ROS_AUTOMATIC_DISCOVERY_RANGE; Humble has only ROS_LOCALHOST_ONLY, which
    # Jazzy still honours with a deprecation warning in every process, so it is set on Humble only.
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    if os.environ.get("ROS_DISTRO") == "humble":
        os.environ["ROS_LOCALHOST_ONLY"] = "1"
    else:
        os.environ.pop("ROS_LOCALHOST_ONLY", None)
    os.environ["ROS_DOMAIN_ID"] = str(claim_ros_domain(TEST_DOMAIN_IDS, "robot_dynid_test_domains"))
    os.environ.setdefault("MPLCONFIGDIR", tempfile.mkdtemp(prefix="robot_dynid_mpl_"))


@pytest.fixture
def repo_root():
    return REPO


@pytest.fixture(scope="session")
def er3a_robot():
    """The ER3A (config/robots/er3a.yaml: six revolute joints, modified DH, gear ratios), the arm most tests
    identify; a frozen RobotDescription, shared by the whole session."""
    from robot_dynid.model.robot_loader import load_robot
    return load_robot(ROBOTS / "er3a.yaml")


@pytest.fixture(scope="module")
def ur5_arm():
    """The UR5, plausible link parameters and their model (served_arm.ur5_arm), made once per test module."""
    from served_arm import ur5_arm as make
    return make()


def pytest_sessionfinish(session, exitstatus):
    """No node process outlives the session (a failed test may leave one running)."""
    import sys
    if "ros_graph" in sys.modules:
        sys.modules["ros_graph"].kill_started_nodes()


@contextlib.contextmanager
def checked_figures():
    """Within: every figure the package saves is checked first (figure_text: no text leaves its figure, overlaps
    another or runs into a panel it does not belong to); at the end, AssertionError naming the files and texts.
    For fixtures wider than a test, which the autouse fixture below does not cover."""
    if not MATPLOTLIB_AVAILABLE:
        yield
        return
    from figure_text import text_collisions
    from robot_dynid.reports import figures
    save, found = figures._save, []

    def checked_save(figure, path):
        found.extend(f"{path}: {problem}" for problem in text_collisions(figure))
        return save(figure, path)

    figures._save = checked_save
    try:
        yield
    finally:
        figures._save = save
    assert not found, "text collides in figures:\n" + "\n".join(found)


@pytest.fixture(scope="session")
def figure_check():
    """:func:`checked_figures`, for a module- or session-scoped fixture that draws figures."""
    return checked_figures


@pytest.fixture(autouse=True)
def figures_keep_their_text_apart():
    """Every figure the package draws in any test, checked before it is saved (:func:`checked_figures`); the test
    fails at its end naming the file and the texts."""
    with checked_figures():
        yield
