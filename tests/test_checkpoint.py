import json
import shutil

import pytest
import torch

from hierattn.checkpoint.format import CheckpointError
from hierattn.checkpoint.reading import load_classifier
from hierattn.checkpoint.writing import save_checkpoint
from hierattn.data.batches import encode_documents
from hierattn.data.text import TextConfig, tokenize
from hierattn.home import list_checkpoints
from hierattn.models import build_model
from tests.conftest import CORPUS, edit_config
from tests.tiny import LABELS


@pytest.fixture
def saved(tmp_path, tiny_vocab):
    torch.manual_seed(0)
    model = build_model("hcan", {"vocab_size": len(tiny_vocab), "num_classes": 4, "d": 16, "heads": 2}).eval()
    path = save_checkpoint(tmp_path / "ck", model, "hcan", tiny_vocab, LABELS, TextConfig(4, 9), {"test_accuracy": 0.9},
                           dataset="tweets", dtype=torch.float32)
    return model, path


def test_round_trip_gives_the_same_logits(saved, tiny_vocab):
    model, path = saved
    c = load_classifier(path, device="cpu")
    assert c.labels == LABELS and c.text_config == TextConfig(4, 9) and c.metrics == {"test_accuracy": 0.9}
    assert c.dataset == "tweets" and not c.model.training
    batch = encode_documents([tokenize(t) for t in CORPUS], tiny_vocab)
    with torch.no_grad():
        torch.testing.assert_close(c.model(batch).logits, model(batch).logits)


def test_layout_and_fp16_default(tmp_path, tiny_vocab):
    model = build_model("han", {"vocab_size": len(tiny_vocab), "num_classes": 4})
    path = save_checkpoint(tmp_path / "h", model, "han", tiny_vocab, LABELS, TextConfig(), {})
    assert sorted(p.name for p in path.iterdir()) == ["README.md", "config.json", "metrics.json", "model.safetensors",
                                                       "vocab.json"]
    from safetensors import safe_open

    with safe_open(path / "model.safetensors", "pt") as f:
        assert f.get_tensor("embedding.weight").dtype == torch.float16
    config = json.loads((path / "config.json").read_text())
    assert config["model_type"] == "han" and config["format_version"] == 1 and config["labels"] == LABELS
    assert load_classifier(path, device="cpu").model.embedding.weight.dtype == torch.float32


def test_overwrite_is_atomic_and_leaves_no_temporaries(saved, tiny_vocab):
    model, path = saved
    save_checkpoint(path, model, "hcan", tiny_vocab, LABELS, TextConfig(), {"test_accuracy": 0.1})
    assert json.loads((path / "metrics.json").read_text()) == {"test_accuracy": 0.1}
    assert [p.name for p in path.parent.iterdir()] == ["ck"]


def test_a_failed_write_keeps_the_old_checkpoint(saved, tiny_vocab):
    model, path = saved
    before = (path / "model.safetensors").read_bytes()
    with pytest.raises(TypeError):
        save_checkpoint(path, model, "hcan", tiny_vocab, LABELS, TextConfig(), {"not json": object()})
    assert (path / "model.safetensors").read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == ["ck"]
    load_classifier(path, device="cpu")


@pytest.mark.parametrize("damage,message", [
    (lambda p: (p / "model.safetensors").write_bytes(b"\x00" * 64), "corrupted"),
    (lambda p: (p / "model.safetensors").unlink(), "model.safetensors is missing"),
    (lambda p: (p / "config.json").write_text("{not json"), "not valid JSON"),
    (lambda p: (p / "vocab.json").write_text('["<pad>", "<unk>", "extra"]'), "vocab.json has 3 words"),
    (lambda p: (p / "vocab.json").write_text('{"a": 1}'), "vocab.json is invalid"),
    (lambda p: _edit_config(p, lambda c: c.update(labels=["a", "b"])), "2 labels for a 4-class model"),
    (lambda p: _edit_config(p, lambda c: c["model_config"].update(d=32)), "has shape"),
    (lambda p: _edit_config(p, lambda c: c["model_config"].update(parallel=False)), "do not match"),
    (lambda p: _edit_config(p, lambda c: c.update(model_type="bert")), "'bert' is neither built in"),
    (lambda p: _edit_config(p, lambda c: c.update(format_version=99)), "unsupported checkpoint format"),
])
def test_damaged_checkpoints_give_clear_errors(saved, damage, message):
    _, path = saved
    damage(path)
    with pytest.raises(CheckpointError, match=message):
        load_classifier(path, device="cpu")


_edit_config = edit_config


def test_list_checkpoints_skips_temporaries_and_non_checkpoints(saved, tmp_path):
    _, path = saved
    shutil.copytree(path, tmp_path / ".ck.tmp123")
    (tmp_path / "notes").mkdir()
    assert list_checkpoints(tmp_path) == [path]
    assert list_checkpoints(tmp_path / "missing") == []


def test_checkpoints_from_before_unicode_letters_keep_reading_ascii(saved):
    """A checkpoint records how its text was normalised; one written before the Unicode reading
    existed loads with the ASCII one its vocabulary was built with."""
    _, path = saved
    assert load_classifier(path, device="cpu").text_config.letters == "unicode"
    _edit_config(path, lambda c: c["text"].pop("letters"))
    classifier = load_classifier(path, device="cpu")
    assert classifier.text_config.letters == "ascii"
    doc = tokenize("Café שלום.", classifier.text_config)
    assert [t.norm for s in doc.sentences for t in s.tokens] == ["caf", "."]
