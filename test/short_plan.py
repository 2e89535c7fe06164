"""A short protocol plan for tests that run the whole graph (test/ros/test_end_to_end*.py, test/cli/test_demo*.py)."""
import numpy as np

from robot_dynid.experiment.excitation import random_excitation
from robot_dynid.experiment.protocol import ProtocolPlan, save_plan
from robot_dynid.experiment.trajectories import Hold, PointToPoint, Sequence
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.stages import StageInterval


def write_short_plan(robot, path, seed):
    """Write a 16 s plan for ``robot`` to ``path``: rest, a 10 s random rest-to-rest Fourier
    excitation (``seed``, half the joint ranges), rest, one friction stroke of the second joint
    (0.4 rad) up and back; return its stage rows. Transitions are labelled rest, so the excitation
    is one stage."""
    joints = robot.joint_names
    home = np.zeros(robot.n_joints)
    excitation = random_excitation(robot, harmonics=5, period=10.0, amplitude_fraction=0.5, seed=seed)
    speed = 0.5 * np.array([limit.velocity for limit in robot.limits])
    acceleration = 0.5 * np.array([limit.acceleration for limit in robot.limits])
    stroke = home + np.eye(robot.n_joints)[1] * 0.4

    def move(start, end):
        return PointToPoint(joints, start, end, PointToPoint.shortest_duration(start, end, speed, acceleration))

    rows = [(Hold(joints, home, 0.5), ("rest", "hold", None, None, 0)),
            (move(home, excitation.start_pose), ("rest", "transition", None, None, 0)),
            (excitation, ("excitation", "fourier", None, None, 0)),
            (move(excitation.start_pose, home), ("rest", "transition", None, None, 0)),
            (PointToPoint(joints, home, stroke, 1.0), ("friction", "stroke", joints[1], 0.2, 1)),
            (PointToPoint(joints, stroke, home, 1.0), ("friction", "stroke", joints[1], 0.2, -1))]
    ends = np.cumsum([segment.duration for segment, _ in rows])
    stages = tuple(StageInterval(kind, float(end - segment.duration), float(end), joint, fraction, direction, 0, name)
                   for (segment, (kind, name, joint, fraction, direction)), end in zip(rows, ends))
    save_plan(ProtocolPlan(robot.name, joints, Sequence([segment for segment, _ in rows]), 1, stages, {}), path)
    return stages


def short_plan_for(robot_config, directory, seed):
    """(robot file, its RobotDescription, stage rows) of ``config/robots/<robot_config>``, with its short plan
    (:func:`write_short_plan`, ``seed``) written to ``directory/plan.yaml``."""
    robot_file = find_package_file("config", "robots", robot_config)
    robot = load_robot(robot_file)
    return robot_file, robot, write_short_plan(robot, directory / "plan.yaml", seed=seed)
