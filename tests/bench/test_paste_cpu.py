"""The per-paste bench's breakdown (bench/paste_cpu.py): each sampled stack goes to the category of
its innermost frame that names one, a waiting event loop and an idle server's polling are left out,
a paste is counted net of what the idle server spends over its window, and a regression of more than
20% against the last recorded figure is said in the goals table."""
from bench.paste_cpu import breakdown, net_of_idle
from bench.run import _goals


def test_each_stack_goes_to_its_innermost_category():
    stacks = "\n".join([
        "Thread.run (threading.py:1);<module> (explore.py:1);chart (hierattn/app/downloads.py:4);"
        "update_layout (plotly/basedatatypes.py:9) 6",
        "<module> (explore.py:1);explain (hierattn/analysis/explain.py:3);forward (hierattn/models/han.py:9) 3",
        "ScriptRunner._run_script (streamlit/runtime/scriptrunner/script_runner.py:1);"
        "ScriptRunner._on_script_finished (streamlit/runtime/scriptrunner/script_runner.py:1055) 1",
        "BaseEventLoop._run_once (asyncio/base_events.py:1884);EpollSelector.select (selectors.py:468) 90",
        "Thread.run (threading.py:982);_worker (concurrent/futures/thread.py:83);_WorkItem.run (concurrent/futures/"
        "thread.py:58);PollingPathWatcher._schedule.<locals>.task (streamlit/watcher/polling_path_watcher.py:90) 7",
        "Server.main_loop (uvicorn/server.py:248);Server.on_tick (uvicorn/server.py:279) 2",
    ])
    assert breakdown(stacks) == {"figures": 0.6, "model": 0.3, "garbage collection": 0.1}


def test_a_paste_is_counted_net_of_the_idle_servers_own_rate():
    assert net_of_idle(70.0, 1.5, 7.0) == 59.5  # 10.5 ms of polling and ticks over its 1.5 s window
    assert net_of_idle(10.0, 2.0, 7.0) == 0.0  # a cheap paste, counted to 10 ms, is no negative cost


def test_a_figure_recorded_before_the_idle_correction_is_compared_as_read():
    row = {"model": "bbc-news-han", "words": 550, "cpu_ms": 58.0, "cpu_ms_gross": 70.0, "idle_ms_per_s": 7.0,
           "kb": 80, "messages": 70, "model_ms": 20.0}
    as_read = {k: v for k, v in row.items() if k not in ("cpu_ms_gross", "idle_ms_per_s")}

    def said(last: dict) -> tuple[str, bool]:
        (goal,) = [g for g in _goals({"paste_cpu": {"rows": [row], "before": [last]}})
                   if g[0].startswith("server CPU per paste")]
        return goal[2], goal[3]

    text, met = said({**as_read, "cpu_ms": 55.0})  # 70 as read against 55 as read
    assert "58 ms net of the idle server's 7 ms/s, 70 as read" in text
    assert "+27% as read against the last recorded 55 ms: a regression" in text and not met
    assert "regression" not in said({**as_read, "cpu_ms": 60.0})[0]  # 70 against 60: within a fifth
    assert "regression" not in said({**row, "cpu_ms": 50.0})[0]  # both net: 58 against 50
    text, _ = said({**row, "cpu_ms": 45.0})  # both net: 58 against 45
    assert "+29% against the last recorded 45 ms: a regression" in text


def test_a_regression_of_more_than_a_fifth_is_said():
    row = {"model": "bbc-news-han", "words": 550, "cpu_ms": 130.0, "kb": 150, "messages": 110, "model_ms": 20.0}
    results = {"paste_cpu": {"rows": [row], "before": [{**row, "cpu_ms": 100.0}]}}
    (goal,) = [g for g in _goals(results) if g[0].startswith("server CPU per paste")]
    assert "a regression" in goal[2] and goal[1] == "<= 50 ms" and not goal[3]
    results["paste_cpu"]["before"] = [{**row, "cpu_ms": 120.0}]
    (goal,) = [g for g in _goals(results) if g[0].startswith("server CPU per paste")]
    assert "regression" not in goal[2] and "last recorded 120 ms" in goal[2]


def test_a_session_sends_back_the_value_a_browser_holds():
    """A run that does not set a select box's value leaves the browser's value as it was: taking
    the box's default there put a bbc-news-hcan session on bbc-news-han from its second paste on."""
    from streamlit.proto.Element_pb2 import Element

    from bench.load import Session

    session = Session("http://localhost:1", "model=bbc-news-hcan")
    first, later = Element(), Element()
    first.selectbox.id = later.selectbox.id = "model"
    first.selectbox.options.extend(["bbc-news-han", "bbc-news-hcan"])
    later.selectbox.options.extend(["bbc-news-han", "bbc-news-hcan"])
    first.selectbox.raw_value, first.selectbox.set_value = "bbc-news-hcan", True  # the address set it
    session._remember(first)
    session._remember(later)  # the next run: no value set, default 0
    assert session.widgets["model"] == ("string_value", "bbc-news-hcan")
    fresh = Session("http://localhost:1")
    fresh._remember(later)  # never set: the box shows its default
    assert fresh.widgets["model"] == ("string_value", "bbc-news-han")
    ticked, drawn = Element(), Element()
    ticked.checkbox.id = drawn.checkbox.id = "trust"
    ticked.checkbox.value, ticked.checkbox.set_value = True, True
    session._remember(ticked)
    session._remember(drawn)
    assert session.widgets["trust"] == ("bool_value", True)


