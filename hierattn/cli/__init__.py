"""Command line: ``hierattn {app,train,preprocess,explain,evaluate,stats,card,faithfulness,reproduce,report,
fetch,bench}`` (or ``python -m hierattn``).
This module builds the parser; each command lives in ``training``, ``reports`` or ``experiments``, and
imports what it needs when it runs (a command's start stays quick)."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from hierattn.cli import experiments, faithfulness, hub, reports, training


def bench(args) -> int:
    try:
        from bench.run import format_table, run_bench
    except ModuleNotFoundError as error:
        if error.name != "bench":  # a missing dependency of the bench: its own message says which
            raise
        print("error: the bench lives in the repository's bench/ folder: run this from the repository root",
              file=sys.stderr)
        return 2

    results = run_bench(args.json, quick=args.quick, only=args.only)
    if args.markdown:
        command = "python -m hierattn bench --json " + args.json + (" --quick" if args.quick else "") + \
                  (f" --only {args.only}" if args.only else "") + \
                  " --markdown " + args.markdown
        Path(args.markdown).write_text(f"# Benchmarks\n\nProduced by `{command}`.\n\n{format_table(results)}\n")
    return 0


def app_settings(folder: Path) -> dict[str, str]:
    """The app's own Streamlit settings (``.streamlit/config.toml`` beside app.py: no usage
    statistics sent, a traceback never shown to a visitor, the upload limit) as the environment
    variables Streamlit reads (``server.maxUploadSize`` -> ``STREAMLIT_SERVER_MAX_UPLOAD_SIZE``).
    Streamlit reads that file only from the folder it is started in, which for an installed package
    is anywhere; a flag or a variable the user sets still wins."""
    import re
    import tomllib

    config = folder / ".streamlit" / "config.toml"
    if not config.is_file():
        return {}
    settings = {}
    for section, options in tomllib.loads(config.read_text()).items():
        for key, value in options.items():
            name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", f"{section}_{key}").upper()
            settings[f"STREAMLIT_{name}"] = str(value).lower() if isinstance(value, bool) else str(value)
    return settings


def serve_app(args) -> int:
    """``streamlit run`` on the app.py of hierattn/home.py (the checkout's, or the one a wheel
    installed), with the app's settings from wherever it is started."""
    import subprocess

    from hierattn.home import home

    app = home() / "app.py"
    if not app.is_file():
        print(f"error: no app.py in {home()} (set HIERATTN_HOME to the folder that holds app.py and pages/)",
              file=sys.stderr)
        return 2
    for name, value in app_settings(home()).items():
        os.environ.setdefault(name, value)
    if args.workers is not None:
        from hierattn.cli.serve import serve

        return serve(app, args.workers, args.streamlit_arguments, dict(os.environ))
    command = [sys.executable, "-m", "streamlit", "run", str(app), *args.streamlit_arguments]
    if os.name == "posix":  # become the server: a signal (Ctrl+C, a service manager's stop) reaches it, no orphan
        sys.stdout.flush()
        os.execv(sys.executable, command)
    return subprocess.call(command)


def _corpus_arguments(parser) -> None:
    parser.add_argument("--corpus", help="a data set's file or folder on disk (Zhang et al. CSVs, TREC, "
                                         "CSV/TSV/JSONL); "
                                         "tokenised once into a cache (HIERATTN_CACHE, default ~/.cache/hierattn)")
    parser.add_argument("--format", choices=["zhang", "trec", "csv", "tsv", "jsonl"],
                        help="with --corpus: the file format, when the name does not tell")
    parser.add_argument("--fine-labels", action="store_true", help="TREC: the 50 fine classes, not the 6 coarse ones")
    parser.add_argument("--processes", type=int, help="with --corpus: tokenising processes (default: every CPU)")


def plugin_argument(parser) -> None:
    parser.add_argument("--plugin", action="append", metavar="FILE.py",
                        help="a plug-in model file (defines SPEC, a hierattn.models.spec.ModelSpec); repeat for "
                             "several. Also read from HIERATTN_PLUGINS; installed plug-ins load by themselves")


