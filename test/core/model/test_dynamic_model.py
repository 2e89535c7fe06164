"""The model artifact: deterministic YAML that round-trips, strict loading, torques equal to RNEA."""
import copy
import dataclasses
import itertools
import math
import re

import numpy as np
import pytest
import yaml

from robot_dynid.errors import DynIdError, ModelFileError
from robot_dynid.estimation.identification import IdentificationSettings, identify
from robot_dynid.experiment.simulation import (SimulatedRobot, plausible_parameters,
                                               simulation_parameters)
from robot_dynid.experiment.trajectories import FourierTrajectory, time_grid
from robot_dynid.model.base_parameters import BaseParameters, compute_base_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.friction import FrictionModel, friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot, robot_from_dict
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.recording import Recording
from rnea_reference import rnea_torques


@pytest.fixture(scope="module")
def er3a_model(er3a_robot):
    """ER3A (modified DH: link frames are pinocchio's joint frames) with known parameters."""
    robot = er3a_robot
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
    (lambda d: d.update(schema_version=3), r"^<dict>: schema_version 3 is not supported \(this robot_dynid reads 1 "
                                           r"and 2\)$"),
    (lambda d: d.update(schema_version=2), r"^<dict>: missing key 'standard_parameters'$"),
    (lambda d: d.update(links=[]), r"^<dict>: unknown key 'links'"),
    (lambda d: d.update(schema="other"), r"schema is 'other'"),
    (lambda d: d.update(extra=1), r"unknown key 'extra'"),
    (lambda d: d["model"].pop("friction"), r"missing key 'friction'"),
    (lambda d: d["base_parameters"]["table"].pop(), r"^<dict>: base_parameters.table has 47 entries, expected 48$"),
    (lambda d: d["base_parameters"]["table"][3].pop("std"), r"^<dict>: base_parameters.table\[3\]: missing key 'std'$"),
    (lambda d: d["base_parameters"]["table"][3].update(extra=1),
     r"^<dict>: base_parameters.table\[3\]: unknown key 'extra'"),
    (lambda d: d["base_parameters"]["table"][3].update(std=-0.1),
     r"^<dict>: base_parameters.table\[3\].std must be finite and >= 0, got -0.1$"),
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
    with pytest.raises(ModelFileError, match=r"^m.yaml: the model artifact is not valid YAML: [^\n]*$"):
        DynamicModel.from_yaml("a: [1, 2\nb: 3\n", source="m.yaml")
    with pytest.raises(ModelFileError, match=r"cannot read the model file"):
        DynamicModel.load(tmp_path)                 # a directory
    with pytest.raises(ModelFileError, match=r"^m.yaml: a model file must be a mapping, got str$"):
        DynamicModel.from_yaml("text", source="m.yaml")


