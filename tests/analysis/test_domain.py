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


def _signals(ref, sample) -> dict[str, np.ndarray]:
    """Per document of ``sample`` (a reference computed over the queries), whether each signal alone
    reaches ``ref``'s level."""
    level, none = ref.level, np.zeros(len(sample.entropies), bool)
    return {
        "rare": none if sample.rare_flags is None else np.array(
            [domain.p_value(ref.rare_null(len(f))[0], f.mean() if len(f) else np.nan) <= level
             for f in sample.rare_flags]),
        "entropy": np.array([domain.p_value(ref.entropy_null()[0], v) <= level for v in sample.entropies]),
        "near": none if ref.distances is None else np.array(
            [domain.p_value(ref.distances, d) <= level
             for d in domain.neighbour_distances(ref.vectors, sample.vectors)]),
        "long": np.array([domain.p_value(ref.lengths, n) <= level for n in sample.lengths]),
    }


def _shares(found: dict[str, np.ndarray]) -> dict[str, float]:
    return {"any": float(np.mean(np.any(list(found.values()), axis=0))),
            **{k: float(v.mean()) for k, v in found.items()}}


def _flagged(classifier, ref, texts: list[str]) -> dict[str, float]:
    """The share flagged, and the share each signal alone flags at its level (every signal computed
    in batches the way the reference computes them; ``check`` on one document is tested below)."""
    return _shares(_signals(ref, domain.reference(classifier, texts, "sample")))


def _left_out(ref, i: int):
    """``ref`` without document ``i`` (the null), and document ``i`` alone (the query)."""
    keep = np.arange(len(ref.entropies)) != i

    def part(mask):
        return domain.DomainReference(
            ref.source, None if ref.rare_flags is None else [f for f, k in zip(ref.rare_flags, mask) if k],
            ref.entropies[mask], None if ref.vectors is None else ref.vectors[mask], lengths=ref.lengths[mask])

    return part(keep), part(~keep)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["tweets-han", "tweets-hcan", "tweets-transformer", "tweets-minilm",
                                   "bbc-news-han", "bbc-news-hcan"])
def test_flags_about_alpha_in_domain_and_most_texts_from_elsewhere(model):
    """Half the test split is the null of the other half: at most about ALPHA flagged. A tweet model
    flags every BBC article, transformers included (they have no rare words, and their averaged
    vector sits among the tweets': the length does it); a news model flags most restaurant reviews
    and most tweets. Measured (2026-11-28): in-domain 3.9-5.8%; articles 100% on all four tweet
    models; reviews 67% (HAN) and 58% (HCAN) of 12; tweets 53% and 60%."""
    from tests.analysis.domain_texts import REVIEWS

    classifier = load_classifier(REPO / "checkpoints" / model)
    own = "tweets" if model.startswith("tweets") else "bbc-news"
    test = _split(own, "test", 2000 if own == "tweets" else 400)
    ref = domain.reference(classifier, test[::2], f"{own} test")
    assert len(ref.entropies) == len(ref.lengths) == len(ref.vectors)
    assert ref.signals == (3 if model.endswith(("transformer", "minilm")) else 4)
    queries = test[1::2]
    in_domain = _flagged(classifier, ref, queries)["any"]
    assert in_domain <= 0.05 + 2 * (0.05 * 0.95 / len(queries)) ** 0.5, in_domain  # the null holds: ALPHA
    if own == "tweets":
        articles = _flagged(classifier, ref, _split("bbc-news", "test", 40))
        assert articles["any"] == 1.0, articles
    else:
        reviews, tweets = _flagged(classifier, ref, REVIEWS), _flagged(classifier, ref, _split("tweets", "test", 120))
        assert reviews["any"] >= 0.5 and tweets["any"] >= 0.5, (reviews, tweets)


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


def test_the_rare_word_peers_are_the_test_documents_within_half_again_of_the_length():
    """A document of n words meets the test documents of n / 1.5 to 1.5 n words (never an empty
    one), each with its own share of rare words, in the reference's order: against a direct reading."""
    rng = np.random.default_rng(3)
    flags = [rng.random(k) < 0.3 for k in rng.integers(0, 60, size=400)] + [np.zeros(0, bool), np.ones(20, bool)]
    ref = domain.DomainReference("x", flags, np.zeros(3))
    for words in (1, 2, 13, 20, 30, 40, 90):
        direct = [f.mean() for f in flags if words / 1.5 <= len(f) <= words * 1.5 and len(f)]
        null, described = ref.rare_null(words)
        if len(direct) >= domain.PEERS:
            assert null.tolist() == direct and described.startswith("x documents of")
        else:  # every stretch of ``words`` words of the documents run together in one fixed order
            stream = np.concatenate([flags[i] for i in np.random.default_rng(0).permutation(len(flags))])
            stretches = [stream[i: i + words].mean() for i in range(len(stream) - words + 1)]
            assert described.startswith("stretches") and np.allclose(null, stretches, rtol=0, atol=1e-12)
    assert ref.rare_null(20)[1].startswith("x documents") and ref.rare_null(2)[1].startswith("stretches")  # both read


def test_the_nearest_document_distance_is_the_kth_of_a_direct_computation():
    rng = np.random.default_rng(0)
    reference = domain.unit_rows(rng.normal(size=(40, 6)))
    queries = domain.unit_rows(rng.normal(size=(5, 6)))
    found = domain.neighbour_distances(reference, queries, k=3)
    for q, d in zip(queries, found):
        assert d == pytest.approx(sorted(1 - reference @ q)[2], abs=1e-6)
    null = domain.neighbour_distances(reference, reference, leave_out_self=True, k=3)
    for i, d in enumerate(null):  # each left out of its own neighbours
        assert d == pytest.approx(sorted(np.delete(1 - reference @ reference[i], i))[2], abs=1e-6)


