"""Write the documentation site's reference pages from the code, so that no second copy is kept in step by hand.

    python tools/reference_pages.py OUT_DIR

``OUT_DIR/commands.md``: every ``robot-dynid`` command from its argparse parser (the options table of
:mod:`robot_dynid.cli`): usage, description, each argument with its default and help. ``OUT_DIR/nodes.md``: every
node started for real with its defaults (rclpy, in a temporary folder, on its own ROS domain) and each parameter
read back from its descriptor (``ros2 param describe``): type, default, description with unit, range, and
whether a change while it runs takes effect or the node reads it at its start. Without rclpy the node page says
it was not generated. docs/conf.py calls :func:`write_pages` at every build (``make docs``, rosdoc2).
"""
import argparse
import importlib
import os
import pathlib
import sys
import tempfile

NODES = (
    ("experiment_runner", "ExperimentRunnerNode", {}),
    ("recorder", "RecorderNode", {}),
    ("identifier", "IdentifierNode", {}),
    ("feedforward", "FeedforwardNode", {}),
    ("sim_robot", "SimRobotNode", {}),
    ("hydraulic_identifier", "HydraulicIdentifierNode",
     {"cylinder_names": ["boom"], "piston_masses": [4.595], "damping": [2000.0], "areas_a": [3.1172e-3],
      "areas_b": [2.0994e-3]}),
)
"""(module under robot_dynid.nodes, node class, parameters it needs to start): the launch files' nodes."""
REFERENCE_DOMAIN = 231
"""ROS_DOMAIN_ID of the nodes started for the node page (outside the tests' 1-100 and the benchmarks' 150-199)."""


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _default(value) -> str:
    if value is None or value == argparse.SUPPRESS or value is False:
        return ""
    return f"`{value}`"


def _command_section(parser, name: str, level: int) -> list[str]:
    lines = [f"{'#' * level} `{name}`", "", _cell(parser.description or ""), "", "```text",
             parser.format_usage().strip(), "```", ""]
    formatter = parser._get_formatter()
    rows, children = [], []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            children += [(f"{name} {child}", sub) for child, sub in action.choices.items()]
            continue
        label = ", ".join(f"`{option}`" for option in action.option_strings) or f"`{action.metavar or action.dest}`"
        if action.option_strings and action.nargs != 0:
            label += f" {formatter._format_args(action, action.dest.upper())}".replace("|", "\\|")
        text = formatter._expand_help(action) if action.help else ""
        rows.append(f"| {label} | {_default(action.default)} | {_cell(text)} |")
    if rows:
        lines += ["| argument | default | meaning |", "| --- | --- | --- |", *rows, ""]
    for child_name, child in children:
        lines += _command_section(child, child_name, level + 1)
    return lines


def command_reference() -> str:
    """The ``robot-dynid`` command reference in Markdown, one section per command."""
    from robot_dynid import cli
    lines = ["# Command reference", "",
             "Generated from the parsers (`robot_dynid/cli`) at every build of this site; `robot-dynid COMMAND "
             "--help` prints the same. Units are SI and radians throughout.", ""]
    top = cli.build_parser("")
    lines += ["```text", top.format_usage().strip(), "```", ""]
    for module_name in cli.SUBCOMMAND_MODULES:
        module = importlib.import_module(module_name)
        parser = cli.build_parser(module.NAME)
        sub = next(action for action in parser._actions
                   if isinstance(action, argparse._SubParsersAction)).choices[module.NAME]
        lines += _command_section(sub, f"robot-dynid {module.NAME}", 2)
    return "\n".join(lines) + "\n"


def _type_name(descriptor_type: int) -> str:
    from rcl_interfaces.msg import ParameterType
    names = {value: name[len("PARAMETER_"):].lower() for name, value in vars(ParameterType).items()
             if name.startswith("PARAMETER_") and isinstance(value, int)}
    return names.get(descriptor_type, "?")


def _range(descriptor) -> str:
    for ranges in (descriptor.floating_point_range, descriptor.integer_range):
        if ranges:
            return f"[{ranges[0].from_value:g}, {ranges[0].to_value:g}]"
    return ""


def node_reference() -> str:
    """Every node's parameters in Markdown, read back from the descriptors of the node started with its
    defaults."""
    lines = ["# Node reference", "",
             "Generated at every build of this site by starting each node with its defaults and reading back its "
             "parameters' descriptors (`ros2 param describe` shows the same). *While running*: **live** when "
             "`ros2 param set` takes effect at once (or is refused with the reason), *at start* when the node "
             "reads it only at its start. Ranges are the descriptors' closed intervals; the node's own check may "
             "refuse an open end with its reason.", ""]
    try:
        import rclpy
        from rclpy.parameter import Parameter
    except ImportError:
        return "\n".join(lines + ["Not generated here: rclpy is not installed (build the site in a ROS 2 "
                                  "environment or the bootstrap's .venv)."]) + "\n"
    os.environ["ROS_DOMAIN_ID"] = str(REFERENCE_DOMAIN)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    here = os.getcwd()
    rclpy.init()
    try:
        with tempfile.TemporaryDirectory(prefix="robot_dynid_reference_") as scratch:
            os.chdir(scratch)                         # the recorder opens its bag folder where it starts
            for module_name, class_name, needed in NODES:
                module = importlib.import_module(f"robot_dynid.nodes.{module_name}")
                overrides = [Parameter(name, value=value) for name, value in needed.items()]
                node = getattr(module, class_name)(parameter_overrides=overrides)
                try:
                    lines += _node_section(module, node, needed)
                finally:
                    node.destroy_node()
    finally:
        os.chdir(here)
        rclpy.shutdown()
    return "\n".join(lines) + "\n"


def _node_section(module, node, needed) -> list[str]:
    from rclpy.exceptions import ParameterUninitializedException
    summary = (module.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
    lines = [f"## {node.get_name()}", "", f"`ros2 run robot_dynid {node.get_name()}` or `python -m "
             f"{module.__name__} --ros-args -p NAME:=VALUE`. {_cell(summary)}", "",
             "| parameter | type | default | meaning | range | while running |",
             "| --- | --- | --- | --- | --- | --- |"]
    names = sorted(node._parameters)
    for name, descriptor in zip(names, node.describe_parameters(names)):
        try:
            value = f"`{_cell(repr(node.get_parameter(name).value))}`"
            value += " (an example: no default)" if name in needed else ""
        except ParameterUninitializedException:          # declared by type only: no default
            value = "(none)"
        lines.append(f"| `{name}` | {_type_name(descriptor.type)} | {value} | {_cell(descriptor.description)} "
                     f"| {_range(descriptor)} | {'at start' if descriptor.read_only else '**live**'} |")
    return lines + [""]


def write_pages(out) -> list[pathlib.Path]:
    """Write ``commands.md`` and ``nodes.md`` into ``out``; returns their paths."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (("commands.md", command_reference()), ("nodes.md", node_reference())):
        (out / name).write_text(text, encoding="utf-8")
        written.append(out / name)
    return written


def main(argv) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    for path in write_pages(argv[0]):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
