"""Feed-forward torque server beside a ros2_control driver.

ros2 launch robot_dynid feedforward.launch.py model_file:=/path/model.yaml \
    reference_topic:=/desired_joint_states command_topic:=/effort_controller/commands
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue


def generate_launch_description():
    share = get_package_share_directory("robot_dynid")
    arguments = [
        DeclareLaunchArgument("model_file", default_value="",
                              description="model artifact (YAML) to load; empty: wait for model_topic"),
        DeclareLaunchArgument("model_topic", default_value="identified_model",
                              description="IdentifiedModel topic to follow; empty: off"),
        DeclareLaunchArgument("reference_topic", default_value="",
                              description="JointState reference (positions rad, velocities rad/s); empty: off"),
        DeclareLaunchArgument("command_topic", default_value="feedforward_effort",
                              description="Float64MultiArray output of feed-forward torques [N m]"),
        DeclareLaunchArgument("trajectory_topic", default_value="",
                              description="JointTrajectory reference in (rad, rad/s, rad/s^2); empty: off"),
        DeclareLaunchArgument("trajectory_out_topic", default_value="trajectory_with_effort",
                              description="the JointTrajectory with effort [N m] filled, for a "
                                          "joint_trajectory_controller"),
        DeclareLaunchArgument("position_margin", default_value="0.1",
                              description="[rad] positions beyond a joint's limits by more than this are "
                                          "refused; negative: no check"),
    ]
    feedforward = Node(
        package="robot_dynid",
        executable="feedforward",
        name="feedforward",
        output="screen",
        parameters=[
            os.path.join(share, "config", "feedforward.yaml"),
            # typed: an empty argument would otherwise be read as YAML null and rejected
            {name: ParameterValue(LaunchConfiguration(name), value_type=str)
             for name in ("model_file", "model_topic", "reference_topic", "command_topic",
                          "trajectory_topic", "trajectory_out_topic")},
            {"position_margin": ParameterValue(LaunchConfiguration("position_margin"), value_type=float)},
        ],
    )
    return LaunchDescription([*arguments, feedforward])
