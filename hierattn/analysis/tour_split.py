"""How often each Tour claim holds over a whole test split, and which documents show it best,
typically and worst: one document chosen for its effect would hide the rate, so the Tour shows the
rate beside it, and lets the reader open a typical document and one where the claim fails.

Each step's check is the one ``analysis.tour`` makes on one document (against the null its docstring
gives for that step); here it runs on every test document. ``record`` writes the
figures to ``results/tour.json`` (``python -m hierattn tour``) with a digest of each checkpoint's
content; the Tour page reads them, and says so when the file is missing or a checkpoint's content
changed since.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from hierattn.analysis import clark, heads, tour
from hierattn.analysis.explain import ExplainError, explain
from hierattn.checkpoint import Classifier

# The step -> (the claim in a sentence, the checkpoints and data set it is checked on)
CLAIMS = {
    1: ("a few words carry most of the document's weight in some head (its top 10% of words hold over half of "
        "the head's weight, 20 points more than an even spread)",
        ("bbc-news-hcan",), "bbc-news"),
    2: ("the two self-attention branches relate a word to different words (their heads differ more than under "
        "any other split of the heads, p <= 0.05, and most words' top word differs)",
        ("tweets-hcan",), "tweets"),
    3: ("sentiment attention is band-diagonal and topic attention columnar (each beyond its rows' weights "
        "shuffled among their keys)",
        ("tweets-sanet", "bbc-news-sanet"), "tweets and bbc-news"),
    4: ("the shipped HAN's word weights are more focused than the shipped HCAN's (Gini at least 0.2 higher on the "
        "same document; how focused each is follows where its query vector started, not the architecture)",
        ("tweets-han", "tweets-hcan"), "tweets"),
    5: ("some head of the transformer attends by position or to special tokens (a share 30 points above an even "
        "spread, as Clark et al. 2019 found in BERT)",
        ("tweets-transformer",), "tweets"),
    6: ("the pre-trained transformer has a head that attends to the previous or the next token and a layer that "
        "sinks on its first token ([CLS]), each a share 30 points above an even spread, as Clark et al. 2019 found "
        "in BERT (where the sink is [SEP])",
        ("tweets-minilm",), "tweets"),
}
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

    @property
    def rate(self) -> float:
        return self.holds / self.documents if self.documents else 0.0


def _picks(effects: list[float], correct: list[bool], holds: list[bool] | None = None,
           clean: list[bool] | None = None) -> tuple[dict[str, int], dict[str, float]]:
    """The documents to show: among the clean ones classified correctly (or, failing that, the clean
    ones, then all), the median and the smallest effect, and the largest among those where the claim
    holds (none when it holds on none: the page then says no document of the split makes the point)."""
    everyone = list(range(len(effects)))
    clean = clean if clean is not None else [True] * len(effects)
    pool = ([i for i in everyone if correct[i] and clean[i]] or [i for i in everyone if clean[i]] or everyone)
    order = sorted(pool, key=lambda i: -effects[i])
    chosen = {"typical": order[len(order) // 2], "weakest": order[-1]}
    holding = [i for i in order if holds is None or holds[i]]
    if holding:
        chosen = {"strongest": holding[0], **chosen}
    return chosen, {k: effects[i] for k, i in chosen.items()}


def _loop(texts: list[str], truth: list[str], models: list[Classifier], check: Callable,
          progress: Callable[[int, int], None] | None = None):
    """(holds, effect, correct) per readable document: ``check(*explanations) -> (holds, effect)``."""
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


def _rate(step: int, dataset: str, rows, kept) -> StepRate:
    if not rows:
        return StepRate(step, CLAIMS[step][0], dataset, 0, 0)
    picks, effects = _picks([r[1] for r in rows], [r[2] for r in rows], [bool(r[0]) for r in rows],
                            [r[3] for r in rows])
    return StepRate(step, CLAIMS[step][0], dataset, len(rows), sum(r[0] for r in rows),
                    {k: kept[i] for k, i in picks.items()}, effects)


def _concentrated(ex):
    c = tour.concentration(ex)
    if c is None:
        return None
    return c.focused, (c.effect, len(c.head_top_shares), len(c.focused_heads), c.averaged_focused,
                       c.random_focused or 0.0)


def _branches(ex):
    c = tour.branch_contrast(ex)
    return None if c is None else (c.different, c.effect)


def _han_against_hcan(han, hcan):
    a, b = tour.concentration(han), tour.concentration(hcan)
    if a is None or b is None:
        return None
    holds, _ = tour.han_hcan_verdict(a, b)
    return holds, a.head_gini - b.head_gini


def _patterned(ex):
    rows = heads.overview(ex)
    if not rows:
        return None
    best = max((heads.excess(r, p) for r in rows for p in heads.PATTERNS if heads.excess(r, p) is not None),
               default=0.0)
    return any(r["finding"] for r in rows), best - heads.MARGIN


def _pretrained(ex):
    """Step 6: (holds, effect): the best previous/next head and the layer that sinks most on the first
    token, each over its even spread; the effect is the weaker of the two, less the margin."""
    rows = clark.profile(ex)
    if not rows or rows[0]["first_special"] is None:
        return None
    positional = max(max(r["previous"] - r["previous_even"], r["next"] - r["next_even"]) for r in rows)
    sink = max(r["first special"] - r["first special_even"] for r in clark.by_layer(rows))
    return positional >= heads.MARGIN and sink >= heads.MARGIN, min(positional, sink) - heads.MARGIN


def step_rate(step: int, models: list[Classifier], split: dict[str, tuple[list[str], list[str]]],
              progress=None) -> StepRate:
    """Step ``step``'s check on every document of ``split`` ({data set: (texts, true labels)})."""
    if step in (5, 6):
        (dataset, (texts, truth)), = split.items()
        return _rate(step, dataset, *_loop(texts, truth, models, _patterned if step == 5 else _pretrained, progress))
    if step == 1:
        (dataset, (texts, truth)), = split.items()
        rows, kept = _loop(texts, truth, models, _concentrated, progress)
        rate = _rate(step, dataset, [(h, e[0], ok, clean) for h, e, ok, clean in rows], kept)
        rate.parts = {"per head": [sum(r[1][1] for r in rows), sum(r[1][2] for r in rows)],
                      "heads averaged": [len(rows), sum(r[1][3] for r in rows)],
                      "random heads": [len(rows) * tour.RANDOM_HEADS,
                                       round(sum(r[1][4] for r in rows) * tour.RANDOM_HEADS)]}
        return rate
    if step == 2:
        (dataset, (texts, truth)), = split.items()
        return _rate(step, dataset, *_loop(texts, truth, models, _branches, progress))
    if step == 4:
        (dataset, (texts, truth)), = split.items()
        return _rate(step, dataset, *_loop(texts, truth, models, _han_against_hcan, progress))
    return _sanet_rate(models, split, progress)


