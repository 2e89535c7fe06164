"""Feed-forward requests: flat per-point values by joint name to the model's joint order, the first
problem named; trajectory points joined into the flat layout; torques back in the request's order."""
import array
import dataclasses
import math
import os
import re

import numpy as np
import pytest

from robot_dynid.errors import DataError
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.feedforward import (Margins, ModelRefusedError, ReferenceMonitor, admit_model,
                                           compute_feedforward, join_points, request_arrays)
from robot_dynid.model.friction import FrictionModel
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot, robot_from_dict
from robot_dynid.package_files import find_package_file
from rnea_reference import rnea_torques
from repo_paths import TEST_DATA

MODEL = ("a", "b", "c")
REQUEST = ("c", "a", "b")                   # request order; model column j is request column ORDER[j]
ORDER = [REQUEST.index(name) for name in MODEL]
DATA = str(TEST_DATA)


def rows(n, seed=0):
    """q, qd, qdd, each (n, 3) in REQUEST order."""
    return np.random.default_rng(seed).uniform(-2.0, 2.0, (3, n, len(REQUEST)))


@pytest.mark.parametrize("kind", ["array", "list", "ndarray", "tuple"])
def test_flat_values_are_reordered_to_the_model_joints_whatever_the_sequence_type(kind):
    q, qd, qdd = rows(50)
    convert = {"array": lambda v: array.array("d", v.ravel()), "list": lambda v: v.ravel().tolist(),
               "ndarray": np.ravel, "tuple": lambda v: tuple(v.ravel())}[kind]
    result = request_arrays(MODEL, REQUEST, convert(q), convert(qd), convert(qdd))
    for got, expected in zip(result, (q, qd, qdd)):
        # point k, joint j of the request at k * 3 + j: the (50, 3) rows, columns in model order
        np.testing.assert_array_equal(got, expected[:, ORDER])
        assert got.shape == (50, 3) and got.flags.writeable


def test_the_arrays_returned_do_not_share_the_callers_buffers():
    q = array.array("d", [1.0, 2.0, 3.0])
    positions, _, _ = request_arrays(MODEL, MODEL, q)
    positions[0, 0] = 9.0
    assert q.tolist() == [1.0, 2.0, 3.0]


def test_empty_velocities_and_accelerations_are_zero():
    q, qd, _ = rows(4)
    positions, velocities, accelerations = request_arrays(MODEL, REQUEST, q.ravel(), qd.ravel(), array.array("d"))
    np.testing.assert_array_equal(positions, q[:, ORDER])
    np.testing.assert_array_equal(velocities, qd[:, ORDER])
    np.testing.assert_array_equal(accelerations, np.zeros((4, 3)))
    _, velocities, accelerations = request_arrays(MODEL, REQUEST, q.ravel())
    np.testing.assert_array_equal(velocities, np.zeros((4, 3)))
    np.testing.assert_array_equal(accelerations, np.zeros((4, 3)))


def flat(n_points, **values):
    """positions, velocities, accelerations of ``n_points`` zero points, with (point, joint) -> value set."""
    fields = {field: np.zeros(3 * n_points) for field in ("positions", "velocities", "accelerations")}
    for field, changes in values.items():
        for (point, joint), value in changes.items():
            fields[field][3 * point + REQUEST.index(joint)] = value
    return fields


