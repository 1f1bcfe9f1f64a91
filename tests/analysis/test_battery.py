"""The faithfulness battery on constructed models whose answers are known, and its
pieces against small reference computations."""
import math

import pytest
import torch
from torch import nn

from hierattn.analysis import attention_tests as tests
from hierattn.analysis import eraser
from hierattn.analysis.attribution import gradient_times_input
from hierattn.analysis.battery import (
    ATTRIBUTION_RANKINGS,
    RANDOM,
    SENTENCE_ATTENTION,
    STRUCTURAL,
    TWO_STAGE,
    WORD_ATTENTION,
    document_battery,
    rankings,
)
from hierattn.analysis.battery_split import bootstrap, evenly_spaced, split_battery
from hierattn.analysis.compare import importance
from hierattn.analysis.explain import explain
from hierattn.analysis.rollout import GRADIENT_WEIGHTED, beside_raw, rollout
from hierattn.checkpoint.classifier import Classifier
from hierattn.checkpoint.reading import load_classifier
from hierattn.contract import WORD, AttentionMap
from hierattn.data.text import TextConfig, Vocab, tokenize
from hierattn.models.common import classification_output, flatten_words
from hierattn.models.intervention import intervene

TEXT = "The striker scored twice today. The goal won the cup! Fans cheered loudly in the rain."
LABELS = ["goal", "other"]


class Constructed(nn.Module):
    """A flat model with one word-level attention site ("word.target", peaked on ``key``).

    ``depends``: "word": class 0's logit is +30 when ``key`` is in the input, -30 otherwise (the
    output depends on that one word, not on the attention); "attention": the logit is 30 times the
    attention-weighted share of ``key`` (the output depends on the attention); "nothing": the logit
    is 30 times the share of ``key`` among the words, the attention computed and ignored."""

    def __init__(self, key: int, depends: str):
        super().__init__()
        self.key, self.depends = key, depends
        self.bias = nn.Parameter(torch.zeros(1))  # something to have gradients on

    def forward(self, batch, return_attentions=True):
        ids, mask = flatten_words(batch)
        hit = (ids == self.key) & mask
        scores = 3.0 * hit.float()
        weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1).nan_to_num(0.0)
        weights = intervene("word.target", weights, mask)
        if self.depends == "word":
            evidence = torch.where(hit.any(1), 1.0, -1.0)
        elif self.depends == "attention":
            evidence = 2 * (weights * hit).sum(1) - 1
        else:
            evidence = 2 * hit.sum(1) / mask.sum(1).clamp_min(1) - 1
        logits = torch.stack([30 * evidence + self.bias, torch.zeros_like(evidence)], 1)
        attentions = {"word.target": AttentionMap(weights, ("batch", "key"), WORD, mask)} if return_attentions else {}
        return classification_output(logits, batch, attentions)


def constructed(depends: str) -> Classifier:
    vocab = Vocab.build([tokenize(TEXT)], min_freq=1)
    model = Constructed(vocab.stoi["goal"], depends).eval()
    return Classifier(f"constructed-{depends}", model, "hcan", vocab, LABELS, TextConfig(), {}, None,
                      torch.device("cpu"))


def test_comprehensiveness_of_the_one_word_is_the_whole_probability():
    classifier = constructed("word")
    ex = explain(classifier, TEXT)
    assert ex.label == "goal" and ex.probabilities[0] == pytest.approx(1.0, abs=1e-12)
    ranked, _ = rankings(ex)
    words = [t.norm for s in ex.document.sentences for t in s.tokens]
    assert max(range(len(words)), key=ranked[WORD_ATTENTION].__getitem__) == words.index("goal")
    [scores] = eraser.eraser_scores(classifier, ex.document, [ranked[WORD_ATTENTION]], "word", 0, ex.probabilities[0])
    assert scores.comprehensiveness == pytest.approx([ex.probabilities[0]] * len(eraser.BINS), abs=1e-12)
    assert scores.sufficiency == pytest.approx([0.0] * len(eraser.BINS), abs=1e-12)
    battery = document_battery(classifier, ex, random_draws=20)
    random_words = battery.eraser[RANDOM["word"]]
    assert random_words.aopc_comprehensiveness < 0.6 * scores.aopc_comprehensiveness  # random rarely hits it early
    assert battery.kendall[(WORD, "leave-one-out")] > 0.3  # the attention ranks first the one word that matters


