"""The regressor against pinocchio's RNEA, a closed-form 2-link arm and hand-built columns."""
import glob
import math
import os

import numpy as np
import pinocchio as pin
import pytest
import scipy.linalg

from robot_dynid.errors import DataError, DynIdError
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor, inertia_parameter_map
from robot_dynid.model.robot_description import link_frame_placements
from robot_dynid.model.robot_loader import load_robot, robot_from_dict
from repo_paths import REPO

ROOT = str(REPO)
CONFIGS = sorted(glob.glob(os.path.join(ROOT, "config", "robots", "*.yaml"))) + [
    os.path.join(ROOT, "test", "data", "planar_gripper.yaml")]


def random_states(robot, n_samples, rng):
    lower = np.array([limit.position[0] for limit in robot.limits])
    upper = np.array([limit.position[1] for limit in robot.limits])
    n = robot.n_joints
    return (rng.uniform(lower, upper, (n_samples, n)), rng.uniform(-3, 3, (n_samples, n)),
            rng.uniform(-10, 10, (n_samples, n)))


def rnea_with_random_inertias(regressor, q, qd, qdd, rng):
    """Link parameters (10 n,) of random valid inertias and pinocchio's RNEA torques for them,
    computed on a separate model and workspace."""
    model = regressor.model.copy()
    data = model.createData()
    parameters = []
    for joint_id, link_frame in enumerate(link_frame_placements(model), start=1):
        inertia = pin.Inertia.Random()
        parameters.append(inertia.toDynamicParameters())
        model.inertias[joint_id] = link_frame.act(inertia)
    tau = np.array([pin.rnea(model, data, *state) for state in zip(q, qd, qdd)])
    return np.concatenate(parameters), tau


@pytest.mark.parametrize("path", CONFIGS, ids=os.path.basename)
def test_regressor_times_parameters_equals_rnea(path):
    robot = load_robot(path)
    regressor = Regressor(robot)
    rng = np.random.default_rng(11)
    pin.seed(11)
    q, qd, qdd = random_states(robot, 43, rng)   # not a multiple of the kernel's 4 lanes
    parameters, tau = rnea_with_random_inertias(regressor, q, qd, qdd, rng)
    np.testing.assert_allclose(regressor.compute(q, qd, qdd) @ parameters, tau, rtol=0, atol=1e-9)
    np.testing.assert_allclose(regressor.torque(parameters, q, qd, qdd), tau, rtol=0, atol=1e-9)


@pytest.mark.parametrize("path", CONFIGS, ids=os.path.basename)
def test_compute_one_equals_pinocchio_regressor_in_link_frame_parameters(path):
    robot = load_robot(path)
    regressor = Regressor(robot, friction=friction_model("coulomb_viscous"), armature=True,
                          offset=True)
    model = regressor.model.copy()
    data = model.createData()
    # pinocchio's columns are joint-frame parameters; joint = map @ link parameters
    to_joint_frame = scipy.linalg.block_diag(*(
        inertia_parameter_map(placement.rotation, placement.translation)
        for placement in link_frame_placements(model)))
    q, qd, qdd = random_states(robot, 5, np.random.default_rng(4))
    inertial = regressor.slices["inertial"]
    for k in range(5):
        expected = pin.computeJointTorqueRegressor(model, data, q[k], qd[k], qdd[k]) @ to_joint_frame
        Y = regressor.compute_one(q[k], qd[k], qdd[k])
        np.testing.assert_allclose(Y[:, inertial], expected, rtol=0, atol=1e-9)
        np.testing.assert_array_equal(Y[:, inertial.stop:], regressor.compute(
            q[k:k + 1], qd[k:k + 1], qdd[k:k + 1])[0, :, inertial.stop:])


def test_out_is_overwritten_entirely_and_checked():
    robot = load_robot(os.path.join(ROOT, "config", "robots", "ur5.yaml"))
    regressor = Regressor(robot, friction=friction_model("coulomb_viscous"), offset=True)
    q, qd, qdd = random_states(robot, 9, np.random.default_rng(6))
    expected = regressor.compute(q, qd, qdd)
    out = np.full((9, 6, regressor.n_parameters), np.nan)
    assert regressor.compute(q, qd, qdd, out=out) is out
    np.testing.assert_array_equal(out, expected)
    # structural zeros: joint j does not feel the parameters of links before it
    assert not expected[:, 3, :30].any()
    with pytest.raises(DataError, match=r"out must be a writeable C-ordered float64 array of "
                                        r"shape \(9, 6, 78\), got float64 \(9, 6, 72\)"):
        regressor.compute(q, qd, qdd, out=np.empty((9, 6, 72)))
    with pytest.raises(DataError, match=r"out must be a writeable C-ordered"):
        regressor.compute(q, qd, qdd, out=np.empty((9, 6, 78), order="F"))


