"""robot-dynid bag repair, and the other commands on an incomplete bag (recorder killed, file cut short).

The expected counts, stamps and byte offsets come from what the test wrote (joint states and
markers, the file size after each flush), not from the reader.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

from robot_dynid.cli import main
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.bag_io import BagWriter
from repo_paths import REPO

T0_NS = 1_700_000_000_000_000_000
PERIOD_NS = 10_000_000        # 100 Hz
JOINTS = tuple(f"j{k}" for k in range(1, 7))


def write_bag(path, storage="mcap", n=300, flush_every=100):
    """Six joints moving sinusoidally at 100 Hz, a stage marker at the first sample, flushed every
    ``flush_every`` samples; the storage file's size after each flush."""
    time = np.arange(n) * PERIOD_NS * 1e-9
    q = 0.3 * np.sin(2.0 * np.pi * np.outer(time, np.linspace(0.3, 0.8, len(JOINTS))))
    sizes = []
    with BagWriter(path, storage=storage) as writer:
        writer.write_stage(T0_NS, "excitation", 0, True)
        for k in range(n):
            writer.write_joint_state(T0_NS + k * PERIOD_NS, JOINTS, q[k], effort=np.zeros(len(JOINTS)))
            if k % flush_every == flush_every - 1:
                writer.flush()
                sizes.append((path / f"{path.name}.{'mcap' if storage == 'mcap' else 'db3'}").stat().st_size)
    return sizes


def run(*arguments):
    """The robot-dynid command line in a new process (its stderr as a user sees it)."""
    return subprocess.run([sys.executable, "-c", "import sys; from robot_dynid.cli import main; "
                           "sys.exit(main(sys.argv[1:]))", *map(str, arguments)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_repair_prints_what_it_recovered_and_a_second_run_changes_nothing(tmp_path, capsys):
    bag = tmp_path / "run_1"
    sizes = write_bag(bag)
    (bag / "metadata.yaml").unlink()
    os.truncate(bag / "run_1.mcap", sizes[1] + 100)          # in the third chunk
    assert main(["bag", "repair", str(bag)]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert out.startswith(f"bag {bag} repaired (no metadata.yaml; run_1.mcap cut short at byte {sizes[1] + 100}, "
                          f"complete records up to byte ")
    assert (": 201 messages recovered (/experiment_stage 1, /joint_states 200), receive times "
            "1700000000.000000 to 1700000001.990000 s (1.990 s); the damaged original kept as "
            "run_1.mcap.damaged\n") in out
    assert sorted(os.listdir(bag)) == ["metadata.yaml", "run_1.mcap", "run_1.mcap.damaged"]
    assert main(["bag", "repair", str(bag)]) == 0
    assert capsys.readouterr().out == f"bag {bag} is whole: nothing changed\n"


def test_repair_to_out_of_a_sqlite3_bag_without_metadata(tmp_path, capsys):
    write_bag(tmp_path / "bag", storage="sqlite3")
    (tmp_path / "bag" / "metadata.yaml").unlink()
    assert main(["bag", "repair", str(tmp_path / "bag"), "--out", str(tmp_path / "fixed")]) == 0
    assert capsys.readouterr().out == (
        f"bag {tmp_path / 'bag'} repaired (no metadata.yaml): 301 messages recovered (/experiment_stage 1, "
        f"/joint_states 300), receive times 1700000000.000000 to 1700000002.990000 s (2.990 s); written to "
        f"{tmp_path / 'fixed'}\n")
    assert sorted(os.listdir(tmp_path / "bag")) == ["bag.db3"]
    assert sorted(os.listdir(tmp_path / "fixed")) == ["fixed.db3", "metadata.yaml"]


@pytest.mark.parametrize("setup, message", [
    (lambda path: path.mkdir(), "holds no metadata.yaml and no .mcap or .db3 storage file: not a rosbag2 bag"),
    (lambda path: None, "does not exist"),
    (lambda path: (path.mkdir(), (path / "x.mcap").write_bytes(os.urandom(64))),
     "x.mcap is not an MCAP file (no MCAP magic at byte 0)"),
])
def test_what_is_not_a_bag_is_one_line_on_stderr_and_exit_2(tmp_path, capsys, setup, message):
    setup(tmp_path / "bag")
    assert main(["bag", "repair", str(tmp_path / "bag")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("robot-dynid bag: error: ") and message in captured.err
    assert captured.err.count("\n") == 1


def test_out_that_exists_is_an_error(tmp_path, capsys):
    write_bag(tmp_path / "bag")
    (tmp_path / "bag" / "metadata.yaml").unlink()
    (tmp_path / "fixed").mkdir()
    assert main(["bag", "repair", str(tmp_path / "bag"), "--out", str(tmp_path / "fixed")]) == 2
    assert "cannot write the repaired bag to" in capsys.readouterr().err
    assert os.listdir(tmp_path / "fixed") == []


def test_stages_of_a_killed_recording_warn_what_was_recovered(tmp_path):
    sizes = write_bag(tmp_path / "bag")
    (tmp_path / "bag" / "metadata.yaml").unlink()
    os.truncate(tmp_path / "bag" / "bag.mcap", sizes[1] + 5)
    result = run("stages", "--robot", find_package_file("config", "robots", "puma560.yaml"), "--data", tmp_path / "bag")
    assert result.returncode == 0, result.stderr
    assert (f"WARNING robot_dynid.recordings.bag_recovery: bag {tmp_path / 'bag'} is incomplete "
            f"(no metadata.yaml; bag.mcap cut short at byte {sizes[1] + 5}") in result.stderr
    assert ("recovered 201 messages up to stamp 1700000001.990000 s (receive time); "
            f"'robot-dynid bag repair {tmp_path / 'bag'}' makes it whole") in result.stderr
    assert result.stderr.count("is incomplete") == 1     # the bag is opened twice: one warning
    assert "stages of" in result.stdout
