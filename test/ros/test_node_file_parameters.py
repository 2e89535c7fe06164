"""Node parameters naming a file given one that would hang or exhaust the node (YAML nested 1000 deep, an
integer of 5000 digits, an alias bomb, a file above the size limit, /dev/zero, a FIFO, a name over 255 bytes, a
directory), and those naming a file or directory the node writes given a place no file system takes (a name over
255 bytes, /dev/zero, a read-only file system, a directory for a file): the installed node exits 2 at start with
one error line naming the parameter, the path and the problem, no traceback (real processes)."""
import os
import subprocess

import pytest

from ros_graph import start_node, wait_for_exit

FILE_PARAMETERS = [("experiment_runner", "robot_file"), ("experiment_runner", "plan_file"),
                   ("sim_robot", "robot_file"), ("identifier", "robot_file"), ("identifier", "bounds_file"),
                   ("feedforward", "model_file"), ("hydraulic_identifier", "cylinders_file"),
                   ("feedforward", "payload_file"), ("identifier", "arm_model_file")]
OTHERS = {"bounds_file": ["-p", "consistent:=true"]}     # read only for the consistent fit

BILLION_LAUGHS = "".join([
    "lol0: &lol0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
    *(f"lol{k}: &lol{k} [{', '.join([f'*lol{k - 1}'] * 10)}]\n" for k in range(1, 10))])


def bad_files(directory):
    """{variant: (path, what the error line says)}."""
    files = {}
    for name, content in (("nested", "[" * 1000 + "]" * 1000), ("huge_integer", "name: arm\nvalue: " + "7" * 5000),
                          ("aliases", BILLION_LAUGHS)):
        (directory / f"{name}.yaml").write_text(content)
    files["nested"] = (directory / "nested.yaml", "nests deeper than 100 levels (line 1, column 101)")
    files["huge_integer"] = (directory / "huge_integer.yaml", "holds an integer of 5000 characters")
    files["aliases"] = (directory / "aliases.yaml", "holds more than 1000000 values")
    with open(directory / "oversized.yaml", "wb") as stream:
        stream.truncate(101 * 2 ** 20)      # sparse
    files["oversized"] = (directory / "oversized.yaml", "is 101 MiB, above the limit of 100 MiB")
    os.mkfifo(directory / "fifo.yaml")
    files["fifo"] = (directory / "fifo.yaml", "is a FIFO (named pipe), not a regular file")
    files["dev_zero"] = ("/dev/zero", "is a character device, not a regular file")
    files["too_long"] = (directory / ("n" * 300 + ".yaml"), "File name too long")
    files["directory"] = (directory, "Is a directory")
    return files


@pytest.mark.parametrize("node, parameter", FILE_PARAMETERS)
def test_a_file_that_would_hang_or_exhaust_the_node_is_one_line_and_exit_2(tmp_path, node, parameter):
    files = bad_files(tmp_path)
    processes = {name: start_node(node, "-p", f"{parameter}:={path}", *OTHERS.get(parameter, []),
                                  log_path=tmp_path / f"{name}.log")
                 for name, (path, _) in files.items()}     # started together: the machine may be loaded
    for name, process in processes.items():
        path, problem = files[name]
        code = wait_for_exit(process, 60)
        log = (tmp_path / f"{name}.log").read_text()
        if code != 2:       # the whole log (a crash's stacks too); an assertion's message would be cut
            pytest.fail(f"{name}: exit code {code}, log:\n{log}")
        assert "Traceback" not in log, (name, log)
        errors = [line for line in log.splitlines() if "error" in line.lower()]
        assert len(errors) == 1 and f"{str(path)[:60]}" in errors[0] and problem in errors[0], (name, log)
        if name not in ("nested", "huge_integer", "aliases"):    # a path no reader takes: refused as the parameter
            assert f"parameter {parameter}: " in errors[0], (name, log)


OUTPUT_PARAMETERS = [("identifier", "model_file"), ("hydraulic_identifier", "results_file"),
                     ("recorder", "bag_path"), ("recorder", "output_directory")]
NEEDS = {"results_file": ["-p", "cylinder_names:=[boom]", "-p", "piston_masses:=[10.0]", "-p", "damping:=[100.0]",
                          "-p", "areas_a:=[0.001]", "-p", "areas_b:=[0.0005]"]}


@pytest.mark.parametrize("node, parameter", OUTPUT_PARAMETERS)
def test_a_place_no_file_system_takes_for_an_output_is_one_line_and_exit_2(tmp_path, node, parameter):
    from small_disk import small_disk
    outputs = {"too_long": (tmp_path / ("n" * 300 + ".yaml"), "File name too long"),
               "dev_zero": ("/dev/zero", "is a special file" if parameter.endswith("file") else "is not a directory")}
    if parameter.endswith("file"):       # a directory is the place of an output directory, not of a file
        outputs["directory"] = (tmp_path, "is a directory; give a file name")
    with small_disk(tmp_path / "disk", "1m") as disk:
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        outputs["read_only"] = (disk / "out", "read-only file system")
        processes = {name: start_node(node, "-p", f"{parameter}:={path}", *NEEDS.get(parameter, []),
                                      log_path=tmp_path / f"{name}.log") for name, (path, _) in outputs.items()}
        for name, process in processes.items():
            path, problem = outputs[name]
            code = wait_for_exit(process, 60)
            log = (tmp_path / f"{name}.log").read_text()
            if code != 2:
                pytest.fail(f"{name}: exit code {code}, log:\n{log}")
            assert "Traceback" not in log, (name, log)
            [error] = [line for line in log.splitlines() if "error" in line.lower()]
            assert f"parameter {parameter}: {str(path)[:60]}" in error and problem in error, (name, log)
