"""Motor-side recordings of the coupled-wrist ER3A (config/robots/er3a_coupled_wrist.yaml), read back as joint
values. The motor values are written in the test from the joint values by the transmission's rows as the robot
file states them (qm6 = 50 (q5 + q6), ...), and the joint torques from motor torques by hand (tau5 = 81 taum5 +
50 taum6, tau6 = 50 taum6): nothing here goes through Transmission's own arithmetic."""
import numpy as np
import pytest
import yaml

from robot_dynid.errors import DataError
from robot_dynid.model.robot_loader import load_robot, robot_from_dict
from robot_dynid.recordings.bag_io import JOINT_STATE_TYPE, BagWriter
from robot_dynid.recordings.csv_io import write_columns
from robot_dynid.recordings.pipeline import read_recording
from coupled_wrist import COUPLED, MOTORS, T0_NS, joint_torques, motor_from_joint

CONSTANTS = (0.2, 0.2, 0.15, -0.1, 0.08, 0.05)    # torque constants [N m/A] of the test's drives


@pytest.fixture(scope="module")
def motion():
    """2 s at 500 Hz of a smooth motion within the limits, and motor torques of a few N m at the motor."""
    t = np.arange(1000) / 500.0
    w = np.arange(1, 7)
    q = 0.3 * np.sin(np.outer(t, w))
    qd = 0.3 * w * np.cos(np.outer(t, w))
    qdd = -0.3 * w**2 * np.sin(np.outer(t, w))
    taum = 0.05 * np.cos(np.outer(t, w + 0.5)) + np.linspace(0.01, 0.06, 6)
    return t, q, qd, qdd, taum


@pytest.fixture(scope="module")
def robot():
    return load_robot(COUPLED)


def with_torque_constants(constants=CONSTANTS):
    description = yaml.safe_load(COUPLED.read_text())
    description["transmission"]["torque_constants"] = list(constants)
    return robot_from_dict(description)


def write(path, t, groups):
    """CSV of ``time`` and, per (field, names, values (N, 6)), the columns ``field.<name>``."""
    header = ["time"] + [f"{field}.{name}" for field, names, _ in groups for name in names]
    write_columns(path, header, np.column_stack([t] + [values for _, _, values in groups]))
    return path


