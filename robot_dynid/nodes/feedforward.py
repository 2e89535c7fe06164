"""feedforward node: serves feed-forward torques from an identified model.

Parameters
----------
model_file (str): model artifact to load at start ('' waits for the model topic).
model_topic (str): IdentifiedModel topic to follow; a new model replaces the one in use ('' = off).
reference_topic (str): sensor_msgs/JointState with desired positions [rad] and velocities [rad/s]
    (accelerations taken as zero); '' = off.
command_topic (str): std_msgs/Float64MultiArray of torques [N m], in the order of ``joints``, as a
    ros2_control forward_command_controller (effort interface) takes them.
joints (str[]): the joints of the Float64MultiArray commands, in the order of the controller's own
    ``joints`` parameter (a subset of the model's joints); unset: the model's joints in its order.
    A model that lacks one of them is refused, naming the joint.
joint_states_qos (str): QoS of the reference subscription: reliable (default), best_effort, sensor_data.
trajectory_topic (str): trajectory_msgs/JointTrajectory in; '' = off.
trajectory_out_topic (str): the same trajectory with every point's effort [N m] filled from the model,
    for a joint_trajectory_controller with an effort interface.
position_margin (float): [rad], default 0.1: positions beyond a joint's position limits by more
    than this are refused, naming the point and joint (URDF continuous joints are not checked);
    a negative value turns the check off.

Service ``compute_feedforward`` (robot_dynid/srv/ComputeFeedforward): joint names and flat
arrays of N points in, torques [N m] of the N points out, in the request's layout. All three
paths convert the message to arrays, call :func:`robot_dynid.model.feedforward.compute_feedforward`
and convert back; what it refuses (non-finite values, positions beyond the limits plus
``position_margin``, a non-finite torque) gets ``success: false`` on the service, and a warning
naming the point and joint on the topics, which then publish nothing. An ``IdentifiedModel`` whose
artifact does not load (malformed, non-finite) is logged, naming the field, and ignored: the
model in use and its version stay.
"""
from __future__ import annotations

import array
import gc

import numpy as np
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from robot_dynid.errors import DynIdError
from robot_dynid.joint_names import index_in, match_joints
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.feedforward import (DEFAULT_POSITION_MARGIN, FIELDS, check_position_margin,
                                           compute_feedforward, join_points)
from robot_dynid.msg import IdentifiedModel
from robot_dynid.nodes.node_runtime import declare, joint_states_qos, spin_node
from robot_dynid.srv import ComputeFeedforward

MODEL_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                       reliability=ReliabilityPolicy.RELIABLE)


