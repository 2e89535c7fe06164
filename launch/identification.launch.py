"""Identification beside a robot driver: recorder, identifier and experiment_runner (and
hydraulic_identifier for hydraulic arms).

The driver (or sim_robot, see demo.launch.py) provides sensor_msgs/JointState and a
joint_trajectory_controller; the runner plays the protocol plan on it, the recorder writes the bag
with the stage markers, the identifier publishes IdentifiedModel as stages end.

ros2 launch robot_dynid identification.launch.py namespace:=robot1 \
    joint_states_topic:=/robot1/joint_states \
    command_topic:=/robot1/joint_trajectory_controller/joint_trajectory \
    robot_file:=/path/robot.yaml plan_file:=/path/plan.yaml output_directory:=/data/bags

Every node is started in ``namespace`` and takes ``use_sim_time``; its topics have relative names
(joint_states, joint_trajectory, experiment_stage, identified_model, identification_status), which
the ``*_topic`` arguments remap (a relative target stays in the namespace). The optional inputs of
the recorder (motor_states_topic, effort_topic, current_topic, temperature_topic, hydraulic_topic) are
off unless given.
Given ``hydraulic_topic`` (robot_dynid/HydraulicCylinderState), the hydraulic_identifier node also
starts and identifies the cylinders online (config/hydraulic_identifier.yaml: the curtain-wall arm's
six cylinders; ``cylinders_file``, ``results_file``).

The runner moves nothing until told to, once the arm is where it should be:

ros2 service call /robot1/experiment_runner/start std_srvs/srv/Trigger

(the response says what it will do, e.g. approach the plan's start pose first, or why it refuses;
``ros2 service call /robot1/experiment_runner/abort std_srvs/srv/Trigger`` stops it). ``autostart``,
``start_tolerance`` and ``approach_speed_fraction`` are set in config/experiment_runner.yaml or
``params_file``.

Parameters come from the installed config/<node>.yaml, then from ``params_file`` (a file with
sections for any of the nodes, keyed ``/**/<node>`` to apply in any namespace, e.g.
config/demo.yaml), then from the arguments given a value.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

# Launch argument -> the relative topic name the nodes use, which the argument remaps.
TOPICS = {
    "joint_states_topic": "joint_states",
    "command_topic": "joint_trajectory",
    "stage_topic": "experiment_stage",
    "model_topic": "identified_model",
    "status_topic": "identification_status",
    "hydraulic_estimates_topic": "hydraulic_estimates",
    "hydraulic_status_topic": "hydraulic_identification_status",
}
# The recorder's optional inputs, off unless given: its parameter is set to the relative name, remapped to the argument.
OPTIONAL_TOPICS = {
    "motor_states_topic": "motor_states",
    "effort_topic": "effort_states",
    "current_topic": "current_states",
    "temperature_topic": "temperature_states",
    "hydraulic_topic": "hydraulic_cylinder_states",
}
# Nodes started only when the optional input argument is given; their topic parameter defaults to its relative name.
CONDITIONAL_NODES = {"hydraulic_identifier": "hydraulic_topic"}
# Each argument here is the parameter of that name of the nodes given it below; left empty, the
# nodes keep the value of config/<node>.yaml and params_file (the defaults are configured there only).
ARGUMENTS = [
    DeclareLaunchArgument("namespace", default_value="", description="namespace of every node (e.g. robot1)"),
    DeclareLaunchArgument("use_sim_time", default_value="false",
                          description="true: every node's clock follows /clock (simulation, bag replay)"),
    DeclareLaunchArgument("joint_states_topic", default_value="joint_states",
                          description="the driver's sensor_msgs/JointState (positions rad, velocities rad/s, "
                                      "efforts N m); relative names are in the namespace"),
    DeclareLaunchArgument("command_topic", default_value="joint_trajectory",
                          description="trajectory_msgs/JointTrajectory input of the driver's "
                                      "joint_trajectory_controller, e.g. joint_trajectory_controller/joint_trajectory"),
    DeclareLaunchArgument("motor_states_topic", default_value="",
                          description="JointState named by the robot's motors (positions rad, velocities rad/s, "
                                      "efforts N m, at the motor), recorded beside the joint states; empty: off"),
    DeclareLaunchArgument("effort_topic", default_value="",
                          description="second JointState whose effort holds the joint torques [N m], recorded beside "
                                      "the joint states; empty: off"),
    DeclareLaunchArgument("current_topic", default_value="",
                          description="JointState whose effort holds motor currents [A], recorded beside the joint "
                                      "states; empty: off"),
    DeclareLaunchArgument("temperature_topic", default_value="",
                          description="JointState whose effort holds joint temperatures [deg C], recorded; "
                                      "empty: off"),
    DeclareLaunchArgument("hydraulic_topic", default_value="",
                          description="robot_dynid/HydraulicCylinderState (SI), recorded and identified online by "
                                      "hydraulic_identifier; empty: off (and no hydraulic_identifier)"),
    DeclareLaunchArgument("hydraulic_estimates_topic", default_value="hydraulic_estimates",
                          description="robot_dynid/HydraulicCylinderEstimates output of hydraulic_identifier"),
    DeclareLaunchArgument("hydraulic_status_topic", default_value="hydraulic_identification_status",
                          description="robot_dynid/IdentificationStatus output of hydraulic_identifier"),
    DeclareLaunchArgument("cylinders_file", default_value="",
                          description="cylinder configuration (YAML, SI) of hydraulic_identifier; empty: as "
                                      "configured (the curtain-wall arm's six cylinders)"),
    DeclareLaunchArgument("results_file", default_value="",
                          description="cylinder results file hydraulic_identifier writes on ~/save and at "
                                      "shutdown; empty: as configured (timestamped in the current directory)"),
    DeclareLaunchArgument("stage_topic", default_value="experiment_stage",
                          description="robot_dynid/ExperimentStage markers of the runner"),
    DeclareLaunchArgument("model_topic", default_value="identified_model",
                          description="robot_dynid/IdentifiedModel output (transient local)"),
    DeclareLaunchArgument("status_topic", default_value="identification_status",
                          description="robot_dynid/IdentificationStatus output"),
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


def use_sim_time(context):
    value = LaunchConfiguration("use_sim_time").perform(context).strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"use_sim_time must be true or false, got {value!r}")
    return value == "true"


def launch_setup(context):
    share = get_package_share_directory("robot_dynid")
    params_file = LaunchConfiguration("params_file").perform(context)
    optional = {name: LaunchConfiguration(name).perform(context) for name in OPTIONAL_TOPICS}
    remappings = [(topic, LaunchConfiguration(name).perform(context)) for name, topic in TOPICS.items()]
    remappings += [(OPTIONAL_TOPICS[name], value) for name, value in optional.items() if value]
    clock = {"use_sim_time": use_sim_time(context)}

    def parameters(config_file, *arguments, topics=()):
        """config/<node>.yaml, params_file, use_sim_time, the optional ``topics`` given (their relative
        names), then the arguments given a value (performed to plain strings here, so a number-like
        value stays a string parameter)."""
        given = {name: LaunchConfiguration(name).perform(context) for name in arguments}
        overrides = {name: value for name, value in given.items() if value}
        overrides.update({name: OPTIONAL_TOPICS[name] for name in topics if optional[name]})
        return [os.path.join(share, "config", config_file), *([params_file] if params_file else []), clock,
                *([overrides] if overrides else [])]

    common = {"output": "screen", "namespace": LaunchConfiguration("namespace"),
              "remappings": remappings}
    return [
        Node(package="robot_dynid", executable="recorder", name="recorder", **common,
             parameters=parameters("recorder.yaml", "bag_path", "output_directory", "storage",
                                   topics=("motor_states_topic", "effort_topic", "current_topic", "temperature_topic",
                                           "hydraulic_topic"))),
        Node(package="robot_dynid", executable="identifier", name="identifier", **common,
             parameters=parameters("identifier.yaml", "robot_file", "model_file")),
        Node(package="robot_dynid", executable="experiment_runner", name="experiment_runner", **common,
             parameters=parameters("experiment_runner.yaml", "robot_file", "plan_file")),
    ] + ([
        Node(package="robot_dynid", executable="hydraulic_identifier", name="hydraulic_identifier", **common,
             parameters=parameters("hydraulic_identifier.yaml", "cylinders_file", "results_file")),
    ] if optional[CONDITIONAL_NODES["hydraulic_identifier"]] else [])


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("params_file", default_value="",
                              description="extra parameter file with sections for any of recorder, identifier, "
                                          "experiment_runner, hydraulic_identifier (applied after "
                                          "config/<node>.yaml); empty: none"),
        *ARGUMENTS,
        OpaqueFunction(function=launch_setup),
    ])
