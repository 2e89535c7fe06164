"""Write every node's config/<node>.yaml from its parameter table, so that no second copy is kept in step by hand.

    python tools/config_files.py [--check] [--directory DIR]

Each node module's ``PARAMETERS`` (:class:`robot_dynid.nodes.node_runtime.ParameterTable`) gives the file: which
parameters are live, the notes, and every parameter with its default (or example) and description. ``--check``
writes nothing and exits 1 naming the files that differ; ``--directory``: the files there instead of config/.
"""
import argparse
import importlib
import pathlib
import sys

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"
NODES = ("experiment_runner", "recorder", "identifier", "feedforward", "sim_robot", "hydraulic_identifier")
"""The nodes with a config file: robot_dynid.nodes.<name> and config/<name>.yaml."""


def config_texts(directory=CONFIG) -> dict:
    """{path: text} of every node's config file in ``directory``."""
    return {pathlib.Path(directory) / f"{name}.yaml":
            importlib.import_module(f"robot_dynid.nodes.{name}").PARAMETERS.config_text() for name in NODES}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file differs")
    parser.add_argument("--directory", default=str(CONFIG), help="where the config files are (default: config/)")
    args = parser.parse_args(argv)
    stale = False
    for path, text in config_texts(args.directory).items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        state = "up to date" if current == text else "differs" if args.check else "written"
        if current != text:
            stale = True
            if not args.check:
                path.write_text(text, encoding="utf-8")
        print(f"{path}: {state}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
