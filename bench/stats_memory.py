"""The Dataset statistics computation's memory on a long-window transformer: ``hierattn stats
--documents 20`` on tweets-minilm with bbc-news articles (its 512-token window full), in a process of
its own, peak resident memory against the same process's after loading the model and explaining one
short text. Goal: at most +1 GB (batches of 32 held every layer's maps of 32 articles and
peaked at 12.7 GB)."""
from __future__ import annotations

import subprocess
import sys

from bench.served import REPO

MODEL, DATASET, DOCUMENTS = "tweets-minilm", "bbc-news", 20


def _peak_mb(arguments: list[str]) -> float:
    """Peak resident memory of ``python -m hierattn ARGUMENTS`` in a fresh child, MB (``ru_maxrss`` of
    this process's waited-for children: each is measured in a fresh grandchild)."""
    probe = ("import resource, subprocess, sys; subprocess.run([sys.executable, '-m', 'hierattn', *sys.argv[1:]], "
             "check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    found = subprocess.run([sys.executable, "-c", probe, *arguments], cwd=REPO, check=True, capture_output=True,
                           text=True)
    return int(found.stdout.strip().splitlines()[-1]) / 1024


def record_stats_memory(quick: bool = False) -> dict:
    documents = 4 if quick else DOCUMENTS
    loaded = _peak_mb(["explain", "--checkpoint", MODEL, "--text", "A short text.", "--device", "cpu"])
    stats = _peak_mb(["stats", "--checkpoint", MODEL, "--dataset", DATASET, "--documents", str(documents),
                      "--device", "cpu"])
    return {"model": MODEL, "dataset": DATASET, "documents": documents, "loaded_mb": loaded, "stats_mb": stats,
            "growth_mb": stats - loaded, "goal_growth_mb": 1024}


def format_stats_memory(found: dict) -> list[str]:
    return [f"stats --documents {found['documents']} on {found['model']} with {found['dataset']}: peak "
            f"{found['stats_mb']:,.0f} MB, +{found['growth_mb']:,.0f} MB over the loaded model "
            f"({found['loaded_mb']:,.0f} MB; goal +{found['goal_growth_mb']:,} MB)"]
