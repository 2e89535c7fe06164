"""Prismatic joints and transmissions in the regressor, against references the regressor does not share:
pinocchio's own URDF parser and RNEA, closed-form mechanics, and drive columns written out by hand."""
import math
import pathlib
import re

import numpy as np
from scipy import stats
import pinocchio as pin
import pytest

from rnea_reference import rnea_torques
from robot_dynid.errors import DataError, DynIdError, RobotDescriptionError
from robot_dynid.estimation.identification import IdentificationSettings, identify
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.experiment.trajectories import FourierTrajectory, load_trajectory, time_grid
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.friction import friction_model
from robot_dynid.model.link_inertials import prior_parameters
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot, robot_from_dict
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.recording import Recording

UR5_URDF = find_package_file("config", "robots", "ur5.urdf")


def ur5_on_a_track(rng):
    """UR5 URDF text on a horizontal linear track (a prismatic joint along a tilted axis under the
    arm's base), every moving link with a random inertia, and the joint names base to tip."""
    text = UR5_URDF.read_text()
    links = re.findall(r'<link name="([^"]+)"/>', text)
    for link in links[1:]:             # world stays massless
        inertia = pin.Inertia.Random()
        mass, com = float(inertia.mass), np.asarray(inertia.lever).tolist()
        xx, xy, xz, yy, yz, zz = np.asarray(inertia.inertia)[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]].tolist()
        text = text.replace(f'<link name="{link}"/>', (
            f'<link name="{link}"><inertial><origin xyz="{com[0]!r} {com[1]!r} {com[2]!r}" rpy="0 0 0"/>'
            f'<mass value="{mass!r}"/><inertia ixx="{xx!r}" ixy="{xy!r}" ixz="{xz!r}" iyy="{yy!r}" iyz="{yz!r}" '
            f'izz="{zz!r}"/></inertial></link>'))
    track = ('<link name="carriage"><inertial><origin xyz="0.01 -0.02 0.05" rpy="0 0 0"/><mass value="12.5"/>'
             '<inertia ixx="0.3" ixy="0.01" ixz="0.0" iyy="0.4" iyz="-0.02" izz="0.5"/></inertial></link>'
             '<joint name="track" type="prismatic"><parent link="world"/><child link="carriage"/>'
             '<origin xyz="0.2 0.1 0.3" rpy="0 0 0.3"/><axis xyz="0.6 0.8 0"/>'
             '<limit lower="-2.0" upper="2.0" effort="2000" velocity="1.5"/></joint>')
    text = text.replace('<joint name="world_joint" type="fixed"><parent link="world"/>',
                        track + '<joint name="world_joint" type="fixed"><parent link="carriage"/>')
    joints = ["track", "shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
              "wrist_2_joint", "wrist_3_joint"]
    return text, joints


def test_a_prismatic_track_under_a_urdf_arm_matches_pinocchios_own_urdf_model():
    """Regressor x the URDF's inertials = RNEA of the model pinocchio builds from the same URDF itself."""
    rng = np.random.default_rng(3)
    pin.seed(3)
    text, joints = ur5_on_a_track(rng)
    robot = robot_from_dict({"urdf": text, "joints": joints, "acceleration_limits": {name: 10.0 for name in joints}})
    assert robot.prismatic == (True,) + (False,) * 6
    model = pin.buildModelFromXML(text)
    data = model.createData()
    assert [model.names[i] for i in range(1, model.njoints)] == joints
    n_samples = 41
    q = np.column_stack([rng.uniform(-2, 2, n_samples), rng.uniform(-np.pi, np.pi, (n_samples, 6))])
    qd, qdd = rng.uniform(-2, 2, (n_samples, 7)), rng.uniform(-8, 8, (n_samples, 7))
    expected = np.array([pin.rnea(model, data, *state) for state in zip(q, qd, qdd)])
    tau = Regressor(robot).compute(q, qd, qdd) @ prior_parameters(robot)
    scale = np.abs(expected).max(axis=0)
    np.testing.assert_allclose(tau / scale, expected / scale, rtol=0, atol=1e-9)


