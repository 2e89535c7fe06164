"""Identification beside a robot driver: recorder, identifier and experiment_runner.

The driver (or sim_robot, see demo.launch.py) provides sensor_msgs/JointState and a
joint_trajectory_controller; the runner plays the protocol plan on it, the recorder writes the bag
with the stage markers, the identifier publishes IdentifiedModel as stages end.

ros2 launch robot_dynid identification.launch.py \
    joint_states_topic:=/joint_states \
    command_topic:=/joint_trajectory_controller/joint_trajectory \
    robot_file:=/path/robot.yaml plan_file:=/path/plan.yaml output_directory:=/data/bags

The runner moves nothing until told to, once the arm is where it should be:

ros2 service call /experiment_runner/start std_srvs/srv/Trigger

(the response says what it will do, e.g. approach the plan's start pose first, or why it refuses;
``ros2 service call /experiment_runner/abort std_srvs/srv/Trigger`` stops it). ``autostart``,
``start_tolerance`` and ``approach_speed_fraction`` are set in config/experiment_runner.yaml or
``params_file``.

Parameters come from the installed config/<node>.yaml, then from ``params_file`` (a file with
sections for any of the nodes, e.g. config/demo.yaml), then from the arguments given a value.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

# Each argument is the parameter of that name of the nodes given it below; left empty, the nodes
# keep the value of config/<node>.yaml and params_file (the defaults are configured there only).
ARGUMENTS = [
    DeclareLaunchArgument("joint_states_topic", default_value="",
                          description="the driver's sensor_msgs/JointState (positions rad, velocities rad/s, "
                                      "efforts N m); empty: as configured (joint_states)"),
    DeclareLaunchArgument("command_topic", default_value="",
                          description="trajectory_msgs/JointTrajectory input of the driver's "
                                      "joint_trajectory_controller, e.g. /joint_trajectory_controller/joint_trajectory; "
                                      "empty: as configured (joint_trajectory)"),
    DeclareLaunchArgument("effort_topic", default_value="",
                          description="second JointState whose effort holds the joint torques [N m], recorded beside "
                                      "the joint states; empty: as configured (off)"),
    DeclareLaunchArgument("current_topic", default_value="",
                          description="JointState whose effort holds motor currents [A], recorded beside the joint "
                                      "states; empty: as configured (off)"),
    DeclareLaunchArgument("temperature_topic", default_value="",
                          description="JointState whose effort holds joint temperatures [deg C], recorded; "
                                      "empty: as configured (off)"),
    DeclareLaunchArgument("hydraulic_topic", default_value="",
                          description="robot_dynid/HydraulicCylinderState, recorded; empty: as configured (off)"),
    DeclareLaunchArgument("stage_topic", default_value="",
                          description="robot_dynid/ExperimentStage markers of the runner; empty: as configured "
                                      "(experiment_stage)"),
    DeclareLaunchArgument("model_topic", default_value="",
                          description="robot_dynid/IdentifiedModel output (transient local); empty: as configured "
                                      "(identified_model)"),
    DeclareLaunchArgument("status_topic", default_value="",
                          description="robot_dynid/IdentificationStatus output; empty: as configured "
                                      "(identification_status)"),
    DeclareLaunchArgument("robot_file", default_value="",
                          description="robot description (YAML) of the identifier and the runner; empty: as "
                                      "configured (the ER3A)"),
    DeclareLaunchArgument("plan_file", default_value="",
                          description="protocol plan (robot-dynid protocol --out); empty: as configured (the runner "
                                      "builds one from its parameters)"),
    DeclareLaunchArgument("model_file", default_value="",
                          description="model artifact (YAML) the identifier writes on every accepted model; "
                                      "empty: as configured (none)"),
    DeclareLaunchArgument("bag_path", default_value="",
                          description="bag directory the recorder creates; empty: as configured (timestamped "
                                      "under output_directory)"),
    DeclareLaunchArgument("output_directory", default_value="",
                          description="directory of the recorder's timestamped bags; empty: as configured "
                                      "(the current directory)"),
    DeclareLaunchArgument("storage", default_value="",
                          description="bag storage plugin, mcap or sqlite3; empty: as configured (mcap)"),
]


def launch_setup(context):
    share = get_package_share_directory("robot_dynid")
    params_file = LaunchConfiguration("params_file").perform(context)

    def parameters(config_file, *arguments):
        """config/<node>.yaml, params_file, then the arguments given a value (performed to plain
        strings here, so a number-like value stays a string parameter)."""
        given = {name: LaunchConfiguration(name).perform(context) for name in arguments}
        overrides = {name: value for name, value in given.items() if value}
        return [os.path.join(share, "config", config_file), *([params_file] if params_file else []),
                *([overrides] if overrides else [])]

    return [
        Node(package="robot_dynid", executable="recorder", name="recorder", output="screen",
             parameters=parameters("recorder.yaml", "joint_states_topic", "effort_topic", "current_topic",
                                   "temperature_topic", "hydraulic_topic", "stage_topic", "bag_path",
                                   "output_directory", "storage")),
        Node(package="robot_dynid", executable="identifier", name="identifier", output="screen",
             parameters=parameters("identifier.yaml", "joint_states_topic", "stage_topic", "model_topic",
                                   "status_topic", "robot_file", "model_file")),
        Node(package="robot_dynid", executable="experiment_runner", name="experiment_runner", output="screen",
             parameters=parameters("experiment_runner.yaml", "joint_states_topic", "command_topic", "stage_topic",
                                   "robot_file", "plan_file")),
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("params_file", default_value="",
                              description="extra parameter file with sections for any of recorder, identifier, "
                                          "experiment_runner (applied after config/<node>.yaml); empty: none"),
        *ARGUMENTS,
        OpaqueFunction(function=launch_setup),
    ])