@pytest.mark.parametrize("field, value, message", [
    ("values", math.nan, r"^values must be finite, got nan at base parameter Ixz2R$"),
    ("values", -math.inf, r"^values must be finite, got -inf at base parameter Ixz2R$"),
    ("std", math.nan, r"^std must be finite, got nan at base parameter Ixz2R$"),
    ("std", -1.0, r"^std must be >= 0, got -1.0 at base parameter Ixz2R$"),
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
    with pytest.raises(ModelFileError, match=r"^base_parameters.structure.beta must be finite, got -inf at "
                                             r"base_parameters.structure.beta\[2, 1\]$"):
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


def replaced_leaves(data, paths):
    """Yield ``(path, replacement)`` for each path and each of REPLACEMENTS while ``data`` holds the
    replacement at that leaf, restoring the leaf afterwards."""
    for path in paths:
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        kept = parent[path[-1]]
        for replacement in REPLACEMENTS:
            parent[path[-1]] = replacement
            try:
                yield path, replacement
            finally:
                parent[path[-1]] = kept


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
    for path, replacement in replaced_leaves(data, paths):
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
    assert essentials(DynamicModel.from_dict(data)) == reference           # the data was restored


def test_the_std_method_is_kept_and_a_file_without_it_loads_as_white_and_keeps_its_bytes(identified_artifact):
    """An identified model says which std it holds (block, with its degrees of freedom) and keeps the white-noise
    std beside it; a file written before that (no uncertainty, no white_std) is read as white std, written back as
    it was."""
    model = DynamicModel.from_dict(identified_artifact)
    assert model.std_method == "block" and model.interval_dof == model.metrics["uncertainty"]["n_blocks"] - 1
    assert model.white_std.shape == model.std.shape and np.all(model.white_std > 0.0)
    expected = {"std_method": "block", "interval_dof": model.interval_dof}
    assert identified_artifact["base_parameters"]["uncertainty"] == expected
    old = copy.deepcopy(identified_artifact)
    del old["base_parameters"]["uncertainty"]
    for row in old["base_parameters"]["table"]:
        del row["white_std"]
    loaded = DynamicModel.from_dict(old)
    assert (loaded.std_method, loaded.white_std, loaded.interval_dof) == ("white", None, None)
    np.testing.assert_array_equal(loaded.std, model.std)
    assert yaml.safe_load(loaded.to_yaml()) == old
    block_without_dof = copy.deepcopy(identified_artifact)
    block_without_dof["base_parameters"]["uncertainty"]["interval_dof"] = None
    with pytest.raises(ModelFileError, match=r"base_parameters.uncertainty.interval_dof is None, but a block std "
                                             r"has one"):
        DynamicModel.from_dict(block_without_dof)


def test_wrong_input_shape_names_the_field(er3a_model):
    model, _, _ = er3a_model
    with pytest.raises(ValueError, match=r"^qd must have shape \(6 joints,\), got \(5,\)$"):
        model.torque(np.zeros(6), np.zeros(5), np.zeros(6))


def test_model_without_friction_has_no_friction_columns(er3a_robot):
    robot = er3a_robot
    base = compute_base_parameters(Regressor(robot, FrictionModel()))
    assert not any(name.startswith(("fc", "fv")) for name in base.names)


# ---- standard parameters (schema version 2) -------------------------------------------------------------------


@pytest.fixture(scope="module")
def standard_model(er3a_model):
    """The ER3A model of er3a_model with its standard parameters known (and base values their projection)."""
    model, inertial, coefficients = er3a_model
    standard = np.concatenate([inertial, coefficients.ravel()])
    return DynamicModel(model.robot, model.friction, False, False, model.base, model.base.projection @ standard,
                        model.std, metrics=model.metrics, provenance=model.provenance, standard=standard)


def test_a_model_without_standard_parameters_is_written_as_version_1(er3a_model):
    model, _, _ = er3a_model
    data = yaml.safe_load(model.to_yaml())
    assert data["schema_version"] == 1 and "links" not in data and "standard_parameters" not in data
    assert model.standard is None and model.links is None


def test_standard_parameters_round_trip_exactly_with_links(standard_model, tmp_path):
    path = standard_model.save(tmp_path / "model.yaml")
    loaded = DynamicModel.load(path)
    assert loaded.to_yaml() == path.read_text()
    np.testing.assert_array_equal(loaded.standard, standard_model.standard)
    np.testing.assert_array_equal(loaded.values, standard_model.values)
    data = yaml.safe_load(path.read_text())
    assert data["schema_version"] == 2
    assert list(data["standard_parameters"]) == list(standard_model.base.standard_names)
    assert list(data)[list(data).index("base_parameters") + 1:][:2] == ["standard_parameters", "links"]
    assert [(link["name"], link["joint"]) for link in data["links"]] == [(f"j{j}_link", f"j{j}") for j in range(1, 7)]


def test_links_are_mass_centre_of_mass_and_inertia_about_it_in_the_link_frame(standard_model):
    """links[i] from the definitions: c = h / m, I_c = I_O - m (|c|^2 1 - c c^T), URDF order."""
    for index, link in enumerate(yaml.safe_load(standard_model.to_yaml())["links"]):
        m, h, (xx, xy, yy, xz, yz, zz) = (standard_model.standard[10 * index], standard_model.standard[10 * index + 1:
                                          10 * index + 4], standard_model.standard[10 * index + 4:10 * index + 10])
        c = h / m
        about_com = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]) - m * (c @ c * np.eye(3) - np.outer(c, c))
        assert link["mass"] == m
        np.testing.assert_allclose(link["com"], c, rtol=1e-12)
        np.testing.assert_allclose(link["inertia"], about_com[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]],
                                   rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("change, message", [
    (lambda s, m: s.__setitem__(9, s[9] + 0.01),
     r"^standard_parameters do not project onto the base parameters: they give \w+ = .*, base_parameters.table\[\d+\]"
     r".value is .* \(std 0.01\); they must agree within 0.001 std$"),
    (lambda s, m: s.__setitem__(61, math.nan),
     r"^standard_parameters must be finite, got nan at standard parameter fv1$"),
    (lambda s, m: s.__setitem__(20, -1.0), r"^standard_parameters: link 3 \(j3_link\) has mass -1.0 kg"),
])
def test_standard_parameters_must_be_finite_bodies_that_project_onto_the_values(standard_model, change, message):
    standard = standard_model.standard.copy()
    change(standard, standard_model)
    values = standard_model.values if "project" in message else standard_model.base.projection @ standard
    with pytest.raises(ModelFileError, match=message):
        DynamicModel(standard_model.robot, standard_model.friction, False, False, standard_model.base,
                     np.nan_to_num(values), standard_model.std, standard=standard)
    with pytest.raises(ModelFileError,
                       match=r"^standard_parameters must have shape \(72 standard parameters,\), got \(5,\)$"):
        DynamicModel(standard_model.robot, standard_model.friction, False, False, standard_model.base,
                     standard_model.values, standard_model.std, standard=standard[:5])