def test_a_vertical_prismatic_joint_lifts_its_payload_with_m_times_qdd_plus_g():
    """A lift: F = m (qdd + g) + fc sgn(qd) + fv qd [N], whatever the link's inertia."""
    robot = robot_from_dict({"name": "lift", "dh_convention": "standard", "joints": [
        {"name": "lift", "type": "prismatic", "a": 0.0, "alpha": 0.0, "d": 0.0, "position_limits": [0.0, 1.5],
         "velocity_limit": 0.5, "acceleration_limit": 2.0, "effort_limit": 4000.0}]})
    regressor = Regressor(robot, friction_model("coulomb_viscous"))
    assert regressor.parameter_names[-2:] == ("fc1", "fv1")
    q, qd, qdd = np.array([[0.3], [1.2]]), np.array([[0.2], [-0.1]]), np.array([[1.5], [-0.7]])
    mass, fc, fv = 80.0, 30.0, 200.0
    theta = np.concatenate([[mass, 0.0, 0.0, 4.0, 2.0, 0.1, 3.0, 0.2, 0.3, 1.0], [fc, fv]])
    expected = mass * (qdd[:, 0] + 9.81) + fc * np.sign(qd[:, 0]) + fv * qd[:, 0]
    np.testing.assert_allclose(regressor.torque(theta, q, qd, qdd)[:, 0], expected, rtol=1e-12)
    # units from F = m (qdd + g) + fc + fv qd [N]: fc in N, fv in N s/m; an armature on a slider is a mass
    full = Regressor(robot, friction_model("coulomb_viscous", drift="temperature"), armature=True, offset=True)
    units = dict(zip(full.parameter_names, full.parameter_units))
    assert [units[name] for name in ("m1", "mz1", "Izz1", "fc1", "fv1", "fv_dT1", "Ia1", "off1")] == [
        "kg", "kg m", "kg m^2", "N", "N s/m", "N s/m/K", "kg", "N"]


def test_a_radial_slider_on_a_turning_arm_feels_coriolis_and_centrifugal_forces():
    """A point mass m at radius r on a horizontal turntable (joint 1 about z, slider along x):
    tau1 = m r^2 w' + 2 m r r' w; F2 = m (r'' - r w^2)."""
    joint = {"alpha": 0.0, "a": 0.0, "d": 0.0, "velocity_limit": 2.0, "acceleration_limit": 5.0}
    robot = robot_from_dict({"name": "turntable", "dh_convention": "modified", "joints": [
        dict(joint, name="turn", position_limits=[-3.0, 3.0]),
        dict(joint, name="slide", type="prismatic", alpha=math.pi / 2, theta_offset=math.pi / 2,
             position_limits=[0.1, 1.0])]})
    regressor = Regressor(robot)
    rng = np.random.default_rng(5)
    q = np.column_stack([rng.uniform(-3, 3, 7), rng.uniform(0.1, 1.0, 7)])
    qd, qdd = rng.uniform(-2, 2, (7, 2)), rng.uniform(-5, 5, (7, 2))
    mass = 3.0
    theta = np.zeros(20)
    theta[10] = mass                         # a point mass at the slider frame's origin
    r, w, rd, wd, rdd = q[:, 1], qd[:, 0], qd[:, 1], qdd[:, 0], qdd[:, 1]
    tau = regressor.torque(theta, q, qd, qdd)
    np.testing.assert_allclose(tau[:, 0], mass * r**2 * wd + 2 * mass * r * rd * w, rtol=1e-12)
    np.testing.assert_allclose(tau[:, 1], mass * (rdd - r * w**2), rtol=1e-12)


def test_prismatic_limits_in_millimetres_are_refused_as_such():
    joint = {"name": "lift", "type": "prismatic", "a": 0.0, "alpha": 0.0, "d": 0.0, "velocity_limit": 0.5,
             "acceleration_limit": 2.0}
    millimetres = r"joints\[0\] \(lift\)\.position_limits = \[0\.0, 1500\.0\] m looks like millimetres"
    with pytest.raises(RobotDescriptionError, match=millimetres):
        robot_from_dict({"name": "lift", "dh_convention": "standard",
                         "joints": [dict(joint, position_limits=[0.0, 1500.0])]})
    with pytest.raises(RobotDescriptionError, match=r"velocity_limit = 500\.0 m/s looks like millimetres"):
        robot_from_dict({"name": "lift", "dh_convention": "standard",
                         "joints": [dict(joint, position_limits=[0.0, 1.5], velocity_limit=500.0)]})
    with pytest.raises(RobotDescriptionError,
                       match=r"^<dict>: joints\[0\] \(lift\)\.type must be one of \['revolute', 'prismatic'\], "
                             r"got 'linear'$"):
        robot_from_dict({"name": "lift", "dh_convention": "standard",
                         "joints": [dict(joint, type="linear", position_limits=[0.0, 1.5])]})


