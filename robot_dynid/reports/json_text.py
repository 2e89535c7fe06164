"""Strict JSON for every ``--json`` output and summary file: numpy types as Python ones, nan as
null and +-inf as the strings "inf" / "-inf" (``json.dumps`` would write ``NaN``, which JSON parsers
other than Python's refuse)."""
from __future__ import annotations

import json
import math

from robot_dynid.yaml_files import plain_data


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
