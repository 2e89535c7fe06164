"""The feed-forward server without ROS: refusals counted with their reasons, the reference timeout (zero due, the
joints still), status fields (the served payload or the one waiting for the first model, friction states), the
notes said on a change of state (each once), the service replies, the node's parameters read into a server.

Expected torques are pinocchio's RNEA of the URDF (``rnea_reference``), temperatures and payloads the ones sent,
running times the warm-up rule's closed form; clocks are set by the tests.
"""
import dataclasses
import math

import numpy as np
import pytest

from rnea_reference import rnea_urdf_with_payload
from robot_dynid.errors import DynIdError
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.feedforward import Margins
from robot_dynid.model.feedforward_server import FRICTION_UNKNOWN, MARGIN_PARAMETERS, FeedforwardServer
from robot_dynid.model.friction import friction_model
from robot_dynid.model.friction_state import FRICTION_STATES, NOMINAL, STATIC, TEMPERATURE, WARMUP
from robot_dynid.model.payload import Payload
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.served_model import ServedModel
from served_arm import UR5_FILE, UR5_URDF, Clock

TORCH = ("tool0", 2.8, (0.01, -0.02, 0.08), (0.01, 0.001, -0.002, 0.012, 0.0005, 0.008))   # inertia ixx ixy ixz ...


def drifting(robot, parameters, **friction):
    """A model of ``robot`` whose coulomb_viscous friction drifts (``friction``: its drift constants)."""
    regressor = Regressor(robot, friction_model("coulomb_viscous", **friction))
    standard = np.zeros(regressor.n_parameters)
    standard[regressor.slices["inertial"]] = parameters
    standard[regressor.slices["friction"]] = 0.5
    return DynamicModel.from_standard(robot, standard, regressor.friction)


def rnea(parameters, q, qd, qdd):
    return rnea_urdf_with_payload(UR5_URDF.read_text(), parameters, None, q, qd, qdd)


def server_of(served_model, timeout=0.5, reference=True, clock=None):
    return FeedforwardServer(served_model, timeout, reference, clock if clock is not None else Clock(0.0))


def test_a_refused_model_is_counted_with_its_reason_and_the_model_in_use_stays(ur5_arm, er3a_robot):
    robot, parameters, model = ur5_arm
    server = server_of(ServedModel(Margins(), Clock(100.0)), reference=False)
    served = server.use_model_message(model.to_yaml(), "ur5", 3)
    assert (served.version, served.source) == (3, "topic (robot 'ur5')")
    notes = []
    for version, text in ((4, "schema: [unclosed"),
                          (5, DynamicModel.from_standard(er3a_robot, plausible_parameters(er3a_robot)).to_yaml())):
        with pytest.raises(Exception) as refused:
            server.use_model_message(text, "other", version)
        notes.append(server.model_refused(version, refused.value))
    assert [level for level, _ in notes] == ["error", "error"]
    assert notes[0][1].startswith("ignoring IdentifiedModel version 4: IdentifiedModel.artifact_yaml")
    assert notes[1][1].startswith("ignoring IdentifiedModel version 5: ") and "er3a" in notes[1][1]
    fields, _ = server.report()
    assert fields["models_refused"] == 2
    assert fields["last_refused_model"] == notes[1][1].removeprefix("ignoring IdentifiedModel ")
    assert (fields["model_version"], fields["model_source"], fields["robot_name"]) == (3, "topic (robot 'ur5')",
                                                                                       robot.name)


