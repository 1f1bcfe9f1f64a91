"""The example plug-in (examples/bigru_attention) by the steps of its README: trained through the
command line with the plug-in named by HIERATTN_PLUGINS, explained, then opened on Explore, Compare
and Train. And the same checkpoint where the plug-in is not loaded: one clear message on its page,
every other checkpoint as before."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest
from streamlit.testing.v1 import AppTest

from hierattn.models import REGISTRY, load_plugins, plugins
from tests.conftest import REPO, shown

FOLDER = REPO / "examples" / "bigru_attention"
EXAMPLE = FOLDER / "bigru_attention.py"
NAME = "tweets-bigru-attention"
pytestmark = pytest.mark.slow


def readme_commands() -> dict[str, list[str]]:
    """The README's `python -m hierattn` commands, by subcommand, and its export."""
    lines = (FOLDER / "README.md").read_text().split("```")[1].strip().splitlines()
    commands = {shlex.split(line)[3]: shlex.split(line) for line in lines if line.startswith("python -m hierattn ")}
    commands["export"] = shlex.split(next(line for line in lines if line.startswith("export ")))
    return commands


def _run(argv: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv[1:]], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, checkpoint_dir):
    """The README's train and explain commands, run as written except for the data (a 60-document
    CSV in place of tweets), one epoch and the output folder; a built-in checkpoint beside it."""
    root = tmp_path_factory.mktemp("plugin-checkpoints")
    csv = root.parent / "films.csv"
    rows = [(f"The film was {['great fun', 'a bore'][i % 2]}. I saw it on day {i}.", ["pos", "neg"][i % 2])
            for i in range(60)]
    csv.write_text("text,label\n" + "".join(f'"{t}",{y}\n' for t, y in rows))
    commands = readme_commands()
    variable, _, value = commands["export"][1].partition("=")
    assert variable == "HIERATTN_PLUGINS" and (REPO / value) == EXAMPLE
    env = {**os.environ, variable: value, "OMP_NUM_THREADS": "1"}

    train = commands["train"]
    assert train[train.index("--model") + 1] == "bigru_attention" and train[train.index("--name") + 1] == NAME
    train[train.index("--dataset"): train.index("--dataset") + 2] = ["--file", str(csv)]
    train[train.index("--epochs") + 1] = "1"
    train[train.index("--name"): train.index("--name") + 2] = ["--out", str(root / NAME), "--min-freq", "1"]
    done = _run(train, env)
    assert done.returncode == 0, done.stderr[-2000:]

    explain = commands["explain"]
    explain[explain.index("--checkpoint") + 1] = str(root / NAME)
    done = _run(explain, env)
    assert done.returncode == 0, done.stderr[-2000:]
    shutil.copytree(checkpoint_dir / "tiny-han", root / "tiny-han")
    return root, json.loads(done.stdout)


@pytest.fixture
def with_plugin(monkeypatch):
    """The example registered in this process (AppTest runs pages here), and the registry as it was after."""
    registry, tried, problems = dict(REGISTRY), set(plugins._TRIED), dict(plugins.PROBLEMS)
    monkeypatch.setenv("HIERATTN_PLUGINS", "")
    assert load_plugins([EXAMPLE]) == [] and "bigru_attention" in REGISTRY
    yield
    import streamlit as st

    from hierattn.app.process import forget_all

    st.cache_resource.clear()
    forget_all()  # the loaded plug-in model (process-wide), which no later test's registry knows
    st.cache_data.clear()
    REGISTRY.clear()
    REGISTRY.update(registry)
    plugins._TRIED.clear()
    plugins._TRIED.update(tried)
    plugins.PROBLEMS.clear()
    plugins.PROBLEMS.update(problems)


def test_the_checkpoint_names_its_plugin_and_explains(trained):
    root, explanation = trained
    config = json.loads((root / NAME / "config.json").read_text())
    assert config["model_type"] == "bigru_attention" and config["plugin"]["file"] == "bigru_attention.py"
    assert config["model_config"]["heads"] == 4  # the README's --set heads=4
    word = explanation["attention"]["word.target"]
    assert word["axes"] == ["batch", "head", "key"] and word["level"] == "word"
    heads = word["weights"][0]
    words = sum(len(s["tokens"]) for s in explanation["sentences"])
    assert len(heads) == 4 and all(abs(sum(h[:words]) - 1) < 1e-4 for h in heads)
    assert (root / NAME / "README.md").is_file()  # a card, like every checkpoint