@pytest.mark.parametrize("offset", [0, 1, 2], ids=["aligned", "8-byte offset", "16-byte offset"])
def test_outputs_larger_than_a_cache_stream_to_memory_unchanged(offset):
    """Above 8 MB the kernel copies its tiles with non-temporal stores (32-byte ones from a
    32-byte boundary on, none when out is not 16-byte aligned): every row, at any alignment,
    equals the one-sample evaluation."""
    robot = load_robot(os.path.join(ROOT, "config", "robots", "ur5.yaml"))
    regressor = Regressor(robot, friction=friction_model("coulomb_viscous"))
    n_samples = 4003                                       # 13.8 MB; a 3-sample tail block
    q, qd, qdd = random_states(robot, n_samples, np.random.default_rng(9))
    size = n_samples * 6 * regressor.n_parameters
    out = np.full(size + offset, np.nan)[offset:].reshape(n_samples, 6, regressor.n_parameters)
    regressor.compute(q, qd, qdd, out=out)
    assert np.isfinite(out).all()
    for k in (0, 1, 2, 3, 4, 1001, 2222, 3999, 4000, 4001, 4002):
        # the one-sample path may contract multiply-adds differently: rounding differs, nothing else
        np.testing.assert_allclose(out[k], regressor.compute_one(q[k], qd[k], qdd[k]), rtol=0,
                                   atol=1e-13 * np.abs(out[k]).max())


def test_kernel_sine_and_cosine_match_libm():
    from robot_dynid import _regressor_kernel

    x = np.concatenate([np.linspace(-120.0, 120.0, 240001),
                        [0.0, -0.0, math.pi / 4, math.pi / 2, math.pi, 1e-300, -3 * math.pi / 4]])
    sine, cosine = np.empty_like(x), np.empty_like(x)
    _regressor_kernel.sine_cosine(x, sine, cosine)
    np.testing.assert_allclose(sine, np.sin(x), rtol=0, atol=4.5e-16)
    np.testing.assert_allclose(cosine, np.cos(x), rtol=0, atol=4.5e-16)


def test_chunks_give_the_same_regressor():
    robot = load_robot(os.path.join(ROOT, "config", "robots", "panda.yaml"))
    q, qd, qdd = random_states(robot, 23, np.random.default_rng(5))
    whole = Regressor(robot).compute(q, qd, qdd)
    np.testing.assert_array_equal(Regressor(robot, chunk_size=4).compute(q, qd, qdd), whole)


def planar_arm(l1, l2):
    """2R arm in the vertical x-y plane (gravity -y), standard DH, link frames at the distal
    joints."""
    joint = {"alpha": 0.0, "d": 0.0, "position_limits": [-3.0, 3.0], "velocity_limit": 2.0,
             "acceleration_limit": 5.0}
    return robot_from_dict({"name": "planar", "dh_convention": "standard",
                            "gravity": [0.0, -9.81, 0.0],
                            "joints": [dict(joint, name="j1", a=l1),
                                       dict(joint, name="j2", a=l2)]})


def test_two_link_arm_matches_textbook_dynamics():
    l1, l2, lc1, lc2, m1, m2, I1, I2, g = 0.5, 0.4, 0.2, 0.15, 3.0, 2.0, 0.05, 0.03, 9.81
    regressor = Regressor(planar_arm(l1, l2))
    parameters = np.zeros(20)
    for link, (mass, length, centre, inertia) in enumerate(((m1, l1, lc1, I1),
                                                            (m2, l2, lc2, I2))):
        offset = centre - length                  # centre of mass on x of the distal frame
        block = parameters[10 * link:10 * link + 10]
        block[0], block[1] = mass, mass * offset
        block[9] = inertia + mass * offset**2     # Izz about the frame origin
        block[4] = block[6] = 0.01                # Ixx, Iyy: no effect in the plane
    rng = np.random.default_rng(7)
    q, qd, qdd = (rng.uniform(-2, 2, (30, 2)) for _ in range(3))
    c2, s2 = np.cos(q[:, 1]), np.sin(q[:, 1])
    c1, c12 = np.cos(q[:, 0]), np.cos(q[:, 0] + q[:, 1])
    m11 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * c2) + I1 + I2
    m12 = m2 * (lc2**2 + l1 * lc2 * c2) + I2
    m22 = m2 * lc2**2 + I2
    h = m2 * l1 * lc2 * s2
    tau1 = (m11 * qdd[:, 0] + m12 * qdd[:, 1] - h * (2 * qd[:, 0] * qd[:, 1] + qd[:, 1]**2)
            + (m1 * lc1 + m2 * l1) * g * c1 + m2 * lc2 * g * c12)
    tau2 = m12 * qdd[:, 0] + m22 * qdd[:, 1] + h * qd[:, 0]**2 + m2 * lc2 * g * c12
    np.testing.assert_allclose(regressor.compute(q, qd, qdd) @ parameters,
                               np.column_stack([tau1, tau2]), rtol=0, atol=1e-10)