def test_the_reference_timeout_gives_zeros_one_warning_and_cools_the_running_time(ur5_arm):
    """References every 0.1 s, then none: zero torques are due once the last valid one is 0.5 s old, the status
    warns once (not again while it lasts), the joints count as still from then (the warm-up clock cools as
    t exp(-d / tau_c)), and the first reference back is said once, at info level."""
    robot, parameters, model = ur5_arm
    ros_time, clock = Clock(100.0), Clock(0.0)
    served_model = ServedModel(Margins(), ros_time, cooling_time_constant=20.0)
    server = server_of(served_model, clock=clock)
    assert server.check_reference() == 0            # no model: nothing is due
    assert server.reference_torques(robot.joint_names, np.zeros(6), np.zeros(6), None) == (None, None)
    served_model.use_model(model, "test")
    fields, notes = server.report()
    assert (fields["state"], fields["references_answered"], notes) == ("waiting for reference", 0, [])
    served_model.reset_warmup(60.0)
    q = np.full(6, 0.3)
    clock.now = 0.1
    tau, note = server.reference_torques(robot.joint_names, q, np.full(6, 0.2), None)    # moving
    assert note is None
    np.testing.assert_allclose(tau, rnea(parameters, q[None], np.full((1, 6), 0.2), np.zeros((1, 6))), atol=1e-9)
    fields, notes = server.report()
    assert (fields["state"], fields["references_answered"], notes) == ("ok", 1, [("info", "ok")])
    due = []
    for step in range(1, 7):                        # the check every timeout / 4
        clock.now = 0.125 * step
        due.append(server.check_reference())
    assert due == [0, 0, 0, 0, 6, 6]
    assert server.changed()
    fields, notes = server.report()
    assert fields["state"] == "reference timeout" and fields["reference_age"] == pytest.approx(0.65)
    assert notes == [("warning", f"reference timeout: {fields['message']}")]
    assert "no valid reference for 0.65 s" in notes[0][1]
    assert not server.changed() and server.report()[1] == []
    ros_time.now = 120.0
    assert served_model.running_time() == pytest.approx(60.0 * math.exp(-1.0), rel=1e-12)
    clock.now = 0.8
    server.reference_torques(robot.joint_names, q, np.full(6, 0.2), None)
    assert server.report()[1] == [("info", "ok")]


def test_a_refused_reference_is_said_once_and_kept_after_valid_ones(ur5_arm):
    robot, _, model = ur5_arm
    clock = Clock(0.0)
    served_model = ServedModel(Margins(), Clock(100.0))
    server = server_of(served_model, clock=clock)
    served_model.use_model(model, "test")
    server.report()
    tau, note = server.reference_torques(robot.joint_names, [0.0, 0.0, math.nan, 0.0, 0.0, 0.0], np.zeros(6), None)
    assert tau is None and note[0] == "warning" and note[1].startswith(f"reference on {list(robot.joint_names)}: ")
    assert "elbow_joint" in note[1]
    fields, notes = server.report()
    assert fields["state"] == "reference refused" and fields["references_refused"] == 1
    assert notes == [("warning", f"reference refused: {fields['message']}")]
    server.reference_torques(robot.joint_names, np.zeros(6), np.zeros(6), None)
    fields, notes = server.report()
    assert (fields["state"], notes) == ("ok", [("info", "ok")])
    assert fields["last_refused_reference"] == note[1].removeprefix(f"reference on {list(robot.joint_names)}: ")


def test_status_fields_name_the_served_payload_or_the_one_waiting_for_the_first_model(ur5_arm):
    robot, _, model = ur5_arm
    served_model = ServedModel(Margins(), Clock(100.0))
    server = server_of(served_model, reference=False)
    fields, note = server.set_payload_reply(*TORCH)
    assert (fields["success"], fields["model_version"], note) == (True, 0, None)
    assert "no model yet" in fields["message"]
    status, _ = server.report()
    assert (status["state"], status["model_version"], status["friction_state"]) == ("no model", 0, 0)
    assert math.isnan(status["reference_age"])      # no reference stream
    assert (status["payload_frame"], status["payload_mass"], status["payload_source"]) == ("tool0", 2.8, "set_payload")
    assert status["payload_com"] == list(TORCH[2]) and status["payload_inertia"] == list(TORCH[3])
    served_model.use_model(model, "test")
    status, _ = server.report()
    assert (status["model_version"], status["payload_frame"], status["payload_source"]) == (1, "tool0", "set_payload")
    fields, note = server.set_payload_reply("no_such_link", 1.0, (0.0, 0.0, 0.0), (0.01, 0.0, 0.0, 0.01, 0.0, 0.01))
    assert (fields["success"], fields["model_version"]) == (False, 1) and "no_such_link" in fields["message"]
    assert note == ("warning", fields["message"]) and fields["message"].startswith("payload refused: ")
    assert server.report()[0]["payload_frame"] == "tool0"          # the payload in use stays
    assert server.clear_payload_reply() == {"success": True, "message": "payload cleared"}
    status, _ = server.report()
    assert (status["payload_frame"], status["payload_mass"], status["payload_source"]) == ("", 0.0, "")
    assert status["payload_com"] == [0.0] * 3 and status["payload_inertia"] == [0.0] * 6

    served_model = ServedModel(Margins(), Clock(100.0))     # no robot known: the frame is checked by the first model
    server = server_of(served_model, reference=False)
    assert server.set_payload_reply("no_such_link", 1.0, (0.0, 0.0, 0.0), (0.01, 0.0, 0.0, 0.01, 0.0, 0.01))[0][
        "success"]
    assert server.report()[0]["payload_frame"] == "no_such_link"
    served_model.use_model(model, "test")
    status, _ = server.report()
    assert status["payload_frame"] == "" and status["model_version"] == 1
    assert status["last_refused_payload"].startswith("1 kg at 'no_such_link' from set_payload: ")
    assert server.clear_payload_reply() == {"success": True, "message": "payload cleared"}


