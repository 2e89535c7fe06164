"""robot_dynid.joint_names, the one rule for matching names: every message written out by hand."""
import re

import pytest

from robot_dynid.errors import DataError, TrajectoryError
from robot_dynid.joint_names import NameMatchError, index_in, match_joints, repeated_names, unique_names

ARM = ("shoulder", "elbow", "wrist")


def test_repeated_names_are_each_named_once_sorted():
    assert repeated_names(["b", "a", "b", "c", "a", "b"]) == ["a", "b"]
    assert repeated_names(["a", "b"]) == []
    assert repeated_names([]) == []


def test_match_joints_gives_the_column_of_each_known_name_in_its_order():
    assert match_joints(ARM, ["wrist", "gripper", "shoulder", "elbow"], "JointState") == [2, 3, 0]
    assert match_joints(ARM, ARM, "JointState") == [0, 1, 2]


def test_index_in_gives_the_owners_index_of_each_name():
    assert index_in(ARM, ["wrist", "shoulder"], "joint_names") == [2, 0]
    assert index_in(ARM, [], "joint_names") == []


@pytest.mark.parametrize("call, message, fields", [
    (lambda: match_joints(ARM, ["wrist", "elbow"], "JointState"),
     "JointState is missing joint(s) ['shoulder']; the robot needs ['shoulder', 'elbow', 'wrist']",
     ([], [], ["shoulder"])),
    (lambda: match_joints(ARM, ["wrist", "elbow", "wrist", "elbow"], "JointState", "the model"),
     "JointState lists joint(s) ['elbow', 'wrist'] more than once; the model has ['shoulder', 'elbow', 'wrist']",
     (["elbow", "wrist"], [], [])),
    (lambda: match_joints(ARM, ["shoulder", "elbow", "wrist", "tool"], "request", "the model", extra=False),
     "request lists unknown joint(s) ['tool']; the model has ['shoulder', 'elbow', 'wrist']",
     ([], ["tool"], [])),
    (lambda: index_in(ARM, ["elbow", "knee", "hip"], "joint_names", "the arm"),
     "joint_names lists unknown joint(s) ['knee', 'hip']; the arm has ['shoulder', 'elbow', 'wrist']",
     ([], ["knee", "hip"], [])),
    (lambda: index_in(ARM, ["elbow", "elbow"], "joint_names", "the arm"),
     "joint_names lists joint(s) ['elbow'] more than once; the arm has ['shoulder', 'elbow', 'wrist']",
     (["elbow"], [], [])),
    (lambda: match_joints(["time", "q.a"], ["time", "tau.a"], "run.csv", "a recording", kind="column"),
     "run.csv is missing column(s) ['q.a']; a recording needs ['time', 'q.a']",
     ([], [], ["q.a"])),
    (lambda: match_joints(["boom"], ["boom", "stick"], "bench.csv", "the configuration", extra=False,
                          kind="cylinder"),
     "bench.csv lists unknown cylinder(s) ['stick']; the configuration has ['boom']",
     ([], ["stick"], [])),
    (lambda: unique_names(["m1", "m2", "m1"], "transmission.motors", "motor"),
     "transmission.motors lists motor(s) ['m1'] more than once",
     (["m1"], [], [])),
])
def test_every_mismatch_names_source_kind_names_and_owner(call, message, fields):
    with pytest.raises(NameMatchError, match=f"^{re.escape(message)}$") as raised:
        call()
    assert isinstance(raised.value, DataError)
    assert (raised.value.repeated, raised.value.unknown, raised.value.missing) == fields


def test_a_repeat_is_reported_before_an_unknown_name_and_an_unknown_before_a_missing_one():
    with pytest.raises(NameMatchError, match=re.escape("lists joint(s) ['tool'] more than once")):
        match_joints(ARM, ["tool", "tool"], "request", extra=False)
    with pytest.raises(NameMatchError, match=re.escape("request lists unknown joint(s) ['tool']")):
        match_joints(ARM, ["tool"], "request", extra=False)


def test_error_chooses_the_class_raised_and_keeps_the_wording():
    with pytest.raises(TrajectoryError, match=re.escape("parts lists joint(s) ['a'] more than once")) as raised:
        unique_names(["a", "b", "a"], "parts", error=TrajectoryError)
    assert raised.value.repeated == ["a"]
    message = "joint lists unknown joint(s) ['x']; the trajectory has ['a']"
    with pytest.raises(TrajectoryError, match=re.escape(message)):
        index_in(["a"], ["x"], "joint", "the trajectory", error=TrajectoryError)
    assert unique_names(["a", "b"], "parts") == ("a", "b")