@pytest.mark.parametrize("fields, message", [
    (dict(positions=np.zeros(5)),
     "positions has 5 values, not a multiple of the 3 joints in joint_names (point k, joint j at k * 3 + j)"),
    (dict(positions=np.zeros(0)), "no points given (positions is empty)"),
    (dict(positions=np.zeros(6), velocities=np.zeros(3)),
     "velocities has 3 values, expected 6 (2 point(s) x 3 joints, as positions) or none (all zero)"),
    (dict(positions=np.zeros(3), accelerations=np.zeros(4)),
     "accelerations has 4 values, expected 3 (1 point(s) x 3 joints, as positions) or none (all zero)"),
    (dict(positions=np.zeros((2, 3))),
     "positions must be a flat array (point k, joint j at k * 3 + j), got shape (2, 3)"),
    (flat(2, accelerations={(1, "a"): math.nan}), "point 1: accelerations of joint a is nan"),
    (flat(3, positions={(2, "b"): -math.inf}, velocities={(2, "c"): math.nan}),
     "point 2: positions of joint b is -inf"),
    # the first problem in point order wins over a later one in an earlier field
    (flat(4, positions={(3, "c"): math.inf}, velocities={(1, "b"): math.nan}, accelerations={(1, "a"): math.nan}),
     "point 1: velocities of joint b is nan"),
    # sizes are checked before values
    (dict(positions=np.full(6, math.nan), velocities=np.zeros(5)), "velocities has 5 values, expected 6"),
])
def test_the_first_problem_is_named(fields, message):
    with pytest.raises(DataError, match=re.escape(message)):
        request_arrays(MODEL, REQUEST, **fields)


def test_joint_name_problems_are_named_before_values_are_read():
    with pytest.raises(DataError, match=re.escape("joint_names lists unknown joint(s) ['d']; the model has ['a', 'b', "
                                                  "'c']")):
        request_arrays(MODEL, ("a", "b", "c", "d"), np.zeros(5))
    with pytest.raises(DataError, match=re.escape("joint_names is missing joint(s) ['c']; the model needs ['a', 'b', "
                                                  "'c']")):
        request_arrays(MODEL, ("a", "b"), np.zeros(5))
    with pytest.raises(DataError, match=re.escape("joint_names lists joint(s) ['a'] more than once; the model has "
                                                  "['a', 'b', 'c']")):
        request_arrays(MODEL, ("a", "b", "c", "a"), [])


def test_trajectory_points_join_into_the_flat_layout():
    q, qd, _ = rows(3)
    positions = join_points("positions", [array.array("d", row) for row in q], 3)
    np.testing.assert_array_equal(positions, q.ravel())
    # lists, and points without velocities (zero) beside points with them
    velocities = join_points("velocities", [list(qd[0]), [], array.array("d", qd[2])], 3)
    np.testing.assert_array_equal(velocities, np.concatenate([qd[0], np.zeros(3), qd[2]]))
    # no point with accelerations: empty, which request_arrays takes as zero
    assert join_points("accelerations", [array.array("d")] * 3, 3).size == 0


@pytest.mark.parametrize("field, points, message", [
    ("positions", [[0.0] * 3, [0.0] * 2], "point 1: positions has 2 values, expected 3 (one per joint in joint_names)"),
    ("positions", [[]], "point 0: positions has 0 values, expected 3"),
    ("velocities", [[], [], [1.0, 2.0, 3.0, 4.0]], "point 2: velocities has 4 values, expected 3"),
    ("accelerations", [[0.0] * 3, [[0.0] * 3]], "point 1: accelerations has 3 values, expected 3"),
])
def test_a_trajectory_point_of_the_wrong_size_is_named(field, points, message):
    with pytest.raises(DataError, match=re.escape(message)):
        join_points(field, points, 3)


def frictionless(robot, seed=3):
    """(model of ``robot`` without friction, std zero, its plausible link parameters of ``seed``: 10 per link)."""
    base = compute_base_parameters(Regressor(robot, FrictionModel()))
    parameters = plausible_parameters(robot, seed=seed)
    return DynamicModel(robot, FrictionModel(), False, False, base, base.projection @ parameters,
                        np.zeros(base.rank)), parameters


@pytest.fixture(scope="module")
def er3a(er3a_robot):
    return frictionless(er3a_robot)


def test_torques_equal_rnea_in_the_request_order_and_layout(er3a):
    model, parameters = er3a
    rng = np.random.default_rng(11)
    q, qd, qdd = rng.uniform(-1.0, 1.0, (3, 7, 6))
    order = [4, 0, 5, 2, 3, 1]
    names = [model.joint_names[i] for i in order]
    tau = compute_feedforward(model, names, q[:, order].ravel(), qd[:, order].ravel(), qdd[:, order].ravel())
    expected = np.array([rnea_torques(model.robot, parameters, *state) for state in zip(q, qd, qdd)])[:, order]
    np.testing.assert_allclose(tau, expected, rtol=1e-9, atol=1e-9)
    assert tau.flags.c_contiguous      # reshape(-1) is the request's flat layout


