"""A server of its own, in the full suite: a fresh server's first visitor, and Ctrl-C while it
computes."""
import pytest

from bench.served import start_server
from tests.system.conftest import END_TO_END, EXIT_WITHIN_S

pytestmark = END_TO_END


def test_a_fresh_servers_first_visitor_opens_a_shared_link_and_ctrl_c_stops_it(stand_in_checkpoints, browser):
    """A shared link to Dataset statistics, opened by a fresh server's first visitor, once showed
    "Page not found" before the page: that first run is served in the pages-folder mode
    (app/routing.py), which knows a page by its file's name. Every page's file name is now its URL
    path. Then Ctrl-C while the page computes a split's statistics: the server stops, its threads
    with it. A server of its own (the first visit is the point), on the Tour's tiny stand-ins: the
    page opens on bbc-news-hcan and starts its statistics at once."""
    import os
    import signal
    import subprocess

    env = {**os.environ, "HIERATTN_CHECKPOINTS": str(stand_in_checkpoints), "HIERATTN_SHIPPED": "0"}
    server, url = start_server(env, limit=300)
    try:
        page = browser.new_page(viewport={"width": 1024, "height": 900})
        page.goto(f"{url}/statistics")
        page.get_by_role("heading", name="Attention statistics over a data set").wait_for(timeout=240_000)
        assert "Page not found" not in page.content()
        # the page starts the default model's statistics over its test split at once
        page.locator("[data-testid=stProgress]").first.wait_for(timeout=240_000)
        server.send_signal(signal.SIGINT)
        try:
            server.wait(EXIT_WITHIN_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the server did not stop within {EXIT_WITHIN_S} s of Ctrl-C while it computed")
        page.close()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    log = server.stderr.read().decode(errors="replace")
    assert "Traceback" not in log and "terminate called" not in log, log[-3000:]
