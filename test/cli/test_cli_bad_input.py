"""Every robot-dynid subcommand against a matrix of bad inputs: exit status 2, one line, no traceback.

Each case starts from a command that succeeds (checked first, so a failure comes from the one
argument spoiled) and replaces one file argument with a bad variant: missing, empty, a directory,
binary garbage, the wrong YAML/CSV shape, cut short after 20 bytes, or holding a non-finite number;
inputs that would hang or exhaust the process: YAML nested 1000 deep, an integer of 5000 digits, an alias
bomb ("billion laughs"), a file above the size limit (sparse), /dev/zero, a FIFO (and a bag whose storage
file is a FIFO or /dev/zero, or whose metadata nests 1000 deep); outputs get a directory, or a path below a
regular file, a name over 255 bytes, /dev/zero, a read-only file system. Counts and durations above their documented
maxima are refused the same way. The matrix runs
in-process through ``cli.main`` (whatever escaped it would fail the test with its traceback), every bad run
in a thread that must return within a minute (a FIFO opened for reading blocks); a few cases also run the
installed ``robot-dynid`` script as a user does.
"""
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml
from blocking import returns_within

from cli_output import run
from robot_dynid.experiment.simulation import SimulatedRobot, plausible_parameters, simulation_parameters
from robot_dynid.experiment.trajectories import load_trajectory, time_grid
from robot_dynid.input_files import MAX_RECORDING_BYTES, MAX_TEXT_BYTES
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.friction import friction_model
from robot_dynid.model.payload import load_payload
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.bag_io import BagWriter
from robot_dynid.recordings.csv_io import write_csv
from robot_dynid.recordings.recording import Recording

ROBOT = find_package_file("config", "robots", "er3a.yaml")
TRAJECTORY = find_package_file("config", "trajectories", "er3a_table_4_1.yaml")
CURTAIN_WALL = find_package_file("config", "robots", "curtain_wall_arm.yaml")
UR5_URDF_ROBOT = find_package_file("config", "robots", "ur5_urdf.yaml")
UR5_URDF = find_package_file("config", "robots", "ur5.urdf")
EXECUTABLE = pathlib.Path(sys.prefix) / "bin" / "robot-dynid"
RETURN_WITHIN = 60.0   # s, every bad run (a FIFO must not block, /dev/zero must not be read)

# what the one error line names for the inputs that would hang or exhaust the process
EXHAUSTING = {"nested": "nests deeper than 100 levels", "huge_integer": "holds an integer of 5000 characters",
              "aliases": "more than 1000000 values", "oversized": "above the limit of",
              "dev_zero": "is a character device", "fifo": "is a FIFO (named pipe)",
              "storage_fifo": "is a FIFO (named pipe)", "storage_dev_zero": "is a character device",
              "nested_metadata": "nests deeper than 100 levels"}


def run_installed(*arguments):
    """The installed ``robot-dynid arguments``, which must end within RETURN_WITHIN seconds."""
    return subprocess.run([str(EXECUTABLE), *map(str, arguments)], capture_output=True, text=True,
                          timeout=RETURN_WITHIN)


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
    hydraulic = directory / "hydraulic"     # the hydraulic demo's files: cylinder config, bench CSV, results, arm CSVs
    result = run("demo", "--hydraulic", "--out", hydraulic)
    assert result.returncode == 0, result.stderr
    entry = {"piston_mass": 4.595, "damping": 2000.0, "area_a": 1.2566e-3, "area_b": 8.765e-4}
    (directory / "stage_cylinders.yaml").write_text(yaml.safe_dump({"cylinders": [
        {"name": "boom", **entry, "attachment": {"joint": "j2", "moment_arm": 0.12}}]}))
    (directory / "cylinder_stage.yaml").write_text(yaml.safe_dump({"amplitude": 0.006, "angular_frequency": 0.5,
                                                                   "cycles": 1}))
    (directory / "poses.yaml").write_text("poses:\n  j1: [0.0, 0.1, 0.2, 0.0, 0.1, 0.0]\n")
    (directory / "bounds.yaml").write_text("total_mass: [1.0, 1000.0]\n")
    (directory / "params.yaml").write_text("sim_robot:\n  ros__parameters:\n    noise_std: 0.5\n")
    (directory / "payload.yaml").write_text(yaml.safe_dump({"frame": f"{robot.joint_names[-1]}_link", "mass": 2.0,
                                                            "com": [0.0, 0.0, 0.1], "inertia": [0.01, 0.0, 0.0, 0.01,
                                                                                                0.0, 0.01]}))
    shutil.copyfile(directory / "data.csv", directory / "holdout.csv")     # a second name: its own bad variants
    DynamicModel.load(directory / "model.yaml").with_payload(
        load_payload(directory / "payload.yaml")).save(directory / "model_payload.yaml")
    read_only = directory / "read_only"     # a read-only tmpfs, where this test may mount one (root)
    read_only.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", str(read_only)],
                             capture_output=True).returncode == 0
    try:
        yield {"robot": ROBOT, "data": directory / "data.csv", "bag": directory / "bag",
               "model": directory / "model.yaml", "consistent": directory / "consistent.yaml", "trajectory": TRAJECTORY,
               "dir": directory, "hydraulic": hydraulic,
               "urdf_model": write_model(directory / "ur5_model.yaml", UR5_URDF_ROBOT),
               "payload_model": directory / "model_payload.yaml", "read_only": read_only if mounted else None}
    finally:
        if mounted:
            subprocess.run(["umount", "--lazy", str(read_only)], check=True)


