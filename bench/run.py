"""``python -m hierattn bench``: training throughput, explain latency and dataset-statistics time
on this machine."""
from __future__ import annotations

import csv
import itertools
import json
import os
import random
import statistics
import sys
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path

import torch

from hierattn.analysis.explain import explain
from hierattn.checkpoint import Classifier, best_device, list_checkpoints, load_classifier
from hierattn.data.batches import bucketed_batches, encode_documents
from hierattn.data.builtin import load_builtin
from hierattn.data.split import stratified_split
from hierattn.data.text import TextConfig, Vocab, tokenize_many
from hierattn.models import build_model, model_config_dict, sized_for_text, text_problem
from hierattn.training.loop import hardware
from hierattn.training.presets import PRESETS

LATENCY_TOKENS = (100, 1000, 10000)
# Explain latency is measured with the caps lifted, so a 5,000-token document is read whole.
UNCAPPED = TextConfig(max_sentences=2000, max_words=400)


def training_throughput(model_type: str, documents, labels, vocab, num_classes: int, batches: int, device,
                        precision: str = "fp32", reference: bool = False,
                        buckets: bool | None = None) -> tuple[float, float]:
    """(documents per second, model FLOPs per document) over the first ``batches`` training steps
    (forward, backward, Adam), after one warm-up step. With ``batches`` at least the number of
    batches, every path sees the same documents, whatever its batching.

    ``reference``: the straightforward implementation the issue measures against: batches of
    documents drawn at random (padded to their longest document and sentence, no length buckets),
    and HCAN's reference layers (``layers.straightforward``: every sentence row of the padded batch,
    one convolution per Q, K and V, explicit masked softmax, weights kept, ``bernoulli_`` dropout).
    ``buckets``: override the batching alone (default: random for the reference, buckets otherwise),
    so the bench can show what each change buys. ``precision="bf16"``: autocast as
    ``--precision bf16`` does.
    FLOPs are counted once, on the warm-up step, by ``torch.utils.flop_counter``."""
    from torch.utils.flop_counter import FlopCounterMode

    from hierattn.models.layers import straightforward
    from hierattn.training.loop import autocast

    preset = PRESETS[f"bbc-news-{model_type}"]
    torch.manual_seed(0)
    sized = sized_for_text(model_type, preset.model_config, preset.text.max_sentences, preset.text.max_words)
    model = build_model(model_type, {"vocab_size": len(vocab), "num_classes": num_classes, **sized}).to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    if not (not reference if buckets is None else buckets):
        order = random.Random(0).sample(range(len(documents)), len(documents))
        chunks = [order[i: i + preset.train.batch_size] for i in range(0, len(order), preset.train.batch_size)]
        all_batches = [encode_documents([documents[i] for i in c], vocab, [labels[i] for i in c]) for c in chunks]
    else:
        all_batches = bucketed_batches(documents, labels, vocab, preset.train.batch_size, shuffle=True)
    all_batches = all_batches[:batches]

    def step(batch, counter=None):
        with counter or nullcontext():  # entering a FlopCounterMode resets it: once, around both passes
            with autocast(device, precision), straightforward() if reference else nullcontext():
                loss = model(batch, return_attentions=False).loss
            optimizer.zero_grad()
            loss.backward()
        optimizer.step()

    step(all_batches[0].to(device))  # warms up allocators and kernels, untimed
    timed, docs = 0.0, 0
    for batch in all_batches:
        batch = batch.to(device)
        start = time.perf_counter()
        step(batch)
        if device.type == "cuda":
            torch.cuda.synchronize()
        timed += time.perf_counter() - start
        docs += len(batch)
    # FLOPs over the same batches in a second, untimed pass (the counter slows every operation down)
    flops = 0
    for batch in all_batches:
        counter = FlopCounterMode(display=False)
        step(batch.to(device), counter)
        flops += counter.get_total_flops()
    flops_per_doc = flops / docs
    return docs / timed, flops_per_doc


