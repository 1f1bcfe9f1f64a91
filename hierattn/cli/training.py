"""``train`` (a built-in data set, your table or a preset, in memory; or a local corpus, streamed,
on one process or under torchrun), ``preprocess`` (tokenise a corpus into the cache ahead) and
``baselines`` (what checkpoints' accuracy must beat)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, replace
from pathlib import Path

from hierattn.cli.arguments import plugin_argument

_MODEL_TYPES = "{model types}"  # stands in a help for the registry's model types, filled in when shown


class _ModelTypesHelp(argparse.HelpFormatter):
    """A help with the registry's model types (plug-ins' among them) where it says ``_MODEL_TYPES``,
    read only when the help is shown: the registry imports torch and every model, seconds that
    every other command's start would pay."""

    def _get_help_string(self, action):
        text = super()._get_help_string(action)
        if text is None or _MODEL_TYPES not in text:
            return text
        from hierattn.models import REGISTRY

        return text.replace(_MODEL_TYPES, ", ".join(REGISTRY))


def _corpus_arguments(parser) -> None:
    parser.add_argument("--corpus", help="a data set's file or folder on disk (Zhang et al. CSVs, TREC, "
                                         "CSV/TSV/JSONL); "
                                         "tokenised once into a cache (HIERATTN_CACHE, default ~/.cache/hierattn)")
    parser.add_argument("--format", choices=["zhang", "trec", "csv", "tsv", "jsonl"],
                        help="with --corpus: the file format, when the name does not tell")
    parser.add_argument("--fine-labels", action="store_true", help="TREC: the 50 fine classes, not the 6 coarse ones")
    parser.add_argument("--processes", type=int, help="with --corpus: tokenising processes (default: every CPU)")


def add_train(commands) -> None:
    t = commands.add_parser("train", help="train a model and write a checkpoint", formatter_class=_ModelTypesHelp)
    t.add_argument("--preset", help="one of the shipped presets, e.g. bbc-news-hcan")
    t.add_argument("--model", help=f"model type from the registry: {_MODEL_TYPES}")
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
    t.add_argument("--lr-schedule", choices=["constant", "cosine", "warmup"],
                   help="warmup: a tenth of the steps up, then linearly down to 0 (the default from --start-from)")
    t.add_argument("--weight-decay", type=float)
    t.add_argument("--word-dropout", type=float, help="share of training words replaced by <unk> each step")
    t.add_argument("--min-freq", type=int, help="vocabulary: minimum count of a word in the training split")
    t.add_argument("--embeddings", choices=["random", "word2vec"],
                   help="word2vec: initialise the embeddings with Word2Vec trained on the training split")
    t.add_argument("--precision", choices=["fp32", "bf16"],
                   help="bf16: autocast the forward pass to bfloat16 (faster on CPUs and GPUs with bf16 units)")
    t.add_argument("--seed", type=int)
    t.add_argument("--start-from", metavar="FOLDER",
                   help="fine-tune: train further from this checkpoint folder (a Hugging Face classifier or base "
                        "encoder saved with save_pretrained, or one trained here), its tokenizer and weights kept; "
                        "or the name of an installed pretrained encoder (all-MiniLM-L6-v2)")
    t.add_argument("--max-documents", type=int, metavar="N",
                   help="train on at most N documents of the data set, a stratified sample drawn with the seed")
    t.add_argument("--train-documents", type=int, metavar="N",
                   help="train on at most N of the training split's documents, each class in proportion; "
                        "validation and test stay whole, so the accuracy compares with every model's")
    t.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    _corpus_arguments(t)
    t.add_argument("--validate-every", type=int, metavar="DOCUMENTS",
                   help="with --corpus: validate every this many training documents instead of once per epoch")
    t.add_argument("--resume", action="store_true",
                   help="with --corpus: continue from the resume state an interrupted run left beside --out")
    t.add_argument("--log-shards", metavar="DIR", help="with --corpus: each process writes the documents it trained "
                                                       "on to DIR/rank-N.json (to audit the sharding)")
    plugin_argument(t)
    t.set_defaults(func=train)


