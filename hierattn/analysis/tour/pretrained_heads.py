"""The Tour's step 6, a pre-trained transformer (Clark et al. 2019): the fine-tuned pre-trained
encoder has a head that attends to the previous or the next token and a layer that sinks on its
first token, each a share ``heads.MARGIN`` above an even spread over the same tokens
(``analysis.clark`` measures them)."""
from __future__ import annotations

from hierattn.analysis import clark, heads
from hierattn.analysis.tour.rates import Step


def _pretrained(ex):
    """(holds, effect): the best previous/next head and the layer that sinks most on the first
    token, each over its even spread; the effect is the weaker of the two, less the margin."""
    rows = clark.profile(ex)
    if not rows or rows[0]["first_special"] is None:
        return None
    positional = max(max(r["previous"] - r["previous_even"], r["next"] - r["next_even"]) for r in rows)
    sink = max(r["first special"] - r["first special_even"] for r in clark.by_layer(rows))
    return positional >= heads.MARGIN and sink >= heads.MARGIN, min(positional, sink) - heads.MARGIN


STEP = Step(6, "the pre-trained transformer has a head that attends to the previous or the next token and a layer that "
               "sinks on its first token ([CLS]), each a share 30 points above an even spread, as Clark et al. 2019 "
               "found in BERT (where the sink is [SEP])",
            ("tweets-minilm",), ("tweets",), check=_pretrained)
