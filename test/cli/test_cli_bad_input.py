"""Every robot-dynid subcommand against a matrix of bad inputs: exit status 2, one line, no traceback.

Each case starts from a command that succeeds (checked first, so a failure comes from the one
argument spoiled) and replaces one file argument with a bad variant: missing, empty, a directory,
binary garbage, the wrong YAML/CSV shape, cut short after 20 bytes, or holding a non-finite number;
outputs get a directory, or a path below a regular file. The matrix runs in-process through
``cli.main`` (whatever escaped it would fail the test with its traceback); a few cases also run the
installed ``robot-dynid`` script as a user does.
"""
import contextlib
import io
import pathlib
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from robot_dynid.cli import main
from robot_dynid.experiment.simulation import SimulatedRobot, simulation_parameters
from robot_dynid.experiment.trajectories import load_trajectory, time_grid
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_description import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.bag_io import BagWriter
from robot_dynid.recordings.csv_io import write_csv
from robot_dynid.recordings.recording import Recording

ROBOT = find_package_file("config", "robots", "er3a.yaml")
TRAJECTORY = find_package_file("config", "trajectories", "er3a_table_4_1.yaml")
EXECUTABLE = pathlib.Path(sys.prefix) / "bin" / "robot-dynid"


def run(*arguments):
    """``robot-dynid arguments`` in-process: (returncode, stdout, stderr)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = main([str(argument) for argument in arguments])
        except SystemExit as exit_:            # argparse
            code = exit_.code
    return SimpleNamespace(returncode=code, stdout=stdout.getvalue(), stderr=stderr.getvalue())


def run_installed(*arguments):
    return subprocess.run([str(EXECUTABLE), *map(str, arguments)], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Valid inputs: the robot, a simulated CSV recording and bag of the thesis excitation, a model."""
    directory = tmp_path_factory.mktemp("bad_input")
    robot = load_robot(ROBOT)
    regressor = Regressor(robot, friction_model("coulomb_viscous"))
    simulator = SimulatedRobot(regressor, simulation_parameters(regressor, seed=2), noise_std=0.3)
    excitation = load_trajectory(TRAJECTORY)
    t = time_grid(float(np.max(excitation.period)), dt=0.01)
    q, qd, qdd = excitation.evaluate(t)
    tau = simulator.torques(q, qd, qdd, rng=1)
    write_csv(directory / "data.csv", Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau))
    with BagWriter(directory / "bag") as bag:
        for k in range(len(t)):
            bag.write_joint_state(round((100.0 + t[k]) * 1e9), robot.joint_names, q[k], qd[k], tau[k])
    result = run("identify", "--robot", ROBOT, "--data", directory / "data.csv", "--out", directory / "model.yaml")
    assert result.returncode == 0, result.stderr
    result = run("identify", "--robot", ROBOT, "--data", directory / "data.csv", "--consistent",
                 "--out", directory / "consistent.yaml")
    assert result.returncode == 0, result.stderr
    (directory / "out").mkdir()
    (directory / "a_file").write_text("x")
    return {"robot": ROBOT, "data": directory / "data.csv", "bag": directory / "bag", "model": directory / "model.yaml",
            "consistent": directory / "consistent.yaml", "trajectory": TRAJECTORY, "dir": directory}


def variants(kind, valid: pathlib.Path, directory: pathlib.Path):
    """(name, path) of bad versions of the input ``valid`` of ``kind`` ('yaml', 'csv' or 'bag')."""
    directory = directory / f"{kind}_{valid.stem}"
    directory.mkdir(exist_ok=True)
    cases = {"missing": directory / "missing.yaml", "directory": directory}
    if kind == "bag":
        for name, content in (("empty", b""), ("binary", bytes(range(256)) * 4),
                              ("truncated", (valid / f"{valid.name}.mcap").read_bytes()[:20])):
            bag = directory / f"bag_{name}"
            bag.mkdir()
            (bag / f"bag_{name}.mcap").write_bytes(content)
            cases[name] = bag
        return cases
    text = valid.read_text()
    shapes = {"yaml": "- 1\n- 2\n", "csv": "a,b\n1,2\n"}
    contents = {"empty": "", "binary": None, "wrong_shape": shapes[kind], "truncated": text[:20],
                "non_finite": _first_number_replaced(text, ".nan" if kind == "yaml" else "nan", kind)}
    for name, content in contents.items():
        path = directory / f"{name}.{kind}"
        if content is None:
            path.write_bytes(bytes(range(256)) * 4)
        else:
            path.write_text(content)
        cases[name] = path
    return cases


def _first_number_replaced(text, replacement, kind):
    """The file with its numbers made non-finite where they matter: for CSV every time value (no row is
    left), for YAML the first number after the first key holding one."""
    if kind == "csv":
        header, *rows = text.splitlines()
        return "\n".join([header] + [replacement + row[row.index(","):] for row in rows]) + "\n"
    lines = text.splitlines()
    for index, line in enumerate(lines):
        head, colon, value = line.partition(":")
        word = value.strip().split(",")[0].strip("[]{} ")
        try:
            float(word)
        except ValueError:
            continue
        if colon and not head.strip().startswith("#") and "name" not in head:
            lines[index] = head + colon + value.replace(word, replacement, 1)
            return "\n".join(lines) + "\n"
    raise AssertionError("no number to replace")


