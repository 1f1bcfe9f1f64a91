"""A library's folder within the server's limits before the library reads it:
``hierattn.models.library_limits``. A long window is cut to what one explanation may hold, and said;
config.json numbers that the library turns into tables are refused from the file alone."""
from __future__ import annotations

import json
import shutil
import time

import pytest
import torch

from hierattn.analysis.explain import explain
from hierattn.checkpoint.format import CheckpointError
from hierattn.checkpoint.reading import load_classifier
from hierattn.checkpoint.writing import card
from hierattn.limits import EXPLANATION_CELLS
from hierattn.models.library_limits import config_number_problem, fitting_window
from tests.models.tiny_transformers import save_tiny


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    return save_tiny("bert", tmp_path_factory.mktemp("bert") / "tiny-bert")


def _with_config(tiny_bert, tmp_path, **changes):
    folder = tmp_path / "edited"
    shutil.copytree(tiny_bert, folder)
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _held(layers: int, heads: int, t: int) -> float:
    """What an explanation of t tokens holds, in float32 cells, counted here by hand: the token map
    (half a cell each in float16 past a million cells), one layer's word map of as many words, the
    first token's rows."""
    token = layers * heads * t * t
    return (token / 2 if token > 2**20 else token) + heads * t * t + heads * t


def test_the_fitting_window_is_the_largest_within_the_explanation_limit(monkeypatch):
    for layers, heads in ((4, 4), (6, 12), (2, 2)):
        t = fitting_window(layers, heads)
        assert _held(layers, heads, t) <= EXPLANATION_CELLS.value
        assert all(_held(layers, heads, u) > EXPLANATION_CELLS.value for u in range(t + 1, t + 2000))
    assert fitting_window(6, 12) >= 512  # MiniLM reads its whole window (341 when its maps were held in float32)
    monkeypatch.setenv("HIERATTN_MAX_EXPLANATION_CELLS", str(2**20))  # past 1M cells the map halves: 257-295 fit
    assert fitting_window(4, 4) == 295 and _held(4, 4, 256) > 2**20 >= _held(4, 4, 257)


def test_a_long_window_model_reads_what_one_explanation_may_hold(tmp_path, monkeypatch):
    """4 layers x 4 heads with a 4,096-token window: a 3,000-word paste cost 49 s and 4 GB before the
    explanation limit refused its 288 million cells; it is read in the window that fits, and says so."""
    from transformers import AutoModelForSequenceClassification, BertConfig, PreTrainedTokenizerFast

    from tests.models.tiny_transformers import wordpiece

    tok, special = wordpiece()
    config = BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=16, num_hidden_layers=4, num_attention_heads=4,
                        intermediate_size=32, max_position_embeddings=4096, num_labels=2)
    folder = tmp_path / "long-bert"
    AutoModelForSequenceClassification.from_config(config).save_pretrained(folder)
    PreTrainedTokenizerFast(tokenizer_object=tok, **special).save_pretrained(folder)
    classifier = load_classifier(folder, device="cpu")
    assert classifier.model.model_window == 4096 and classifier.window == fitting_window(4, 4) == 1182
    from hierattn.app.loading import window_cut

    assert "Its window is 4,096 tokens: it reads 1,182 here" in window_cut(classifier)  # the sidebar says so
    started = time.perf_counter()
    ex = explain(classifier, " ".join([" ".join(["the movie was great and"] * 8) + " fun ."] * 75))  # 3,000 words
    assert time.perf_counter() - started < 60  # minutes of one core before (a bound, not a speed goal)
    assert ex.document.truncation.window == 1182 and ex.document.truncation.window_words_dropped > 800
    assert ex.attentions.weight_bytes / 4 <= EXPLANATION_CELLS.value  # float32 cells' worth, as held
    assert ex.describe("subword.self").weights.dtype == torch.float16  # 22 million cells: held in half
    monkeypatch.setenv("HIERATTN_MAX_EXPLANATION_CELLS", str(1 << 20))
    assert load_classifier(folder, device="cpu").window == fitting_window(4, 4) == 295


@pytest.mark.parametrize("changes,message", [
    ({"num_labels": 15_000_000, "id2label": None, "label2id": None}, "num_labels is 15,000,000, over the limit of 100"),
    ({"id2label": {str(i): f"L{i}" for i in range(400)}}, "id2label \\(entries\\) is 400, over the limit of 100"),
    ({"num_labels": "many"}, "num_labels is 'many', not a positive whole number"),
    ({"max_position_embeddings": 10**9}, "max_position_embeddings is 1,000,000,000, over the limit of 1,000,000"),
    ({"rope_scaling": {"factor": 10**12}}, "rope_scaling.factor is"),
])
def test_config_numbers_the_library_would_build_tables_of_are_refused_from_the_file(tiny_bert, tmp_path, changes,
                                                                                    message):
    folder = _with_config(tiny_bert, tmp_path, **changes)
    config = {k: v for k, v in json.loads((folder / "config.json").read_text()).items() if v is not None}
    (folder / "config.json").write_text(json.dumps(config))
    started = time.perf_counter()
    with pytest.raises(CheckpointError, match=message):
        load_classifier(folder, device="cpu")
    with pytest.raises(CheckpointError, match=message):
        card(folder)  # the pickers and the health check read the card: refused there too, not built
    assert time.perf_counter() - started < 10  # 47 s and 4 GB for 15 million labels before


def test_the_shipped_configs_are_within_the_numbers(tiny_bert):
    from hierattn.home import checkpoint_root

    for folder in [tiny_bert, checkpoint_root() / "bbc-news-transformer", checkpoint_root() / "tweets-transformer"]:
        assert config_number_problem(json.loads((folder / "config.json").read_text())) is None, folder


def test_a_weights_header_beyond_its_limit_is_refused_before_it_is_parsed(tiny_bert, tmp_path):
    """A million empty tensors made a 56 MB header: refused after 35 s and 1.8 GB."""
    folder = tmp_path / "headers"
    shutil.copytree(tiny_bert, folder)
    body = json.dumps({f"t{i}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]} for i in range(100_000)})
    data = body.encode() + b" " * (-len(body) % 8)
    (folder / "model.safetensors").write_bytes(len(data).to_bytes(8, "little") + data)
    started = time.perf_counter()
    with pytest.raises(CheckpointError, match="model.safetensors' header is .* over the limit of 4"):
        load_classifier(folder, device="cpu")
    assert time.perf_counter() - started < 10
