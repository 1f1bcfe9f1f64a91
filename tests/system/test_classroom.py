"""A class on the shared server: three students at once paste a review, switch the model, open
"Can I trust this shading?" and go to Compare (``bench/classroom.py``; the bench runs 30 on a server
of its own and reports each step's latency). Every step of every session is answered, with no error
box, no JavaScript error, no white page and no traceback in the server's log."""
from __future__ import annotations

from bench.classroom import STEPS, run_classroom
from tests.system.conftest import SYSTEM

pytestmark = SYSTEM


def test_a_class_of_three_is_answered_without_an_error(served_app):
    figures = run_classroom(sessions=3, stagger=0.3, limit=900, served=served_app, models=("tiny-han", "tiny-hcan"))
    assert figures["errors"] == [], figures["errors"]
    assert figures["finished"] == 3 and figures["steps_answered"] == 3 * len(STEPS), figures
    assert figures["server_tracebacks"] == 0, figures