def test_standard_parameters_may_differ_from_the_values_by_a_fraction_of_their_std(standard_model):
    values = standard_model.values + 0.5e-3 * standard_model.std
    model = DynamicModel(standard_model.robot, standard_model.friction, False, False, standard_model.base, values,
                         standard_model.std, standard=standard_model.standard)
    assert DynamicModel.from_yaml(model.to_yaml()).to_yaml() == model.to_yaml()


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["standard_parameters"].pop("Izz6"), r"^<dict>: standard_parameters: missing key 'Izz6'$"),
    (lambda d: d["standard_parameters"].update(m7=1.0), r"^<dict>: standard_parameters: unknown key 'm7'"),
    (lambda d: d.pop("links"), r"^<dict>: missing key 'links'$"),
    (lambda d: d["links"].pop(), r"^<dict>: links has 5 entries, expected 6$"),
    (lambda d: d["links"][2].pop("joint"), r"^<dict>: links\[2\]: missing key 'joint'$"),
    (lambda d: d["links"][2].update(name="j2_link"), r"^<dict>: links\[2\].name is 'j2_link', expected 'j3_link'$"),
    (lambda d: d["links"][2]["com"].pop(), r"^<dict>: links\[2\].com has 2 entries, expected 3$"),
    (lambda d: d["links"][2].update(mass=d["links"][2]["mass"] * 1.001),
     r"^<dict>: links\[2\].mass is [\d.]+, but standard_parameters give [\d.]+$"),
    (lambda d: d["links"][4]["inertia"].__setitem__(3, 1.0),
     r"^<dict>: links\[4\].inertia\[3\] is 1.0, but standard_parameters give"),
])
def test_malformed_standard_parameters_and_links_are_rejected_by_name(standard_model, edit, message):
    data = yaml.safe_load(standard_model.to_yaml())
    edit(data)
    with pytest.raises(ModelFileError, match=message):
        DynamicModel.from_dict(data)


def test_every_leaf_of_the_standard_parameters_and_links_is_checked(standard_model):
    """As test_every_leaf_of_a_model_file_is_checked, for the leaves version 2 adds (and its version)."""
    data = yaml.safe_load(standard_model.to_yaml())
    reference = DynamicModel.from_dict(data).to_dict()
    paths = [path for path in leaves(data) if path[0] in ("standard_parameters", "links", "schema_version")]
    assert len(paths) == 72 + 6 * 12 + 1
    for path, replacement in replaced_leaves(data, paths):
        with pytest.raises(DynIdError) as error:
            DynamicModel.from_dict(data, source="model.yaml")
        message = str(error.value)
        assert "\n" not in message and message.startswith("model.yaml: ")
        assert path_text(path) in message, f"{path_text(path)} = {replacement!r}: {message}"
    assert DynamicModel.from_dict(data).to_dict() == reference


def test_a_dh_robot_with_inertial_entries_round_trips_in_the_model(standard_model):
    from robot_dynid.model.link_inertials import link_inertials, prior_parameters
    import dataclasses
    robot = dataclasses.replace(standard_model.robot,
                                inertials=link_inertials(standard_model.robot, standard_model.standard))
    model = dataclasses.replace(standard_model, robot=robot)
    loaded = DynamicModel.from_yaml(model.to_yaml())
    assert loaded.robot.inertials == robot.inertials
    np.testing.assert_allclose(prior_parameters(loaded.robot), standard_model.standard[:60], rtol=1e-12, atol=1e-15)