class FeedforwardNode(Node):
    def __init__(self, **node_options):
        """``node_options``: rclpy Node keyword arguments, e.g. ``context`` (one process, several nodes)."""
        super().__init__("feedforward", **node_options)
        model_file = declare(self, "model_file", "", "model artifact (YAML) to load at start; '' waits for model_topic")
        model_topic = declare(self, "model_topic", "identified_model", "IdentifiedModel topic to follow; '' = off")
        reference_topic = declare(self, "reference_topic", "",
                                  "JointState reference (positions rad, velocities rad/s); '' = off")
        command_topic = declare(self, "command_topic", "feedforward_effort",
                                "Float64MultiArray output of torques in the order of joints", "N m")
        trajectory_topic = declare(self, "trajectory_topic", "", "JointTrajectory reference in; '' = off")
        trajectory_out_topic = declare(self, "trajectory_out_topic", "trajectory_with_effort",
                                       "JointTrajectory out with effort filled", "N m")
        self.position_margin = check_position_margin(declare(
            self, "position_margin", DEFAULT_POSITION_MARGIN,
            "positions beyond a joint's limits by more than this are refused; negative: no check", "rad"))
        self.output_joints = declare(self, "joints", Parameter.Type.STRING_ARRAY,
                                     "joints of the Float64MultiArray commands, in the controller's order; "
                                     "unset: the model's joints") or None
        reference_qos = joint_states_qos(self, 10)
        self.model = None
        self.output_index = None
        self.model_version = 0
        if model_file:
            self.use_model(DynamicModel.load(model_file), f"file {model_file}")
        if model_topic:
            self.create_subscription(IdentifiedModel, model_topic, self.on_model, MODEL_QOS)
        if trajectory_topic:
            self.trajectory_publisher = self.create_publisher(JointTrajectory, trajectory_out_topic, 10)
            self.create_subscription(JointTrajectory, trajectory_topic, self.on_trajectory, 10)
        self.command_publisher = None
        if reference_topic:
            self.command_publisher = self.create_publisher(Float64MultiArray, command_topic, 10)
            self.create_subscription(JointState, reference_topic, self.on_reference, reference_qos)
        self.create_service(ComputeFeedforward, "compute_feedforward", self.on_compute)
        # A JointTrajectory of many points makes thousands of Python objects (one per point and
        # its Duration), so the garbage collector's full collections come often, and each
        # traverses every object of the process (BENCHMARKS.md, ComputeFeedforward). What exists
        # now lives as long as the process; leave it out of future collections.
        gc.collect()
        gc.freeze()
        self.get_logger().info(
            f"serving compute_feedforward; model topic {model_topic or 'off'} (transient local, depth 1); "
            f"reference {reference_topic or 'off'} -> {command_topic if reference_topic else 'off'}; "
            f"trajectory {trajectory_topic or 'off'} -> {trajectory_out_topic if trajectory_topic else 'off'}")

    def use_model(self, model, origin, version=None):
        """Serve ``model`` from now on; JointMatchError (the model in use stays) when it lacks one of ``joints``."""
        if self.output_joints is not None:
            self.output_index = index_in(model.joint_names, self.output_joints, "parameter joints",
                                         f"the model from {origin}")
        self.model = model
        self.model_version = version if version is not None else self.model_version + 1
        self.get_logger().info(f"using model version {self.model_version} from {origin} "
                               f"(joints {list(model.joint_names)})")

    def torques(self, joint_names, *fields):
        """:func:`compute_feedforward` of the model in use with the node's position margin."""
        return compute_feedforward(self.model, joint_names, *fields, position_margin=self.position_margin)

    def on_model(self, msg):
        try:
            model = DynamicModel.from_yaml(msg.artifact_yaml, source="IdentifiedModel.artifact_yaml")
            self.use_model(model, f"topic (robot {msg.robot_name})", version=msg.version)
        except DynIdError as error:
            self.get_logger().error(f"ignoring IdentifiedModel version {msg.version}: {error}")

    def on_compute(self, request, response):
        response.model_version = self.model_version
        if self.model is None:
            response.success, response.message = False, "no model loaded yet"
            return response
        try:
            tau = self.torques(request.joint_names, *(
                np.frombuffer(getattr(request, field), dtype=np.float64) for field in FIELDS))
        except DynIdError as error:
            response.success, response.message = False, str(error)
            return response
        response.efforts = float64_array(tau)
        response.success, response.message = True, ""
        return response

    def on_trajectory(self, msg):
        if self.model is None:
            self.get_logger().warning("trajectory received before any model; not forwarded", throttle_duration_sec=5.0)
            return
        try:
            self.fill_efforts(msg.joint_names, msg.points)
        except DynIdError as error:
            self.get_logger().warning(f"trajectory on {list(msg.joint_names)}: {error}", throttle_duration_sec=5.0)
            return
        self.trajectory_publisher.publish(msg)

    def fill_efforts(self, joint_names, points):
        """Set each JointTrajectoryPoint's effort [N m] from the model (raises DynIdError on bad points)."""
        fields = [join_points(field, [getattr(p, field) for p in points], len(joint_names)) for field in FIELDS]
        for point, effort in zip(points, self.torques(joint_names, *fields)):
            point.effort = float64_array(effort)

    def on_reference(self, msg):
        if self.model is None:
            return
        try:
            tau = self.torques(self.model.joint_names, *_by_name(msg, self.model.joint_names))
        except DynIdError as error:
            self.get_logger().warning(f"reference on {list(msg.name)}: {error}", throttle_duration_sec=5.0)
            return
        if self.output_index is not None:
            tau = tau[..., self.output_index]
        self.command_publisher.publish(Float64MultiArray(data=float64_array(tau)))


def _by_name(msg, joints):
    """A JointState's position [rad] and velocity [rad/s] in the order of ``joints`` (unknown extra
    joints are ignored; a field whose size is not one per name is left as it is, for
    :func:`compute_feedforward` to report)."""
    names = list(msg.name)
    index = match_joints(joints, names, "reference JointState", "the model")
    fields = (np.frombuffer(values, dtype=np.float64) for values in (msg.position, msg.velocity))
    return [values[index] if values.size == len(names) else values for values in fields]


def float64_array(values) -> array.array:
    """``values`` (any shape) flattened in row-major order as the ``array.array('d')`` that rclpy
    takes for a float64[] field as it is (one copy; a list is checked element by element)."""
    return array.array("d", np.ascontiguousarray(values, dtype=np.float64).tobytes())


def main(args=None):
    return spin_node(FeedforwardNode, args, low_latency=True)
