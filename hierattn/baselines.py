"""TF-IDF baselines of the HCAN paper (section 4.2/4.3) on our exact split, for reference numbers.

Unigrams + bigrams with a minimum document frequency of 5, text normalised as for the neural
models; logistic regression with an L1 penalty of strength 1.0 (C = 1). scikit-learn does this
better than hand-written code could.
"""
from __future__ import annotations

import time

from .data import SEED, Dataset, stratified_split
from .text import normalise


def _analyzer_input(text: str) -> str:
    return " ".join(w for w in (normalise(t) for t in text.split()) if w)


def tfidf_logistic_regression(dataset: Dataset, seed: int = SEED) -> dict:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    split = stratified_split(dataset.labels, seed)
    texts = [_analyzer_input(t) for t in dataset.texts]
    train, test = split["train"], split["test"]
    start = time.perf_counter()
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=5, token_pattern=r"\S+")
    x_train = vectorizer.fit_transform([texts[i] for i in train])
    model = LogisticRegression(l1_ratio=1.0, C=1.0, solver="saga", max_iter=2000, random_state=seed)
    model.fit(x_train, [dataset.labels[i] for i in train])
    seconds = time.perf_counter() - start
    predicted = model.predict(vectorizer.transform([texts[i] for i in test]))
    accuracy = sum(int(p == dataset.labels[i]) for p, i in zip(predicted, test)) / len(test)
    return {"dataset": dataset.name, "model": "tfidf-logreg-l1", "test_accuracy": accuracy,
            "training_seconds": seconds, "features": len(vectorizer.vocabulary_)}
