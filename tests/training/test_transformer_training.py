"""A transformer trains from the command line (issue 33): from scratch with its own tokenizer
trained on the training split, and fine-tuned from a Hugging Face folder on a user's CSV."""
from __future__ import annotations

import torch

from hierattn.checkpoint import load_classifier
from tests.models.tiny_transformers import save_tiny
from tests.training.test_training import _toy


def _csv(tmp_path):
    data = _toy()
    csv = tmp_path / "mine.csv"
    csv.write_text("text,label\n" + "".join(f'"{t}",{data.label_names[y]}\n' for t, y in zip(data.texts, data.labels)))
    return csv, data


def test_a_transformer_trains_from_scratch_with_its_own_tokenizer(tmp_path):
    from hierattn.cli import main

    csv, data = _csv(tmp_path)
    out = tmp_path / "scratch"
    assert main(["train", "--model", "transformer", "--file", str(csv), "--out", str(out), "--epochs", "2",
                 "--min-freq", "1", "--set", "family=\"roberta\"", "--set", "d=16", "--set", "heads=2",
                 "--set", "ffn=32", "--set", "layers=2", "--set", "max_positions=64", "--set", "subwords=300",
                 "--device", "cpu"]) == 0
    assert {p.name for p in out.iterdir()} >= {"config.json", "model.safetensors", "tokenizer.json", "hierattn.json"}
    c = load_classifier(out, device="cpu")
    assert c.display_name == "RoBERTa (2 layers × 2 heads)" and c.labels == sorted(data.label_names)
    assert c.vocab.window == 64 and c.vocab.prefix_tokens == ["<s>"] and len(c.vocab) <= 300
    assert c.dataset == "mine" and "test_accuracy" in c.metrics


def test_fine_tuning_keeps_the_folders_encoder_and_gives_it_the_users_labels(tmp_path):
    from hierattn.cli import main

    csv, data = _csv(tmp_path)
    base = save_tiny("bert", tmp_path / "base")  # 3 labels: negative, positive, neutral
    out = tmp_path / "tuned"
    assert main(["train", "--model", "transformer", "--file", str(csv), "--out", str(out), "--epochs", "1",
                 "--lr", "1e-5", "--start-from", str(base), "--device", "cpu"]) == 0
    before, after = load_classifier(base, device="cpu"), load_classifier(out, device="cpu")
    assert after.labels == sorted(data.label_names) != before.labels
    assert after.vocab.tokenizer.to_str() == before.vocab.tokenizer.to_str()  # its tokenizer, not a new one
    embedding = "bert.embeddings.word_embeddings.weight"
    start, end = (c.model.encoder.state_dict()[embedding].float() for c in (before, after))
    assert (end - start).abs().max() < 0.05 * start.abs().max()  # the base's weights, moved a little: not new ones
    assert not torch.equal(end, start)  # and trained