def test_unknown_and_nominal_friction_are_warned_once_each_and_said_in_the_status(ur5_arm):
    robot, parameters, _ = ur5_arm
    ros_time = Clock(None)                          # use_sim_time, no /clock message yet
    served_model = ServedModel(Margins(), ros_time)
    server = server_of(served_model, reference=False)
    served_model.use_model(drifting(robot, parameters, drift="time", warmup_time_constant=600.0), "test")
    fields, notes = server.report()
    assert fields["friction_state"] == FRICTION_UNKNOWN == len(FRICTION_STATES)
    assert "no /clock message" in fields["friction_message"]
    assert notes == [("warning", f"requests refused: {fields['friction_message']}")]
    assert server.report()[1] == [] and not server.changed()
    reply, note = server.compute_reply(robot.joint_names, np.zeros(6))
    assert reply["success"] is False and "no /clock message" in reply["message"] and "friction_state" not in reply
    ros_time.now = 100.0
    assert server.changed()
    fields, notes = server.report()
    assert (FRICTION_STATES[fields["friction_state"]], fields["friction_elapsed"], notes) == (WARMUP, 0.0, [])
    assert fields["friction_message"] == "warm-up friction at 0.0 s since the cold start"

    served_model = ServedModel(Margins(), ros_time, temperatures=True, max_temperature_age=5.0)
    server = server_of(served_model, reference=False)
    served_model.use_model(drifting(robot, parameters, drift="temperature", reference_temperature=25.0), "test")
    fields, notes = server.report()
    assert FRICTION_STATES[fields["friction_state"]] == NOMINAL and fields["friction_temperatures"] == [25.0] * 6
    assert "no temperature received for joint shoulder_pan_joint" in fields["friction_message"]
    assert notes == [("warning", fields["friction_message"])]
    assert server.report()[1] == []
    temperatures = dict(zip(robot.joint_names, [30.0, 31.0, 32.0, 33.0, 34.0, 35.0]))
    assert served_model.update_temperatures(list(temperatures), list(temperatures.values())) == []
    assert server.changed()
    fields, notes = server.report()
    assert FRICTION_STATES[fields["friction_state"]] == TEMPERATURE and notes == []
    assert fields["friction_temperatures"] == list(temperatures.values())
    request = list(reversed(robot.joint_names))
    reply, _ = server.compute_reply(request, np.zeros(6))
    assert reply["success"] and reply["friction_temperatures"] == [temperatures[joint] for joint in request]
    ros_time.now = 106.0                            # every temperature too old: nominal again, warned again
    fields, notes = server.report()
    assert FRICTION_STATES[fields["friction_state"]] == NOMINAL and len(notes) == 1 and "6 s old" in notes[0][1]


