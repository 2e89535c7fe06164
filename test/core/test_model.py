"""The model artifact: deterministic YAML that round-trips, strict loading, torques equal to RNEA."""
import math
import re

import numpy as np
import pytest
import yaml

from robot_dynid.base_parameters import BaseParameters, compute_base_parameters
from robot_dynid.errors import DynIdError, ModelFileError
from robot_dynid.friction import FrictionModel, friction_model
from robot_dynid.identification import IdentificationSettings, identify
from robot_dynid.model import DynamicModel
from robot_dynid.package_files import find_package_file
from robot_dynid.recording import Recording
from robot_dynid.regressor import Regressor
from robot_dynid.robot_description import load_robot, robot_from_dict
from robot_dynid.simulation import SimulatedRobot, plausible_parameters, simulation_parameters
from robot_dynid.trajectories import FourierTrajectory, time_grid
from rnea_reference import rnea_torques


@pytest.fixture(scope="module")
def er3a_model():
    """ER3A (modified DH: link frames are pinocchio's joint frames) with known parameters."""
    robot = load_robot(find_package_file("config", "robots", "er3a.yaml"))
    friction = friction_model("coulomb_viscous")
    base = compute_base_parameters(Regressor(robot, friction))
    inertial = plausible_parameters(robot, seed=4)
    coefficients = np.column_stack([np.linspace(1, 3, 6), np.linspace(0.5, 1.5, 6)])
    truth = np.concatenate([inertial, coefficients.ravel()])
    model = DynamicModel(robot, friction, False, False, base, base.projection @ truth,
                         np.full(base.rank, 0.01), metrics={"condition_number": 12.5},
                         provenance={"data_source": "unit test"})
    return model, inertial, coefficients


def rnea_with_friction(robot, inertial, coefficients, q, qd, qdd):
    return rnea_torques(robot, inertial, q, qd, qdd) + coefficients[:, 0] * np.sign(qd) + coefficients[:, 1] * qd


def test_torque_equals_rnea_plus_friction_for_one_point_and_a_batch(er3a_model):
    model, inertial, coefficients = er3a_model
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.uniform(-1, 1, (3, 8, 6))
    batch = model.torque(q, qd, qdd)
    assert batch.shape == (8, 6)
    for k in range(8):
        expected = rnea_with_friction(model.robot, inertial, coefficients, q[k], qd[k], qdd[k])
        np.testing.assert_allclose(batch[k], expected, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(model.torque(q[k], qd[k], qdd[k]), expected, rtol=1e-9, atol=1e-9)


def test_artifact_round_trips_byte_for_byte(er3a_model, tmp_path):
    model, _, _ = er3a_model
    path = model.save(tmp_path / "model.yaml")
    loaded = DynamicModel.load(path)
    assert loaded.to_yaml() == path.read_text()
    rng = np.random.default_rng(1)
    q, qd, qdd = rng.uniform(-1, 1, (3, 5, 6))
    np.testing.assert_array_equal(loaded.torque(q, qd, qdd), model.torque(q, qd, qdd))
    data = yaml.safe_load(path.read_text())
    assert data["units"]["inertial_parameter_order"] == ["m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz",
                                                         "Izz"]
    assert data["model"]["joint_names"] == list(model.robot.joint_names)
    assert [row["name"] for row in data["base_parameters"]["table"]] == list(model.base.names)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(schema_version=2), r"schema_version 2 is not supported"),
    (lambda d: d.update(schema="other"), r"schema is 'other'"),
    (lambda d: d.update(extra=1), r"unknown key\(s\) \['extra'\]"),
    (lambda d: d["model"].pop("friction"), r"missing key 'friction'"),
    (lambda d: d["base_parameters"]["table"].pop(), r"^<dict>: base_parameters.table has 47 entries, expected 48$"),
    (lambda d: d["base_parameters"]["table"][3].pop("std"), r"^<dict>: base_parameters.table\[3\]: missing key 'std'$"),
    (lambda d: d["base_parameters"]["table"][3].update(extra=1),
     r"^<dict>: base_parameters.table\[3\]: unknown key\(s\) \['extra'\]"),
    (lambda d: d["base_parameters"]["table"][3].update(std=-0.1),
     r"^<dict>: base_parameters.table\[3\].std is -0.1 \(base parameter \w+\); it must be finite and >= 0$"),
    (lambda d: d["base_parameters"]["table"][2].update(value=d["base_parameters"]["table"][3]["value"]) or
     d["base_parameters"]["table"].insert(2, d["base_parameters"]["table"].pop(3)),
     r"^<dict>: base_parameters.table\[2\].name is '\w+' but base_parameters.structure.names\[2\] is '\w+'$"),
    (lambda d: d["model"]["friction"].update(name="none"),
     r"^<dict>: base_parameters.structure.standard_names\[60\] is 'fc1', but the regressor of this robot, "
     r"friction model, armature and offset has None there \(60 parameters\)$"),
    (lambda d: d["robot"].update(gravity=[0.0, 0.0, -9810.0]), r"^<dict>: robot: gravity \[0, 0, -9810\] has norm"),
])
def test_malformed_artifacts_are_rejected_by_name(er3a_model, edit, message):
    model, _, _ = er3a_model
    data = yaml.safe_load(model.to_yaml())
    edit(data)
    with pytest.raises(ModelFileError, match=message):
        DynamicModel.from_dict(data)


