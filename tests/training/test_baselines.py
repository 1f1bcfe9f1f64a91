"""A model trained on your own data, end to end: every accuracy beside
always-the-largest-class and TF-IDF on the same split, the held-out documents kept with the
checkpoint (size-capped), and HTML in the data decoded once when read."""
import json

import pytest

from hierattn.checkpoint.format import HELDOUT
from hierattn.checkpoint.reading import read_heldout
from hierattn.data.dataset import Dataset
from hierattn.data.formats import decode_markup
from hierattn.data.split import prepare
from hierattn.data.tables import dataset_from_rows
from hierattn.data.text import TextConfig, tokenize
from hierattn.training import baselines
from hierattn.training.in_memory import heldout, train
from hierattn.training.loop import TrainConfig

WORDS = {0: "great lovely superb", 1: "awful boring dreadful"}


def _reviews(n: int = 90, ratio: int = 2) -> Dataset:
    """A 2:1 file of reviews: always answering the larger class scores 66.7%."""
    texts, labels = [], []
    for i in range(n):
        y = 0 if i % (ratio + 1) else 1
        texts.append(f"I&#039;ve watched it.<br />The film was {WORDS[y].split()[i % 3]}. Seen on day {i}.")
        labels.append(y)
    return Dataset("my-reviews", texts, labels, ["pos", "neg"])


@pytest.mark.parametrize("raw,decoded", [
    ("I&#039;ve seen it", "I've seen it"),
    ("don&#039;t<br />stop", "don't stop"),
    ("<i>great</i> film", " great  film"),
    ("&amp;lt;b&amp;gt; stays as typed", "&lt;b&gt; stays as typed"),  # decoded once, not twice
    ("x < 3 and 5 > 2, <3", "x < 3 and 5 > 2, <3"),  # no tag: left alone
])
def test_markup_and_entities_are_decoded_once(raw, decoded):
    assert decode_markup(raw) == decoded


def test_an_upload_with_entities_reads_as_words_and_counts_them():
    rows = [{"text": f"I&#039;ve liked it {i}<br />ok", "label": "a" if i % 2 else "b"} for i in range(30)]
    rows += [{"text": f"plain text {i}", "label": "a" if i % 2 else "b"} for i in range(10)]
    dataset = dataset_from_rows(rows, "text", "label", "reviews")
    assert dataset.decoded == 30
    words = [t.norm for s in tokenize(dataset.texts[0]).sentences for t in s.tokens]
    assert "i039ve" not in words and "039" not in " ".join(words)


def test_baselines_are_the_largest_class_and_tfidf_on_the_same_split():
    data = prepare(_reviews(), TextConfig(4, 12))
    parts = {k: data.part(k) for k in ("train", "validation", "test")}
    recorded = baselines.baselines(parts["train"], {"validation": parts["validation"], "test": parts["test"]},
                                   ["pos", "neg"])
    largest = recorded[baselines.LARGEST]
    assert largest["label"] == "pos" and largest["test_accuracy"] == pytest.approx(
        sum(y == 0 for y in parts["test"][1]) / len(parts["test"][1]))
    assert recorded[baselines.TFIDF]["test_accuracy"] == 1.0  # the words give the class away
    assert baselines.beats(0.5, recorded) is False and baselines.beats(0.9, recorded) is True
    assert "always answering 'pos' scores" in baselines.sentence(0.9, recorded)


@pytest.mark.slow  # trains
def test_a_model_trained_on_your_file_keeps_its_held_out_documents_and_baselines(tmp_path):
    data = prepare(_reviews(), TextConfig(4, 12))
    metrics = train("han", {"embed_dim": 16, "hidden": 8, "attention_dim": 8}, data, TextConfig(4, 12),
                    TrainConfig(epochs=1, batch_size=16, min_freq=1), tmp_path / "mine", device="cpu")
    assert set(metrics["baselines"]) == {baselines.LARGEST, baselines.TFIDF}
    kept = read_heldout(tmp_path / "mine")
    assert len(kept["test"]) == len(data.split["test"]) and len(kept["validation"]) == len(data.split["validation"])
    assert {label for _, label in kept["test"]} == {"pos", "neg"}
    assert all(text in data.dataset.texts for text, _ in kept["test"])
    reviews = _reviews()
    builtin = prepare(Dataset("tweets", reviews.texts, reviews.labels, ["pos", "neg"]), TextConfig(4, 12))
    train("han", {"embed_dim": 16, "hidden": 8, "attention_dim": 8}, builtin, TextConfig(4, 12),
          TrainConfig(epochs=1, batch_size=16, min_freq=1), tmp_path / "builtin", device="cpu")
    assert not (tmp_path / "builtin" / HELDOUT).exists()  # a built-in data set is read from its package


def test_the_held_out_documents_are_capped_and_span_the_classes():
    data = prepare(_reviews(300), TextConfig(4, 12))
    kept = heldout(data, budget_mb=0.002)  # about 2 KB: a fraction of the 60 held-out documents
    assert 0 < len(kept["test"]) < len(data.split["test"])
    assert len(json.dumps(kept)) < 3000
    assert {label for _, label in kept["test"]} == {"pos", "neg"}  # the split is in class order


def test_a_malformed_or_linked_heldout_file_reads_as_none(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / HELDOUT).write_text("not json")
    assert read_heldout(folder) == {}
    (folder / HELDOUT).unlink()
    outside = tmp_path / "secret.json"
    outside.write_text(json.dumps({"test": [["secret", "x"]]}))
    (folder / HELDOUT).symlink_to(outside)
    assert read_heldout(folder) == {}


@pytest.mark.slow  # trains
def test_the_command_skips_a_checkpoint_of_your_own_data(tmp_path, capsys):
    from hierattn.cli import main

    data = prepare(_reviews(), TextConfig(4, 12))
    train("han", {"embed_dim": 16, "hidden": 8, "attention_dim": 8}, data, TextConfig(4, 12),
          TrainConfig(epochs=1, batch_size=16, min_freq=1), tmp_path / "mine", device="cpu")
    assert main(["baselines", str(tmp_path / "mine")]) == 0
    out = capsys.readouterr().out
    assert "skipped" in out and "not a built-in data set" in out


def test_a_small_split_calls_a_narrow_win_within_noise():
    """The reviewer's run: 67.3% on 98 validation documents, the largest class 65.3%, TF-IDF 71.4%."""
    recorded = {baselines.LARGEST: {"label": "neg", "validation_accuracy": 0.653},
                baselines.TFIDF: {"validation_accuracy": 0.714}}
    kind, said = baselines.judge(0.673, recorded, "validation", 98)
    assert kind == "within noise" and "TF-IDF + Naive Bayes" in said and "98 validation documents" in said
    assert baselines.judge(0.50, recorded, "validation", 98)[0] == "below"
    assert baselines.judge(0.75, recorded, "validation", 3816)[0] == "beats"  # the same gap, a large split
    assert baselines.judge(0.673, {}, "validation", 98) == ("unknown", "")


def test_the_wilson_interval_covers_about_95_percent_enumerated_exactly():
    from scipy.stats import binom

    for p, n in ((0.7, 98), (0.5, 20), (0.9, 300)):
        covered = sum(binom.pmf(k, n, p) for k in range(n + 1)
                      if baselines.wilson(k / n, n)[0] <= p <= baselines.wilson(k / n, n)[1])
        assert 0.92 <= covered <= 0.98, (p, n, covered)