def test_compute_replies_in_the_request_order_or_say_why_not(ur5_arm):
    robot, parameters, model = ur5_arm
    served_model = ServedModel(Margins(), Clock(100.0))
    server = server_of(served_model, reference=False)
    assert server.compute_reply(robot.joint_names, np.zeros(6)) == (
        {"model_version": 0, "success": False, "message": "no model loaded yet"}, None)
    served_model.use_model(model, "test", version=7)
    order = [5, 3, 1, 0, 2, 4]
    request = [robot.joint_names[j] for j in order]
    rng = np.random.default_rng(2)
    q, qd, qdd = rng.uniform(-1.0, 1.0, (3, 2, 6))
    reply, note = server.compute_reply(request, q[:, order].ravel(), qd[:, order].ravel(), qdd[:, order].ravel())
    assert note is None and (reply["success"], reply["message"], reply["model_version"]) == (True, "", 7)
    assert FRICTION_STATES[reply["friction_state"]] == STATIC and math.isnan(reply["friction_elapsed"])
    np.testing.assert_allclose(np.reshape(reply["efforts"], (2, 6)), rnea(parameters, q, qd, qdd)[:, order],
                               atol=1e-9)
    assert "friction_temperatures" not in reply
    beyond = np.zeros(6)
    beyond[1] = robot.limits[order[1]].position[1] + 1.0
    reply, note = server.compute_reply(request, beyond)
    assert note is None and reply["success"] is False and request[1] in reply["message"]
    assert reply["friction_state"] == 0         # known before the torques were refused


def test_trajectories_answered_and_refused_are_counted_with_the_latest_reason(ur5_arm):
    robot, parameters, model = ur5_arm
    served_model = ServedModel(Margins(), Clock(100.0))
    server = server_of(served_model, reference=False)
    served_model.use_model(model, "test")
    q = np.array([[0.1] * 6, [0.2] * 6])
    answer, note = server.trajectory_efforts(robot.joint_names, [list(q), [[0.0] * 6] * 2, [[0.0] * 6] * 2])
    assert note is None and answer.inserted == ()
    np.testing.assert_allclose(answer.efforts, rnea(parameters, q, np.zeros((2, 6)), np.zeros((2, 6))), atol=1e-9)
    efforts, note = server.trajectory_efforts(robot.joint_names, [[[0.1] * 6, [0.1] * 5], [], []])
    assert efforts is None and note[0] == "warning"
    assert note[1].startswith(f"trajectory on {list(robot.joint_names)}: ")
    fields, _ = server.report()
    assert (fields["trajectories_answered"], fields["trajectories_refused"]) == (1, 1)
    assert fields["last_refused_trajectory"] == note[1]


def test_reset_warmup_replies_with_the_running_time_and_an_info_note(ur5_arm):
    ros_time = Clock(100.0)
    server = server_of(ServedModel(Margins(), ros_time), reference=False)
    fields, note = server.reset_warmup_reply(30.0)
    assert fields == {"elapsed": 30.0, "success": True, "message": "running time set to 30 s"}
    assert note == ("info", "running time set to 30 s")
    ros_time.now = 110.0
    fields, note = server.reset_warmup_reply(-1.0)
    assert fields["success"] is False and fields["elapsed"] == 40.0
    assert fields["message"].startswith("reset_warmup refused: ") and note == ("info", fields["message"])


def test_the_node_parameters_make_the_server_and_a_model_file_that_fails_is_named(ur5_arm, er3a_robot, tmp_path):
    robot, _, model = ur5_arm
    assert set(MARGIN_PARAMETERS.values()) == {field.name for field in dataclasses.fields(Margins)}
    values = {"robot_file": str(UR5_FILE), "payload_file": "", "joints": ["wrist_3_joint", "elbow_joint"],
              "position_margin": 0.2, "velocity_margin": 1.5, "acceleration_margin": 2.0, "effort_margin": 1.2,
              "model_effort_margin": 3.0, "max_points": 50, "cold_start_stamp": 0.0, "cooling_time_constant": 0.0,
              "temperature_topic_prefix": "", "joint_temperatures_topic": "", "max_temperature_age": 5.0,
              "standstill_velocity": 0.01, "reference_acceleration_window": 0.0, "command_lead": 0.001,
              "reference_timeout": 0.4,
              "reference_topic": "", "trajectory_topic": "trajectory", "trajectory_out_topic": "with_effort",
              "model_topic": "", "command_topic": "effort", "service_queue_depth": 10}
    logged = []
    server = FeedforwardServer.from_parameters(values, Clock(100.0), lambda *note: logged.append(note), Clock(0.0))
    served_model = server.served_model
    assert served_model.margins == Margins(position=0.2, velocity=1.5, acceleration=2.0, effort=1.2,
                                           model_effort=3.0, max_points=50)
    assert served_model.expected_robot.joint_names == robot.joint_names and server.reference_timeout == 0.4
    assert served_model.command_lead == 0.001
    level, note = server.startup_note(values)
    assert level == "info" and "reference off -> off" in note and "trajectory trajectory -> with_effort" in note
    assert "queue depth 10, at most 50 points" in note and "position 0.2 rad" in note

    path = model.save(tmp_path / "model.yaml")
    served = served_model.use_model_file(path)
    assert (served.source, served.output_size) == (f"file {path}", 2)
    assert logged and logged[-1][0] == "info" and "using model version 1" in logged[-1][1]
    garbage = tmp_path / "garbage.yaml"
    garbage.write_text("[" * 10000)
    with pytest.raises(DynIdError, match=f"^{garbage}"):
        served_model.use_model_file(garbage)
    other = DynamicModel.from_standard(er3a_robot, plausible_parameters(er3a_robot)).save(tmp_path / "er3a.yaml")
    with pytest.raises(DynIdError, match=f"^model_file {other} refused: "):
        served_model.use_model_file(other)
    assert served_model.served is served


