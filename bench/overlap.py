"""Work that overlaps: two trainings started together against one alone, and the
server's explain latency and page rerun while a run trains against the same on an idle machine.
Every process sizes its threads from the census (``hierattn.threads``); this bench keeps its own
census folder, so that runs outside it neither make room for it nor crowd it."""
from __future__ import annotations

import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

from hierattn.threads import census, serving

ROOT = Path(__file__).resolve().parent.parent


def write_training_csv(path: Path, texts: list[str], labels: list[str]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        writer.writerows(zip(texts, labels))
    return path


def _train(csv_path: Path, out: Path, epochs: int, environ: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "hierattn", "train", "--model", "han", "--file", str(csv_path),
                             "--epochs", str(epochs), "--patience", str(epochs), "--seed", "1", "--device", "cpu",
                             "--out", str(out)], cwd=ROOT, env=environ,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _finish(process: subprocess.Popen, started: float) -> float:
    _, stderr = process.communicate()
    if process.returncode:
        raise RuntimeError(f"a bench training run failed: {stderr.decode(errors='replace')[-500:]}")
    return time.perf_counter() - started


def training_overlap(csv_path: Path, epochs: int, work: Path, environ: dict) -> dict:
    """Wall-clock seconds of ``python -m hierattn train`` alone, then of two started together."""
    started = time.perf_counter()
    alone = _finish(_train(csv_path, work / "alone", epochs, environ), started)
    started = time.perf_counter()
    pair = [_train(csv_path, work / f"pair-{i}", epochs, environ) for i in range(2)]
    together = [_finish(p, started) for p in pair]
    return {"alone_seconds": alone, "together_seconds": together, "ratio": max(together) / alone}


def _latency(compute, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        with serving():  # as the server does around a page's computation
            start = time.perf_counter()
            compute()
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def serving_overlap(explain_once, rerun_once, csv_path: Path, work: Path, environ: dict, repeats: int) -> dict:
    """Median explain latency and page rerun, idle and while a training run trains."""
    explain_once()
    rerun_once()  # warm: models loaded, caches filled
    idle = {"explain": _latency(explain_once, repeats), "rerun": _latency(rerun_once, repeats)}
    run = _train(csv_path, work / "beside", 1000, environ)
    try:
        deadline = time.time() + 300
        while census().trainings == 0 and time.time() < deadline:  # the run is in its loop
            time.sleep(0.2)
        time.sleep(2.0)
        busy = {"explain": _latency(explain_once, repeats), "rerun": _latency(rerun_once, repeats)}
        reruns = [_latency(rerun_once, 1) for _ in range(repeats)]
    finally:
        run.kill()
        run.wait()
    return {"explain_idle_seconds": idle["explain"], "explain_training_seconds": busy["explain"],
            "explain_ratio": busy["explain"] / idle["explain"], "rerun_idle_seconds": idle["rerun"],
            "rerun_training_seconds": busy["rerun"], "rerun_training_worst_seconds": max(reruns)}


def overlap(texts: list[str], labels: list[str], explain_once, rerun_once, epochs: int, repeats: int) -> dict:
    """Both measurements, in a private census folder and a scratch folder removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="hierattn-overlap-") as scratch, \
            mock.patch.dict(os.environ, {"HIERATTN_RUNTIME": str(Path(scratch) / "census")}):  # restored on leaving
        work = Path(scratch)
        environ = {**os.environ, "PYTHONPATH": str(ROOT)}
        csv_path = write_training_csv(work / "train.csv", texts, labels)
        result = {"documents": len(texts), "epochs": epochs}
        result["training"] = training_overlap(csv_path, epochs, work, environ)
        result["serving"] = serving_overlap(explain_once, rerun_once, csv_path, work, environ, repeats)
    return result
