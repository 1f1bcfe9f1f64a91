import json

import pytest

from hierattn.cli import main


@pytest.mark.slow
def test_bench_quick_writes_every_figure(tmp_path, monkeypatch, capsys):
    import bench.inference

    monkeypatch.setattr(bench.inference, "list_checkpoints", lambda root: [])  # untrained models: fast, independent
    out = tmp_path / "bench.json"
    markdown = tmp_path / "BENCHMARKS.md"
    assert main(["bench", "--json", str(out), "--quick", "--markdown", str(markdown)]) == 0
    assert markdown.read_text().startswith("# Benchmarks") and "| fast bf16 |" in markdown.read_text()
    results = json.loads(out.read_text())
    assert set(results["training_docs_per_s"]) == {"han", "hcan"}
    assert all(v > 0 for v in results["training_docs_per_s"].values())
    han = results["han_training"]
    assert han["today_docs_per_s"] > 0 and han["docs_per_s"] == results["training_docs_per_s"]["han"]
    assert 0 <= han["largest_gap"] <= 1e-5  # the fast HAN computes today's function
    assert len(results["explain_seconds"]["hcan/1000"]["runs"]) == 3
    for tokens in (100, 1000, 10000):
        for model in ("han", "hcan"):
            r = results["explain_seconds"][f"{model}/{tokens}"]
            assert r["seconds"] > 0
            assert 0.9 * tokens <= r["tokens_read"] <= 1.1 * tokens, r  # the whole document is read
    runs = results["hcan_training"]
    assert set(runs) == {"reference fp32", "reference layers, length buckets", "fast fp32", "fast bf16"}
    for run in runs.values():
        assert run["docs_per_s"] > 0 and run["flops_per_doc"] > 1e6 and run["mfu"] > 0  # noisy peaks: no upper bound
    # on the same documents the fast path skips padded work: empty sentence rows, and the padding of
    # short sentences beside long ones (buckets gain little on the two batches of a quick run)
    flops = [runs[k]["flops_per_doc"] for k in ("reference fp32", "reference layers, length buckets", "fast fp32")]
    assert flops[0] >= 0.95 * flops[1] and flops[1] > 1.2 * flops[2], flops
    assert results["matmul_gflops"]["fp32"] > 0 and results["tokens_per_s"] > 0
    for model in ("hcan", "sanet"):
        r = results["statistics_seconds"][model]
        assert r["seconds"] > 0 and r["documents"] == 16 and r["matrices"] > 0
    corpus = results["corpus_preprocessing"]
    assert corpus["documents"] == 5000 and corpus["tokens"] > 5000 * 20 and corpus["documents_per_s"] > 0
    assert corpus["reused"] and corpus["reuse_seconds"] < corpus["seconds"]  # the second run found the cache
    assert corpus["peak_memory_mb"]["main"] > 0 and corpus["cache_mb"] > 0
    training = results["corpus_training"]
    assert set(training["han"]) == {"one process",
                                    f"{training['processes']} processes"} and min(training["hcan"].values()) > 0
    out = capsys.readouterr().out
    assert "| training throughput" in out and "| sanet `untrained-sanet` | 16 |" in out
    assert "| peak memory, main process |" in out and "| HCAN |" in out


def test_goals_are_judged_from_the_figures():
    from bench.run import _goals

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


@pytest.mark.slow
def test_the_overlap_figures_are_measured_under_thread_budgets():
    """The bench's overlap section end to end on a quick budget: real training processes, the
    server's computations beside them; figures only (their goals are judged above)."""
    from bench.run import format_overlap, record_overlap

    result = record_overlap(quick=True)
    training, serving = result["training"], result["serving"]
    assert training["alone_seconds"] > 0 and len(training["together_seconds"]) == 2
    assert training["ratio"] == max(training["together_seconds"]) / training["alone_seconds"]
    assert serving["explain_idle_seconds"] > 0 and serving["explain_training_seconds"] > 0
    assert serving["rerun_training_worst_seconds"] >= serving["rerun_training_seconds"] * 0.5
    assert result["cores"] >= 1 and "two started together" in "\n".join(format_overlap({"overlap": result}))