def test_friction_armature_and_offset_columns():
    robot = load_robot(os.path.join(ROOT, "config", "robots", "ur5.yaml"))
    regressor = Regressor(robot, friction=friction_model("coulomb_viscous"), armature=True,
                          offset=True)
    names = regressor.parameter_names
    assert names[60:64] == ("fc1", "fv1", "fc2", "fv2")
    assert names[72:] == ("Ia1", "Ia2", "Ia3", "Ia4", "Ia5", "Ia6",
                          "off1", "off2", "off3", "off4", "off5", "off6")
    assert regressor.n_parameters == len(names) == 84
    q, qd, qdd = random_states(robot, 6, np.random.default_rng(8))
    qd[0, 2] = 0.0
    Y = regressor.compute(q, qd, qdd)
    expected = np.zeros((6, 6, 24))
    for k in range(6):
        for j in range(6):
            expected[k, j, 2 * j] = 1.0 if qd[k, j] > 0 else (-1.0 if qd[k, j] < 0 else 0.0)
            expected[k, j, 2 * j + 1] = qd[k, j]
            expected[k, j, 12 + j] = qdd[k, j]
            expected[k, j, 18 + j] = 1.0
    np.testing.assert_array_equal(Y[:, :, 60:], expected)


def test_parameter_names_follow_pinocchio_order():
    regressor = Regressor(planar_arm(0.3, 0.2), friction=friction_model("polynomial"))
    assert regressor.parameter_names[:10] == ("m1", "mx1", "my1", "mz1", "Ixx1", "Ixy1", "Iyy1",
                                              "Ixz1", "Iyz1", "Izz1")
    assert regressor.parameter_names[20:24] == ("f11", "f21", "f31", "f41")
    assert regressor.slices["friction"] == slice(20, 28)


def test_inertia_parameter_map_matches_pinocchio_se3_action():
    pin.seed(3)
    for _ in range(5):
        placement = pin.SE3.Random()
        inertia = pin.Inertia.Random()
        moved = placement.act(inertia).toDynamicParameters()
        mapped = inertia_parameter_map(placement.rotation, placement.translation) \
            @ inertia.toDynamicParameters()
        np.testing.assert_allclose(mapped, moved, atol=1e-12)


def test_invalid_inputs_are_rejected():
    regressor = Regressor(planar_arm(0.3, 0.2))
    good = np.zeros((4, 2))
    with pytest.raises(DataError, match=r"^qd must have shape \(samples, 2 joints\), got \(4, 3\)$"):
        regressor.compute(good, np.zeros((4, 3)), good)
    with pytest.raises(DataError, match=r"q, qd and qdd must have the same shape"):
        regressor.compute(good, np.zeros((5, 2)), good)
    bad = good.copy()
    bad[1, 1] = math.nan
    with pytest.raises(DataError, match=r"^qdd must be finite \[rad/s\^2 or m/s\^2\], got nan at sample 1, joint j2$"):
        regressor.compute(good, good, bad)
    with pytest.raises(DataError, match=r"^q must have shape \(2 joints,\), got \(4, 2\)$"):
        regressor.compute_one(good, good[0], good[0])
    with pytest.raises(DataError, match=r"^parameters must have shape \(20 parameters,\), got \(19,\)$"):
        regressor.torque(np.zeros(19), good, good, good)
    with pytest.raises(DynIdError, match=r"robot must be a RobotDescription, got str"):
        Regressor("ur5")
    with pytest.raises(DynIdError, match=r"chunk_size must be a positive integer, got 0"):
        Regressor(planar_arm(0.3, 0.2), chunk_size=0)
    joint = {"a": 0.1, "alpha": 0.0, "d": 0.0, "position_limits": [-3.0, 3.0], "velocity_limit": 2.0,
             "acceleration_limit": 5.0}
    snake = robot_from_dict({"name": "snake", "dh_convention": "standard",
                             "joints": [dict(joint, name=f"j{i}") for i in range(65)]})
    with pytest.raises(DynIdError, match=r"robot 'snake' has 65 joints; the regressor takes at most 64"):
        Regressor(snake)
