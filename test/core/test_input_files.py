"""Reading the files users give: special files refused by stat before they are opened, sizes capped, one line each."""
import os
import socket

import pytest
from blocking import returns_within

from robot_dynid.errors import RobotDescriptionError
from robot_dynid.input_files import (MAX_RECORDING_BYTES, MAX_TEXT_BYTES, check_directory_files, check_input_file,
                                     read_bytes, read_text)


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "robot.yaml"
    os.mkfifo(fifo)
    outcome = returns_within(lambda: read_text(fifo, "robot description", RobotDescriptionError))
    error = outcome.get("error")
    assert isinstance(error, RobotDescriptionError), outcome
    assert str(error) == f"{fifo}: the robot description is a FIFO (named pipe), not a regular file; give a file"


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_endless_devices_are_refused_before_reading(device, tmp_path):
    link = tmp_path / "model.yaml"
    link.symlink_to(device)
    for path in (device, link):
        with pytest.raises(RobotDescriptionError, match=r"^.*: the model file is a character device, not a regular"):
            read_bytes(path, "model file", RobotDescriptionError)


def test_a_socket_and_a_directory_are_refused(tmp_path):
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(tmp_path / "s.csv"))
        with pytest.raises(RobotDescriptionError, match="the CSV file is a socket"):
            check_input_file(tmp_path / "s.csv", "CSV file", RobotDescriptionError)
    finally:
        listener.close()
    with pytest.raises(RobotDescriptionError, match=r"cannot read the URDF: Is a directory$"):
        read_text(tmp_path, "URDF", RobotDescriptionError)
    with pytest.raises(RobotDescriptionError, match=r"missing.urdf: cannot read the URDF: No such file or directory$"):
        read_text(tmp_path / "missing.urdf", "URDF", RobotDescriptionError)


def test_a_file_above_the_limit_is_refused_with_both_sizes(tmp_path):
    big = tmp_path / "big.yaml"
    with open(big, "wb") as stream:       # sparse: no disk used
        stream.truncate(MAX_TEXT_BYTES + 1024 ** 2)
    with pytest.raises(RobotDescriptionError, match=r"big.yaml: the plan is 101 MiB, above the limit of 100 MiB$"):
        read_text(big, "plan", RobotDescriptionError)
    check_input_file(big, "CSV file", RobotDescriptionError, MAX_RECORDING_BYTES)    # the recordings' limit is larger
    assert MAX_TEXT_BYTES == 100 * 2 ** 20 and MAX_RECORDING_BYTES == 8 * 2 ** 30    # as docs/command_line.md states


def test_content_beyond_the_limit_is_refused_where_the_size_said_less():
    """/proc files report size 0: the reader stops at the limit, not at the end."""
    assert os.stat("/proc/self/status").st_size == 0
    with pytest.raises(RobotDescriptionError,
                       match=r"^/proc/self/status: the file is larger than the limit of 10 bytes$"):
        read_bytes("/proc/self/status", error=RobotDescriptionError, limit=10)
    assert read_bytes("/proc/self/status", error=RobotDescriptionError).startswith(b"Name:")


def test_text_is_utf8_with_a_byte_order_mark_dropped(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_bytes(b"\xef\xbb\xbfname: x\n")
    assert read_text(path) == "name: x\n"
    path.write_bytes(b"name: \xff\n")
    with pytest.raises(RobotDescriptionError, match=r"r.yaml: the robot is not UTF-8 text \(byte 6\)"):
        read_text(path, "robot", RobotDescriptionError)


def test_a_special_file_in_a_directory_is_named(tmp_path):
    (tmp_path / "metadata.yaml").write_text("x: 1\n")
    (tmp_path / "sub").mkdir()
    check_directory_files(tmp_path, "bag", RobotDescriptionError)
    os.mkfifo(tmp_path / "bag_0.mcap")
    with pytest.raises(RobotDescriptionError, match=r"bag_0.mcap: a file of the bag is a FIFO \(named pipe\), not a"):
        check_directory_files(tmp_path, "bag", RobotDescriptionError)
