"""Unit mistakes are errors naming the column; single implausible samples are dropped and counted; stale rows
(a logger reading the same state twice) are dropped before derivatives, a true rest is kept."""
import dataclasses
import math
import re

import numpy as np
import pytest

from robot_dynid.errors import DataError
from robot_dynid.estimation.identification import IdentificationSettings, identify
from robot_dynid.model.friction import friction_model
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.conditioning import Conditioning
from robot_dynid.recordings.data_checks import (MAX_TORQUE, STALE_ROW, SampleBounds, check_samples,
                                                check_time_unit, stale_rows)
from robot_dynid.recordings.pipeline import condition
from robot_dynid.recordings.recording import Recording
import torque_cases


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


# ------------------------------------------------------------------------------------------------ stale rows
def with_stale_rows(recording, share=0.055, seed=9):
    """``recording`` with ``share`` of its rows (1,131 of 20,544 in a logger's recording: 5.5 %) replaced by the
    row before them, in order, as a logger that reads the driver's state before it is updated writes them (a run
    of such rows repeats one state); and the indices of those rows."""
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(np.arange(1, recording.n_samples), int(round(share * recording.n_samples)),
                              replace=False))
    values = {name: getattr(recording, name).copy() for name in ("q", "qd", "tau")
              if getattr(recording, name) is not None}
    for row in rows:
        for field in values.values():
            field[row] = field[row - 1]
    return dataclasses.replace(recording, **values), rows


@pytest.fixture(scope="module", params=["recorded", None], ids=["recorded velocities", "positions only"])
def stale_run(request):
    """(the UR5 run of torque_cases with stale rows, the stale rows' indices, the run without them, its truth)."""
    simulated = torque_cases.run(effects=dataclasses.replace(torque_cases.EFFECTS, velocity=request.param))
    stale, rows = with_stale_rows(simulated.recording)
    return stale, rows, simulated.recording, simulated.truth


def test_stale_rows_are_dropped_before_derivatives_and_counted_with_their_first_stamp(stale_run, caplog):
    stale, rows, _, truth = stale_run
    injected = np.zeros(stale.n_samples, dtype=bool)
    injected[rows] = True
    checked = check_samples(stale, torque_cases.ROBOT)
    dropped = ~np.isin(stale.time, checked.time)
    assert not np.any(dropped & ~injected)                 # nothing but stale rows
    if stale.qd is None:
        # without velocities, a stale row where the encoder moves less than a step per sample cannot be told
        # from a rest (and is as harmless); every row where it moves more is found
        step = torque_cases.EFFECTS.quantum * torque_cases.RATE
        assert np.all(dropped[injected & np.any(np.abs(truth.qd) > 2.0 * step, axis=1)])
        assert dropped.sum() > 0.85 * injected.sum()
    else:
        np.testing.assert_array_equal(dropped, injected)   # noisy recorded velocities never repeat by themselves
    entry = checked.dropped[STALE_ROW]
    assert entry.count == dropped.sum() and entry.first_time == stale.time[dropped][0]
    share = 100.0 * dropped.sum() / stale.n_samples
    assert (f"run.csv: {dropped.sum()} of {stale.n_samples} rows ({share:.2g} %) repeat the previous row's "
            in caplog.text)


def test_a_true_rest_is_not_stale():
    """Noise-free torques, exact velocities: at each rest the rows repeat exactly, and are kept."""
    clean = torque_cases.run(effects=dataclasses.replace(torque_cases.EFFECTS, noise=0.0, velocity_noise=0.0))
    recording = clean.recording
    repeats = np.all(recording.q[1:] == recording.q[:-1], axis=1) & np.all(recording.tau[1:] == recording.tau[:-1],
                                                                           axis=1)
    assert repeats.sum() > 500                                   # the three rests, 7 s at 100 Hz
    assert check_samples(recording, torque_cases.ROBOT) is recording
    # without recorded velocities the same: the positions do not change into or out of a rest's repeats
    assert not stale_rows(recording.q, None, recording.tau).any()


def test_a_model_from_a_recording_with_stale_rows_is_no_worse_than_from_the_same_run_without_them(stale_run):
    """Judged against the simulated truth on the training motion (noise-free RNEA torques plus exact friction):
    per joint, the RMS error of the model identified through the pipeline's checks (stale rows dropped) is within
    5 % of the run's without stale rows. Kept instead (the former behaviour), they make derivatives of positions
    jump: several times the error."""
    stale, _, clean, truth = stale_run
    settings = IdentificationSettings(friction=friction_model("coulomb_viscous"), check_torque_scale=False)
    conditioning = Conditioning(velocity_at_rest="measured")

    def error(recording):
        model = identify(condition(recording, conditioning), torque_cases.ROBOT, settings)
        predicted = model.torque(truth.q, truth.qd, truth.qdd)
        return np.sqrt(np.mean((predicted - truth.tau) ** 2, axis=0))
    dropped, baseline = error(check_samples(stale, torque_cases.ROBOT)), error(clean)
    assert np.all(dropped <= 1.05 * baseline), (dropped, baseline)
    if stale.qd is None:
        assert np.mean(error(stale) / baseline) > 2.0