def _sanet_rate(models: list[Classifier], split, progress) -> StepRate:
    """Step 3: each tweet's matrix more diagonal than its rows shuffled, each article's more columnar,
    and the claim as the Tour checks it on a pair: a (tweet, article) pair holds when both sides do
    and the tweet is further towards a band than the article, the article further towards columns."""
    sides = {}
    for model, (dataset, (texts, truth)), kind in zip(models, split.items(), ("diagonal", "columnar")):
        def check(ex, kind=kind):
            shape = tour.matrix_shape(ex, ex.self_attention_names[0]) if ex.self_attention_names else None
            if shape is None:
                return None
            if kind == "diagonal":
                return shape.diagonal_beyond_random, (shape.diagonality_b3 - shape.random_diagonality_b3,
                                                      shape.band, shape.columns)
            return shape.columnar_beyond_random, (shape.columnar - shape.random_columnar, shape.band, shape.columns)
        sides[kind] = (dataset, *_loop(texts, truth, [model], check, progress))
    (tweets, rows_t, kept_t), (articles, rows_a, kept_a) = sides["diagonal"], sides["columnar"]
    band_a, cols_a = np.array([r[1][1] for r in rows_a]), np.array([r[1][2] for r in rows_a])
    ok_a = np.array([r[0] for r in rows_a], dtype=bool)
    # pairs where the tweet is diagonal beyond random and further towards a band than the article,
    # and the article is columnar beyond random and further towards columns than the tweet
    pairs = int(sum(((band > band_a) & ok_a & (cols_a > cols)).sum()
                    for holds, (_, band, cols), _, _ in rows_t if holds))
    picks_t, effects_t = _picks([r[1][0] for r in rows_t], [r[2] for r in rows_t], [bool(r[0]) for r in rows_t],
                                [r[3] for r in rows_t])
    picks_a, effects_a = _picks([r[1][0] for r in rows_a], [r[2] for r in rows_a], [bool(r[0]) for r in rows_a],
                                [r[3] for r in rows_a])
    return StepRate(3, CLAIMS[3][0], f"{tweets} and {articles}", len(rows_t) * len(rows_a), pairs,
                    {**{f"tweet {k}": kept_t[i] for k, i in picks_t.items()},
                     **{f"article {k}": kept_a[i] for k, i in picks_a.items()}},
                    {**{f"tweet {k}": v for k, v in effects_t.items()},
                     **{f"article {k}": v for k, v in effects_a.items()}},
                    {"tweets diagonal": [len(rows_t), int(sum(r[0] for r in rows_t))],
                     "articles columnar": [len(rows_a), int(sum(r[0] for r in rows_a))]})


