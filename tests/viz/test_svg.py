"""The SVG line charts of docs/RESULTS.md: deterministic, escaped, gaps where a value is missing."""
import re

from hierattn.viz.svg import line_chart


def test_the_same_numbers_give_the_same_bytes_and_names_are_escaped():
    series = {"<b>HA&N</b>": ([1, 2, 3], [0.7, None, 0.9]), "HCAN": ([1, 2, 3], [0.6, 0.65, 0.7])}
    first, second = line_chart(series, "t", "x", "y"), line_chart(series, "t", "x", "y")
    assert first == second and first.startswith("<svg") and first.rstrip().endswith("</svg>")
    assert "&lt;b&gt;HA&amp;N&lt;/b&gt;" in first and "<b>" not in first
    # the missing middle value splits the first series into two one-point runs: no line across the gap
    polylines = re.findall(r'<polyline points="([^"]+)"', first)
    assert len(polylines) == 3 and sum(len(p.split()) == 1 for p in polylines) == 2
    assert first.count("<circle") == 5


def test_nothing_recorded_says_so():
    assert "nothing recorded yet" in line_chart({"a": ([1], [None])}, "title", "x", "y")
