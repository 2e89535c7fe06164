"""The served model without ROS: admission under live margins, payloads before and after the first model, the
effort limits a first model leaves, the reference path's joint order and accelerations, the warm-up clock.

Expected torques are pinocchio's RNEA of a model from pinocchio's own URDF parser, the payload appended as a body
(``rnea_reference.rnea_urdf_with_payload``), not robot_dynid's regressor; running times follow the warm-up
rule's closed form.
"""
import dataclasses
import math
import threading

import numpy as np
import pytest

from rnea_reference import rnea_urdf_with_payload
from robot_dynid.errors import DynIdError
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.feedforward import DERIVED_EFFORT_FACTOR, Margins
from robot_dynid.model.payload import Payload
from robot_dynid.model.served_model import ServedModel
from served_arm import UR5_URDF, Clock

INERTIA = np.array([[0.01, 0.001, -0.002], [0.001, 0.012, 0.0005], [-0.002, 0.0005, 0.008]])    # kg m^2 about com
TORCH = ("tool0", 2.8, np.array([0.01, -0.02, 0.08]), INERTIA)
URDF_ORDER = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]


def torch():
    frame, mass, com, inertia = TORCH
    return Payload(frame, mass, tuple(com), tuple(inertia[i, j] for i, j in URDF_ORDER))


def states(robot, n, seed=0):
    """States (q, qd, qdd) within the robot's limits, each (n, joints)."""
    rng = np.random.default_rng(seed)
    lower, upper = np.array([limit.position for limit in robot.limits]).T
    velocity = np.array([limit.velocity for limit in robot.limits])
    acceleration = np.array([limit.acceleration for limit in robot.limits])
    q = rng.uniform(np.maximum(lower, -np.pi), np.minimum(upper, np.pi), (n, robot.n_joints))
    return q, rng.uniform(-0.5, 0.5, q.shape) * velocity, rng.uniform(-0.5, 0.5, q.shape) * acceleration


def rnea(parameters, payload, q, qd, qdd):
    return rnea_urdf_with_payload(UR5_URDF.read_text(), parameters, payload, q, qd, qdd)


def test_requests_during_payload_changes_are_answered_wholly_with_or_without_it(ur5_arm):
    """One thread attaches and removes the torch 300 times while another asks for torques: every answer is
    pinocchio's torque of the arm alone or of the arm with the torch, never a mix of the two."""
    robot, parameters, model = ur5_arm
    served_model = ServedModel(Margins(), Clock())
    served_model.use_model(model, "test")
    q, qd, qdd = states(robot, 1, seed=3)
    expected = [rnea(parameters, payload, q, qd, qdd)[0] for payload in (None, TORCH)]
    stop = threading.Event()

    def toggle():
        for _ in range(300):
            served_model.set_payload(torch())
            served_model.clear_payload()
        stop.set()

    thread = threading.Thread(target=toggle)
    thread.start()
    answers = []
    while not stop.is_set():
        served = served_model.served
        answers.append(served_model.torques(served, robot.joint_names, q[0], qd[0], qdd[0])[0])
    thread.join()
    scale = np.abs(expected[1]).max()
    matches = [[np.abs(answer - reference).max() < 1e-9 * scale for reference in expected] for answer in answers]
    assert all(any(match) for match in matches), [answer for answer, match in zip(answers, matches)
                                                  if not any(match)][:3]
    served_model.set_payload(torch())
    np.testing.assert_allclose(served_model.torques(served_model.served, robot.joint_names, q[0], qd[0], qdd[0]),
                               expected[1][None], rtol=1e-9, atol=1e-9 * scale)
    assert served_model.served.payload_source == "set_payload" and served_model.payload.mass == 2.8


