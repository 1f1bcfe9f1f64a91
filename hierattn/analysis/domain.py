"""Is this document like the ones the model was trained on? Two signals, each judged against the
model's own test documents.

A model answers every text, so a restaurant review read by a news classifier comes back "sport
84%" with the same confidence styling as a news article. Neither signal below is proof; each is a
figure beside what the model's in-domain documents give:

- **rare words**: the share of the document's words (those with a letter) that the model does
  not know or that sit in the rarer half of its vocabulary (the vocabulary is sorted by training
  frequency, so the rarer half holds words seen a handful of times). Catches a text in another
  register, e.g. a news article read by a tweet model.
- **prediction entropy** (nats): how undecided the prediction is. Catches a text the model knows
  the words of but cannot place, e.g. a tweet read by a news model.

Null: the test split's documents (for the share of rare words, those of about the document's
length: ``DomainReference.rare_null``). Not the validation split's: training picked its epoch by
validation accuracy, so the model is surer there than on new text (at 2.5%, validation entropies
flagged 4.6% of tweets-hcan's test tweets). A pasted document is new text, like the test split. A
figure's p-value is (1 + null values at or above it) / (1 + null values). The document is flagged
when either p-value is at most 0.025, so that an in-domain document is flagged at most about 5% of
the time (Bonferroni over the two). Measured on the shipped checkpoints, half the test split the null of the other half
(``tests/analysis/test_domain.py``): in-domain flagged about 5%, the other data set's documents
flagged far more often. A model of subword tokens (no word vocabulary sorted by frequency) gets the
entropy alone, at 0.05.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from hierattn.checkpoint.classifier import Classifier
from hierattn.data.batches import streamed_batches
from hierattn.data.text import Document, Vocab

ALPHA = 0.05  # the share of in-domain documents flagged, at most
REFERENCE_DOCUMENTS = 1_000  # of the test split, spread evenly through it


def rare_words(vocab, document: Document) -> list[tuple[str, bool]] | None:
    """(word, rare) for each word with a letter: unknown, or in the rarer half of the vocabulary. None
    for a vocabulary that is not sorted by training frequency (a tokenizer's subword pieces)."""
    if type(vocab) is not Vocab:
        return None
    cut = len(vocab) // 2
    out = []
    for sentence in document.sentences:
        for token in sentence.tokens:
            if any(ch.isalpha() for ch in token.norm):
                out.append((token.text, vocab.stoi.get(token.norm, cut) >= cut))
    return out


def rare_share(vocab, document: Document) -> float | None:
    flags = rare_words(vocab, document)
    if flags is None:
        return None
    return sum(r for _, r in flags) / len(flags) if flags else math.nan


def entropy(probabilities) -> float:
    p = np.clip(np.asarray(probabilities, dtype=float), 1e-12, 1.0)
    return float(-(p * np.log(p)).sum())


PEERS = 100  # test documents of a similar length needed to judge a share of rare words on them


@dataclass
class DomainReference:
    """Each signal over the model's test documents. ``rare_flags`` is None for a model of
    subword tokens."""

    source: str  # e.g. "bbc-news test"
    rare_flags: list[np.ndarray] | None  # per document: (words,) bool, rare or not
    entropies: np.ndarray  # (documents,)

    @property
    def level(self) -> float:  # each signal's share of ALPHA
        return ALPHA / 2 if self.rare_flags is not None else ALPHA

    def rare_null(self, words: int) -> tuple[np.ndarray, str]:
        """The shares of rare words a document of ``words`` words is judged against, and what they are
        (a plural noun phrase, to follow "as many in 3 of 117").

        The spread of a share depends on how many words it is over (10 words vary more than 400), so
        a document meets the test documents of about its length (2/3 to 3/2 of it) when there
        are at least PEERS of them. Else (an article read by a tweet model, a line read by a news
        model) every stretch of ``words`` consecutive words of the test documents run together,
        enumerated. Whole documents, when there are enough: windows of held-out text flagged 9-12% of
        in-domain documents at 5% where documents of their length exist."""
        peers = [f.mean() for f in self.rare_flags if words / 1.5 <= len(f) <= words * 1.5 and len(f)]
        if len(peers) >= PEERS:
            return np.array(peers), f"{self.source} documents of {-(-words * 2 // 3)}-{words * 3 // 2} words"
        order = np.random.default_rng(0).permutation(len(self.rare_flags))  # documents run together in a fixed order
        stream = np.concatenate([self.rare_flags[i] for i in order]).astype(np.int64)
        if words > len(stream):
            return np.array([]), f"{self.source} (too short to compare)"
        sums = np.concatenate([[0], np.cumsum(stream)])
        return ((sums[words:] - sums[:-words]) / words,
                f"stretches of {words:,} words of the {self.source} documents run together")

    def entropy_null(self) -> tuple[np.ndarray, str]:
        return self.entropies[~np.isnan(self.entropies)], f"{self.source} documents"


def at_or_above(null: np.ndarray, value: float) -> int:
    """How many null values reach ``value`` (0 for a missing value)."""
    return 0 if math.isnan(value) else int((null >= value).sum())


def p_value(null: np.ndarray, value: float) -> float:
    """(1 + null values at or above ``value``) / (1 + null values); 1 for a missing value."""
    if math.isnan(value) or not len(null):
        return 1.0
    return (1 + at_or_above(null, value)) / (1 + len(null))


@dataclass
class DomainCheck:
    """One document's signals beside the reference. ``*_p``: the share of the null at or above the
    document's figure (with the +1 of a permutation p-value); ``*_null``: what the null is."""

    rare_share: float | None
    rare_p: float | None
    rare_reached: tuple[int, int] | None  # (null values at or above the document's share, null values)
    rare_null: str | None
    entropy: float
    entropy_p: float
    entropy_reached: tuple[int, int]
    entropy_null: str
    flagged: bool
    examples: list[str]  # a few of the document's rare words, for the message


def reference(classifier: Classifier, texts: list[str], source: str,
              progress: Callable[[int, int], None] | None = None, batch_size: int = 64) -> DomainReference:
    """Both signals over ``texts`` (the test split's documents; at most REFERENCE_DOCUMENTS,
    spread evenly through the split, which is sorted by class)."""
    if len(texts) > REFERENCE_DOCUMENTS:
        step = len(texts) / REFERENCE_DOCUMENTS
        texts = [texts[int(i * step)] for i in range(REFERENCE_DOCUMENTS)]
    flags: list = [None] * len(texts)
    entropies = np.full(len(texts), math.nan)
    done = 0
    with torch.no_grad():  # each text tokenised once, for both signals
        for positions, documents, batch in streamed_batches(texts, classifier.text_config, classifier.vocab,
                                                            batch_size):
            out = classifier.model(batch.to(classifier.device), return_attentions=False)
            probs = torch.softmax(out.logits.float(), -1).cpu().numpy()
            for row, (position, document) in enumerate(zip(positions, documents)):
                entropies[position] = entropy(probs[row])
                flags[position] = rare_words(classifier.vocab, document)
            done += len(positions)
            if progress:
                progress(done, len(texts))
    rare = None if flags and flags[0] is None else [np.array([r for _, r in f], dtype=bool) for f in flags]
    return DomainReference(source, rare, entropies)


def check(classifier: Classifier, document: Document, probabilities, ref: DomainReference) -> DomainCheck:
    """The document (as the model read it) and its predicted ``probabilities`` beside ``ref``."""
    flags = rare_words(classifier.vocab, document) if ref.rare_flags is not None else None
    share = rare_p = rare_reached = rare_described = None
    examples = []
    if flags:
        share = sum(r for _, r in flags) / len(flags)
        null, rare_described = ref.rare_null(len(flags))
        rare_p, rare_reached = p_value(null, share), (at_or_above(null, share), len(null))
        examples = list(dict.fromkeys(w for w, r in flags if r))[:5]
    value = entropy(probabilities)
    null, entropy_described = ref.entropy_null()
    entropy_p = p_value(null, value)
    flagged = entropy_p <= ref.level or (rare_p is not None and rare_p <= ref.level)
    return DomainCheck(share, rare_p, rare_reached, rare_described, value, entropy_p,
                       (at_or_above(null, value), len(null)), entropy_described, flagged, examples)
