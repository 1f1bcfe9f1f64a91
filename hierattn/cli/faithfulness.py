"""``faithfulness``: the faithfulness battery over a split, as JSON (and docs/RESULTS.md's table);
``spread``: how far checkpoints' pooling attention is from an even spread over a whole split;
``erasure``: the erasure curves' areas over a split (RESULTS's table), each pair on the same documents."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from hierattn.cli.arguments import checkpoint_split_arguments, plugin_argument


def add_faithfulness(commands) -> None:
    f = commands.add_parser("faithfulness", help="ERASER, Jain & Wallace and Wiegreffe & Pinter's tests of the "
                                                 "attention over a split, with bootstrap intervals and their baselines")
    checkpoint_split_arguments(f)
    f.add_argument("--documents", type=int, default=100,
                   help="N documents spread evenly through the split (default 100; a split may be sorted by class)")
    f.add_argument("--permutations", type=int, default=20, help="shuffles per document in the permutation test")
    f.add_argument("--adversarial", type=int, nargs="?", const=-1, metavar="N",
                   help="also run the adversarial search (slow), on the first N documents (default: all)")
    f.add_argument("--json", required=True, help="write the table here")
    f.add_argument("--device")
    plugin_argument(f)
    f.set_defaults(func=run)


def add_spread(commands) -> None:
    s = commands.add_parser("spread", help="each checkpoint's pooling (target) attention: its mean "
                                           "Jensen-Shannon divergence from an even spread over a whole split, with a "
                                           "bootstrap interval")
    s.add_argument("--checkpoint", required=True, nargs="+", metavar="DIR")
    s.add_argument("--dataset", required=True, help="built-in data set: bbc-news or tweets")
    s.add_argument("--split", default="test", choices=["train", "validation", "test"])
    s.add_argument("--label", nargs="+", metavar="TEXT", help="a label for each checkpoint (default its folder name)")
    s.add_argument("--json", required=True, help="write the figures here (report reads results/spread/)")
    s.add_argument("--device")
    plugin_argument(s)
    s.set_defaults(func=spread)


def add_erasure(commands) -> None:
    e = commands.add_parser("erasure", help="the erasure curves over a split: each ranking's mean drop, and beside "
                                            "the structural null the same figures on its documents")
    e.add_argument("--checkpoint", required=True)
    e.add_argument("--documents", type=int, default=100, help="N documents spread evenly through the test split")
    e.add_argument("--json", required=True, help="write the figures here (report reads results/erasure/)")
    plugin_argument(e)
    e.set_defaults(func=erasure)


def run(args) -> int:
    from hierattn.analysis.battery_split import evenly_spaced, split_battery
    from hierattn.checkpoint.format import CheckpointError
    from hierattn.checkpoint.reading import load_classifier
    from hierattn.data.builtin import load_builtin
    from hierattn.data.split import stratified_split
    from hierattn.home import find_checkpoint

    try:
        classifier = load_classifier(find_checkpoint(args.checkpoint), device=args.device)
        dataset = args.dataset or classifier.dataset
        if dataset is None:
            print("error: the checkpoint names no data set: pass --dataset", file=sys.stderr)
            return 2
        ds = load_builtin(dataset)
    except (CheckpointError, KeyError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    indices = evenly_spaced(stratified_split(ds.labels)[args.split], args.documents)
    texts = [ds.texts[i] for i in indices]
    truth = [ds.label_names[ds.labels[i]] for i in indices]
    start = time.perf_counter()

    def progress(done, total):
        if done % 10 == 0 or done == total:
            print(f"{done}/{total} documents ({time.perf_counter() - start:.0f} s)", file=sys.stderr)

    searched = None if args.adversarial in (None, -1) else args.adversarial
    result = split_battery(classifier, texts, truth, adversarial=args.adversarial is not None,
                           adversarial_documents=searched, permutations=args.permutations,
                           progress=progress)
    out = {"checkpoint": Path(args.checkpoint).name, "model": classifier.display_name, "dataset": dataset,
           "split": args.split, "documents": result.documents, "permutations": args.permutations,
           "adversarial": None if args.adversarial is None else searched or len(texts),
           "seconds": round(time.perf_counter() - start, 1), "rows": result.rows, "accuracy": result.accuracy,
           "not_applicable": result.not_applicable}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1, default=_rounded) + "\n")
    print(f"wrote {args.json}: {result.documents} documents in {out['seconds']} s", file=sys.stderr)
    return 0


def spread(args) -> int:
    from hierattn.analysis.battery_split import pooling_spread
    from hierattn.checkpoint.format import CheckpointError
    from hierattn.checkpoint.reading import load_classifier
    from hierattn.data.builtin import load_builtin
    from hierattn.data.split import stratified_split
    from hierattn.home import find_checkpoint

    labels = args.label or [Path(p).name for p in args.checkpoint]
    if len(labels) != len(args.checkpoint):
        print("error: give one --label per checkpoint", file=sys.stderr)
        return 2
    try:
        classifiers = [load_classifier(find_checkpoint(p), device=args.device) for p in args.checkpoint]
        ds = load_builtin(args.dataset)
    except (CheckpointError, KeyError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    indices = stratified_split(ds.labels)[args.split]
    texts = [ds.texts[i] for i in indices]
    rows = []
    for label, classifier in zip(labels, classifiers):
        start = time.perf_counter()
        config = classifier.model.config
        rows.append({"checkpoint": label, "model": classifier.display_name,
                     "target_start": getattr(config, "target_start", None),
                     "test_accuracy": classifier.metrics.get("test_accuracy"),
                     "validation_accuracy": classifier.metrics.get("validation_accuracy"),
                     "levels": pooling_spread(classifier, texts),
                     "seconds": round(time.perf_counter() - start, 1)})
        print(f"{label}: {rows[-1]['levels']}", file=sys.stderr)
    out = {"dataset": args.dataset, "split": args.split, "documents": len(texts), "checkpoints": rows}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


def erasure(args) -> int:
    from hierattn.analysis.battery_split import evenly_spaced
    from hierattn.analysis.faithfulness import split_erasure
    from hierattn.checkpoint.format import CheckpointError
    from hierattn.checkpoint.reading import load_classifier
    from hierattn.data.builtin import load_builtin
    from hierattn.data.split import stratified_split
    from hierattn.home import find_checkpoint

    try:
        classifier = load_classifier(find_checkpoint(args.checkpoint), device="cpu")
        ds = load_builtin(classifier.dataset)
    except (CheckpointError, KeyError, ValueError, OSError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    texts = [ds.texts[i] for i in evenly_spaced(stratified_split(ds.labels)["test"], args.documents)]
    start = time.perf_counter()
    result = split_erasure(classifier, texts)
    out = {"checkpoint": Path(args.checkpoint).name, "model": classifier.display_name, "dataset": classifier.dataset,
           "documents": result.documents, "auc": result.auc, "agreement": result.agreement,
           "paired": result.paired, "paired_documents": result.paired_documents,
           "seconds": round(time.perf_counter() - start, 1)}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.json}: {result.documents} documents in {out['seconds']} s", file=sys.stderr)
    return 0


def _rounded(value):
    raise TypeError(f"{type(value).__name__} is not JSON")
