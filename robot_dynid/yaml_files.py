"""Reading the YAML files and texts a user gives (robots, trajectories, plans, poses, models, model
messages) within limits of size, depth, aliases and integers: one error line each; plain Python data for
the files and JSON the package writes."""
from __future__ import annotations

import os
import sys

import numpy as np
import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from robot_dynid.errors import DataError, message_line
from robot_dynid.input_files import MAX_TEXT_BYTES, read_text, size_text

__all__ = ["MAX_YAML_DEPTH", "MAX_YAML_NODES", "MAX_INTEGER_CHARACTERS", "YamlLimitError", "load_yaml", "read_yaml",
           "parameter_file_node", "plain_data"]

MAX_YAML_DEPTH = 100
"""Deepest nesting of sequences and mappings read (the package's files nest fewer than 10 levels)."""

MAX_YAML_NODES = 1_000_000
"""Most values (scalars, sequences, mappings) a YAML document may hold, each alias counted as the values it
repeats: refuses alias bombs ("billion laughs") before anything walks the result. The package's largest
files (protocol plans, model artifacts) hold a few thousand."""

MAX_INTEGER_CHARACTERS = 1100
"""Longest integer literal read (every integer within the float range, 0b and 1024 binary digits
included, is shorter)."""


class YamlLimitError(yaml.YAMLError):
    """A YAML document beyond a limit of :func:`load_yaml`: ``problem`` and where (``mark``)."""

    def __init__(self, problem: str, mark):
        super().__init__(problem)
        self.problem, self.mark = problem, mark


class _Limits:
    """Composing and constructing with :data:`MAX_YAML_DEPTH`, :data:`MAX_YAML_NODES` (aliases expanded), no
    alias inside the node it names, and no integer beyond the float range; mixed into a loader whose
    composer is PyYAML's Python one (its parser libyaml's where PyYAML has it, for speed)."""

    def _start_limits(self) -> None:
        self._depth = 0
        self._nodes = 0
        self._anchor_sizes = {}

    def _count(self, added: int, mark) -> None:
        self._nodes += added
        if self._nodes > MAX_YAML_NODES:
            raise YamlLimitError(f"holds more than {MAX_YAML_NODES} values (aliases counted as the values they "
                                 "repeat)", mark)

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            if event.anchor in self.anchors and event.anchor not in self._anchor_sizes:
                raise YamlLimitError(f"holds alias *{event.anchor} inside the node it names (a recursive "
                                     "structure)", event.start_mark)
            self._count(self._anchor_sizes.get(event.anchor, 0), event.start_mark)
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_YAML_DEPTH:
            raise YamlLimitError(f"nests deeper than {MAX_YAML_DEPTH} levels", event.start_mark)
        before = self._nodes
        self._count(1, event.start_mark)
        node = super().compose_node(parent, index)
        self._depth -= 1
        if event.anchor is not None:
            self._anchor_sizes[event.anchor] = self._nodes - before
        return node

    def construct_yaml_int(self, node):
        text = self.construct_scalar(node)
        if len(text) > MAX_INTEGER_CHARACTERS:
            raise YamlLimitError(f"holds an integer of {len(text)} characters, beyond the float range "
                                 "(|x| < 1.8e308)", node.start_mark)
        value = super().construct_yaml_int(node)
        if abs(value) > sys.float_info.max:
            raise YamlLimitError(f"holds an integer beyond the float range (|x| < 1.8e308): {text[:20]}...",
                                 node.start_mark)
        return value


class _PythonLimitedLoader(_Limits, Reader, Scanner, Parser, Composer, SafeConstructor, Resolver):
    """The limited loader on PyYAML's Python parser (where PyYAML was built without libyaml)."""

    def __init__(self, stream):
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._start_limits()


_PythonLimitedLoader.add_constructor("tag:yaml.org,2002:int", _PythonLimitedLoader.construct_yaml_int)
_LimitedLoader = _PythonLimitedLoader

if yaml.__with_libyaml__:
    from yaml.cyaml import CParser

    class _LibyamlLimitedLoader(_Limits, Composer, CParser, SafeConstructor, Resolver):
        """The limited loader on libyaml's parser (an order of magnitude faster than the Python one)."""

        def __init__(self, stream):
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self._start_limits()

    _LibyamlLimitedLoader.add_constructor("tag:yaml.org,2002:int", _LibyamlLimitedLoader.construct_yaml_int)
    _LimitedLoader = _LibyamlLimitedLoader


def _where(mark) -> str:
    return "" if mark is None else f" (line {mark.line + 1}, column {mark.column + 1})"


def _describe(problem: yaml.YAMLError) -> str:
    """A YAML error in one line: what YAML was doing and what it found, each with its line and column."""
    if isinstance(problem, yaml.MarkedYAMLError):
        parts = [text + _where(mark) for text, mark in ((problem.context, problem.context_mark),
                                                        (problem.problem, problem.problem_mark)) if text]
        if parts:
            return ": ".join(parts)
    return message_line(problem)


def load_yaml(text: str, source: str = "<text>", error: type[Exception] = DataError, what: str = "text"):
    """The parsed content of the YAML ``text`` (a message, a file's content) from ``source``.

    Refused: more than :data:`~robot_dynid.input_files.MAX_TEXT_BYTES` characters, nesting deeper than
    :data:`MAX_YAML_DEPTH`, more than :data:`MAX_YAML_NODES` values with aliases expanded, an alias inside
    the node it names, an integer beyond the float range, anything that is not YAML.

    Raises
    ------
    error
        One line naming ``source`` and ``what``, with the line and column where YAML reports one.
    """
    if not isinstance(text, str):
        raise error(f"{source}: the {what} must be text, got {type(text).__name__}")
    if len(text) > MAX_TEXT_BYTES:
        raise error(f"{source}: the {what} has {len(text)} characters, above the limit of {size_text(MAX_TEXT_BYTES)}")
    loader = _LimitedLoader(text)
    try:
        return loader.get_single_data()
    except YamlLimitError as problem:
        raise error(f"{source}: the {what} {problem.problem}{_where(problem.mark)}") from None
    except yaml.YAMLError as problem:
        raise error(f"{source}: the {what} is not valid YAML: {_describe(problem)}") from None
    finally:
        loader.dispose()


def read_yaml(path, error: type[Exception] = DataError, what: str = "file"):
    """The parsed content of the YAML file ``path``, read with the checks of
    :func:`~robot_dynid.input_files.read_text` (a regular file of at most
    :data:`~robot_dynid.input_files.MAX_TEXT_BYTES`, UTF-8) and :func:`load_yaml`.

    Raises
    ------
    error
        One line naming the file: it cannot be read (missing, a directory, a FIFO or device, no
        permission, too large), is not UTF-8 text, is not YAML (with the line and column YAML reports)
        or is beyond a limit of :func:`load_yaml`.
    """
    path = os.fspath(path)
    return load_yaml(read_text(path, what, error), path, error, what)


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