def coupled_wrist(friction_side=None, armature=True):
    """The ER3A with a wrist whose motor 6 turns with q5 + q6 (row 6 = [0, 0, 0, 0, 50, 50])."""
    robot = load_robot(find_package_file("config", "robots", "er3a_coupled_wrist.yaml"))
    return robot, Regressor(robot, friction_model("coulomb_viscous"), armature=armature, friction_side=friction_side)


def test_a_coupled_motor_puts_its_inertia_and_friction_into_both_joints_it_turns_with():
    robot, regressor = coupled_wrist()
    T = robot.transmission.motor_from_joint
    assert T[5].tolist() == [0, 0, 0, 0, 50, 50]
    names = regressor.parameter_names
    rng = np.random.default_rng(8)
    q, qd, qdd = rng.uniform(-1, 1, (9, 6)), rng.uniform(-2, 2, (9, 6)), rng.uniform(-5, 5, (9, 6))
    Y = regressor.compute(q, qd, qdd)
    qdm6, qddm6 = 50 * (qd[:, 4] + qd[:, 5]), 50 * (qdd[:, 4] + qdd[:, 5])
    for joint in range(6):        # tau = T^T tau_m: motor 6's torque enters joints 5 and 6 times 50
        factor = 50.0 if joint in (4, 5) else 0.0
        np.testing.assert_allclose(Y[:, joint, names.index("Ia_m6")], factor * qddm6, rtol=1e-13)
        np.testing.assert_allclose(Y[:, joint, names.index("fc_m6")], factor * np.sign(qdm6), rtol=1e-13)
        np.testing.assert_allclose(Y[:, joint, names.index("fv_m6")], factor * qdm6, rtol=1e-13)
    # an uncoupled motor: joint 3's, reduction 101
    np.testing.assert_allclose(Y[:, 2, names.index("Ia_m3")], 101.0 ** 2 * qdd[:, 2], rtol=1e-13)
    assert not Y[:, [0, 1, 3, 4, 5], names.index("Ia_m3")].any()
    assert "Ia6" not in names and "fc6" not in names


def test_the_friction_side_chooses_joint_motor_or_both_columns(er3a_robot):
    _, joint_side = coupled_wrist("joint")
    _, both = coupled_wrist("both", armature=False)
    assert list(joint_side.parameter_names[60:]) == [
        f"{c}{j}" for j in range(1, 7) for c in ("fc", "fv")] + [f"Ia{j}" for j in range(1, 7)]
    assert both.parameter_names[60:] == tuple(f"{c}{j}" for j in range(1, 7) for c in ("fc", "fv")) + tuple(
        f"{c}_m{j}" for j in range(1, 7) for c in ("fc", "fv"))
    with pytest.raises(DynIdError, match=r"friction_side 'motor' needs motors: robot 'er3a' has no transmission"):
        Regressor(er3a_robot, friction_side="motor")


def test_motor_side_speed_constants_keep_their_joint_side_meaning():
    """A dead band of 0.01 rad/s on the joint is 0.5 rad/s on a motor of reduction 50: motor 6 at
    0.4 rad/s (joint speeds 0.004 each) has no friction, at 0.6 rad/s it has."""
    robot = load_robot(find_package_file("config", "robots", "er3a_coupled_wrist.yaml"))
    regressor = Regressor(robot, friction_model("coulomb_viscous", dead_band=0.01))
    qd = np.zeros((2, 6))
    qd[:, 4:] = [[0.004, 0.004], [0.006, 0.006]]
    Y = regressor.compute(np.zeros((2, 6)), qd, np.zeros((2, 6)))
    column = regressor.parameter_names.index("fc_m6")
    np.testing.assert_array_equal(Y[:, 5, column], [0.0, 50.0])


