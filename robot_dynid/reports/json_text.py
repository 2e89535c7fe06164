"""Strict JSON for every ``--json`` output and summary file: numpy types as Python ones, nan as
null and +-inf as the strings "inf" / "-inf" (``json.dumps`` would write ``NaN``, which JSON parsers
other than Python's refuse)."""
from __future__ import annotations

import json
import math

from robot_dynid.yaml_files import plain_data

__all__ = ["json_safe", "dumps", "write_streamed"]


def _json_float(value: float):
    if math.isnan(value):
        return None
    return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")


def json_safe(value):
    """``value`` with numpy types as Python ones, nan as None and +-inf as the strings 'inf' / '-inf'."""
    return plain_data(value, _json_float)


def dumps(data) -> str:
    """Strict JSON (no NaN) of ``data`` (:func:`json_safe`), indented by 2."""
    return json.dumps(json_safe(data), indent=2, allow_nan=False)


def write_streamed(stream, data: dict, key: str, members) -> None:
    """Write ``data`` as :func:`dumps` would, with ``data[key]`` the object of ``members``, an iterable of
    ``(name, value)`` written one at a time: memory for one member, not the whole document."""
    stream.write("{")
    for index, (name, value) in enumerate(data.items()):
        stream.write(("," if index else "") + "\n  " + json.dumps(name) + ": ")
        if name != key:
            stream.write(dumps(value).replace("\n", "\n  "))
            continue
        written = 0
        for member, member_value in members:
            stream.write(("," if written else "{") + "\n    " + json.dumps(str(member)) + ": "
                         + dumps(member_value).replace("\n", "\n    "))
            written += 1
        stream.write("\n  }" if written else "{}")
    stream.write("\n}" if data else "}")