def test_positions_too_large_to_evaluate_are_refused_by_point_and_joint(er3a):
    model, _ = er3a
    q = np.zeros((2, 6))
    q[1, 2] = 1e308
    with pytest.raises(DataError, match=re.escape(
            "point 1: positions of joint j3 is 1e+308 rad, beyond its limits [-1.2217, 1.7453] rad by more than "
            "position_margin 0.1 rad")):
        compute_feedforward(model, model.joint_names, q.ravel())
    # without the position check, the torques are not finite: refused, never returned
    with pytest.raises(DataError, match=r"^point 1: the effort of joint j\d is nan: the point's values are too "
                                        r"large for the model to evaluate$"):
        compute_feedforward(model, model.joint_names, q.ravel(), margins=Margins(position=-1.0))


def test_velocities_too_large_to_evaluate_are_refused_by_point_and_joint(er3a):
    """Before the model squares them (1e200 ** 2 overflows): by the velocity limit, 5.5851 rad/s for j5."""
    model, _ = er3a
    qd = np.zeros((3, 6))
    qd[2, 4] = 1e200
    names = list(reversed(model.joint_names))
    with pytest.raises(DataError, match=re.escape("point 2: velocities of joint j5 is 1e+200 rad/s, beyond its "
                                                  "velocity limit 5.5851 rad/s times velocity_margin 1.1")):
        compute_feedforward(model, names, np.zeros(18), qd[:, ::-1].ravel())