def test_a_margin_the_model_in_use_fails_is_refused_and_a_fitting_one_takes_effect(ur5_arm):
    robot, _, model = ur5_arm
    served_model = ServedModel(Margins(), Clock())
    served = served_model.use_model(model, "test")
    with pytest.raises(DynIdError, match=r"effort_margin 0.05 refused: the model in use \(version 1\) would not be "
                                         r"served with it"):
        served_model.check_margin("effort", 0.05, "effort_margin")
    assert served_model.served is served and served_model.margins.effort == Margins().effort
    q, qd, _ = states(robot, 1, seed=4)
    velocity = np.array([limit.velocity for limit in robot.limits])
    qd[0, 2] = 1.8 * velocity[2]        # above the default factor 1.1, below 2
    with pytest.raises(DynIdError, match="elbow_joint"):
        served_model.torques(served_model.served, robot.joint_names, q[0], qd[0])
    served_model.set_margin("velocity", served_model.check_margin("velocity", 2.0, "velocity_margin"))
    assert served_model.served.version == 1 and served_model.served.limits.margins.velocity == 2.0
    assert np.isfinite(served_model.torques(served_model.served, robot.joint_names, q[0], qd[0])).all()


def test_a_payload_given_before_the_robot_is_known_is_checked_against_the_first_model(ur5_arm):
    robot, parameters, model = ur5_arm
    logged = []
    served_model = ServedModel(Margins(), Clock(), log=lambda level, message: logged.append((level, message)))
    assert served_model.set_payload(dataclasses.replace(torch(), frame="flange")).startswith("no model yet")
    served = served_model.use_model(model, "test")
    assert served.model.payload is None and served_model.payload is None
    assert "'flange'" in served_model.last_refused_payload and "tool0" in served_model.last_refused_payload
    assert [level for level, _ in logged] == ["error", "info"]
    with pytest.raises(DynIdError, match="flange"):     # the robot is known now: refused at once
        served_model.set_payload(dataclasses.replace(torch(), frame="flange"))

    served_model = ServedModel(Margins(), Clock(), payload=torch(), payload_source="payload_file torch.yaml")
    served = served_model.use_model(model, "test")
    q, qd, qdd = states(robot, 5, seed=5)
    np.testing.assert_allclose(served_model.torques(served, robot.joint_names, q.ravel(), qd.ravel(), qdd.ravel()),
                               rnea(parameters, TORCH, q, qd, qdd), rtol=1e-9, atol=1e-9)
    assert served.payload_source == "payload_file torch.yaml"


def test_effort_limits_derived_from_the_first_model_hold_every_later_one(ur5_arm):
    """Without effort limits in the description they are DERIVED_EFFORT_FACTOR x the first model's torques at
    the limits of motion, and stay: rigid-body torques scale with the parameters, so a model 7 times as heavy
    needs 7 / (2 x 3) of model_effort_margin 3 times those limits (refused) and one twice as heavy 1/3 (admitted),
    where alone the heavy model derives its own limits and is admitted."""
    robot, parameters, model = ur5_arm
    unlimited = dataclasses.replace(robot, limits=tuple(dataclasses.replace(limit, effort=None)
                                                        for limit in robot.limits))
    light, heavy, heavier = (DynamicModel.from_standard(unlimited, factor * parameters) for factor in (1.0, 2.0, 7.0))
    assert DERIVED_EFFORT_FACTOR == 2.0 and Margins().model_effort == 3.0
    served_model = ServedModel(Margins(), Clock())
    first = served_model.use_model(light, "first")
    np.testing.assert_allclose([limit.effort for limit in served_model.expected_robot.limits],
                               2.0 * first.limits.peak.torque)
    with pytest.raises(DynIdError, match="refused|effort"):
        served_model.use_model(heavier, "heavier")
    assert served_model.served is first
    assert served_model.use_model(heavy, "heavy").version == 2
    assert ServedModel(Margins(), Clock()).use_model(heavier, "alone").limits.effort_derived.all()


