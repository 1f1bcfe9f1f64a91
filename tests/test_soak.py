"""The soak of issue 22 (``bench/soak.py``), bounded for CI: a served app, sessions that paste a
document of 200,000 one-word lines and a hostile one, start the Dataset statistics and open a
checkpoint beyond the limits, then leave mid-computation, while another session switches models
and a training run trains beside the server. The bench reports the same figures."""
from __future__ import annotations

import pytest

from tests.conftest import require_browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]
IDLE_WITHIN_S = 15  # the server's CPU is back to idle this soon after the visitors left (measured: about 1 s)
RSS_GROWTH_MB = 500  # its resident memory is within this of its start (measured: 110-300 MB)


def test_the_server_holds_up_and_comes_back_to_rest(tmp_path):
    require_browser("soak")
    from bench.soak import run_soak

    figures = run_soak(tmp_path, rounds=2)
    log = figures.pop("server_log_tail")
    assert figures["warm"] and figures["answered"], figures  # every session that stayed got its answer
    assert figures["refused_the_huge_checkpoint"], figures
    assert figures["seconds_to_idle"] is not None and figures["seconds_to_idle"] <= IDLE_WITHIN_S, figures
    assert figures["rss_growth_mb"] <= RSS_GROWTH_MB, figures
    assert figures["checkpoints_intact"] and figures["training_exit_code"] == 0, figures
    assert figures["server_exit_seconds"] <= 15, figures  # Ctrl-C during the run's last moments
    assert "Traceback" not in log and "terminate called" not in log, log
