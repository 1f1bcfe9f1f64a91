"""HCAN Table 2's timing protocol (bench.batch_one): every variant timed on the same documents,
its ratio to HAN inside its own interval, and both devices' records in the report."""
import pytest
import torch

from bench.batch_one import VARIANTS, batch_one_timing
from hierattn.data.text import TextConfig, Vocab, tokenize_many
from hierattn.experiments.report import batch_one_markdown
from hierattn.experiments.results import write_timing


@pytest.fixture(scope="module")
def timing():
    texts = [f"The match ended {i} to nil. Fans cheered loudly. Prices rose again today." for i in range(8)]
    documents = tokenize_many(texts, TextConfig(max_sentences=4, max_words=12))
    return batch_one_timing(documents, [i % 5 for i in range(8)], Vocab.build(documents, min_freq=1), 5,
                            torch.device("cpu"), steps=4)


def test_every_hcan_variant_is_timed_against_han(timing):
    assert timing["steps"] == 4 and timing["han_ms_per_document"] > 0
    assert len(timing["variants"]) == len(VARIANTS) == 8
    assert len({row["name"] for row in timing["variants"]}) == 8  # the eight Table 2 variants, by name
    for row in timing["variants"]:
        assert row["ms_per_document"] > 0
        assert row["low"] <= row["ratio_to_han"] <= row["high"], row
    full = timing["variants"][0]
    assert full["name"] == "HCAN" and full["config"] == {"parallel": True, "pooling": "target", "hierarchical": True}
    expected = "holds" if full["high"] < 1 else "reversed" if full["low"] > 1 else "within noise"
    assert timing["verdict"] == expected


def test_the_report_shows_the_cpu_record_then_the_gpu_record(timing, tmp_path):
    assert batch_one_markdown(tmp_path) is None
    write_timing("batch-one-cuda", {**timing, "device": "cuda", "hardware": "NVIDIA H100"}, tmp_path)
    write_timing("batch-one", {**timing, "hardware": "CPU: test", "torch": "2.13.0+cpu"}, tmp_path)
    text = batch_one_markdown(tmp_path)
    assert text.index("on CPU: test (PyTorch 2.13.0+cpu)") < text.index("on NVIDIA H100:")
    assert "on this CPU" in text and "on this GPU" in text
    assert text.count("| HCAN (one self-attention, max pool, flat) |") == 2
