"""Every computation on a shared model is re-entrant: the app caches one classifier per
checkpoint for every session, so analyses of different documents run on it from many threads at
once. Run from 8 threads together, each must give exactly what it gives alone."""
import threading

import pytest
import torch

from hierattn.analysis import battery, rollout
from hierattn.analysis.attribution import gradient_times_input
from hierattn.analysis.explain import explain
from hierattn.analysis.faithfulness import erasure_curves
from hierattn.checkpoint.reading import load_classifier

TEXTS = [
    "I loved this film. The acting was great and the story moved me!",
    "Terrible service. I will never go back. Was it really that bad?",
    "The striker scored twice. The team won the cup final on Sunday! Fans cheered loudly.",
    "Shares in the bank rose sharply. Investors cheered the results.",
]
THREADS = 8


def _analyses(classifier, text: str) -> dict:
    ex = explain(classifier, text)
    label = ex.labels.index(ex.label)
    curves = erasure_curves(classifier, ex)
    result = battery.document_battery(classifier, ex, permutations=3, random_draws=2)
    derived = rollout.beside_raw(classifier, ex)[1] if ex.self_attention_names else {}
    return {
        "probabilities": ex.probabilities,
        "attention": {n: a.weights.tolist() for n, a in ex.attentions.items()},
        "gradient": gradient_times_input(classifier, ex.document, label).scores,
        "erasure": (curves.drops, curves.scores),
        "battery": [(r["test"], r["level"], r["value"], r["baseline"]) for r in result.rows()],
        "beside raw": {n: a.weights.tolist() for n, a in derived.items()},
    }


@pytest.mark.parametrize("name", ["tiny-han", "tiny-hcan", "tiny-sanet", "tiny-mahnn"])
def test_analyses_from_eight_threads_match_the_sequential_results(checkpoint_dir, name):
    classifier = load_classifier(checkpoint_dir / name, device="cpu")  # one model, as the app caches it
    expected = [_analyses(classifier, t) for t in TEXTS]
    results, errors = [None] * THREADS, []
    start = threading.Barrier(THREADS)

    def work(i: int) -> None:
        try:
            start.wait()
            with torch.inference_mode(False):
                results[i] = [_analyses(classifier, TEXTS[(i + j) % len(TEXTS)]) for j in range(2)]
        except Exception as exc:  # noqa: BLE001  reported below, with the thread's number
            errors.append(f"thread {i}: {exc!r}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i, got in enumerate(results):
        for j, value in enumerate(got):
            assert value == expected[(i + j) % len(TEXTS)], f"thread {i}, document {(i + j) % len(TEXTS)}"
    assert not classifier.model.embedding._forward_hooks  # nothing a call attached outlives it
