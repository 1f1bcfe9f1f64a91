"""A class on one server (issue 30), reduced for CI: 8 students at once paste a review, switch the
model, open "Can I trust this shading?" and go to Compare (``bench/classroom.py``; the bench runs
30 and BENCHMARKS.md has their figures). Every step of every session is answered, with no error
box, no JavaScript error, no white page and no traceback in the server's log."""
from __future__ import annotations

import pytest

from tests.conftest import require_browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_class_of_eight_is_answered_without_an_error():
    require_browser("classroom load test")
    from bench.classroom import STEPS, run_classroom

    figures = run_classroom(sessions=8, stagger=0.3, limit=600)
    assert figures["errors"] == [], figures["errors"]
    assert figures["finished"] == 8 and figures["steps_answered"] == 8 * len(STEPS), figures
    assert figures["server_tracebacks"] == 0, figures
    # Liveness, not speed: a step counts as answered only within bench.classroom.SETTLE_TIMEOUT (300 s),
    # so a stuck class fails above. How fast it is answered is the bench's to report (BENCHMARKS.md):
    # the same class's p95 was 94 s alone and 268 s inside the whole suite on the same 2 cores.
    assert figures["p95_s"] is not None, figures
