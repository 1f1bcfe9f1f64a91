"""Explore's per-document analyses report progress, so the app stops them when the tab that asked
closes (while erasure curves and sentence attributions passed no callback, one core stayed busy
21 s after 12 tabs closed)."""
from __future__ import annotations

import pytest

from hierattn.analysis.explain import explain
from hierattn.analysis.faithfulness import erasure_curves
from hierattn.analysis.shapley import sentence_table
from hierattn.checkpoint.reading import load_classifier

TEXT = ("The striker scored twice in the final. The crowd sang until midnight. "
        "The coach praised the defence. Fans queued for tickets all week.")


class Stop(Exception):
    pass


@pytest.mark.parametrize("analysis", ["erasure", "sentences"])
def test_a_per_document_analysis_stops_at_its_progress_report(checkpoint_dir, analysis):
    classifier = load_classifier(checkpoint_dir / "tiny-han", device="cpu")
    ex = explain(classifier, TEXT)
    seen = []

    def progress(done, total):
        seen.append((done, total))
        if done == 1:
            raise Stop

    run = (lambda p: erasure_curves(classifier, ex, progress=p)) if analysis == "erasure" else (
        lambda p: sentence_table(classifier, ex, p))
    with pytest.raises(Stop):
        run(progress)
    assert seen == [(1, seen[0][1])] and seen[0][1] >= 2  # stopped at the first report, not at the end
    counted = []
    run(lambda done, total: counted.append((done, total)))
    assert [d for d, _ in counted] == sorted(d for d, _ in counted) and counted[-1][0] <= counted[-1][1]
