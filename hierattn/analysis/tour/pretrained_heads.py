"""The Tour's step 6, a pre-trained transformer (Clark et al. 2019): the fine-tuned pre-trained
encoder has a head that attends to the previous or the next token and a layer that sinks on its
first token, each a share ``heads.MARGIN`` above an even spread over the same tokens
(``analysis.clark`` measures them).

The step's bar (30 points above even) is ours; Clark et al.'s own is over half of the attention.
Beside the rate the record counts the documents where each habit passes the paper's bar, so the
Tour says how often the sink is as strong as the paper's (``SINK_BAR``), not only that one exists."""
from __future__ import annotations

from hierattn.analysis import clark, heads
from hierattn.analysis.tour.rates import Step, StepRate, check_each_document, tally

SINK_BAR = 0.5  # Clark et al.: over half of a head's (here: a layer's heads') attention on one token


def _pretrained(ex):
    """(holds, effect): the best previous/next head and the layer that sinks most on the first
    token, each over its even spread; the effect is the weaker of the two, less the margin."""
    rows = clark.profile(ex)
    if not rows or rows[0]["first_special"] is None:
        return None
    positional = max(max(r["previous"] - r["previous_even"], r["next"] - r["next_even"]) for r in rows)
    sink = max(r["first special"] - r["first special_even"] for r in clark.by_layer(rows))
    return positional >= heads.MARGIN and sink >= heads.MARGIN, min(positional, sink) - heads.MARGIN


def papers_bar(ex) -> tuple[bool, bool] | None:
    """(a head gives over half of its attention to the previous or the next token, the best layer's
    heads give over half of theirs to the first token on average): Clark et al.'s bar."""
    rows = clark.profile(ex)
    if not rows or rows[0]["first_special"] is None:
        return None
    positional = max(max(r["previous"], r["next"]) for r in rows)
    sink = max(r["first special"] for r in clark.by_layer(rows))
    return positional > SINK_BAR, sink > SINK_BAR


def _with_papers_bar(ex):
    found = _pretrained(ex)
    return None if found is None else (found[0], (found[1], papers_bar(ex)))


def _over_split(step: Step, models, split, progress, taken) -> StepRate:
    """The step's rate, and beside it how many documents pass Clark et al.'s own bar for each habit."""
    (dataset, (texts, truth)), = split.items()
    rows, kept = check_each_document(texts, truth, models, _with_papers_bar, progress)
    rate = tally(step, dataset, [(h, e[0], ok, clean) for h, e, ok, clean in rows], kept, taken.get(dataset))
    rate.parts = {"positional head over half": [len(rows), sum(e[1][0] for _, e, _, _ in rows)],
                  "sink over half": [len(rows), sum(e[1][1] for _, e, _, _ in rows)]}
    return rate


def _said(rate: StepRate) -> str:
    out = (f"Over the whole {rate.dataset} test split, both hold 30 points above an even spread on {rate.holds:,} "
           f"of {rate.documents:,} documents ({rate.rate:.0%}).")
    if "sink over half" in rate.parts:
        positional, sink = rate.parts["positional head over half"], rate.parts["sink over half"]
        out += (f" At Clark et al.'s own bar, over half of the attention: a head on the previous or the next token "
                f"on {positional[1]:,} ({positional[1] / max(positional[0], 1):.0%}), the best layer's heads on "
                f"the first token on {sink[1]:,} ({sink[1] / max(sink[0], 1):.0%}).")
    return out


STEP = Step(6, "the pre-trained transformer has a head that attends to the previous or the next token and a layer that "
               "sinks on its first token ([CLS]), each a share 30 points above an even spread, as Clark et al. 2019 "
               "found in BERT (where the sink is [SEP])",
            ("tweets-minilm",), ("tweets",), over_split=_over_split, said=_said)
