"""Node parameters given a bad value (a shared one, or a combination): one line naming the parameter and
what it accepts, exit 2, no traceback (installed executables, real processes)."""
import subprocess

import pytest

from ros_graph import start_node, wait_for_exit


@pytest.mark.parametrize("node, parameter", [
    ("identifier", "joint_states_qos"),
    ("recorder", "joint_states_qos"),
    ("feedforward", "joint_states_qos"),
    ("hydraulic_identifier", "qos"),
])
def test_an_unknown_qos_choice_is_refused_naming_the_parameter_and_the_choices(tmp_path, node, parameter):
    bag = ["-p", f"bag_path:={tmp_path / 'bag'}"] if node == "recorder" else []   # never into the source tree
    process = start_node(node, "-p", f"{parameter}:=fast", *bag, log_path=tmp_path / "node.log")
    assert wait_for_exit(process, 60) == 2, (tmp_path / "node.log").read_text()
    log = (tmp_path / "node.log").read_text()
    assert f"parameter {parameter} must be one of ['reliable', 'best_effort', 'sensor_data'], got 'fast'" in log, log
    assert "Traceback" not in log, log


def test_a_start_tolerance_above_the_deviation_threshold_is_refused_at_start(tmp_path):
    """Such a runner would abort every start it accepts without an approach."""
    process = start_node("experiment_runner", "-p", "start_tolerance:=0.2", "-p", "deviation_threshold:=0.1",
                         log_path=tmp_path / "node.log")
    assert wait_for_exit(process, 60) == 2, (tmp_path / "node.log").read_text()
    log = (tmp_path / "node.log").read_text()
    assert "start_tolerance 0.2 rad is above deviation_threshold 0.1 rad" in log and "Traceback" not in log, log


@pytest.mark.parametrize("node, argument, message", [
    ("experiment_runner", "deviation_threshold:=.nan",
     "ExperimentRunnerNode: error: parameter deviation_threshold must be finite and in (0, 1] [rad], got nan"),
    ("experiment_runner", "rate_hz:=1e9",
     "ExperimentRunnerNode: error: parameter rate_hz must be finite and in [10, 1000] [Hz], got 1000000000.0"),
    ("sim_robot", "rate:=1e9", "SimRobotNode: error: parameter rate must be finite and in [1, 2000] [Hz], "
                               "got 1000000000.0"),
    ("sim_robot", "batch_period:=0.0",
     "SimRobotNode: error: parameter batch_period must be finite and in (0, 1] [s], got 0.0"),
])
def test_a_bad_runner_or_sim_robot_parameter_is_one_line_and_exit_2_before_anything_moves(tmp_path, node, argument,
                                                                                          message):
    """A NaN deviation threshold used to start, send a window, then kill the runner with no hold; a huge
    rate was a traceback of sim_robot, a zero batch period a timer period of 1 / rate."""
    process = start_node(node, "-p", argument, log_path=tmp_path / "node.log")
    assert wait_for_exit(process, 60) == 2, (tmp_path / "node.log").read_text()
    assert (tmp_path / "node.log").read_text().splitlines() == [message]


def refused(tmp_path, node, *parameters):
    """Start ``node`` with ``parameters``; assert exit 2, no traceback; return its one error line."""
    process = start_node(node, *[a for p in parameters for a in ("-p", p)], log_path=tmp_path / "node.log")
    assert wait_for_exit(process, 60) == 2, (tmp_path / "node.log").read_text()
    log = (tmp_path / "node.log").read_text()
    errors = [line for line in log.splitlines() if "error" in line]
    assert "Traceback" not in log and len(errors) == 1, log
    return errors[0]


def test_a_bag_path_below_a_file_is_refused_naming_the_parameter(tmp_path):
    (tmp_path / "file").write_text("")
    line = refused(tmp_path, "recorder", f"bag_path:={tmp_path / 'file' / 'bag'}")
    assert line == (f"RecorderNode: error: parameter bag_path: {tmp_path / 'file' / 'bag'}: cannot write the "
                    f"directory: {tmp_path / 'file'} is not a directory"), line


def test_a_bag_path_on_a_read_only_file_system_is_refused_naming_the_parameter(tmp_path):
    """Root writes through permission bits: a read-only mount is what a root recorder cannot write to."""
    from small_disk import small_disk
    with small_disk(tmp_path / "disk", "1m") as disk:
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        line = refused(tmp_path, "recorder", f"bag_path:={disk / 'bag'}")
    assert line == (f"RecorderNode: error: parameter bag_path: {disk / 'bag'}: cannot write the directory: {disk}: "
                    "read-only file system"), line


def test_a_zero_flush_period_is_refused_not_spun(tmp_path):
    """A zero-period timer would flush in a loop at 100 % CPU."""
    line = refused(tmp_path, "recorder", f"bag_path:={tmp_path / 'bag'}", "flush_period:=0.0")
    assert "parameter flush_period must be finite and in [0.01, 3600] [s], got 0.0" in line, line
    assert not (tmp_path / "bag").exists()