def test_the_reference_path_answers_in_the_output_joints_order_with_estimated_accelerations(ur5_arm):
    """A reference with its joints shuffled and an extra one, velocities rising linearly (acceleration a): the
    quadratic fit over the window is exact, so the torques are pinocchio's at qdd = a, in the controller's
    joint order."""
    robot, parameters, model = ur5_arm
    output = ["wrist_3_joint", "shoulder_pan_joint", "elbow_joint"]
    served_model = ServedModel(Margins(), Clock(), output_joints=output, reference_acceleration_window=0.01)
    served = served_model.use_model(model, "test")
    q, qd, qdd = states(robot, 1, seed=6)
    order = [5, 2, 0, 4, 1, 3]
    names = [robot.joint_names[j] for j in order] + ["gripper_joint"]
    for k in range(12):
        velocity = qd[0] + qdd[0] * (k * 1e-3 - 11e-3)
        tau = served_model.reference_torques(served, names, np.append(q[0, order], 0.04),
                                             np.append(velocity[order], 0.0), 1000.0 + k * 1e-3)
    expected = rnea(parameters, None, q, qd, qdd)[0]
    np.testing.assert_allclose(tau[0], expected[[robot.joint_names.index(name) for name in output]], rtol=1e-6,
                               atol=1e-6 * np.abs(expected).max())
    with pytest.raises(DynIdError, match="wrist_2_joint"):
        served_model.reference_torques(served, names[:1] + names[2:], q[0, order][1:], qd[0, order][1:])
    with pytest.raises(DynIdError, match="gripper_joint"):
        ServedModel(Margins(), Clock(), output_joints=["gripper_joint"]).use_model(model, "test")


def test_the_running_time_follows_the_cold_start_the_clock_and_cooling(ur5_arm):
    robot, _, model = ur5_arm
    clock = Clock(100.0)
    served_model = ServedModel(Margins(), clock, cold_start_stamp=40.0, cooling_time_constant=20.0)
    assert served_model.running_time() == 60.0
    clock.now = 110.0
    assert served_model.running_time() == 70.0
    served = served_model.use_model(model, "test")
    q = states(robot, 1, seed=7)[0][0]
    served_model.reference_torques(served, robot.joint_names, q, np.zeros(6))    # the joints stand still
    clock.now = 130.0
    assert served_model.running_time() == pytest.approx(70.0 * math.exp(-1.0), rel=1e-12)
    served_model.reference_torques(served, robot.joint_names, q, np.full(6, 0.2))     # moving again
    clock.now = 135.0
    assert served_model.running_time() == pytest.approx(70.0 * math.exp(-1.0) + 5.0, rel=1e-12)
    assert served_model.reset_warmup(0.0) == 0.0
    with pytest.raises(DynIdError, match="elapsed"):
        served_model.reset_warmup(-1.0)

    with pytest.raises(DynIdError, match=r"cold_start_stamp \(200.0 s\) is after the node's start"):
        ServedModel(Margins(), Clock(100.0), cold_start_stamp=200.0)
    clock = Clock(None)         # use_sim_time, no /clock yet: nothing starts, nothing is refused
    served_model = ServedModel(Margins(), clock, cold_start_stamp=80.0)
    assert math.isnan(served_model.running_time())
    with pytest.raises(DynIdError, match="no /clock message"):
        served_model.reset_warmup(5.0)
    clock.now = 50.0            # the first /clock time is before the cold start: unknown until reset
    served_model.joints_move(True)
    assert math.isnan(served_model.running_time())
    assert served_model.reset_warmup(10.0) == 10.0
    clock.now = 52.5
    assert served_model.running_time() == 12.5


