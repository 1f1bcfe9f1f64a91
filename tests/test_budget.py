"""hierattn/budget.py and models/footprint.py: a model within the limits, judged before it is
built at size. Three failures, each reproduced here: a model the Train page's
settings allow made every paste cost 2 GB; config.json values that passed every check cost
gigabytes per visit; one malformed checkpoint broke the pages that list every checkpoint."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import torch

from hierattn.budget import model_problem, typed_metrics
from hierattn.checkpoint import reading
from hierattn.checkpoint.format import CheckpointError
from hierattn.checkpoint.reading import load_classifier
from hierattn.checkpoint.writing import save_checkpoint
from hierattn.data.text import TextConfig
from hierattn.models import REGISTRY, build_model, sized_for_text
from hierattn.models.footprint import _cells, attention_cells, config_problems, parameter_count
from hierattn.training.jobs import make_job
from hierattn.training.loop import TrainConfig
from hierattn.training.run_names import JobError
from tests.conftest import REPO, edit_config
from tests.tiny import LABELS

# The attack's model: flat HCAN, 16 heads, d 64, 80 x 50 words (exactly the words-read limit).
OVER_BUDGET = ("hcan", {"hierarchical": False, "heads": 16, "d": 64}, TextConfig(max_sentences=80, max_words=50))

VARIANTS = [(name, {}) for name in REGISTRY] + [
    ("hcan", {"hierarchical": False, "heads": 8}), ("hcan", {"parallel": False}), ("hcan", {"pooling": "max"}),
    ("sanet", {"blocks": 3}), ("halstm", {"window": 30}), ("halstm", {"cell": "onlstm"}),
    ("mahnn", {"semantic": False}), ("han", {"encoder": "lstm"})]


@pytest.mark.parametrize("model_type,extra", VARIANTS, ids=[f"{t}-{'-'.join(map(str, e.values())) or 'default'}"
                                                            for t, e in VARIANTS])
@pytest.mark.parametrize("caps", [(20, 30), (7, 45), (100, 5), (3, 200)])
def test_the_predicted_attention_cells_are_the_measured_ones(model_type, extra, caps):
    """Every model and variant: the cells predicted from small passes equal those of a pass at
    the caps, across every map, head, branch and level (shapes only: the weights do not matter)."""
    torch.manual_seed(0)
    config = sized_for_text(model_type, {"vocab_size": 30, "num_classes": 3, **extra}, *caps)
    model = build_model(model_type, config).eval()
    if hasattr(model, "attention_cells"):  # a bound of its own (a transformer's window of subword tokens)
        assert attention_cells(model, *caps) == model.attention_cells(*caps) >= _held(model, *caps)
        return
    assert attention_cells(model, *caps) == _cells(model, *caps)


def _held(model, sentences: int, words: int) -> float:
    """What an explanation at the caps holds, in float32 cells: its maps as ``Maps.held`` keeps them
    (float16 counts half) and one layer of each map computed when read (the layer on screen)."""
    from hierattn.contract import Batch, DerivedMap

    ids = torch.full((1, sentences, words), 1, dtype=torch.long)
    mask = torch.ones(1, sentences, words, dtype=torch.bool)
    with torch.inference_mode():
        held = model(Batch(ids, mask, mask.any(-1), None)).attentions.held()
    one_layer = sum(held.layer(n, 0).weights.numel() for n in held if isinstance(held.describe(n), DerivedMap))
    return held.weight_bytes / 4 + one_layer


def test_a_model_whose_explanation_would_exceed_the_budget_is_refused_at_training(train_env, capsys):
    """The attack's model: one explanation of a 4,000-word document held 1.95 GB of attention
    (peak 5.2 GB). Refused before training, on the page's path and on the command line."""
    from hierattn.cli import main
    from tests.training.test_jobs import _toy_dataset

    model_type, config, text = OVER_BUDGET
    problem = model_problem(model_type, {"vocab_size": 10, "num_classes": 2, **config}, text)
    assert problem and "attention cells one explanation holds" in problem and "512,064,000" in problem
    assert "1,953 MB" in problem and "HIERATTN_MAX_EXPLANATION_CELLS" in problem
    with pytest.raises(JobError, match="attention cells one explanation holds"):
        make_job("flat-16", train_env, model_type, config, _toy_dataset(), text, TrainConfig(epochs=1))
    assert main(["train", "--model", "hcan", "--dataset", "tweets", "--set", "hierarchical=false", "--set",
                 "heads=16", "--set", "d=64", "--max-sentences", "80", "--max-words", "50"]) == 2
    assert "attention cells one explanation holds" in capsys.readouterr().err
    # The shipped recipe's caps and heads stay well inside it.
    assert model_problem("hcan", {"vocab_size": 10, "num_classes": 5}, TextConfig(50, 60)) is None


