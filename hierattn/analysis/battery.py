"""Can I trust this shading? The faithfulness battery, per document and over a split.

One interface: a ranking of a document's units goes in (``eraser.eraser_scores``), scores come out;
the interventions (``attention_tests``) take the sites of a level. This module picks, for a model,
which rankings and sites exist, runs every test that applies, and says which do not and why:

- ERASER comprehensiveness and sufficiency (AOPC over 1-50%) for the word attention of a flat
  model; for a hierarchical one the two-stage ranking (sentence weight x word weight: its raw word
  weights sum to 1 within each sentence and do not compare across sentences) and the sentence
  attention; each beside random rankings of the same units and, for a hierarchical model's words
  ranked across sentences, beside its own sentence attention times an even spread of each
  sentence's words (alpha_s / n_s: the null that keeps everything the word level is not about);
- beside the attention's rankings in ERASER, captum's attribution methods of the registry
  (``attribution_methods``: Integrated Gradients and word occlusion over the words, sentence
  occlusion and KernelSHAP over the sentences), scored the same way: what a ranking that follows
  the model itself achieves on this document;
- Kendall tau of the same rankings with gradient importance (Jain & Wallace's: attention held
  constant), with leave-one-out (their TVD, from the word and sentence occlusion's passes) and with
  Integrated Gradients, per level, beside a random ranking's and, for a hierarchical model's words,
  alpha_s / n_s's (a sentence's gradient importance is the sum of its words'); and for a
  hierarchical model the mean Kendall tau within each sentence of two or more words, where the
  sentence weight is a constant and only the word attention can rank;
- the permutation and uniform tests, per level; the adversarial search, on request;
- over a split (``battery_split``), each figure's mean with a bootstrap 95% interval over documents.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from hierattn.analysis import attention_tests as tests
from hierattn.analysis import eraser
from hierattn.analysis.attribution import Attribution, gradient_times_input
from hierattn.analysis.attribution import by_sentence as attribution_by_sentence
from hierattn.analysis.attribution_methods import (
    ATTRIBUTION_METHODS,
    INTEGRATED,
    LEAVE_ONE_OUT,
    SENTENCE_OCCLUSION,
    SENTENCE_SHAPLEY,
)
from hierattn.analysis.compare import importance
from hierattn.analysis.explain import Explanation
from hierattn.analysis.faithfulness import STRUCTURAL, sentence_even_scores, sentence_even_weights
from hierattn.checkpoint.classifier import Classifier
from hierattn.contract import ATTENTION, SENTENCE, WORD

LEVELS = (WORD, SENTENCE)
WORD_ATTENTION, TWO_STAGE, SENTENCE_ATTENTION = "word attention", "two-stage", "sentence attention"
RANDOM = {eraser.WORD_UNITS: "random words", eraser.SENTENCE_UNITS: "random sentences"}
# captum's attributions, ranked beside the attention by their labels: what a ranking that tracks the model achieves
RANKED_METHODS = tuple(m for m in ATTRIBUTION_METHODS if m.captum)
ATTRIBUTION_RANKINGS = tuple(m.label for m in RANKED_METHODS)
UNIT_OF = {WORD_ATTENTION: eraser.WORD_UNITS, TWO_STAGE: eraser.WORD_UNITS, SENTENCE_ATTENTION: eraser.SENTENCE_UNITS,
           **{m.label: m.unit for m in RANKED_METHODS}}
IG = INTEGRATED.label  # an importance the Kendall taus rank against, as their rows name it
PERMUTATIONS = 100
# sampled Shapley values of a long document (over 7 sentences) in the battery: 4 draws of 32
# coalitions, 128 passes, the cost KernelSHAP had here before; a ranking for ERASER, not a figure shown
BATTERY_SHAP_DRAW, BATTERY_SHAP_PASSES = 32, 128
RANDOM_DRAWS = 5
MAX_LOO_WORDS = 1000  # leave-one-out over a random sample of this many words in longer documents

READING = {
    "comprehensiveness": "Comprehensiveness (AOPC): the mean fall in P(predicted class) when the top 1-50% of "
                         "units are removed. Higher than random: the ranking found what the prediction rests on.",
    "sufficiency": "Sufficiency (AOPC): the mean fall in P(predicted class) when only the top 1-50% are kept. "
                   "Lower than random: those units alone carry the prediction.",
    "kendall": "Kendall tau: rank agreement of the attention with another importance (-1..1). Near 0: they rank "
               "the units differently (Jain & Wallace found 0.1-0.4 for BiLSTM attention).",
    "kendall within": "Kendall tau within sentences: the same agreement, within each sentence of two or more "
                      "words, averaged: there the sentence weight is a constant, so only the word attention ranks.",
    "permutation": "Permutation: the median change in the output (total variation, 0..1) when the attention weights "
                   "are shuffled. Near 0: which unit gets which weight does not matter to this prediction.",
    "uniform": "Uniform attention at inference (an intervention): the output's change when the trained weights "
               "become an even spread. Near 0: the model does not rely on them as trained. Wiegreffe & Pinter's "
               "'is attention needed' trains a frozen-uniform twin instead (the registry's orderings).",
    "adversarial": "Adversarial attention: the largest Jensen-Shannon divergence (0..ln 2 = 0.69) of another "
                   "attention that leaves the output within 0.01. Large: very different shadings, same prediction.",
}


@dataclass
class DocumentBattery:
    label: str
    probability: float
    words: int
    sentences: int
    eraser: dict[str, eraser.EraserScores] = field(default_factory=dict)  # ranking -> scores (incl. random)
    kendall: dict[tuple[str, str], float | None] = field(default_factory=dict)  # (level, "gradient"/"leave-one-out")
    kendall_random: dict[tuple[str, str], float | None] = field(default_factory=dict)  # a random ranking's tau
    kendall_structural: dict[tuple[str, str], float | None] = field(default_factory=dict)  # alpha_s / n_s's
    kendall_within: dict[tuple[str, str], float | None] = field(default_factory=dict)  # mean tau within sentences
    kendall_within_random: dict[tuple[str, str], float | None] = field(default_factory=dict)
    permutation: dict[str, float] = field(default_factory=dict)  # level -> median TVD
    uniform: dict[str, tuple[float, str]] = field(default_factory=dict)  # level (or "both") -> (TVD, class predicted)
    adversarial: dict[str, tests.Adversarial] = field(default_factory=dict)  # level -> search
    from_uniform: dict[str, float] = field(default_factory=dict)  # level -> JSD of the attention from an even spread
    not_applicable: list[str] = field(default_factory=list)  # "test: why", for the reader
    sampled_words: int | None = None  # leave-one-out read this many of the words

    def rows(self) -> list[dict]:
        """One row per figure: test, level, value, baseline (what it must beat), how to read it."""
        out = []
        structural = self.eraser.get(STRUCTURAL)
        for name, s in self.eraser.items():
            if name in RANDOM.values() or name == STRUCTURAL:
                continue
            r = self.eraser[RANDOM[s.unit]]
            level = SENTENCE if s.unit == eraser.SENTENCE_UNITS else WORD
            null = structural if name in (TWO_STAGE, WORD_ATTENTION) else None  # the attention's own words
            out.append({"test": f"comprehensiveness ({name})", "level": level, "value": s.aopc_comprehensiveness,
                        "baseline": r.aopc_comprehensiveness, "baseline is": RANDOM[s.unit],
                        "structural": null and null.aopc_comprehensiveness,
                        "how to read": READING["comprehensiveness"]})
            out.append({"test": f"sufficiency ({name})", "level": level, "value": s.aopc_sufficiency,
                        "baseline": r.aopc_sufficiency, "baseline is": RANDOM[s.unit],
                        "structural": null and null.aopc_sufficiency, "how to read": READING["sufficiency"]})
        for (level, against), tau in self.kendall.items():
            out.append({"test": f"Kendall tau with {against}", "level": level, "value": tau,
                        "baseline": self.kendall_random.get((level, against)), "baseline is": "a random ranking",
                        "structural": self.kendall_structural.get((level, against)),
                        "how to read": READING["kendall"]})
        for (level, against), tau in self.kendall_within.items():
            out.append({"test": f"Kendall tau within sentences with {against}", "level": level, "value": tau,
                        "baseline": self.kendall_within_random.get((level, against)),
                        "baseline is": "a random ranking", "how to read": READING["kendall within"]})
        for level, change in self.permutation.items():
            out.append({"test": "permutation", "level": level, "value": change, "baseline": None,
                        "baseline is": "", "how to read": READING["permutation"]})
        for level, (change, predicted) in self.uniform.items():
            flipped = predicted != self.label
            out.append({"test": "uniform attention" + (f" (predicts {predicted})" if flipped else ""), "level": level,
                        "value": change, "baseline": None, "baseline is": "", "how to read": READING["uniform"]})
        for level, search in self.adversarial.items():
            out.append({"test": "adversarial attention", "level": level, "value": search.max_divergence,
                        "baseline": self.from_uniform.get(level), "baseline is": "JSD from an even spread",
                        "how to read": READING["adversarial"]})
        return out


def _flat(per_sentence: list[list[float]]) -> list[float]:
    return [w for ws in per_sentence for w in ws]


def rankings(ex: Explanation) -> tuple[dict[str, list[float]], list[str]]:
    """The attention rankings this model's maps give (name -> one score per unit), and lines for
    those that do not apply. A hierarchical model's word weights sum to 1 within each sentence, so
    ranked across sentences they mostly order words by 1 / sentence length (Spearman 0.97 with it
    for bbc-news-hcan): its words are ranked by the two-stage product only."""
    out, missing = {}, []
    word_name = ex.target_name(WORD)
    hierarchical = word_name is not None and "sentence" in ex.attentions[word_name].axes
    if word_name is not None and ex.attentions[word_name].kind == ATTENTION and hierarchical:
        if ex.target_name(SENTENCE) is None:
            missing.append("word-level ERASER and Kendall tau: the word weights sum to 1 within each sentence and "
                           "there is no sentence attention to weigh the sentences by")
    elif word_name is not None and ex.attentions[word_name].kind == ATTENTION:
        out[WORD_ATTENTION] = _flat(ex.target_attention(WORD))
    elif word_name is not None:
        missing.append(f"ERASER, Kendall tau: {ex.classifier_name}'s word map is "
                       f"{ex.attentions[word_name].kind}, not attention")
    else:
        imp = importance(ex)
        if imp is not None and any(ex.attentions[n].kind == ATTENTION for n in ex.self_attention_names):
            out[WORD_ATTENTION] = list(imp.words.values())  # self-attention received: the proxy the shading shows
    sentence_name = ex.target_name(SENTENCE)
    if sentence_name is not None:
        out[SENTENCE_ATTENTION] = list(ex.target_attention(SENTENCE))
        if hierarchical and ex.attentions[word_name].kind == ATTENTION:
            out[TWO_STAGE] = list(importance(ex).words.values())
    else:
        missing.append("sentence-level ERASER and Kendall tau: no sentence attention")
    if not out and word_name is None:
        missing.insert(0, "ERASER and Kendall tau: no attention over the words to rank them by")
    return out, missing


def _attributions(classifier: Classifier, ex: Explanation, label: int, ranked: dict,
                  positions: list[int]) -> dict[str, Attribution]:
    """captum's methods (``RANKED_METHODS``) by label, for the units the attention ranks (sentences
    in a document of two or more). Word occlusion reads the words at ``positions`` (a sample of a
    long document's), whose outputs give leave-one-out's change (Jain & Wallace's TVD), as sentence
    occlusion's do; the sentences' Shapley values are exact up to 7 sentences (2^n passes), beyond
    sampled within the battery's budget of coalitions."""
    document = ex.document
    units = {UNIT_OF[n] for n in ranked} - ({eraser.SENTENCE_UNITS} if len(document.sentences) < 2 else set())
    options = {LEAVE_ONE_OUT: {"positions": positions},
               SENTENCE_SHAPLEY: {"samples": None if len(document.sentences) <= 7 else BATTERY_SHAP_DRAW,
                                  "max_passes": BATTERY_SHAP_PASSES}}
    found = {m.label: m.attribute(classifier, document, label, **options.get(m, {}))
             for m in RANKED_METHODS if m.unit in units}
    return {name: result for name, result in found.items() if result is not None}


def document_battery(classifier: Classifier, ex: Explanation, permutations: int = PERMUTATIONS,
                     random_draws: int = RANDOM_DRAWS, adversarial: bool = False, max_loo_words: int = MAX_LOO_WORDS,
                     seed: int = 0, progress: Callable[[int, int], None] | None = None) -> DocumentBattery:
    """Every test that applies to this explained document (see the module doc)."""
    document = ex.document
    label = ex.labels.index(ex.label)
    base = ex.probabilities[label]
    reference = torch.tensor(ex.probabilities)
    words = sum(len(s.tokens) for s in document.sentences)
    battery = DocumentBattery(ex.label, base, words, len(document.sentences))
    ranked, battery.not_applicable = rankings(ex)
    stages = 4 + (2 if adversarial else 0)
    tick = (lambda i: progress(i, stages)) if progress else (lambda i: None)

    rng = random.Random(seed)
    positions = list(range(words))
    if words > max_loo_words:
        positions = sorted(rng.sample(positions, max_loo_words))
        battery.sampled_words = max_loo_words
    found = _attributions(classifier, ex, label, ranked, positions) if ranked else {}

    # ERASER, each unit's rankings (the attention's, then captum's beside them) beside random ones
    for unit in (eraser.WORD_UNITS, eraser.SENTENCE_UNITS):
        names = [n for n in ranked if UNIT_OF[n] == unit]
        n = eraser.unit_count(document, unit)  # an attribution ranks the units only if it scored every one
        names += [m for m in ATTRIBUTION_RANKINGS if m in found and UNIT_OF[m] == unit
                  and len(found[m].scores) == n] if names else []
        if names and n < 2:  # one unit: every ranking is the same ranking
            battery.not_applicable.append(f"{unit}-level ERASER: the document has one {unit}")
            continue
        if not names:
            continue
        randoms = eraser.random_rankings(n, random_draws, seed)
        scored = [ranked[m] if m in ranked else found[m].scores for m in names]
        structural = sentence_even_scores(ex, seed) if TWO_STAGE in names else None
        if unit == eraser.WORD_UNITS and structural is not None:  # a hierarchical model's words across sentences
            names, scored = names + [STRUCTURAL], scored + [structural]
        scores = eraser.eraser_scores(classifier, document, scored + randoms, unit, label, base)
        battery.eraser.update(zip(names, scores))
        battery.eraser[RANDOM[unit]] = eraser.mean_scores(scores[len(names):])
    tick(1)

    # Kendall tau with gradient importance and leave-one-out, per level
    held = gradient_times_input(classifier, document, label, jain_wallace=True)  # their tau's gradient
    gradient = held.scores if held is not None else None
    word_attention = ranked.get(TWO_STAGE, ranked.get(WORD_ATTENTION))
    if word_attention is not None:
        loo = tests.tvd(found[LEAVE_ONE_OUT.label].removed, reference).tolist()  # each word alone out: its TVD
        shuffled = [[rng.random() for _ in range(words)] for _ in range(random_draws)]
        null = sentence_even_weights(ex) if TWO_STAGE in ranked else None  # alpha_s / n_s; tau-b counts the ties
        spans = null is not None
        lengths = null
        if gradient is not None:
            battery.kendall[(WORD, "gradient")] = tests.kendall_tau(word_attention, gradient)
            battery.kendall_random[(WORD, "gradient")] = _mean_tau([(r, gradient) for r in shuffled])
            if spans:
                battery.kendall_structural[(WORD, "gradient")] = tests.kendall_tau(lengths, gradient)
        battery.kendall[(WORD, "leave-one-out")] = tests.kendall_tau([word_attention[i] for i in positions], loo)
        battery.kendall_random[(WORD, "leave-one-out")] = _mean_tau([([r[i] for i in positions], loo)
                                                                     for r in shuffled])
        if spans:
            battery.kendall_structural[(WORD, "leave-one-out")] = tests.kendall_tau([lengths[i] for i in positions],
                                                                                    loo)
        integrated = found[IG].scores if IG in found else None
        if integrated is not None:  # signed: above 0 for a word that supports the class
            battery.kendall[(WORD, IG)] = tests.kendall_tau(word_attention, integrated)
            battery.kendall_random[(WORD, IG)] = _mean_tau([(r, integrated) for r in shuffled])
            if spans:
                battery.kendall_structural[(WORD, IG)] = tests.kendall_tau(lengths, integrated)
        if TWO_STAGE in ranked:  # within each sentence, where only the word attention can rank
            owner = [s for s, sentence in enumerate(document.sentences) for _ in sentence.tokens]
            importances = {"leave-one-out": (loo, positions)}
            if gradient is not None:
                importances["gradient"] = (gradient, list(range(words)))
            if integrated is not None:
                importances[IG] = (integrated, list(range(words)))
            for against, (other, at) in importances.items():
                groups = [owner[i] for i in at]
                battery.kendall_within[(WORD, against)] = within_sentences([word_attention[i] for i in at], other,
                                                                           groups)
                battery.kendall_within_random[(WORD, against)] = _mean_of(
                    [within_sentences([r[i] for i in at], other, groups) for r in shuffled])
    if SENTENCE_ATTENTION in ranked and len(document.sentences) >= 2:
        sentence_attention = ranked[SENTENCE_ATTENTION]
        loo = tests.tvd(found[SENTENCE_OCCLUSION.label].removed, reference).tolist()
        shuffled = [[rng.random() for _ in sentence_attention] for _ in range(random_draws)]
        if gradient is not None:
            by_sentence, i = [], 0
            for s in document.sentences:
                by_sentence.append(sum(gradient[i: i + len(s.tokens)]))
                i += len(s.tokens)
            battery.kendall[(SENTENCE, "gradient")] = tests.kendall_tau(sentence_attention, by_sentence)
            battery.kendall_random[(SENTENCE, "gradient")] = _mean_tau([(r, by_sentence) for r in shuffled])
        battery.kendall[(SENTENCE, "leave-one-out")] = tests.kendall_tau(sentence_attention, loo)
        battery.kendall_random[(SENTENCE, "leave-one-out")] = _mean_tau([(r, loo) for r in shuffled])
        if IG in found:
            integrated = attribution_by_sentence(found[IG].scores, document)
            battery.kendall[(SENTENCE, IG)] = tests.kendall_tau(sentence_attention, integrated)
            battery.kendall_random[(SENTENCE, IG)] = _mean_tau([(r, integrated) for r in shuffled])
    if gradient is None and word_attention is not None:
        battery.not_applicable.append("Kendall tau with gradient importance: no embedding table to differentiate")
    tick(2)

    # interventions: permutation and uniform, per level
    sites = intervenable_sites(classifier, ex)
    if SENTENCE in sites and len(document.sentences) < 2:  # one sentence: its weight is 1 whatever is done
        del sites[SENTENCE]
        battery.not_applicable.append("sentence-level interventions: the document has one sentence")
    for level, names in sites.items():
        changes = tests.permutation_changes(classifier, document, names, reference, permutations, seed)
        battery.permutation[level] = float(np.median(changes))
    tick(3)
    if len(sites) == 2:
        sites_both = {**sites, "both": sites[WORD] + sites[SENTENCE]}
    else:
        sites_both = sites
    for level, names in sites_both.items():
        p = tests.uniform_outputs(classifier, [document], names)[0]
        battery.uniform[level] = (float(tests.tvd(p, reference)), ex.labels[int(p.argmax())])
    for level in LEVELS:
        if level not in sites and not (level == SENTENCE and len(document.sentences) < 2 and _maps_at(ex, level)):
            maps = _maps_at(ex, level)
            tested = {n for names in sites.values() for n in names}
            shared = {ex.attentions[n].source for n in maps} & tested
            battery.not_applicable.append(f"permutation and uniform tests at the {level} level: " + (
                "no attention there" if not maps else
                f"its maps are summed from {', '.join(sorted(shared))}, tested at the other level" if shared else
                "no intervention reaches its attention there (it runs inside a recurrent cell)"))
    tick(4)

    # adversarial search, on request: target (pooling) attention only
    for i, (level, names) in enumerate(sites.items()):
        pooling = [n for n in names if not ex.attentions[n].is_self_attention]
        if not pooling:
            battery.not_applicable.append(f"adversarial search at the {level} level: it searches pooling (target) "
                                          "attention, and this model has only self-attention there")
            continue
        battery.from_uniform[level] = divergence_from_even(ex, pooling[0])
        if adversarial:
            battery.adversarial[level] = tests.adversarial_search(classifier, document, pooling[0], reference,
                                                                  seed=seed)
            tick(5 + i)
    return battery


def within_sentences(ranking: list[float], reference: list[float], sentences: list[int]) -> float | None:
    """The mean Kendall tau of ``ranking`` with ``reference`` within each sentence (``sentences``:
    each unit's sentence) of two or more units; None when no sentence has two."""
    groups: dict[int, list[int]] = {}
    for i, s in enumerate(sentences):
        groups.setdefault(s, []).append(i)
    taus = [tests.kendall_tau([ranking[i] for i in g], [reference[i] for i in g])
            for g in groups.values() if len(g) >= 2]
    return _mean_of(taus)


def _mean_of(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def _mean_tau(pairs: list[tuple[list[float], list[float]]]) -> float | None:
    """The mean Kendall tau of several random rankings against one importance: the baseline a
    ranking's tau must beat (one random draw over a few units is too noisy to read)."""
    taus = [t for t in (tests.kendall_tau(a, b) for a, b in pairs) if t is not None]
    return sum(taus) / len(taus) if taus else None


def _maps_at(ex: Explanation, level: str) -> list[str]:
    return [n for n, a in ex.attentions.items() if a.level == level and a.kind == ATTENTION]


def intervenable_sites(classifier: Classifier, ex: Explanation) -> dict[str, list[str]]:
    """Level -> the attention sites an intervention reaches there (levels without any left out)."""
    out = {}
    for level in LEVELS:
        names = tests.level_sites(ex.attentions, level)
        names = tests.reachable(classifier, ex.document, names) if names else []
        if names and names not in out.values():  # maps of both levels summed from one site: tested once
            out[level] = names
    return out


def divergence_from_even(ex: Explanation, name: str) -> float:
    """Mean JSD of a pooling map's distributions (per sentence and head, with two or more keys)
    from an even spread over the same keys: the scale an adversarial divergence is read against."""
    a = ex.attentions[name]
    w, m = a.weights[0].double(), a.mask[0]
    keep = m.sum(-1) >= 2  # a row over one key (or none) has nothing to spread
    if not keep.any():
        return 0.0
    return float(tests.js_divergence(w[keep].numpy(), tests.even_spread(w, m)[keep].numpy()).mean())
