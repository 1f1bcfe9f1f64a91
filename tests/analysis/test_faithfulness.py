"""Erasure curves and attributions, against small reference computations."""
import pytest
import torch

from hierattn.analysis.attribution import gradient_times_input, leave_one_out
from hierattn.analysis.explain import explain
from hierattn.analysis.faithfulness import (
    ErasureCurves,
    erasure_curves,
    removal_steps,
    split_erasure,
    without,
)
from hierattn.checkpoint.reading import load_classifier
from hierattn.data.batches import encode_documents
from hierattn.data.text import tokenize

TEXT = "The striker scored twice. The team won the cup final on Sunday! Fans cheered loudly."


def _probability(classifier, document, label: int) -> float:
    """One document, one forward pass: the reference for the batched helpers."""
    batch = encode_documents([document], classifier.vocab)
    with torch.inference_mode():
        return torch.softmax(classifier.model(batch).logits[0].float(), -1)[label].item()


def test_removing_words_closes_up_sentences_and_drops_empty_ones():
    doc = tokenize("One two three. Four. Five six.")
    words = [t.norm for s in doc.sentences for t in s.tokens]
    assert words == ["one", "two", "three", ".", "four", ".", "five", "six", "."]
    cut = without(doc, {1, 4, 5})  # "two", and all of "Four."
    assert [[t.norm for t in s.tokens] for s in cut.sentences] == [["one", "three", "."], ["five", "six", "."]]
    assert without(doc, set(range(9))).sentences == []


def test_removal_steps_single_words_or_shares():
    assert removal_steps(12) == list(range(1, 13))
    assert removal_steps(50) == list(range(1, 21))
    long = removal_steps(400)
    assert len(long) == 20 and long[0] == 10 and long[-1] == 200
    assert removal_steps(12, fractions=True)[-1] == 6


@pytest.mark.parametrize("name", ["tiny-hcan", "tiny-han", "tiny-sanet"])
def test_leave_one_out_matches_one_document_at_a_time(checkpoint_dir, name):
    classifier = load_classifier(checkpoint_dir / name, device="cpu")
    ex = explain(classifier, TEXT)
    label = max(range(len(ex.probabilities)), key=ex.probabilities.__getitem__)
    base = ex.probabilities[label]
    assert _probability(classifier, ex.document, label) == pytest.approx(base, abs=1e-6)
    batched = leave_one_out(classifier, ex.document, label).scores
    assert len(batched) == ex.document.num_tokens
    for i in (0, 3, len(batched) - 1):
        assert batched[i] == pytest.approx(base - _probability(classifier, without(ex.document, {i}), label), abs=1e-5)


@pytest.mark.parametrize("name", ["tiny-hcan", "tiny-han", "tiny-sanet", "tiny-kimcnn"])
def test_gradient_times_input_matches_a_finite_difference(checkpoint_dir, name):
    """grad . e is the derivative of the logit when word i's embedding is scaled by (1 + t)."""
    classifier = load_classifier(checkpoint_dir / name, device="cpu")
    classifier.model.double()
    document = tokenize(TEXT, classifier.text_config)
    label = 2
    found = gradient_times_input(classifier, document, label)
    assert found is not None and len(found.scores) == document.num_tokens
    scores = found.scores
    batch = encode_documents([document], classifier.vocab)

    def logit(word: int, t: float) -> float:
        def scale(module, inputs, output):
            real = (inputs[0] != 0).flatten().nonzero().squeeze(1)  # reading order
            factor = torch.ones(output.shape[:-1], dtype=output.dtype).flatten()
            factor[real[word]] = 1 + t
            return output * factor.view(output.shape[:-1]).unsqueeze(-1)

        handle = classifier.model.embedding.register_forward_hook(scale)
        try:
            with torch.no_grad():
                return classifier.model(batch).logits[0, label].item()
        finally:
            handle.remove()

    assert all(p.grad is None for p in classifier.model.parameters())  # the shared model is untouched
    for word in (0, 2, document.num_tokens - 1):
        h = 1e-5
        reference = abs((logit(word, h) - logit(word, -h)) / (2 * h))
        assert scores[word] == pytest.approx(reference, rel=1e-4, abs=1e-8)


def test_erasure_curves_are_the_probability_drops_of_each_ranking(checkpoint_dir):
    classifier = load_classifier(checkpoint_dir / "tiny-hcan", device="cpu")
    ex = explain(classifier, TEXT)
    curves = erasure_curves(classifier, ex, max_k=5, draws=3)
    label = ex.labels.index(curves.label)
    assert curves.ks == [1, 2, 3, 4, 5] and set(curves.drops) == {"attention", "gradient × input",
                                                                    "integrated gradients", "leave-one-out",
                                                                    "sentence attention × even words", "random"}
    scores = curves.scores["attention"]
    top3 = set(sorted(range(len(scores)), key=lambda i: -scores[i])[:3])
    expected = curves.probability - _probability(classifier, without(ex.document, top3), label)
    assert curves.drops["attention"][2] == pytest.approx(expected, abs=1e-5)
    # leave-one-out's first step removes the word whose removal alone hurts most: its drop is the max
    assert curves.drops["leave-one-out"][0] == pytest.approx(max(curves.scores["leave-one-out"]), abs=1e-6)
    assert set(curves.agreement) == {"gradient × input", "integrated gradients", "leave-one-out"}
    assert all(-1 <= r <= 1 for r in curves.agreement.values() if r is not None)


