"""A visitor's uploaded documents are theirs: a Train-page run on a data set of their own
keeps its held-out documents marked as its visitor's, and no other session is offered them (a CSV
of patient records appeared in everyone's Explore), unless the visitor shared them."""
from __future__ import annotations

import json
import time

import pytest

from hierattn.app import samples, train_form, visitors
from hierattn.app.run_policy import JobManager
from hierattn.data.dataset import Dataset
from hierattn.data.text import TextConfig
from hierattn.training.jobs import make_job
from hierattn.training.loop import TrainConfig

CANARY = "Patient record CANARY-PRIVATE-{:04d}: Jane Roe, born 1961, was seen on Monday and is doing well."


def _dataset() -> Dataset:
    texts = [CANARY.format(i) + (" Stable." if i % 2 else " Worse.") for i in range(60)]
    return Dataset("records", texts, [i % 2 for i in range(60)], ["stable", "worse"])


def _trained(manager: JobManager, tmp_path, name: str, session: str | None, share: bool = False):
    job = make_job(name, tmp_path, "tfidf", {"classifier": "nb"}, _dataset(), TextConfig(4, 20),
                   TrainConfig(epochs=1, min_freq=1), device="cpu")
    manager.start(job, session=session, share_heldout=share)
    deadline = time.time() + 240
    while job.active and time.time() < deadline:
        time.sleep(0.2)
    assert job.status == "finished", job.message
    return tmp_path / name


@pytest.mark.slow  # trains
def test_a_visitors_held_out_documents_are_shown_to_that_visitor_only(tmp_path, monkeypatch):
    manager = JobManager(present=lambda session: True)
    monkeypatch.setattr(train_form, "job_manager", lambda: manager)
    mine = _trained(manager, tmp_path, "records-private", "visitor-a")
    shared = _trained(manager, tmp_path, "records-shared", "visitor-a", share=True)
    command_line = _trained(manager, tmp_path, "records-cli", None)
    assert json.loads((mine / "heldout.json").read_text())["private"] is True
    assert json.loads((shared / "heldout.json").read_text())["private"] is False
    assert json.loads((command_line / "heldout.json").read_text())["private"] is False
    for session, sees_mine in (("visitor-a", True), ("visitor-b", False)):
        monkeypatch.setattr(visitors, "session_id", lambda visitor=session: visitor)
        kept = samples.heldout(mine)
        assert bool(kept) is sees_mine, session
        assert not sees_mine or "CANARY-PRIVATE" in kept["test"][0][0]
        assert samples.heldout(shared) and samples.heldout(command_line)  # shared: everyone sees them
        assert bool(samples.heldout_samples(mine, "records")) is sees_mine  # Explore's sample picker