CHECKPOINT_FILES = ("config.json", "model.safetensors", "vocab.json", "tokenizer.json")


def checkpoint_digest(folder: Path) -> str:
    """A digest of a checkpoint's content (its config, weights and vocabulary), the stamp its
    recorded rates carry: a fresh clone or a copy keeps it, where file times change on every checkout."""
    import hashlib

    digest = hashlib.sha256()
    for name in CHECKPOINT_FILES:
        path = Path(folder) / name
        if path.exists():
            digest.update(name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def save(rates: dict[int, StepRate], stamps: dict[str, str], path: Path) -> None:
    """Write the rates with the digests of the checkpoints they were computed from."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"checkpoints": stamps, "steps": {str(k): asdict(v) for k, v in rates.items()}}
    tmp = path.with_suffix(".json.part")
    tmp.write_text(json.dumps(payload, indent=1))
    tmp.replace(path)


def load(path: Path) -> tuple[dict[int, StepRate], dict[str, str]]:
    """The recorded rates and the checkpoint digests they were computed from ({} when none)."""
    try:
        payload = json.loads(path.read_text())
        steps = {int(k): StepRate(**v) for k, v in payload["steps"].items()}
        return steps, payload.get("checkpoints", {})
    except (OSError, ValueError, KeyError, TypeError):
        return {}, {}


def sentence(rate: StepRate) -> str:
    """The rate in words, for the Tour."""
    if not rate.documents:
        return "Over the test split: no document could be checked."
    if rate.step == 3:
        tweets, articles = rate.parts["tweets diagonal"], rate.parts["articles columnar"]
        return (f"Over the test splits: {tweets[1]:,} of {tweets[0]:,} tweets ({tweets[1] / tweets[0]:.0%}) are more "
                f"diagonal than their rows shuffled among their keys, {articles[1]:,} of {articles[0]:,} articles "
                f"({articles[1] / articles[0]:.0%}) more columnar, and the claim holds for {rate.rate:.1%} of "
                f"(tweet, article) pairs. Where the claim is false, about 5% pass each side by chance.")
    if rate.step == 1 and rate.parts:
        heads, averaged = rate.parts["per head"], rate.parts["heads averaged"]
        random = rate.parts.get("random heads", [0, 0])
        return (f"Over the whole {rate.dataset} test split, at least one head shows it on {rate.holds:,} of "
                f"{rate.documents:,} documents ({rate.rate:.0%}); {heads[1]:,} of {heads[0]:,} (document, head) pairs "
                f"({heads[1] / max(heads[0], 1):.1%}); with the heads averaged, {averaged[1]:,} documents. Random "
                f"heads of the same documents' shapes pass {random[1] / max(random[0], 1):.0%} of the time.")
    if rate.step == 2:
        return (f"Over the whole {rate.dataset} test split, the claim holds on {rate.holds:,} of {rate.documents:,} "
                f"documents ({rate.rate:.1%}). Where the branch labels carry nothing (4 + 4 heads: 35 splits), it "
                f"holds on at most 1 in 35 (2.9%) by chance, the smallest p-value 35 splits allow.")
    return (f"Over the whole {rate.dataset} test split, the claim holds on {rate.holds:,} of {rate.documents:,} "
            f"documents ({rate.rate:.0%}).")