def _page(page: str, root, **state) -> AppTest:
    at = AppTest.from_file(str(REPO / page), default_timeout=120)
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def test_explore_compare_and_train_show_the_plugin_model(trained, with_plugin, monkeypatch):
    root, _ = trained
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(root))
    at = _page("pages/explore.py", root, model=NAME, document="The film was great fun. I saw it twice.")
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert any("BiGRU + 4-head attention" in c.value for c in at.sidebar.caption)
    assert at.radio(key="target_head").options == ["mean", "1", "2", "3", "4"] or len(at.radio(key="target_head")
                                                                                      .options) == 5
    assert any('class="ha-w' in h.proto.body for h in at.get("html"))  # the words are shaded

    at = _page("pages/compare.py", root, compare_a="tiny-han", compare_b=NAME)
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert "Agreement" in [s.value for s in at.subheader]
    assert list(at.dataframe[0].value["measure"])[0] == "Spearman rank correlation"

    at = _page("pages/train.py", root)
    assert "BiGRU + multi-head attention (plug-in example)" in at.selectbox(key="model_type").options


def test_without_the_plugin_its_checkpoint_says_what_to_load_and_the_others_work(trained, monkeypatch):
    root, _ = trained
    assert "bigru_attention" not in REGISTRY
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(root))
    at = _page("pages/explore.py", root, model=NAME)
    assert not at.exception
    assert [e.value for e in at.error] and len(at.error) == 1
    message = shown(at.error[0].value)
    assert "bigru_attention.py" in message and "HIERATTN_PLUGINS" in message and "is ever imported" in message
    at = _page("pages/explore.py", root, model="tiny-han", document="The film was great fun.")
    assert not at.exception and not at.error


def test_a_plugin_file_that_fails_to_import_gives_one_warning_and_the_app_works(tmp_path, with_plugin,
                                                                                checkpoint_dir, monkeypatch):
    broken = tmp_path / "broken_model.py"
    broken.write_text("import torch\n\nSPEC = torch.no_such_thing\n")
    assert len(load_plugins([broken])) == 1
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(checkpoint_dir))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.session_state["model"] = "tiny-han"
    at.session_state["document"] = "The film was great fun."
    at.run()
    assert not at.exception and not at.error
    warnings = [shown(w.value) for w in at.sidebar.warning]
    assert len(warnings) == 1 and "broken_model.py failed to import: AttributeError" in warnings[0]
    assert "line 3 of broken_model.py" in warnings[0]
    assert [m.label for m in at.metric] == ["Prediction"]  # Explore went on with a built-in checkpoint


def test_a_train_page_run_of_the_plugin_model_loads_it_in_its_own_process(tmp_path, with_plugin):
    """The Train page trains in a spawned process, a fresh interpreter: it finds the plug-in
    through HIERATTN_PLUGINS, which loading it here has set."""
    from hierattn.data.dataset import Dataset
    from hierattn.data.text import TextConfig
    from hierattn.training.jobs import make_job
    from hierattn.training.loop import TrainConfig

    assert str(EXAMPLE) in os.environ["HIERATTN_PLUGINS"]
    texts = [f"The film was {['great fun', 'a bore'][i % 2]}. Day {i}." for i in range(40)]
    job = make_job("page-run", tmp_path, "bigru_attention", {"embed_dim": 8, "hidden": 4, "heads": 2},
                   Dataset("films", texts, [i % 2 for i in range(40)], ["pos", "neg"]), TextConfig(4, 12),
                   TrainConfig(epochs=1, batch_size=8, min_freq=1), device="cpu")
    job.run()
    assert job.status == "finished", job.message
    assert json.loads((tmp_path / "page-run" / "config.json").read_text())["plugin"]["file"] == "bigru_attention.py"


def test_the_head_divergence_measure_is_jensen_shannon():
    import importlib.util
    import math

    import torch

    spec = importlib.util.spec_from_file_location("head_divergence", FOLDER / "head_divergence.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    p, q = torch.tensor([0.5, 0.5, 0.0, 0.0]), torch.tensor([0.0, 0.0, 0.5, 0.5])
    assert module.jsd(p, p) == pytest.approx(0, abs=1e-9) and module.jsd(p, q) == pytest.approx(math.log(2))
    rows = torch.stack([p, q, p])
    assert module.mean_pairwise(rows) == pytest.approx(2 * math.log(2) / 3)  # two disjoint pairs of three
