"""Plug-ins (``hierattn.models.plugins``): a file or an installed entry point registers a model type;
one that cannot be loaded gives one message and leaves everything else working; a checkpoint
never imports anything, and says which plug-in it needs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from hierattn.checkpoint.format import CheckpointError
from hierattn.checkpoint.reading import load_classifier
from hierattn.checkpoint.writing import save_checkpoint
from hierattn.data.text import TextConfig
from hierattn.models import BUILT_IN, REGISTRY, build_from_spec, plugins
from hierattn.models.plugins import PluginError, specs_in_file
from tests.conftest import REPO
from tests.tiny import LABELS

EXAMPLE = REPO / "examples" / "bigru_attention" / "bigru_attention.py"

TINY = '''
from dataclasses import dataclass
import torch
from torch import nn
from hierattn.contract import WORD, AttentionMap, ClassifierOutput
from hierattn.models.spec import ModelSpec

open({marker!r}, "a").write("imported\\n")  # proves whether this file ran


@dataclass
class TinyConfig:
    vocab_size: int
    num_classes: int
    width: int = 4


class Tiny(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embedding = nn.EmbeddingBag(config.vocab_size, config.width)
        self.out = nn.Linear(config.width, config.num_classes)

    def forward(self, batch, return_attentions=True):
        B = batch.word_ids.shape[0]
        ids = batch.word_ids.view(B, -1)
        mask = batch.word_mask.view(B, -1)
        weights = mask.float() / mask.sum(1, keepdim=True).clamp(min=1)
        logits = self.out(self.embedding(ids, per_sample_weights=weights, mode="sum"))
        return ClassifierOutput(logits, None, {{"word.target": AttentionMap(weights, ("batch", "key"), WORD, mask)}})


SPEC = ModelSpec("{name}", Tiny, TinyConfig, "Tiny (test plug-in)", lambda c: "Tiny")
'''


def write_plugin(folder, name="tiny_plugin", body=None):
    path = folder / f"{name}.py"
    path.write_text(body if body is not None else TINY.format(marker=str(folder / "marker"), name=name))
    return path


@pytest.fixture
def registry(monkeypatch):
    """A private registry with the built-in models, and the plug-in bookkeeping as it was after."""
    monkeypatch.setenv("HIERATTN_PLUGINS", "")
    tried, problems = set(plugins._TRIED), dict(plugins.PROBLEMS)
    yield {name: REGISTRY[name] for name in BUILT_IN}
    plugins._TRIED.clear()
    plugins._TRIED.update(tried)
    plugins.PROBLEMS.clear()
    plugins.PROBLEMS.update(problems)


def test_a_plugin_file_registers_its_model_and_is_named_in_the_environment(tmp_path, registry):
    path = write_plugin(tmp_path)
    assert plugins.load(registry, [path]) == []
    spec = registry["tiny_plugin"]
    assert spec.plugin == {"file": "tiny_plugin.py", "path": str(path)}
    assert str(path) in os.environ["HIERATTN_PLUGINS"].split(os.pathsep)  # processes it starts load it too
    assert list(registry)[:len(BUILT_IN)] == list(BUILT_IN)  # the built-in models keep their places
    model = build_from_spec(spec, {"vocab_size": 5, "num_classes": 2})
    assert model.config.width == 4
    assert plugins.load(registry, [path]) == [] and (tmp_path / "marker").read_text() == "imported\n"  # once


@pytest.mark.parametrize("body,message", [
    ("def broken(:\n", "SyntaxError at line 1"),
    ("import numpy\nraise RuntimeError('no GPU here')\n", "RuntimeError: no GPU here (line 2 of bad.py)"),
    ("import hierattn_no_such_module\n", "ModuleNotFoundError: No module named 'hierattn_no_such_module'"),
    ("x = 1\n", "defines no SPEC"),
    ("SPEC = 'han'\n", "SPEC is a str, not a hierattn.models.spec.ModelSpec"),
])
def test_a_plugin_that_cannot_load_gives_one_message_and_the_rest_loads(tmp_path, registry, body, message):
    bad = write_plugin(tmp_path, "bad", body)
    good = write_plugin(tmp_path, "good_one")
    problems = plugins.load(registry, [bad, good])
    assert len(problems) == 1 and message in problems[0] and str(bad) in problems[0]
    assert "good_one" in registry and set(BUILT_IN) <= set(registry)
    assert str(bad) not in os.environ["HIERATTN_PLUGINS"]


def test_specs_are_checked_before_they_are_registered(tmp_path, registry):
    source = TINY.format(marker=str(tmp_path / "marker"), name="han")
    problems = plugins.load(registry, [write_plugin(tmp_path, "clash", source)])
    assert "declares model type 'han', a built-in model type; not loaded" in problems[0]
    assert registry["han"].plugin is None
    knob = TINY.format(marker=str(tmp_path / "marker"), name="knobbed").replace(
        'lambda c: "Tiny")', 'lambda c: "Tiny", knobs=(Knob("depth", "Depth", "", "int"),))').replace(
        "import ModelSpec", "import Knob, ModelSpec")
    with pytest.raises(PluginError, match="knobs name fields its config lacks: depth"):
        specs_in_file(write_plugin(tmp_path, "knobbed", knob))
    with pytest.raises(PluginError, match="no such .py file"):
        specs_in_file(tmp_path / "missing.py")


def test_a_checkpoint_never_imports_its_plugin_and_says_which_it_needs(tmp_path, registry, tiny_vocab):
    path = write_plugin(tmp_path)
    spec = specs_in_file(path)[0]
    (tmp_path / "marker").unlink()
    model = build_from_spec(spec, {"vocab_size": len(tiny_vocab), "num_classes": 4})
    REGISTRY["tiny_plugin"] = spec  # registered for the save only
    try:
        save_checkpoint(tmp_path / "ck", model, "tiny_plugin", tiny_vocab, LABELS, TextConfig(4, 8), {})
        load_classifier(tmp_path / "ck", device="cpu")
    finally:
        del REGISTRY["tiny_plugin"]
    config = json.loads((tmp_path / "ck" / "config.json").read_text())
    assert config["plugin"] == {"file": "tiny_plugin.py", "path": str(path)}
    (tmp_path / "ck" / "tiny_plugin.py").write_text(f"open({str(tmp_path / 'marker')!r}, 'w')\n")  # bait
    with pytest.raises(CheckpointError) as error:
        load_classifier(tmp_path / "ck", device="cpu")
    assert "comes from the plug-in file tiny_plugin.py" in str(error.value)
    assert "HIERATTN_PLUGINS" in str(error.value) and "--plugin" in str(error.value)
    assert not (tmp_path / "marker").exists()  # neither the plug-in nor the bait ran


def _run(code: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=120)


def test_an_installed_entry_point_registers_its_model(tmp_path):
    """An installed distribution is a folder on sys.path with a ``.dist-info``: as pip leaves it."""
    write_plugin(tmp_path, "ep_model")
    info = tmp_path / "ep_model_pkg-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-model-pkg\nVersion: 1.2\n")
    (info / "entry_points.txt").write_text("[hierattn.models]\nep = ep_model:SPEC\nbroken = ep_missing:SPEC\n")
    done = _run("""
        import json
        from hierattn.models import REGISTRY, plugin_problems
        print(json.dumps({"plugin": REGISTRY["ep_model"].plugin, "problems": plugin_problems(),
                          "han": "han" in REGISTRY}))
    """, {"PYTHONPATH": str(tmp_path), "HIERATTN_PLUGINS": ""})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["plugin"] == {"entry_point": "ep", "value": "ep_model:SPEC", "package": "ep-model-pkg",
                                "version": "1.2"}
    assert result["han"] and len(result["problems"]) == 1
    assert "plug-in 'broken' (ep_missing:SPEC, package ep-model-pkg) failed to import: ModuleNotFoundError" in \
           result["problems"][0]


def test_the_cli_warns_about_a_broken_plugin_and_goes_on(tmp_path):
    bad = write_plugin(tmp_path, "bad", "raise ImportError('needs a library this machine lacks')\n")
    done = subprocess.run([sys.executable, "-m", "hierattn", "explain", "--plugin", str(bad), "--checkpoint",
                           str(REPO / "checkpoints" / "tweets-han"), "--text", "Great film.", "--compact"],
                          cwd=REPO, capture_output=True, text=True, timeout=120, env={**os.environ,
                                                                                      "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0 and json.loads(done.stdout)["checkpoint"] == "tweets-han"
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "ImportError: needs a library this machine lacks" in warnings[0]


@pytest.mark.slow  # trains
def test_the_cli_trains_with_a_plugin_model_it_is_pointed_at(tmp_path):
    rows = [(f"The film was {['great fun', 'a bore'][i % 2]}. Day {i}.", ["pos", "neg"][i % 2]) for i in range(40)]
    csv = tmp_path / "films.csv"
    csv.write_text("text,label\n" + "".join(f'"{t}",{y}\n' for t, y in rows))
    done = subprocess.run([sys.executable, "-m", "hierattn", "train", "--plugin", str(EXAMPLE), "--model",
                           "bigru_attention", "--file", str(csv), "--epochs", "1", "--min-freq", "1", "--set",
                           "hidden=8", "--set", "heads=2", "--out", str(tmp_path / "ck"), "--device", "cpu"],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "HIERATTN_PLUGINS": ""})
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((tmp_path / "ck" / "config.json").read_text())["plugin"]["file"] == "bigru_attention.py"
    wrong = subprocess.run([sys.executable, "-m", "hierattn", "train", "--model", "bigru_attention", "--file",
                            str(csv), "--out", str(tmp_path / "ck2")], cwd=REPO, capture_output=True, text=True,
                           timeout=120, env={**os.environ, "HIERATTN_PLUGINS": ""})
    assert wrong.returncode == 2 and "unknown model type 'bigru_attention'" in wrong.stderr
    assert "--plugin" in wrong.stderr and not (tmp_path / "ck2").exists()