@pytest.mark.parametrize("value, margin, refused", [
    (2.05, None, True), (-2.05, None, True), (1.99, None, False), (-1.99, None, False),
    (2.05, 0.2, False), (1.95, 0.0, True), (5.0, -1.0, False),
])
def test_positions_beyond_the_limits_plus_the_margin_are_refused(er3a, value, margin, refused):
    """j5 of the ER3A has limits [-1.9199, 1.9199] rad; the default margin is 0.1 rad."""
    model, parameters = er3a
    q = np.zeros((2, 6))
    q[1, 4] = value
    options = {} if margin is None else {"margins": Margins(position=margin)}
    if refused:
        with pytest.raises(DataError, match=re.escape(
                f"point 1: positions of joint j5 is {value!r} rad, beyond its limits [-1.9199, 1.9199] rad by more "
                f"than position_margin {0.1 if margin is None else margin!r} rad")):
            compute_feedforward(model, model.joint_names, q.ravel(), **options)
    else:
        tau = compute_feedforward(model, model.joint_names, q.ravel(), **options)
        np.testing.assert_allclose(tau[1], rnea_torques(model.robot, parameters, q[1], np.zeros(6), np.zeros(6)),
                                   rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("field, value, message", [
    ("position", math.nan, "position_margin must be finite and in (-inf, 6.28319] [rad], got nan"),
    ("position", 7.0, "position_margin must be finite and in (-inf, 6.28319] [rad], got 7.0"),
    ("velocity", 0.0, "velocity_margin must be finite and in (0, 10] [1], got 0.0"),
    ("acceleration", -1.0, "acceleration_margin must be finite and in (0, 10] [1], got -1.0"),
    ("effort", math.inf, "effort_margin must be finite and in (0, 10] [1], got inf"),
    ("model_effort", 11.0, "model_effort_margin must be finite and in (0, 10] [1], got 11.0"),
    ("max_points", 0, "max_points must be an integer in 1..1000000, got 0"),
    ("max_points", 2.5, "max_points must be an integer in 1..1000000, got 2.5"),
])
def test_a_bad_margin_is_refused_naming_it(field, value, message):
    with pytest.raises(DataError, match=re.escape(message)):
        Margins(**{field: value})


def test_continuous_joints_are_not_checked():
    """planar_gripper: shoulder revolute within [-1.5, 1.5] rad, wrist a URDF continuous joint."""
    robot = load_robot(os.path.join(DATA, "planar_gripper.yaml"))
    assert robot.continuous == (False, False, True)
    model, _ = frictionless(robot, seed=1)
    assert np.isfinite(compute_feedforward(model, robot.joint_names, [0.0, 0.0, 10.0])).all()
    with pytest.raises(DataError, match=r"point 0: positions of joint shoulder is 2.0 rad, beyond its limits "):
        compute_feedforward(model, robot.joint_names, [2.0, 0.0, 10.0])


@pytest.fixture(scope="module")
def ur5():
    """UR5 (effort limits 150 N m on the first three joints, 28 N m on the wrist) with plausible
    inertial parameters and no friction: its torques are pinocchio's RNEA with the same inertias."""
    return frictionless(load_robot(find_package_file("config", "robots", "ur5.yaml")))


@pytest.mark.parametrize("qd, qdd, message", [
    # the requests: 3e12 N m, and 71,833 N m on a 150 N m joint, once answered with success
    (1e6, 0.0, "point 0: velocities of joint shoulder_pan_joint is 1000000.0 rad/s, beyond its velocity limit 3.15 "
               "rad/s times velocity_margin 1.1"),
    (100.0, 1e4, "point 0: velocities of joint shoulder_pan_joint is 100.0 rad/s, beyond its velocity limit 3.15 "
                 "rad/s times velocity_margin 1.1"),
    (0.0, 16.0, "point 0: accelerations of joint shoulder_pan_joint is 16.0 rad/s^2, beyond its acceleration limit "
                "10.0 rad/s^2 times acceleration_margin 1.5"),
    (3.5, 0.0, "point 0: velocities of joint shoulder_pan_joint is 3.5 rad/s, beyond its velocity limit 3.15 rad/s "
               "times velocity_margin 1.1"),
])
def test_velocities_and_accelerations_beyond_the_robot_files_limits_are_refused(ur5, qd, qdd, message):
    """UR5 file: 3.15 rad/s and 10 rad/s^2 on every joint."""
    model, _ = ur5
    with pytest.raises(DataError, match=re.escape(message)):
        compute_feedforward(model, model.joint_names, np.zeros(6), np.full(6, qd), np.full(6, qdd))


def test_within_the_velocity_and_acceleration_margins_a_request_is_served(ur5):
    model, parameters = ur5
    qd, qdd = np.full(6, 3.4), np.full(6, 14.9)              # 1.08 and 1.49 times the limits
    q = np.full(6, 0.3)
    tau = compute_feedforward(model, model.joint_names, q, qd, qdd, margins=Margins(effort=10.0))
    np.testing.assert_allclose(tau[0], rnea_torques(model.robot, parameters, q, qd, qdd), rtol=1e-9, atol=1e-9)


def test_the_first_point_beyond_any_limit_is_named_whatever_the_field(ur5):
    model, _ = ur5
    q, qd, qdd = np.zeros((3, 3, 6))
    q[2, 0] = 7.0                       # point 2 position
    qdd[1, 4] = -20.0                   # point 1 acceleration: first in point order
    qd[2, 1] = 4.0
    names = list(reversed(model.joint_names))
    with pytest.raises(DataError, match=re.escape("point 1: accelerations of joint wrist_2_joint is -20.0 rad/s^2")):
        compute_feedforward(model, names, q[:, ::-1].ravel(), qd[:, ::-1].ravel(), qdd[:, ::-1].ravel())


@pytest.mark.parametrize("effort_margin, refused", [(1.0, True), (1.05, True), (1.1, False)])
def test_torques_beyond_the_effort_limit_of_the_robot_file_are_refused(ur5, effort_margin, refused):
    """Stretched out (q = 0), shoulder_lift_joint accelerating at -14 rad/s^2 (within 1.5 x 10):
    RNEA gives about -161.6 N m, beyond its 150 N m by a factor 1.077."""
    model, parameters = ur5
    q, qd, qdd = np.zeros(6), np.zeros(6), np.array([0.0, -14.0, 0.0, 0.0, 0.0, 0.0])
    expected = rnea_torques(model.robot, parameters, q, qd, qdd)
    assert 1.05 < abs(expected[1]) / 150.0 < 1.1 and (np.abs(expected[[0, 2]]) < 150.0).all()
    margins = Margins(effort=effort_margin)
    if refused:
        refusal = (r"^point 0: the effort of joint shoulder_lift_joint is (-[0-9.]+) N m, beyond its effort limit "
                   rf"150.0 N m times effort_margin {effort_margin}$")
        with pytest.raises(DataError, match=refusal) as error:
            compute_feedforward(model, model.joint_names, q, qd, qdd, margins=margins)
        value = float(re.search(r"is (-[0-9.]+) N m", str(error.value)).group(1))
        np.testing.assert_allclose(value, expected[1], rtol=1e-5)
    else:
        tau = compute_feedforward(model, model.joint_names, q, qd, qdd, margins=margins)
        np.testing.assert_allclose(tau[0], expected, rtol=1e-9, atol=1e-9)


def test_without_effort_limits_the_bound_is_twice_the_models_torque_at_the_limits_of_motion(er3a):
    """The ER3A file gives no effort limits: every request within the limits of motion is served;
    ten times the acceleration limits is refused by the bound, named as derived."""
    model, parameters = er3a
    limits = model.robot.limit_arrays()
    rng = np.random.default_rng(5)
    q = rng.uniform(limits.lower, limits.upper, (2000, 6))
    qd = rng.uniform(-1.0, 1.0, (2000, 6)) * limits.velocity
    qdd = rng.choice((-1.0, 1.0), (2000, 6)) * limits.acceleration
    tau = compute_feedforward(model, model.joint_names, q.ravel(), qd.ravel(), qdd.ravel(), margins=Margins(effort=1.0))
    np.testing.assert_allclose(tau[:5], rnea_torques(model.robot, parameters, q[:5], qd[:5], qdd[:5]),
                               rtol=1e-9, atol=1e-9)
    peak = model.torque_at_limits_of_motion().torque
    fast = 10.0 * limits.acceleration
    expected = rnea_torques(model.robot, parameters, np.zeros(6), np.zeros(6), fast)
    assert (np.abs(expected) > 2.0 * peak).any()
    with pytest.raises(DataError, match=r"^point 0: the effort of joint (j\d) is (-?[0-9.e+]+) N m, beyond its bound "
                                        r"([0-9.e+]+) N m \(2 x the model's largest torque at the limits of motion: "
                                        r"the robot gives no effort limit\) times effort_margin 1.0$") as error:
        compute_feedforward(model, model.joint_names, np.zeros(6), np.zeros(6), fast,
                            margins=Margins(acceleration=10.0, effort=1.0))
    joint, value, bound = re.search(r"(j\d) is (\S+) N m, beyond its bound (\S+) N m", str(error.value)).groups()
    index = model.joint_names.index(joint)
    np.testing.assert_allclose(float(value), expected[index], rtol=1e-5)
    np.testing.assert_allclose(float(bound), 2.0 * peak[index], rtol=1e-5)


def test_more_points_than_max_points_are_refused(er3a):
    model, _ = er3a
    assert compute_feedforward(model, model.joint_names, np.zeros(60), margins=Margins(max_points=10)).shape == (10, 6)
    with pytest.raises(DataError, match=re.escape("11 points requested (positions has 66 values for 6 joints), more "
                                                  "than max_points 10; split the request")):
        compute_feedforward(model, model.joint_names, np.zeros(66), margins=Margins(max_points=10))


def scaled(model, factor):
    return dataclasses.replace(model, values=factor * model.values)


def renamed_robot(robot, name, joint_names):
    """``robot`` (a DH robot) under another name with other joint names: the same arm, limits and kinematics."""
    data = robot.to_dict()
    return robot_from_dict({**data, "name": name, "joints": [
        {**joint, "name": joint_name} for joint, joint_name in zip(data["joints"], joint_names)]})


def test_a_plausible_model_is_admitted_and_one_a_million_times_heavier_is_refused(ur5):
    model, _ = ur5
    limits = admit_model(model)
    np.testing.assert_array_equal(limits.effort, [150.0, 150.0, 150.0, 28.0, 28.0, 28.0])
    assert not limits.effort_derived.any()
    with pytest.raises(ModelRefusedError, match=r"^at the limits of motion \(velocities and accelerations at their "
                                                r"limits\) the model needs [0-9.e+]+ N m at joint \w+, more than "
                                                r"model_effort_margin 3.0 times its effort limit (150|28).0 N m$"):
        admit_model(scaled(model, 1e6))
    # ten times heavier: gravity alone at q = 0 (RNEA, about 800 N m) is beyond 3 x 150 N m
    with pytest.raises(ModelRefusedError, match="shoulder_lift_joint"):
        admit_model(scaled(model, 10.0))


def test_a_model_of_another_robot_with_the_same_joint_names_is_refused(ur5):
    """A UR-like robot whose joints are j1..j6, as the PUMA 560's are; the PUMA's model needs less
    than the UR's effort limits, so only its structure gives it away."""
    ur_like = renamed_robot(ur5[0].robot, "ur5", [f"j{i}" for i in range(1, 7)])
    puma = load_robot(find_package_file("config", "robots", "puma560.yaml"))
    assert puma.joint_names == ur_like.joint_names
    puma_model = frictionless(puma)[0]
    admit_model(puma_model)                                   # fine for a PUMA
    with pytest.raises(ModelRefusedError, match=re.escape(
            "the model is not of robot_file ur_like.yaml: its robot is 'puma560', not 'ur5'")):
        admit_model(puma_model, expected=ur_like, expected_what="robot_file ur_like.yaml")
    disguised = frictionless(renamed_robot(puma, "ur5", puma.joint_names))[0]
    with pytest.raises(ModelRefusedError, match=re.escape(
            f"the model is not of robot_file ur_like.yaml: its robot's kinematics (hash {puma.kinematics_hash}) are "
            f"not those of 'ur5' (hash {ur_like.kinematics_hash})")):
        admit_model(disguised, expected=ur_like, expected_what="robot_file ur_like.yaml")
    limits = admit_model(frictionless(ur_like)[0], expected=ur_like)
    assert limits.effort[0] == 150.0


def test_a_model_with_other_joints_is_refused_and_the_expected_robots_limits_apply(ur5):
    model, _ = ur5
    panda = load_robot(find_package_file("config", "robots", "panda.yaml"))
    with pytest.raises(ModelRefusedError, match=r"^the model is not of the expected robot: its robot is 'panda'"):
        admit_model(frictionless(panda)[0], expected=model.robot)
    tighter = robot_from_dict({**model.robot.to_dict(), "joints": [
        {**joint, "velocity_limit": 1.0} for joint in model.robot.to_dict()["joints"]]})
    limits = admit_model(model, expected=tighter)
    np.testing.assert_array_equal(limits.velocity, np.ones(6))
    with pytest.raises(DataError, match=r"velocity limit 1.0 rad/s times velocity_margin 1.1$"):
        compute_feedforward(model, model.joint_names, np.zeros(6), np.full(6, 2.0), limits=limits)


def test_the_reference_monitor_times_out_without_valid_references():
    monitor = ReferenceMonitor(0.5, start=100.0)
    assert monitor.state(100.1, has_model=False)[0] == ReferenceMonitor.NO_MODEL
    assert monitor.state(100.1, has_model=True) == (ReferenceMonitor.WAITING, "waiting for the first reference")
    state, message = monitor.state(100.6, has_model=True)            # none since start
    assert state == ReferenceMonitor.TIMEOUT and message.startswith("no reference yet for 0.6 s (reference_timeout "
                                                                    "0.5 s): publishing zero feed-forward")
    monitor.answered(101.0)
    assert monitor.state(101.4, True) == (ReferenceMonitor.OK, "")
    assert monitor.state(101.6, True)[0] == ReferenceMonitor.TIMEOUT     # the stream stopped
    monitor.answered(102.0)
    monitor.refused(102.1, "point 0: positions of joint a is nan")
    assert monitor.state(102.2, True) == (ReferenceMonitor.REFUSED, "reference refused, nothing new published: "
                                                                    "point 0: positions of joint a is nan")
    monitor.refused(102.45, "point 0: positions of joint a is nan")
    state, message = monitor.state(102.55, True)                         # refused for longer than the timeout
    assert state == ReferenceMonitor.TIMEOUT
    assert message.endswith("; the last reference was refused: point 0: positions of joint a is nan")
    monitor.answered(103.0)
    assert monitor.state(103.1, True) == (ReferenceMonitor.OK, "")
    assert (monitor.answered_count, monitor.refused_count, monitor.last_refusal) == (
        3, 2, "point 0: positions of joint a is nan")
    assert ReferenceMonitor(0.5, start=0.0, enabled=False).state(10.0, True) == (ReferenceMonitor.OK, "")
    with pytest.raises(DataError, match=r"reference_timeout must be finite and > 0 \[s\], got 0.0"):
        ReferenceMonitor(0.0, start=0.0)


def test_time_the_caller_was_held_up_does_not_count_towards_the_reference_timeout():
    """Checks every 0.125 s; the caller stops for 0.8 s (a large request converted under the
    interpreter lock) while references wait in its queue: no zero at the late check, and none
    once the waiting references are taken; if none comes, zero is due a period later."""
    monitor = ReferenceMonitor(0.5, start=0.0)
    for tick in range(1, 9):
        monitor.answered(0.125 * tick - 0.01)
        assert not monitor.check(0.125 * tick, has_model=True)
    assert not monitor.check(1.0 + 0.8, has_model=True)       # late by 0.675 s: held up
    monitor.answered(1.81)
    assert not monitor.check(1.925, has_model=True)
    stalled = ReferenceMonitor(0.5, start=0.0)
    stalled.answered(0.9)
    assert not any(stalled.check(0.125 * tick, has_model=True) for tick in range(1, 9))
    assert not stalled.check(1.9, has_model=True)              # held up 0.775 s, no reference since 0.9 s
    assert not stalled.check(2.025, has_model=True)            # 0.35 s counted
    assert not stalled.check(2.15, has_model=True)             # 0.475 s
    assert stalled.check(2.275, has_model=True)                # 0.6 s counted: zero is due
    # a stream that really stopped: zero once 0.5 s have passed, at the first check after it
    stopped = ReferenceMonitor(0.5, start=0.0)
    stopped.answered(0.1)
    assert [stopped.check(0.125 * tick, has_model=True) for tick in range(1, 7)] == [False] * 4 + [True] * 2


def test_an_effort_margin_the_model_cannot_hold_the_arm_with_is_refused_naming_it():
    """UR5 with plausible links: holding the arm still needs tens of N m at shoulder_lift_joint (effort limit
    150 N m), so an effort margin of 0.01 (1.5 N m) would refuse every request there; the default 1.5 admits it."""
    model, links = frictionless(load_robot(find_package_file("config", "robots", "ur5.yaml")), seed=1)
    holding = model.holding_torque()
    # shoulder_lift carries the links after it at a lever of at most the arm's reach (UR5: under 1 m)
    assert 1.0 < holding[1] < 9.81 * links[10::10].sum() * 1.0
    admit_model(model, Margins())
    with pytest.raises(ModelRefusedError, match=r"holding the arm still within its position limits the model needs "
                                                r"up to [0-9.]+ N m at joint shoulder_lift_joint, more than "
                                                r"effort_margin 0\.01 times its effort limit 150\.0 N m"):
        admit_model(model, Margins(effort=0.01))
