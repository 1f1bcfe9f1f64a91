"""The faithfulness battery's figures in words: ``verdict(row)`` reads one row of
``battery.DocumentBattery.rows()`` beside its baseline, for Explore's "Can I trust this shading?"."""
from __future__ import annotations

# How far a figure must be from its baseline before a one-document verdict calls it different: a
# reading aid for one document (one draw), not a finding; the split table gives intervals.
MARGIN = {"comprehensiveness": 0.01, "sufficiency": 0.01, "kendall": 0.1}
SMALL_CHANGE, LARGE_CHANGE = 0.01, 0.1  # output changes (total variation, 0..1)


def verdict(row: dict) -> str:
    """A row of ``DocumentBattery.rows()`` in words: what the figure says beside its baseline."""
    test, value, base = row["test"], row["value"], row["baseline"]
    if value is None:
        return "cannot be computed"
    if test.startswith(("comprehensiveness", "sufficiency", "Kendall")):
        if base is None:
            return "no baseline"
        kind = "kendall" if test.startswith("Kendall") else test.split(" ")[0]
        def gap(other):
            return (other - value) if kind == "sufficiency" else (value - other)  # sufficiency: lower is better

        if gap(base) > MARGIN[kind]:
            structural = row.get("structural")  # a hierarchical model's words: its sentence attention x even words
            if structural is not None and gap(structural) <= MARGIN[kind]:
                return "beats random, not sentence attention × even words"
            return "agrees more than random" if kind == "kendall" else "beats random"
        if gap(base) < -MARGIN[kind] and kind != "kendall":
            return "worse than random"
        return "no better than random"
    if test == "permutation":
        return ("the weights' order does not matter" if value < SMALL_CHANGE else
                "the weights' order matters" if value > LARGE_CHANGE else "a small effect")
    if test.startswith("uniform attention"):
        # An intervention at inference, not Wiegreffe & Pinter's test (they train a model whose
        # attention is frozen to uniform): it says whether this model relies on its weights as
        # trained, not whether attention is needed for the task.
        if "predicts" in test:
            return "an even spread at inference flips it"
        return ("an even spread at inference barely moves it" if value < SMALL_CHANGE else
                "output moves, prediction stays" if value > LARGE_CHANGE else "a small effect")
    if test == "adversarial attention":
        if base is None:
            return "no baseline"
        return ("other attention, same output" if value > base else
                "no far-off attention found")
    return ""
