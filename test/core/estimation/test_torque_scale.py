"""Recorded torques against the description's inertial prior: currents passed as torques, a gear ratio
applied twice, a reversed sign are refused naming the joint; honest torques of a robot whose prior is
only roughly right pass, loaded or not, and so does a recording whose only slow samples sit where gravity
crosses zero.

Expectations come from the simulated truth: torques from pinocchio's RNEA with the true links (the description's
are 5 % or 30 % heavier), exact Coulomb friction of a known size, currents through known torque constants."""
import dataclasses

import numpy as np
import pytest

from rnea_reference import rnea_torques
from robot_dynid.errors import DataError
from robot_dynid.estimation.torque_scale import (GRAVITY_FRACTION, MAX_SCALE_ERROR, MIN_GRAVITY_FRACTION,
                                                 SLOW_FRACTION, UnknownPayload, check_torque_scale, slow_samples,
                                                 torque_scale)
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.experiment.trajectories import FourierTrajectory, time_grid
from robot_dynid.model.link_inertials import link_inertials
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.conditioning import Conditioning
from robot_dynid.recordings.pipeline import condition
from robot_dynid.recordings.recording import Recording
import torque_cases as cases


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
    # 1 / 1.3 from the heavy prior; friction (2 % of the effort limit) moves a sample's ratio by at most
    # 0.02 / MIN_GRAVITY_FRACTION where it judges (gravity at least 10 % of the effort limit)
    bound = 0.02 / MIN_GRAVITY_FRACTION
    assert np.all(np.abs(result.scale[judged] - 1.0 / 1.3) <= bound + 1e-9), result.scale


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
                                        rf"\S+ times the gravity torque .* {cause}.*\(--no-torque-check"):
        check_torque_scale(spoiled, robot)


def test_no_prior_or_no_slow_samples_means_no_judgement(ur5_with_a_prior):
    robot, recording = ur5_with_a_prior
    assert torque_scale(recording, dataclasses.replace(robot, inertials=None)) is None
    fast = dataclasses.replace(recording, qd=recording.qd + 10.0)
    assert torque_scale(fast, robot) is None


# ---------------------------------------------------------------------------------------------- real-world tier
def conditioned(simulated):
    """The recording as the commands read it: accelerations derived from the recorded velocities."""
    return condition(simulated.recording, Conditioning(velocity_at_rest="measured"))


@pytest.fixture(scope="module")
def runs():
    """The same motion unloaded and loaded, each with torques and with currents (torque_cases)."""
    return {(loaded, currents): conditioned(cases.run(loaded, currents))
            for loaded in (False, True) for currents in (False, True)}


def judged_joints(result):
    return [name for name, scale in zip(result.joint_names, result.scale) if np.isfinite(scale)]


@pytest.mark.parametrize("loaded", [False, True], ids=["unloaded", "loaded"])
def test_a_5_percent_heavy_description_accepts_unloaded_and_loaded_runs(runs, loaded):
    robot = cases.described()
    recording = runs[loaded, False]
    known = cases.payload() if loaded else None
    result = check_torque_scale(recording, robot, known)
    assert {"shoulder_lift_joint", "elbow_joint"} <= set(judged_joints(result))
    # against the arm plus the payload actually carried: the prior's 1 / 1.05, friction and noise within 10 %
    judged = np.isfinite(result.scale)
    np.testing.assert_allclose(result.scale[judged], 1.0 / cases.MASS_ERROR, rtol=0.1)
    # a payload being identified: whatever it is, these torques are accepted
    assert not check_torque_scale(recording, robot, UnknownPayload.for_robot(robot)).off()


def test_a_loaded_run_judged_against_the_arm_alone_is_accepted_where_the_payload_could_explain_it(runs):
    """The check of the arm alone (identify on a loaded run) and of a payload being identified (payload identify)
    accept the loaded run; a payload being identified widens the accepted range of the joints it loads."""
    robot = cases.described()
    alone = check_torque_scale(runs[True, False], robot)
    unknown = check_torque_scale(runs[True, False], robot, UnknownPayload.for_robot(robot))
    assert not alone.off() and not unknown.off()
    shoulder = robot.joint_names.index("shoulder_lift_joint")
    assert unknown.high[shoulder] > MAX_SCALE_ERROR            # up to 10 kg could make it heavier
    # the payload hangs on the same side of the shoulder as the arm's own weight: it cannot make it lighter
    assert unknown.low[shoulder] == pytest.approx(1.0 / MAX_SCALE_ERROR)


@pytest.mark.parametrize("loaded", [False, True], ids=["unloaded", "loaded"])
def test_currents_are_refused_whatever_payload_is_assumed(runs, loaded):
    robot = cases.described()
    recording = runs[loaded, True]
    for payload in (None, cases.payload(), UnknownPayload.for_robot(robot), UnknownPayload()):
        with pytest.raises(DataError, match=r"joint (shoulder_lift|elbow)_joint: the recorded torques are 0\.0\d+ "
                                            r"times .* are these motor currents \[A\] passed as torques"):
            check_torque_scale(recording, robot, payload)


def test_a_known_payload_the_run_does_not_carry_is_named_as_a_possible_cause(runs):
    robot = cases.described()
    with pytest.raises(DataError, match=r"wrist_\d_joint: .* with the payload of 3 kg .* another load than the "
                                        r"model's payload"):
        check_torque_scale(runs[False, False], robot, cases.payload())


def test_slow_samples_only_where_gravity_crosses_zero_judge_nothing():
    """The false 'motor currents' of fleet: an unloaded run whose only slow samples are a rest at a pose where
    the shoulder's gravity torque nearly vanishes, with a description whose upper arm's centre of mass is 6 cm
    off. There the least-squares ratio of recorded to predicted gravity torque is a ratio of two small torques,
    the recorded one mostly noise: computed here from RNEA it is below 1 / MAX_SCALE_ERROR in size, which the
    former rule refused as currents (or a reversed sign). Such samples judge nothing now."""
    robot, prior_links, motion = cases.zero_gravity_rest()
    shoulder = robot.joint_names.index("shoulder_lift_joint")
    recording = conditioned(cases.run(motion=motion))
    slow = slow_samples(recording, robot)
    assert np.all(recording.time[slow] < 2.5), "slow samples beyond the rest: the trap needs them at the rest only"
    prior_gravity = rnea_torques(robot, prior_links, recording.q[slow], 0 * recording.q[slow],
                                 0 * recording.q[slow])[:, shoulder]
    former_ratio = np.sum(recording.tau[slow, shoulder] * prior_gravity) / np.sum(prior_gravity**2)
    assert abs(former_ratio) < 1.0 / MAX_SCALE_ERROR, former_ratio     # refused: "currents" (or a sign)
    assert np.sqrt(np.mean(prior_gravity**2)) >= 0.02 * 150.0      # large enough for the former rule to judge
    result = check_torque_scale(recording, robot)
    assert result is not None and not np.isfinite(result.scale[shoulder])
    assert any("shoulder_lift_joint not judged" in note and f"{GRAVITY_FRACTION:.0%}" in note
               for note in result.notes), result.notes


def test_slow_means_below_a_tenth_of_the_velocity_and_acceleration_limits(ur5_with_a_prior):
    robot, recording = ur5_with_a_prior
    velocity, acceleration = robot.limit_arrays()[2:4]
    fast = recording.qd.copy()
    fast[:5, 3] = 1.01 * SLOW_FRACTION * velocity[3]
    mask = slow_samples(dataclasses.replace(recording, qd=fast), robot)
    assert not mask[:5].any() and mask[5:].all()
