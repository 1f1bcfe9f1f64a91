"""Command line: ``python -m hierattn {train,preprocess,explain,evaluate,stats,bench}``."""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path


def _train(args) -> int:
    if args.corpus:
        return _train_corpus(args)
    from hierattn.data.builtin import load_builtin
    from hierattn.data.dataset import DataError
    from hierattn.data.split import prepare
    from hierattn.data.tables import load_table
    from hierattn.data.text import TextConfig
    from hierattn.training.in_memory import train
    from hierattn.training.presets import DATASET_TEXT, PRESETS

    if not args.preset and (not args.model or not (args.dataset or args.file)):
        print("give --preset, or --model with --dataset or --file", file=sys.stderr)
        return 2
    try:
        default_text = DATASET_TEXT.get(args.dataset, TextConfig())
        model_type, model_config, text_config, config = _model_and_text(args, default_text)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    dataset = PRESETS[args.preset].dataset if args.preset else args.dataset
    from hierattn.checkpoint import CheckpointError, checkpoint_root, refuse_to_replace
    from hierattn.training.jobs import JobError, validate_run_name

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
    from hierattn.analysis.explain import ExplainError

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
    from hierattn.analysis.explain import ExplainError, explain
    from hierattn.checkpoint import CheckpointError, load_classifier

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


def _text_config(args, default):
    """The preset's text reading (or ``default``), with --max-sentences / --max-words applied."""
    from hierattn.training.presets import PRESETS

    if args.preset and args.preset not in PRESETS:
        raise ValueError(f"unknown preset '{args.preset}'; presets: {', '.join(PRESETS)}")
    text_config = PRESETS[args.preset].text if args.preset else default
    caps = {k: v for k, v in (("max_sentences", args.max_sentences), ("max_words", args.max_words)) if v}
    return replace(text_config, **caps) if caps else text_config


def _model_and_text(args, default_text=None):
    """(model type, model config, TextConfig, TrainConfig) from --preset or --model and the flags;
    ``default_text``: the reading without a preset (``TextConfig()`` unless given)."""
    from hierattn.data.text import TextConfig
    from hierattn.training.loop import TrainConfig
    from hierattn.training.presets import PRESETS

    text_config = _text_config(args, default_text or TextConfig())
    if args.preset:
        preset = PRESETS[args.preset]
        model_type, model_config, config = preset.model_type, dict(preset.model_config), replace(preset.train)
    else:
        if not args.model:
            raise ValueError("give --model (or --preset for a preset's model and settings)")
        model_type, model_config, config = args.model, {}, TrainConfig()
    for key in ("epochs", "batch_size", "lr", "patience", "seed", "lr_schedule", "weight_decay", "min_freq",
                "word_dropout", "embeddings", "precision"):
        if getattr(args, key) is not None:
            setattr(config, key, getattr(args, key))
    for item in args.set or []:
        key, _, value = item.partition("=")
        if not key or not _:
            raise ValueError(f"--set takes KEY=VALUE, got {item!r}")
        try:
            model_config[key] = json.loads(value)
        except json.JSONDecodeError:  # a bare word such as pooling=max is meant as a string
            model_config[key] = value
    return model_type, model_config, text_config, config


def _cache_for(args, text_config, main: bool = True):
    """The corpus cache for --corpus with this text reading, built (by the main process) or reused."""
    from hierattn.data.corpora import open_corpus
    from hierattn.training.corpus_cache import CachedCorpus, build_cache

    corpus = open_corpus(args.corpus, args.format, args.text_column, args.label_column, args.fine_labels)
    if not main:
        return corpus, None
    shown = [0]

    def progress(done: int) -> None:
        if done - shown[0] >= 100_000:
            shown[0] = done
            print(f"preprocessing: {done:,} documents", file=sys.stderr, flush=True)

    report = build_cache(corpus, text_config, args.processes, progress=progress)
    print(("reusing the cache " if report.reused else
           f"preprocessed {report.documents:,} documents in {report.seconds:.0f} s "
           f"({report.documents_per_second:,.0f}/s, {report.processes} processes) into ") + str(report.path),
          file=sys.stderr)
    cache = CachedCorpus(report.path)
    cache.report = report
    return corpus, cache


