"""A visitor is a browser (``hierattn.app.visitors``): two tabs hold one run's slot, a
refresh keeps a run its owner's, and a job's link opened in another browser watches the run but
can neither cancel it nor replace its checkpoint."""
from __future__ import annotations

import secrets
import time

from streamlit.testing.v1 import AppTest

from hierattn.app import train_form, visitors
from tests.app.test_explore import APP
from tests.training.test_jobs import _job


def _masked(token: bytes) -> str:
    """The cookie as Streamlit sends it on each page load: the token masked anew (version 2)."""
    mask = secrets.token_bytes(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(token))
    return f"2|{mask.hex()}|{masked.hex()}|{int(time.time())}"


def test_every_load_of_one_browser_is_one_visitor_and_another_browser_another():
    mine, theirs = secrets.token_bytes(32), secrets.token_bytes(32)
    assert visitors._token(_masked(mine)) == visitors._token(_masked(mine)) == mine  # masks differ, token not
    assert visitors._token(_masked(theirs)) != mine
    assert visitors._token("not a version-2 value") == b"not a version-2 value"


def test_a_visitor_is_present_while_any_of_its_tabs_is_open(monkeypatch):
    open_tabs = {"tab-2"}
    monkeypatch.setattr("hierattn.app.visitors.connected", lambda session: session in open_tabs)
    sessions = visitors._Sessions()
    monkeypatch.setattr(visitors, "_sessions", lambda: sessions)
    sessions.seen("browser-a", "tab-1")
    sessions.seen("browser-a", "tab-2")
    assert visitors.present("browser-a")
    open_tabs.clear()
    assert not visitors.present("browser-a") and not visitors.present("browser-b")


def test_a_runs_link_opened_by_another_visitor_watches_and_cannot_cancel(train_env):
    jobs = train_form.job_manager()
    job = jobs.start(_job(train_env, "teachers-run", epochs=200), session="browser-teacher")
    try:
        at = AppTest.from_file(APP, default_timeout=60)
        at.query_params["job"] = job.id
        at.run()
        at.switch_page("pages/train.py").run()
        assert not at.exception
        assert any("of another visitor" in i.value and "Only the browser that started it" in i.value for i in at.info)
        assert not [b for b in at.button if b.key and b.key.startswith("cancel_")]
    finally:
        job.cancel()
        deadline = time.time() + 120
        while job.active and time.time() < deadline:
            time.sleep(0.2)