def test_yaml_and_file_errors_are_one_line(tmp_path):
    with pytest.raises(ModelFileError, match=r"^m.yaml: not valid YAML: [^\n]*$"):
        DynamicModel.from_yaml("a: [1, 2\nb: 3\n", source="m.yaml")
    with pytest.raises(ModelFileError, match=r"cannot read the model file"):
        DynamicModel.load(tmp_path)                 # a directory
    with pytest.raises(ModelFileError, match=r"^m.yaml: a model file must be a mapping, got 'text'$"):
        DynamicModel.from_yaml("text", source="m.yaml")


@pytest.mark.parametrize("field, value, message", [
    ("values", math.nan, r"base_parameters.table\[5\].value is nan \(base parameter \w+\); it must be finite$"),
    ("values", -math.inf, r"base_parameters.table\[5\].value is -inf"),
    ("std", math.nan, r"base_parameters.table\[5\].std is nan \(base parameter \w+\); it must be finite and >= 0"),
    ("std", -1.0, r"base_parameters.table\[5\].std is -1.0"),
])
def test_only_finite_models_exist(er3a_model, field, value, message):
    model, _, _ = er3a_model
    arrays = {"values": model.values.copy(), "std": model.std.copy()}
    arrays[field][5] = value
    with pytest.raises(ModelFileError, match=message):
        DynamicModel(model.robot, model.friction, False, False, model.base, arrays["values"], arrays["std"])


def test_base_parameters_from_dict_refuses_a_non_finite_beta(er3a_model):
    model, _, _ = er3a_model
    structure = model.base.to_dict()
    structure["beta"][2][1] = -math.inf
    with pytest.raises(ModelFileError, match=r"^base_parameters.structure: beta\[2\]\[1\] is -inf$"):
        BaseParameters.from_dict(structure, label="base_parameters.structure")


