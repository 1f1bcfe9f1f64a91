"""The results table: word2vec initialisation, the TF-IDF baselines through train(), evaluate."""
import json

import pytest
import torch

from hierattn.analysis.evaluation import Row, evaluate_checkpoints, markdown
from hierattn.cli import main
from hierattn.data.split import prepare
from hierattn.data.text import TextConfig, Vocab
from hierattn.training.embeddings import initialise_embeddings, word2vec_matrix
from hierattn.training.in_memory import train
from hierattn.training.loop import TrainConfig
from tests.training.test_training import _toy

TEXT = TextConfig(4, 12)


@pytest.fixture(scope="module")
def toy_checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("table")
    data = prepare(_toy(), TEXT)
    config = TrainConfig(epochs=4, batch_size=8, lr=5e-3, min_freq=1, patience=4)
    train("kimcnn", {"embed_dim": 8, "maps": 4}, data, TEXT, config, root / "cnn", device="cpu")
    train("tfidf", {"classifier": "nb"}, data, TEXT, config, root / "nb", device="cpu")
    return root, data


def test_word2vec_initialises_the_known_rows():
    data = prepare(_toy(), TEXT)
    docs = data.part("train")[0]
    vocab = Vocab.build(docs, min_freq=1)
    vectors, found = word2vec_matrix(docs, vocab, 8, seed=1)
    assert found[vocab.stoi["film"]] and not found[Vocab.unk_id] and not found[Vocab.pad_id]
    assert not found[vocab.stoi["lovely"]] or sum(t.norm == "lovely" for d in docs for s in d.sentences
                                                  for t in s.tokens) >= 5  # min count 5
    again, _ = word2vec_matrix(docs, vocab, 8, seed=1)
    torch.testing.assert_close(vectors, again)  # one worker: reproducible
    embedding = torch.nn.Embedding(len(vocab), 8)
    before = embedding.weight.detach().clone()
    assert initialise_embeddings(embedding, vectors, found) == int(found.sum())
    assert torch.equal(embedding.weight[~found], before[~found])
    assert not torch.equal(embedding.weight[found], before[found])
    # the copied rows keep their directions (cosine similarity is unchanged by the rescaling)
    a, b = found.nonzero()[:2, 0]
    cos = torch.nn.functional.cosine_similarity
    assert cos(embedding.weight[a], embedding.weight[b], 0).item() == pytest.approx(
        cos(vectors[a] - vectors[found].mean(), vectors[b] - vectors[found].mean(), 0).item(), abs=1e-4)


@pytest.mark.slow  # trains
def test_training_with_word2vec_records_it(tmp_path):
    data = prepare(_toy(), TEXT)
    metrics = train("han", {"embed_dim": 8, "hidden": 4, "attention_dim": 8}, data, TEXT,
                    TrainConfig(epochs=1, min_freq=1, embeddings="word2vec"), None, device="cpu")
    assert metrics["pretrained_words"] > 0 and metrics["train_config"]["embeddings"] == "word2vec"


@pytest.mark.slow  # trains
def test_evaluate_remeasures_test_accuracy(toy_checkpoints):
    root, data = toy_checkpoints
    rows = {r.checkpoint: r for r in evaluate_checkpoints(data.dataset, [root / "cnn", root / "nb"], device="cpu")}
    saved = json.loads((root / "nb" / "metrics.json").read_text())
    assert rows["nb"].test_accuracy == pytest.approx(saved["test_accuracy"])
    assert rows["nb"].model == "TF-IDF + Naive Bayes" and rows["cnn"].model == "Kim CNN"
    assert rows["cnn"].num_parameters > 0 and rows["cnn"].train_ms_per_document > 0


@pytest.mark.slow  # trains
def test_evaluate_command_writes_the_table(toy_checkpoints, tmp_path, monkeypatch, capsys):
    root, data = toy_checkpoints
    csv = tmp_path / "toy.csv"
    csv.write_text("text,label\n" + "\n".join(f'"{t}",{data.dataset.label_names[y]}'
                                              for t, y in zip(data.dataset.texts, data.dataset.labels)))
    code = main(["evaluate", "--file", str(csv), "--checkpoints", str(root), "--out", str(tmp_path / "t.md"),
                 "--device", "cpu"])
    assert code == 0
    table = (tmp_path / "t.md").read_text()
    assert "| Kim CNN | `cnn` |" in table and "| TF-IDF + Naive Bayes | `nb` |" in table
    assert main(["evaluate", "--file", str(csv), "--checkpoints", str(tmp_path / "nothing")]) == 2
    assert "no checkpoints found" in capsys.readouterr().err