def test_torques_at_the_limits_of_motion_are_the_largest_over_every_sign_of_the_accelerations(er3a_model):
    """At each joint's peak state, RNEA plus friction (independent of the regressor) over all 2^6
    sign combinations of the accelerations at their limits gives the same peak; the state is
    within the limits, velocities and accelerations at them."""
    model, inertial, coefficients = er3a_model
    limits = model.robot.limit_arrays()
    peak = model.torque_at_limits_of_motion()
    corners = np.array(list(itertools.product((-1.0, 1.0), repeat=6))) * limits.acceleration
    for j in range(6):
        q, qd, qdd = peak.q[j], peak.qd[j], peak.qdd[j]
        assert ((limits.lower <= q) & (q <= limits.upper)).all()
        np.testing.assert_array_equal(np.abs(qd), limits.velocity)
        np.testing.assert_array_equal(np.abs(qdd), limits.acceleration)
        brute_force = max(abs(rnea_with_friction(model.robot, inertial, coefficients, q, qd, corner)[j])
                          for corner in corners)
        np.testing.assert_allclose(peak.torque[j], brute_force, rtol=1e-9)
        np.testing.assert_allclose(abs(rnea_with_friction(model.robot, inertial, coefficients, q, qd, qdd)[j]),
                                   peak.torque[j], rtol=1e-9)


def test_torques_at_the_limits_of_motion_scale_with_the_parameters_and_follow_the_limits_given(er3a_model):
    model, _, _ = er3a_model
    peak = model.torque_at_limits_of_motion().torque
    scaled = dataclasses.replace(model, values=1e6 * model.values, std=model.std)
    np.testing.assert_allclose(scaled.torque_at_limits_of_motion().torque, 1e6 * peak, rtol=1e-9)
    # at rest (tiny velocity and acceleration limits) only gravity is left, well below the peaks
    still = model.robot.limit_arrays()._replace(velocity=np.full(6, 1e-9), acceleration=np.full(6, 1e-9))
    assert (model.torque_at_limits_of_motion(still).torque[:3] < peak[:3]).all()


def test_the_kinematics_hash_changes_with_the_geometry_and_gravity_only():
    ur5 = load_robot(find_package_file("config", "robots", "ur5.yaml"))
    data = ur5.to_dict()
    renamed = robot_from_dict({**data, "name": "other", "joints": [
        {**joint, "name": f"j{index + 1}", "velocity_limit": 1.0, "effort_limit": 10.0}
        for index, joint in enumerate(data["joints"])]})
    assert renamed.kinematics_hash == ur5.kinematics_hash
    assert robot_from_dict(data).kinematics_hash == ur5.kinematics_hash      # a model artifact's round trip
    longer = robot_from_dict({**data, "joints": [{**data["joints"][0], "d": 0.090159}, *data["joints"][1:]]})
    assert longer.kinematics_hash != ur5.kinematics_hash                     # 1 mm
    tilted = robot_from_dict({**data, "gravity": [0.0, -9.81, 0.0]})
    assert tilted.kinematics_hash != ur5.kinematics_hash
    puma = load_robot(find_package_file("config", "robots", "puma560.yaml"))
    assert puma.kinematics_hash != ur5.kinematics_hash
    assert re.fullmatch(r"[0-9a-f]{16}", ur5.kinematics_hash)


def test_a_model_of_known_standard_parameters_gives_pinocchios_torques(er3a_robot):
    """DynamicModel.from_standard (CAD or datasheet values): pinocchio's RNEA of the same link parameters, with
    viscous friction and armature added by hand; a vector of the wrong length is refused, naming it."""
    friction = friction_model("coulomb_viscous")
    regressor = Regressor(er3a_robot, friction, armature=True)
    parameters = plausible_parameters(er3a_robot, seed=4)
    fc, fv, armature = np.full(6, 2.0), np.linspace(0.5, 1.5, 6), np.full(6, 0.01)
    standard = np.empty(regressor.n_parameters)
    names = regressor.parameter_names
    for j in range(6):
        standard[[names.index(f"{name}{j + 1}") for name in ("fc", "fv", "Ia")]] = fc[j], fv[j], armature[j]
    standard[:parameters.size] = parameters
    model = DynamicModel.from_standard(er3a_robot, standard, friction, armature=True)
    rng = np.random.default_rng(4)
    q, qd, qdd = (rng.uniform(-1.0, 1.0, (20, 6)) for _ in range(3))
    expected = rnea_torques(er3a_robot, parameters, q, qd, qdd) + fc * np.sign(qd) + fv * qd + armature * qdd
    np.testing.assert_allclose(model.torque(q, qd, qdd), expected, rtol=1e-9, atol=1e-9)
    assert np.array_equal(model.std, np.zeros(model.base.rank)) and model.standard is not None
    with pytest.raises(DynIdError, match="standard"):
        DynamicModel.from_standard(er3a_robot, parameters, friction, armature=True)