def test_a_model_that_ignores_its_attention_shows_no_change():
    classifier = constructed("nothing")
    ex = explain(classifier, TEXT)
    battery = document_battery(classifier, ex, permutations=30, adversarial=True)
    assert battery.permutation[WORD] == pytest.approx(0.0, abs=1e-7)
    assert battery.uniform[WORD][0] == pytest.approx(0.0, abs=1e-7) and battery.uniform[WORD][1] == ex.label
    # any attention gives the same output, so the search moves far from the real one
    assert battery.adversarial[WORD].max_divergence > 0.4


def test_a_model_that_uses_its_attention_changes_under_the_interventions():
    classifier = constructed("attention")
    ex = explain(classifier, TEXT)
    battery = document_battery(classifier, ex, permutations=30, adversarial=True)
    assert battery.permutation[WORD] > 0.05
    assert battery.uniform[WORD][0] > 0.05
    ignoring = document_battery(constructed("nothing"), explain(constructed("nothing"), TEXT), permutations=2,
                                adversarial=True)
    within = battery.adversarial[WORD]
    assert within.max_divergence is None or within.max_divergence < ignoring.adversarial[WORD].max_divergence
    assert all(c <= within.epsilon + 1e-9 for c, d in zip(within.output_changes, within.divergences) if d is not None)


