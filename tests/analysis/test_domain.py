"""The out-of-domain check (hierattn/analysis/domain.py): on documents of the model's own data set it
flags about ALPHA of them (its null holds there), and on the other data set's documents (a planted
shift) it flags most, each signal carrying the shift it is built for."""
import numpy as np
import pytest

from hierattn.analysis import domain
from hierattn.checkpoint.reading import load_classifier
from hierattn.data.builtin import load_builtin
from hierattn.data.split import stratified_split
from hierattn.data.text import tokenize
from tests.conftest import REPO


def _split(name: str, split: str, limit: int) -> list[str]:
    data = load_builtin(name)
    indices = stratified_split(data.labels)[split]
    step = max(1, len(indices) // limit)  # sorted by class: spread the sample over every class
    return [data.texts[i] for i in indices[::step][:limit]]


def _flagged(classifier, ref, texts: list[str]) -> tuple[float, float, float]:
    """Share flagged, and the share each signal alone flags at its level (both signals computed in
    batches the way the reference computes them; ``check`` on one document is tested below)."""
    sample = domain.reference(classifier, texts, "sample")
    rare = np.array([domain.p_value(ref.rare_null(len(f))[0], f.mean() if len(f) else np.nan) <= ref.level
                     for f in sample.rare_flags])
    sure = np.array([domain.p_value(ref.entropy_null()[0], v) <= ref.level for v in sample.entropies])
    return float(np.mean(rare | sure)), float(np.mean(rare)), float(np.mean(sure))


@pytest.mark.slow
@pytest.mark.parametrize("model, own, other, own_docs", [("tweets-han", "tweets", "bbc-news", 800),
                                                          ("bbc-news-han", "bbc-news", "tweets", 112)])
def test_flags_about_alpha_in_domain_and_most_of_the_other_data_set(model, own, other, own_docs):
    classifier = load_classifier(REPO / "checkpoints" / model)
    test = _split(own, "test", 2 * own_docs)  # half the null, the other half new in-domain text
    ref = domain.reference(classifier, test[::2], f"{own} test")
    assert ref.rare_flags is not None and len(ref.entropies) == len(ref.rare_flags)
    in_domain, _, _ = _flagged(classifier, ref, test[1::2])
    assert in_domain <= 0.05 + 2 * (0.05 * 0.95 / len(test[1::2])) ** 0.5, in_domain  # the null holds: ALPHA
    shifted, rare, sure = _flagged(classifier, ref, _split(other, "test", 120))
    assert shifted >= 0.5, (shifted, rare, sure)
    # articles to a tweet model: rare words; tweets to a news model: an undecided prediction
    assert (rare if own == "tweets" else sure) >= 0.4, (rare, sure)


def test_a_document_of_only_common_words_is_not_rare_and_p_values_count_the_reference():
    classifier = load_classifier(REPO / "checkpoints" / "tweets-han")
    common = classifier.vocab.itos[2:12]  # the ten most frequent words of its training data
    document = tokenize(" ".join(common), classifier.text_config)
    assert domain.rare_share(classifier.vocab, document) == 0.0
    unknown = tokenize("zzqxv qqzzk", classifier.text_config)
    assert domain.rare_share(classifier.vocab, unknown) == 1.0
    peers = [np.array([True] * k + [False] * (2 - k)) for k in (0, 1, 2)] * 40  # 120 two-word documents
    ref = domain.DomainReference("x", peers, np.array([0.1, 0.2, 0.3, np.nan]))
    null, described = ref.rare_null(2)
    assert len(null) == 120 and described == "x documents of 2-3 words"
    assert domain.p_value(null, 1.0) == (1 + 40) / (1 + 120) and domain.p_value(null, np.nan) == 1.0
    null, described = ref.rare_null(30)  # no peer of 30 words: every stretch of 30 of the 240 words
    assert len(null) == 240 - 30 + 1 and described.startswith("stretches of 30 words") and abs(null.mean() - 0.5) < 0.05
    assert domain.p_value(ref.entropy_null()[0], 0.05) == 1.0 and domain.p_value(ref.entropy_null()[0], 0.3) == 2 / 4
    check = domain.check(classifier, unknown, [0.5, 0.25, 0.25], ref)
    assert check.rare_share == 1.0 and check.rare_p == 41 / 121 and check.entropy_p == 1 / 4 and not check.flagged
    assert check.rare_reached == (40, 120) and check.entropy_reached == (0, 3)
    assert check.examples == ["zzqxv", "qqzzk"]
