"""The paths users give for writing: every way a file system refuses a write is one line naming the path, found
before any work is done, and a good path is left as it was."""
import os
import subprocess

import pytest

from robot_dynid.errors import DataError
from robot_dynid.output_files import NAME_MAX, check_output_path


def test_a_new_file_in_a_new_directory_is_taken_and_nothing_is_left_behind(tmp_path):
    target = tmp_path / "a" / "b" / "model.yaml"
    assert check_output_path(target) == str(target)
    assert list(tmp_path.iterdir()) == []           # the probe is gone; directories are made by the writer


def test_an_existing_file_is_taken_and_not_changed(tmp_path):
    target = tmp_path / "model.yaml"
    target.write_text("kept")
    check_output_path(target)
    assert target.read_text() == "kept"


@pytest.mark.parametrize("make, directory, message", [
    (lambda tmp: tmp / ("n" * (NAME_MAX + 1)), False, "a name in the path is 256 bytes long, more than the file "
                                                      "system's 255 (File name too long)"),
    (lambda tmp: tmp, False, "is a directory; give a file name for the file"),
    (lambda tmp: "/dev/zero", False, "is a special file (a device, FIFO or socket), not a regular file"),
    (lambda tmp: "/dev/zero", True, "is not a directory; give a directory"),
    (lambda tmp: (tmp / "f").write_text("") or tmp / "f" / "model.yaml", False, "is not a directory"),
    (lambda tmp: "/sys/robot_dynid_model.yaml", False, "/sys: Permission denied"),   # sysfs: no new files, root too
    (lambda tmp: "", False, "path is empty"),
    (lambda tmp: "a\0b", False, "holds a NUL byte"),
])
def test_a_path_no_file_system_takes_is_one_line_naming_it(tmp_path, make, directory, message):
    with pytest.raises(DataError, match="^[^\n]*" + message.replace("(", r"\(").replace(")", r"\)") + "[^\n]*$"):
        check_output_path(make(tmp_path), directory=directory)


def test_a_fifo_in_the_place_of_the_file_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(DataError, match="is a special file"):
        check_output_path(tmp_path / "fifo")


def test_a_read_only_file_system_is_refused_for_a_new_and_an_existing_file(tmp_path):
    from small_disk import small_disk
    with small_disk(tmp_path / "disk", "1m") as disk:
        (disk / "old.yaml").write_text("x")
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        for name in ("new.yaml", "old.yaml"):
            with pytest.raises(DataError, match="cannot write the file: .*read-only file system"):
                check_output_path(disk / name)
