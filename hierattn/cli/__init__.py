"""Command line: ``hierattn {app,train,preprocess,explain,evaluate,stats,card,faithfulness,reproduce,report,
fetch,bench}`` (or ``python -m hierattn``).
Each command's module adds its parser (``add_<command>(commands)``, the parser's ``func`` the command)
and imports what the command needs when it runs (a command's start stays quick); ``main`` collects
the parsers, parses, and turns an interrupt, a closed pipe or a bug into an exit code."""
from __future__ import annotations

import argparse
import os
import sys

from hierattn.cli import app, benchmark, experiments, faithfulness, hub, reports, training
from hierattn.cli.arguments import load_plugins

# In the order ``hierattn --help`` lists the commands.
COMMANDS = (training.add_train, training.add_preprocess, reports.add_explain, reports.add_evaluate, reports.add_stats,
            reports.add_card, training.add_baselines, reports.add_tour, experiments.add_reproduce,
            experiments.add_verdict_null, experiments.add_report, faithfulness.add_faithfulness,
            faithfulness.add_spread, faithfulness.add_erasure, hub.add_fetch, app.add_app, benchmark.add_bench)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hierattn", description="Look inside hierarchical attention "
                                     "text classifiers: train, explain, evaluate, measure attention against its "
                                     "baseline, benchmark.")
    commands = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(commands)

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
