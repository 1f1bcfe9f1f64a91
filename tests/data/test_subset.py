"""``data.stratified_subset``: at most N documents, each class in its proportion (one epoch of
all 30,526 training tweets took a pre-trained model 1-2.5 hours on two cores)."""
from __future__ import annotations

from collections import Counter

from hierattn.data.dataset import Dataset, stratified_subset


def _dataset() -> Dataset:
    labels = [0] * 600 + [1] * 300 + [2] * 100 + [3] * 2
    return Dataset("toy", [f"doc {i}" for i in range(len(labels))], labels, ["a", "b", "c", "rare"])


def test_a_subset_keeps_every_class_in_its_proportion():
    subset = stratified_subset(_dataset(), 100, seed=1)
    counts = Counter(subset.labels)
    assert counts == {0: 59, 1: 30, 2: 10, 3: 1}  # 600, 300, 100, 2 of 1,002; the rare class kept
    assert subset.texts == sorted(subset.texts, key=lambda t: int(t.split()[1]))  # the data set's own order
    assert all(subset.texts[i] == f"doc {int(subset.texts[i].split()[1])}" for i in range(len(subset.texts)))
    assert stratified_subset(_dataset(), 100, seed=1) == subset and stratified_subset(_dataset(), 100, seed=2) != subset
    assert stratified_subset(_dataset(), 5_000) == _dataset()


def test_the_command_line_trains_on_a_subset(tmp_path, capsys):
    from hierattn.cli import main

    rows = ["text,label"]
    for i in range(200):
        words, label = ("great fun", "pos") if i % 2 else ("dull and slow", "neg")
        rows.append(f'"The film was {words}. Day {i}.",{label}')
    (tmp_path / "films.csv").write_text("\n".join(rows) + "\n")
    assert main(["train", "--model", "tfidf", "--file", str(tmp_path / "films.csv"), "--max-documents", "60",
                 "--out", str(tmp_path / "small"), "--seed", "3"]) == 0
    import json

    sizes = json.loads((tmp_path / "small" / "metrics.json").read_text())["split_sizes"]
    assert sum(sizes.values()) == 60