def load_plugins(args) -> None:
    """Register the plug-ins of --plugin, HIERATTN_PLUGINS and installed packages; one warning line
    for each that cannot be loaded (the built-in models, and commands that do not need it, go on)."""
    if not (getattr(args, "plugin", None) or os.environ.get("HIERATTN_PLUGINS")):
        return  # installed entry points load with the registry, and report through the same list
    from hierattn.models import load_plugins as load
    from hierattn.models import plugin_problems

    load(args.plugin or ())
    for problem in plugin_problems():
        print(f"warning: {problem}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hierattn", description="Look inside hierarchical attention "
                                     "text classifiers: train, explain, evaluate, measure attention against its "
                                     "baseline, benchmark.")
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
    t.set_defaults(func=training.train)

    p = sub.add_parser("preprocess", help="tokenise a large corpus into the on-disk cache that train --corpus reads")
    _corpus_arguments(p)
    p.add_argument("--preset", help="read the text as this preset does (its sentence and word caps)")
    p.add_argument("--max-sentences", type=int)
    p.add_argument("--max-words", type=int)
    p.add_argument("--text-column", default="text")
    p.add_argument("--label-column", default="label")
    p.set_defaults(func=training.preprocess)

    e = sub.add_parser("explain", help="print a document's prediction, attention and metrics as JSON")
    e.add_argument("--checkpoint", required=True, help="a checkpoint folder, or a name under checkpoints/")
    src = e.add_mutually_exclusive_group(required=True)
    src.add_argument("--text")
    src.add_argument("--file")
    e.add_argument("--device")
    e.add_argument("--compact", action="store_true", help="one line of JSON")
    e.add_argument("--maps", default="summary",
                   help="the maps whose weights are written: 'summary' (default: the maps painted on the text; "
                        "every map's axes and shape), 'all', or names separated by commas (word.self,sentence.self)")
    plugin_argument(e)
    e.set_defaults(func=reports.explain)

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
    plugin_argument(v)
    v.set_defaults(func=reports.evaluate)

    s = sub.add_parser("stats", help="Gini and diagonality of a split beside what an even spread gives, and "
                                     "SANet's topic-versus-sentiment verdict")
    s.add_argument("--checkpoint", required=True)
    s.add_argument("--dataset", help="built-in data set: bbc-news or tweets (default: the checkpoint's)")
    s.add_argument("--split", default="test", choices=["train", "validation", "test"])
    s.add_argument("--level", default="word", choices=["word", "sentence", "all"],
                   help="the matrices measured: words attending to words (default), sentences, or all")
    s.add_argument("--documents", type=int, help="N documents spread evenly through the split, which is sorted by "
                   "class, so every class has its share (default: all)")
    s.add_argument("--versus", metavar="DIR2", help="a second checkpoint: adds the topic-versus-sentiment verdict "
                                                     "(the task of each side is its data set's: bbc-news topic, "
                                                     "tweets sentiment; else --checkpoint is the topic side)")
    s.add_argument("--dataset2", help="the second checkpoint's data set (default: its own)")
    s.add_argument("--json", help="write the report here as JSON (shares of attention, 0..1)")
    s.add_argument("--device")
    plugin_argument(s)
    s.set_defaults(func=reports.stats)

    for name, func, about in (
            ("card", reports.cards, "rewrite the README.md (model card) of checkpoints from their config.json and "
                                    "metrics.json"),
            ("baselines", training.record_baselines, "record in checkpoints' metrics.json what their accuracy must "
                                                     "beat: always the largest class, and TF-IDF + Naive Bayes, on "
                                                     "the same splits")):
        c = sub.add_parser(name, help=about)
        c.add_argument("checkpoints", nargs="+", metavar="DIR", help="checkpoint directories, or folders of them")
        plugin_argument(c)
        c.set_defaults(func=func)

    o = sub.add_parser("tour", help="how often each Tour claim holds over the test split, and the documents that "
                                    "show it best, typically and worst (the Tour page reads the recorded file)")
    o.add_argument("--steps", type=int, nargs="*", help="the steps to compute (default all)")
    o.add_argument("--documents", type=int, help="at most this many documents of each split, spread evenly (a quick "
                                                 "budget)")
    o.add_argument("--checkpoints", help="the folder of the shipped checkpoints (default checkpoints/)")
    o.add_argument("--write", metavar="JSON", help="record the figures here (the Tour reads results/tour.json)")
    o.add_argument("--device")
    o.set_defaults(func=reports.tour_rates)

    experiments.add_parsers(sub, plugin_argument)
    faithfulness.add_parser(sub, plugin_argument)

    f = sub.add_parser("fetch", help="download a Hugging Face Hub classifier into checkpoints/ (its safe files only)")
    f.add_argument("repo", help="the Hub id, e.g. distilbert/distilbert-base-uncased-finetuned-sst-2-english")
    f.add_argument("--name", help="the checkpoint's name under checkpoints/ (default: the id's last part)")
    f.add_argument("--out", help="the folder to write instead")
    f.add_argument("--revision", help="a branch, tag or commit of the repository")
    f.set_defaults(func=hub.fetch)
    a = sub.add_parser("app", help="serve the app (streamlit run on this installation's app.py); "
                                   "arguments after it go to streamlit, e.g. --server.port 8502")
    a.add_argument("--workers", type=int, metavar="N",
                   help="N server processes behind one proxy that keeps each visitor on one and answers the "
                        "health check at once (a class: one a core); without it, one process, as `streamlit run "
                        "app.py`")
    a.set_defaults(func=serve_app)
    b = sub.add_parser("bench", help="measure training, explain, app and statistics speed on this machine")
    b.add_argument("--json", required=True, help="where to write the figures")
    b.add_argument("--markdown", help="also write the table as Markdown here (e.g. BENCHMARKS.md)")
    b.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    b.add_argument("--only", choices=["corpus", "batch-one", "overlap", "gpu", "soak", "classroom", "load",
                                        "huggingface", "attribution", "long-document"],
                   help="run this section alone and merge it into the --json figures (batch-one: HCAN Table 2's "
                        "timing protocol, also recorded under results/timing/; overlap: two trainings at once, and the "
                        "pages while a run trains; gpu: training and explain on the GPU, recorded; soak: sessions "
                        "that leave mid-computation, then the server's memory and time back to idle; load: 30 sessions "
                        "pasting at once into 1 and 2 workers; attribution: "
                        "each attribution method's cost per document, recorded; long-document: a 512-token "
                        "document on all-MiniLM-L6-v2, explained and drawn in Explore)")
    b.set_defaults(func=bench)

    args, unknown = parser.parse_known_args(argv)
    if args.command == "app":  # the rest is streamlit's (its options start with --, which argparse would refuse)
        args.streamlit_arguments = unknown
    elif unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        load_plugins(args)
        return args.func(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (``| head``): nothing left to tell anyone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 141
    except Exception as exc:  # noqa: BLE001  a bug: one line for the user, the traceback on request
        if os.environ.get("HIERATTN_DEBUG"):
            raise
        print(f"error: unexpected {type(exc).__name__}: {exc} (set HIERATTN_DEBUG=1 to see the traceback)",
              file=sys.stderr)
        return 1
