"""A visitor is a browser (``hierattn.app.visitors``): two tabs hold one run's slot, a refresh keeps
a run its owner's, and a job's link opened in another browser watches the run but can neither
cancel it nor replace its checkpoint."""
from __future__ import annotations

import secrets
import time

import pytest
from starlette.requests import Request
from starlette.responses import Response
from streamlit.testing.v1 import AppTest
from streamlit.web.server.starlette import starlette_routes
from streamlit.web.server.starlette.starlette_app_utils import decode_xsrf_token_string, generate_xsrf_token_string

from hierattn.app import train_form, visitors
from tests.app.test_explore import APP
from tests.training.test_jobs import _job


def _page_load(cookie: str | None = None) -> str:
    """The XSRF cookie Streamlit's server sets on a page load that sent ``cookie`` (None: a browser's
    first visit), made by the server's own route code."""
    sent = [(b"cookie", f"{starlette_routes.XSRF_COOKIE_NAME}={cookie}".encode())] if cookie else []
    response = Response()
    starlette_routes._ensure_xsrf_cookie(Request({"type": "http", "method": "GET", "path": "/", "headers": sent}),
                                         response)
    [set_cookie] = [v.decode("latin-1") for k, v in response.raw_headers if k == b"set-cookie"]
    name, value = set_cookie.split(";")[0].split("=", 1)
    assert name == visitors.COOKIE
    return value


def test_every_load_of_one_browser_is_one_visitor_and_another_browser_another():
    first = _page_load()
    again, other = _page_load(first), _page_load()
    assert again != first  # Streamlit masks the token anew on each load
    assert visitors._token(first) == visitors._token(again) == decode_xsrf_token_string(first)[0]
    assert visitors._token(other) != visitors._token(first)
    mine, theirs = secrets.token_bytes(32), secrets.token_bytes(32)
    loads = generate_xsrf_token_string(mine), generate_xsrf_token_string(mine)
    assert visitors._token(loads[0]) == visitors._token(loads[1]) == mine
    assert visitors._token(generate_xsrf_token_string(theirs)) != mine
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


@pytest.mark.slow  # trains
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
