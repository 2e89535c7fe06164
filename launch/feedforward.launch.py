"""Feed-forward torque server beside a ros2_control driver.

ros2 launch robot_dynid feedforward.launch.py namespace:=robot1 model_file:=/path/model.yaml \
    reference_topic:=desired_joint_states command_topic:=effort_controller/commands

The node starts in ``namespace`` and takes ``use_sim_time``; its topics have relative names
(identified_model, feedforward_effort, trajectory_with_effort, feedforward_status), which the
``*_topic`` arguments remap; its inputs reference_topic, trajectory_topic and joint_temperatures_topic are off
unless given. Parameters come from config/feedforward.yaml, then ``params_file``, then the arguments
given a value (``model_file``, ``robot_file``, ``position_margin`` left empty keep the configured
value; the other margins, ``reference_timeout``, ``max_points`` and ``service_queue_depth`` go in
``params_file``). The order of the Float64MultiArray commands is the ``joints`` parameter's (set
it in ``params_file`` to the controller's ``joints``). Feed-forward torque is open loop: add it
to a feedback controller or use it for gravity compensation, never alone to move an arm.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

# Launch argument -> the relative topic name the node uses, which the argument remaps.
TOPICS = {
    "model_topic": "identified_model",
    "command_topic": "feedforward_effort",
    "trajectory_out_topic": "trajectory_with_effort",
    "status_topic": "feedforward_status",
}
# Inputs that are off unless given: the node's parameter is set to the relative name, remapped to the argument.
OPTIONAL_TOPICS = {
    "reference_topic": "reference_joint_states",
    "trajectory_topic": "reference_trajectory",
    "joint_temperatures_topic": "joint_temperatures",
}


def launch_setup(context):
    share = get_package_share_directory("robot_dynid")
    value = {name: LaunchConfiguration(name).perform(context) for name in (
        "model_file", "robot_file", "params_file", "use_sim_time", "position_margin", *TOPICS, *OPTIONAL_TOPICS)}
    if value["use_sim_time"].strip().lower() not in ("true", "false"):
        raise ValueError(f"use_sim_time must be true or false, got {value['use_sim_time']!r}")
    remappings = [(topic, value[name]) for name, topic in TOPICS.items() if value[name]]
    remappings += [(topic, value[name]) for name, topic in OPTIONAL_TOPICS.items() if value[name]]
    # only what is given overrides config/feedforward.yaml and params_file
    overrides = {"use_sim_time": value["use_sim_time"].strip().lower() == "true",
                 **{name: topic for name, topic in OPTIONAL_TOPICS.items() if value[name]}}
    for name in ("model_file", "robot_file"):
        if value[name]:
            overrides[name] = value[name]
    if value["position_margin"]:
        overrides["position_margin"] = float(value["position_margin"])
    if not value["model_topic"]:
        overrides["model_topic"] = ""     # given empty: off
    return [Node(package="robot_dynid", executable="feedforward", name="feedforward", output="screen",
                 namespace=LaunchConfiguration("namespace"), remappings=remappings,
                 parameters=[os.path.join(share, "config", "feedforward.yaml"),
                             *([value["params_file"]] if value["params_file"] else []), overrides])]


def generate_launch_description():
    arguments = [
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the node (e.g. robot1)"),
        DeclareLaunchArgument("use_sim_time", default_value="false",
                              description="true: the node's clock follows /clock (simulation, bag replay)"),
        DeclareLaunchArgument("params_file", default_value="",
                              description="extra parameter file with a /**/feedforward section (e.g. joints), "
                                          "applied after config/feedforward.yaml; empty: none"),
        DeclareLaunchArgument("model_file", default_value="",
                              description="model artifact (YAML) to load; empty: as configured (none: wait for "
                                          "model_topic)"),
        DeclareLaunchArgument("robot_file", default_value="",
                              description="robot description (YAML) every model must be of (name, joints, "
                                          "kinematics) and whose limits apply; empty: as configured (none: the "
                                          "robot of the first model served)"),
        DeclareLaunchArgument("model_topic", default_value="identified_model",
                              description="IdentifiedModel topic to follow (remaps identified_model); given empty: "
                                          "off"),
        DeclareLaunchArgument("reference_topic", default_value="",
                              description="JointState reference (positions rad, velocities rad/s); empty: off"),
        DeclareLaunchArgument("command_topic", default_value="feedforward_effort",
                              description="Float64MultiArray output of feed-forward torques [N m] in the order of "
                                          "the joints parameter, for a forward_command_controller"),
        DeclareLaunchArgument("trajectory_topic", default_value="",
                              description="JointTrajectory reference in (rad, rad/s, rad/s^2); empty: off"),
        DeclareLaunchArgument("trajectory_out_topic", default_value="trajectory_with_effort",
                              description="the JointTrajectory with effort [N m] filled, for a "
                                          "joint_trajectory_controller with an effort command interface"),
        DeclareLaunchArgument("status_topic", default_value="feedforward_status",
                              description="FeedforwardStatus output (model in use, state of the reference path, "
                                          "refusals)"),
        DeclareLaunchArgument("joint_temperatures_topic", default_value="",
                              description="robot_dynid/JointTemperatures [deg C] for friction that drifts with "
                                          "temperature; empty: off (temperature_topic_prefix goes in params_file)"),
        DeclareLaunchArgument("position_margin", default_value="",
                              description="[rad] positions beyond a joint's limits by more than this are "
                                          "refused; negative: no check; empty: as configured (0.1)"),
    ]
    return LaunchDescription([*arguments, OpaqueFunction(function=launch_setup)])