def matmul_peak(dtype: torch.dtype, device, size: int = 2048, repeats: int = 5) -> float:
    """GFLOP/s of a size x size matrix product: the machine's limit the training figures are read against."""
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    a @ b
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    if device.type == "cuda":
        torch.cuda.synchronize()
    return 2 * size ** 3 * repeats / (time.perf_counter() - start) / 1e9


def tokenisation_rate(texts: list[str]) -> float:
    """Tokens per second of ``tokenize_many`` over long documents, caps lifted."""
    tokenize_many(texts[:4], UNCAPPED)  # warm-up: builds the pipeline
    start = time.perf_counter()
    documents = tokenize_many(texts, UNCAPPED)
    return sum(d.num_tokens for d in documents) / (time.perf_counter() - start)


def app_memory_mb(checkpoints: str | Path) -> float:
    """Resident memory (MB) of a fresh process that imports what the app imports and loads every
    checkpoint in ``checkpoints`` and the tokeniser (Linux: VmRSS)."""
    import subprocess
    import sys

    code = ("import streamlit, plotly, pandas, torch\n"
            "from hierattn.checkpoint import list_checkpoints, load_classifier\n"
            "from hierattn.explain import explain\n"
            f"models = [load_classifier(p) for p in list_checkpoints({str(checkpoints)!r})]\n"
            "[explain(m, 'The market rallied. Shares rose.') for m in models]\n"
            "print(next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmRSS')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1]) / 1024


def _chromium() -> str | None:
    """Debian's Chromium when it and Playwright are installed (test tools, not requirements of the
    app); None otherwise, and the browser figures are left out."""
    import shutil

    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return None
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    return chromium if Path(chromium).exists() else None


@contextmanager
def _served_app(port: int, timeout: float):
    """``streamlit run app.py`` on ``port``, from the moment it answers its health check until the
    block ends."""
    import subprocess
    import sys
    import urllib.request

    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                               "--server.port", str(port)], cwd=Path(__file__).resolve().parent.parent,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            try:
                urllib.request.urlopen(f"http://localhost:{port}/_stcore/health", timeout=1)
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://localhost:{port}"
    finally:
        server.terminate()
        server.wait()


def cold_start_seconds(port: int = 8597, timeout: float = 120.0) -> float | None:
    """Seconds from launching ``streamlit run app.py`` to the first chart drawn in headless
    Chromium (the browser is started beforehand, as a user's is). None without Playwright and
    Chromium."""
    chromium = _chromium()
    if chromium is None:
        return None
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        start = time.perf_counter()
        with _served_app(port, timeout) as url:
            page.goto(url + "/")
            page.wait_for_selector(".js-plotly-plot", timeout=timeout * 1000)
            seconds = time.perf_counter() - start
        browser.close()
    return seconds


def long_document_render_seconds(text: str, checkpoints: tuple[str, ...], port: int = 8598,
                                 timeout: float = 180.0) -> dict[str, float] | None:
    """Seconds from pasting ``text`` (Ctrl+Enter) into Explore in headless Chromium to the page
    finished and drawn (no script running, the document view and a heatmap on screen), for each
    checkpoint. None without Playwright and Chromium."""
    chromium = _chromium()
    if chromium is None:
        return None
    from playwright.sync_api import sync_playwright

    busy = "!!document.querySelector('[data-testid=stStatusWidget], [data-testid=stSkeleton]')"
    out = {}
    with _served_app(port, timeout) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        for checkpoint in checkpoints:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/?model={checkpoint}")
            page.wait_for_selector(".js-plotly-plot", timeout=timeout * 1000)
            page.wait_for_function(f"() => !({busy})", timeout=timeout * 1000)
            box = page.get_by_role("textbox", name="Document", exact=True)
            box.fill(text)
            before = page.get_by_text("tokens read").first.inner_text()
            start = time.perf_counter()
            box.press("Control+Enter")
            # done: the prediction's caption names the new document, nothing runs, the charts are drawn
            page.wait_for_function(
                f"""before => {{ const c = [...document.querySelectorAll('[data-testid=stCaptionContainer]')]
                                 .find(e => e.innerText.includes('tokens read'));
                               return c && c.innerText !== before && !({busy})
                                      && document.querySelectorAll('.js-plotly-plot').length >= 2; }}""",
                arg=before, timeout=timeout * 1000)
            page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
            out[checkpoint] = time.perf_counter() - start
            page.close()
        browser.close()
    return out


