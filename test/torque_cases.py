"""UR5 recordings for the torque check (robot_dynid.estimation.torque_scale), with what real recordings have.

A UR5 whose description carries inertial data 5 % heavier than the true links (``described``), following one
motion with three rests (``MOTION``) unloaded and with a 3 kg payload on its last link (``run``), torques from
pinocchio's RNEA plus exact Coulomb and viscous friction (:mod:`real_world`), per-joint AR(1) noise, encoder
quantisation and noisy recorded velocities (``EFFECTS``); or the same efforts recorded as motor currents
through each joint's torque constant (``TORQUE_CONSTANTS``).
"""
import dataclasses

import numpy as np
import scipy.optimize
import yaml

from real_world import Effects, excitation, simulate, with_rests
from rnea_reference import rnea_torques
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.experiment.trajectories import FourierTrajectory
from robot_dynid.model.link_inertials import link_inertials
from robot_dynid.model.payload import Payload, default_frame
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file

ROBOT = load_robot(find_package_file("config", "robots", "ur5.yaml"))
TRUE_LINKS = plausible_parameters(ROBOT, seed=1)
MASS_ERROR = 1.05
"""The description's links are this many times as heavy as the true ones (mass, first moments, inertia)."""
PAYLOAD = (3.0, np.array([0.0, 0.0, 0.05]), np.diag([0.01, 0.01, 0.006]))
"""3 kg, 5 cm out along the last link's z axis (kg, m, kg m^2 about its centre of mass)."""
TORQUE_CONSTANTS = np.array([12.5, 12.5, 10.0, 4.0, 4.0, 4.0])
"""[N m/A] at the joint: a motor's torque constant times its gear ratio (about 0.125 N m/A times 101 for the
large joints)."""
EFFECTS = Effects(noise=np.array([0.5, 0.8, 0.5, 0.08, 0.08, 0.05]), rho=0.9, quantum=2 * np.pi / 2**16,
                  velocity_noise=0.002)
MOTION = with_rests(excitation(ROBOT, seed=3), [(5.0, 1.0, 2.0), (20.0, 1.0, 2.0), (40.0, 1.0, 3.0)])
DURATION, RATE = 60.0, 100.0


def described(mass_factor: float = MASS_ERROR, links=TRUE_LINKS):
    """The UR5 with inertial data ``mass_factor`` times ``links`` (10 n,)."""
    return dataclasses.replace(ROBOT, inertials=link_inertials(ROBOT, mass_factor * np.asarray(links)))


def payload() -> Payload:
    """:data:`PAYLOAD` as a payload at the last link's frame."""
    mass, com, inertia = PAYLOAD
    upper = (inertia[0, 0], inertia[0, 1], inertia[0, 2], inertia[1, 1], inertia[1, 2], inertia[2, 2])
    return Payload(default_frame(ROBOT), mass, tuple(com), upper)


def run(loaded: bool = False, currents: bool = False, motion=MOTION, effects: Effects = EFFECTS, seed: int = 2,
        source: str = "run.csv"):
    """:func:`real_world.simulate` of the UR5 along ``motion``, with the payload when ``loaded``, efforts as
    currents [A] when ``currents``."""
    effects = dataclasses.replace(effects, torque_constant=TORQUE_CONSTANTS if currents else None)
    return simulate(ROBOT, motion, DURATION, RATE, effects, links=TRUE_LINKS, payload=PAYLOAD if loaded else None,
                    seed=seed, source=source)


def write_description(robot, path):
    """``robot`` written as a DH description file at ``path`` (its inertial data included)."""
    path.write_text(yaml.safe_dump(robot.to_dict(), sort_keys=False))
    return path


def zero_gravity_rest():
    """``(description, its links (10 n,), motion)``: an unloaded run whose only slow samples are a 1.7 s rest at
    the start, at a pose where the true gravity torque of the shoulder (RNEA, the true links) is 0.3 N m, and a
    description 5 % heavy whose upper arm's centre of mass is 6 cm off (along the link frame axis that changes
    the shoulder's gravity torque at that pose the most: a CAD model that leaves out the shoulder's motor). The
    motion after the rest is a fast excitation (35 % of the velocity limits)."""
    robot, links = ROBOT, TRUE_LINKS
    shoulder = robot.joint_names.index("shoulder_lift_joint")

    def gravity(parameters, q):
        return rnea_torques(robot, parameters, q, np.zeros(6), np.zeros(6))[shoulder]

    def pose(lift):
        return np.array([0.0, lift, 0.0, -np.pi / 2, 0.0, 0.0])
    lift = scipy.optimize.brentq(lambda x: gravity(links, pose(x)) - 0.3, -np.pi / 2 - 0.3, -np.pi / 2 + 0.3)
    rest = pose(lift)
    heavy = MASS_ERROR * links
    candidates = []
    for axis in range(3):
        moved = heavy.copy()
        moved[10 * shoulder + 1 + axis] += 0.06 * heavy[10 * shoulder]
        candidates.append(moved)
    prior_links = max(candidates, key=lambda moved: abs(gravity(moved, rest)))
    fast = excitation(robot, seed=5, amplitude=0.35)
    rests = [(0.0, 0.3, 1.7)]
    start = fast.evaluate(with_rests(fast, rests).clock(np.array([1.0]))[0])[0][0]
    motion = with_rests(FourierTrajectory(robot.joint_names, fast.period, fast.q0 + rest - start, fast.a, fast.b),
                        rests)
    return dataclasses.replace(robot, inertials=link_inertials(robot, prior_links)), prior_links, motion