def test_kendall_tau_b_against_hand_computed_values():
    assert tests.kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert tests.kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # pairs of (1,1,2) vs (1,2,3): concordant 2, discordant 0, ties in x 1 -> 2 / sqrt(2 * 3)
    assert tests.kendall_tau([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / math.sqrt(6))
    assert tests.kendall_tau([1, 1], [1, 2]) is None and tests.kendall_tau([1], [1]) is None


def test_permuting_keeps_each_distribution_and_its_padding():
    weights = torch.tensor([[0.5, 0.3, 0.2, 0.0], [0.9, 0.1, 0.0, 0.0]])
    mask = weights > 0
    g = torch.Generator().manual_seed(1)
    seen = set()
    for _ in range(30):
        p = tests.permute_real(weights, mask, g)
        assert (p[~mask] == 0).all()
        for row in range(2):
            assert sorted(p[row][mask[row]].tolist()) == sorted(weights[row][mask[row]].tolist())
        seen.add(tuple(p[0].tolist()))
    assert len(seen) > 3  # it does permute


def test_jsd_bounds_and_total_variation():
    p, q = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    assert float(tests.jsd(p, q)) == pytest.approx(math.log(2))
    assert float(tests.jsd(p, p)) == pytest.approx(0.0)
    assert float(tests.tvd(torch.tensor([0.7, 0.3]), torch.tensor([0.4, 0.6]))) == pytest.approx(0.3)


def test_bins_and_keeping_units():
    assert eraser.bin_counts(10) == [1, 1, 1, 2, 5]
    assert eraser.bin_counts(200) == [2, 10, 20, 40, 100]
    doc = tokenize("One two three. Four. Five six.")
    kept = eraser.keeping(doc, "sentence", {0, 2})
    assert [[t.norm for t in s.tokens] for s in kept.sentences] == [["one", "two", "three", "."], ["five", "six", "."]]
    kept = eraser.keeping(doc, "word", {1, 6})
    assert [[t.norm for t in s.tokens] for s in kept.sentences] == [["two"], ["five"]]


def test_bootstrap_interval_holds_the_mean_and_narrows_with_documents():
    few = bootstrap([0.0, 1.0] * 5)
    many = bootstrap([0.0, 1.0] * 200)
    assert few[1] <= few[0] <= few[2] and many[1] <= many[0] <= many[2]
    assert (many[2] - many[1]) < (few[2] - few[1]) / 3


def test_rollout_against_a_hand_computation():
    a1 = torch.tensor([[1.0, 0.0], [0.5, 0.5]])
    a2 = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    mask = torch.tensor([True, True])
    eye = torch.eye(2)
    expected = (0.5 * a2 + 0.5 * eye) @ (0.5 * a1 + 0.5 * eye)
    torch.testing.assert_close(rollout([a1, a2], mask), expected)
    torch.testing.assert_close(rollout([eye, eye], mask), eye)


@pytest.mark.parametrize("name", ["tiny-hcan", "tiny-sanet"])
def test_gradient_weighted_attention_has_the_raw_maps_layout(checkpoint_dir, name):
    classifier = load_classifier(checkpoint_dir / name, device="cpu")
    ex = explain(classifier, TEXT)
    kind, maps = beside_raw(classifier, ex)
    assert kind == GRADIENT_WEIGHTED and set(maps) == set(ex.self_attention_names)
    for n, derived in maps.items():
        raw = ex.attentions[n]
        assert derived.axes == tuple(a for a in raw.axes if a != "head") and derived.level == raw.level
        assert (derived.weights >= 0).all() and (derived.weights[~derived.mask] == 0).all()
    assert any(m.weights.sum() > 0 for m in maps.values())


@pytest.mark.parametrize("name", ["tiny-han", "tiny-hcan", "tiny-hcan-flat-max", "tiny-han-cached", "tiny-sanet",
                                  "tiny-halstm", "tiny-onlstm", "tiny-mahnn", "tiny-kimcnn", "tiny-tfidf"])
def test_every_model_gets_the_tests_that_apply_and_is_told_which_do_not(checkpoint_dir, name):
    classifier = load_classifier(checkpoint_dir / name, device="cpu")
    ex = explain(classifier, TEXT)
    battery = document_battery(classifier, ex, permutations=5)
    text = " ".join(battery.not_applicable)
    if name in ("tiny-han", "tiny-hcan", "tiny-han-cached"):  # words ranked by the two-stage product only
        assert {TWO_STAGE, SENTENCE_ATTENTION, STRUCTURAL} <= set(battery.eraser)
        assert WORD_ATTENTION not in battery.eraser
        assert set(battery.permutation) == {"word", "sentence"} and "both" in battery.uniform
    if name == "tiny-kimcnn":
        assert "coverage" in text and not battery.eraser and not battery.permutation
    if name in ("tiny-tfidf", "tiny-onlstm"):
        assert not battery.eraser and "no attention" in text or "gate" in text
    if name == "tiny-halstm":
        assert "recurrent cell" in text and not battery.permutation
    for row in battery.rows():
        assert row["how to read"] and row["level"] in ("word", "sentence", "both")


def test_split_battery_gives_intervals_beside_baselines(checkpoint_dir):
    classifier = load_classifier(checkpoint_dir / "tiny-han", device="cpu")
    texts = [TEXT, "Rain again. Nobody came to the match.", "A quiet day in the city. The mayor spoke."] * 2
    truth = [classifier.labels[0]] * len(texts)
    done = []
    result = split_battery(classifier, texts, truth, permutations=4, progress=lambda i, n: done.append((i, n)))
    assert result.documents == len(texts) and done[-1] == (len(texts), len(texts))
    comprehensiveness = next(r for r in result.rows if r["test"] == f"comprehensiveness ({TWO_STAGE})")
    assert comprehensiveness["baseline is"] == RANDOM["word"] and comprehensiveness["difference"] is not None
    assert comprehensiveness["structural"] is not None and comprehensiveness["structural difference"] is not None
    for row in result.rows:
        mean, low, high = row["value"]
        assert low <= mean + 1e-12 and mean <= high + 1e-12
    assert not any(r["test"].startswith("seed variance") for r in result.rows)  # battery_split's doc: why not
    assert set(result.accuracy) == {"word", "sentence", "both"}
    assert 0 <= result.accuracy["word"]["uniform"][0] <= 1


def test_a_one_sentence_document_skips_what_one_sentence_cannot_test(checkpoint_dir):
    classifier = load_classifier(checkpoint_dir / "tiny-han", device="cpu")
    ex = explain(classifier, "The striker scored twice today")
    battery = document_battery(classifier, ex, permutations=3)
    assert "sentence" not in battery.permutation and "both" not in battery.uniform and "word" in battery.permutation
    assert SENTENCE_ATTENTION not in battery.eraser and TWO_STAGE in battery.eraser
    assert STRUCTURAL not in battery.eraser  # one sentence: nothing is ranked across sentences
    assert any("one sentence" in line for line in battery.not_applicable)


def test_words_ranked_across_sentences_face_the_sentence_times_even_words_null(checkpoint_dir):
    """A hierarchical model's word weights sum to 1 within each sentence; ranked across sentences
    by the two-stage product, their order owes much to the sentence weights. The null keeps those:
    each word alpha_s / n_s (1 / sentence length is that product with both levels even, so it
    cannot show what the word level adds). Every figure of the attention's word ranking sits beside
    that null's; captum's and the sentence-level rows do not. Within each sentence, where the
    sentence weight is constant, Kendall tau gets rows of its own."""
    from hierattn.analysis.faithfulness import sentence_even_weights

    classifier = load_classifier(checkpoint_dir / "tiny-hcan", device="cpu")
    ex = explain(classifier, TEXT)
    lengths = [len(s.tokens) for s in ex.document.sentences]
    alpha = ex.target_attention("sentence")
    null = sentence_even_weights(ex)
    assert null == pytest.approx([float(alpha[s]) / n for s, n in enumerate(lengths) for _ in range(n)])
    ranked, _ = rankings(ex)
    assert WORD_ATTENTION not in ranked and TWO_STAGE in ranked
    battery = document_battery(classifier, ex, permutations=2)
    rows = battery.rows()
    kinds = ("comprehensiveness", "sufficiency", "Kendall tau with ")
    word_rows = [r for r in rows if r["level"] == "word" and r["test"].startswith(kinds)]
    of_attention = [r for r in word_rows if not any(f"({name})" in r["test"] for name in ATTRIBUTION_RANKINGS)]
    assert len(of_attention) == 5 and all(r["structural"] is not None for r in of_attention)  # 2 ERASER, 3 taus
    assert all(r.get("structural") is None for r in word_rows if r not in of_attention)
    assert all(r.get("structural") is None for r in rows if r["level"] == "sentence")
    assert battery.eraser[STRUCTURAL].unit == eraser.WORD_UNITS
    # the null's Kendall tau with leave-one-out, by hand (tau-b counts its ties within a sentence)
    from hierattn.analysis.attention_tests import kendall_tau

    within = {r["test"]: r for r in rows if r["test"].startswith("Kendall tau within sentences")}
    assert set(within) == {"Kendall tau within sentences with gradient", "Kendall tau within sentences with "
                           "leave-one-out", "Kendall tau within sentences with integrated gradients"}
    assert battery.kendall_structural[("word", "gradient")] is None or -1 <= battery.kendall_structural[
        ("word", "gradient")] <= 1
    two_stage = list(importance(ex).words.values())
    gradient = gradient_times_input(classifier, ex.document, ex.labels.index(ex.label), jain_wallace=True).scores
    taus, start = [], 0
    for n in lengths:
        if n >= 2:
            taus.append(kendall_tau(two_stage[start: start + n], gradient[start: start + n]))
        start += n
    assert within["Kendall tau within sentences with gradient"]["value"] == pytest.approx(
        sum(taus) / len(taus), abs=1e-9)
    assert battery.kendall_structural[("word", "gradient")] == pytest.approx(kendall_tau(null, gradient), abs=1e-9)


def test_a_flat_model_has_no_structural_null(checkpoint_dir):
    """SANet's words are ranked over the document, not within sentences: there is no sentence
    structure for a null to keep, so no row carries one."""
    classifier = load_classifier(checkpoint_dir / "tiny-sanet", device="cpu")
    ex = explain(classifier, TEXT)
    battery = document_battery(classifier, ex, permutations=2)
    assert all(r.get("structural") is None for r in battery.rows()) and STRUCTURAL not in battery.eraser
    assert not battery.kendall_within


def test_a_split_sample_is_spread_through_it_not_its_head():
    split = [0] * 50 + [1] * 50  # a split in data set order, sorted by class
    assert evenly_spaced(split, 10).count(1) == 5 and evenly_spaced(split, 500) == split
    assert evenly_spaced(list(range(10)), 3) == [0, 3, 6]


@pytest.mark.parametrize("row,expected", [
    ({"test": "comprehensiveness (word attention)", "value": 0.30, "baseline": 0.10}, "beats random"),
    ({"test": "comprehensiveness (word attention)", "value": 0.105, "baseline": 0.10}, "no better than random"),
    ({"test": "comprehensiveness (word attention)", "value": 0.02, "baseline": 0.10}, "worse than random"),
    ({"test": "sufficiency (two-stage)", "value": 0.02, "baseline": 0.10}, "beats random"),  # lower is better
    ({"test": "sufficiency (two-stage)", "value": 0.30, "baseline": 0.10}, "worse than random"),
    ({"test": "Kendall tau with gradient", "value": 0.45, "baseline": 0.01}, "beats random"),
    ({"test": "Kendall tau with leave-one-out", "value": 0.45, "baseline": 0.01, "structural": 0.40},
     "beats random, not sentence attention × even words"),
    ({"test": "comprehensiveness (two-stage)", "value": 0.30, "baseline": 0.10, "structural": 0.10}, "beats random"),
    ({"test": "Kendall tau with gradient", "value": 0.05, "baseline": 0.01}, "no better than random"),
    ({"test": "Kendall tau with gradient", "value": None, "baseline": 0.01}, "cannot be computed"),
    ({"test": "permutation", "value": 0.001, "baseline": None}, "the weights' order does not matter"),
    ({"test": "permutation", "value": 0.4, "baseline": None}, "the weights' order matters"),
    ({"test": "uniform attention (predicts sport)", "value": 0.6, "baseline": None},
     "an even spread at inference flips it"),
    ({"test": "uniform attention", "value": 0.002, "baseline": None}, "an even spread at inference barely moves it"),
    ({"test": "adversarial attention", "value": 0.5, "baseline": 0.1},
     "other attention, same output"),
])
def test_each_row_gets_a_verdict_from_its_value_and_baseline(row, expected):
    from hierattn.analysis.verdicts import verdict

    assert verdict(row) == expected


def test_stacked_layers_come_in_the_order_the_model_applies_them():
    """Blocks by their number, not their name as text (which would roll a 12-block model's block10
    and block11 out before block2)."""
    from types import SimpleNamespace

    from hierattn.analysis.rollout import stacked_layers

    names = [f"word.self.block{i}" for i in (1, 10, 11, 12, 2, 3, 4, 5, 6, 7, 8, 9)]
    stacked = SimpleNamespace(axes=("batch", "query", "key"))
    ex = SimpleNamespace(self_attention_names=names, attentions=dict.fromkeys(names, stacked))
    assert stacked_layers(ex) == [f"word.self.block{i}" for i in range(1, 13)]


def test_every_sample_of_a_class_sorted_split_spans_the_classes(checkpoint_dir, monkeypatch):
    """A sample of N documents from a class-sorted split gives each class its share (within one
    document), and the adversarial search runs on documents of every class. Taking the first N
    instead made a faithfulness table's 100 tweets 100 negative ones, and `stats --documents N` read
    the first N of the class-sorted split."""
    from hierattn.analysis import battery_split as battery_module
    from hierattn.analysis.battery_split import evenly_spaced, split_battery
    from hierattn.data.split import stratified_split

    labels = [0] * 500 + [1] * 300 + [2] * 200  # sorted by class, as a split is
    test = stratified_split(labels)["test"]
    assert [labels[i] for i in test] == sorted(labels[i] for i in test)  # the split is sorted by class
    for count in (10, 30, 99):
        picked = [labels[i] for i in evenly_spaced(test, count)]
        for label, share in ((0, 0.5), (1, 0.3), (2, 0.2)):
            assert abs(picked.count(label) - share * count) <= 1, (count, label, picked)
    classifier = load_classifier(checkpoint_dir / "tiny-han", device="cpu")
    texts = [f"{word} match {i}. The fans sang." for word, n in (("won", 12), ("lost", 12), ("drew", 6))
             for i in range(n)]
    searched = []
    real = battery_module.document_battery

    def spy(classifier, ex, **kw):
        if kw.get("adversarial"):
            searched.append(ex.document.text.split()[0])
        kw["adversarial"] = False  # the search itself is not what this test measures
        return real(classifier, ex, **kw)

    monkeypatch.setattr(battery_module, "document_battery", spy)
    split_battery(classifier, texts, adversarial=True, adversarial_documents=10, permutations=2)
    assert len(searched) == 10 and set(searched) == {"won", "lost", "drew"}, searched


def test_the_attention_gets_one_summary_line_and_captums_rows_stay_references():
    from hierattn.analysis import verdicts

    rows = [{"test": "comprehensiveness (two-stage)", "value": 0.30, "baseline": 0.10, "structural": 0.28},
            {"test": "sufficiency (two-stage)", "value": 0.30, "baseline": 0.10, "structural": 0.40},
            {"test": "Kendall tau with integrated gradients", "value": 0.02, "baseline": 0.0},
            {"test": "comprehensiveness (integrated gradients)", "value": 0.60, "baseline": 0.10},
            {"test": "comprehensiveness (KernelSHAP of sentences)", "value": 0.60, "baseline": 0.10},
            {"test": "permutation", "value": 0.001, "baseline": None}]
    assert [verdicts.is_attribution(r) for r in rows] == [False, False, False, True, True, False]
    line = verdicts.summary(rows)
    # captum's two rows beat random but are not the attention's: 1 of its 3 tests, its null in 1 of 2
    assert line == ("The attention's ranking beats random in 1 of its 3 tests, and its null (sentence attention × "
                    "even words) in 1 of 2; it is worse than random in 1.")