def test_a_motor_side_csv_of_the_coupled_wrist_reads_back_as_the_joint_values(tmp_path, robot, motion):
    t, q, qd, qdd, taum = motion
    groups = [("qm", MOTORS, motor_from_joint(q)), ("qdm", MOTORS, motor_from_joint(qd)),
              ("qddm", MOTORS, motor_from_joint(qdd)), ("taum", MOTORS, taum)]
    path = write(tmp_path / "motor.csv", t, groups)
    recording = read_recording(path, robot=robot)
    assert recording.joint_names == robot.joint_names and recording.n_samples == t.size
    for read, expected in ((recording.q, q), (recording.qd, qd), (recording.qdd, qdd)):
        np.testing.assert_allclose(read, expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(recording.tau, joint_torques(taum), rtol=0, atol=1e-9)


def test_joint_positions_with_motor_velocities_and_currents_use_the_torque_constants(tmp_path, motion):
    """Each quantity from its own side: joint encoders, motor speeds, motor currents i = taum / k_t [A]."""
    t, q, qd, _, taum = motion
    current = taum / np.array(CONSTANTS)
    groups = [("q", ("j1", "j2", "j3", "j4", "j5", "j6"), q), ("qdm", MOTORS[::-1], motor_from_joint(qd)[:, ::-1]),
              ("current", MOTORS, current)]
    path = write(tmp_path / "currents.csv", t, groups)
    recording = read_recording(path, robot=with_torque_constants())
    np.testing.assert_array_equal(recording.q, q)
    np.testing.assert_allclose(recording.qd, qd, rtol=0, atol=1e-9)
    np.testing.assert_allclose(recording.tau, joint_torques(taum), rtol=0, atol=1e-9)


def test_a_nan_in_a_motor_column_drops_its_row_counted_under_that_column(tmp_path, robot, motion):
    t, q, _, _, taum = motion
    qm = motor_from_joint(q)
    qm[10, 5] = np.nan
    recording = read_recording(write(tmp_path / "nan.csv", t, [("qm", MOTORS, qm), ("taum", MOTORS, taum)]),
                               robot=robot)
    assert recording.dropped["non-finite qm"].count == 1
    assert recording.dropped["non-finite qm"].first_time == t[10]
    assert recording.n_samples == t.size - 1


@pytest.mark.parametrize("groups, message", [
    ([("q", "joints"), ("qm", "motors"), ("taum", "motors")],
     r"positions given twice, as 'q.<joint>' and 'qm.<motor>' columns; give each quantity from one side only"),
    ([("qm", "motors"), ("tau", "joints"), ("taum", "motors")],
     r"torques given twice, as 'tau.<joint>' and 'taum.<motor>' columns"),
    ([("qm", "motors"), ("taum", "motors"), ("current", "motors")],
     r"torques given twice, as 'taum.<motor>' and 'current.<motor>' columns"),
    ([("qm", "motors"), ("qdm", "motors[:5]")],
     r"is missing column\(s\) \['qdm.m6'\]; reading velocities needs \['qdm.m1', 'qdm.m2', 'qdm.m3', 'qdm.m4', "
     r"'qdm.m5', 'qdm.m6'\] \(give 'qdm.<motor>' for every motor or for none\)$"),
    ([("qm", "motors[:5]"), ("taum", "motors")],
     r"is missing column\(s\) \['qm.m6'\]; reading positions needs \['qm.m1', 'qm.m2', 'qm.m3', 'qm.m4', 'qm.m5', "
     r"'qm.m6'\]$"),
    ([("qdm", "motors"), ("taum", "motors")],
     r"is missing column\(s\) \['q.j1', .*'q.j6'\]; reading positions needs \['q.j1', .*'q.j6'\] \(or, motor-side, "
     r"'qm.<motor>' for every motor of the transmission\)$"),
    ([("qm", "motors"), ("current", "motors")],
     r"columns 'current.<motor>' are motor currents \[A\], and the robot description's transmission has no "
     r"torque_constants \[N m/A\] to turn them into motor torques: add transmission.torque_constants \(one per "
     r"motor: \['m1', 'm2', 'm3', 'm4', 'm5', 'm6'\]\)"),
])
def test_mixed_partial_or_unconvertible_motor_columns_are_one_line_naming_them(
        tmp_path, robot, motion, groups, message):
    t, q, _, _, _ = motion
    names = {"joints": robot.joint_names, "motors": MOTORS, "motors[:5]": MOTORS[:5]}
    columns = [(field, names[which], q[:, :len(names[which])] * 0.1) for field, which in groups]
    path = write(tmp_path / "bad.csv", t, columns)
    with pytest.raises(DataError, match=rf"^{path}(:)? {message}") as refused:
        read_recording(path, robot=robot)
    assert "\n" not in str(refused.value)


def test_motor_columns_for_a_robot_without_a_transmission_say_to_add_one(tmp_path, motion, er3a_robot):
    t, q, _, _, taum = motion
    path = write(tmp_path / "motor.csv", t, [("qm", MOTORS, motor_from_joint(q)), ("taum", MOTORS, taum)])
    with pytest.raises(DataError, match=rf"^{path}: columns 'qm.<motor>', 'taum.<motor>' are motor-side, and the "
                                        r"robot description has no transmission to turn them into joint values: add "
                                        r"a transmission: section \(motors, motor_from_joint \[rad/rad\]; "
                                        r"docs/robot_description.md, Drive trains\) to the robot description, or "
                                        r"give joint-side columns"):
        read_recording(path, robot=er3a_robot)


def write_motor_bag(path, t, q, qd, taum, joint_states=None):
    """A bag of motor states on /motor_states (the recorder's bag topic), motors named in reverse order, and
    optionally joint states ``(q, tau)`` on /joint_states."""
    with BagWriter(path, joint_states_topic="/motor_states") as writer:
        for k, stamp in enumerate(T0_NS + np.round(t * 1e9).astype(np.int64)):
            writer.write_joint_state(int(stamp), MOTORS[::-1], motor_from_joint(q[k:k + 1])[0, ::-1],
                                     motor_from_joint(qd[k:k + 1])[0, ::-1], taum[k, ::-1])
            if joint_states is not None:
                message = writer.typestore.types[JOINT_STATE_TYPE](
                    header=writer.header(int(stamp)), name=["j1", "j2", "j3", "j4", "j5", "j6"],
                    position=joint_states[0][k].copy(), velocity=np.array([]), effort=joint_states[1][k].copy())
                writer.write("/joint_states", JOINT_STATE_TYPE, message, int(stamp))
    return path


def test_a_bags_motor_states_are_read_by_default_for_a_robot_with_a_transmission(tmp_path, robot, motion, er3a_robot):
    t, q, qd, _, taum = motion
    elsewhere = (q + 1.0, np.zeros_like(q))         # joint states of another motion: not the ones read
    bag = write_motor_bag(tmp_path / "bag", t, q, qd, taum, joint_states=elsewhere)
    recording = read_recording(bag, robot=robot)
    np.testing.assert_allclose(recording.time - T0_NS * 1e-9, t, rtol=0, atol=1e-6)
    np.testing.assert_allclose(recording.q, q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(recording.qd, qd, rtol=0, atol=1e-9)
    np.testing.assert_allclose(recording.tau, joint_torques(taum), rtol=0, atol=1e-9)
    joint_side = read_recording(bag, robot=robot, motor_states_topic="")
    np.testing.assert_array_equal(joint_side.q, elsewhere[0])

    er3a = er3a_robot
    np.testing.assert_array_equal(read_recording(bag, robot=er3a).q, elsewhere[0])   # no transmission
    with pytest.raises(DataError, match=rf"^bag {bag}, topic '/motor_states': its JointStates \(motor states\) are "
                                        r"motor-side, and the robot description has no transmission"):
        read_recording(bag, robot=er3a, motor_states_topic="/motor_states")


def test_motor_currents_on_a_current_topic_are_named_by_motor_with_a_transmission(tmp_path, motion):
    t, q, qd, _, taum = motion
    bag = tmp_path / "bag"
    with BagWriter(bag) as writer:
        for k, stamp in enumerate(T0_NS + np.round(t * 1e9).astype(np.int64)):
            writer.write_joint_state(int(stamp), ("j1", "j2", "j3", "j4", "j5", "j6"), q[k], qd[k])
            writer.write("/motor_currents", JOINT_STATE_TYPE, writer.typestore.types[JOINT_STATE_TYPE](
                header=writer.header(int(stamp)), name=list(MOTORS), position=np.array([]), velocity=np.array([]),
                effort=taum[k] / np.array(CONSTANTS)), int(stamp))
    recording = read_recording(bag, robot=with_torque_constants(), current_topic="/motor_currents")
    np.testing.assert_allclose(recording.tau, joint_torques(taum), rtol=0, atol=1e-9)
    with pytest.raises(DataError, match=r"topic '/motor_currents': its efforts are motor currents \[A\], and the "
                                        r"robot description's transmission has no torque_constants"):
        read_recording(bag, robot=load_robot(COUPLED), current_topic="/motor_currents")


def test_motor_angles_written_in_q_columns_are_refused_naming_the_joint(tmp_path, robot, motion):
    t, q, _, _, taum = motion
    path = write(tmp_path / "mislabelled.csv", t, [("q", robot.joint_names, motor_from_joint(q)),
                                                   ("tau", robot.joint_names, joint_torques(taum))])
    with pytest.raises(DataError, match=rf"^{path}: column q.j1 lies beyond the joint's position limits .*: it "
                                        r"looks like motor-side angles \(121 times the joint's angle, its gear ratio; "
                                        r"give them as qm.<motor> columns"):
        read_recording(path, robot=robot)
