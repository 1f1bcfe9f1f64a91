"""``python -m hierattn bench``: every performance figure of this machine in one run, judged
against its goal; the figures come from the other modules of this folder."""
from __future__ import annotations

import json
import os
import random
import statistics
import time
from pathlib import Path

import torch

from bench.batch_one import batch_one_timing
from bench.browser import app_memory_mb, cold_start_seconds, explore_rerun_seconds, long_document_render_seconds
from bench.corpus import corpus_preprocessing, corpus_training
from bench.inference import (
    LATENCY_TOKENS,
    battery_seconds,
    classifier_for,
    document_of,
    explain_latency,
    tokenisation_rate,
    trust_two_tabs,
)
from bench.training import han_paths_gap, matmul_peak, training_throughput
from hierattn.checkpoint.classifier import best_device
from hierattn.checkpoint.reading import load_classifier
from hierattn.data.builtin import load_builtin
from hierattn.data.split import stratified_split
from hierattn.data.text import Vocab, tokenize_many
from hierattn.experiments.report import batch_one_lines as format_batch_one
from hierattn.threads import cores
from hierattn.training.loop import hardware
from hierattn.training.presets import PRESETS


def run_bench(out: str | Path, quick: bool = False, checkpoints: str | Path = "checkpoints",
              only: str | None = None) -> dict:
    if only == "corpus":  # this section alone, merged into the figures already in ``out``
        results = json.loads(Path(out).read_text()) if Path(out).is_file() else {}
        results["corpus_preprocessing"] = corpus_preprocessing(5_000 if quick else 1_000_000)
        results["corpus_training"] = corpus_training(640 if quick else 20_000)
        Path(out).write_text(json.dumps(results, indent=2))
        print(format_table(results))
        return results
    if only == "overlap":  # two trainings at once, and the server while a run trains, alone, merged
        results = json.loads(Path(out).read_text()) if Path(out).is_file() else {}
        results["overlap"] = record_overlap(quick, checkpoints)
        Path(out).write_text(json.dumps(results, indent=2))
        print("\n".join(format_overlap(results)))
        return results
    if only == "gpu":  # the GPU figures alone, recorded under results/timing/
        from bench.gpu import format_gpu, record_gpu

        results = json.loads(Path(out).read_text()) if Path(out).is_file() else {}
        results["gpu"] = record_gpu(quick, checkpoints)
        Path(out).write_text(json.dumps(results, indent=2))
        print("\n".join(format_gpu(results["gpu"])))
        return results
    if only == "classroom":  # the classroom load test (a class on one server) alone, merged
        from bench.classroom import format_classroom, run_classroom

        results = json.loads(Path(out).read_text()) if Path(out).is_file() else {}
        results["classroom"] = run_classroom(8 if quick else 30)
        Path(out).write_text(json.dumps(results, indent=2))
        print("\n".join(format_classroom(results["classroom"])))
        return results
    if only == "load":  # a class pasting at once: pastes/s with 1 and 2 workers, latency, the health check
        from bench.load import format_load, record_load

        results = json.loads(Path(out).read_text()) if Path(out).is_file() else {}
        results["load"] = record_load(quick)
        Path(out).write_text(json.dumps(results, indent=2))
        print("\n".join(format_load(results["load"])))
        return results
    if only == "huggingface":  # the shipped transformers' explain latency, training beside HAN's
        from bench.transformer import format_transformer, record_transformer

        results = json.loads(Path(out).read_text()) if Path(out).is_file() else {}
        results["huggingface"] = record_transformer(quick, checkpoints)
        Path(out).write_text(json.dumps(results, indent=2))
        print("\n".join(format_transformer(results["huggingface"])))
        return results
    if only == "long-document":  # a 512-token document on MiniLM, explained and drawn
        from bench.transformer import format_long_document, record_long_document

        results = json.loads(Path(out).read_text()) if Path(out).is_file() else {}
        results["long_document"] = record_long_document(quick)
        Path(out).write_text(json.dumps(results, indent=2))
        if not quick and results["long_document"]:
            from hierattn.experiments.results import write_timing

            write_timing("long-document", {**results["long_document"], "hardware": hardware()})
        print("\n".join(format_long_document(results["long_document"])))
        print("\n".join(f"{g[0]}: {g[2]}" for g in _goals(results) if g[0].startswith("a 512-token")))
        return results
    if only == "attribution":  # each attribution method's cost per document, recorded
        from bench.attribution import format_attribution, record_attribution

        results = json.loads(Path(out).read_text()) if Path(out).is_file() else {}
        results["attribution"] = record_attribution(quick, checkpoints)
        Path(out).write_text(json.dumps(results, indent=2))
        if not quick:
            from hierattn.experiments.results import write_timing

            write_timing("attribution", results["attribution"])
        print("\n".join(format_attribution(results["attribution"])))
        return results
    if only == "stats-memory":  # Dataset statistics' memory on a long-window transformer, recorded
        from bench.stats_memory import format_stats_memory, record_stats_memory

        results = json.loads(Path(out).read_text()) if Path(out).is_file() else {}
        results["stats_memory"] = record_stats_memory(quick)
        Path(out).write_text(json.dumps(results, indent=2))
        if not quick:
            from hierattn.experiments.results import write_timing

            write_timing("stats-memory", {**results["stats_memory"], "hardware": hardware()})
        print("\n".join(format_stats_memory(results["stats_memory"])))
        return results
    if only == "trust-tab":  # the trust panel in one browser tab on an idle server, recorded
        from bench.trust_tab import format_trust_tab, record_trust_tab

        results = json.loads(Path(out).read_text()) if Path(out).is_file() else {}
        results["trust_tab"] = record_trust_tab(quick)
        Path(out).write_text(json.dumps(results, indent=2))
        if not quick:
            from hierattn.experiments.results import write_timing

            write_timing("trust-tab", {**results["trust_tab"], "hardware": hardware()})
        print("\n".join(format_trust_tab(results["trust_tab"])))
        print("\n".join(f"{g[0]}: {g[2]}" for g in _goals(results) if g[0].startswith("trust panel in one")))
        return results
    if only == "paste-cpu":  # the server's CPU, messages and bytes per paste, per model family, recorded
        from bench.paste_cpu import format_paste_cpu, run_paste_cpu
        from hierattn.experiments.results import read_timing, write_timing

        results = json.loads(Path(out).read_text()) if Path(out).is_file() else {}
        before = read_timing("paste-cpu")
        load_before = os.getloadavg()[0]
        results["paste_cpu"] = {"rows": run_paste_cpu(), "hardware": hardware(),
                                "before": before.get("rows") if before else None,
                                "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
        Path(out).write_text(json.dumps(results, indent=2))
        if not quick:
            write_timing("paste-cpu", {"rows": results["paste_cpu"]["rows"], "hardware": hardware(),
                                       "measured": time.strftime("%Y-%m-%d"),
                                       # other work on the machine shows here: the figure is for an idle one
                                       "load_average": results["paste_cpu"]["load_average"]})
        print("\n".join(format_paste_cpu(results["paste_cpu"]["rows"])))
        print("\n".join(f"{g[0]}: {g[2]}" for g in _goals(results) if g[0].startswith("server CPU per paste")))
        return results
    if only in ("class-wave", "first-answer"):  # a class pasting at once and a fresh visit; one document's answer
        from hierattn.experiments.results import read_timing, write_timing

        results = json.loads(Path(out).read_text()) if Path(out).is_file() else {}
        key, name = only.replace("-", "_"), only
        before = read_timing(name)
        if only == "class-wave":
            from bench.browser import fresh_visit_seconds
            from bench.load import format_waves, record_waves

            figures = {"waves": record_waves(quick), "fresh_visit": fresh_visit_seconds(2 if quick else 5)}
            lines = format_waves(figures["waves"])
        else:
            from bench.first_answer import format_first_answer, record_first_answer

            figures = record_first_answer()
            lines = format_first_answer(figures)
        results[key] = {**figures, "hardware": hardware(), "before": before}
        Path(out).write_text(json.dumps(results, indent=2))
        if not quick:
            write_timing(name, {**figures, "hardware": hardware(), "measured": time.strftime("%Y-%m-%d"),
                                "load_average": [round(v, 2) for v in os.getloadavg()[:2]]})
        print("\n".join(lines))
        print("\n".join(f"{g[0]}: {g[2]}" for g in _goals(results) if g[0].startswith(GOAL_PREFIX[key])))
        return results
    if only == "soak":  # the soak (visitors and attacks on a server, round after round) alone, merged
        results = json.loads(Path(out).read_text()) if Path(out).is_file() else {}
        results["soak"] = record_soak(2 if quick else 3)
        Path(out).write_text(json.dumps(results, indent=2))
        print("\n".join(f"{g[0]}: {g[2]}" for g in _goals(results) if g[0].startswith("soak")))
        return results
    if only == "batch-one":  # HCAN Table 2's protocol alone, merged, and recorded under results/timing/
        results = json.loads(Path(out).read_text()) if Path(out).is_file() else {}
        results["batch_one"] = record_batch_one(quick)
        Path(out).write_text(json.dumps(results, indent=2))
        print("\n".join(format_batch_one(results["batch_one"])))
        return results
    device = best_device()
    ds = load_builtin("bbc-news")
    split = stratified_split(ds.labels)
    n_train = 64 if quick else 512
    train_idx = split["train"][:n_train]
    docs = tokenize_many([ds.texts[i] for i in train_idx], PRESETS["bbc-news-han"].text)
    labels = [ds.labels[i] for i in train_idx]
    vocab = Vocab.build(docs, min_freq=2)
    results = {"hardware": hardware(), "device": device.type, "torch": torch.__version__,
               "threads": torch.get_num_threads(), "training_docs_per_s": {}, "explain_seconds": {}}
    steps = 2 if quick else 24
    rate, _ = training_throughput("han", docs, labels, vocab, len(ds.label_names), steps, device)
    results["training_docs_per_s"]["han"] = rate
    # HAN against today's implementation: the same batches, nn.GRU on packed sequences
    today, _ = training_throughput("han", docs, labels, vocab, len(ds.label_names), steps, device,
                                   reference=True, buckets=True)
    results["han_training"] = {"today_docs_per_s": today, "docs_per_s": results["training_docs_per_s"]["han"],
                               "largest_gap": han_paths_gap(docs, labels, vocab, len(ds.label_names), steps)}
    # HCAN training against its straightforward fp32 reference, in this process
    # quick: smaller products (bf16 at 2048 took 90 s a product on a CPU without bf16 units: 9 of the
    # quick bench's 15 minutes); a peak, so a smaller size reads a little lower, never higher
    size, repeats = (512, 2) if quick else (2048, 5)
    peaks = {"fp32": matmul_peak(torch.float32, device, size, repeats),
             "bf16": matmul_peak(torch.bfloat16, device, size, repeats)}
    runs = {}
    for label, precision, reference, buckets in (
            ("reference fp32", "fp32", True, False),  # random batches, reference layers
            ("reference layers, length buckets", "fp32", True, True),
            ("fast fp32", "fp32", False, True),  # the training default  # + sentence groups, fused conv, cheap dropout
            ("fast bf16", "bf16", False, True)):
        # quick: bf16 on one batch (a CPU without bf16 units emulates it: 75 s of the quick bench's 280 at two)
        batches = 1 if quick and precision == "bf16" else steps
        rate, flops = training_throughput("hcan", docs, labels, vocab, len(ds.label_names), batches, device,
                                          precision, reference, buckets)
        runs[label] = {"docs_per_s": rate, "flops_per_doc": flops, "mfu": rate * flops / (peaks[precision] * 1e9)}
    results["training_docs_per_s"]["hcan"] = runs["fast fp32"]["docs_per_s"]  # HCAN's training default
    results["matmul_gflops"] = peaks
    results["hcan_training"] = runs
    results["batch_one"] = batch_one_timing(docs, labels, vocab, len(ds.label_names), device, 4 if quick else 40)
    results["tokens_per_s"] = tokenisation_rate([ds.texts[i] for i in split["test"]][: 16 if quick else None])
    test_texts = [ds.texts[i] for i in split["test"]]
    for model_type in ("han", "hcan"):
        classifier = classifier_for(model_type, Path(checkpoints), vocab, ds.label_names)
        for tokens in LATENCY_TOKENS:
            # three runs of the median of 5, to show the spread across runs; the figure is their median
            runs = [explain_latency(classifier, document_of(tokens, test_texts), 1 if quick else 5)
                    for _ in range(3 if tokens == 1000 else 1)]
            results["explain_seconds"][f"{model_type}/{tokens}"] = {
                "seconds": statistics.median(r[0] for r in runs), "runs": [r[0] for r in runs],
                "tokens_read": runs[0][1], "checkpoint": classifier.name}
    # Explore's "Can I trust this shading?" for a ~300-word document on HCAN (goal: < 5 s)
    results["battery_seconds"] = battery_seconds(classifier_for("hcan", Path(checkpoints), vocab, ds.label_names),
                                                 document_of(300, test_texts), 1 if quick else 3, adversarial=not quick)
    if not quick:  # two visitors' trust panels at once, on two articles, against one alone
        hcan = classifier_for("hcan", Path(checkpoints), vocab, ds.label_names)
        results["trust_two_tabs"] = trust_two_tabs(hcan, [document_of(250, test_texts),
                                                          document_of(250, test_texts[5:])])
    # Dataset statistics page: every self-attention matrix of the bbc-news test split (goal: < 1 min).
    from hierattn.analysis.stats import split_statistics

    results["statistics_seconds"] = {}
    count = 16 if quick else len(test_texts)
    labels = [ds.label_names[ds.labels[i]] for i in split["test"]][:count]
    for model_type in ("hcan", "sanet"):
        classifier = classifier_for(model_type, Path(checkpoints), vocab, ds.label_names)
        start = time.perf_counter()
        rows = split_statistics(classifier, test_texts[:count], labels)
        results["statistics_seconds"][model_type] = {"seconds": time.perf_counter() - start, "documents": count,
                                                     "matrices": len(rows), "checkpoint": classifier.name}
    if not quick:  # a fresh process and a headless page: seconds each, and they need the shipped checkpoints
        results["app_memory_mb"] = app_memory_mb(checkpoints)
        results["explore_rerun_seconds"] = explore_rerun_seconds(document_of(1000, test_texts), "bbc-news-hcan", 5)
        long_text = document_of(10000, test_texts)
        results["long_document_render_seconds"] = long_document_render_seconds(
            long_text, ("bbc-news-hcan", "bbc-news-sanet"))
        results["long_document_words"] = len(long_text.split())
        results["overlap"] = record_overlap(False, checkpoints)
        results["soak"] = record_soak(3)
        starts = [cold_start_seconds() for _ in range(3)]
        results["cold_start_seconds"] = None if None in starts else statistics.median(starts)
    results["corpus_preprocessing"] = corpus_preprocessing(5_000 if quick else 1_000_000)
    results["corpus_training"] = corpus_training(640 if quick else 20_000)
    Path(out).write_text(json.dumps(results, indent=2))
    print(format_table(results))
    return results


def record_soak(rounds: int) -> dict | None:
    """The soak (``bench/soak.py``): server memory after it and the time back to idle; None without
    Playwright and Chromium."""
    import tempfile

    try:
        from bench.soak import run_soak
    except ImportError:
        return None
    with tempfile.TemporaryDirectory(prefix="hierattn-soak-") as workdir:
        figures = run_soak(workdir, rounds)
    figures.pop("server_log_tail", None)
    return figures


def record_batch_one(quick: bool = False) -> dict:
    """The batch-1 timing on bbc-news training documents, also written to results/timing/ (the
    registry's recorded data, which docs/RESULTS.md and the Evaluation page show)."""
    from hierattn.experiments.results import write_timing

    device = best_device()
    ds = load_builtin("bbc-news")
    train_idx = stratified_split(ds.labels)["train"][: 16 if quick else 200]
    docs = tokenize_many([ds.texts[i] for i in train_idx], PRESETS["bbc-news-han"].text)
    labels = [ds.labels[i] for i in train_idx]
    vocab = Vocab.build(docs, min_freq=2)
    result = batch_one_timing(docs, labels, vocab, len(ds.label_names), device, 4 if quick else 120)
    result["hardware"] = hardware()
    result["torch"] = torch.__version__
    if not quick:  # one record per kind of device: the CPU figure and a GPU figure stand side by side
        write_timing("batch-one" if device.type == "cpu" else f"batch-one-{device.type}", result)
    return result


def record_overlap(quick: bool = False, checkpoints: str | Path = "checkpoints") -> dict:
    """Two HAN trainings on bbc-news training documents together against one alone, and the
    server's HCAN explain latency and Explore rerun (~1,000 tokens) idle and while a run trains."""
    from streamlit.testing.v1 import AppTest

    from bench.overlap import ROOT, overlap
    from hierattn.analysis.explain import explain

    ds = load_builtin("bbc-news")
    split = stratified_split(ds.labels)
    train_idx = random.Random(0).sample(split["train"], 60 if quick else 980)  # every topic, like a user's CSV
    texts, labels = [ds.texts[i] for i in train_idx], [ds.label_names[ds.labels[i]] for i in train_idx]
    test_texts = [ds.texts[i] for i in split["test"]]
    document = document_of(1000, test_texts)
    classifier = load_classifier(Path(checkpoints) / "bbc-news-hcan")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.session_state["model"] = "bbc-news-hcan"
    at.session_state["document"] = document
    result = overlap(texts, labels, lambda: explain(classifier, document), lambda: at.run(),
                     epochs=1 if quick else 2, repeats=3 if quick else 9)
    result["cores"] = cores()
    return result


def format_overlap(results: dict) -> list[str]:
    o = results.get("overlap")
    if not o:
        return []
    t, s = o["training"], o["serving"]
    return ["", f"Work that overlaps, {o['cores']} cores, every process under its thread budget "
                f"(`hierattn.threads`):", "",
            "| measurement | alone / idle | overlapping | ratio |", "|---|---:|---:|---:|",
            f"| `train --model han`, {o['documents']} bbc-news documents, {o['epochs']} epoch(s): two started "
            f"together (slower of the two) | {t['alone_seconds']:.1f} s | {max(t['together_seconds']):.1f} s | "
            f"{t['ratio']:.2f}x |",
            f"| explain, HCAN, ~1,000 tokens, median, while a run trains | {1000 * s['explain_idle_seconds']:.0f} ms "
            f"| {1000 * s['explain_training_seconds']:.0f} ms | {s['explain_ratio']:.2f}x |",
            f"| Explore page rerun (AppTest), median; worst while a run trains | {1000 * s['rerun_idle_seconds']:.0f} "
            f"ms | {1000 * s['rerun_training_seconds']:.0f} ms; worst {1000 * s['rerun_training_worst_seconds']:.0f} "
            f"ms | |"]


def format_corpus(results: dict) -> list[str]:
    c = results.get("corpus_preprocessing")
    if not c:
        return []
    peak = c["peak_memory_mb"]
    return ["", f"Streaming preprocessing (`python -m hierattn preprocess`), a generated corpus of {c['documents']:,} "
                f"documents ({c['tokens']:,} tokens, a {c['file_mb']:.0f} MB Zhang-style CSV), {c['processes']} "
                "processes:", "",
            "| measurement | value |", "|---|---:|",
            f"| documents/s, first run (tokenising) | {c['documents_per_s']:,.0f} ({c['seconds']:.0f} s) |",
            f"| peak memory, main process | {peak['main']:.0f} MB |",
            f"| peak memory, largest worker process | {peak['largest_worker']:.0f} MB |",
            f"| cache on disk | {c['cache_mb']:.0f} MB |",
            f"| second run (the cache is found and reused) | {c['reuse_seconds']:.2f} s |",
        ] + format_corpus_training(results)


def format_corpus_training(results: dict) -> list[str]:
    t = results.get("corpus_training")
    if not t:
        return []
    labels = [k for k in t[next(m for m in ("hcan", "han") if m in t)]]
    lines = ["", f"Training from the cache, one epoch of {t['documents']:,} generated documents (80% for training), "
                 "global batch 64, documents/s (`torchrun`: "
                 + ("NCCL, one process per GPU" if results.get("device") == "cuda"
                    else "Gloo, one process per CPU core") + "):",
             "", "| model | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    for model_type in ("han", "hcan"):
        if model_type in t:
            lines.append(f"| {model_type.upper()} | " + " | ".join(f"{t[model_type][k]:,.0f}" for k in labels) + " |")
    return lines


def format_table(results: dict) -> str:
    if "hardware" not in results:
        return "\n".join(format_corpus(results))
    lines = [f"hardware: {results['hardware']} (torch {results['torch']}, {results['threads']} threads)", "",
             "| measurement | HAN | HCAN |", "|---|---:|---:|"]
    r = results["training_docs_per_s"]
    lines.append(f"| training throughput, bbc-news (documents/s) | {r['han']:.1f} | {r['hcan']:.1f} |")
    if "han_training" in results:
        lines.append(f"| training throughput, today's implementation (documents/s) | "
                     f"{results['han_training']['today_docs_per_s']:.1f} | |")
    for tokens in LATENCY_TOKENS:
        h, c = (results["explain_seconds"][f"{m}/{tokens}"] for m in ("han", "hcan"))
        lines.append(f"| explain latency, ~{tokens:,} tokens ({h['tokens_read']:,} read), median | "
                     f"{_latency_cell(h)} | {_latency_cell(c)} |")
    if "han_training" in results:
        lines += ["", "HAN today: `nn.GRU` on packed sequences, attention scored at every padded position, "
                      "`bernoulli_` dropout (`layers.straightforward()`). HAN now: both directions of the BiGRU in one "
                      "batched step with a hand-written backward pass (`models/bigru.py`), attention scored at real "
                      "positions only, the cheap dropout mask. Largest difference between the two, dropout off "
                      f"(logits, maps and every gradient over the bench batches): "
                      f"{results['han_training']['largest_gap']:.1e}."]
    if "hcan_training" in results:
        runs, peaks = results["hcan_training"], results["matmul_gflops"]
        base = runs["reference fp32"]["docs_per_s"]
        lines += ["", f"Matrix-multiply peak (2048 x 2048): {peaks['fp32']:.0f} GFLOP/s fp32, {peaks['bf16']:.0f} "
                      "GFLOP/s bf16.",
                  "", "| HCAN training, bbc-news | documents/s | vs reference | GFLOP / document | MFU |",
                  "|---|---:|---:|---:|---:|"]
        for label, run in runs.items():
            lines.append(f"| {label} | {run['docs_per_s']:.1f} | {run['docs_per_s'] / base:.2f}x | "
                         f"{run['flops_per_doc'] / 1e9:.2f} | {run['mfu']:.1%} |")
        lines.append("\nreference fp32: random batches and HCAN's reference layers (every padded sentence row, "
                     "one convolution each for Q, K and V, weights kept, `bernoulli_` dropout). Fast: length "
                     "buckets, sentences grouped by length, one convolution for Q, K and V, cheap dropout.")
    if "batch_one" in results:
        lines += [""] + format_batch_one(results["batch_one"])
    lines += format_overlap(results) + [""]
    if "tokens_per_s" in results:
        lines.append(f"- tokenisation, long documents: {results['tokens_per_s']:,.0f} tokens/s")
    if "app_memory_mb" in results:
        lines.append(f"- app process with every shipped checkpoint loaded: {results['app_memory_mb']:.0f} MB resident")
    if results.get("long_document_render_seconds"):
        lines.append(f"- Explore in headless Chromium, a {results['long_document_words']:,}-word document pasted, "
                     "until the page is drawn: " + ", ".join(f"{c} {t:.1f} s" for c, t in
                                                              results["long_document_render_seconds"].items()))
    if "explore_rerun_seconds" in results:
        lines.append(f"- Explore page rerun, ~1,000-token document, bbc-news-hcan (AppTest), median: "
                     f"{1000 * results['explore_rerun_seconds']:.0f} ms")
    goals = _goals(results)
    if goals:
        lines += ["", "| goal | target | measured | met |", "|---|---|---:|---|"]
        lines += [f"| {name} | {target} | {measured} | {'yes' if met else '**no**'} |" for name, target, measured,
                  met in goals]
    if results.get("statistics_seconds"):
        lines += ["", "| dataset statistics, bbc-news test split | documents | matrices | time |",
                  "|---|---:|---:|---:|"]
        for model_type, r in results["statistics_seconds"].items():
            lines.append(f"| {model_type} `{r['checkpoint']}` | {r['documents']} | {r['matrices']:,} | "
                         f"{r['seconds']:.1f} s |")
    from bench.gpu import format_gpu, recorded_gpu

    return "\n".join(lines + format_corpus(results) + format_gpu(results.get("gpu") or recorded_gpu()))


def _latency_cell(r: dict) -> str:
    runs = r.get("runs", [])
    spread = f" (runs {', '.join(f'{1000 * t:.0f}' for t in runs)})" if len(runs) > 1 else ""
    return f"{1000 * r['seconds']:.0f} ms{spread}"


GOAL_PREFIX = {"class_wave": "a class of", "first_answer": "one document"}


def _against(value: float, last: float | None, unit: str) -> tuple[str, bool]:
    """The words on the last recorded figure, and whether ``value`` is a regression of more than 20%
    on ``last`` (None: nothing recorded before)."""
    if last is None:
        return "", False
    regressed = value > 1.2 * last
    return (f"; {value / last - 1:+.0%} against the last recorded {last:g}{unit}: a regression" if regressed
            else f"; last recorded {last:g}{unit}"), regressed


def _class_goals(results: dict) -> list[tuple[str, str, str, bool]]:
    out = []
    figures = results.get("class_wave")
    if not figures:
        return out
    before = {(r["workers"], r["documents"], r["model"]): r for r in (figures.get("before") or {}).get("waves", [])}
    for r in figures["waves"]:
        target = 1.5 if r["documents"] == "one sample" else 5.0
        last = before.get((r["workers"], r["documents"], r["model"]), {}).get("first_chart_p95_s")
        said, regressed = _against(r["first_chart_p95_s"], last, " s")
        out.append((f"a class of {r['sessions']} pasting at once, {r['documents']}, {r['workers']} worker"
                    f"{'s' if r['workers'] > 1 else ''}, {r['model']}: first chart p95", f"<= {target:g} s",
                    f"{r['first_chart_p95_s']} s ({r['failed']} failed){said}",
                    r["first_chart_p95_s"] <= target and not r["failed"] and not regressed))
    visit = figures.get("fresh_visit")
    if visit:
        last = ((figures.get("before") or {}).get("fresh_visit") or {}).get("slowest_s")
        said, regressed = _against(visit["slowest_s"], last, " s")
        out.append((f"a class of one: a fresh visit's first chart on a warm server, slowest of {visit['visits']}",
                    "<= 2 s", f"{visit['slowest_s']} s (median {visit['median_s']} s; the server's answer had "
                              f"arrived at {visit.get('answered_median_s', '?')} s"
                              + ("; the browser's main thread, ms: " + ", ".join(
                                  f"{name} {ms:,}" for name, ms in visit["browser_ms"].items())
                                 if visit.get("browser_ms") else "") + f"){said}",
                    visit["slowest_s"] <= 2 and not regressed))
    return out


def _first_answer_goals(results: dict) -> list[tuple[str, str, str, bool]]:
    out = []
    figures = results.get("first_answer")
    if not figures:
        return out
    before = {r["model"]: r for r in (figures.get("before") or {}).get("forward", [])}
    for r in figures["forward"]:
        best = min(v for k, v in r.items() if k.startswith("forward_ms_"))
        last = before.get(r["model"])
        said, regressed = _against(best, min((v for k, v in last.items() if k.startswith("forward_ms_")),
                                             default=None) if last else None, " ms")
        out.append((f"one document's forward pass, {r['model']}, {r['tokens']:,} tokens, batch of one (the public "
                    "implementation's, from the issue)", f"<= {r['peer_forward_ms']} ms", f"{best} ms{said}",
                    best <= r["peer_forward_ms"] and not regressed))
        explained = min(v for k, v in r.items() if k.startswith("explain_ms_"))
        out.append((f"one document's explanation, {r['model']}, {r['tokens']:,} tokens", "<= 20 ms",
                    f"{explained} ms", explained <= 20))
    c = figures["command_line"]
    last = ((figures.get("before") or {}).get("command_line") or {}).get("explain_cpu_s")
    said, regressed = _against(c["explain_cpu_s"], last, " s")
    out.append(("one document from the command line: hierattn explain of one sentence, CPU", "<= 1.5 s",
                f"{c['explain_cpu_s']} s (importing torch alone {c['import_torch_cpu_s']} s){said}",
                c["explain_cpu_s"] <= 1.5 and not regressed))
    return out


def _goals(results: dict) -> list[tuple[str, str, str, bool]]:
    """Each performance goal with its target, the measured figure and whether it is met."""
    out = []
    if "hcan_training" in results:
        runs = results["hcan_training"]
        base = runs["reference fp32"]["docs_per_s"]
        # the shipped training path; bf16 is reported, but it has not matched fp32's accuracy
        best = runs["fast fp32"]["docs_per_s"] if "fast fp32" in runs else max(r["docs_per_s"] for r in runs.values())
        out.append(("HCAN training (fast fp32) vs its straightforward fp32 reference", ">= 3x", f"{best / base:.2f}x",
                    best >= 3 * base))
        han = results["training_docs_per_s"]["han"]
        measured = f"{best / han:.2f}"
        if "fast fp32" in runs and "matmul_gflops" in results:  # what HAN's rate would ask of the machine
            needed = han * runs["fast fp32"]["flops_per_doc"] / 1e9
            peaks = results["matmul_gflops"]
            measured += (f" (at HAN's rate HCAN's FLOPs need {needed / peaks['fp32']:.1f}x the fp32 peak, "
                         f"{needed / peaks['bf16']:.0%} of the bf16 peak)")
        out.append(("HCAN (fast fp32) / HAN training documents per second", ">= 1", measured, best >= han))
    if "han_training" in results:
        h = results["han_training"]
        ratio = h["docs_per_s"] / h["today_docs_per_s"]
        out.append(("HAN training documents per second / today's implementation", ">= 1.3x", f"{ratio:.2f}x",
                    ratio >= 1.3))
        out.append(("HAN outputs and gradients against today's implementation, largest gap", "<= 1e-5",
                    f"{h['largest_gap']:.1e}", h["largest_gap"] <= 1e-5))
    if "hcan/1000" in results.get("explain_seconds", {}):
        seconds = results["explain_seconds"]
        one, ten = seconds["hcan/1000"]["seconds"], seconds["hcan/10000"]["seconds"]
        runs = seconds["hcan/1000"].get("runs", [one])
        spread = f" (runs {min(runs) * 1000:.0f}-{max(runs) * 1000:.0f} ms)" if len(runs) > 1 else ""
        out.append(("explain, ~1,000 tokens, HCAN, median", "<= 20 ms", f"{1000 * one:.0f} ms{spread}",
                    one <= 0.020))
        out.append(("explain, ~10,000 tokens, HCAN, median", "<= 1 s", f"{1000 * ten:.0f} ms", ten <= 1.0))
    if "battery_seconds" in results:
        b = results["battery_seconds"]
        out.append((f"faithfulness battery for one document, HCAN, {b['tokens']} tokens (adversarial search off), "
                    "median", "<= 5 s", f"{b['seconds']:.2f} s" + (
                        f" (with the adversarial search: {b['adversarial_seconds']:.1f} s)"
                        if b.get("adversarial_seconds") is not None else ""), b["seconds"] <= 5.0))
    if "trust_two_tabs" in results:
        t = results["trust_two_tabs"]
        out.append((f"trust panel for one {t['tokens']}-token article, HCAN, {t['cores']} cores", "<= 10 s",
                    f"{t['alone_seconds']:.1f} s", t["alone_seconds"] <= 10))
        out.append(("two trust panels at once (two tabs, two articles), against one alone", "<= 2.5x",
                    f"{t['ratio']:.2f}x ({t['both_seconds']:.1f} s)", t["ratio"] <= 2.5))
    if results.get("stats_memory"):
        m = results["stats_memory"]
        out.append((f"stats --documents {m['documents']} on {m['model']} with {m['dataset']}, peak over the loaded "
                    "model", "<= +1 GB", f"+{m['growth_mb']:,.0f} MB", m["growth_mb"] <= m["goal_growth_mb"]))
    if results.get("trust_tab"):
        t = results["trust_tab"]
        out.append((f"trust panel in one browser tab, idle server, {t['model']}, {min(t['words'])}-{max(t['words'])} "
                    "words, median", "<= 10 s", f"{t['median_seconds']:.1f} s", t["median_seconds"] <= 10))
    if results.get("paste_cpu"):
        before = {r["model"]: r for r in results["paste_cpu"].get("before") or []}
        for r in results["paste_cpu"]["rows"]:
            last = before.get(r["model"])
            # a figure recorded before the idle correction is compared with this run's as read
            now = r["cpu_ms"] if last is None or "idle_ms_per_s" in last else r.get("cpu_ms_gross", r["cpu_ms"])
            read = "" if last is None or "idle_ms_per_s" in last else " as read"
            regressed = last is not None and now > 1.2 * last["cpu_ms"]
            said = (f"{r['cpu_ms']:.0f} ms" + (f" net of the idle server's {r['idle_ms_per_s']:.0f} ms/s, "
                                               f"{r['cpu_ms_gross']:.0f} as read" if "idle_ms_per_s" in r else "")
                    + f" ({r['kb']:.0f} KB, {r['messages']} messages; the model {r['model_ms']:.0f} ms)"
                    + (f"; {now / last['cpu_ms'] - 1:+.0%}{read} against the last recorded {last['cpu_ms']:.0f} ms: "
                       "a regression" if regressed else f"; last recorded {last['cpu_ms']:.0f} ms" if last else ""))
            out.append((f"server CPU per paste, ~{r['words']}-word article, warm server, {r['model']}", "<= 50 ms",
                        said, r["cpu_ms"] <= 50 and not regressed))
    out += _class_goals(results) + _first_answer_goals(results)
    if results.get("soak"):
        soak = results["soak"]
        idle = soak["seconds_to_idle"]
        out.append(("soak: server back to idle after visitors leave mid-computation (worst of "
                    f"{soak['rounds']} rounds)", "<= 2 s", "never (over 120 s)" if idle is None else f"{idle:.1f} s",
                    idle is not None and idle <= 2))
        out.append(("soak: server resident memory after it, growth from its start", "<= 500 MB",
                    f"{soak['rss_end_mb']:.0f} MB (+{soak['rss_growth_mb']:.0f} MB)", soak["rss_growth_mb"] <= 500))
        out.append(("soak: every session that stayed answered, checkpoints intact, over-limit checkpoint refused",
                    "all", "yes" if soak["answered"] and soak["checkpoints_intact"] and
                    soak["refused_the_huge_checkpoint"] else "no",
                    soak["answered"] and soak["checkpoints_intact"] and soak["refused_the_huge_checkpoint"]))
        attacks = ("pathological_answered", "refused_the_over_budget_model", "refused_the_wide_table",
                   "refused_the_replacement")
        out.append(("soak: hostile inputs (a 60,000-character run of '!' and emoji answered; an over-budget "
                    "model, a 300,000-column table and a replace attempt refused)", "all",
                    f"{'yes' if all(soak.get(a) for a in attacks) else 'no'} (the paste answered in "
                    f"{soak.get('pathological_seconds', float('nan')):.1f} s)", all(soak.get(a) for a in attacks)))
    if results.get("soak") and "paste_beside_visitors_s" in results["soak"]:
        soak = results["soak"]
        refused = soak["refused_the_hostile_tokenizers"]
        alone, ordinary, beside = (soak[k] for k in ("paste_alone_s", "paste_beside_visitors_s",
                                                     "paste_beside_hostile_s"))
        kept_pace = None not in (ordinary, beside) and beside <= ordinary + 1
        out.append(("soak: four hostile tokenizer.json folders opened at once (a backtracking regex, a chain of "
                    "Replaces, WordPiece's per-word knob at 10^9, an id past the embedding), and another visitor's "
                    "paste meanwhile, against the same paste beside four visitors opening a loaded model",
                    "each refused; the paste <= its time beside the four visitors + 1 s",
                    f"{sum(refused.values())} of {len(refused)} refused; the paste {beside} s beside them, "
                    f"{ordinary} s beside the visitors, {alone} s alone", all(refused.values()) and kept_pace))
    if results.get("soak") and results["soak"].get("class_server"):
        c = results["soak"]["class_server"]
        split, ids, kill = c["steering"]["new_visitors_per_worker"], c["identities"], c["killed_worker"]
        out.append(("soak, class server (`hierattn app --workers 2`): 10 new visitors while one client holds 40 idle "
                    "websockets on worker 0", "5/5 (±1)", f"{split[0]}/{split[1]}", abs(split[0] - split[1]) <= 2))
        out.append((f"soak, class server: 20 cookie-less identities paste 3 documents each into a store of "
                    f"{ids['documents_limit']}; the teacher's link pasted before them", "opens its text",
                    f"{'opens' if ids['teachers_link_opened'] else 'lost'} ({ids['documents_kept']} kept)",
                    ids["teachers_link_opened"] and ids["documents_kept"] <= ids["documents_limit"]))
        back_ok = None not in (kill["served_again_s"], kill["worker_back_s"]) and max(
            kill["served_again_s"], kill["worker_back_s"]) <= 30
        out.append(("soak, class server: worker 0 killed (SIGKILL): its visitor served again; the worker back; "
                    "health check 503 while one worker serves", "<= 30 s; <= 30 s; never",
                    f"{kill['served_again_s']} s; {kill['worker_back_s']} s; {kill['health_503']} of "
                    f"{kill['health_probes']} probes", back_ok and kill["health_503"] == 0))
    if "explore_rerun_seconds" in results:
        t = results["explore_rerun_seconds"]
        out.append(("Explore page rerun, ~1,000 tokens, median", "<= 300 ms", f"{1000 * t:.0f} ms", t <= 0.3))
    if "cold_start_seconds" in results:
        t = results["cold_start_seconds"]
        out.append(("cold start: `streamlit run` to the first chart in Chromium, median of 3", "<= 5 s",
                    "not measured (needs Playwright and Chromium)" if t is None else f"{t:.1f} s",
                    t is not None and t <= 5.0))
    if "app_memory_mb" in results:
        mb = results["app_memory_mb"]
        out.append(("app memory, every shipped checkpoint loaded", "<= 1 GB", f"{mb:.0f} MB", mb <= 1024))
    if "overlap" in results:
        t, s = results["overlap"]["training"], results["overlap"]["serving"]
        out.append(("two trainings at once: each one's time / one alone", "<= 2.5x", f"{t['ratio']:.2f}x",
                    t["ratio"] <= 2.5))
        out.append(("explain while a run trains / idle", "<= 3x", f"{s['explain_ratio']:.2f}x",
                    s["explain_ratio"] <= 3))
        worst = s["rerun_training_worst_seconds"]
        out.append(("Explore rerun while a run trains, worst", "<= 1 s", f"{1000 * worst:.0f} ms", worst <= 1.0))
    if results.get("long_document"):
        r = results["long_document"]
        out.append((f"a 512-token document on all-MiniLM-L6-v2 explained, {r['threads']} threads, median",
                    "<= 3 s", f"{r['explain_seconds']:.2f} s ({r['tokens']} tokens)", r["explain_seconds"] <= 3))
        out.append(("a 512-token document on all-MiniLM-L6-v2: memory its explanation adds at its peak", "<= 300 MB",
                    f"{r['peak_mb']:.0f} MB ({r['held_mb']:.0f} MB held after)", r["peak_mb"] <= 300))
        drawn = r.get("explore_drawn_seconds")
        out.append(("a 512-token document on all-MiniLM-L6-v2: its Explore page drawn in Chromium, median", "<= 5 s",
                    "not measured (needs Playwright and Chromium)" if drawn is None else f"{drawn:.1f} s",
                    drawn is not None and drawn <= 5))
    if "tokens_per_s" in results:
        rate = results["tokens_per_s"]
        out.append(("tokenisation, long documents", ">= 20,000 tokens/s", f"{rate:,.0f} tokens/s", rate >= 20000))
    return out
