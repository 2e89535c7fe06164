"""Recorded torques against the description's inertial prior: currents passed as torques, a gear ratio
applied twice, a reversed sign are refused naming the joint; honest torques of a robot whose prior is
only roughly right pass."""
import dataclasses

import numpy as np
import pytest

from rnea_reference import rnea_torques
from robot_dynid.errors import DataError
from robot_dynid.estimation.torque_scale import check_torque_scale, torque_scale
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.experiment.trajectories import FourierTrajectory, time_grid
from robot_dynid.model.link_inertials import link_inertials
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.recording import Recording


@pytest.fixture(scope="module")
def ur5_with_a_prior():
    """UR5 whose description carries inertial data 30 % off the true links', and a slow recording of the
    true arm (pinocchio RNEA plus Coulomb friction of 2 % of the effort limit): the arm at 5 % of its
    speed limits between poses across its range."""
    robot = load_robot(find_package_file("config", "robots", "ur5.yaml"))
    true_links = plausible_parameters(robot, seed=1)
    prior = link_inertials(robot, 1.3 * true_links)
    described = dataclasses.replace(robot, inertials=prior)
    _, _, velocity, _, effort = robot.limit_arrays()
    rng = np.random.default_rng(4)
    period = 60.0
    a = rng.uniform(-1, 1, (6, 2)) * 0.03 * velocity[:, None]
    trajectory = FourierTrajectory(robot.joint_names, period, np.zeros(6), a, np.zeros((6, 2)))
    t = time_grid(period, dt=0.05)
    q, qd, qdd = trajectory.evaluate(t)
    tau = rnea_torques(robot, true_links, q, qd, qdd) + 0.02 * effort * np.sign(qd)
    return described, Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau, source="arm.csv")


def test_honest_torques_pass_with_a_scale_near_one(ur5_with_a_prior):
    robot, recording = ur5_with_a_prior
    result = check_torque_scale(recording, robot)
    judged = np.isfinite(result.scale)
    assert judged[1] and judged[2]              # shoulder and elbow carry the arm's weight
    assert np.all((result.scale[judged] > 0.6) & (result.scale[judged] < 1.1)), result.scale   # prior 1.3x heavy


@pytest.mark.parametrize("joint, factor, cause", [
    (1, 1.0 / (0.125 * 101.0), r"times smaller\): are these motor currents \[A\] passed as torques"),
    (2, 101.0, r"\(too large\): is a gear ratio applied twice"),
    (2, -1.0, r"of the opposite sign"),
])
def test_a_scale_mistake_is_refused_naming_the_joint_and_its_cause(ur5_with_a_prior, joint, factor, cause):
    robot, recording = ur5_with_a_prior
    tau = recording.tau.copy()
    tau[:, joint] *= factor
    spoiled = dataclasses.replace(recording, tau=tau)
    with pytest.raises(DataError, match=rf"^arm\.csv: joint {robot.joint_names[joint]}: the recorded torques are "
                                        rf"\S+ times the gravity torque .* {cause}"):
        check_torque_scale(spoiled, robot)


def test_no_prior_or_no_slow_samples_means_no_judgement(ur5_with_a_prior):
    robot, recording = ur5_with_a_prior
    assert torque_scale(recording, dataclasses.replace(robot, inertials=None)) is None
    fast = dataclasses.replace(recording, qd=recording.qd + 10.0)
    assert torque_scale(fast, robot) is None
