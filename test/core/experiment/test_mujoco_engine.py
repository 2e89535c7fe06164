"""The MuJoCo engine against independent references: pinocchio's RNEA on the same URDF, the URDF's own
inertials, and identification of the armature, damping and friction loss set in MuJoCo.

Without the mujoco package this module is not collected (test/conftest.py says so in the header);
test/core/experiment/test_simulation.py checks what the engine says then.
"""
import dataclasses

import numpy as np
from scipy import stats
import pinocchio as pin
import pytest

from robot_dynid.errors import DataError, DynIdError
from robot_dynid.estimation.identification import IdentificationSettings, identify
from robot_dynid.experiment.closed_loop import ControlSettings
from robot_dynid.experiment.engines import simulated_arm, simulated_robot
from robot_dynid.experiment.excitation import random_excitation
from robot_dynid.experiment.mujoco_engine import MUJOCO_MIN_SPEED, MUJOCO_REVERSAL_LEAD, MujocoArm, MujocoRobot
from robot_dynid.experiment.trajectories import time_grid
from robot_dynid.model.friction import friction_model
from robot_dynid.model.link_inertials import prior_parameters
from robot_dynid.model.payload import Payload
from robot_dynid.model.robot_description import JointSimulation
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.model.urdf import robot_from_urdf
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.pipeline import complete_derivatives
from robot_dynid.recordings.recording import Recording
from repo_paths import TEST_DATA

UR5_LINKS = ("shoulder_link", "upper_arm_link", "forearm_link", "wrist_1_link", "wrist_2_link", "wrist_3_link",
             "tool0")


def numbers(values):
    return " ".join(repr(float(value)) for value in values)


def ur5_with_inertials(seed=0):
    """config/robots/ur5.urdf with a random physically consistent <inertial> (rotated inertial frame) on each
    moving link, tool0 (fixed to wrist_3_link) included."""
    rng = np.random.default_rng(seed)
    text = find_package_file("config", "robots", "ur5.urdf").read_text()
    for link in UR5_LINKS:
        moments = rng.uniform(0.02, 0.04, 3)     # principal moments obeying the triangle inequality
        rotation = pin.rpy.rpyToMatrix(*rng.uniform(-1.0, 1.0, 3))
        inertia = rotation @ np.diag(moments) @ rotation.T
        xyz, rpy = rng.uniform(-0.1, 0.1, 3), rng.uniform(-1.0, 1.0, 3)
        values = dict(zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), inertia[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]))
        inertial = (f'<inertial><origin xyz="{numbers(xyz)}" rpy="{numbers(rpy)}"/>'
                    f'<mass value="{numbers([rng.uniform(1.0, 5.0)])}"/><inertia '
                    + " ".join(f'{key}="{numbers([value])}"' for key, value in values.items()) + "/></inertial>")
        text = text.replace(f'<link name="{link}"/>', f'<link name="{link}">{inertial}</link>')
    return text


def random_states(n, count=40, seed=1):
    rng = np.random.default_rng(seed)
    return rng.uniform(-3.0, 3.0, (count, n)), rng.uniform(-3.0, 3.0, (count, n)), rng.uniform(-10.0, 10.0, (count, n))


def test_mujoco_inverse_dynamics_of_a_urdf_arm_equals_pinocchios_rnea():
    urdf = ur5_with_inertials()
    robot = robot_from_urdf(urdf)
    simulator = MujocoRobot(robot, friction_model("coulomb_viscous"))
    assert simulator.model.inertials_from == "model file"
    reference = pin.buildModelFromXML(urdf)      # pinocchio's own URDF parser, gravity -9.81 z as the robot's
    data = reference.createData()
    q, qd, qdd = random_states(robot.n_joints)
    expected = np.array([pin.rnea(reference, data, *state) for state in zip(q, qd, qdd)])
    torques = simulator.torques(q, qd, qdd, noise=False)
    assert np.max(np.abs(torques - expected)) < 1e-9 * np.max(np.abs(expected))


