"""The whole pipeline on a simulated arm: sim_robot, plus identification.launch.py (recorder,
identifier, experiment_runner) and feedforward.launch.py.

ros2 launch robot_dynid demo.launch.py output_directory:=/tmp/demo
ros2 launch robot_dynid demo.launch.py namespace:=robot2 output_directory:=/tmp/demo2   # a second arm beside it
ros2 launch robot_dynid demo.launch.py engine:=mujoco      # the arm simulated by MuJoCo (pip install mujoco)

Every node reads its config/<node>.yaml, then ``params_file`` (default config/demo.yaml: a short
plan of two cycles that the runner starts by itself (``autostart``), simulator noise and seed,
pooled identification), as ``robot-dynid demo`` does where launch is not available. The identified
model is served on compute_feedforward; try ``ros2 topic echo /identification_status`` while the
plan runs (about 160 s). Every node starts in ``namespace``: demos in two namespaces run side by
side, each with its own simulated arm, bag and model (test/ros/test_two_robots.py runs two).
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def sim_robot(context):
    share = get_package_share_directory("robot_dynid")
    params_file = LaunchConfiguration("params_file").perform(context)
    robot_file = LaunchConfiguration("robot_file").perform(context)
    engine = LaunchConfiguration("engine").perform(context)
    clock = LaunchConfiguration("use_sim_time").perform(context).strip().lower() == "true"
    return [Node(package="robot_dynid", executable="sim_robot", name="sim_robot", output="screen",
                 namespace=LaunchConfiguration("namespace"),
                 parameters=[os.path.join(share, "config", "sim_robot.yaml"),
                             *([params_file] if params_file else []), {"use_sim_time": clock},
                             *([{"robot_file": robot_file}] if robot_file else []),
                             *([{"engine": engine}] if engine else [])])]


def generate_launch_description():
    share = get_package_share_directory("robot_dynid")
    arguments = [
        DeclareLaunchArgument("namespace", default_value="", description="namespace of every node (e.g. robot1)"),
        DeclareLaunchArgument("use_sim_time", default_value="false",
                              description="true: every node's clock follows /clock"),
        DeclareLaunchArgument("params_file", default_value=os.path.join(share, "config", "demo.yaml"),
                              description="parameter file with sections for the demo's nodes, applied after "
                                          "config/<node>.yaml"),
        DeclareLaunchArgument("robot_file", default_value="",
                              description="robot description (YAML) of the simulated arm and the identification; "
                                          "empty: the ER3A"),
        DeclareLaunchArgument("engine", default_value="",
                              description="physics of the simulated arm: regressor or mujoco (docs/simulation.md); "
                                          "empty: the parameter files' (regressor)"),
        DeclareLaunchArgument("output_directory", default_value="",
                              description="directory of the recorded bag (timestamped); empty: the current directory"),
        DeclareLaunchArgument("model_file", default_value="",
                              description="model artifact (YAML) the identifier writes on every accepted model; "
                                          "empty: none"),
    ]
    # Scoped: the two included files declare arguments of the same name with other meanings
    # (model_file: written by the identifier, loaded by feedforward; command_topic).
    identification = GroupAction(scoped=True, actions=[IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(share, "launch", "identification.launch.py")),
        launch_arguments={name: LaunchConfiguration(name) for name in
                          ("namespace", "use_sim_time", "params_file", "robot_file", "output_directory",
                           "model_file")}.items(),
    )])
    feedforward = GroupAction(scoped=True, actions=[IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(share, "launch", "feedforward.launch.py")),
        launch_arguments={"model_file": "",   # follows the identifier's IdentifiedModel topic
                          **{name: LaunchConfiguration(name) for name in ("namespace", "use_sim_time")}}.items(),
    )])
    return LaunchDescription([*arguments, OpaqueFunction(function=sim_robot), identification, feedforward])