def test_temperatures_are_kept_for_the_robots_joints_only_and_never_before_ros_time(ur5_arm):
    robot, _, model = ur5_arm
    clock = Clock(None)
    served_model = ServedModel(Margins(), clock, temperatures=True)
    assert [level for level, _ in served_model.update_temperatures(["elbow_joint"], [40.0])] == ["warning"]
    clock.now = 10.0
    notes = served_model.update_temperatures(["elbow_joint"], [40.0])
    assert len(notes) == 1 and "not a joint of the robot served" in notes[0][1]     # no robot yet
    served_model.use_model(model, "test")
    assert served_model.update_temperatures(["elbow_joint"], [40.0], 9.5) == []
    notes = served_model.update_temperatures(["elbow_joint", "gripper_joint", "wrist_1_joint"], [41.0, 30.0, 900.0],
                                             9.0)
    assert [level for level, _ in notes] == ["info", "warning", "warning"], notes
    assert "stamped later" in notes[0][1] and "gripper_joint" in notes[1][1] and "wrist_1_joint" in notes[2][1]


def test_a_payload_set_for_a_later_time_is_served_from_that_time_on(ur5_arm):
    """The torch set for t = 100.5 s at t = 100 s: checked now, the arm alone for references stamped and requests
    answered before, the arm with the torch (pinocchio's appended body) from then on; a payload the model cannot
    serve is refused at once, not when its time comes; clearing drops a scheduled one."""
    robot, parameters, model = ur5_arm
    clock = Clock(100.0)
    served_model = ServedModel(Margins(), clock)
    served_model.use_model(model, "test")
    q, qd, qdd = states(robot, 1, seed=5)
    alone, loaded = (rnea(parameters, payload, q, qd, qdd)[0] for payload in (None, TORCH))
    scale = np.abs(loaded).max()

    def torques(stamp=None):
        served = served_model.current(stamp)
        return served_model.torques(served, robot.joint_names, q[0], qd[0], qdd[0])[0], served

    message = served_model.set_payload(torch(), at=100.5)
    assert message.startswith("checked; served from 100.5 s of ROS time, 0.5 s from now"), message
    assert served_model.served.model.payload is None and served_model.scheduled.at == 100.5
    np.testing.assert_allclose(torques(stamp=100.499)[0], alone, atol=1e-9 * scale)
    np.testing.assert_allclose(torques()[0], alone, atol=1e-9 * scale)       # answered at 100 s
    tau, served = torques(stamp=100.5)
    np.testing.assert_allclose(tau, loaded, atol=1e-9 * scale)
    assert served.payload_source == "set_payload" and served_model.scheduled is None
    np.testing.assert_allclose(torques(stamp=100.2)[0], loaded, atol=1e-9 * scale)    # served: it stays

    served_model.clear_payload()
    heavy = Payload("tool0", 5000.0, (0.0, 0.0, 0.1), (50.0, 0.0, 0.0, 50.0, 0.0, 50.0))
    with pytest.raises(DynIdError, match="effort"):
        served_model.set_payload(heavy, at=101.0)
    assert served_model.scheduled is None
    served_model.set_payload(torch(), at=101.0)
    served_model.clear_payload()
    clock.now = 102.0
    np.testing.assert_allclose(torques()[0], alone, atol=1e-9 * scale)
    assert served_model.set_payload(torch(), at=99.0) == ""                  # a time past: now
    assert served_model.served.model.payload is not None and served_model.scheduled is None


def test_a_scheduled_payload_is_checked_again_against_a_new_model(ur5_arm):
    """A model arriving before the scheduled time: the torch is served with it when the time comes (the new
    model's arm, not the old one's)."""
    robot, parameters, model = ur5_arm
    served_model = ServedModel(Margins(), Clock(100.0))
    served_model.use_model(model, "test")
    served_model.set_payload(torch(), at=100.5)
    other = plausible_parameters(robot, seed=2)
    served_model.use_model(DynamicModel.from_standard(robot, other), "newer")
    assert served_model.served.model.payload is None
    q, qd, qdd = states(robot, 1, seed=6)
    served = served_model.current(100.6)
    expected = rnea(other, TORCH, q, qd, qdd)[0]
    np.testing.assert_allclose(served_model.torques(served, robot.joint_names, q[0], qd[0], qdd[0])[0], expected,
                               atol=1e-9 * np.abs(expected).max())
    assert served.version == 2 and served.source == "newer"