def test_a_transmission_is_checked_with_the_row_and_joint_named(tmp_path):
    text = find_package_file("config", "robots", "er3a_coupled_wrist.yaml").read_text()
    for old, new, message in (
            ("[0, 0, 0, 0, 50, 50]", "[0, 0, 0, 0, 50]", r"transmission\.motor_from_joint\[5\] must be a list of 6"),
            ("[0, 0, 0, 0, 50, 50]", "[0, 0, 0, 0, 0, 0]", r"motor_from_joint\[5\] is all zero"),
            ("[0, 0, 0, 0, 50, 50]", "[0, 0, 0, 0, 81, 0]", r"singular or nearly so"),
            ("motor_from_joint:", "motor_form_joint:", r"unknown key 'motor_form_joint'"),
            ("  - {name: j5,", "  - {name: j5, gear_ratio: 81.0,",
             r"joints\[4\] \(j5\)\.gear_ratio: the robot has a transmission, which gives the motors' gear_ratios")):
        assert old in text, old
        path = tmp_path / "robot.yaml"
        path.write_text(text.replace(old, new, 1))
        with pytest.raises(RobotDescriptionError, match=message):
            load_robot(path)


def test_transmission_round_trips_through_the_description(tmp_path, er3a_robot):
    robot = load_robot(find_package_file("config", "robots", "er3a_coupled_wrist.yaml"))
    again = robot_from_dict(robot.to_dict())
    assert again == robot and again.transmission.motor_names == robot.transmission.motor_names
    assert again.kinematics_hash == robot.kinematics_hash       # a model of the plain ER3A is not one of this arm
    assert robot.kinematics_hash != er3a_robot.kinematics_hash
    q = np.random.default_rng(1).uniform(-1, 1, (5, 6))
    np.testing.assert_allclose(robot.transmission.joint_from_motor_values(
        robot.transmission.motor_from_joint_values(q)), q, rtol=0, atol=1e-12)


def test_urdf_prismatic_joint_descriptions_load_from_the_shipped_example():
    robot = load_robot(find_package_file("config", "robots", "ur5_on_linear_track.yaml"))
    assert robot.joint_types[0] == "prismatic" and robot.joint_units(0) == ("m", "m/s", "m/s^2", "N")
    assert robot.n_joints == 7 and pathlib.Path(find_package_file("config", "robots", "ur5_on_linear_track.urdf"))


def coupled_wrist_truth(plain, links):
    """Noise-free torques of the ER3A with the coupled wrist's motors: pinocchio's RNEA for the links, the
    motors' rotor inertia and Coulomb + viscous friction added here by hand, tau += T^T tau_m."""
    T = load_robot(find_package_file("config", "robots", "er3a_coupled_wrist.yaml")).transmission.motor_from_joint
    inertia = np.array([3e-5, 3e-5, 1.5e-5, 1e-5, 6e-6, 6e-6])        # [kg m^2]
    coulomb = np.array([0.06, 0.06, 0.03, 0.02, 0.012, 0.012])        # [N m]
    viscous = np.array([2e-4, 2e-4, 1e-4, 6e-5, 4e-5, 4e-5])          # [N m s/rad]

    def torques(q, qd, qdd):
        qdm, qddm = qd @ T.T, qdd @ T.T
        return rnea_torques(plain, links, q, qd, qdd) + (inertia * qddm + coulomb * np.sign(qdm) + viscous * qdm) @ T

    standard = np.concatenate([links, np.column_stack([coulomb, viscous]).ravel(), inertia])
    return torques, standard