def test_a_trajectory_across_a_scheduled_payload_gets_it_from_the_payloads_time_on(ur5_arm):
    """Four points 0.1 s apart from t = 100 s, the torch scheduled at 100.15 s: the first two points are the arm
    alone, the last two the arm with the torch (pinocchio's appended body); the model in use is not swapped
    before the time."""
    robot, parameters, model = ur5_arm
    served_model = ServedModel(Margins(), Clock(100.0))
    server = server_of(served_model, reference=False)
    served_model.use_model(model, "test")
    served_model.set_payload(Payload(*TORCH), at=100.15)
    q = np.linspace(0.1, 0.4, 4)[:, None] * np.ones((1, 6))
    zeros = np.zeros((4, 6))
    answer, note = server.trajectory_efforts(robot.joint_names, [list(q), [[0.0] * 6] * 4, [[0.0] * 6] * 4],
                                             start=100.0, offsets=[0.0, 0.1, 0.2, 0.3])
    assert note is None
    efforts = answer.efforts
    urdf = UR5_URDF.read_text()
    alone = rnea_urdf_with_payload(urdf, parameters, None, q, zeros, zeros)
    ixx, ixy, ixz, iyy, iyz, izz = TORCH[3]
    torch = (*TORCH[:3], np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]))
    loaded = rnea_urdf_with_payload(urdf, parameters, torch, q, zeros, zeros)
    np.testing.assert_allclose(efforts[:2], alone[:2], atol=1e-9 * np.abs(alone).max())
    np.testing.assert_allclose(efforts[2:], loaded[2:], atol=1e-9 * np.abs(loaded).max())
    assert served_model.served.model.payload is None and served_model.scheduled is not None