def explore_rerun_seconds(text: str, checkpoint: str, repeats: int) -> float:
    """Median seconds of an Explore page rerun (AppTest, the shipped checkpoints) for ``text``."""
    from streamlit.testing.v1 import AppTest

    app = str(Path(__file__).resolve().parent.parent / "pages" / "explore.py")
    at = AppTest.from_file(app, default_timeout=120)
    at.session_state["model"] = checkpoint
    at.session_state["document"] = text
    at.run()  # the first run explains (cached after)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _document_of(tokens: int, texts: list[str]) -> str:
    out, count = [], 0
    for text in texts:
        for line in text.splitlines():
            n = len(line.split())
            if count + n > tokens * 1.02:
                continue
            out.append(line)
            count += n
            if count >= tokens * 0.98:
                return "\n".join(out)
    return "\n".join(out)


def explain_latency(classifier: Classifier, text: str, repeats: int) -> tuple[float, int]:
    """Median seconds of tokenise + forward + metrics, and the number of tokens read: the whole
    text (caps lifted) where the model can read it, else what its own caps let it read (a positional
    table sized from its caps ends there)."""
    lifted = text_problem(classifier.model_type, model_config_dict(classifier.model), UNCAPPED.max_sentences,
                          UNCAPPED.max_words) is None
    caps = UNCAPPED if lifted else classifier.text_config
    explain(classifier, text, caps)  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        ex = explain(classifier, text, caps)
        times.append(time.perf_counter() - start)
    return statistics.median(times), ex.document.num_tokens


def _classifier(model_type: str, root: Path, vocab: Vocab, labels: list[str]) -> Classifier:
    shipped = [p for p in list_checkpoints(root) if p.name == f"bbc-news-{model_type}"]
    if shipped:
        return load_classifier(shipped[0])
    sized = sized_for_text(model_type, {}, UNCAPPED.max_sentences, UNCAPPED.max_words)  # reads the lifted caps
    model = build_model(model_type, {"vocab_size": len(vocab), "num_classes": len(labels), **sized}).eval()
    return Classifier(f"untrained-{model_type}", model, model_type, vocab, labels, TextConfig(), {}, None,
                      torch.device("cpu"))