def test_the_true_inertials_read_back_from_mujoco_are_the_urdfs():
    """MuJoCo's bodies (placed by its URDF parser) moved into the link frames are the URDF's inertials as
    robot_dynid's own URDF reader merges them (tool0 into wrist_3_link), to the accuracy of MuJoCo's
    diagonalisation of full inertia tensors (seen: 1e-16 with mujoco 4.0, 5e-10 kg m^2 with 3.1)."""
    robot = robot_from_urdf(ur5_with_inertials(seed=4))
    simulator = MujocoRobot(robot, friction_model("none"))
    expected = prior_parameters(robot)
    assert np.allclose(simulator.parameters[:expected.size], expected, rtol=0.0, atol=2e-9)


@pytest.mark.parametrize("robot_file", ["er3a.yaml", "ur5_urdf.yaml", "ur5_on_linear_track.yaml"])
def test_the_true_parameters_give_mujocos_torques_away_from_velocity_reversals(robot_file):
    """Armature, damping and friction loss set in MuJoCo are the family's Ia, fv and fc: at speeds where MuJoCo's
    friction loss is saturated, the regressor with the true parameters is MuJoCo's inverse dynamics (DH robots
    through the URDF written from the table, URDF robots without inertials with plausible ones written in)."""
    robot = load_robot(find_package_file("config", "robots", robot_file))
    n = robot.n_joints
    robot = dataclasses.replace(robot, simulation=tuple(
        JointSimulation(armature=0.5 + 0.1 * j, damping=0.2 * (j + 1), friction_loss=1.0 + 0.5 * j) for j in range(n)))
    simulator = MujocoRobot(robot, friction_model("coulomb_viscous"), seed=2)
    assert simulator.model.inertials_from == "plausible_parameters"
    names = simulator.regressor.parameter_names
    assert simulator.parameters[names.index(f"fc{n}")] == 1.0 + 0.5 * (n - 1)
    assert simulator.parameters[names.index("fv2")] == pytest.approx(0.4)
    assert simulator.parameters[names.index(f"Ia{n}")] == pytest.approx(0.5 + 0.1 * (n - 1))
    q, qd, qdd = random_states(n, seed=3)
    qd = np.sign(qd) * (0.5 + np.abs(qd))      # |qd| >= 0.5 rad/s: friction loss saturated
    qdd = 0.01 * qdd
    torques = simulator.torques(q, qd, qdd, noise=False)
    assert np.max(np.abs(torques - simulator.model_torques(q, qd, qdd))) < 1e-9 * np.max(np.abs(torques))


def er3a_in_mujoco():
    robot = load_robot(find_package_file("config", "robots", "er3a.yaml"))
    return dataclasses.replace(robot, simulation=tuple(
        JointSimulation(armature=armature, damping=damping, friction_loss=loss) for armature, damping, loss in zip(
            (1.2, 1.2, 0.6, 0.3, 0.3, 0.2), (2.0, 2.5, 1.2, 0.4, 0.3, 0.2), (6.0, 8.0, 4.0, 1.5, 1.2, 0.8))))


def follow(arm, trajectory, duration, rate):
    """Command ``trajectory`` (0.2 s from now) to ``arm`` and integrate ``duration`` s; the samples."""
    t = time_grid(duration, dt=0.01)
    arm.follower.command(arm.follower.joint_names, t, *trajectory.evaluate(t), start_time=0.2, received_time=0.0)
    return arm.advance(duration + 0.4)