def test_a_coupled_wrist_is_identified_to_its_noise_free_torques_only_with_its_transmission(er3a_robot):
    """Training: the thesis excitation, three periods at 200 Hz, noise 5 % of each joint's torque spread.
    Held out: another Fourier trajectory. With the transmission the held-out torques are within 0.2 sigma
    and every base parameter (the motors' among them) within 3 (robust) std of the truth; without it joints 5 and 6
    are off by a large fraction of their torque (the failure seen on real hardware)."""
    robot = load_robot(find_package_file("config", "robots", "er3a_coupled_wrist.yaml"))
    plain = er3a_robot
    links = plausible_parameters(plain, seed=1)
    truth, standard = coupled_wrist_truth(plain, links)
    excitation = load_trajectory(find_package_file("config", "trajectories", "er3a_table_4_1.yaml"))
    t = time_grid(3 * float(np.max(excitation.period)), dt=0.005)
    q, qd, qdd = excitation.evaluate(t)
    clean = truth(q, qd, qdd)
    sigma = 0.05 * np.std(clean, axis=0)
    tau = clean + np.random.default_rng(1).normal(size=clean.shape) * sigma
    settings = IdentificationSettings(friction=friction_model("coulomb_viscous"), armature=True, method="wls")
    coupled = identify(Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau), robot, settings)
    joint_side = identify(Recording.from_arrays(plain.joint_names, t, q, qd, qdd, tau), plain, settings)

    lower, upper, _, _, _ = plain.limit_arrays()
    rng = np.random.default_rng(7)
    held_out = FourierTrajectory(plain.joint_names, 7.0, (lower + upper) / 2, 0.25 * rng.uniform(-1, 1, (6, 3)),
                                 0.25 * rng.uniform(-1, 1, (6, 3)))
    q, qd, qdd = held_out.evaluate(time_grid(14.0, dt=0.005))
    assert np.all((q > lower) & (q < upper))
    expected = truth(q, qd, qdd)
    error = np.sqrt(np.mean((coupled.torque(q, qd, qdd) - expected) ** 2, axis=0))
    assert np.all(error < 0.2 * sigma), error / sigma
    # within 3 std: the quantile of Student's t with the robust std's degrees of freedom at the normal 3 std's level
    z = (coupled.values - coupled.base.projection @ standard) / coupled.std
    assert coupled.std_method == "block"
    assert np.all(np.abs(z) < stats.t.isf(stats.norm.sf(3.0), coupled.interval_dof)), \
        dict(zip(coupled.base.names, np.round(z, 2)))
    assert {"Ia_m6", "fc_m6", "fv_m6"} <= set(coupled.base.names)
    relative = np.sqrt(np.mean((joint_side.torque(q, qd, qdd) - expected) ** 2, axis=0) / np.mean(expected**2, axis=0))
    assert relative[4] > 0.15 and relative[5] > 0.5, relative


def test_an_arm_on_a_linear_track_is_identified_to_its_held_out_noise_free_torques():
    """UR5 on a prismatic track: torques from pinocchio's own URDF model (RNEA) plus Coulomb and viscous
    friction [N, N s/m on the track; N m, N m s/rad on the arm], noise 3 % of each joint's spread. The model
    identified on one excitation reproduces another within 0.2 sigma."""
    rng = np.random.default_rng(12)
    pin.seed(12)
    text, joints = ur5_on_a_track(rng)
    robot = robot_from_dict({"urdf": text, "joints": joints, "acceleration_limits": {name: 10.0 for name in joints}})
    model = pin.buildModelFromXML(text)
    data = model.createData()
    coulomb = np.array([40.0, 3.0, 3.0, 2.0, 0.8, 0.8, 0.5])
    viscous = np.array([120.0, 2.0, 2.0, 1.5, 0.5, 0.5, 0.3])

    def truth(q, qd, qdd):
        rigid = np.array([pin.rnea(model, data, *state) for state in zip(q, qd, qdd)])
        return rigid + coulomb * np.sign(qd) + viscous * qd

    def fourier(seed, period):
        local = np.random.default_rng(seed)
        a, b = (local.uniform(-1, 1, (7, 4)) * np.array([0.15] + [0.35] * 6)[:, None] for _ in range(2))
        return FourierTrajectory(joints, period, np.zeros(7), a, b)

    excitation, held_out = fourier(1, 8.0), fourier(2, 11.0)
    t = time_grid(4 * 8.0, dt=0.004)
    q, qd, qdd = excitation.evaluate(t)
    assert np.abs(q[:, 0]).max() < 1.5
    clean = truth(q, qd, qdd)
    sigma = 0.03 * np.std(clean, axis=0)
    tau = clean + rng.normal(size=clean.shape) * sigma
    settings = IdentificationSettings(friction=friction_model("coulomb_viscous"), method="wls")
    identified = identify(Recording.from_arrays(joints, t, q, qd, qdd, tau), robot, settings)
    assert {"fc1", "fv1"} <= set(identified.base.names)
    fc_track = identified.values[identified.base.names.index("fc1")]
    assert abs(fc_track - coulomb[0]) < 3 * identified.std[identified.base.names.index("fc1")]
    q, qd, qdd = held_out.evaluate(time_grid(22.0, dt=0.01))
    error = np.sqrt(np.mean((identified.torque(q, qd, qdd) - truth(q, qd, qdd)) ** 2, axis=0))
    assert np.all(error < 0.2 * sigma), error / sigma


