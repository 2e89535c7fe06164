"""robot-dynid bag: tools for rosbag2 bags (repair an incomplete one)."""

__all__ = ["NAME", "HELP", "add_arguments", "main"]

NAME = "bag"
HELP = "rosbag2 bag tools: repair a bag that was never closed or was cut short"


def add_arguments(parser):
    from robot_dynid.cli.options import output_directory
    from robot_dynid.recordings.bag_layout import DAMAGED_SUFFIX
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    repair = actions.add_parser(
        "repair", help="make an incomplete bag whole (metadata.yaml, a storage file with a valid end)",
        description="Read a bag directory without metadata.yaml (recorder killed) or with a storage "
                    "file cut short (MCAP or sqlite3) up to its last complete message and write those "
                    "messages as a whole bag, which ros2 bag info and rosbags read. In place (default) "
                    f"the damaged files are kept beside the new ones with the suffix {DAMAGED_SUFFIX}; "
                    "nothing is deleted. A whole bag is left as it is.")
    repair.add_argument("bag", metavar="DIR", help="bag directory")
    repair.add_argument("--out", metavar="OUT", default=None, type=output_directory,
                        help="write the repaired bag to this new directory instead, leaving DIR untouched")
    repair.add_argument("--distro", default=None,
                        help="ROS 2 distro of standard types the bag does not define (default $ROS_DISTRO, "
                             "else jazzy)")
    repair.set_defaults(_action=_repair)


def main(args):
    return args._action(args)


def _repair(args):
    from robot_dynid.recordings.bag_io import ns_to_seconds
    from robot_dynid.recordings.bag_recovery import repair_bag
    result = repair_bag(args.bag, out=args.out, distro=args.distro)
    if result.out is None:
        print(f"bag {args.bag} is whole: nothing changed")
        return 0
    total = sum(result.counts.values())
    topics = ", ".join(f"{topic} {count}" for topic, count in sorted(result.counts.items()))
    if result.first_ns is None:
        span = "no message"
    else:
        first, last = ns_to_seconds([result.first_ns, result.last_ns])
        span = f"receive times {first:.6f} to {last:.6f} s ({last - first:.3f} s)"
    where = (f"the damaged original kept as {', '.join(path.name for path in result.kept)}"
             if args.out is None else f"written to {result.out}")
    print(f"bag {args.bag} repaired ({'; '.join(result.problems)}): {total} messages recovered "
          f"({topics or 'no topic'}), {span}; {where}")
    return 0
