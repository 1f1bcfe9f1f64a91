"""The per-paste bench's breakdown (bench/paste_cpu.py): each sampled stack goes to the category of
its innermost frame that names one, a waiting event loop is left out, and a regression of more than
20% against the last recorded figure is said in the goals table."""
from bench.paste_cpu import breakdown
from bench.run import _goals


def test_each_stack_goes_to_its_innermost_category():
    stacks = "\n".join([
        "Thread.run (threading.py:1);<module> (explore.py:1);chart (hierattn/app/downloads.py:4);"
        "update_layout (plotly/basedatatypes.py:9) 6",
        "<module> (explore.py:1);explain (hierattn/analysis/explain.py:3);forward (hierattn/models/han.py:9) 3",
        "ScriptRunner._run_script (streamlit/runtime/scriptrunner/script_runner.py:1);"
        "ScriptRunner._on_script_finished (streamlit/runtime/scriptrunner/script_runner.py:1055) 1",
        "BaseEventLoop._run_once (asyncio/base_events.py:1884);EpollSelector.select (selectors.py:468) 90",
    ])
    assert breakdown(stacks) == {"figures": 0.6, "model": 0.3, "garbage collection": 0.1}


def test_a_regression_of_more_than_a_fifth_is_said():
    row = {"model": "bbc-news-han", "words": 550, "cpu_ms": 130.0, "kb": 150, "messages": 110, "model_ms": 20.0}
    results = {"paste_cpu": {"rows": [row], "before": [{**row, "cpu_ms": 100.0}]}}
    (goal,) = [g for g in _goals(results) if g[0].startswith("server CPU per paste")]
    assert "a regression" in goal[2] and goal[1] == "<= 50 ms" and not goal[3]
    results["paste_cpu"]["before"] = [{**row, "cpu_ms": 120.0}]
    (goal,) = [g for g in _goals(results) if g[0].startswith("server CPU per paste")]
    assert "regression" not in goal[2] and "last recorded 120 ms" in goal[2]
