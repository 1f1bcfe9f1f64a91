"""What each attribution method costs per document: gradient × input, captum's
Integrated Gradients, word and sentence occlusion and sentence KernelSHAP, on the shipped
checkpoints at about 100 and 500 words of bbc-news test text, and about 20 words of tweets.
Recorded under results/timing/attribution.json; the Explore panels compute the expensive ones on
request and in the background."""
from __future__ import annotations

import statistics
import time

from bench.inference import document_of
from hierattn.analysis import attribution
from hierattn.analysis.explain import explain
from hierattn.analysis.shapley import sentence_shap
from hierattn.checkpoint.classifier import best_device
from hierattn.checkpoint.reading import load_classifier
from hierattn.data.builtin import load_builtin
from hierattn.data.split import stratified_split
from hierattn.home import list_checkpoints

SIZES = {"bbc-news": (100, 500), "tweets": (20,)}


def _timed(fn, repeats: int) -> float:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def document_costs(classifier, text: str, repeats: int) -> dict:
    """Median seconds of each method on one document (explained once before: the app has its
    explanation when a panel asks for an attribution)."""
    ex = explain(classifier, text)
    label, document = ex.labels.index(ex.label), ex.document
    row = {"words_read": document.num_tokens, "sentences": len(document.sentences)}
    if attribution.supports_gradients(classifier):
        row["gradient × input"] = _timed(lambda: attribution.gradient_times_input(classifier, document, label), repeats)
        row["integrated gradients"] = _timed(lambda: attribution.integrated_gradients(classifier, document, label),
                                             repeats)
        integrated = attribution.integrated_gradients(classifier, document, label)
        row["integrated gradients relative delta"] = integrated.relative_delta if integrated else None
    row["word occlusion"] = _timed(lambda: attribution.occlusion(classifier, document, label), repeats)
    if len(document.sentences) >= 2:
        row["sentence occlusion"] = _timed(lambda: attribution.occlusion(classifier, document, label, "sentence"),
                                           repeats)
        row["sentence KernelSHAP"] = _timed(lambda: sentence_shap(classifier, document, label), repeats)
    return row


def record_attribution(quick: bool = False, checkpoints="checkpoints") -> dict:
    device = best_device()
    texts = {}
    for dataset in SIZES:
        ds = load_builtin(dataset)
        split = stratified_split(ds.labels)
        texts[dataset] = [ds.texts[i] for i in split["test"]]
    repeats = 1 if quick else 3
    out = {"device": device.type, "seconds": {}}
    for path in list_checkpoints(checkpoints):
        classifier = load_classifier(path, device=device)
        for words in SIZES.get(classifier.dataset, ()):
            out["seconds"][f"{path.name}/{words}"] = document_costs(
                classifier, document_of(words, texts[classifier.dataset]), repeats)
    return out


def format_attribution(results: dict) -> list[str]:
    lines = [f"attribution cost per document ({results['device']}), median seconds:"]
    for key, row in results["seconds"].items():
        parts = [f"{name} {value:.2f}" for name, value in row.items()
                 if name not in ("words_read", "sentences", "integrated gradients relative delta")]
        delta = row.get("integrated gradients relative delta")
        lines.append(f"  {key} ({row['words_read']} words, {row['sentences']} sentences): " + ", ".join(parts)
                     + ("" if delta is None else f"; IG delta {delta:.1%}"))
    return lines
