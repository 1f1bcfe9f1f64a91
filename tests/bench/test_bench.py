"""The bench (``python -m hierattn bench``) reports figures; the suite checks what can fail on a
defect: that a recorded figures file becomes its table, its goals and BENCHMARKS.md, and that what a
figure measures is what it says (a latency reads the whole document; the fast training path skips
padded work). Running the bench itself, for its figures, is the bench's job, not the suite's."""
import json

import pytest

from bench.run import _goals, format_table
from hierattn.cli import main
from tests.conftest import REPO

# A quick bench's figures (`python -m hierattn bench --quick --json ...`), with the overlap, soak and
# classroom sections merged in (`--only overlap|soak|classroom --quick`)
RECORDED = REPO / "tests" / "recorded" / "bench-quick.json"


@pytest.fixture(scope="module")
def recorded() -> dict:
    return json.loads(RECORDED.read_text())


def test_a_recorded_figures_file_becomes_its_table_and_goals(recorded):
    from bench.inference import LATENCY_TOKENS

    table = format_table(recorded)
    assert table.startswith(f"hardware: {recorded['hardware']}")
    assert "| training throughput, bbc-news (documents/s) |" in table
    for tokens in LATENCY_TOKENS:
        read = recorded["explain_seconds"][f"han/{tokens}"]["tokens_read"]
        assert f"| explain latency, ~{tokens:,} tokens ({read:,} read), median |" in table
    for run in recorded["hcan_training"]:
        assert f"| {run} |" in table
    for model_type, r in recorded["statistics_seconds"].items():
        assert f"| {model_type} `{r['checkpoint']}` | {r['documents']} |" in table
    assert "two started together" in table  # the overlap section
    goals = _goals(recorded)
    names = [name for name, _, _, _ in goals]
    assert len(names) == len(set(names)) and any(name.startswith("soak:") for name in names)
    for name, target, measured, met in goals:  # every goal a row: its target, the figure, met or not
        assert f"| {name} | {target} | {measured} | {'yes' if met else '**no**'} |" in table


def test_the_classroom_figures_become_their_table(recorded):
    from bench.classroom import STEPS, format_classroom

    lines = format_classroom(recorded["classroom"])
    assert [line.split(" |")[0] for line in lines[2:2 + len(STEPS)]] == [f"| {step}" for step in STEPS]
    assert f"{recorded['classroom']['sessions']} sessions, {len(recorded['classroom']['errors'])} errors" in lines[-1]


def test_the_markdown_file_is_the_table_with_the_command_that_made_it(recorded, tmp_path, monkeypatch):
    import bench.run

    monkeypatch.setattr(bench.run, "run_bench", lambda out, quick=False, only=None: recorded)
    markdown = tmp_path / "BENCHMARKS.md"
    assert main(["bench", "--json", str(tmp_path / "bench.json"), "--quick", "--markdown", str(markdown)]) == 0
    text = markdown.read_text()
    assert text.startswith("# Benchmarks\n\nProduced by `python -m hierattn bench --json ")
    assert format_table(recorded) in text and "| fast bf16 |" in text


def test_goals_are_judged_from_the_figures():
    results = {"hcan_training": {"reference fp32": {"docs_per_s": 10.0}, "fast fp32": {"docs_per_s": 31.0},
                                 "fast bf16": {"docs_per_s": 50.0}},
               "training_docs_per_s": {"han": 40.0},
               "han_training": {"today_docs_per_s": 30.0, "docs_per_s": 40.0, "largest_gap": 3e-5},
               "explain_seconds": {"hcan/1000": {"seconds": 0.019, "runs": [0.018, 0.019, 0.025]},
                                   "hcan/10000": {"seconds": 0.9}},
               "explore_rerun_seconds": 0.2, "app_memory_mb": 1100.0, "tokens_per_s": 25000.0,
               "cold_start_seconds": None,
               "overlap": {"training": {"ratio": 2.4}, "serving": {"explain_ratio": 3.2,
                                                                 "rerun_training_worst_seconds": 0.4}}}
    met = {name: ok for name, _, _, ok in _goals(results)}
    assert met == {"HCAN training (fast fp32) vs its straightforward fp32 reference": True,
                   "HCAN (fast fp32) / HAN training documents per second": False,
                   "HAN training documents per second / today's implementation": True,
                   "HAN outputs and gradients against today's implementation, largest gap": False,
                   "explain, ~1,000 tokens, HCAN, median": True, "explain, ~10,000 tokens, HCAN, median": True,
                   "Explore page rerun, ~1,000 tokens, median": True,
                   "app memory, every shipped checkpoint loaded": False, "tokenisation, long documents": True,
                   "cold start: `streamlit run` to the first chart in Chromium, median of 3": False,
                   "two trainings at once: each one's time / one alone": True,
                   "explain while a run trains / idle": False, "Explore rerun while a run trains, worst": True}


@pytest.fixture(scope="module")
def bbc_news():
    """A slice of bbc-news as the bench reads it: its tokenised training documents, their vocabulary,
    and test texts."""
    from hierattn.data.builtin import load_builtin
    from hierattn.data.split import stratified_split
    from hierattn.data.text import Vocab, tokenize_many
    from hierattn.training.presets import PRESETS

    ds = load_builtin("bbc-news")
    split = stratified_split(ds.labels)
    train = split["train"][::25]  # a split is sorted by class: every 25th spans them
    docs = tokenize_many([ds.texts[i] for i in train], PRESETS["bbc-news-han"].text)
    return {"docs": docs, "labels": [ds.labels[i] for i in train], "vocab": Vocab.build(docs, min_freq=2),
            "classes": len(ds.label_names), "label_names": ds.label_names,
            "test": [ds.texts[i] for i in split["test"]]}


@pytest.mark.parametrize("model_type", ["han", "hcan"])
def test_the_explain_latency_reads_the_whole_document(bbc_news, model_type, tmp_path):
    from bench.inference import classifier_for, document_of, explain_latency

    classifier = classifier_for(model_type, tmp_path, bbc_news["vocab"], bbc_news["label_names"])  # untrained
    for tokens in (100, 1000):
        seconds, read = explain_latency(classifier, document_of(tokens, bbc_news["test"]), 1)
        assert seconds > 0 and 0.9 * tokens <= read <= 1.1 * tokens, (tokens, read)


@pytest.mark.slow  # three training steps of a bbc-news-sized HCAN
def test_the_fast_training_path_skips_padded_work(bbc_news):
    """On the same length-bucketed batches the reference layers compute every padded sentence row and
    the fast path groups sentences by length: fewer FLOPs a document for the same function."""
    import torch

    from bench.training import training_throughput

    flops = {}
    for label, reference in (("reference", True), ("fast", False)):
        _, flops[label] = training_throughput("hcan", bbc_news["docs"], bbc_news["labels"], bbc_news["vocab"],
                                              bbc_news["classes"], 1, torch.device("cpu"), "fp32", reference, True)
    assert flops["reference"] > 1.2 * flops["fast"] > 0, flops
