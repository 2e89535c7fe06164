"""What the served-model and feed-forward-server tests serve: the UR5 (config/robots/ur5_urdf.yaml, ur5.urdf)
with plausible link parameters, and a clock the test sets."""
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file

UR5_FILE = find_package_file("config", "robots", "ur5_urdf.yaml")
UR5_URDF = find_package_file("config", "robots", "ur5.urdf")


class Clock:
    """A clock [s] a test sets (ROS time); None: not known yet (use_sim_time before the first /clock message)."""

    def __init__(self, now=100.0):
        self.now = now

    def __call__(self):
        return self.now


def ur5_arm():
    """(robot, its plausible link parameters of seed 1 (10 per link), the model of exactly those, no friction)."""
    robot = load_robot(UR5_FILE)
    parameters = plausible_parameters(robot, seed=1)
    return robot, parameters, DynamicModel.from_standard(robot, parameters)