def _train_corpus(args) -> int:
    from hierattn.checkpoint import CheckpointError, checkpoint_root, refuse_to_replace
    from hierattn.data.dataset import DataError
    from hierattn.training.corpus import init_world, train_corpus
    from hierattn.training.corpus_cache import CachedCorpus, build_cache
    from hierattn.training.jobs import JobError, validate_run_name

    try:
        model_type, model_config, text_config, config = _model_and_text(args)
        world = init_world(args.device)
        # one process per machine tokenises (LOCAL_RANK 0); the others wait for its cache
        corpus, cache = _cache_for(args, text_config, os.environ.get("LOCAL_RANK", "0") == "0")
        if args.name:
            out = validate_run_name(args.name, checkpoint_root(), replace_existing=True)
        else:
            out = Path(args.out) if args.out else checkpoint_root() / f"{corpus.name}-{model_type}"
        refuse_to_replace(out)
    except (DataError, JobError, CheckpointError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if world.size > 1:
        import torch.distributed as dist

        dist.barrier()  # each machine's first process has built the cache
        if cache is None:
            cache = CachedCorpus(build_cache(corpus, text_config, 1).path)  # reused: LOCAL_RANK 0 wrote it
    try:
        train_corpus(cache, model_type, model_config, config, out, args.validate_every, args.resume, world,
                     log=print if world.main else (lambda *a, **k: None), shard_log=args.log_shards)
    except KeyboardInterrupt:
        if world.main:
            print("interrupted; the resume state is saved: run the same command with --resume", file=sys.stderr)
        return 130
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _preprocess(args) -> int:
    from hierattn.data.dataset import DataError

    if not args.corpus:
        print("error: give --corpus PATH", file=sys.stderr)
        return 2
    try:
        from hierattn.data.text import TextConfig

        _, cache = _cache_for(args, _text_config(args, TextConfig()))
    except (DataError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from hierattn.training.corpus_cache import peak_memory_mb

    meta, report = cache.meta, cache.report
    print(json.dumps({"cache": str(cache.path), "documents": meta["documents"], "parts": meta["parts"],
                      "labels": meta["label_names"], "tokens": meta["tokens"], "token_table": meta["table_size"],
                      "reused": report.reused, "seconds": report.seconds, "processes": report.processes,
                      "documents_per_s": report.documents_per_second, "peak_memory_mb": peak_memory_mb()}))
    return 0


def _evaluate(args) -> int:
    from hierattn.analysis.evaluation import evaluate_checkpoints, expand, markdown
    from hierattn.checkpoint import CheckpointError
    from hierattn.data.builtin import load_builtin
    from hierattn.data.dataset import DataError
    from hierattn.data.tables import load_table

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


# The task of each built-in data set, for the topic-versus-sentiment comparison of ``stats --versus``.
TASKS = {"bbc-news": "topic", "tweets": "sentiment"}


def _split_statistics(checkpoint: str, dataset: str | None, split: str, documents: int | None, device):
    """(classifier, data set name, statistics rows) for the first ``documents`` of a split."""
    from hierattn.analysis.stats import split_statistics
    from hierattn.checkpoint import load_classifier
    from hierattn.data.builtin import load_builtin
    from hierattn.data.split import stratified_split

    classifier = load_classifier(checkpoint, device=device)
    name = dataset or classifier.dataset
    if name is None:
        raise ValueError(f"{classifier.name} records no data set: give --dataset")
    ds = load_builtin(name)
    indices = stratified_split(ds.labels)[split][:documents]
    texts, labels = [ds.texts[i] for i in indices], [ds.label_names[ds.labels[i]] for i in indices]
    return classifier, name, split_statistics(classifier, texts, labels)


def _stats(args) -> int:
    from hierattn.analysis.stats import summary, versus
    from hierattn.checkpoint import CheckpointError
    from hierattn.data.dataset import DataError

    level = None if args.level == "all" else args.level
    try:
        classifier, dataset, rows = _split_statistics(args.checkpoint, args.dataset, args.split, args.documents,
                                                      args.device)
        report = {"checkpoint": classifier.name, "dataset": dataset, "split": args.split,
                  **summary(rows, level)}
        if args.versus:
            other, dataset2, rows2 = _split_statistics(args.versus, args.dataset2, args.split, args.documents,
                                                       args.device)
            tasks = [TASKS.get(dataset), TASKS.get(dataset2)]
            if tasks[0] is not None and tasks[0] == tasks[1]:
                raise ValueError(f"{dataset} and {dataset2} are both {tasks[0]} data sets: the comparison needs one "
                                 "of each")
            if tasks == ["sentiment", "topic"] or tasks == [None, "topic"] or tasks == ["sentiment", None]:
                first, second = "sentiment", "topic"
            else:  # by position where the tasks are not known: --checkpoint is the topic model
                first, second = "topic", "sentiment"
            sides = {first: (dict(report), rows), second: ({"checkpoint": other.name, "dataset": dataset2,
                                                           **summary(rows2, level)}, rows2)}
            report["versus"] = {"topic": sides["topic"][0], "sentiment": sides["sentiment"][0],
                                **versus(sides["topic"][1], sides["sentiment"][1], level)}
    except (CheckpointError, DataError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(_stats_text(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=float) + "\n")
    return 0


def _stats_text(report: dict) -> str:
    """The stats report for a reader: each metric beside its even-spread value, and the verdicts."""
    from hierattn.analysis.stats import METRIC_NAMES

    def percent(x):
        return "n/a" if x is None else f"{100 * x:.2f}"

    lines = []
    sides = [report] if "versus" not in report else [report["versus"]["topic"], report["versus"]["sentiment"]]
    for side in sides:
        lines.append(f"{side['checkpoint']} on {side['dataset']} ({report['split']}, level {side['level']}): "
                     f"{side['matrices']:,} matrices of {side['documents']:,} documents")
        if not side["metrics"]:
            lines.append("  no self-attention matrix at this level: nothing to measure")
        for m, r in side["metrics"].items():
            lines.append(f"  {METRIC_NAMES[m]:<29} measured {percent(r['measured']):>6}%, even spread "
                         f"{percent(r['even_spread']):>6}%, excess {100 * r['excess']:+.2f} points "
                         f"[{100 * r['interval'][0]:+.2f}, {100 * r['interval'][1]:+.2f}]: {r['verdict']}")
    if "versus" in report:
        v = report["versus"]
        lines.append(f"sentiment ({v['sentiment']['checkpoint']}) against topic ({v['topic']['checkpoint']}), "
                     "SANet section 5.3: sentiment attention sparser and more diagonal")
        for m, r in v["metrics"].items():
            matched = r["length_matched"]
            adjusted = ("no shared length" if matched["difference"] is None else
                        f"{100 * matched['difference']:+.2f} [{100 * matched['interval'][0]:+.2f}, "
                        f"{100 * matched['interval'][1]:+.2f}]")
            lines.append(f"  {METRIC_NAMES[m]:<29} raw {100 * r['raw']['difference']:+.2f} points "
                         f"({r['raw']['verdict']}); length-matched excess {adjusted}: {r['verdict']} ({r['reason']})")
    return "\n".join(lines)


def _bench(args) -> int:
    from bench.run import format_table, run_bench

    results = run_bench(args.json, quick=args.quick, only=args.only)
    if args.markdown:
        command = "python -m hierattn bench --json " + args.json + (" --quick" if args.quick else "") + \
                  (f" --only {args.only}" if args.only else "") + \
                  " --markdown " + args.markdown
        Path(args.markdown).write_text(f"# Benchmarks\n\nProduced by `{command}`.\n\n{format_table(results)}\n")
    return 0


def _corpus_arguments(parser) -> None:
    parser.add_argument("--corpus", help="a data set's file or folder on disk (Zhang et al. CSVs, TREC, CSV/TSV/JSONL); "
                                         "tokenised once into a cache (HIERATTN_CACHE, default ~/.cache/hierattn)")
    parser.add_argument("--format", choices=["zhang", "trec", "csv", "tsv", "jsonl"],
                        help="with --corpus: the file format, when the name does not tell")
    parser.add_argument("--fine-labels", action="store_true", help="TREC: the 50 fine classes, not the 6 coarse ones")
    parser.add_argument("--processes", type=int, help="with --corpus: tokenising processes (default: every CPU)")


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
    _corpus_arguments(t)
    t.add_argument("--validate-every", type=int, metavar="DOCUMENTS",
                   help="with --corpus: validate every this many training documents instead of once per epoch")
    t.add_argument("--resume", action="store_true",
                   help="with --corpus: continue from the resume state an interrupted run left beside --out")
    t.add_argument("--log-shards", metavar="DIR", help="with --corpus: each process writes the documents it trained "
                                                       "on to DIR/rank-N.json (to audit the sharding)")
    t.set_defaults(func=_train)

    p = sub.add_parser("preprocess", help="tokenise a large corpus into the on-disk cache that train --corpus reads")
    _corpus_arguments(p)
    p.add_argument("--preset", help="read the text as this preset does (its sentence and word caps)")
    p.add_argument("--max-sentences", type=int)
    p.add_argument("--max-words", type=int)
    p.add_argument("--text-column", default="text")
    p.add_argument("--label-column", default="label")
    p.set_defaults(func=_preprocess)

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

    s = sub.add_parser("stats", help="Gini and diagonality of a split beside what an even spread gives, and "
                                     "SANet's topic-versus-sentiment verdict")
    s.add_argument("--checkpoint", required=True)
    s.add_argument("--dataset", help="built-in data set: bbc-news or tweets (default: the checkpoint's)")
    s.add_argument("--split", default="test", choices=["train", "validation", "test"])
    s.add_argument("--level", default="word", choices=["word", "sentence", "all"],
                   help="the matrices measured: words attending to words (default), sentences, or all")
    s.add_argument("--documents", type=int, help="the first N documents of the split (default: all)")
    s.add_argument("--versus", metavar="DIR2", help="a second checkpoint: adds the topic-versus-sentiment verdict "
                                                     "(the task of each side is its data set's: bbc-news topic, "
                                                     "tweets sentiment; else --checkpoint is the topic side)")
    s.add_argument("--dataset2", help="the second checkpoint's data set (default: its own)")
    s.add_argument("--json", help="write the report here as JSON (shares of attention, 0..1)")
    s.add_argument("--device")
    s.set_defaults(func=_stats)

    b = sub.add_parser("bench", help="measure training, explain, app and statistics speed on this machine")
    b.add_argument("--json", required=True, help="where to write the figures")
    b.add_argument("--markdown", help="also write the table as Markdown here (e.g. BENCHMARKS.md)")
    b.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    b.add_argument("--only", choices=["corpus"], help="run this section alone and merge it into the --json figures")
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