@pytest.fixture(scope="module")
def identified_artifact():
    """The artifact (parsed YAML) of a model identified from simulated data: the ER3A with effort
    limits and a base row added (so every key of a DH robot occurs), coulomb_viscous friction with
    a dead band, armature and offset columns."""
    data = yaml.safe_load(find_package_file("config", "robots", "er3a.yaml").read_text())
    data["base"] = {"a": 0.0, "alpha": 0.0, "d": 0.1, "theta": 0.2}
    for joint in data["joints"]:
        joint["effort_limit"] = 100.0
    robot = robot_from_dict(data)
    settings = IdentificationSettings(friction=friction_model("coulomb_viscous", dead_band=0.001),
                                      armature=True, offset=True)
    regressor = settings.regressor(robot)
    rng = np.random.default_rng(3)
    scale = 0.1 * np.array([limit.velocity for limit in robot.limits])[:, None]
    trajectory = FourierTrajectory(robot.joint_names, period=8.0, q0=np.zeros(6),
                                   a=rng.normal(size=(6, 4)) * scale, b=rng.normal(size=(6, 4)) * scale)
    t = time_grid(16.0, dt=0.01)
    q, qd, qdd = trajectory.evaluate(t)
    simulator = SimulatedRobot(regressor, simulation_parameters(regressor, seed=1), noise_std=0.1)
    recording = Recording.from_arrays(robot.joint_names, t, q, qd, qdd, simulator.torques(q, qd, qdd, rng=2))
    model = identify(recording, robot, settings, provenance={"data_source": "simulated", "note": "walk"})
    return yaml.safe_load(model.to_yaml())


def leaves(tree, path=()):
    """Paths (tuples of keys and indices) of every scalar in a parsed YAML tree."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from leaves(value, path + (key,))
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            yield from leaves(value, path + (index,))
    else:
        yield path


def path_text(path):
    """A leaf's path as messages write it: ``base_parameters.table[3].value``."""
    return "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in path).lstrip(".")


#: Leaves that are free text: diagnostics and provenance are kept as they are, whatever they hold
#: (nothing reads them back); the robot's name only labels it.
FREE = (("metrics",), ("provenance",))
REPLACEMENTS = ("abc", math.nan, math.inf, None, [1.0, 2.0], {"nested": {"x": 1.0}})


def test_every_leaf_of_a_model_file_is_checked(identified_artifact):
    """Each leaf replaced by a string, NaN, inf, null, a list or a mapping: the model loads (free
    leaves only) and is the same, or one DynIdError line names the leaf; nothing else is raised."""
    data = identified_artifact
    original = DynamicModel.from_dict(data)

    def essentials(model):
        result = model.to_dict()
        del result["metrics"], result["provenance"], result["robot"]["name"]
        return result

    reference = essentials(original)
    paths = list(leaves(data))
    assert len(paths) > 2000 and {path[0] for path in paths} == set(data)
    for path in paths:
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        kept = parent[path[-1]]
        for replacement in REPLACEMENTS:
            parent[path[-1]] = replacement
            free = path[:1] in FREE or (path == ("robot", "name") and isinstance(replacement, str))
            try:
                loaded = DynamicModel.from_dict(data, source="model.yaml")
            except DynIdError as error:
                message = str(error)
                assert not free, f"{path_text(path)} = {replacement!r}: {message}"
                # robot messages label joints "joints[2] (j3)" and come as "robot: <field> ..."
                named = re.sub(r"\] \([^)]*\)", "]", message).replace("robot: ", "robot.")
                assert "\n" not in message and message.startswith("model.yaml: ")
                assert path_text(path) in named, f"{path_text(path)} = {replacement!r}: {message}"
            else:
                assert free, f"{path_text(path)} = {replacement!r} was accepted"
                assert essentials(loaded) == reference
            finally:
                parent[path[-1]] = kept
    assert essentials(DynamicModel.from_dict(data)) == reference           # the data was restored


def test_wrong_input_shape_names_the_field(er3a_model):
    model, _, _ = er3a_model
    with pytest.raises(ValueError, match=r"qd has shape \(1, 5\), expected \(N, 6\)"):
        model.torque(np.zeros(6), np.zeros(5), np.zeros(6))


def test_model_without_friction_has_no_friction_columns():
    robot = load_robot(find_package_file("config", "robots", "er3a.yaml"))
    base = compute_base_parameters(Regressor(robot, FrictionModel()))
    assert not any(name.startswith(("fc", "fv")) for name in base.names)
