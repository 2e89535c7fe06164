"""robot-dynid identify on motor-side recordings of the coupled-wrist ER3A, and on torques that are really
motor currents.

The motor values are written in the test from the simulated joint values by the transmission's rows as
config/robots/er3a_coupled_wrist.yaml states them (qm6 = 50 (q5 + q6)), the motor torques by inverting
tau = T^T taum by hand (taum6 = tau6 / 50, taum5 = (tau5 - tau6) / 81): the motor-side file and bag must
identify the model the joint-side ones give."""
import dataclasses

import numpy as np
import pytest
import yaml

from rnea_reference import rnea_torques
from robot_dynid.cli import main
from robot_dynid.experiment.simulation import SimulatedRobot, plausible_parameters, simulation_parameters
from robot_dynid.experiment.trajectories import FourierTrajectory, load_trajectory, time_grid
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.friction import friction_model
from robot_dynid.model.link_inertials import link_inertials
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.bag_io import BagWriter
from robot_dynid.recordings.csv_io import write_columns, write_csv
from robot_dynid.recordings.recording import Recording
from robot_dynid.yaml_files import plain_data
from coupled_wrist import COUPLED, MOTORS, T0_NS, motor_from_joint, motor_torques


@pytest.fixture(scope="module")
def coupled(tmp_path_factory):
    """One simulated excitation of the coupled wrist (motor friction through T^T), as joint-side and motor-side
    CSV files and bags."""
    robot = load_robot(COUPLED)
    regressor = Regressor(robot, friction_model("coulomb_viscous"))
    simulator = SimulatedRobot(regressor, simulation_parameters(regressor, seed=3), noise_std=0.2)
    excitation = load_trajectory(find_package_file("config", "trajectories", "er3a_table_4_1.yaml"))
    t = time_grid(float(np.max(excitation.period)), dt=0.004)
    q, qd, qdd = excitation.evaluate(t)
    tau = simulator.torques(q, qd, qdd, rng=5)
    directory = tmp_path_factory.mktemp("coupled")
    files = {"joint.csv": directory / "joint.csv", "motor.csv": directory / "motor.csv",
             "joint bag": directory / "joint_bag", "motor bag": directory / "motor_bag"}
    write_csv(files["joint.csv"], Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau, source="sim"))
    motor = [motor_from_joint(q), motor_from_joint(qd), motor_from_joint(qdd), motor_torques(tau)]
    write_columns(files["motor.csv"], ["time"] + [f"{field}.{name}" for field in ("qm", "qdm", "qddm", "taum")
                                                  for name in MOTORS], np.column_stack([t] + motor))
    stamps = T0_NS + np.round(t * 1e9).astype(np.int64)
    with BagWriter(files["joint bag"]) as joints, BagWriter(files["motor bag"], joint_states_topic="/motor_states") \
            as motors:
        for k, stamp in enumerate(stamps):
            joints.write_joint_state(int(stamp), robot.joint_names, q[k], qd[k], tau[k])
            motors.write_joint_state(int(stamp), MOTORS[::-1], motor[0][k, ::-1], motor[1][k, ::-1],
                                     motor[3][k, ::-1])
    return files


def identified(tmp_path, data, *options):
    out = tmp_path / f"{data.stem}.yaml"
    assert main(["identify", "--robot", str(COUPLED), "--data", str(data), "--out", str(out), *options]) == 0
    return DynamicModel.load(out)


def test_a_motor_side_csv_identifies_the_model_of_the_joint_side_csv(coupled, tmp_path, capsys):
    joint, motor = identified(tmp_path, coupled["joint.csv"]), identified(tmp_path, coupled["motor.csv"])
    assert motor.base.names == joint.base.names
    np.testing.assert_allclose(motor.values, joint.values, rtol=1e-7, atol=1e-9 * np.abs(joint.values).max())


def test_identify_reads_a_bags_motor_states_by_default(coupled, tmp_path):
    """The bag topic the recorder writes motor states to, /motor_states, with motors named in reverse order."""
    joint, motor = identified(tmp_path, coupled["joint bag"]), identified(tmp_path, coupled["motor bag"])
    np.testing.assert_allclose(motor.values, joint.values, rtol=1e-7, atol=1e-9 * np.abs(joint.values).max())


@pytest.fixture(scope="module")
def currents_as_torques(tmp_path_factory):
    """UR5 whose description carries its links' inertial data (a prior), a recording of the arm's RNEA torques
    and the same recording with motor currents i = tau / (k_t r) [A] (k_t = 0.125 N m/A, r = 101) in its tau
    columns."""
    robot = load_robot(find_package_file("config", "robots", "ur5.yaml"))
    links = plausible_parameters(robot, seed=1)
    directory = tmp_path_factory.mktemp("currents")
    robot_file = directory / "ur5_with_inertials.yaml"
    robot_file.write_text(yaml.safe_dump(plain_data(
        dataclasses.replace(robot, inertials=link_inertials(robot, links)).to_dict())))
    rng = np.random.default_rng(8)
    scale = 0.02 * robot.limit_arrays().velocity[:, None]
    trajectory = FourierTrajectory(robot.joint_names, 8.0, np.zeros(6), rng.normal(0, 1, (6, 4)) * scale,
                                   rng.normal(0, 1, (6, 4)) * scale)
    t = time_grid(24.0, dt=0.005)
    q, qd, qdd = trajectory.evaluate(t)
    tau = rnea_torques(robot, links, q, qd, qdd)
    files = {}
    for name, values in (("torques", tau), ("currents_as_torques", tau / (0.125 * 101))):
        files[name] = directory / f"{name}.csv"
        write_csv(files[name], Recording.from_arrays(robot.joint_names, t, q, qd, qdd, values, source="sim"))
    return robot_file, files


def test_currents_passed_as_torques_are_refused_naming_the_joint_unless_no_torque_check(
        currents_as_torques, tmp_path, capsys):
    robot_file, files = currents_as_torques
    data = files["currents_as_torques"]
    command = ["identify", "--robot", str(robot_file), "--data", str(data), "--friction", "none",
               "--out", str(tmp_path / "model.yaml")]
    assert main(command) == 2
    error = capsys.readouterr().err.strip()
    head = f"{data}: joint shoulder_lift_joint: the recorded torques are "
    factor = error.split(head)[1].split(" times the gravity torque")[0]
    assert float(factor) == pytest.approx(1 / (0.125 * 101), rel=0.01), error     # a median over noisy samples
    assert "are these motor currents [A] passed as torques [N m]" in error and "\n" not in error, error
    assert error.endswith("If the description's inertial data is what is wrong, fix or remove it, or turn the check "
                          "off (--no-torque-check; the identifier node's parameter check_torque_scale; a fleet "
                          "manifest's torque_check column)."), error
    assert not (tmp_path / "model.yaml").exists()
    assert main(command + ["--no-torque-check"]) == 0

    model = tmp_path / "honest.yaml"
    assert main(["identify", "--robot", str(robot_file), "--data", str(files["torques"]), "--friction", "none",
                 "--out", str(model)]) == 0
    capsys.readouterr()
    validate = ["validate", "--model", str(model), "--data", str(data)]
    assert main(validate) == 2
    assert f"{data}: joint shoulder_lift_joint: the recorded torques are" in capsys.readouterr().err
    assert main(validate + ["--no-torque-check"]) == 0
