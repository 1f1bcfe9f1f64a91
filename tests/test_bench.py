import json

from hierattn.__main__ import main


def test_bench_quick_writes_every_figure(tmp_path, monkeypatch, capsys):
    import hierattn.bench as bench

    monkeypatch.setattr(bench, "list_checkpoints", lambda root: [])  # untrained models: fast and independent
    out = tmp_path / "bench.json"
    assert main(["bench", "--json", str(out), "--quick"]) == 0
    results = json.loads(out.read_text())
    assert set(results["training_docs_per_s"]) == {"han", "hcan"}
    assert all(v > 0 for v in results["training_docs_per_s"].values())
    for tokens in (100, 1000, 5000):
        for model in ("han", "hcan"):
            r = results["explain_seconds"][f"{model}/{tokens}"]
            assert r["seconds"] > 0
            assert 0.9 * tokens <= r["tokens_read"] <= 1.1 * tokens, r  # the whole document is read
    for model in ("hcan", "sanet"):
        r = results["statistics_seconds"][model]
        assert r["seconds"] > 0 and r["documents"] == 16 and r["matrices"] > 0
    out = capsys.readouterr().out
    assert "| training throughput" in out and "| sanet `untrained-sanet` | 16 |" in out
