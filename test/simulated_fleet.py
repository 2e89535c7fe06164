"""A simulated fleet for the fleet tests and benchmark: UR5 arms whose torques come from pinocchio's RNEA
(not the package's regressor) plus Coulomb and viscous friction written out by hand and white noise; and a
real-world one (:func:`real_world_arm_recording`): a different excitation per recording and what hardware does
to recordings (test/real_world.py).

Arm ``k`` has every link ``1 + MASS_OFFSETS[k]`` times as heavy as the reference arm's (mass, first
moments and inertia scaled together: the same shape, a denser link). Every arm runs the same
excitation each week; an arm may wear: from a given week on, the Coulomb and viscous friction of one
joint are ``1 + rise`` times their value.
"""
import dataclasses
import datetime

import numpy as np

from real_world import Effects, excitation as real_world_excitation, simulate
from rnea_reference import rnea_torques
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.experiment.trajectories import FourierTrajectory, time_grid
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.csv_io import write_csv
from robot_dynid.recordings.recording import Recording

ROBOT = find_package_file("config", "robots", "ur5.yaml")
MASS_OFFSETS = (-0.03, -0.01, 0.01, 0.03)
COULOMB = np.array([3.0, 3.0, 2.0, 1.0, 1.0, 1.0])        # N m
VISCOUS = np.array([2.0, 2.0, 1.5, 0.5, 0.5, 0.5])        # N m s/rad
NOISE = 0.3                                                # N m
FIRST_DAY = datetime.datetime(2026, 3, 2, 6, 0, tzinfo=datetime.timezone.utc)


@dataclasses.dataclass(frozen=True)
class Wear:
    """Arm ``arm``'s joint ``joint`` (0-based) has ``1 + rise`` times its friction from week ``week`` on."""

    arm: int
    joint: int
    rise: float
    week: int


def excitation(robot, seed=11, period=8.0, harmonics=4, amplitude=0.12):
    """The fleet's identification motion: a random Fourier series, speeds about ``amplitude`` of the limits."""
    rng = np.random.default_rng(seed)
    n = robot.n_joints
    scale = amplitude * robot.limit_arrays().velocity[:, None]
    return FourierTrajectory(robot.joint_names, period=period, q0=np.zeros(n),
                             a=rng.normal(0.0, 1.0, (n, harmonics)) * scale,
                             b=rng.normal(0.0, 1.0, (n, harmonics)) * scale)


def arm_links(robot, arm: int) -> np.ndarray:
    """Link parameters (10 n,) of arm ``arm``: the reference arm's scaled by ``1 + MASS_OFFSETS[arm]``."""
    return plausible_parameters(robot, seed=1) * (1.0 + MASS_OFFSETS[arm % len(MASS_OFFSETS)])


def arm_recording(robot, arm: int, week: int, wear: Wear | None = None, rate=200.0, duration=16.0,
                  trajectory=None) -> Recording:
    """One week's identification recording of arm ``arm``."""
    trajectory = trajectory or excitation(robot)
    t = time_grid(duration, dt=1.0 / rate)
    q, qd, qdd = trajectory.evaluate(t)
    coulomb, viscous = COULOMB.copy(), VISCOUS.copy()
    if wear is not None and wear.arm == arm and week >= wear.week:
        coulomb[wear.joint] *= 1.0 + wear.rise
        viscous[wear.joint] *= 1.0 + wear.rise
    tau = rnea_torques(robot, arm_links(robot, arm), q, qd, qdd) + coulomb * np.sign(qd) + viscous * qd
    tau += np.random.default_rng([arm, week]).normal(0.0, NOISE, tau.shape)
    return Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau, source=f"arm{arm}-week{week}")


def write_fleet(directory, arms=4, weeks=3, wear=None, rate=200.0, duration=16.0):
    """CSV recordings of ``arms`` arms over ``weeks`` weeks in ``directory``; the manifest rows
    ``(robot_id, recorded_at, data)`` in week order (data relative to ``directory``)."""
    robot = load_robot(ROBOT)
    trajectory = excitation(robot)
    rows = []
    for week in range(weeks):
        for arm in range(arms):
            name = f"arm{arm}_week{week}.csv"
            write_csv(directory / name, arm_recording(robot, arm, week, wear, rate, duration, trajectory))
            moment = FIRST_DAY + datetime.timedelta(weeks=week, hours=arm)
            rows.append((f"arm{arm}", moment.isoformat(), name))
    return rows


def write_manifest(path, rows, header=("robot_id", "recorded_at", "data")):
    path.write_text(",".join(header) + "\n" + "".join(",".join(row) + "\n" for row in rows))
    return path


REAL_WORLD_EFFECTS = Effects(noise_fraction=0.01, rho=0.9, velocity_noise=0.002, quantum=1e-5)
"""What the real-world fleet's recordings suffer: torque noise of 1 % of each joint's own RMS torque (so of a
different size per joint), AR(1) in time with rho 0.9, recorded velocities with a little noise, encoders of
1e-5 rad; friction is exact Coulomb (at the true velocity, reversals included) plus viscous."""


def real_world_arm_recording(robot, arm: int, index: int, wear: Wear | None = None, rate=100.0, duration=20.0,
                             effects: Effects = REAL_WORLD_EFFECTS, amplitude=0.25, repetition=0) -> Recording:
    """Recording ``index`` of arm ``arm`` (:func:`arm_links`, the fleet's friction, raised from recording
    ``wear.week`` on when ``wear`` is this arm's) by :func:`real_world.simulate`: a different excitation per arm,
    recording and ``repetition`` (``real_world.excitation`` with its own seed, ``amplitude`` of the velocity
    limits) and ``effects``."""
    coulomb, viscous = COULOMB.copy(), VISCOUS.copy()
    if wear is not None and wear.arm == arm and index >= wear.week:
        coulomb[wear.joint] *= 1.0 + wear.rise
        viscous[wear.joint] *= 1.0 + wear.rise
    seed = 100000 * repetition + 1000 * arm + index
    trajectory = real_world_excitation(robot, seed=seed, amplitude=amplitude)
    return simulate(robot, trajectory, duration, rate, effects, links=arm_links(robot, arm), coulomb=coulomb,
                    viscous=viscous, seed=seed, source=f"arm{arm}-recording{index}").recording


def write_real_world_fleet(directory, arms=8, recordings=3, wear=None, rate=100.0, duration=20.0,
                           effects: Effects = REAL_WORLD_EFFECTS, repetition=0):
    """CSV recordings of :func:`real_world_arm_recording` (another ``repetition``: other trajectories and noise)
    in ``directory``; the manifest rows ``(robot_id, recorded_at, data)`` in recording order, a week apart."""
    robot = load_robot(ROBOT)
    rows = []
    for index in range(recordings):
        for arm in range(arms):
            name = f"arm{arm}_recording{index}.csv"
            recording = real_world_arm_recording(robot, arm, index, wear, rate, duration, effects,
                                                 repetition=repetition)
            write_csv(directory / name, recording)
            moment = FIRST_DAY + datetime.timedelta(weeks=index, hours=arm)
            rows.append((f"arm{arm}", moment.isoformat(), name))
    return rows
