"""The faithfulness battery's figures in words: ``verdict(row)`` reads one row of
``battery.DocumentBattery.rows()`` beside its baseline, for Explore's "Can I trust this shading?"."""
from __future__ import annotations

# How far a figure must be from its baseline before a one-document verdict calls it different: a
# reading aid for one document (one draw), not a finding; the split table gives intervals.
MARGIN = {"comprehensiveness": 0.01, "sufficiency": 0.01, "kendall": 0.1}
SMALL_CHANGE, LARGE_CHANGE = 0.01, 0.1  # output changes (total variation, 0..1)


# captum's rankings, in a row's test name: references to read the attention against, not the attention
# (a Kendall tau "with integrated gradients" is the attention's agreement with them: the attention's row)
ATTRIBUTION_MARKS = ("(integrated gradients)", "(occlusion of", "(KernelSHAP")


def is_attribution(row: dict) -> bool:
    """A row that scores captum's ranking (Integrated Gradients, occlusion, KernelSHAP), not the attention."""
    return any(mark in row["test"] for mark in ATTRIBUTION_MARKS)


def summary(rows: list[dict]) -> str:
    """One line for the attention itself, before its tests: of its comparative tests (ERASER and
    Kendall tau, captum's rows left out), how many beat random, and how many of those with a
    structural null beat that too."""
    own = [r for r in rows if not is_attribution(r)
           and r["test"].startswith(("comprehensiveness", "sufficiency", "Kendall"))]
    judged = [(r, verdict(r)) for r in own if r["value"] is not None and r["baseline"] is not None]
    if not judged:
        return "No test here compares the attention's own ranking with a baseline."
    beats = sum(v.startswith("beats random") for _, v in judged)
    with_null = [(r, v) for r, v in judged if r.get("structural") is not None]
    line = f"The attention's ranking beats random in {beats} of its {len(judged)} tests"
    if with_null:
        both = sum(v == "beats random" for _, v in with_null)
        line += f", and its null (sentence attention × even words) in {both} of {len(with_null)}"
    worse = sum(v == "worse than random" for _, v in judged)
    return line + (f"; it is worse than random in {worse}." if worse else ".")


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
            return "beats random"
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