@pytest.mark.parametrize("fields", ["positions", "velocities", "accelerations"])
def test_a_payload_inside_a_segment_steps_in_at_its_time_on_points_that_leave_the_motion_unchanged(ur5_arm, fields):
    """Points 10 ms apart (positions only, with velocities, with accelerations: linear, cubic, quintic), the torch
    scheduled 3.7 ms into a segment: two points are added 0.05 ms before and after it, on the trajectory's own
    interpolation (scipy's BPoly.from_derivatives through the same values: an independent Hermite), the first with
    the arm's torque alone, the second with the torch (pinocchio's RNEA); the motion the controller follows
    (TrajectoryFollower) is the same with and without them, and the original points' efforts are as before."""
    from scipy.interpolate import BPoly
    from robot_dynid.experiment.trajectory_following import TrajectoryFollower
    robot, parameters, model = ur5_arm
    served_model = ServedModel(Margins(), Clock(100.0))
    server = server_of(served_model, reference=False)
    served_model.use_model(model, "test")
    at = 100.0237
    served_model.set_payload(Payload(*TORCH), at=at)
    offsets = np.arange(6) * 0.01
    phase = offsets[:, None] * 3.0 + np.arange(6)
    values = {"positions": 0.3 + 0.5 * np.sin(phase), "velocities": 1.5 * np.cos(phase),
              "accelerations": -4.5 * np.sin(phase)}
    names = ("positions", "velocities", "accelerations")
    given = names[:names.index(fields) + 1]
    points = [list(values[name]) if name in given else [] for name in names]
    answer, note = server.trajectory_efforts(robot.joint_names, points, start=100.0, offsets=offsets)
    assert note is None
    assert [(point.index, point.time_from_start) for point in answer.inserted] == [
        (3, pytest.approx(0.02365, abs=1e-12)), (4, pytest.approx(0.02375, abs=1e-12))]
    times = np.array([point.time_from_start for point in answer.inserted])
    spline = BPoly.from_derivatives(offsets, np.stack([values[name] for name in given], axis=1))
    for order, name in enumerate(names):
        added = np.array([getattr(point, name) for point in answer.inserted])
        if name in given:
            np.testing.assert_allclose(added, spline(times, order), rtol=1e-9, atol=1e-9)
        else:
            assert added.size == 0
    state = [np.array([getattr(point, name) if name in given else np.zeros(6) for point in answer.inserted])
             for name in names]
    urdf = UR5_URDF.read_text()
    ixx, ixy, ixz, iyy, iyz, izz = TORCH[3]
    torch = (*TORCH[:3], np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]))
    efforts = np.array([point.effort for point in answer.inserted])
    np.testing.assert_allclose(efforts[0], rnea_urdf_with_payload(urdf, parameters, None, *state)[0], atol=1e-8)
    np.testing.assert_allclose(efforts[1], rnea_urdf_with_payload(urdf, parameters, torch, *state)[1], atol=1e-8)
    original = [values[name] if name in given else np.zeros((6, 6)) for name in names]
    alone, loaded = (rnea_urdf_with_payload(urdf, parameters, body, *original) for body in (None, torch))
    np.testing.assert_allclose(answer.efforts, np.where((100.0 + offsets >= at)[:, None], loaded, alone), atol=1e-8)
    merged = {name: np.insert(values[name], [3, 3], [getattr(point, name) for point in answer.inserted], axis=0)
              for name in given}
    merged_times = np.insert(offsets, [3, 3], times)
    plain, expanded = TrajectoryFollower(robot.joint_names), TrajectoryFollower(robot.joint_names)
    plain.command(robot.joint_names, offsets, *(values[name] for name in given))
    expanded.command(robot.joint_names, merged_times, *(merged[name] for name in given))
    grid = np.linspace(0.0, 0.05, 5001)
    # inside the 0.1 ms segments the quintic's coefficients carry rounding of order eps q / T^k: 1e-7 rad/s^2
    for order, (before, after) in enumerate(zip(plain.sample(grid), expanded.sample(grid))):
        scale = max(1.0, np.abs(before).max())
        np.testing.assert_allclose(after, before, rtol=0.0, atol=(1e-10, 1e-8, 1e-6)[order] * scale)


def test_a_payload_at_a_points_time_or_outside_the_trajectory_adds_no_point_at_a_point(ur5_arm):
    """The torch scheduled on a point's time gets points only where none is, 0.05 ms either side; scheduled
    before the trajectory's first point or after its last, none (every point is on one side already)."""
    robot, _, model = ur5_arm
    served_model = ServedModel(Margins(), Clock(100.0))
    server = server_of(served_model, reference=False)
    served_model.use_model(model, "test")
    q = [[0.2] * 6] * 4
    for at, expected in ((100.02, [0.01995, 0.02005]), (100.0 - 1e-3, []), (100.031, [])):
        served_model.set_payload(Payload(*TORCH), at=at)
        answer, note = server.trajectory_efforts(robot.joint_names, [q, [], []], start=100.0,
                                                 offsets=[0.0, 0.01, 0.02, 0.03])
        assert note is None
        assert [point.time_from_start for point in answer.inserted] == pytest.approx(expected, abs=1e-12)
        served_model.clear_payload()
    served_model.set_margin("max_points", 5)        # room for one point more, not two: answered without them
    served_model.set_payload(Payload(*TORCH), at=100.015)
    answer, note = server.trajectory_efforts(robot.joint_names, [q, [], []], start=100.0,
                                             offsets=[0.0, 0.01, 0.02, 0.03])
    assert note is None and answer.inserted == () and answer.efforts.shape == (4, 6)


