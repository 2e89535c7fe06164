"""The selector of named messages (robot_dynid.recordings.joint_states): every skip reason written out by hand."""
import math

import numpy as np
import pytest

from robot_dynid.recordings.joint_states import JointStateSelector, NameSelector

JOINTS = ("j1", "j2", "j3")


@pytest.mark.parametrize("message, reason", [
    (dict(names=[], position=[]), "empty joint names"),
    (dict(names=["j1", "j2", "j1", "j3"], position=[0.0] * 4), "duplicate joint names"),
    (dict(names=["j1", "gripper"], position=[0.0, 0.0]), "lacks joint(s) ['j2', 'j3']"),
    (dict(names=["j1", "j2", "j3"], position=[]), "empty position"),
    (dict(names=["j1", "j2", "j3"], position=[0.0, 0.0]), "array lengths differ from the names"),
    (dict(names=["j1", "j2", "j3"], position=[0.0] * 3, velocity=[0.0]), "array lengths differ from the names"),
    (dict(names=["j1", "j2", "j3"], position=[0.0, math.nan, 0.0]), "non-finite values"),
    (dict(names=["j1", "j2", "j3"], position=[0.0] * 3, effort=[0.0, 0.0, math.inf]), "non-finite values"),
])
def test_a_joint_state_that_cannot_be_used_says_why(message, reason):
    assert JointStateSelector(JOINTS).select(**message) == reason


def test_values_come_in_the_needed_order_extra_joints_ignored_empty_fields_none():
    selector = JointStateSelector(JOINTS)
    values = selector.select(["gripper", "j3", "j1", "j2"], position=[9.0, 3.0, 1.0, 2.0], velocity=[],
                             effort=[np.nan, 30.0, 10.0, 20.0])
    np.testing.assert_array_equal(values.position, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(values.effort, [10.0, 20.0, 30.0])    # the gripper's NaN is not needed
    assert values.velocity is None


def test_a_topic_read_for_efforts_requires_them_and_joints_default_to_the_first_usable_message():
    selector = JointStateSelector(required="effort")
    assert selector.joint_names is None
    assert selector.select(["b", "a"], position=[1.0, 2.0]) == "empty effort"
    values = selector.select(["b", "a"], effort=[1.0, 2.0])
    assert selector.joint_names == ("b", "a")
    np.testing.assert_array_equal(values.effort, [1.0, 2.0])
    assert selector.select(["a"], effort=[1.0]) == "lacks joint(s) ['b']"


@pytest.mark.parametrize("names, fields, reason", [
    ([], {}, "empty cylinder names"),
    (["boom", "boom"], {"position": [0.0, 0.0]}, "duplicate cylinder names"),
    (["boom", "bucket", "arm"], {"position": [0.0] * 3}, "unknown cylinder(s) ['bucket', 'arm']"),
    (["boom"], {"position": []}, "empty position"),
    (["boom"], {"position": [0.0], "load": [1.0, 2.0]}, "array lengths differ from the names"),
    (["boom"], {"position": [0.0], "load": [-math.inf]}, "non-finite values"),
])
def test_a_subset_selector_names_unknown_names_by_kind(names, fields, reason):
    selector = NameSelector(("boom", "stick"), "cylinder", ("position",), subset=True)
    assert selector.select(names, **fields) == reason


def test_a_subset_selector_keeps_the_message_order():
    selector = NameSelector(("boom", "stick"), "cylinder", ("position",), subset=True)
    selected = selector.select(["stick", "boom"], position=[2.0, 1.0], load=[])
    np.testing.assert_array_equal(selected["position"], [2.0, 1.0])
    assert selected["load"] is None
