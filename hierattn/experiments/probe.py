"""What a registry run's attention looks like once trained: recorded beside its accuracy for the
rows whose question is the attention itself (the sweep of where the target vector starts,
``experiments/<data set>.start.toml``).

Three figures, each chosen for what it can and cannot be moved by:

- the norm of each pooling site's query vector per head (HCAN's target T, HAN's context u_w) at the
  start of training and at its end: whether training moved it at all;
- the mean Jensen-Shannon divergence of the word and the sentence target attention from an even
  spread over the same keys, over the whole test split (``battery_split.pooling_spread``): how
  sharp the attention is. A softmax of scores scaled by |T| grows sharper with |T| alone;
- Kendall tau of the two-stage word ranking (sentence weight x word weight) with leave-one-out (the
  total variation of the output with each word taken out, Jain & Wallace) and with Integrated
  Gradients, on documents spread evenly through the test split, beside the same tau for the
  sentence attention times an even spread of each sentence's words (alpha_s / n_s), the null that
  keeps the model's own sentence weights, and within each sentence of two or more words. A rank
  correlation does not change when the scores are multiplied by a constant: it measures what
  training decided about which words matter, not how sharp the softmax is.
"""
from __future__ import annotations

import math
import random

import torch

from hierattn.analysis.attention_tests import kendall_tau, tvd
from hierattn.analysis.attribution import integrated_gradients, occlusion
from hierattn.analysis.battery import within_sentences
from hierattn.analysis.battery_split import bootstrap, evenly_spaced, pooling_spread
from hierattn.analysis.compare import importance
from hierattn.analysis.eraser import WORD_UNITS
from hierattn.analysis.explain import explained
from hierattn.checkpoint.classifier import Classifier

RANKED_DOCUMENTS = {"tweets": 200, "bbc-news": 50}  # documents spread through the test split for the taus
MAX_LOO_WORDS = 100  # leave-one-out over a random sample of this many words in a longer document


def query_norms(model: torch.nn.Module) -> dict[str, list[float]]:
    """Site -> the norm of its pooling query vector per head: HCAN's target T (split into its heads,
    as ``_attend`` splits it) and HAN's context u_w (one head). Empty for a model without one."""
    from hierattn.models.layers import AdditiveAttention, ConvMultiHeadTargetAttention

    out = {}
    for module in model.modules():
        if isinstance(module, ConvMultiHeadTargetAttention) and module.site:
            heads = module.target.detach().float().reshape(module.heads, -1)
            out[module.site] = [round(float(v), 4) for v in heads.norm(dim=-1)]
        elif isinstance(module, AdditiveAttention) and module.site:
            out[module.site] = [round(float(module.context.detach().float().norm()), 4)]
    return out


def ranked_taus(classifier: Classifier, texts: list[str], max_loo_words: int = MAX_LOO_WORDS) -> dict:
    """Kendall taus of the two-stage word ranking and of the sentence-times-even-words null with
    leave-one-out and Integrated Gradients (see the module doc): figure -> (mean, 2.5%, 97.5%) over
    the documents where both of a pair exist, and how many."""
    found: dict[str, list[float]] = {}
    for i, ex in explained(classifier, texts):
        shares = importance(ex) if ex is not None else None
        if shares is None or ex.target_name("sentence") is None:
            continue
        lengths = ex.sentence_lengths
        words = sum(lengths)
        if words < 2:
            continue
        label = ex.labels.index(ex.label)
        two_stage = list(shares.words.values())
        sentence = list(ex.target_attention("sentence"))
        null = [float(sentence[s]) / n for s, n in enumerate(lengths) for _ in range(n)]
        positions = list(range(words))
        if words > max_loo_words:
            positions = sorted(random.Random(i).sample(positions, max_loo_words))
        removed = occlusion(classifier, ex.document, label, WORD_UNITS, positions).removed
        loo = tvd(removed, torch.tensor(ex.probabilities)).tolist()
        integrated = integrated_gradients(classifier, ex.document, label)
        references = {"leave-one-out": (loo, positions)}
        if integrated is not None:
            references["integrated gradients"] = (integrated.scores, list(range(words)))
        multi = len(lengths) >= 2
        for name, (reference, at) in references.items():
            pairs = {"attention": kendall_tau([two_stage[j] for j in at], reference)}
            if multi:  # one sentence: the null is constant and the two-stage ranking is the word ranking
                null_tau = kendall_tau([null[j] for j in at], reference)
                # the attention and its null side by side: on the same documents, both defined
                if not any(t is None or math.isnan(t) for t in (null_tau, pairs["attention"])):
                    pairs["sentence x even words"] = null_tau
                    pairs["attention, multi-sentence"] = pairs["attention"]
            if len(at) == words:
                owner = [s for s, n in enumerate(lengths) for _ in range(n)]
                pairs["attention within sentences"] = within_sentences(two_stage, reference, owner)
            for figure, tau in pairs.items():
                if tau is not None and not math.isnan(tau):
                    found.setdefault(f"tau {name}: {figure}", []).append(tau)
    return {figure: {"tau": bootstrap(values), "documents": len(values)} for figure, values in sorted(found.items())}


def probe(classifier: Classifier, dataset: str, texts: list[str], at_start: dict[str, list[float]]) -> dict:
    """The attention figures of a trained registry run (see the module doc), as its result records them."""
    ranked = evenly_spaced(texts, RANKED_DOCUMENTS.get(dataset, 100))
    return {"query_norm_start": at_start, "query_norm_end": query_norms(classifier.model),
            "from_even": pooling_spread(classifier, texts), "taus": ranked_taus(classifier, ranked)}