def test_a_checkpoint_over_the_budget_is_refused_before_any_document_is_read(tmp_path, tiny_vocab, monkeypatch):
    """Saved without the Train page's check (an older version, or by hand): opening it refuses
    it, having run nothing but small probes."""
    model_type, config, text = OVER_BUDGET
    config = sized_for_text(model_type, {"vocab_size": len(tiny_vocab), "num_classes": 4, **config},
                            text.max_sentences, text.max_words)
    path = save_checkpoint(tmp_path / "flat-16", build_model(model_type, config), model_type, tiny_vocab, LABELS,
                           text, {})
    with pytest.raises(CheckpointError, match="attention cells one explanation holds .* 512,064,000"):
        load_classifier(path, device="cpu")


@pytest.mark.parametrize("edit,message", [
    (lambda c: c["model_config"].update(vocab_size=500_000, embed_dim=1_000),
     "the model's parameters and buffers is 500,"),  # 2.3 GB built, then refused, on every visit
    (lambda c: c["model_config"].update(embed_dim=-1), "embed_dim must be a whole number of at least 1, not -1"),
    (lambda c: c["model_config"].update(hidden="many"), "hidden must be a whole number of at least 1"),
    (lambda c: c["model_config"].update(dropout=float("nan")), "dropout must be a number of at least 0"),
    (lambda c: c["text"].update(max_sentences=-1), "max_sentences must be a whole number of at least 1, not -1"),
    (lambda c: c["text"].update(max_sentences=0), "max_sentences must be a whole number of at least 1, not 0"),
    (lambda c: c["text"].update(max_words=2.5), "max_words must be a whole number"),
])
def test_config_values_are_checked_before_anything_is_built(checkpoint_dir, tmp_path, monkeypatch, edit, message):
    """Each refused from config.json alone: neither the model at size nor the weights are made."""
    path = tmp_path / "han"
    shutil.copytree(checkpoint_dir / "tiny-han", path)
    edit_config(path, edit)
    monkeypatch.setattr(reading, "build_model", lambda *a: pytest.fail("the model was built"))
    monkeypatch.setattr(reading, "safe_open", lambda *a: pytest.fail("the weights were read"))
    with pytest.raises(CheckpointError, match=message):
        load_classifier(path, device="cpu")


@pytest.mark.parametrize("model_type,field,value,message", [
    ("hcan", "word_positions", 4_000_000, "word_positions (a layer's size) is 4,000,000"),
    ("kimcnn", "filter_sizes", [3, 10**7], "filter_sizes (a layer's size) is 10,000,000"),
    ("kimcnn", "filter_sizes", [], "filter_sizes must be a list of 1 to 16"),
    ("mahnn", "filter_sizes", [3, -4], "filter_sizes must be a list"),
])
def test_fields_once_unchecked_are_checked_by_their_type(model_type, field, value, message):
    """word_positions and filter_sizes passed every check; the rule is read off the config
    dataclass, so a field added tomorrow is checked without a list to keep."""
    problem = model_problem(model_type, {"vocab_size": 10, "num_classes": 2, field: value}, TextConfig(8, 20))
    assert problem and message in problem


def test_the_rule_follows_the_dataclass_not_a_list():
    from dataclasses import dataclass

    @dataclass
    class Tomorrow:
        vocab_size: int
        lanterns: int = 4
        spare: int = 0
        rates: tuple[int, ...] = (1, 2)
        cap: int | None = None

    assert config_problems(Tomorrow, {"vocab_size": 5, "lanterns": 0, "spare": 0, "rates": [1, 0], "cap": -2}) == [
        "lanterns must be a whole number of at least 1, not 0",
        "rates must be a list of 1 to 16 whole numbers of at least 1, not [1, 0]",
        "cap must be empty or a whole number of at least 1, not -2"]


def test_parameters_are_counted_without_being_allocated():
    before = torch.cuda.memory_allocated() if torch.cuda.is_available() else 0
    count = parameter_count(lambda: build_model("han", {"vocab_size": 500_000, "num_classes": 2, "embed_dim": 1000}))
    assert count > 500_000_000 and (torch.cuda.memory_allocated() if torch.cuda.is_available() else 0) == before


@pytest.mark.parametrize("model_type,overrides", VARIANTS)
def test_a_count_on_the_meta_device_is_the_built_models(model_type, overrides):
    """Counting fills no tensor (``footprint._Unfilled``): the count is still every parameter and
    buffer the model has when it is built for real."""
    config = {"vocab_size": 300, "num_classes": 3, **overrides}
    built = build_model(model_type, config)
    assert parameter_count(lambda: build_model(model_type, config)) == sum(
        t.numel() for t in list(built.parameters()) + list(built.buffers()))
    assert all(torch.isfinite(p).all() for p in built.parameters())  # built for real: filled as ever


