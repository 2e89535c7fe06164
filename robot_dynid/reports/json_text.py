"""Strict JSON for every ``--json`` output and summary file: numpy types as Python ones, nan as
null and +-inf as the strings "inf" / "-inf" (``json.dumps`` would write ``NaN``, which JSON parsers
other than Python's refuse)."""
from __future__ import annotations

import json
import math

import numpy as np


def json_safe(value):
    """``value`` with numpy types as Python ones, nan as None and +-inf as the strings 'inf' / '-inf'."""
    if isinstance(value, dict):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        value = float(value)
        if math.isnan(value):
            return None
        return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    return value


def dumps(data) -> str:
    """Strict JSON (no NaN) of ``data`` (:func:`json_safe`), indented by 2."""
    return json.dumps(json_safe(data), indent=2, allow_nan=False)