def test_identification_recovers_the_armature_damping_and_friction_loss_set_in_mujoco():
    """MuJoCo integrates the ER3A at 1 kHz along a 12 s excitation (rest to rest); the measured torques (noise
    0.3 N m) and positions and velocities, with accelerations derived as from a bag, identify every base
    parameter (friction coulomb_viscous_lead at MuJoCo's lead, armature) within 3 (robust) std of the truth read from
    MuJoCo's model: fc = friction loss, fv = damping, Ia = armature (alone or in their base combinations).

    MuJoCo's friction loss is the family's ``fc sgn(qd + qdd / b)`` except in its regularisation zone, where
    ``|qd + qdd / b|`` is below ``f A / 9 b`` (a few mrad/s here) and the force passes linearly from ``-f`` to
    ``f``: samples with any joint within 0.01 rad/s of its reversal (10 %) are left out, so that the data are
    of the family. With them the Coulomb levels come out 10 to 13 std low (docs/simulation.md)."""
    robot = er3a_in_mujoco()
    friction = friction_model("coulomb_viscous_lead", reversal_lead=MUJOCO_REVERSAL_LEAD)
    simulator = simulated_robot("mujoco", robot, friction, seed=5, noise_std=0.3)
    arm = simulated_arm(simulator, rate=500.0, seed=5, max_lag=100.0)
    assert isinstance(arm, MujocoArm) and arm.timestep == pytest.approx(1e-3)
    trajectory = random_excitation(robot, harmonics=5, period=12.0, amplitude_fraction=0.6, seed=11)
    samples = follow(arm, trajectory, 12.0, 500.0)
    moving = (samples.time >= 0.2) & (samples.time <= 12.2)
    recording = complete_derivatives(Recording.from_arrays(robot.joint_names, samples.time[moving],
                                                           samples.q[moving], samples.qd[moving],
                                                           tau=samples.measured_torque[moving]))
    ahead = recording.qd + MUJOCO_REVERSAL_LEAD * recording.qdd
    sliding = np.flatnonzero(np.all(np.abs(ahead) > 0.01, axis=1))
    assert 0.85 < sliding.size / recording.time.size < 0.95
    model = identify(recording.take(sliding), robot, IdentificationSettings(friction=friction, armature=True))
    truth = model.base.projection @ simulator.parameters
    z = (model.values - truth) / model.std
    # 3 std at the normal's level, in Student's t with the robust std's degrees of freedom
    assert np.max(np.abs(z)) < stats.t.isf(stats.norm.sf(3.0), model.interval_dof), \
        dict(zip(model.base.names, z.round(2)))
    friction_names = {f"{name}{j}" for name in ("fc", "fv") for j in range(1, 7)} | {f"Ia{j}" for j in range(4, 7)}
    assert friction_names <= set(model.base.names)      # identified on their own, not only in combinations


def test_min_speed_leaves_mujocos_friction_constraint_out_as_removing_the_samples_by_hand_does():
    """The recording of the test above, whole, identified with the identification option ``min_speed`` at
    MUJOCO_MIN_SPEED (each joint's equations where it is slower than 0.02 rad/s left out, not whole samples): every
    base parameter within 3 std of MuJoCo's truth and every Coulomb level within 3 %; over every equation every
    Coulomb level is low, most by over 5 %."""
    robot = er3a_in_mujoco()
    friction = friction_model("coulomb_viscous_lead", reversal_lead=MUJOCO_REVERSAL_LEAD)
    simulator = simulated_robot("mujoco", robot, friction, seed=5, noise_std=0.3)
    arm = simulated_arm(simulator, rate=500.0, seed=5, max_lag=100.0)
    samples = follow(arm, random_excitation(robot, harmonics=5, period=12.0, amplitude_fraction=0.6, seed=11),
                     12.0, 500.0)
    recording = complete_derivatives(Recording.from_arrays(robot.joint_names, samples.time, samples.q, samples.qd,
                                                           tau=samples.measured_torque))
    settings = IdentificationSettings(friction=friction, armature=True)
    fast = identify(recording, robot, dataclasses.replace(settings, min_speed=MUJOCO_MIN_SPEED))
    truth = fast.base.projection @ simulator.parameters
    z = (fast.values - truth) / fast.std
    assert np.max(np.abs(z)) < stats.t.isf(stats.norm.sf(3.0), fast.interval_dof), \
        dict(zip(fast.base.names, z.round(2)))
    coulomb = [list(fast.base.names).index(f"fc{j}") for j in range(1, 7)]
    assert np.all(np.abs(fast.values[coulomb] / truth[coulomb] - 1.0) < 0.03), fast.values[coulomb] / truth[coulomb]
    every = identify(recording, robot, settings)
    low = 1.0 - every.values[coulomb] / truth[coulomb]      # 2 to 8 % seen, yet within 2 robust std: the mismatch
    assert np.all(low > 0.0) and np.sum(low > 0.05) >= 4, low      # widens the std it biases