def test_counting_and_opening_a_checkpoint_imports_no_compiler():
    """A meta tensor's filling or arithmetic runs torch's reference implementations, which import
    ``torch._dynamo``: 1.1-1.8 s of CPU in every process that opened a checkpoint (the command
    line's explain paid it). Counting fills nothing and the models' starts scale in place."""
    code = ("import sys; from hierattn.checkpoint.reading import load_classifier; from hierattn.models import "
            "REGISTRY, build_model; from hierattn.models.footprint import parameter_count; "
            "[parameter_count(lambda: build_model(t, {'vocab_size': 300, 'num_classes': 3})) for t in REGISTRY "
            "if REGISTRY[t].folder is None]; "
            f"load_classifier({str(REPO / 'checkpoints' / 'bbc-news-hcan')!r}, device='cpu'); "
            "print('torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"


def test_a_refusal_is_remembered_for_the_version_of_its_files(checkpoint_dir, tmp_path, monkeypatch):
    """A refused checkpoint is judged once per version of its files: every later visit is told
    at no cost; an edit of its files is judged again."""
    from hierattn.app.loading import _Models, _stamp

    path = tmp_path / "han"
    shutil.copytree(checkpoint_dir / "tiny-han", path)
    good = (path / "config.json").read_text()
    edit_config(path, lambda c: c["model_config"].update(embed_dim=-1))
    calls = []
    real = load_classifier
    monkeypatch.setattr("hierattn.app.loading.load_classifier", lambda p: calls.append(p) or real(p))
    models = _Models()
    for _ in range(3):
        with pytest.raises(CheckpointError, match="embed_dim"):
            models.get(str(path), _stamp(path))
    assert len(calls) == 1
    (path / "config.json").write_text(good)
    import os
    import time

    os.utime(path / "config.json", (time.time() + 5, time.time() + 5))
    assert models.get(str(path), _stamp(path)).name == "han" and len(calls) == 2


def test_metrics_entries_not_of_their_type_are_dropped():
    kept = typed_metrics({"test_accuracy": "97%", "validation_accuracy": 0.9, "corpus": "oops", "baselines": [1],
                          "split_sizes": {"train": 5}, "hardware": 3, "extra": {"any": "thing"}})
    assert kept == {"validation_accuracy": 0.9, "split_sizes": {"train": 5}, "extra": {"any": "thing"}}
    assert typed_metrics([1, 2]) == {} and typed_metrics({"test_accuracy": True}) == {}


MALFORMED = {
    "nested config.json": lambda p: (p / "config.json").write_text("[" * 100_000 + "]" * 100_000),
    "negative width": lambda p: edit_config(p, lambda c: c["model_config"].update(embed_dim=-1)),
    "accuracy as text": lambda p: (p / "metrics.json").write_text(json.dumps({"test_accuracy": "97%"})),
    "corpus as text": lambda p: (p / "metrics.json").write_text(json.dumps({"corpus": "oops"})),
}


@pytest.mark.parametrize("page", ["pages/compare.py", "pages/evaluation.py", "pages/1_statistics.py",
                                  "pages/explore.py"])
def test_one_malformed_checkpoint_breaks_no_page(checkpoint_dir, tmp_path, monkeypatch, page):
    """Four malformed checkpoints beside the good ones (a RecursionError, a RuntimeError, a
    TypeError and a KeyError on the previous code): each page runs, and the good ones work."""
    from streamlit.testing.v1 import AppTest

    root = tmp_path / "checkpoints"
    shutil.copytree(checkpoint_dir, root)
    for i, damage in enumerate(MALFORMED.values()):
        shutil.copytree(checkpoint_dir / "tiny-han", root / f"bad-{i}")
        damage(root / f"bad-{i}")
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(root))
    at = AppTest.from_file(str(REPO / page), default_timeout=120).run()
    assert not at.exception, at.exception
    for key in ("model", "model_a", "model_b", "stats_model", "eval_model"):
        for box in [b for b in at.selectbox if b.key == key]:
            for name in [str(o).split(" · ")[0] for o in box.options if str(o).startswith("bad-")][:4]:
                box.set_value(name).run()
                assert not at.exception, (name, at.exception)
    for i in (2, 3):  # the metrics ones load: their bad entries are dropped
        assert load_classifier(root / f"bad-{i}", device="cpu").metrics == {}
    with pytest.raises(CheckpointError, match="nested too deeply"):
        load_classifier(root / "bad-0", device="cpu")
