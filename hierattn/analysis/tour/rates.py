"""How often each Tour claim holds over a whole test split, and which documents show it best,
typically and worst: one document chosen for its effect would hide the rate, so the Tour shows the
rate beside it, and lets the reader open a typical document and one where the claim fails.

Each step declares itself once, in its own module (``Step``: its claim, the shipped checkpoints and
test splits it is checked on, and the check it makes on one document, against the null its module
gives); here that check runs on every test document. ``record`` keeps the rates.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from hierattn.analysis.explain import ExplainError, explain
from hierattn.checkpoint.classifier import Classifier

PICKS = ("strongest", "typical", "weakest")
MAX_UNKNOWN = 0.1  # a showcase document: at most this share of its words unknown to the model(s)
_URL = re.compile(r"https?://|www\.|\bt\.co/", re.IGNORECASE)
# UTF-8 read as Latin-1 ("â€™", "äó"), broken emoji ("_ôÖš"), the replacement character: two
# non-ASCII characters in a row, or one after an underscore, in text that is otherwise English
_MOJIBAKE = re.compile("[\u0080-\uffff]{2,}|_[\u0080-\uffff]|\ufffd")


MIN_WORDS = 8  # a showcase document has something to read
# words a teacher would not put on a class's screen (a short list; a document with one is not offered)
_PROFANE = re.compile(r"\b(fuck|shit|bullshit|bitch|asshole|cunt|nigg|whore|slut|bastard|dick|pussy|wtf|stfu)\w*",
                      re.IGNORECASE)


def readable(text: str) -> bool:
    """A document to put before a class: no web address, no mojibake (UTF-8 read as Latin-1, such as
    "äó" or "â€™", or the replacement character), no @username, at least ``MIN_WORDS`` words and at
    most two hashtags (a string of tags is not a sentence), no profanity."""
    words = text.split()
    return not (_URL.search(text) or _MOJIBAKE.search(text) or re.search(r"@\w", text) or _PROFANE.search(text)
                or len(words) < MIN_WORDS or sum(w.startswith("#") for w in words) > 2)


@dataclass
class StepRate:
    """One step's check over a split: how many documents it holds on, and three to show."""

    step: int
    claim: str
    dataset: str
    documents: int  # documents checked (those the model(s) could read)
    holds: int
    # pick -> index into the split's documents: the largest effect, the median, the smallest, each
    # among the clean documents (``readable``, few unknown words) the model(s) classify correctly
    # where possible (a misread document teaches the wrong lesson); "strongest" only among those
    # where the claim holds, absent when it holds on none of them
    picks: dict[str, int] = field(default_factory=dict)
    effects: dict[str, float] = field(default_factory=dict)  # pick -> its effect (figure minus its bar)
    # step 1: "per head" and "heads averaged"; step 3: per side; each [count, holds]
    parts: dict[str, list[int]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # pick -> the data set its index is into

    def showcased(self) -> dict[str, set[int]]:
        """Data set -> the indices of its test documents this step offers (no other step offers them)."""
        out: dict[str, set[int]] = {}
        for pick, index in self.picks.items():
            out.setdefault(self.sources.get(pick, self.dataset), set()).add(index)
        return out

    @property
    def rate(self) -> float:
        return self.holds / self.documents if self.documents else 0.0


def pick_documents(effects: list[float], correct: list[bool], holds: list[bool] | None = None,
                   clean: list[bool] | None = None, taken: list[bool] | None = None
                   ) -> tuple[dict[str, int], dict[str, float]]:
    """The documents to show: among the clean ones classified correctly (or, failing that, the clean
    ones, then all), the median and the smallest effect, and the largest among those where the claim
    holds (none when it holds on none: the page then says no document of the split makes the point).
    ``holds`` may be stricter than the rate's check where a showcase must also look like the claim
    (step 3's band must read as a band). Documents ``taken`` by an earlier step are never offered:
    one document showing two steps' claims would teach that they are one finding."""
    everyone = [i for i in range(len(effects)) if taken is None or not taken[i]]
    clean = clean if clean is not None else [True] * len(effects)
    pool = ([i for i in everyone if correct[i] and clean[i]] or [i for i in everyone if clean[i]] or everyone)
    if not pool:  # every document is offered by an earlier step (a few-document budget)
        return {}, {}
    order = sorted(pool, key=lambda i: -effects[i])
    chosen = {"typical": order[len(order) // 2], "weakest": order[-1]}
    holding = [i for i in order if holds is None or holds[i]]
    if holding:
        chosen = {"strongest": holding[0], **chosen}
    return chosen, {k: effects[i] for k, i in chosen.items()}


def check_each_document(texts: list[str], truth: list[str], models: list[Classifier], check: Callable,
                        progress: Callable[[int, int], None] | None = None):
    """(holds, effect, correct, clean) per document the models read, and its index into ``texts``:
    ``check(*explanations) -> (holds, effect)``, or None where the document cannot be checked."""
    rows, kept = [], []
    for i, text in enumerate(texts):
        try:
            exs = [explain(m, text) for m in models]
        except ExplainError:
            continue
        result = check(*exs)
        if result is not None:
            holds, effect = result
            clean = readable(text) and all(ex.unknown_count <= MAX_UNKNOWN * ex.word_count() for ex in exs)
            rows.append((holds, effect, all(ex.label == truth[i] for ex in exs), clean))
            kept.append(i)
        if progress:
            progress(i + 1, len(texts))
    return rows, kept


def taken_rows(kept: list[int], taken: set[int] | None) -> list[bool]:
    """Per checked document (``kept``: its index into the split), whether an earlier step offers it."""
    return [i in (taken or set()) for i in kept]


def tally(step: Step, dataset: str, rows, kept, taken: set[int] | None = None) -> StepRate:
    """``check_each_document``'s rows as the step's rate, with the documents it offers (none of
    ``taken``, the split indices earlier steps offer)."""
    if not rows:
        return StepRate(step.number, step.claim, dataset, 0, 0)
    picks, effects = pick_documents([r[1] for r in rows], [r[2] for r in rows], [bool(r[0]) for r in rows],
                                    [r[3] for r in rows], taken_rows(kept, taken))
    return StepRate(step.number, step.claim, dataset, len(rows), sum(r[0] for r in rows),
                    {k: kept[i] for k, i in picks.items()}, effects)


def plain_sentence(rate: StepRate) -> str:
    """The rate in words, where a step has nothing more to say of it."""
    return (f"Over the whole {rate.dataset} test split, the claim holds on {rate.holds:,} of {rate.documents:,} "
            f"documents ({rate.rate:.0%}).")


@dataclass(frozen=True)
class Step:
    """One Tour step as a test split checks it, declared once in the step's module.

    ``check(*explanations)``: one document read by each of ``checkpoints``, in order, ->
    (holds, effect), or None where it cannot be checked; the rate counts the documents it holds on.
    ``over_split(step, models, split, progress, taken)``: for a step whose rate is more than that count
    (step 1 also counts heads; step 3 pairs a tweet with an article), the rate itself.
    ``said(rate)``: the rate in words, where ``plain_sentence`` is not enough."""

    number: int
    claim: str  # the claim in a sentence, with the bar the check sets
    checkpoints: tuple[str, ...]  # the shipped checkpoints it is checked on
    datasets: tuple[str, ...]  # the test splits it reads, in the order ``over_split`` reads them
    check: Callable | None = None
    over_split: Callable | None = None
    said: Callable[[StepRate], str] = plain_sentence

    def rate(self, models: list[Classifier], split: dict[str, tuple[list[str], list[str]]],
             progress=None, taken: dict[str, set[int]] | None = None) -> StepRate:
        """The check on every document of ``split`` ({data set: (texts, true labels)}), offering
        none of the documents ``taken`` ({data set: split indices}) by earlier steps."""
        taken = taken or {}
        if self.over_split is not None:
            return self.over_split(self, models, split, progress, taken)
        (dataset, (texts, truth)), = split.items()
        return tally(self, dataset, *check_each_document(texts, truth, models, self.check, progress),
                     taken.get(dataset))

    def sentence(self, rate: StepRate) -> str:
        """The rate in words, for the Tour."""
        return self.said(rate) if rate.documents else "Over the test split: no document could be checked."
