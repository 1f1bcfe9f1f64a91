"""The bench on a GPU: training throughput of HAN and HCAN in fp32 and with bf16
autocast (AMP), each against the GPU's measured matrix-multiply peak, and explain latency with the
shipped checkpoints. Recorded under results/timing/bench-cuda.json, since a machine without a GPU
cannot measure it again; BENCHMARKS.md shows the recorded figures beside this CPU's."""
from __future__ import annotations

from pathlib import Path

import torch

from bench.inference import LATENCY_TOKENS, classifier_for, document_of, explain_latency
from bench.training import matmul_peak, training_throughput
from hierattn.data.builtin import load_builtin
from hierattn.data.split import stratified_split
from hierattn.data.text import Vocab, tokenize_many
from hierattn.experiments.results import read_timing, write_timing
from hierattn.training.presets import PRESETS

RECORD = "bench-cuda"


def record_gpu(quick: bool = False, checkpoints: str | Path = "checkpoints") -> dict:
    if not torch.cuda.is_available():
        raise RuntimeError("no GPU is visible to PyTorch here: the GPU figures need one (the recorded ones stay)")
    device = torch.device("cuda")
    ds = load_builtin("bbc-news")
    split = stratified_split(ds.labels)
    train_idx = split["train"][: 64 if quick else 512]
    docs = tokenize_many([ds.texts[i] for i in train_idx], PRESETS["bbc-news-han"].text)
    labels = [ds.labels[i] for i in train_idx]
    vocab = Vocab.build(docs, min_freq=2)
    steps = 2 if quick else 32
    peaks = {"fp32": matmul_peak(torch.float32, device, 8192), "bf16": matmul_peak(torch.bfloat16, device, 8192)}
    training = {}
    for model_type in ("han", "hcan"):
        for precision in ("fp32", "bf16"):
            rate, flops = training_throughput(model_type, docs, labels, vocab, len(ds.label_names), steps, device,
                                              precision, warm_every_shape=True)
            training[f"{model_type} {precision}"] = {"docs_per_s": rate, "flops_per_doc": flops,
                                                     "mfu": rate * flops / (peaks[precision] * 1e9)}
    test_texts = [ds.texts[i] for i in split["test"]]
    latency = {}
    for model_type in ("han", "hcan"):
        classifier = classifier_for(model_type, Path(checkpoints), vocab, ds.label_names)
        for tokens in LATENCY_TOKENS:
            seconds, read = explain_latency(classifier, document_of(tokens, test_texts), 1 if quick else 9)
            latency[f"{model_type}/{tokens}"] = {"seconds": seconds, "tokens_read": read}
    result = {"hardware": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "batch_size": PRESETS["bbc-news-han"].train.batch_size, "matmul_gflops": peaks, "training": training,
              "explain_seconds": latency}
    if not quick:
        write_timing(RECORD, result)
    return result


def format_gpu(result: dict | None) -> list[str]:
    if not result:
        return ["", "GPU: not measured (no GPU was lent when this was last run; `python -m hierattn bench --only gpu`"
                    " on a machine with one records it)."]
    peaks = result["matmul_gflops"]
    lines = ["", f"GPU: {result['hardware']} (PyTorch {result['torch']}), recorded by `python -m hierattn bench "
                 f"--only gpu` in `results/timing/{RECORD}.json`. Matrix-multiply peak (8192 x 8192): "
                 f"{peaks['fp32'] / 1000:.0f} TFLOP/s fp32 (TF32 off), {peaks['bf16'] / 1000:.0f} TFLOP/s bf16.", "",
             f"| training, bbc-news, batch {result['batch_size']} | documents/s | GFLOP / document | MFU |",
             "|---|---:|---:|---:|"]
    names = {"han": "HAN", "hcan": "HCAN", "fp32": "fp32", "bf16": "bf16 autocast"}
    for label, run in result["training"].items():
        model_type, precision = label.split()
        lines.append(f"| {names[model_type]}, {names[precision]} | {run['docs_per_s']:,.0f} | "
                     f"{run['flops_per_doc'] / 1e9:.2f} | {run['mfu']:.2%} |")
    lines += ["", "| explain latency on the GPU, median | HAN | HCAN |", "|---|---:|---:|"]
    for tokens in LATENCY_TOKENS:
        h, c = (result["explain_seconds"][f"{m}/{tokens}"] for m in ("han", "hcan"))
        lines.append(f"| ~{tokens:,} tokens | {1000 * h['seconds']:.0f} ms | {1000 * c['seconds']:.0f} ms |")
    lines.append("\nEach figure after one untimed pass over the same batches (a GPU's one-off work per new batch "
                 "shape left out). A batch of 16 bbc-news documents is far too little work for this GPU: the MFU "
                 "says how much of it stands idle. The paper's batch-1 timing on the same GPU is in docs/RESULTS.md.")
    return lines


def recorded_gpu() -> dict | None:
    return read_timing(RECORD)