@pytest.mark.parametrize("side", ["joint", "motor", "both"])
def test_a_model_keeps_its_friction_side_through_its_artifact(side, er3a_robot):
    """A coupled-wrist model of each friction side: the artifact names the side, loads back to the same
    torques, and a model file of a robot without a transmission does not mention it."""
    robot = load_robot(find_package_file("config", "robots", "er3a_coupled_wrist.yaml"))
    rng = np.random.default_rng(2)
    q, qd, qdd = rng.uniform(-1, 1, (300, 6)), rng.uniform(-2, 2, (300, 6)), rng.uniform(-5, 5, (300, 6))
    settings = IdentificationSettings(friction=friction_model("coulomb_viscous"), armature=True, friction_side=side)
    regressor = settings.regressor(robot)
    theta = rng.uniform(0.5, 1.5, regressor.n_parameters)
    tau = regressor.torque(theta, q, qd, qdd) + rng.normal(size=(300, 6)) * 0.01
    model = identify(Recording.from_arrays(robot.joint_names, np.arange(300) * 0.01, q, qd, qdd, tau), robot, settings)
    assert model.friction_side == side and f"friction_side: {side}" in model.to_yaml()
    loaded = DynamicModel.from_yaml(model.to_yaml())
    assert loaded.friction_side == side
    np.testing.assert_array_equal(loaded.torque(q, qd, qdd), model.torque(q, qd, qdd))
    plain = er3a_robot
    assert "friction_side" not in DynamicModel(plain, friction_model("none"), False, False,
                                               compute_base_parameters(Regressor(plain)), np.zeros(36),
                                               np.zeros(36)).to_yaml()


def test_a_linear_axis_recorded_in_millimetres_is_refused_as_such():
    """Track positions and speeds in mm and mm/s: one line naming the column and the unit it looks like."""
    from robot_dynid.recordings.data_checks import check_samples

    robot = load_robot(find_package_file("config", "robots", "ur5_on_linear_track.yaml"))
    t = np.arange(200) * 0.01
    q = np.zeros((200, 7))
    q[:, 0] = 1000.0 * 0.8 * np.sin(t)                 # 0.8 m stroke written in mm
    qd = np.zeros((200, 7))
    with pytest.raises(DataError, match=r"column q\.track lies beyond the joint's position limits \[-1\.5, 1\.5\] "
                                        r"m by more than 0\.5 m .*: it looks like millimetres \(\S+ mm = \S+ m\); "
                                        r"give m$"):
        check_samples(Recording.from_arrays(robot.joint_names, t, q, qd, qd, np.zeros((200, 7))), robot)
    qd[:, 0] = 1000.0 * 0.9                          # 0.9 m/s written in mm/s
    with pytest.raises(DataError, match=r"column qd\.track exceeds 10 m/s .*: it looks like mm/s "
                                        r"\(900 mm/s = 0\.9 m/s\); give m/s$"):
        check_samples(Recording.from_arrays(robot.joint_names, t, q / 1000.0, qd, qd * 0, np.zeros((200, 7))), robot)


def test_an_implausible_gear_ratio_is_warned_naming_the_motor_and_joint(tmp_path, caplog):
    """The coupled wrist's ratios load quietly; a ratio of 1/50 (the inverse given) is warned about, naming the motor's
    joint and the plausible range; the description still loads."""
    text = find_package_file("config", "robots", "er3a_coupled_wrist.yaml").read_text()
    path = tmp_path / "robot.yaml"
    path.write_text(text)
    with caplog.at_level("WARNING"):
        load_robot(path)
    assert "transmission" not in caplog.text
    path.write_text(text.replace("[0, 0, 0, 0, 50, 50]", "[0, 0, 0, 0, 0.02, 0.02]", 1))
    with caplog.at_level("WARNING"):
        load_robot(path)
    assert "turns 0.02 rad/rad of joint j5, outside the plausible [1, 1000] rad/rad" in caplog.text