def test_the_nearest_document_null_holds_at_alpha_and_finds_a_planted_shift():
    """Documents drawn like the reference are flagged about ALPHA of the time by the distance alone
    (2,000 draws against 20 references of 300); drawn from a shifted cloud, nearly always."""
    rng = np.random.default_rng(1)
    centre, elsewhere = rng.normal(size=16), rng.normal(size=16)  # the model's documents; another register

    def cloud(middle, n):
        return domain.unit_rows(middle + 0.7 * rng.normal(size=(n, 16)))

    flagged, shifted = [], []
    for _ in range(20):
        ref = domain.DomainReference("x", None, np.zeros(300), cloud(centre, 300))
        flagged += [domain.p_value(ref.distances, d) <= domain.ALPHA
                    for d in domain.neighbour_distances(ref.vectors, cloud(centre, 100))]
        shifted += [domain.p_value(ref.distances, d) <= domain.ALPHA
                    for d in domain.neighbour_distances(ref.vectors, cloud(elsewhere, 100))]
    assert abs(np.mean(flagged) - domain.ALPHA) < 3 * (domain.ALPHA * 0.95 / len(flagged)) ** 0.5, np.mean(flagged)
    assert np.mean(shifted) > 0.9, np.mean(shifted)


def test_check_weighs_the_vector_and_the_length_beside_the_other_signals():
    """A document whose vector lands far from every reference document, or longer than all of them,
    is flagged at ALPHA over the four signals; the reference's own kind of document is not."""
    classifier = load_classifier(REPO / "checkpoints" / "tweets-han")
    rng = np.random.default_rng(2)
    centre = rng.normal(size=8)
    vectors = domain.unit_rows(centre + 0.5 * rng.normal(size=(400, 8)))
    peers = [np.array([False] * 6) for _ in range(400)]
    ref = domain.DomainReference("x", peers, np.linspace(0.1, 0.9, 400), vectors, lengths=np.full(400, 6.0))
    assert ref.signals == 4 and ref.level == domain.ALPHA / 4
    document = tokenize(" ".join(classifier.vocab.itos[2:8]), classifier.text_config)  # six common words
    usual = domain.check(classifier, document, [0.9, 0.05, 0.05], ref, centre)
    assert not usual.flagged and usual.length == 6 and usual.distance_p > ref.level
    far = domain.check(classifier, document, [0.9, 0.05, 0.05], ref, -centre)
    assert far.flagged and far.distance_p == 1 / 401 and far.distance_reached == (0, 400)
    longer = tokenize(" ".join(classifier.vocab.itos[2:14]), classifier.text_config)  # twelve words
    assert domain.check(classifier, longer, [0.9, 0.05, 0.05], ref, centre).length_p == 1 / 401


@pytest.mark.slow  # trains
def test_a_model_trained_on_an_uploaded_file_flags_about_alpha_of_its_own_test_documents(tmp_path):
    """The app's reference for a model trained on your own file is the test documents kept with it
    (about a tenth of the file: 98 of 979 rows, as in the held-out review data set that once had
    its own test reviews flagged). Each kept test document, judged against the others (leave one
    out), is flagged at most about ALPHA of the time; a BBC article, always; and judged against
    another data set's documents (the mistake the check once made), most of them. A CSV of tweets
    stands in for the file, read and trained the way the Train page does it.
    Measured (2026-11-28): own test documents 5 of 98 flagged (4 and 6 with two other samples of
    the file); articles 20 of 20; against bbc-news test articles 74-96 of 98."""
    import csv
    import io

    from hierattn.checkpoint.reading import read_heldout
    from hierattn.data.formats import read_rows
    from hierattn.data.split import prepare
    from hierattn.data.tables import dataset_from_rows
    from hierattn.data.text import TextConfig
    from hierattn.training.in_memory import train
    from hierattn.training.loop import TrainConfig

    tweets = load_builtin("tweets")
    rows = np.random.default_rng(0).choice(len(tweets.texts), 979, replace=False)
    file = io.StringIO()
    writer = csv.writer(file)
    writer.writerow(["review", "stars"])
    writer.writerows([tweets.texts[i], tweets.label_names[tweets.labels[i]]] for i in rows)
    dataset = dataset_from_rows(read_rows(file.getvalue().encode(), "my-reviews.csv"), "review", "stars", "my-reviews")
    text = TextConfig(8, 50)
    train("han", {"embed_dim": 32, "hidden": 16, "attention_dim": 16}, prepare(dataset, text), text,
          TrainConfig(epochs=3, batch_size=32, lr=3e-3, min_freq=1), tmp_path / "mine", device="cpu")
    classifier = load_classifier(tmp_path / "mine")
    kept = [t for t, _ in read_heldout(tmp_path / "mine")["test"]]
    assert 90 <= len(kept) <= 110
    ref = domain.reference(classifier, kept, "my-reviews test")
    assert ref.signals == 4
    found = [_signals(*_left_out(ref, i)) for i in range(len(kept))]
    own = np.mean([np.any([v[0] for v in f.values()]) for f in found])
    assert own <= 0.05 + 2 * (0.05 * 0.95 / len(kept)) ** 0.5, own
    articles = _flagged(classifier, ref, _split("bbc-news", "test", 20))
    assert articles["any"] == 1.0, articles
    elsewhere = domain.reference(classifier, _split("bbc-news", "test", 200), "bbc-news test")
    assert _flagged(classifier, elsewhere, kept)["any"] >= 0.5
