"""Streaming preprocessing of a generated 1M-document corpus, and corpus training throughput on one
process against torchrun."""
from __future__ import annotations

import csv
import itertools
import json
import os
import random
import sys
import time
from pathlib import Path

import torch


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
