"""Command line: ``python -m hierattn {train,explain,evaluate,bench}``."""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path


def _train(args) -> int:
    from .data import DataError, load_builtin, load_table, prepare
    from .training import DATASET_TEXT, PRESETS, TrainConfig, train

    if args.preset:
        if args.preset not in PRESETS:
            print(f"unknown preset '{args.preset}'; presets: {', '.join(PRESETS)}", file=sys.stderr)
            return 2
        preset = PRESETS[args.preset]
        model_type, model_config, dataset, text_config, config = (
            preset.model_type, dict(preset.model_config), preset.dataset, preset.text, replace(preset.train))
    else:
        from .text import TextConfig

        if not args.model or not (args.dataset or args.file):
            print("give --preset, or --model with --dataset or --file", file=sys.stderr)
            return 2
        model_type, model_config, dataset = args.model, {}, args.dataset
        text_config, config = DATASET_TEXT.get(dataset, TextConfig()), TrainConfig()
    if args.max_sentences or args.max_words:
        text_config = replace(text_config, **{k: v for k, v in (("max_sentences", args.max_sentences),
                                                                ("max_words", args.max_words)) if v})
    for key in ("epochs", "batch_size", "lr", "patience", "seed", "lr_schedule", "weight_decay", "min_freq",
                "word_dropout", "embeddings", "precision"):
        if getattr(args, key) is not None:
            setattr(config, key, getattr(args, key))
    for item in args.set or []:
        key, _, value = item.partition("=")
        if not key or not _:
            print(f"error: --set takes KEY=VALUE, got {item!r}", file=sys.stderr)
            return 2
        try:
            model_config[key] = json.loads(value)
        except json.JSONDecodeError:  # a bare word such as pooling=max is meant as a string
            model_config[key] = value
    from .checkpoint import CheckpointError, checkpoint_root, refuse_to_replace
    from .jobs import JobError, validate_run_name

    try:
        if args.name:  # the app's rules for a run name, under the app's checkpoints folder
            out = validate_run_name(args.name, checkpoint_root(), replace_existing=True)
        ds = load_table(args.file, args.text_column, args.label_column) if args.file else load_builtin(dataset)
        if not args.name:
            out = Path(args.out) if args.out else checkpoint_root() / (args.preset or f"{ds.name}-{model_type}")
        refuse_to_replace(out)  # before hours of training, not after
    except (DataError, JobError, CheckpointError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    data = prepare(ds, text_config, config.seed)
    try:
        metrics = train(model_type, model_config, data, text_config, config, out, progress=True,
                        device=args.device)
    except CheckpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not metrics:
        print("no epoch finished; nothing written", file=sys.stderr)
        return 1
    print(json.dumps({k: metrics[k] for k in ("validation_accuracy", "test_accuracy", "train_ms_per_document",
                                                "total_training_seconds", "hardware")}, indent=2))
    print(f"saved {out}")
    return 0


def _read_document(path: Path) -> str:
    """A text file for ``explain --file``: binary files (zero bytes) are refused, as uploads are;
    bytes that are not UTF-8 in an otherwise text file are replaced, and the user is told."""
    from .explain import ExplainError

    raw = path.read_bytes()
    if b"\x00" in raw[:4096] and not raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ExplainError(f"{path.name} is not a text file (it contains binary bytes)")
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16", "replace")
    text = raw.decode("utf-8-sig", "replace")
    if "\ufffd" in text and b"\xef\xbf\xbd" not in raw:
        print(f"note: {path.name} is not valid UTF-8; {text.count(chr(0xFFFD))} undecodable bytes were replaced",
              file=sys.stderr)
    return text


def _explain(args) -> int:
    from .checkpoint import CheckpointError, load_classifier
    from .explain import ExplainError, explain

    try:
        text = args.text if args.text is not None else _read_document(Path(args.file))
        classifier = load_classifier(args.checkpoint, device=args.device)
        result = explain(classifier, text)
    except (CheckpointError, ExplainError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    json.dump(result.to_dict(), sys.stdout, indent=None if args.compact else 1)
    print()
    return 0


def _evaluate(args) -> int:
    from .checkpoint import CheckpointError
    from .data import DataError, load_builtin, load_table
    from .evaluation import evaluate_checkpoints, expand, markdown

    try:
        ds = load_table(args.file, args.text_column, args.label_column) if args.file else load_builtin(args.dataset)
        paths = expand(args.checkpoints)
        if not paths:
            print("error: no checkpoints found in " + ", ".join(args.checkpoints), file=sys.stderr)
            return 2
        rows = evaluate_checkpoints(ds, paths, device=args.device)
    except (CheckpointError, DataError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    table = markdown(ds.name, rows)
    print(table)
    if args.out:
        Path(args.out).write_text(table)
    if args.json:
        Path(args.json).write_text(json.dumps([r.as_dict() for r in rows], indent=2))
    return 0


def _bench(args) -> int:
    from .bench import format_table, run_bench

    results = run_bench(args.json, quick=args.quick)
    if args.markdown:
        command = "python -m hierattn bench --json " + args.json + (" --quick" if args.quick else "") + \
                  " --markdown " + args.markdown
        Path(args.markdown).write_text(f"# Benchmarks\n\nProduced by `{command}`.\n\n{format_table(results)}\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hierattn", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a model and write a checkpoint")
    t.add_argument("--preset", help="one of the shipped presets, e.g. bbc-news-hcan")
    t.add_argument("--model", help="model type from the registry: han, hcan, sanet, halstm, mahnn, kimcnn, tfidf")
    t.add_argument("--dataset", help="built-in data set: bbc-news or tweets")
    t.add_argument("--file", help="your own .csv/.tsv/.jsonl file instead of a built-in data set")
    t.add_argument("--text-column", default="text")
    t.add_argument("--label-column", default="label")
    where = t.add_mutually_exclusive_group()
    where.add_argument("--name", help="run name: the checkpoint goes to checkpoints/NAME (the Train page's rules)")
    where.add_argument("--out", help="checkpoint directory (default checkpoints/<preset or data-model>)")
    t.add_argument("--set", action="append", metavar="KEY=JSON", help="model config override, e.g. parallel=false")
    t.add_argument("--max-sentences", type=int, help="sentences read per document (the rest is cut, and reported)")
    t.add_argument("--max-words", type=int, help="words read per sentence")
    t.add_argument("--epochs", type=int)
    t.add_argument("--batch-size", type=int)
    t.add_argument("--lr", type=float)
    t.add_argument("--patience", type=int)
    t.add_argument("--lr-schedule", choices=["constant", "cosine"])
    t.add_argument("--weight-decay", type=float)
    t.add_argument("--word-dropout", type=float, help="share of training words replaced by <unk> each step")
    t.add_argument("--min-freq", type=int, help="vocabulary: minimum count of a word in the training split")
    t.add_argument("--embeddings", choices=["random", "word2vec"],
                   help="word2vec: initialise the embeddings with Word2Vec trained on the training split")
    t.add_argument("--precision", choices=["fp32", "bf16"],
                   help="bf16: autocast the forward pass to bfloat16 (faster on CPUs and GPUs with bf16 units)")
    t.add_argument("--seed", type=int)
    t.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    t.set_defaults(func=_train)

    e = sub.add_parser("explain", help="print a document's prediction, attention and metrics as JSON")
    e.add_argument("--checkpoint", required=True)
    src = e.add_mutually_exclusive_group(required=True)
    src.add_argument("--text")
    src.add_argument("--file")
    e.add_argument("--device")
    e.add_argument("--compact", action="store_true", help="one line of JSON")
    e.set_defaults(func=_explain)

    v = sub.add_parser("evaluate", help="test accuracy and training cost of checkpoints, as in HCAN Table 2")
    data = v.add_mutually_exclusive_group(required=True)
    data.add_argument("--dataset", help="built-in data set: bbc-news or tweets")
    data.add_argument("--file", help="your own .csv/.tsv/.jsonl file")
    v.add_argument("--text-column", default="text")
    v.add_argument("--label-column", default="label")
    v.add_argument("--checkpoints", nargs="+", required=True, metavar="DIR",
                   help="checkpoint directories, or folders of them")
    v.add_argument("--out", help="also write the markdown table here")
    v.add_argument("--json", help="also write the rows as JSON here")
    v.add_argument("--device")
    v.set_defaults(func=_evaluate)

    b = sub.add_parser("bench", help="measure training, explain, app and statistics speed on this machine")
    b.add_argument("--json", required=True, help="where to write the figures")
    b.add_argument("--markdown", help="also write the table as Markdown here (e.g. BENCHMARKS.md)")
    b.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    b.set_defaults(func=_bench)

    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001  a bug: one line for the user, the traceback on request
        if os.environ.get("HIERATTN_DEBUG"):
            raise
        print(f"error: unexpected {type(exc).__name__}: {exc} (set HIERATTN_DEBUG=1 to see the traceback)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
