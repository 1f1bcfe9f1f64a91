import json

import pytest

from hierattn.analysis.explain import ExplainError, explain
from hierattn.analysis.metric_tables import metrics_table
from hierattn.checkpoint.reading import load_classifier
from hierattn.cli import main


@pytest.fixture(params=["han", "hcan"])
def classifier(request, checkpoint_dir):
    return load_classifier(checkpoint_dir / f"tiny-{request.param}", device="cpu")


def test_explanation_covers_the_document(classifier):
    text = "The team won the cup. Shares rose! Terrible service?"
    ex = explain(classifier, text)
    assert ex.label in classifier.labels and sum(ex.probabilities) == pytest.approx(1.0)
    assert [len(w) for w in ex.target_attention("word")] == ex.sentence_lengths == [6, 3, 3]  # "." and "!" are tokens
    assert sum(ex.target_attention("sentence")) == pytest.approx(1.0)
    for weights in ex.target_attention("word"):
        assert sum(weights) == pytest.approx(1.0)


def test_self_attention_and_metrics_per_head_and_level(checkpoint_dir):
    c = load_classifier(checkpoint_dir / "tiny-hcan", device="cpu")
    ex = explain(c, "The team won the cup. Shares rose! Terrible service?")
    assert ex.self_attention_names == ["word.self.a", "word.self.b", "sentence.self.a", "sentence.self.b"]
    m = ex.self_attention("word.self.a", sentence=0)
    assert m.shape == (6, 6)
    assert m.sum(1).tolist() == pytest.approx([1.0] * 6)
    assert ex.self_attention("sentence.self.b", head=1).shape == (3, 3)
    table = metrics_table(ex)
    # word level: 3 sentences x 2 heads x 2 branches; sentence level: 2 heads x 2 branches
    assert len(table) == 12 + 4
    assert table[["gini"] + [f"diagonality_b{b}" for b in range(1, 6)]].apply(lambda c: c.between(0, 1)).all().all()


def test_han_has_no_self_attention(checkpoint_dir):
    ex = explain(load_classifier(checkpoint_dir / "tiny-han", device="cpu"), "Hello there. Good day.")
    assert ex.self_attention_names == [] and ex.metrics == []


@pytest.mark.parametrize("text", ["", "   \n\t", "\x00\x01 ,,; --"])
def test_texts_without_words_are_refused_clearly(classifier, text):
    with pytest.raises(ExplainError):
        explain(classifier, text)


def test_huge_text_is_truncated_and_says_so(classifier):
    text = "The cup final was great. " * 8000  # 200,000 characters
    ex = explain(classifier, text)
    assert len(ex.document.sentences) == classifier.text_config.max_sentences
    assert "first 6 of 8,000 sentences" in ex.to_dict()["truncation"]


def test_cli_explain_prints_json(checkpoint_dir, capsys):
    assert main(["explain", "--checkpoint", str(checkpoint_dir / "tiny-hcan"), "--text",
                 "<script>x</script> won."]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"label", "probabilities", "sentences", "attention", "metrics"}
    assert out["sentences"][0]["text"] == "<script>x</script> won."  # JSON carries raw text; renderers escape
    sa = out["attention"]["word.self.a"]
    assert sa["axes"] == ["batch", "sentence", "head", "query", "key"] and sa["level"] == "word"
    assert {r["map"] for r in out["metrics"]} == {"word.self.a", "word.self.b", "sentence.self.a", "sentence.self.b"}
    assert {"gini", "diagonality_b1", "diagonality_b5", "head", "sentence"} <= set(out["metrics"][0])


