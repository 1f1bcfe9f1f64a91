"""The traditional baselines of the HCAN paper (section 4.2/4.3): Naive Bayes and L1-regularised
logistic regression on TF-IDF unigrams + bigrams with a minimum document frequency of 5.

scikit-learn fits them (``fit_tfidf``); the fitted numbers are then held by a small torch module
so that the baselines save, load, predict and evaluate through exactly the same checkpoint format
and commands as the neural models. Both are linear in the TF-IDF vector x:
logistic regression: logits = W x + b; multinomial NB: logits = log P(w|c) x + log P(c).

Features: the document's words in reading order (the vocabulary's ids, unigram features at
those ids) and each pair of adjacent words (bigram features after the unigrams, looked up by
``a * vocab_size + b`` in a sorted key table). TF-IDF as scikit-learn's default: raw counts x
smoothed idf, L2-normalised. No attention: the app says so.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from hierattn.contract import Batch, ClassifierOutput
from hierattn.data.text import PAD, UNK, Document, Vocab
from hierattn.models.common import classification_output, flatten_words
from hierattn.models.spec import Knob, ModelSpec

CLASSIFIERS = ("logreg", "nb")
MIN_DF = 5


@dataclass
class TFIDFConfig:
    vocab_size: int
    num_classes: int
    num_bigrams: int = 0
    classifier: str = "logreg"  # or "nb"


class TFIDFLinear(nn.Module):
    attention_free = True

    def __init__(self, config: TFIDFConfig):
        super().__init__()
        self.config = c = config
        if c.classifier not in CLASSIFIERS:
            raise ValueError(f"classifier must be one of {', '.join(CLASSIFIERS)}, got {c.classifier!r}")
        features = c.vocab_size + c.num_bigrams
        self.register_buffer("idf", torch.ones(features))
        self.register_buffer("bigram_keys", torch.zeros(c.num_bigrams, dtype=torch.long))  # sorted
        self.weight = nn.Parameter(torch.zeros(c.num_classes, features))
        self.bias = nn.Parameter(torch.zeros(c.num_classes))

    def features(self, batch: Batch) -> torch.Tensor:
        """(B, vocab_size + num_bigrams) L2-normalised TF-IDF vectors."""
        ids, mask = flatten_words(batch)  # (B, T)
        V, B = self.config.vocab_size, ids.shape[0]
        known = mask & (ids > Vocab.unk_id)
        counts = torch.zeros(B, V + self.config.num_bigrams, device=ids.device)
        counts.scatter_add_(1, ids * known, known.float())
        if self.config.num_bigrams and ids.shape[1] > 1:
            keys = ids[:, :-1] * V + ids[:, 1:]
            slot = torch.searchsorted(self.bigram_keys, keys).clamp(max=self.config.num_bigrams - 1)
            hit = known[:, :-1] & known[:, 1:] & (self.bigram_keys[slot] == keys)
            counts.scatter_add_(1, (V + slot) * hit, hit.float())
        counts[:, 0] = 0  # index 0 collected every non-feature above
        return F.normalize(counts * self.idf, dim=1)

    def forward(self, batch: Batch, return_attentions: bool = True) -> ClassifierOutput:
        x = self.features(batch)
        return classification_output(x @ self.weight.t().to(x.dtype) + self.bias, batch, {}, x)


def _terms(document: Document) -> list[str]:
    words = [t.norm for s in document.sentences for t in s.tokens]
    return words + [f"{a} {b}" for a, b in zip(words, words[1:])]


def fit_tfidf(documents: list[Document], labels: list[int], num_classes: int, classifier: str = "logreg",
              seed: int = 1234, min_df: int = MIN_DF) -> tuple[TFIDFLinear, Vocab]:
    """Fit the vectoriser and the classifier with scikit-learn; return the equivalent module and vocab."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import MultinomialNB

    vectorizer = TfidfVectorizer(analyzer=_terms, min_df=min_df)
    X = vectorizer.fit_transform(documents)
    if classifier == "logreg":
        model = LogisticRegression(l1_ratio=1.0, C=1.0, solver="saga", max_iter=2000, random_state=seed)
    elif classifier == "nb":
        model = MultinomialNB(alpha=0.1)
    else:
        raise ValueError(f"classifier must be one of {', '.join(CLASSIFIERS)}, got {classifier!r}")
    model.fit(X, labels)
    if classifier == "logreg":
        coef, intercept = model.coef_, model.intercept_
        if coef.shape[0] == 1:  # binary: scikit-learn stores one row; logits [0, z] give the same softmax
            coef, intercept = np.vstack([np.zeros_like(coef), coef]), np.array([0.0, intercept[0]])
    else:
        coef, intercept = model.feature_log_prob_, model.class_log_prior_

    terms = vectorizer.get_feature_names_out()
    unigrams = [t for t in terms if " " not in t]
    vocab = Vocab([PAD, UNK] + unigrams)
    V = len(vocab)
    bigram_keys = sorted((vocab.stoi[a] * V + vocab.stoi[b], j) for j, t in enumerate(terms) if " " in t
                         for a, b in [t.split(" ")])
    column = {j: vocab.stoi[t] for j, t in enumerate(terms) if " " not in t}
    column.update({j: V + slot for slot, (_, j) in enumerate(bigram_keys)})

    module = TFIDFLinear(TFIDFConfig(V, num_classes, len(bigram_keys), classifier))
    order = torch.tensor([column[j] for j in range(len(terms))])
    with torch.no_grad():
        module.idf.zero_()
        module.idf[order] = torch.tensor(vectorizer.idf_, dtype=torch.float32)
        module.bigram_keys.copy_(torch.tensor([k for k, _ in bigram_keys], dtype=torch.long))
        weight = torch.zeros(num_classes, V + len(bigram_keys))
        weight[:, order] = torch.tensor(coef, dtype=torch.float32)
        module.weight.copy_(weight)
        module.bias.copy_(torch.tensor(intercept, dtype=torch.float32))
    return module.eval(), vocab


def fit(documents: list[Document], labels: list[int], num_classes: int, config: dict,
        seed: int) -> tuple[TFIDFLinear, Vocab]:
    """The spec's one-pass fit: ``fit_tfidf`` with the config's classifier."""
    return fit_tfidf(documents, labels, num_classes, config.get("classifier", "logreg"), seed)


def display_name(config: dict) -> str:
    return "TF-IDF + Naive Bayes" if config.get("classifier") == "nb" else "TF-IDF + L1 logistic regression"


SPEC = ModelSpec(
    "tfidf", TFIDFLinear, TFIDFConfig, "TF-IDF + linear classifier (no attention)", display_name, listed=7,
    knobs=(
        Knob("classifier", "Classifier", "L1 logistic regression or multinomial Naive Bayes on TF-IDF 1-2 grams.",
             "choice", ("logreg", "nb")),
    ),
    maps="no attention", fit=fit)
