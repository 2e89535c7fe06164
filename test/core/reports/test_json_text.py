"""Strict JSON text: what json.loads reads back (an independent parser), streamed or not."""
import io
import json
import math

import numpy as np
import pytest

from robot_dynid.reports.json_text import dumps, write_streamed


def test_nan_and_infinities_are_strict_json():
    assert json.loads(dumps({"a": math.nan, "b": np.float64(math.inf), "c": -math.inf, "d": np.int64(3)})) == \
        {"a": None, "b": "inf", "c": "-inf", "d": 3}


@pytest.mark.parametrize("members", [[], [("r1", {"x": [1.0, math.nan]})],
                                     [("r1", {"x": 1}), ("r2", {"y": {"z": [np.float32(0.5)]}}), ("3", [])]])
def test_a_streamed_member_reads_back_as_the_whole_document(members):
    data = {"first": {"k": [1, 2]}, "robots": {}, "last": 'text "quoted"\n'}
    stream = io.StringIO()
    write_streamed(stream, data, "robots", iter(members))
    whole = {**data, "robots": dict(members)}
    assert json.loads(stream.getvalue()) == json.loads(dumps(whole))
    assert list(json.loads(stream.getvalue())) == ["first", "robots", "last"]