def train(args) -> int:
    if args.corpus:
        return train_corpus(args)
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
    from hierattn.checkpoint.format import CheckpointError
    from hierattn.checkpoint.writing import refuse_to_replace
    from hierattn.home import checkpoint_root
    from hierattn.training.run_names import JobError, validate_run_name

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
    if getattr(args, "max_documents", None):
        from hierattn.data.dataset import stratified_subset

        ds = stratified_subset(ds, args.max_documents, config.seed)
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
        from hierattn.models import REGISTRY, unknown_model

        if args.model not in REGISTRY:
            raise ValueError(unknown_model(args.model))
        model_type, model_config, config = args.model, {}, TrainConfig()
        if args.start_from:  # a pre-trained start's recipe unless the flags say otherwise
            from hierattn.data.split import TRAIN_SHARE
            from hierattn.training.loop import (
                PRETRAINED_BATCH,
                PRETRAINED_EPOCHS,
                PRETRAINED_LR,
                PRETRAINED_SCHEDULE,
                pretrained_epochs,
            )

            # a known number of documents: epochs enough for about a hundred steps
            epochs = pretrained_epochs(int(TRAIN_SHARE * args.train_documents)) if args.train_documents \
                else PRETRAINED_EPOCHS
            config = replace(config, lr=PRETRAINED_LR, epochs=epochs, lr_schedule=PRETRAINED_SCHEDULE,
                             batch_size=PRETRAINED_BATCH)
    for key in ("epochs", "batch_size", "lr", "patience", "seed", "lr_schedule", "weight_decay", "min_freq",
                "word_dropout", "embeddings", "precision", "start_from", "train_documents"):
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
    from hierattn.budget import model_problem
    from hierattn.models.footprint import config_problems

    problem = model_problem(model_type, {"vocab_size": 10, "num_classes": 2, **model_config}, text_config)
    if problem:  # a checkpoint that would be refused when it is opened is not trained
        raise ValueError(f"this model configuration is not valid: {problem}")
    problems = config_problems(TrainConfig, asdict(config))
    if problems:
        raise ValueError("these training settings are not valid: " + "; ".join(problems))
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


def train_corpus(args) -> int:
    from hierattn.checkpoint.format import CheckpointError
    from hierattn.checkpoint.writing import refuse_to_replace
    from hierattn.data.dataset import DataError
    from hierattn.home import checkpoint_root
    from hierattn.training.corpus import init_world, train_corpus
    from hierattn.training.corpus_cache import CachedCorpus, build_cache
    from hierattn.training.run_names import JobError, validate_run_name

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
    from hierattn.data.corpora import CORPORA_VARIABLE, corpus_roots

    roots = corpus_roots(out.parent)
    if not all(any(p.resolve().is_relative_to(r) for r in roots) for p in corpus.parts.values()):
        print(f"note: the app reads this corpus's test file (for samples and statistics) only where {CORPORA_VARIABLE} "
              "names a folder that holds it", file=sys.stderr)
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


def add_preprocess(commands) -> None:
    p = commands.add_parser("preprocess", help="tokenise a large corpus into the on-disk cache that train --corpus "
                                               "reads")
    _corpus_arguments(p)
    p.add_argument("--preset", help="read the text as this preset does (its sentence and word caps)")
    p.add_argument("--max-sentences", type=int)
    p.add_argument("--max-words", type=int)
    p.add_argument("--text-column", default="text")
    p.add_argument("--label-column", default="label")
    p.set_defaults(func=preprocess)


def preprocess(args) -> int:
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


def add_baselines(commands) -> None:
    c = commands.add_parser("baselines", help="record in checkpoints' metrics.json what their accuracy must beat: "
                                              "always the largest class, and TF-IDF + Naive Bayes, on the same "
                                              "splits")
    c.add_argument("checkpoints", nargs="+", metavar="DIR", help="checkpoint directories, or folders of them")
    plugin_argument(c)
    c.set_defaults(func=record_baselines)


def record_baselines(args) -> int:
    """Record, in each checkpoint's metrics.json, the accuracy of always answering the largest
    class and of TF-IDF + Naive Bayes on the same validation and test splits (a checkpoint
    trained before they were recorded at training time). Built-in data sets only: a checkpoint of
    your own data records them when it is trained."""
    import json
    import os

    from hierattn.analysis.evaluation import expand
    from hierattn.checkpoint.format import CheckpointError
    from hierattn.checkpoint.reading import load_classifier
    from hierattn.checkpoint.writing import write_card
    from hierattn.data.builtin import BUILTIN, load_builtin
    from hierattn.data.files import read_bytes
    from hierattn.data.split import prepare
    from hierattn.limits import JSON_MB
    from hierattn.training.baselines import baselines

    prepared, failed = {}, 0
    for path in expand(args.checkpoints):
        try:
            classifier = load_classifier(path, device="cpu")
        except CheckpointError as exc:
            print(f"error: {path}: {exc}", file=sys.stderr)
            failed += 1
            continue
        if classifier.dataset not in BUILTIN:
            print(f"skipped {path}: trained on {classifier.dataset!r}, not a built-in data set")
            continue
        key = (classifier.dataset, classifier.text_config)
        if key not in prepared:
            prepared[key] = prepare(load_builtin(classifier.dataset), classifier.text_config)
        data = prepared[key]
        parts = {k: data.part(k) for k in ("train", "validation", "test")}
        recorded = baselines(parts["train"], {k: parts[k] for k in ("validation", "test")}, data.dataset.label_names)
        metrics_path = path / "metrics.json"
        metrics = json.loads(read_bytes(metrics_path, JSON_MB)) if metrics_path.exists() else {}
        metrics["baselines"] = recorded
        tmp = metrics_path.with_suffix(".json.part")
        tmp.write_text(json.dumps(metrics, indent=2))
        os.replace(tmp, metrics_path)
        write_card(path)
        print(f"{path}: " + "; ".join(f"{name} {v['test_accuracy']:.2%} test" for name, v in recorded.items()))
    return 2 if failed else 0
