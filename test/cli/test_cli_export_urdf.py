"""robot-dynid export-urdf: model files with standard parameters become URDFs pinocchio loads; bad
input (a model of base parameters only, unreadable or foreign URDFs, a directory as output) is one
error line and exit status 2."""
import dataclasses

import numpy as np
import pinocchio as pin
import pytest

from cli_output import run
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.friction import FrictionModel
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from urdf_samples import UR5_URDF


def write_model(path, robot_name, standard=True):
    robot = load_robot(find_package_file("config", "robots", robot_name))
    model = DynamicModel.from_standard(robot, plausible_parameters(robot, seed=1), std=0.01)
    model = model if standard else dataclasses.replace(model, standard=None)
    return model.save(path)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("export_urdf")
    (directory / "binary.urdf").write_bytes(bytes(range(256)) * 4)
    (directory / "broken.urdf").write_text(UR5_URDF.read_text()[:200])
    (directory / "moved.urdf").write_text(UR5_URDF.read_text().replace('xyz="-0.425 0 0"', 'xyz="-0.4 0 0"'))
    return {"dh": write_model(directory / "er3a.yaml", "er3a.yaml"),
            "urdf": write_model(directory / "ur5.yaml", "ur5_urdf.yaml"),
            "ols": write_model(directory / "ols.yaml", "er3a.yaml", standard=False), "dir": directory}


@pytest.mark.parametrize("kind, urdf", [("dh", None), ("urdf", None), ("urdf", UR5_URDF)])
def test_export_writes_a_urdf_pinocchio_loads(files, kind, urdf, tmp_path):
    out = tmp_path / "sub" / "robot.urdf"
    result = run("export-urdf", "--model", files[kind], *(["--urdf", urdf] if urdf else []), "--out", out)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "" and f"written to {out}" in result.stdout
    model = DynamicModel.load(files[kind])
    pinocchio = pin.buildModelFromXML(out.read_text())
    assert [pinocchio.names[j] for j in range(1, pinocchio.njoints)] == list(model.joint_names)
    masses = [inertia.mass for inertia in pinocchio.inertias[1:]]
    np.testing.assert_allclose(masses, model.standard[0:60:10], rtol=1e-12)


def assert_one_line_error(result, *fragments):
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("robot-dynid export-urdf: error: "), result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def test_a_model_of_base_parameters_only_is_refused(files, tmp_path):
    result = run("export-urdf", "--model", files["ols"], "--out", tmp_path / "x.urdf")
    assert_one_line_error(result, f"{files['ols']}: the model has base parameters only", "identify with --consistent")
    assert not (tmp_path / "x.urdf").exists()


@pytest.mark.parametrize("model, urdf, fragments", [
    ("urdf", "missing.urdf", ["missing.urdf: cannot read the URDF: No such file or directory"]),
    ("urdf", "dir", ["cannot read the URDF: Is a directory"]),
    ("urdf", "binary.urdf", ["binary.urdf: the URDF is not UTF-8 text (byte 128)"]),
    ("urdf", "broken.urdf", ["broken.urdf: URDF: invalid URDF XML"]),
    ("urdf", "moved.urdf", ["moved.urdf: URDF: joint 'elbow_joint' has another placement or axis"]),
    ("dh", "moved.urdf", ["er3a.yaml: robot 'er3a' is a DH table, not a URDF"]),
])
def test_bad_urdf_inputs_are_one_line(files, model, urdf, fragments, tmp_path):
    path = files["dir"] if urdf == "dir" else files["dir"] / urdf
    assert_one_line_error(run("export-urdf", "--model", files[model], "--urdf", path, "--out", tmp_path / "x.urdf"),
                          *fragments)


def test_bad_models_and_outputs_are_one_line_before_any_work(files, tmp_path):
    assert_one_line_error(run("export-urdf", "--model", tmp_path / "missing.yaml", "--out", tmp_path / "x.urdf"),
                          "cannot read the model file")
    assert_one_line_error(run("export-urdf", "--model", files["dir"] / "binary.urdf", "--out", tmp_path / "x.urdf"))
    result = run("export-urdf", "--model", tmp_path / "missing.yaml", "--out", files["dir"])
    assert result.returncode == 2 and "is a directory; give a file name" in result.stderr
    (tmp_path / "a_file").write_text("x")
    result = run("export-urdf", "--model", files["dh"], "--out", tmp_path / "a_file" / "x.urdf")
    assert result.returncode == 2 and "is not a directory" in result.stderr


def test_export_warns_naming_the_joints_whose_rotor_inertia_cannot_be_split_from_the_links(tmp_path):
    """UR5 (DH) with a rotor inertia per joint. Whether a column is separable is computed here by least squares
    on regressor columns over random states: the columns of Ia1 and Ia2 lie in the span of the links' inertial
    columns (joint 1 turns about the fixed base axis, joint 2 is the first horizontal one: a link's inertia about
    it and the rotor's act alike), those of Ia3 to Ia6 outside the span of every other column. The warnings name
    Ia1 with shoulder_pan_joint and Ia2 with shoulder_lift_joint, no other rotor; a poorly excited base parameter
    of link 6 names wrist_3_joint."""
    robot = load_robot(find_package_file("config", "robots", "ur5.yaml"))
    regressor = Regressor(robot, FrictionModel(), armature=True)
    rng = np.random.default_rng(0)
    states = [rng.uniform(-2.0, 2.0, (300, 6)) for _ in range(3)]
    Y = regressor.compute(*states).reshape(-1, regressor.n_parameters)
    names = regressor.parameter_names

    def outside_span(column, others):
        residual = Y[:, column] - Y[:, others] @ np.linalg.lstsq(Y[:, others], Y[:, column], rcond=None)[0]
        return np.linalg.norm(residual) / np.linalg.norm(Y[:, column])

    for joint in (1, 2):
        assert outside_span(names.index(f"Ia{joint}"), list(range(60))) < 1e-9
    for joint in (3, 4, 5, 6):
        others = [i for i in range(len(names)) if names[i] != f"Ia{joint}"]
        assert outside_span(names.index(f"Ia{joint}"), others) > 1e-3

    base = compute_base_parameters(regressor)
    standard = np.concatenate([plausible_parameters(robot, seed=1), np.full(6, 0.05)])        # no friction
    poor = [{"name": next(name for name in base.names if name.startswith("Ixx6")), "torque_fraction": 0.4,
             "joint": "wrist_3_joint", "relative_std": 0.3}]
    model = DynamicModel(robot, FrictionModel(), True, False, base, base.projection @ standard,
                         np.full(base.rank, 0.01), standard=standard, metrics={"poorly_excited": poor})
    result = run("export-urdf", "--model", model.save(tmp_path / "armature.yaml"), "--out", tmp_path / "arm.urdf")
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stdout.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 3, result.stdout
    for warning, joint, name in zip(warnings, (1, 2), ("shoulder_pan_joint", "shoulder_lift_joint")):
        assert warning.startswith(f"warning: rotor inertia Ia{joint} of joint {name} (the model's Ia{joint} = 0.05) "
                                  f"acts on the torques only together with the inertia of the link(s) of joint(s) "
                                  f"{name} ("), warning
    assert not any(f"Ia{joint} of" in result.stdout for joint in (3, 4, 5, 6))
    assert "wrist_3_joint (Ixx6" in warnings[2]
