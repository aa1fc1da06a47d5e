"""The summary file's layout: indented JSON with every list of numbers on one line (a histogram's buckets would
otherwise take a line per number), and the same data read back."""

from __future__ import annotations

import json

from loadlib.histogram import Histogram
from loadlib.outputs.summary import summary_json


def test_number_lists_on_one_line_and_nothing_else_changes() -> None:
    h = Histogram()
    for v in (1.0, 2.5, 2.5, 1e6, 0.003):
        h.record(v)
    data = {"histograms": {"ttft": h.to_dict()}, "ci": [1.5, -0.25], "names": ["a", "b"], "empty": [], "deep": [[1, 2]]}
    text = summary_json(data)
    assert json.loads(text) == data
    assert '"n": [1, 1, 2, 1]' in text and '"ci": [1.5, -0.25]' in text
    assert '"names": [\n' in text, "lists of strings keep their lines"
