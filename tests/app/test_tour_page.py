"""The Tour page, headless (AppTest): each step drawn and judged on tiny stand-ins for the shipped
checkpoints it names (``tests/tiny.py``: the same types, heads, branches, data sets and labels), and,
as a smoke case, step 4 on the shipped HAN and HCAN, whose documents are picked for being read
right. What a step says over a whole split comes from the recorded rates (results/tour.json)."""
import re

import pytest

from tests.app.test_pages import html_blocks, open_page
from tests.conftest import shown


def _tour_verdicts(at) -> list[str]:
    """The step's checks as a reader sees them: green where the claim holds, a warning where not."""
    return [shown(s.value) for s in at.success] + [shown(w.value) for w in at.warning]


@pytest.mark.parametrize("step", [1, 2, 3, 4, 5, 6])
def test_each_step_judges_its_claim_beside_its_null_and_the_splits_rate(step, stand_ins):
    """Each step's verdict stands apart from its figures, beside the null that keeps what its claim is
    not about, with the rate over the whole test split; where the rate is at chance, the step says so."""
    at = open_page("pages/tour.py", tour_step=step)
    verdicts = _tour_verdicts(at)
    assert len(verdicts) == (2 if step == 3 else 1)
    holds = [v.split("**")[1].endswith(" holds.") for v in verdicts]
    assert holds == [i < len(at.success) for i in range(len(verdicts))]  # green exactly where it holds
    assert all(v.startswith("**On this document,") for v in verdicts)
    assert not any("shown here" in v or "—" in v for v in verdicts)  # a verdict apart from its figures
    baseline = {1: "even spread", 2: "ways to split the 8 heads", 3: "each row's weights shuffled", 4: "even spread",
                5: "even spread", 6: "even:"}[step]
    assert all(baseline in v for v in verdicts)  # beside the null that keeps what the claim is not about
    rate = next(i.value for i in at.info if "How often it holds" in i.value)
    assert "test split" in rate and "%" in rate  # the rate over the whole split, beside the example
    assert html_blocks(at) or at.get("plotly_chart")
    if step == 1:  # judged per head, HCAN's spread-out target attention on bbc-news: said plainly, and why
        assert re.search(r"at least one head shows it on \d+ of 223", rate) and "Random heads" in rate
        assert any("What this says, and what it does not" in m.value for m in at.markdown)
    if step == 2:  # tweets-hcan's branches differ no more often than chance over the split: said so
        assert "1 in 35" in rate and any("no more often than chance" in m.value for m in at.markdown)
    if step == 6:  # the pre-trained encoder: its [CLS] sink and a positional head, beside the paper's BERT
        assert "[CLS]" in verdicts[0] and re.search(r"to the (previous|next) token", verdicts[0])
        assert any("Beside the paper" in m.value and "[SEP]" in m.value for m in at.markdown)
    if step == 4:  # HAN against HCAN: what the sweep of the start shows, when it is recorded
        assert any("Is it the architecture, or where training started?" in m.value for m in at.markdown) or any(
            "sweep of where the query vectors start is not recorded" in c.value for c in at.caption)


def test_a_steps_numbers_come_from_the_document(stand_ins):
    a = open_page("pages/tour.py", tour_step=4, tour4_doc=0)
    b = open_page("pages/tour.py", tour_step=4, tour4_doc=2)
    assert _tour_verdicts(a)[0] != _tour_verdicts(b)[0]


def test_the_shipped_han_and_hcan_read_the_documents_picked_for_them(monkeypatch):
    """The smoke case: step 4 on the shipped checkpoints offers documents chosen by their effect,
    among those both models classify correctly."""
    monkeypatch.delenv("HIERATTN_CHECKPOINTS", raising=False)
    at = open_page("pages/tour.py", tour_step=4)
    options = at.selectbox(key="tour4_doc").options
    assert [o.split(" effect")[0] for o in options[:3]] == ["strongest", "typical", "weakest"]
    from hierattn.analysis.tour import record
    from hierattn.experiments.results import RESULTS

    rates, _ = record.load(RESULTS / "tour.json")
    assert rates[4].documents == 3816 and rates[1].documents == 223  # the whole test splits
    labels = [m.value for m in at.markdown if m.value.startswith(("**HAN**", "**HCAN**"))]
    true_label = options[0].split(" · ")[1]
    assert labels and all(f"({true_label})" in label for label in labels)  # both models read it right


def test_step_7_plays_back_two_recorded_runs_on_the_same_document(monkeypatch):
    """Step 7 reads two recorded runs of the start sweep (results/<data set>/<row>/playback-seed-1.json)
    and shows them side by side at the chosen epoch; moving the slider shows that epoch's record."""
    from hierattn.app.panels.tour.attention_forming import recorded_runs

    runs = recorded_runs()
    assert len(runs) == 2 and float(runs[0][0].value) < float(runs[1][0].value)
    texts = [[d["text"] for d in record["documents"]] for _, record, _ in runs]
    assert texts[0] == texts[1]  # the same validation documents, chosen before training
    at = open_page("pages/tour.py", tour_step=7, tour7_epoch=0)
    said = shown(" ".join(m.value for m in at.markdown))
    assert "epoch 0 (the start)" in said and said.count("from v = ") >= 2
    start = [h.body for h in at.get("html")]
    last = len(runs[0][1]["epochs"]) - 1
    at = open_page("pages/tour.py", tour_step=7, tour7_epoch=last)
    assert f"epoch {last} · validation accuracy" in shown(" ".join(m.value for m in at.markdown))
    assert [h.body for h in at.get("html")] != start  # the shading moved with the epoch
    assert any("Accuracy and this document's sharpness" in str(c) for c in at.get("plotly_chart")) or at.get(
        "plotly_chart")