def test_cli_output_cut_short_by_its_reader_ends_quietly(checkpoint_dir):
    """``python -m hierattn explain ... | head``: the reader leaves early; no error, no traceback."""
    import fcntl
    import os
    import subprocess
    import sys

    # The writer must still be writing when the reader leaves. The JSON of this text (read as 6 x 12
    # words by the tiny caps) is about 31 KB: under a pipe's default 64 KB, a fast writer finished
    # first and the test raced. A pipe of one page (4 KB), set before the writer starts, holds a
    # seventh of it.
    text = ". ".join(" ".join(f"word{i} again" for i in range(s * 10, s * 10 + 10)) for s in range(60))
    read_end, write_end = os.pipe()
    assert fcntl.fcntl(read_end, fcntl.F_SETPIPE_SZ, 4096) == 4096
    run = subprocess.Popen([sys.executable, "-m", "hierattn", "explain", "--checkpoint",
                            str(checkpoint_dir / "tiny-hcan"), "--text", text],
                           stdout=write_end, stderr=subprocess.PIPE)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        assert reader.read(20).startswith(b"{")
    stderr = run.stderr.read().decode()
    assert run.wait(timeout=120) == 141
    assert "error" not in stderr.lower() and "Traceback" not in stderr


def test_cli_explain_reports_errors_without_traceback(checkpoint_dir, tmp_path, capsys):
    assert main(["explain", "--checkpoint", str(tmp_path), "--text", "hi"]) == 2
    assert "error:" in capsys.readouterr().err
    assert main(["explain", "--checkpoint", str(checkpoint_dir / "tiny-han"), "--text", "  "]) == 2
    assert "empty" in capsys.readouterr().err
    f = tmp_path / "doc.txt"
    f.write_bytes(b"Binary \xff\xfe junk but a real word.")
    assert main(["explain", "--checkpoint", str(checkpoint_dir / "tiny-han"), "--file", str(f)]) == 0


@pytest.mark.parametrize("name,maps", [
    ("tiny-sanet", {"word.self.block1": ["batch", "query", "key"]}),
    ("tiny-halstm", {"word.window": ["batch", "time", "query", "key"]}),
    ("tiny-mahnn", {"word.syntactic": ["batch", "channel", "key"],
                    "hidden.semantic": ["batch", "channel", "position", "key"]}),
    ("tiny-kimcnn", {"word.maxpool": ["batch", "key"]}),
    ("tiny-tfidf", {}),
])
def test_cli_explain_works_for_every_kind_of_model(checkpoint_dir, capsys, name, maps):
    assert main(["explain", "--checkpoint", str(checkpoint_dir / name), "--text", "Great match. We won!"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {n: a["axes"] for n, a in out["attention"].items()} == maps
    words = 6  # great match . we won !
    if name == "tiny-halstm":
        assert [r["time"] for r in out["metrics"]] == list(range(words))  # one N x N matrix per step
        assert all(r["size"] == 4 for r in out["metrics"])
    if name == "tiny-sanet":
        assert [r["size"] for r in out["metrics"]] == [words]


def test_gate_depth_is_the_expected_split_and_an_even_split_gives_its_baseline():
    """ON-LSTM's depth per word: the expected split point over H ordered units, divided by H, which
    equals Shen et al.'s H - sum(F) over H; an even split gives (H - 1) / 2H."""
    import torch

    from hierattn.analysis.explain import Explanation
    from hierattn.contract import GATE, HIDDEN, AttentionMap
    from hierattn.data.text import tokenize

    doc = tokenize("one two three")
    split = torch.tensor([[[1.0, 0, 0, 0], [0, 0, 0, 1.0], [0.25, 0.25, 0.25, 0.25]]])  # (1, 3 words, H = 4)
    gate = AttentionMap(split, ("batch", "time", "key"), HIDDEN, torch.ones_like(split, dtype=torch.bool), kind=GATE)
    ex = Explanation("m", ["a", "b"], [0.5, 0.5], doc, {"word.depth": gate}, [])
    assert ex.gate_names() == ["word.depth"]
    depth = ex.gate_depth("word.depth")
    forget_master = torch.cumsum(split[0], -1)
    torch.testing.assert_close(depth, (4 - forget_master.sum(-1)) / 4)
    assert depth.tolist() == [0.0, 0.75, 0.375] and ex.gate_depth_if_even("word.depth") == 0.375