def test_verdicts_are_computed_from_the_curves():
    curves = ErasureCurves("sport", 0.9, [1, 2], {"attention": [0.2, 0.4], "random": [0.0, 0.1],
                                                  "gradient × input": [0.0, 0.1]})
    assert curves.auc == pytest.approx({"attention": 0.3, "random": 0.05, "gradient × input": 0.05})
    lines = curves.verdicts()
    assert lines[0] == ("attention: removing its top words (1 to 2) lowers P(sport) by 30.0 points on average, "
                        "25.0 points more than random.")
    assert "no more than random (+0.0 points)" in lines[1]
    assert lines[-1] == "random: removing random words (1 to 2) lowers P(sport) by 5.0 points on average."


def test_split_erasure_averages_documents_on_shares_of_their_words(checkpoint_dir):
    classifier = load_classifier(checkpoint_dir / "tiny-han", device="cpu")
    texts = [TEXT, "Hi.", "The film was great and the actors were superb. I loved it.", "   "]
    seen = []
    result = split_erasure(classifier, texts, steps=4, progress=lambda done, total: seen.append((done, total)))
    assert result.documents == 2  # "Hi." is too short and the blank text has no words
    assert result.shares == [0.125, 0.25, 0.375, 0.5]
    assert all(len(d) == 4 for d in result.drops.values()) and seen[-1] == (4, 4)
    one = erasure_curves(classifier, explain(classifier, TEXT), 4, seed=0, fractions=True)
    two = erasure_curves(classifier, explain(classifier, texts[2]), 4, seed=2, fractions=True)
    for method in ("attention", "leave-one-out"):
        mean = [(a + b) / 2 for a, b in zip(one.drops[method], two.drops[method])]
        assert result.drops[method] == pytest.approx(mean, abs=1e-9)


@pytest.mark.parametrize("name", ["tiny-han", "tiny-hcan", "tiny-sanet"])
def test_jain_and_wallaces_gradient_holds_the_attention_and_differentiates_the_probability(checkpoint_dir, name):
    """Jain & Wallace's gradient importance treats the attention as constants and
    differentiates the softmax output. Reference: capture every site's weights in one pass, then
    replay them as constants in a second pass (another mechanism, the same mathematics), and take
    the gradient of the label's probability by hand. It differs from the attribution beside
    attention (through the attention, of the logit)."""
    from hierattn.data.batches import encode_documents
    from hierattn.data.text import tokenize
    from hierattn.models.intervention import attention_override, embedding_lookups

    classifier = load_classifier(checkpoint_dir / name, device="cpu")
    document = tokenize("The team won the cup. The fans sang all night long.", classifier.text_config)
    label = 1
    ours = gradient_times_input(classifier, document, label, jain_wallace=True).scores
    captured: dict[str, list] = {}

    def capture(site, weights, mask):
        captured.setdefault(site, []).append(weights.detach().clone())
        return weights

    batch = encode_documents([document], classifier.vocab)
    with torch.no_grad(), attention_override(capture, in_order=False):
        classifier.model(batch, return_attentions=False)
    replayed = {site: iter(values) for site, values in captured.items()}
    with embedding_lookups() as lookups, torch.enable_grad(), attention_override(
            lambda site, weights, mask: next(replayed[site]), in_order=False):
        logits = classifier.model(batch, return_attentions=False).logits
        ids, vectors = lookups[0]
        (grad,) = torch.autograd.grad(torch.softmax(logits[0], -1)[label], vectors)
    reference = (grad * vectors).sum(-1).abs()[ids != 0].tolist()
    assert captured and ours == pytest.approx(reference, rel=1e-5, abs=1e-9)
    through = gradient_times_input(classifier, document, label).scores
    assert through != pytest.approx(ours, rel=1e-3)


def test_split_erasure_puts_the_null_beside_figures_on_its_own_documents(checkpoint_dir):
    """The null (sentence attention x even words) exists for documents of two or more sentences only;
    ``paired`` gives every method's area on exactly those documents, so the row that sets the
    attention beside the null never mixes a one-sentence document into one side."""
    from hierattn.analysis.explain import explain
    from hierattn.analysis.faithfulness import STRUCTURAL, split_erasure

    classifier = load_classifier(checkpoint_dir / "tiny-hcan", device="cpu")
    texts = ["A single long sentence with several words in it here", TEXT,
             "Two sentences here. And the second one follows now!", "Another lone sentence of some eight words"]
    result = split_erasure(classifier, texts, steps=4, methods=("attention", STRUCTURAL, "random"))
    multi = [i for i, t in enumerate(texts) if len(explain(classifier, t).document.sentences) >= 2]
    assert result.documents == 4 and result.paired_documents == len(multi) == 2
    for method in ("attention", STRUCTURAL, "random"):  # each multi-sentence document's own area, by hand
        areas = [erasure_curves(classifier, explain(classifier, texts[i]), 4, seed=i, fractions=True,
                                methods=("attention", STRUCTURAL, "random")).drops[method] for i in multi]
        assert result.paired[method] == pytest.approx(sum(sum(a) / len(a) for a in areas) / len(areas), abs=1e-9)
    assert result.auc["attention"] != pytest.approx(result.paired["attention"], abs=1e-12)