def test_the_checkpoint_table_is_sorted_and_judges_no_ordering():
    """Checkpoints are single runs: the table lists them, best first, and leaves the papers'
    orderings to the experiments registry, where each is judged against its seeds' noise."""
    rows = [Row("a", "HCAN", 0.70, 1.0, 10.0, 5, "cpu", 3, 3), Row("b", "HAN", 0.75, 1.0, 10.0, 5, "cpu", 3, 3),
            Row("c", "MahNN-3", 0.8, 1.0, 1.0, 5, "cpu", 3, 10)]
    table = markdown("toy", rows)
    assert table.index("MahNN-3") < table.index("| HAN |") < table.index("| HCAN |")
    assert "| 70.00% |" in table and "ordering" not in table and "holds" not in table


def _split_result(true, predicted, probabilities):
    from hierattn.analysis.evaluation import SplitEvaluation

    return SplitEvaluation("m", "toy", "test", ["a", "b", "c"], list(range(len(true))), true, predicted, probabilities)


def test_per_class_report_and_confusion_by_hand():
    result = _split_result([0, 0, 1, 1, 2], [0, 1, 1, 1, 0],
                           [[.9, .1, 0], [.3, .7, 0], [0, 1, 0], [.2, .8, 0], [.6, .2, .2]])
    assert result.accuracy == pytest.approx(3 / 5)
    report = result.per_class().set_index("class")
    # a: predicted twice, right once (P 1/2), 2 true, found once (R 1/2); b: P 2/3, R 1; c: never predicted
    assert report.loc["a", ["precision", "recall", "F1", "support"]].tolist() == pytest.approx([0.5, 0.5, 0.5, 2])
    assert report.loc["b", ["precision", "recall", "F1"]].tolist() == pytest.approx([2 / 3, 1.0, 0.8])
    assert report.loc["c", ["precision", "recall", "F1"]].tolist() == [0.0, 0.0, 0.0]
    assert report.loc["macro mean", "F1"] == pytest.approx((0.5 + 0.8 + 0) / 3)
    assert result.confusion().tolist() == [[1, 1, 0], [0, 2, 0], [1, 0, 0]]
    wrong = result.misclassified()
    assert wrong["document"].tolist() == [1, 4]  # most confident mistake first (0.7, then 0.6)
    assert wrong["P(true class)"].tolist() == pytest.approx([0.3, 0.2])


@pytest.mark.slow  # trains
def test_evaluate_split_predicts_every_document_of_the_split(toy_checkpoints):
    from hierattn.analysis.evaluation import evaluate_split
    from hierattn.checkpoint.reading import load_classifier
    from hierattn.data.split import stratified_split

    root, data = toy_checkpoints
    classifier = load_classifier(root / "cnn", device="cpu")
    seen = []
    result = evaluate_split(classifier, data.dataset, "validation", batch_size=4,
                            progress=lambda done, total: seen.append(done))
    assert result.documents == stratified_split(data.dataset.labels)["validation"]
    assert seen[-1] == len(result.documents) and len(seen) > 1
    for probs, predicted in zip(result.probabilities, result.predicted):
        assert sum(probs) == pytest.approx(1.0, abs=1e-5) and predicted == max(range(len(probs)), key=probs.__getitem__)
    names = classifier.labels
    dataset = data.dataset
    assert [names[t] for t in result.true] == [dataset.label_names[dataset.labels[d]] for d in result.documents]


@pytest.mark.slow  # trains
def test_evaluate_split_refuses_other_classes(toy_checkpoints):
    from dataclasses import replace

    from hierattn.analysis.evaluation import LabelMismatch, evaluate_split
    from hierattn.checkpoint.reading import load_classifier

    root, data = toy_checkpoints
    other = replace(data.dataset, label_names=["spam", "ham"])
    with pytest.raises(LabelMismatch, match="trained on the classes pos, neg"):
        evaluate_split(load_classifier(root / "cnn", device="cpu"), other)
