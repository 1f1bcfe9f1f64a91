"""``bench``: training, explain, app and statistics speed on this machine, from the repository's
``bench/`` folder (outside the package)."""
from __future__ import annotations

import sys
from pathlib import Path


def add_bench(commands) -> None:
    b = commands.add_parser("bench", help="measure training, explain, app and statistics speed on this machine")
    b.add_argument("--json", required=True, help="where to write the figures")
    b.add_argument("--markdown", help="also write the table as Markdown here (e.g. BENCHMARKS.md)")
    b.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    b.add_argument("--only", choices=["corpus", "batch-one", "overlap", "gpu", "soak", "classroom", "load",
                                        "huggingface", "attribution", "long-document", "trust-tab", "stats-memory",
                                        "paste-cpu", "class-wave", "first-answer"],
                   help="run this section alone and merge it into the --json figures (batch-one: HCAN Table 2's "
                        "timing protocol, also recorded under results/timing/; overlap: two trainings at once, and the "
                        "pages while a run trains; gpu: training and explain on the GPU, recorded; soak: sessions "
                        "that leave mid-computation, then the server's memory and time back to idle; load: 30 sessions "
                        "pasting at once into 1 and 2 workers; paste-cpu: the server's CPU, messages and bytes per "
                        "paste and where the CPU went, per model family, recorded; class-wave: 30 sessions pasting "
                        "one sample and different articles at the same moment into 1 and 2 workers, and a fresh "
                        "visit's first chart, recorded; first-answer: one document's forward pass and explanation at "
                        "batch size one, and the command line's explain, recorded; "
                        "trust-tab: Explore's trust panel in one browser tab, "
                        "recorded; stats-memory: Dataset statistics' peak memory on MiniLM, recorded; attribution: "
                        "each attribution method's cost per document, recorded; long-document: a 512-token "
                        "document on all-MiniLM-L6-v2, explained and drawn in Explore)")
    b.set_defaults(func=bench)


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
