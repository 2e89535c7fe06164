"""Argument groups shared by several subcommands, and the objects they build."""
from __future__ import annotations

import argparse
import math

from robot_dynid.friction import FRICTION_MODEL_NAMES, friction_model
from robot_dynid.segmentation import REST_THRESHOLD, REST_THRESHOLD_FRACTION


def add_model_structure_arguments(parser):
    group = parser.add_argument_group("model structure")
    group.add_argument("--robot", required=True, metavar="R.yaml",
                       help="robot description (YAML DH table or URDF reference; see README)")
    group.add_argument("--friction", default="coulomb_viscous", choices=FRICTION_MODEL_NAMES,
                       help="friction model, as regressor columns per joint (default: %(default)s)")
    group.add_argument("--friction-drift", default="none", choices=("none", "temperature", "time"),
                       help="friction coefficients that drift with joint temperature [deg C] or "
                            "running time [s] (default: %(default)s)")
    group.add_argument("--armature", action="store_true", help="add rotor inertia Ia_j qdd_j per joint [kg m^2]")
    group.add_argument("--offset", action="store_true", help="add a constant torque offset per joint [N m]")


def friction_from_args(args):
    return friction_model(args.friction, drift=args.friction_drift)


def add_data_arguments(parser):
    group = parser.add_argument_group("recorded data")
    group.add_argument("--data", required=True, metavar="FILE",
                       help="rosbag2 directory (MCAP or sqlite3) or CSV file (see README for the columns)")
    group.add_argument("--joint-states-topic", default="/joint_states", help="bag only (default: %(default)s)")
    group.add_argument("--effort-topic", default=None,
                       help="bag only: a second JointState topic whose effort field holds the torques [N m] "
                            "(default: the effort of --joint-states-topic)")
    group.add_argument("--current-topic", default=None,
                       help="bag only, instead of --effort-topic: a JointState topic whose effort field holds motor "
                            "currents [A], turned into joint torques with each joint's torque_constant [N m/A] and "
                            "gear_ratio from the robot description (the recorder's current_topic: /motor_currents)")
    group.add_argument("--stage-topic", default="/experiment_stage",
                       help="bag only: robot_dynid/msg/ExperimentStage markers (default: %(default)s)")


def add_stage_detection_arguments(parser):
    group = parser.add_argument_group("stage detection (recordings without stage markers or stage column)")
    group.add_argument("--rest-threshold", type=_rest_threshold, default=None, metavar="RAD_S",
                       help="speed [rad/s] below which a joint counts as at rest when stages are detected "
                            "from the motion; must lie above the velocity noise and below the slowest "
                            f"friction speed (default: {REST_THRESHOLD:g} rad/s, capped at "
                            f"{100 * REST_THRESHOLD_FRACTION:g} %% of each joint's velocity limit)")


def _rest_threshold(text):
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0.0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a speed > 0 [rad/s]")
    return value


def bag_topics_from_args(args, robot):
    """Topic options of ``read_bag`` from the arguments; motor currents are converted with
    ``robot``'s drives."""
    return {"joint_states_topic": args.joint_states_topic, "effort_topic": args.effort_topic,
            "stage_topic": args.stage_topic, "current_topic": args.current_topic,
            "torque_from_current": robot.torque_from_current if args.current_topic else None}


def parse_cycles(text):
    """'3,9,16' -> [3, 9, 16]; also accepts ranges '3-5'."""
    cycles = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        low, _, high = part.partition("-")
        try:
            cycles.extend(range(int(low), int(high) + 1) if high else [int(low)])
        except ValueError:
            raise ValueError(f"--cycles: {part!r} is not a cycle number or range like 3-5") from None
    return cycles