def test_the_arm_tracks_its_trajectory_and_measures_the_applied_torque():
    robot = er3a_in_mujoco()
    simulator = MujocoRobot(robot, friction_model("coulomb_viscous"), seed=1, noise_std=0.2)
    arm = MujocoArm(simulator, rate=300.0, seed=3, max_lag=100.0)
    assert arm.substeps == 4 and arm.timestep == pytest.approx(1.0 / 1200.0)   # 1 / (300 ceil(1 / 0.3))
    trajectory = random_excitation(robot, harmonics=3, period=4.0, amplitude_fraction=0.4, seed=2)
    samples = follow(arm, trajectory, 4.0, 300.0)
    assert np.allclose(samples.time, np.arange(samples.time.size) / 300.0)
    desired = arm.follower.sample(samples.time)
    assert np.max(np.abs(samples.q - desired[0])) < 2e-3
    noise = samples.measured_torque - samples.torque
    assert np.std(noise) == pytest.approx(0.2, rel=0.1)
    # the applied torque is what MuJoCo needs for the recorded state and the commanded acceleration
    assert np.allclose(simulator.torques(samples.q, samples.qd, samples.qdd, noise=False), samples.torque,
                       rtol=0.0, atol=1e-9)
    assert arm.advance(samples.time[-1]) is None


def test_bad_engine_settings_are_one_line_each(er3a_robot):
    robot = er3a_robot
    with pytest.raises(DynIdError, match=r"engine must be one of \['regressor', 'mujoco'\], got 'bullet'"):
        simulated_robot("bullet", robot, friction_model("coulomb_viscous"))
    with pytest.raises(DynIdError, match=r"cold_excess must be finite and >= 0 \[1\], got -0.3"):
        simulated_robot("mujoco", robot, friction_model("coulomb_viscous"), cold_excess=-0.3)
    with pytest.raises(DynIdError, match="the control mode needs the mujoco engine"):
        simulated_arm(simulated_robot("regressor", robot, friction_model("coulomb_viscous")), 500.0,
                      control=ControlSettings())
    with pytest.raises(DynIdError, match=r"timestep .*0.01"):
        MujocoRobot(robot, timestep=0.01)


@pytest.mark.skipif(not hasattr(pin, "buildModelFromMJCF"), reason="pinocchio < 3 reads no MJCF")
def test_an_mjcf_robot_runs_in_mujoco_with_its_own_inertials_and_the_simulation_section():
    robot = load_robot(TEST_DATA / "arm3_mjcf.yaml")
    robot = dataclasses.replace(robot, simulation=(JointSimulation(0.2, 0.5, 2.0),) * 3)
    simulator = MujocoRobot(robot, friction_model("coulomb_viscous"))
    assert simulator.model.inertials_from == "model file"
    np.testing.assert_allclose(simulator.parameters[:30], prior_parameters(robot), rtol=0.0, atol=1e-12)
    q, qd, qdd = random_states(3, seed=6)
    qd = np.sign(qd) * (0.5 + np.abs(qd))
    torques = simulator.torques(q, qd, 0.01 * qdd, noise=False)
    assert np.max(np.abs(torques - simulator.model_torques(q, qd, 0.01 * qdd))) < 1e-9 * np.max(np.abs(torques))


