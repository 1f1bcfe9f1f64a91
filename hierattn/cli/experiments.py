"""``reproduce`` (run rows of the experiments registry, resuming where a run stopped) and
``report`` (docs/RESULTS.md's results and ordering tables, from what was recorded)."""
from __future__ import annotations

import sys
from pathlib import Path

from hierattn.cli.arguments import plugin_argument


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def reproduce(args) -> int:
    from hierattn.experiments.results import RESULTS
    from hierattn.experiments.runner import RUNS
    from hierattn.experiments.runner import reproduce as run_registry
    from hierattn.experiments.spec import SpecError, load_experiments

    try:
        experiments = load_experiments()
    except SpecError as e:
        return _fail(str(e))
    if args.all == bool(args.names):
        return _fail("name rows (e.g. tweets/han, or tweets/ for a whole data set) or give --all")
    chosen = list(experiments.values()) if args.all else []
    for name in args.names:
        matches = [e for key, e in experiments.items() if key == name or (name.endswith("/") and key.startswith(name))]
        if not matches:
            import difflib

            close = difflib.get_close_matches(name, list(experiments), n=4, cutoff=0.5)
            datasets = sorted({e.dataset for e in experiments.values()})
            hint = f"did you mean {', '.join(close)}? " if close else ""
            return _fail(f"no experiment {name!r}; {hint}rows are DATASET/ROW as in experiments/*.toml, or "
                         f"{' or '.join(d + '/' for d in datasets)} for a whole data set")
        chosen += [m for m in matches if m not in chosen]
    if args.budget == "quick" and args.results is None:
        return _fail("--budget quick needs --results DIR: its numbers are not the registry's")
    results = Path(args.results) if args.results else RESULTS
    runs = Path(args.runs) if args.runs else RUNS
    run_registry(chosen, args.seeds, args.force, args.jobs, results, runs, args.budget)
    return 0


def report(args) -> int:
    from hierattn.experiments.report import readme_sections, render, write_readme
    from hierattn.experiments.results import RESULTS

    results = Path(args.results) if args.results else RESULTS
    if args.write:
        changed = write_readme(Path(args.write), results)
        print(f"{args.write}: {'updated' if changed else 'already up to date'}")
        return 0
    print(render(readme_sections(results)), end="")
    return 0


def verdict_null(args) -> int:
    import json

    from hierattn.experiments import null_rates

    rows = null_rates.false_verdict_rates(args.draws)
    if args.write:
        null_rates.record(rows, Path(args.write))
        print(f"wrote {args.write}")
    else:
        print(json.dumps(rows, indent=1))
    return 0


def add_reproduce(commands) -> None:
    r = commands.add_parser("reproduce", help="rerun rows of the experiments registry (experiments/*.toml) and "
                                              "record their results (results/)")
    r.add_argument("names", nargs="*", help="rows, e.g. tweets/han; 'tweets/' for every row of a data set")
    r.add_argument("--all", action="store_true", help="every row")
    r.add_argument("--seeds", type=int, help="at most this many of each row's seeds")
    r.add_argument("--force", action="store_true", help="rerun seeds already recorded")
    r.add_argument("--jobs", type=int, default=1, help="runs at a time, each a one-thread process (default 1)")
    r.add_argument("--budget", choices=["full", "quick"], default="full",
                   help="quick: one epoch on 300 training documents, to try the path end to end")
    r.add_argument("--results", help="where to record (default results/)")
    r.add_argument("--runs", help="where the runs' checkpoints go (default runs/experiments/)")
    plugin_argument(r)
    r.set_defaults(func=reproduce)


def add_verdict_null(commands) -> None:
    v = commands.add_parser("verdict-null", help="how often an ordering's verdict is wrong when the rows are "
                                                 "equal: simulated null draws, recorded with their Monte Carlo error")
    v.add_argument("--draws", type=int, default=2000, help="null draws per scenario (default 2000)")
    v.add_argument("--write", metavar="FILE", nargs="?", const="results/verdict-null.json",
                   help="record the rates here (default results/verdict-null.json); else print them")
    v.set_defaults(func=verdict_null)


def add_report(commands) -> None:
    p = commands.add_parser("report", help="the results and ordering tables of docs/RESULTS.md, from the recorded "
                                           "results")
    p.add_argument("--write", metavar="FILE", nargs="?", const="docs/RESULTS.md",
                   help="replace the generated sections of this file (default docs/RESULTS.md)")
    p.add_argument("--results", help="read the results from here (default results/)")
    p.set_defaults(func=report)