def write_model(path, robot_file):
    """A model of ``robot_file`` with plausible standard parameters (what export-urdf needs)."""
    robot = load_robot(robot_file)
    return DynamicModel.from_standard(robot, plausible_parameters(robot, seed=1), std=0.01).save(path)


def billion_laughs():
    """Ten aliases of the level below at each of nine levels: 10 ** 9 strings once expanded, 1 KB written."""
    lines = ["lol0: &lol0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"lol{k}: &lol{k} [{', '.join([f'*lol{k - 1}'] * 10)}]" for k in range(1, 10)]
    return "\n".join(lines) + "\n"


def sparse_file(path, size):
    """A file of ``size`` bytes that takes no disk space."""
    with open(path, "wb") as stream:
        stream.truncate(size)
    return path


def variants(kind, valid: pathlib.Path, directory: pathlib.Path):
    """(name, path) of bad versions of the input ``valid`` of ``kind`` ('yaml', 'csv', 'urdf' or 'bag'; or
    'yaml_may_be_empty': a bounds or parameter file, which may be empty, meaning no bounds or no parameters)."""
    if kind == "yaml_may_be_empty":
        cases = variants("yaml", valid, directory)
        del cases["empty"]
        return cases
    directory = directory / f"{kind}_{valid.stem}"
    directory.mkdir(exist_ok=True)
    cases = {"missing": directory / "missing.yaml", "directory": directory}
    os.mkfifo(directory / f"fifo.{kind}")
    (directory / f"dev_zero.{kind}").symlink_to("/dev/zero")       # named as the argument's files are
    # a bag is a directory: a FIFO or /dev/zero in its place is "not a directory"; those inside are below
    special = ("fifo", "dev_zero") if kind != "bag" else ("fifo_as_bag", "dev_zero_as_bag")
    cases.update(zip(special, (directory / f"fifo.{kind}", directory / f"dev_zero.{kind}")))
    if kind == "bag":
        for name, content in (("empty", b""), ("binary", bytes(range(256)) * 4),
                              ("truncated", (valid / f"{valid.name}.mcap").read_bytes()[:20])):
            bag = directory / f"bag_{name}"
            bag.mkdir()
            (bag / f"bag_{name}.mcap").write_bytes(content)
            cases[name] = bag
        for name in ("storage_fifo", "storage_dev_zero", "nested_metadata"):
            bag = shutil.copytree(valid, directory / f"bag_{name}")
            storage = bag / f"{valid.name}.mcap"
            if name == "nested_metadata":
                (bag / "metadata.yaml").write_text("[" * 1000 + "]" * 1000)
                continue
            storage.unlink()
            os.mkfifo(storage) if name == "storage_fifo" else storage.symlink_to("/dev/zero")
            cases[name] = bag
        cases["nested_metadata"] = directory / "bag_nested_metadata"
        return cases
    cases["oversized"] = sparse_file(directory / f"oversized.{kind}",
                                     MAX_RECORDING_BYTES + 2 ** 30 if kind == "csv" else MAX_TEXT_BYTES + 2 ** 20)
    text = valid.read_text()
    shapes = {"yaml": "- 1\n- 2\n", "csv": "a,b\n1,2\n", "urdf": "<robot/>"}
    contents = {"empty": "", "binary": None, "wrong_shape": shapes[kind], "truncated": text[:20]}
    if kind != "urdf":
        contents["non_finite"] = _first_number_replaced(text, ".nan" if kind == "yaml" else "nan", kind)
    if kind == "yaml":
        contents.update(nested="[" * 1000 + "]" * 1000, huge_integer=_first_number_replaced(text, "9" * 5000, kind),
                        aliases=billion_laughs())
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
    out, hydraulic, d = files["dir"] / "out", files["hydraulic"], files["dir"]
    return [
        ("base-parameters", ["base-parameters", "--robot", files["robot"]], {2: "yaml"}),
        ("identify csv", ["identify", "--robot", files["robot"], "--data", files["data"], "--out", out / "m.yaml"],
         {2: "yaml", 4: "csv", 6: "output"}),
        ("identify bag", ["identify", "--robot", files["robot"], "--data", files["bag"], "--out", out / "m2.yaml"],
         {4: "bag"}),
        ("identify bounds validate", ["identify", "--robot", files["robot"], "--data", files["data"], "--consistent",
                                      "--bounds", d / "bounds.yaml", "--validate", files["data"],
                                      "--out", out / "m3.yaml"], {7: "yaml_may_be_empty", 9: "csv"}),
        ("identify cylinders", ["identify", "--robot", CURTAIN_WALL, "--data", hydraulic / "arm_excitation.csv",
                                "--friction", "none", "--cylinders", hydraulic / "cylinders.yaml",
                                "--out", out / "m4.yaml"], {8: "yaml"}),
        ("stages", ["stages", "--robot", files["robot"], "--data", files["data"]], {2: "yaml", 4: "csv"}),
        ("predict", ["predict", "--model", files["model"], "--data", files["data"], "--out", out / "t.csv"],
         {2: "yaml", 4: "csv", 6: "output"}),
        ("excitation check", ["excitation", "check", "--robot", files["robot"], "--trajectory", files["trajectory"]],
         {3: "yaml", 5: "yaml"}),
        ("excitation optimize", ["excitation", "optimize", "--robot", files["robot"], "--harmonics", "2",
                                 "--period", "4", "--starts", "1", "--iterations", "20", "--out", out / "x.yaml"],
         {3: "yaml", 13: "output"}),
        ("protocol", ["protocol", "--robot", files["robot"], "--cycle-count", "1", "--excitation", files["trajectory"],
                      "--out", out / "plan.yaml"], {2: "yaml", 6: "yaml", 8: "output"}),
        ("protocol poses validation", ["protocol", "--robot", files["robot"], "--cycle-count", "1", "--friction-poses",
                                       d / "poses.yaml", "--validation", files["trajectory"]], {6: "yaml", 8: "yaml"}),
        ("protocol cylinders", ["protocol", "--robot", CURTAIN_WALL, "--cycle-count", "1", "--warmup-duration", "0",
                                "--speed-fractions", "0.5", "--cylinders", d / "stage_cylinders.yaml",
                                "--cylinder-stage", d / "cylinder_stage.yaml"], {10: "yaml", 12: "yaml"}),
        ("demo", ["demo", "--offline", "--robot", files["robot"], "--periods", "1", "--out", out / "demo"],
         {3: "yaml", 7: "output_directory"}),
        ("demo excitation", ["demo", "--offline", "--excitation", files["trajectory"], "--periods", "1",
                             "--out", out / "demo2"], {3: "yaml"}),
        ("bag repair", ["bag", "repair", files["bag"], "--out", out / "repaired"], {2: "bag", 4: "output_directory"}),
        ("validate", ["validate", "--model", files["model"], "--data", files["data"]], {2: "yaml", 4: "csv"}),
        ("validate cylinders", ["validate", "--model", out / "m4.yaml", "--data", hydraulic / "arm_held_out.csv",
                                "--cylinders", hydraulic / "cylinders.yaml"], {6: "yaml"}),
        ("export-urdf", ["export-urdf", "--model", files["consistent"], "--out", out / "arm.urdf"],
         {2: "yaml", 4: "output"}),
        ("export-urdf urdf", ["export-urdf", "--model", files["urdf_model"], "--urdf", UR5_URDF,
                              "--out", out / "ur5.urdf"], {2: "yaml", 4: "urdf"}),
        ("report", ["report", "--robot", files["robot"], "--data", files["data"], "--out", out / "report"],
         {2: "yaml", 4: "csv", 6: "output_directory"}),
        ("report model validate", ["report", "--robot", files["robot"], "--data", files["data"], "--model",
                                   files["model"], "--validate", files["data"], "--out", out / "report2"],
         {6: "yaml", 8: "csv"}),
        ("compare", ["compare", files["model"], files["consistent"], "--out", out / "compare"],
         {1: "yaml", 2: "yaml", 4: "output_directory"}),
        ("hydraulic identify", ["hydraulic", "identify", "--config", hydraulic / "cylinder_config.yaml",
                                "--data", hydraulic / "cylinder_bench.csv", "--out", out / "cylinders.yaml"],
         {3: "yaml", 5: "csv", 7: "output"}),
        ("payload identify", ["payload", "identify", "--model", files["model"], "--data", files["data"],
                              "--holdout", d / "holdout.csv", "--out", out / "payload.yaml"],
         {3: "yaml", 5: "csv", 7: "csv", 9: "output"}),
        ("payload identify bag", ["payload", "identify", "--model", files["model"], "--data", files["bag"],
                                  "--out", out / "payload2.yaml"], {5: "bag"}),
        ("payload attach", ["payload", "attach", "--model", files["model"], "--payload", d / "payload.yaml",
                            "--out", out / "model_payload.yaml"], {3: "yaml", 5: "yaml", 7: "output"}),
        ("payload detach", ["payload", "detach", "--model", files["payload_model"], "--out", out / "arm.yaml"],
         {3: "yaml", 5: "output"}),
        ("excitation optimize payload", ["excitation", "optimize", "--robot", files["robot"], "--payload", "--duration",
                                         "8", "--period", "4", "--harmonics", "2", "--starts", "1", "--iterations", "5",
                                         "--out", out / "payload_excitation.yaml"], {3: "yaml", 16: "output"}),
        ("protocol payload", ["protocol", "--robot", files["robot"], "--payload", files["trajectory"],
                              "--out", out / "payload_plan.yaml"], {2: "yaml", 4: "yaml", 6: "output"}),
    ]


def bad_cases():
    """Names of the cases, for the test ids (the files only exist once the fixture ran)."""
    return [label for label, _, _ in commands({key: pathlib.Path("x") for key in
                                               ("robot", "data", "bag", "model", "consistent", "trajectory",
                                                "dir", "hydraulic", "urdf_model", "payload_model")})]


def hostile_outputs(files, name):
    """Outputs no file system takes: a name over 255 bytes, /dev/zero, a read-only file system (where the test may
    mount one)."""
    cases = {"a name too long": files["dir"] / ("n" * 300 + name), "/dev/zero": pathlib.Path("/dev/zero")}
    if files["read_only"] is not None:
        cases["on a read-only file system"] = files["read_only"] / name
    return cases


def assert_one_line_error(result, what):
    assert result.returncode == 2, (what, result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout, (what, result.stderr)
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and result.stderr.strip().splitlines()[-1] == errors[0], (what, result.stderr)


def run_bad(arguments, what):
    """``run(*arguments)`` in a thread that must return within RETURN_WITHIN seconds."""
    outcome = returns_within(lambda: run(*arguments), RETURN_WITHIN)
    assert "error" not in outcome, (what, outcome)
    return outcome["value"]


@pytest.mark.parametrize("label", bad_cases())
def test_bad_inputs_give_one_line_and_exit_2(files, label, tmp_path):
    _, arguments, file_arguments = next(command for command in commands(files) if command[0] == label)
    good = run(*arguments)
    assert good.returncode == 0, (label, good.stderr)
    for index, kind in file_arguments.items():
        if kind == "output":
            bad = {"a directory": files["dir"] / "out", "below a file": files["dir"] / "a_file" / "x.yaml",
                   **hostile_outputs(files, "x.yaml")}
        elif kind == "output_directory":
            bad = {"a file": files["dir"] / "a_file", "below a file": files["dir"] / "a_file" / "demo",
                   **hostile_outputs(files, "demo")}
        else:
            bad = variants(kind, pathlib.Path(arguments[index]), tmp_path)
        for name, path in bad.items():
            spoiled = list(arguments)
            spoiled[index] = path
            what = f"{label}: argument {arguments[index - 1]} {name}"
            result = run_bad(spoiled, what)
            assert_one_line_error(result, what)
            if name in EXHAUSTING:
                assert EXHAUSTING[name] in result.stderr, (what, result.stderr)


@pytest.mark.skipif(importlib.util.find_spec("rclpy") is None, reason="the ROS demo needs rclpy")
def test_the_ros_demo_refuses_exhausting_parameter_files_before_starting_a_node(files, tmp_path):
    """``demo --params-file`` (the ROS demo, as a user runs it: rclpy wants the main thread; its good run and
    the other bad files are test/cli/test_demo.py's)."""
    for name, path in variants("yaml", files["dir"] / "params.yaml", tmp_path).items():
        if name in EXHAUSTING:
            result = run_installed("demo", "--out", tmp_path / "demo", "--params-file", path)
            assert_one_line_error(result, name)
            assert EXHAUSTING[name] in result.stderr, (name, result.stderr)


def test_node_options_are_refused_where_no_node_runs(files, tmp_path):
    """--params-file and --namespace configure ROS nodes: the offline demo (and, without rclpy, any demo) runs
    none, so they are refused rather than ignored."""
    for extra in (["--params-file", files["dir"] / "params.yaml"], ["--namespace", "robot1"]):
        what = f"--offline {extra[0]}"
        result = run_bad(["demo", "--offline", "--out", tmp_path / "demo", *extra], what)
        assert_one_line_error(result, what)
        assert "--offline runs none" in result.stderr, result.stderr
        if importlib.util.find_spec("rclpy") is None:
            result = run_bad(["demo", "--out", tmp_path / "demo", *extra], extra[0])
            assert_one_line_error(result, extra[0])
            assert "ROS 2 is not available here" in result.stderr, result.stderr
    assert not (tmp_path / "demo" / "recording").exists()


def test_a_robot_whose_urdf_is_a_special_file_is_one_line(files, tmp_path):
    for name, urdf in (("fifo", tmp_path / "arm.urdf"), ("dev_zero", "/dev/zero"),
                       ("oversized", sparse_file(tmp_path / "big.urdf", MAX_TEXT_BYTES + 1))):
        if name == "fifo":
            os.mkfifo(urdf)
        robot = tmp_path / f"{name}.yaml"
        robot.write_text(yaml.safe_dump({"urdf": str(urdf)}))
        result = run_bad(["base-parameters", "--robot", robot], name)
        assert_one_line_error(result, name)
        assert EXHAUSTING[name] in result.stderr and str(urdf) in result.stderr, result.stderr


def test_counts_and_durations_above_their_maxima_are_refused_at_once(files):
    """Each would allocate or loop in proportion (or never return: --level-duration 1e308); each maximum is
    stated in --help and docs/command_line.md and named in the error."""
    robot, data, out = files["robot"], files["data"], files["dir"] / "out"
    plan = ["protocol", "--robot", robot]
    cases = [
        (plan + ["--cycle-count", "1000000000"], "cycles must be an integer in 1..1000"),
        (plan + ["--excitation-periods", "1000000"], "excitation_periods must be an integer in 1..100"),
        (plan + ["--level-duration", "1e308"], "friction_level_duration must be finite and in (0, 600] [s]"),
        (plan + ["--warmup-duration", "1e308"], "warmup_duration must be finite and in [0, 3600] [s]"),
        (plan + ["--rest-duration", "1e9"], "rest_duration must be finite and in [0, 3600] [s]"),
        (plan + ["--speed-fractions", ",".join(["0.5"] * 10000)], "speed_fractions must hold 1 to 50 fractions"),
        (["excitation", "optimize", "--robot", robot, "--harmonics", "100000", "--out", out / "x.yaml"],
         "must be an integer in 2..20, got 100000"),
        (["excitation", "optimize", "--robot", robot, "--period", "1e308", "--out", out / "x.yaml"],
         "period must be finite and in (0, 3600] [s]"),
        (["excitation", "optimize", "--robot", robot, "--starts", "1000000000", "--out", out / "x.yaml"],
         "n_starts must be an integer in 1..1000"),
        (["excitation", "optimize", "--robot", robot, "--iterations", "1000000000", "--out", out / "x.yaml"],
         "max_iterations must be an integer in 1..100000"),
        (["excitation", "optimize", "--robot", robot, "--payload", "--duration", "1e9", "--out", out / "x.yaml"],
         "duration must be finite and in (0, 3600] [s]"),
        (["excitation", "check", "--robot", robot, "--trajectory", TRAJECTORY, "--points", "1000000000000"],
         "n_points must be an integer in 2..10000000"),
        (["excitation", "check", "--robot", robot, "--trajectory", TRAJECTORY, "--dt", "1e-12"],
         "more than 10000000: a larger dt"),
        (["demo", "--offline", "--periods", "1000000000", "--out", out / "demo"],
         "--periods must be an integer in 1..100"),
        (["demo", "--offline", "--rate", "1e9", "--out", out / "demo"], "--rate must be finite and in (0, 10000] [Hz]"),
        (["demo", "--offline", "--periods", "100", "--rate", "10000", "--out", out / "demo"],
         "more than the demo's 1000000"),
        (["identify", "--robot", robot, "--data", data, "--cycles", "0-1000000000", "--out", out / "m.yaml"],
         "selects more than 10000 cycles"),
        (["identify", "--robot", robot, "--data", data, "--resample", "1e9", "--out", out / "m.yaml"],
         "resample rate must be finite and in (0, 10000] [Hz]"),
        (["identify", "--robot", robot, "--data", data, "--resample", "10000", "--out", out / "m.yaml"],
         "more than 10 times as many"),
        (["validate", "--model", files["model"], "--data", data, "--cycles", "0-1000000000"],
         "selects more than 10000 cycles"),
        (["report", "--robot", robot, "--data", data, "--holdout-cycles", "0-1000000000", "--out", out / "r"],
         "selects more than 10000 cycles"),
        (["report", "--robot", robot, "--data", data, "--pool", "0-1000000000", "--out", out / "r"],
         "selects more than 10000 cycles"),
        (["hydraulic", "identify", "--config", files["hydraulic"] / "cylinder_config.yaml", "--data",
          files["hydraulic"] / "cylinder_bench.csv", "--cycles", "0-1000000000", "--out", out / "c.yaml"],
         "selects more than 10000 cycles"),
        # payload solver inputs checked before solving (--mass 1e308 was a solver's "Problem data contains NaN")
        (["payload", "identify", "--robot", robot, "--data", data, "--mass", "1e308", "--out", out / "p.yaml"],
         "argument --mass: the value must be finite and in [0.001, 100000] [kg], got 1e+308"),
        (["payload", "identify", "--robot", robot, "--data", data, "--density", "1e-300", "--out", out / "p.yaml"],
         "argument --density: the value must be finite and in [1, 25000] [kg/m^3]"),
        (["payload", "identify", "--robot", robot, "--data", data, "--inertia", "0.1", "0", "0", "nan", "0", "0.1",
          "--out", out / "p.yaml"], "argument --inertia: the value must be finite"),
    ]
    for arguments, fragment in cases:
        started = time.monotonic()
        result = run_bad(arguments, arguments[:3])
        assert_one_line_error(result, arguments)
        assert fragment in result.stderr, (arguments[:4], result.stderr)
        assert time.monotonic() - started < 20.0, arguments[:4]     # refused before the work, not after


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
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    for arguments in (["identify", "--robot", files["robot"], "--data", binary, "--out", tmp_path / "m.yaml"],
                      ["predict", "--model", files["robot"], "--data", files["data"], "--out", tmp_path / "t.csv"],
                      ["identify", "--robot", files["robot"], "--data", files["data"], "--out", tmp_path],
                      ["hydraulic", "identify", "--config", files["hydraulic"] / "cylinder_config.yaml",
                       "--data", fifo, "--out", tmp_path / "c.yaml"],
                      ["identify", "--robot", files["robot"], "--data", files["data"], "--cycles", "0-1000000000",
                       "--out", tmp_path / "m.yaml"]):
        assert_one_line_error(run_installed(*arguments), arguments)
