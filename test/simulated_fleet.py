"""A simulated fleet for the fleet tests and benchmark: UR5 arms whose torques come from pinocchio's RNEA
(not the package's regressor) plus Coulomb and viscous friction written out by hand and white noise.

Arm ``k`` has every link ``1 + MASS_OFFSETS[k]`` times as heavy as the reference arm's (mass, first
moments and inertia scaled together: the same shape, a denser link). Every arm runs the same
excitation each week; an arm may wear: from a given week on, the Coulomb and viscous friction of one
joint are ``1 + rise`` times their value.
"""
import dataclasses
import datetime

import numpy as np

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
