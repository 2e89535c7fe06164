"""Reading the YAML files a user gives (robots, trajectories, plans, poses, models): one error line each;
plain Python data for the files and JSON the package writes."""
from __future__ import annotations

import os

import numpy as np
import yaml

from robot_dynid.errors import DataError


def read_yaml(path, error: type[Exception] = DataError, what: str = "file"):
    """The parsed content of the YAML file ``path``.

    Raises
    ------
    error
        One line naming the file: it cannot be read (missing, a directory, no permission), is not
        UTF-8 text, or is not YAML (with the line and column YAML reports).
    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as stream:
            return yaml.safe_load(stream)
    except OSError as problem:
        raise error(f"{path}: cannot read the {what}: {problem.strerror or problem}") from None
    except UnicodeDecodeError as problem:
        raise error(f"{path}: the {what} is not UTF-8 text (byte {problem.start}); is it the right file?") from None
    except yaml.YAMLError as problem:
        raise error(f"{path}: the {what} is not valid YAML: {' '.join(str(problem).split())}") from None


def parameter_file_node(key: str) -> str:
    """The node a section of a ROS 2 parameter file is for: ``node``, ``/node``, ``/**/node``
    (any namespace, as this package's config files are keyed) and ``/ns/node`` all give ``node``."""
    return str(key).rstrip("/").rsplit("/", 1)[-1]


def plain_data(value, convert_float=None):
    """``value`` (nested dicts, lists, tuples, numpy arrays and scalars) as plain Python: dict keys
    as str, sequences as lists, numpy scalars as ``int`` / ``float`` / ``bool``; every float passed
    through ``convert_float`` when given (e.g. to write nan as null)."""
    if isinstance(value, dict):
        return {str(key): plain_data(item, convert_float) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_data(item, convert_float) for item in value]
    if isinstance(value, np.ndarray):
        return plain_data(value.tolist(), convert_float)
    if isinstance(value, np.generic):
        value = value.item()
    if convert_float is not None and isinstance(value, float):
        return convert_float(value)
    return value
