"""Unit mistakes are errors naming the column; single implausible samples are dropped and counted."""
import math
import re

import numpy as np
import pytest

from robot_dynid.errors import DataError
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.data_checks import (MAX_TORQUE, SampleBounds, check_samples,
                                                check_time_unit)
from robot_dynid.recordings.recording import Recording


@pytest.fixture(scope="module")
def robot():
    return load_robot(find_package_file("config", "robots", "puma560.yaml"))


def recording(robot, n=500, rate=500.0, **fields):
    """A slow motion within every joint's limits (0.3 rad around the middle of its range)."""
    t = np.arange(n) / rate
    middle = np.array([sum(limit.position) / 2 for limit in robot.limits])
    q = middle + 0.3 * np.sin(np.outer(t, np.arange(1, robot.n_joints + 1)))
    values = {"q": q, "qd": np.gradient(q, t, axis=0), "tau": np.full_like(q, 10.0)}
    values.update(fields)
    return Recording(robot.joint_names, fields.pop("time", t), source="run.csv", **values)


def test_a_plausible_recording_is_kept_whole(robot):
    data = recording(robot)
    assert check_samples(data, robot) is data


def test_positions_in_degrees_are_an_error_naming_the_column(robot):
    data = recording(robot)
    degrees = data.q.copy()
    degrees[:, 1] = np.degrees(degrees[:, 1])
    with pytest.raises(DataError, match=r"run.csv: column q.j2 lies beyond the joint's position limits "
                                        r"\[.*\] rad by more than 0.5 rad in \d+% of the samples .*: it looks like "
                                        r"degrees \(.* deg = .* rad\); give radians"):
        check_samples(recording(robot, q=degrees), robot)


def test_velocities_in_degrees_per_second_are_an_error(robot):
    data = recording(robot)
    qd = data.qd.copy()
    qd[:, 0] = np.degrees(qd[:, 0]) * 20.0     # a fast joint, in deg/s: beyond 10x its velocity limit
    qd[:, 0] = np.clip(qd[:, 0], -np.degrees(robot.limits[0].velocity), np.degrees(robot.limits[0].velocity))
    with pytest.raises(DataError, match=r"column qd.j1 exceeds .* rad/s \(10x the joint's velocity limit\) in "
                                        r"\d+% of the samples .*: it looks like deg/s"):
        check_samples(recording(robot, qd=qd), robot)


@pytest.mark.parametrize("step, unit", [(2.0, "milliseconds"), (2000.0, "microseconds"), (2e6, "nanoseconds")])
def test_time_in_milliseconds_or_smaller_units_is_an_error(step, unit):
    with pytest.raises(DataError, match=rf"run.csv: the median sampling interval is {re.escape(f'{step:g}')} s .* "
                                        rf"time looks like {unit} \({re.escape(f'{step:g}')} {unit} = 500 Hz\)"):
        check_time_unit(np.arange(100) * step, "run.csv")
    check_time_unit(np.arange(100) * 0.02, "run.csv")       # 50 Hz (hydraulic arms): fine
    with pytest.raises(DataError, match="does not look like seconds"):
        check_time_unit(np.arange(100) * 0.002 / 3600.0, "run.csv")   # 500 Hz in hours


def test_single_implausible_samples_are_dropped_and_counted(robot):
    data = recording(robot)
    q, tau = data.q.copy(), data.tau.copy()
    bound = 10.0 * robot.limits[2].effort
    tau[100, 2] = 1e300                 # a corrupt torque (1e300 made a model holding NaN)
    tau[101, 2] = -1.01 * bound         # beyond 10x the effort limit
    tau[102, 2] = 0.99 * bound          # large, but within
    q[300, 4] = 40.0                    # a position spike
    checked = check_samples(recording(robot, q=q, tau=tau), robot)
    assert checked.n_samples == data.n_samples - 3
    reasons = {reason: (entry.count, entry.first_time) for reason, entry in checked.dropped.items()}
    assert reasons == {f"|torque| of j3 above {bound:.4g} N m": (2, data.time[100]),
                       "position beyond the limits of j5 by more than 0.5 rad": (1, data.time[300])}


def test_without_an_effort_limit_the_torque_bound_is_max_torque(robot):
    bounds = SampleBounds.for_robot(robot.__class__(robot.name, robot.joint_names, tuple(
        limit.__class__(limit.position, limit.velocity, limit.acceleration) for limit in robot.limits),
        robot.gravity, robot.dh_convention, robot.dh, robot.base))
    np.testing.assert_array_equal(bounds.torque, MAX_TORQUE)


def test_effort_limits_bound_the_torque_where_the_robot_gives_them():
    robot = load_robot(find_package_file("config", "robots", "ur5.yaml"))
    efforts = [limit.effort for limit in robot.limits]
    assert all(effort is not None for effort in efforts)
    bounds = SampleBounds.for_robot(robot)
    tau = np.zeros(robot.n_joints)
    tau[0] = 10.0 * efforts[0] * 1.01
    assert bounds.reason(np.zeros(robot.n_joints), None, tau) == f"|torque| of {robot.joint_names[0]} above " \
        f"{10.0 * efforts[0]:.4g} N m"
    tau[0] = 10.0 * efforts[0] * 0.99
    assert bounds.reason(np.zeros(robot.n_joints), None, tau) is None
    assert math.isclose(bounds.velocity[0], 10.0 * robot.limits[0].velocity)


@pytest.mark.parametrize("robot_file, joint, scale, factor", [
    ("er3a_coupled_wrist.yaml", 5, None, "50 times the joint's angle, its gear ratio"),  # qm6 = 50 (q5 + q6)
    ("er3a.yaml", 2, 101.0, "101 times the joint's angle, its gear ratio"),              # the drive's gear_ratio
    ("puma560.yaml", 2, 1000.0, "over 5 times its limits in most samples"),              # no ratio known
])
def test_motor_angles_in_a_q_column_are_an_error_naming_the_joint(robot_file, joint, scale, factor):
    robot = load_robot(find_package_file("config", "robots", robot_file))
    q = recording(robot).q.copy()
    q[:, joint] = 50.0 * (q[:, 4] + q[:, 5]) if scale is None else scale * q[:, joint]
    name = robot.joint_names[joint]
    with pytest.raises(DataError, match=rf"^run.csv: column q.{name} lies beyond the joint's position limits .* in "
                                        rf"\d+% of the samples .*: it looks like motor-side angles \({factor}; give "
                                        r"them as qm.<motor> columns, or a bag's motor states with "
                                        r"--motor-states-topic, with the robot description's transmission\)"
                                        r"( or degrees \(.* deg = .* rad\))?$"):
        check_samples(recording(robot, q=q), robot)