def generate_reviews(path: Path, documents: int, seed: int = 0) -> None:
    """A Zhang-style ``label,text`` CSV of synthetic reviews (Yelp-polarity-like): 2 to 5 sentences
    of 4 to 14 words drawn from a 30,000-word Zipf vocabulary, about 45 words a document."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(30_000)]
    cumulative = list(itertools.accumulate(1 / (i + 1) for i in range(len(words))))
    with open(path, "w", newline="") as f:
        writer = csv.writer(f, quoting=csv.QUOTE_ALL)
        for i in range(documents):
            pool = rng.choices(words, cum_weights=cumulative, k=60)
            sentences, used = [], 0
            for _ in range(rng.randint(2, 5)):
                n = rng.randint(4, 14)
                sentences.append(" ".join(pool[used % 60: used % 60 + n]).capitalize() + rng.choice(".!?"))
                used += n
            writer.writerow([str(1 + i % 2), " ".join(sentences)])


def corpus_preprocessing(documents: int, processes: int | None = None) -> dict:
    """``python -m hierattn preprocess`` on a generated corpus in a temporary folder, twice: the
    first run tokenises (documents/s, peak memory of the main process and of the largest worker),
    the second finds the cache. Nothing is kept."""
    import subprocess
    import tempfile

    processes = processes or os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="hierattn-corpus-") as folder:
        source = Path(folder) / "reviews.csv"
        start = time.perf_counter()
        generate_reviews(source, documents)
        generated = time.perf_counter() - start
        env = {**os.environ, "HIERATTN_CACHE": str(Path(folder) / "cache")}
        runs = []
        for _ in range(2):
            done = subprocess.run([sys.executable, "-m", "hierattn", "preprocess", "--corpus", str(source),
                                   "--processes", str(processes)], env=env, capture_output=True, text=True,
                                  cwd=Path(__file__).resolve().parent.parent)
            if done.returncode:
                raise RuntimeError(done.stderr[-2000:])
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        cache_mb = sum(p.stat().st_size for p in (Path(folder) / "cache").rglob("*") if p.is_file()) / 2**20
        first, second = runs
        return {"documents": documents, "tokens": first["tokens"], "processes": processes,
                "file_mb": source.stat().st_size / 2**20, "cache_mb": cache_mb, "generate_seconds": generated,
                "seconds": first["seconds"], "documents_per_s": first["documents_per_s"],
                "peak_memory_mb": first["peak_memory_mb"], "reuse_seconds": second["seconds"],
                "reused": second["reused"]}


def corpus_training(documents: int, model_types=("han", "hcan")) -> dict:
    """Training documents/s from a corpus cache, one process against ``torchrun`` with one
    process per CPU core (Gloo) or per GPU (NCCL), one epoch of a generated corpus, global batch
    64. The labels of the generated corpus carry no signal: this measures speed only."""
    import re
    import subprocess
    import tempfile

    processes = torch.cuda.device_count() if torch.cuda.is_available() else (os.cpu_count() or 1)
    root = Path(__file__).resolve().parent.parent
    rates: dict = {"documents": documents, "processes": processes}
    with tempfile.TemporaryDirectory(prefix="hierattn-train-") as folder:
        source = Path(folder) / "reviews.csv"
        generate_reviews(source, documents, seed=1)
        env = {**os.environ, "HIERATTN_CACHE": str(Path(folder) / "cache")}
        for model_type in model_types:
            config = ["--set", "d=128", "--set", "heads=4"] if model_type == "hcan" else []
            args = ["-m", "hierattn", "train", "--corpus", str(source), "--model", model_type, *config,
                    "--batch-size", "64", "--epochs", "1"]
            for label, launcher in (("one process", []),
                                    (f"{processes} processes", ["-m", "torch.distributed.run", "--standalone",
                                                                f"--nproc_per_node={processes}"])):
                if launcher and processes < 2:
                    continue
                out = Path(folder) / f"{model_type}-{len(launcher)}"
                command = [sys.executable, *launcher, *args, "--out", str(out)]  # torchrun takes -m too
                done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=root)
                if done.returncode:
                    raise RuntimeError(done.stderr[-2000:])
                last = re.findall(r"([\d,]+) documents/s", done.stdout)[-1]
                rates.setdefault(model_type, {})[label] = float(last.replace(",", ""))
    return rates


def run_bench(out: str | Path, quick: bool = False, checkpoints: str | Path = "checkpoints",
              only: str | None = None) -> dict:
    if only == "corpus":  # this section alone, merged into the figures already in ``out``
        results = json.loads(Path(out).read_text()) if Path(out).is_file() else {}
        results["corpus_preprocessing"] = corpus_preprocessing(5_000 if quick else 1_000_000)
        results["corpus_training"] = corpus_training(640 if quick else 20_000)
        Path(out).write_text(json.dumps(results, indent=2))
        print(format_table(results))
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
    for model_type in ("han", "hcan"):
        rate, _ = training_throughput(model_type, docs, labels, vocab, len(ds.label_names), steps, device)
        results["training_docs_per_s"][model_type] = rate
    # HCAN training against its straightforward fp32 reference, in this process (issue 6)
    peaks = {"fp32": matmul_peak(torch.float32, device), "bf16": matmul_peak(torch.bfloat16, device)}
    runs = {}
    for label, precision, reference, buckets in (
            ("reference fp32", "fp32", True, False),  # random batches, reference layers
            ("reference layers, length buckets", "fp32", True, True),
            ("fast fp32", "fp32", False, True),  # the training default  # + sentence groups, fused conv, cheap dropout
            ("fast bf16", "bf16", False, True)):
        rate, flops = training_throughput("hcan", docs, labels, vocab, len(ds.label_names), steps, device,
                                          precision, reference, buckets)
        runs[label] = {"docs_per_s": rate, "flops_per_doc": flops, "mfu": rate * flops / (peaks[precision] * 1e9)}
    results["matmul_gflops"] = peaks
    results["hcan_training"] = runs
    results["tokens_per_s"] = tokenisation_rate([ds.texts[i] for i in split["test"]][: 16 if quick else None])
    test_texts = [ds.texts[i] for i in split["test"]]
    for model_type in ("han", "hcan"):
        classifier = _classifier(model_type, Path(checkpoints), vocab, ds.label_names)
        for tokens in LATENCY_TOKENS:
            seconds, read = explain_latency(classifier, _document_of(tokens, test_texts), 1 if quick else 5)
            results["explain_seconds"][f"{model_type}/{tokens}"] = {"seconds": seconds, "tokens_read": read,
                                                                   "checkpoint": classifier.name}
    # Dataset statistics page: every self-attention matrix of the bbc-news test split (issue 5: < 1 min).
    from hierattn.analysis.stats import split_statistics

    results["statistics_seconds"] = {}
    count = 16 if quick else len(test_texts)
    labels = [ds.label_names[ds.labels[i]] for i in split["test"]][:count]
    for model_type in ("hcan", "sanet"):
        classifier = _classifier(model_type, Path(checkpoints), vocab, ds.label_names)
        start = time.perf_counter()
        rows = split_statistics(classifier, test_texts[:count], labels)
        results["statistics_seconds"][model_type] = {"seconds": time.perf_counter() - start, "documents": count,
                                                     "matrices": len(rows), "checkpoint": classifier.name}
    if not quick:  # a fresh process and a headless page: seconds each, and they need the shipped checkpoints
        results["app_memory_mb"] = app_memory_mb(checkpoints)
        results["explore_rerun_seconds"] = explore_rerun_seconds(_document_of(1000, test_texts), "bbc-news-hcan", 5)
        long_text = _document_of(10000, test_texts)
        results["long_document_render_seconds"] = long_document_render_seconds(
            long_text, ("bbc-news-hcan", "bbc-news-sanet"))
        results["long_document_words"] = len(long_text.split())
        starts = [cold_start_seconds() for _ in range(3)]
        results["cold_start_seconds"] = None if None in starts else statistics.median(starts)
    results["corpus_preprocessing"] = corpus_preprocessing(5_000 if quick else 1_000_000)
    results["corpus_training"] = corpus_training(640 if quick else 20_000)
    Path(out).write_text(json.dumps(results, indent=2))
    print(format_table(results))
    return results


def format_corpus(results: dict) -> list[str]:
    c = results.get("corpus_preprocessing")
    if not c:
        return []
    peak = c["peak_memory_mb"]
    return ["", f"Streaming preprocessing (`python -m hierattn preprocess`), a generated corpus of {c['documents']:,} "
                f"documents ({c['tokens']:,} tokens, a {c['file_mb']:.0f} MB Zhang-style CSV), {c['processes']} processes:", "",
            "| measurement | value |", "|---|---:|",
            f"| documents/s, first run (tokenising) | {c['documents_per_s']:,.0f} ({c['seconds']:.0f} s) |",
            f"| peak memory, main process | {peak['main']:.0f} MB |",
            f"| peak memory, largest worker process | {peak['largest_worker']:.0f} MB |",
            f"| cache on disk | {c['cache_mb']:.0f} MB |",
            f"| second run (the cache is found and reused) | {c['reuse_seconds']:.2f} s |"] + format_corpus_training(results)


def format_corpus_training(results: dict) -> list[str]:
    t = results.get("corpus_training")
    if not t:
        return []
    labels = [k for k in t[next(m for m in ("hcan", "han") if m in t)]]
    lines = ["", f"Training from the cache, one epoch of {t['documents']:,} generated documents (80% for training), "
                 "global batch 64, documents/s (`torchrun`: "
                 f"{'NCCL, one process per GPU' if results.get('device') == 'cuda' else 'Gloo, one process per CPU core'}):",
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
    for tokens in LATENCY_TOKENS:
        h, c = (results["explain_seconds"][f"{m}/{tokens}"] for m in ("han", "hcan"))
        lines.append(f"| explain latency, ~{tokens:,} tokens ({h['tokens_read']:,} read), median | "
                     f"{1000 * h['seconds']:.0f} ms | {1000 * c['seconds']:.0f} ms |")
    if "hcan_training" in results:
        runs, peaks = results["hcan_training"], results["matmul_gflops"]
        base = runs["reference fp32"]["docs_per_s"]
        lines += ["", f"Matrix-multiply peak (2048 x 2048): {peaks['fp32']:.0f} GFLOP/s fp32, {peaks['bf16']:.0f} GFLOP/s bf16.",
                  "", "| HCAN training, bbc-news | documents/s | vs reference | GFLOP / document | MFU |",
                  "|---|---:|---:|---:|---:|"]
        for label, run in runs.items():
            lines.append(f"| {label} | {run['docs_per_s']:.1f} | {run['docs_per_s'] / base:.2f}x | "
                         f"{run['flops_per_doc'] / 1e9:.2f} | {run['mfu']:.1%} |")
        lines.append("\nreference fp32: random batches and HCAN's reference layers (every padded sentence row, "
                     "one convolution each for Q, K and V, weights kept, `bernoulli_` dropout). Fast: length "
                     "buckets, sentences grouped by length, one convolution for Q, K and V, cheap dropout.")
    lines += [""]
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
        lines += ["", "| goal (issue 6) | target | measured | met |", "|---|---|---:|---|"]
        lines += [f"| {name} | {target} | {measured} | {'yes' if met else '**no**'} |" for name, target, measured, met in goals]
    if results.get("statistics_seconds"):
        lines += ["", "| dataset statistics, bbc-news test split | documents | matrices | time |", "|---|---:|---:|---:|"]
        for model_type, r in results["statistics_seconds"].items():
            lines.append(f"| {model_type} `{r['checkpoint']}` | {r['documents']} | {r['matrices']:,} | {r['seconds']:.1f} s |")
    return "\n".join(lines + format_corpus(results))


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
        out.append(("HCAN (fast fp32) / HAN training documents per second", ">= 1", f"{best / han:.2f}", best >= han))
    if "hcan/1000" in results["explain_seconds"]:
        one, ten = results["explain_seconds"]["hcan/1000"]["seconds"], results["explain_seconds"]["hcan/10000"]["seconds"]
        out.append(("explain, ~1,000 tokens, HCAN, median", "<= 30 ms", f"{1000 * one:.0f} ms", one <= 0.030))
        out.append(("explain, ~10,000 tokens, HCAN, median", "<= 1 s", f"{1000 * ten:.0f} ms", ten <= 1.0))
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
    if "tokens_per_s" in results:
        rate = results["tokens_per_s"]
        out.append(("tokenisation, long documents", ">= 20,000 tokens/s", f"{rate:,.0f} tokens/s", rate >= 20000))
    return out