def test_a_command_lead_answers_a_reference_for_its_state_that_much_later_and_its_payload_from_then(ur5_arm):
    """A planned sine reference at 1 kHz (positions and velocities; accelerations estimated over 10 ms) with a
    command lead of 2 ms: the answer to the reference stamped t is pinocchio's RNEA of the plan's state at t + 2 ms
    (within the extrapolation's third-order error), not at t; the torch scheduled 1 ms after a reference's stamp is
    in that reference's answer already (its stamp plus the lead is past the payload's time)."""
    robot, parameters, model = ur5_arm
    lead = 0.002
    served_model = ServedModel(Margins(), Clock(1000.0), reference_acceleration_window=0.01, command_lead=lead)
    server = server_of(served_model)
    served_model.use_model(model, "test")
    rng = np.random.default_rng(2)
    centre, amplitude, rate = rng.uniform(-1.0, 1.0, 6), rng.uniform(0.2, 0.5, 6), 3.0

    def plan(t):
        phase = rate * t + np.arange(6)
        return (centre + amplitude * np.sin(phase), rate * amplitude * np.cos(phase),
                -rate**2 * amplitude * np.sin(phase))

    urdf = UR5_URDF.read_text()

    def torque(t, body=None):
        return rnea_urdf_with_payload(urdf, parameters, body, *(value[None] for value in plan(t)))[0]

    for k in range(16):
        q, qd, _ = plan(k * 1e-3)
        tau, note = server.reference_torques(robot.joint_names, q, qd, 1000.0 + k * 1e-3)
        assert note is None
    tau, ahead, now = np.ravel(tau), torque(15e-3 + lead), torque(15e-3)
    np.testing.assert_allclose(tau, ahead, rtol=0.0, atol=1e-4 * np.abs(ahead).max())
    assert np.max(np.abs(tau - ahead)) < 0.1 * np.max(np.abs(tau - now))
    ixx, ixy, ixz, iyy, iyz, izz = TORCH[3]
    torch = (*TORCH[:3], np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]))
    served_model.set_payload(Payload(*TORCH), at=1000.0 + 17e-3)
    q, qd, _ = plan(16e-3)
    tau, note = server.reference_torques(robot.joint_names, q, qd, 1000.0 + 16e-3)
    loaded = torque(16e-3 + lead, torch)
    np.testing.assert_allclose(np.ravel(tau), loaded, rtol=0.0, atol=1e-4 * np.abs(loaded).max())
    assert served_model.served.model.payload is not None


def test_a_trajectory_takes_a_warming_friction_at_each_points_time(ur5_arm):
    """A friction that warms up with running time (t_w 2 s), the running time 1 s at ROS time 100 s: a trajectory
    sent then with points 0, 0.5 and 1 s ahead gets each point's torque at 1, 1.5 and 2 s of running time (the
    model's own ``exp(-t / t_w)`` columns), not all at 1 s."""
    robot, parameters, _ = ur5_arm
    model = drifting(robot, parameters, drift="time", warmup_time_constant=2.0)
    served_model = ServedModel(Margins(), Clock(100.0))
    server = server_of(served_model, reference=False)
    served_model.use_model(model, "test")
    server.reset_warmup_reply(1.0)
    q = np.full((3, 6), 0.2)
    qd = np.full((3, 6), 0.5)
    answer, note = server.trajectory_efforts(robot.joint_names, [list(q), list(qd), [[0.0] * 6] * 3],
                                             offsets=[0.0, 0.5, 1.0])
    assert note is None
    efforts = answer.efforts
    expected = model.torque(q, qd, np.zeros((3, 6)), elapsed=np.array([1.0, 1.5, 2.0]))
    np.testing.assert_allclose(efforts, expected, rtol=1e-12, atol=1e-12)
    flat = model.torque(q, qd, np.zeros((3, 6)), elapsed=np.full(3, 1.0))
    assert np.max(np.abs(efforts[2] - flat[2])) > 1e-3 * np.max(np.abs(flat[2]))
