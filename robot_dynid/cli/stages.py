"""robot-dynid stages: list the stages of a recording, from its markers or detected from the motion."""
import math

__all__ = ["NAME", "HELP", "ORIGIN_TEXT", "add_arguments", "stage_rows", "main"]

NAME = "stages"
HELP = ("list the stages of a rosbag2 or CSV recording (kind, start, end and duration [s], friction joint, "
        "speed and direction): from its stage markers, else detected from the motion")

ORIGIN_TEXT = {"markers": "its stage markers", "stage column": "its stage column", "motion": "the motion"}


def add_arguments(parser):
    from robot_dynid.cli.options import add_data_arguments, add_robot_argument, add_stage_detection_arguments
    add_robot_argument(parser)
    add_data_arguments(parser)
    add_stage_detection_arguments(parser)
    parser.add_argument("--json", action="store_true",
                        help="print JSON: origin, time_origin [s], and per stage kind, label, cycle, start, end "
                             "and duration [s since time_origin], joint, speed_fraction [1], direction")


def stage_rows(table):
    """Plain dicts of the stages of a StageTable, times [s] since its time origin (None for an open end)."""
    from robot_dynid.recordings.stages import NO_CYCLE
    rows = []
    for stage in table.stages:
        end = None if math.isinf(stage.end_time) else stage.end_time - table.time_origin
        friction = stage.joint is not None
        rows.append({
            "kind": stage.kind, "label": stage.label or None,
            "cycle": None if stage.cycle == NO_CYCLE else stage.cycle,
            "start": stage.start_time - table.time_origin, "end": end,
            "duration": None if end is None else stage.duration,
            "joint": stage.joint, "speed_fraction": stage.speed_fraction if friction else None,
            "direction": stage.direction if friction else None,
        })
    return rows


def main(args):
    from robot_dynid.cli.options import bag_topics_from_args
    from robot_dynid.model.robot_loader import load_robot
    from robot_dynid.recordings.pipeline import read_stage_table
    from robot_dynid.reports.json_text import dumps
    from robot_dynid.reports.tables import format_table
    robot = load_robot(args.robot)
    table = read_stage_table(args.data, robot.joint_names, robot.limit_arrays().velocity,
                             rest_threshold=args.rest_threshold, robot=robot, resample=args.resample,
                             derive=args.derive,
                             **bag_topics_from_args(args, robot))
    rows = stage_rows(table)
    if args.json:
        print(dumps({
            "data": str(args.data), "origin": table.origin, "time_origin": table.time_origin,
            "rest_threshold": None if table.rest_threshold is None
            else dict(zip(robot.joint_names, table.rest_threshold)),
            "note": table.note or None, "stages": rows,
        }))
        return 0
    if table.note:
        print(table.note)
    print(f"{len(rows)} stages of {args.data} from {ORIGIN_TEXT[table.origin]}; times [s] since the first "
          f"sample (at {table.time_origin:.6f} s)")

    def number(value, digits=3):
        return "-" if value is None else f"{value:.{digits}f}"

    print(format_table(
        ("kind", "start [s]", "end [s]", "duration [s]", "cycle", "joint", "speed [of limit]", "direction"),
        [(row["kind"] + (f":{row['label']}" if row["label"] else ""), number(row["start"]), number(row["end"]),
          number(row["duration"]), "-" if row["cycle"] is None else str(row["cycle"]), row["joint"] or "-",
          number(row["speed_fraction"]), "-" if row["direction"] is None else f"{row['direction']:+d}")
         for row in rows]))
    return 0