def test_the_class_and_first_answer_goals_say_a_regression_and_a_miss():
    wave = {"workers": 2, "sessions": 30, "model": "bbc-news-han", "documents": "one sample", "answered": 30,
            "failed": 0, "first_chart_p50_s": 0.5, "first_chart_p95_s": 0.9, "run_p95_s": 0.9}
    results = {"class_wave": {"waves": [wave], "fresh_visit": {"median_s": 1.2, "slowest_s": 1.4, "visits": 5},
                              "before": {"waves": [{**wave, "first_chart_p95_s": 0.7}]}}}
    (chart, visit) = [g for g in _goals(results) if g[0].startswith("a class of")]
    assert chart[1] == "<= 1.5 s" and "a regression" in chart[2] and not chart[3]  # 0.9 s against 0.7 s
    assert visit[3] and "last recorded" not in visit[2]
    results["class_wave"]["fresh_visit"]["browser_ms"] = {"plotly": 1516, "idle": 1017}
    visit = [g for g in _goals(results) if g[0].startswith("a class of one")][0]
    assert "the browser's main thread, ms: plotly 1,516, idle 1,017)" in visit[2]
    results["class_wave"]["before"] = None
    assert [g for g in _goals(results) if g[0].startswith("a class of")][0][3]
    row = {"model": "bbc-news-hcan", "tokens": 1068, "sentences": 46, "peer_forward_ms": 14.8,
           "forward_ms_1_threads": 47.8, "forward_ms_2_threads": 30.4, "explain_ms_1_threads": 63.2,
           "explain_ms_2_threads": 48.3}
    line = {"explain_cpu_s": 4.2, "import_torch_cpu_s": 1.9, "import_spacy_cpu_s": 2.7, "import_explain_cpu_s": 1.9,
            "python_alone_cpu_s": 0.01}
    goals = [g for g in _goals({"first_answer": {"forward": [row], "command_line": line, "before": None}})
             if g[0].startswith("one document")]
    assert [(g[1], g[2].split(" ")[0], g[3]) for g in goals] == [
        ("<= 14.8 ms", "30.4", False), ("<= 20 ms", "48.3", False), ("<= 1.5 s", "4.2", False)]


def test_the_floor_page_sends_as_many_messages_as_asked_with_the_apps_settings(tmp_path, monkeypatch):
    """Streamlit's floor is a bare page of the page's own message count, under the app's settings
    (without them Streamlit collects garbage after every run: 65 ms a rerun of an empty page here)."""
    from streamlit.testing.v1 import AppTest

    from bench.paste_cpu import FLOOR_MESSAGES, floor_page
    from bench.served import REPO

    folder = floor_page(tmp_path)
    assert (folder / ".streamlit" / "config.toml").read_text() == (REPO / ".streamlit" / "config.toml").read_text()
    monkeypatch.setenv("FLOOR_ELEMENTS", str(72 - FLOOR_MESSAGES))
    at = AppTest.from_file(str(folder / "app.py")).run()
    at.text_area[0].input("a paste").run()
    assert len(at.markdown) == 72 - FLOOR_MESSAGES and at.markdown[-1].value == "line 66 · 7 characters"


def test_keeping_a_paste_is_timed_beside_a_full_folder_and_leaves_the_environment(monkeypatch):
    """The bench times a keep with documents already kept (the pastes above start from an empty
    folder), in a folder of its own: the app's own settings are as they were."""
    import os

    from bench.paste_cpu import format_paste_cpu, keep_ms

    monkeypatch.setenv("HIERATTN_DOCUMENTS", "/nowhere/kept")
    monkeypatch.delenv("HIERATTN_RUNTIME", raising=False)
    times = keep_ms(["one note about a match", "another about a film"], counts=(0, 3), keeps=2)
    assert list(times) == ["0", "3"] and all(ms > 0 for ms in times.values())
    assert os.environ["HIERATTN_DOCUMENTS"] == "/nowhere/kept" and "HIERATTN_RUNTIME" not in os.environ
    row = {"model": "m", "cpu_ms": 70.0, "cpu_ms_range": [50.0, 90.0], "messages": 70, "kb": 79, "model_ms": 20.0,
           "ratio": 3.5, "shared_ms": 40.0, "floor_messages": 70, "floor_ms": 13.0, "keep_ms": times}
    assert "keeping a paste for its link with 0 kept" in format_paste_cpu([row])[0]