def commands(files):
    """(label, arguments, {argument index: kind of file}) of every subcommand's good run."""
    out = files["dir"] / "out"
    return [
        ("base-parameters", ["base-parameters", "--robot", files["robot"]], {2: "yaml"}),
        ("identify csv", ["identify", "--robot", files["robot"], "--data", files["data"], "--out", out / "m.yaml"],
         {2: "yaml", 4: "csv", 6: "output"}),
        ("identify bag", ["identify", "--robot", files["robot"], "--data", files["bag"], "--out", out / "m2.yaml"],
         {4: "bag"}),
        ("stages", ["stages", "--robot", files["robot"], "--data", files["data"]], {2: "yaml", 4: "csv"}),
        ("predict", ["predict", "--model", files["model"], "--data", files["data"], "--out", out / "t.csv"],
         {2: "yaml", 4: "csv", 6: "output"}),
        ("excitation check", ["excitation", "check", "--robot", files["robot"], "--trajectory", files["trajectory"]],
         {3: "yaml", 5: "yaml"}),
        ("excitation optimize", ["excitation", "optimize", "--robot", files["robot"], "--harmonics", "2",
                                 "--period", "4", "--starts", "1", "--iterations", "20", "--out", out / "x.yaml"],
         {3: "yaml", 13: "output"}),
        ("protocol", ["protocol", "--robot", files["robot"], "--cycles", "1", "--excitation", files["trajectory"],
                      "--out", out / "plan.yaml"], {2: "yaml", 6: "yaml", 8: "output"}),
        ("demo", ["demo", "--offline", "--robot", files["robot"], "--periods", "1", "--out", out / "demo"],
         {3: "yaml", 7: "output_directory"}),
        ("bag repair", ["bag", "repair", files["bag"], "--out", out / "repaired"], {2: "bag"}),
        ("validate", ["validate", "--model", files["model"], "--data", files["data"]], {2: "yaml", 4: "csv"}),
        ("export-urdf", ["export-urdf", "--model", files["consistent"], "--out", out / "arm.urdf"],
         {2: "yaml", 4: "output"}),
        ("report", ["report", "--robot", files["robot"], "--data", files["data"], "--out", out / "report"],
         {2: "yaml", 4: "csv", 6: "output_directory"}),
        ("compare", ["compare", files["model"], files["consistent"], "--out", out / "compare"],
         {1: "yaml", 2: "yaml", 4: "output_directory"}),
    ]


def bad_cases():
    """Names of the cases, for the test ids (the files only exist once the fixture ran)."""
    return [label for label, _, _ in commands({key: pathlib.Path("x") for key in
                                               ("robot", "data", "bag", "model", "consistent", "trajectory",
                                                "dir")})]


def assert_one_line_error(result, what):
    assert result.returncode == 2, (what, result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout, (what, result.stderr)
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and result.stderr.strip().splitlines()[-1] == errors[0], (what, result.stderr)


@pytest.mark.parametrize("label", bad_cases())
def test_bad_inputs_give_one_line_and_exit_2(files, label, tmp_path):
    _, arguments, file_arguments = next(command for command in commands(files) if command[0] == label)
    good = run(*arguments)
    assert good.returncode == 0, (label, good.stderr)
    for index, kind in file_arguments.items():
        if kind == "output":
            bad = {"a directory": files["dir"] / "out", "below a file": files["dir"] / "a_file" / "x.yaml"}
        elif kind == "output_directory":
            bad = {"a file": files["dir"] / "a_file", "below a file": files["dir"] / "a_file" / "demo"}
        else:
            bad = variants(kind, pathlib.Path(arguments[index]), tmp_path)
        for name, path in bad.items():
            spoiled = list(arguments)
            spoiled[index] = path
            assert_one_line_error(run(*spoiled), f"{label}: argument {arguments[index - 1]} {name}")


def test_bad_options_give_one_line_and_exit_2(files):
    for arguments in (["identify", "--robot", files["robot"], "--data", files["data"], "--out", "m.yaml",
                       "--resample", "-5"],
                      ["identify", "--robot", files["robot"]],
                      ["stages", "--robot", files["robot"], "--data", files["data"], "--rest-threshold", "nan"],
                      ["no-such-command"]):
        assert_one_line_error(run(*arguments), arguments)


def test_the_installed_script_gives_one_line_and_exit_2(files, tmp_path):
    binary = tmp_path / "binary.csv"
    binary.write_bytes(bytes(range(256)) * 4)
    for arguments in (["identify", "--robot", files["robot"], "--data", binary, "--out", tmp_path / "m.yaml"],
                      ["predict", "--model", files["robot"], "--data", files["data"], "--out", tmp_path / "t.csv"],
                      ["identify", "--robot", files["robot"], "--data", files["data"], "--out", tmp_path]):
        assert_one_line_error(run_installed(*arguments), arguments)