def test_a_payload_fixed_to_the_arm_is_pinocchios_body_appended_to_the_urdf():
    """MuJoCo's inverse dynamics of the UR5 (random URDF inertials) with a 2 kg body fixed at tool0 equal pinocchio's
    RNEA of the URDF (its own parser) with that body appended at tool0's placement; the model with it is computed
    ahead without changing the arm's, and one computed on top of it carries both bodies."""
    urdf = ur5_with_inertials(seed=2)
    robot = robot_from_urdf(urdf)
    simulator = MujocoRobot(robot, friction_model("none"))
    inertia = np.array([[0.01, 0.002, 0.0], [0.002, 0.012, 0.001], [0.0, 0.001, 0.008]])
    payload = Payload("tool0", 2.0, (0.03, -0.02, 0.06), tuple(inertia[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]))
    q, qd, qdd = random_states(robot.n_joints, seed=3)
    alone = simulator.torques(q, qd, qdd, noise=False)
    prepared = simulator.payload_model(payload)
    np.testing.assert_array_equal(simulator.torques(q, qd, qdd, noise=False), alone)
    twice = simulator.payload_model(payload, prepared)
    simulator.use_inertials(prepared, simulator.mujoco.MjData(simulator.model.model))
    reference = pin.buildModelFromXML(urdf)
    frame = reference.frames[reference.getFrameId("tool0")]
    joint = frame.parentJoint if hasattr(frame, "parentJoint") else frame.parent
    reference.appendBodyToJoint(joint, pin.Inertia(2.0, np.array(payload.com), inertia), frame.placement)
    data = reference.createData()
    expected = np.array([pin.rnea(reference, data, *state) for state in zip(q, qd, qdd)])
    torques = simulator.torques(q, qd, qdd, noise=False)
    assert np.max(np.abs(torques - expected)) < 1e-9 * np.max(np.abs(expected))
    simulator.use_inertials(twice, simulator.mujoco.MjData(simulator.model.model))
    reference.appendBodyToJoint(joint, pin.Inertia(2.0, np.array(payload.com), inertia), frame.placement)
    data = reference.createData()
    expected = np.array([pin.rnea(reference, data, *state) for state in zip(q, qd, qdd)])
    torques = simulator.torques(q, qd, qdd, noise=False)
    assert np.max(np.abs(torques - expected)) < 1e-9 * np.max(np.abs(expected))


def test_the_friction_warms_up_as_the_double_exponential_and_restarts_cold_on_reset():
    """Away from velocity reversals MuJoCo's friction is ``fc sgn(qd) + fv qd`` of the true parameters; a running
    time ``t`` multiplies it by ``1 + 0.5 exp(-t / 4) + 0.2 exp(-t / 1)``, written out here."""
    robot = er3a_in_mujoco()
    simulator = MujocoRobot(robot, friction_model("coulomb_viscous"), seed=1, cold_excess=0.5, warmup_time_constant=4.0,
                            cold_excess_2=0.2, warmup_time_constant_2=1.0)
    q, qd, qdd = random_states(6, count=5, seed=9)
    qd = np.sign(qd) * (0.5 + np.abs(qd))
    qdd = 0.01 * qdd
    elapsed = np.array([0.0, 0.5, 2.0, 6.0, 40.0])
    coefficients = simulator.parameters[60:72].reshape(6, 2)
    friction = coefficients[:, 0] * np.sign(qd) + coefficients[:, 1] * qd
    expected_excess = (0.5 * np.exp(-elapsed / 4.0) + 0.2 * np.exp(-elapsed))[:, None] * friction
    excess = simulator.torques(q, qd, qdd, noise=False, elapsed=elapsed) - simulator.torques(q, qd, qdd, noise=False)
    np.testing.assert_allclose(excess, expected_excess, rtol=1e-6, atol=1e-9)
    arm = MujocoArm(simulator, 500.0)
    np.testing.assert_allclose(arm.running_time([0.0, 3.0]), [0.0, 3.0])
    arm.reset_warmup(2.0, 0.5)
    np.testing.assert_allclose(arm.running_time([1.0, 2.0, 3.5]), [1.0, 0.5, 2.0])
    with pytest.raises(DataError, match=r"elapsed must be finite and >= 0 \[s\], got -1"):
        arm.reset_warmup(3.0, -1.0)
