"""``explain`` (one document), ``evaluate`` (the results table), ``stats`` (attention metrics
against their baseline, and SANet's topic-versus-sentiment verdict), ``card`` (checkpoint cards) and
``tour`` (how often each Tour claim holds)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from hierattn.cli.arguments import checkpoint_split_arguments, plugin_argument


def _read_document(path: Path) -> str:
    """A text file for ``explain --file``: binary files (zero bytes) are refused, as uploads are;
    bytes that are not UTF-8 in an otherwise text file are replaced, and the user is told."""
    from hierattn.analysis.explain import ExplainError
    from hierattn.data.files import read_bytes
    from hierattn.limits import UPLOAD_MB

    try:  # a regular file only, read up to the upload limit: never /dev/zero, a pipe or a 20 GB file
        raw = read_bytes(path, UPLOAD_MB)
    except ValueError as exc:
        raise ExplainError(str(exc)) from None
    if b"\x00" in raw[:4096] and not raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ExplainError(f"{path.name} is not a text file (it contains binary bytes)")
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16", "replace")
    text = raw.decode("utf-8-sig", "replace")
    if "\ufffd" in text and b"\xef\xbf\xbd" not in raw:
        print(f"note: {path.name} is not valid UTF-8; {text.count(chr(0xFFFD))} undecodable bytes were replaced",
              file=sys.stderr)
    return text


def add_card(commands) -> None:
    c = commands.add_parser("card", help="rewrite the README.md (model card) of checkpoints from their config.json "
                                         "and metrics.json")
    c.add_argument("checkpoints", nargs="+", metavar="DIR", help="checkpoint directories, or folders of them")
    plugin_argument(c)
    c.set_defaults(func=cards)


def cards(args) -> int:
    from hierattn.analysis.evaluation import expand
    from hierattn.checkpoint.format import CheckpointError
    from hierattn.checkpoint.writing import write_card

    paths = expand(args.checkpoints)
    if not paths:
        print("error: no checkpoints found in " + ", ".join(args.checkpoints), file=sys.stderr)
        return 2
    failed = 0
    for path in paths:
        try:
            print(f"wrote {write_card(path)}")
        except (CheckpointError, OSError) as exc:
            print(f"error: {path}: {exc}", file=sys.stderr)
            failed += 1
    return 2 if failed else 0


def add_explain(commands) -> None:
    e = commands.add_parser("explain", help="print a document's prediction, attention and metrics as JSON")
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
    e.set_defaults(func=explain)


def explain(args) -> int:
    from hierattn.analysis.explain import ExplainError, explain
    from hierattn.checkpoint.format import CheckpointError
    from hierattn.checkpoint.reading import load_classifier
    from hierattn.home import find_checkpoint

    try:
        text = args.text if args.text is not None else _read_document(Path(args.file))
        classifier = load_classifier(find_checkpoint(args.checkpoint), device=args.device)
        result = explain(classifier, text)
        maps = args.maps if args.maps in ("all", "summary") else [m.strip() for m in args.maps.split(",") if m.strip()]
        data = result.to_dict(maps)
    except (CheckpointError, ExplainError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    json.dump(data, sys.stdout, indent=None if args.compact else 1)
    print()
    return 0


def add_evaluate(commands) -> None:
    v = commands.add_parser("evaluate", help="test accuracy and training cost of checkpoints, as in HCAN Table 2")
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
    v.set_defaults(func=evaluate)


def evaluate(args) -> int:
    from hierattn.analysis.evaluation import evaluate_checkpoints, expand, markdown
    from hierattn.checkpoint.format import CheckpointError
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
    """(classifier, data set name, statistics rows) for ``documents`` spread through a split."""
    from hierattn.analysis.battery_split import evenly_spaced
    from hierattn.analysis.stats import split_statistics
    from hierattn.checkpoint.reading import load_classifier
    from hierattn.data.builtin import load_builtin
    from hierattn.data.split import stratified_split
    from hierattn.home import find_checkpoint

    classifier = load_classifier(find_checkpoint(checkpoint), device=device)
    name = dataset or classifier.dataset
    if name is None:
        raise ValueError(f"{classifier.name} records no data set: give --dataset")
    ds = load_builtin(name)
    indices = stratified_split(ds.labels)[split]  # sorted by class: a sample of it spreads through it
    indices = evenly_spaced(indices, documents) if documents else indices
    texts, labels = [ds.texts[i] for i in indices], [ds.label_names[ds.labels[i]] for i in indices]
    rows = split_statistics(classifier, texts, labels)
    rows.attrs["texts"] = texts  # the head overview reads them again, one explanation each
    return classifier, name, rows


def add_stats(commands) -> None:
    s = commands.add_parser("stats", help="Gini and diagonality of a split beside what an even spread gives, and "
                                          "SANet's topic-versus-sentiment verdict")
    checkpoint_split_arguments(s)
    s.add_argument("--level", default="word", choices=["word", "sentence", "all"],
                   help="the matrices measured: words attending to words (default), sentences, or all")
    s.add_argument("--documents", type=int, help="N documents spread evenly through the split, which is sorted by "
                   "class, so every class has its share (default: all)")
    s.add_argument("--versus", metavar="DIR2", help="a second checkpoint: adds the topic-versus-sentiment verdict "
                                                     "(the task of each side is its data set's: bbc-news topic, "
                                                     "tweets sentiment; else --checkpoint is the topic side)")
    s.add_argument("--dataset2", help="the second checkpoint's data set (default: its own)")
    s.add_argument("--heads-matter", action="store_true",
                   help="also each head's drop in P(predicted) when its attention alone is made even (Michel et al. "
                        "2019), with a 95%% interval over the documents: which heads the prediction needs")
    s.add_argument("--json", help="write the report here as JSON (shares of attention, 0..1)")
    s.add_argument("--device")
    plugin_argument(s)
    s.set_defaults(func=stats)


def stats(args) -> int:
    from hierattn.analysis.stats import summary, versus
    from hierattn.checkpoint.format import CheckpointError
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
        report["heads"], report["layers"] = _head_overview(classifier, rows.attrs["texts"])
        if args.heads_matter:
            report["heads_matter"] = _heads_matter(classifier, rows.attrs["texts"])
    except (CheckpointError, DataError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(_stats_text(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=float) + "\n")
    return 0


def _head_overview(classifier, texts: list[str]) -> tuple[list[dict], list[dict]]:
    """Every head over the documents (``analysis.heads.split_overview``) and every layer by Clark et
    al.'s figures (``analysis.clark``); ([], []) for a model without layers of heads over subword
    tokens (told by its first document)."""
    from hierattn.analysis import clark, heads
    from hierattn.analysis.explain import explained

    first = next((ex for _, ex in explained(classifier, texts[:1]) if ex is not None), None)
    if first is None or heads.layered_map(first) is None:
        return [], []
    return clark.over_split(classifier, texts)


def _heads_matter(classifier, texts: list[str]) -> list[dict]:
    """Each head's drop over the documents (``analysis.head_importance.split_drops``), as rows."""
    from hierattn.analysis.explain import explained
    from hierattn.analysis.head_importance import split_drops

    documents = [ex.document for _, ex in explained(classifier, texts) if ex is not None]  # as explain reads them
    return [{"site": d.head.site, "layer": d.head.layer, "head": d.head.head, "drop": d.mean, "low": d.low,
             "high": d.high, "documents": d.documents, "matters": d.matters}
            for d in split_drops(classifier, documents)]


def _heads_matter_text(rows: list[dict]) -> list[str]:
    from hierattn.analysis.head_importance import MATTERS

    needed = sum(r["matters"] for r in rows)
    lines = [f"which heads matter over {rows[0]['documents']:,} documents (Michel et al. 2019): the drop in "
             f"P(predicted) when one head's attention is made even, points [95%]; it matters when the interval is "
             f"above {100 * MATTERS:.0f} point: {needed} of {len(rows)} heads"]
    for r in sorted(rows, key=lambda r: -r["drop"]):
        lines.append(f"  {r['site']} layer {r['layer'] + 1} head {r['head'] + 1}: {100 * r['drop']:+.2f} "
                     f"[{100 * r['low']:+.2f}, {100 * r['high']:+.2f}]" + (" · matters" if r["matters"] else ""))
    return lines


def _layers_text(rows: list[dict]) -> list[str]:
    from hierattn.analysis.clark import TARGETS

    first = rows[0]["first_special"] or "first special"
    names = {"first special": f"to {first}", "other specials": "to other specials"}
    lines = [f"every layer over {rows[0]['documents']:,} documents (Clark et al. 2019), heads averaged: mean share "
             "[95%] (an even spread's)"]
    for r in rows:
        cells = [f"{names.get(t, t)} {100 * r[t][0]:.1f}% [{100 * r[t][1]:.1f}, {100 * r[t][2]:.1f}] "
                 f"({100 * r[f'{t}_even']:.1f}%)" for t in TARGETS]
        lines.append(f"  layer {r['layer'] + 1}: " + "; ".join(cells)
                     + f"; entropy {r['entropy'][0]:.2f} nats ({r['entropy_even']:.2f})")
    return lines


def _heads_text(rows: list[dict]) -> list[str]:
    from hierattn.analysis.heads import MARGIN, PATTERNS

    lines = [f"every head over {rows[0]['documents']:,} documents: mean share above an even spread [95%]; a "
             f"finding is at least {MARGIN:.2f} above, its interval above 0"]
    for r in rows:
        cells = [f"{p} {r[p][0]:+.2f} [{r[p][1]:+.2f}, {r[p][2]:+.2f}]" for p in PATTERNS if r[p] is not None]
        lines.append(f"  layer {r['layer'] + 1} head {r['head'] + 1}: {r['finding'] or 'no finding':<12} "
                     + "; ".join(cells))
    return lines


def _stats_text(report: dict) -> str:
    """The stats report for a reader: each metric beside its even-spread value, and the verdicts."""
    from hierattn.analysis.metrics import named

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
            lines.append(f"  {named(m).label:<29} measured {percent(r['measured']):>6}%, even spread "
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
            lines.append(f"  {named(m).label:<29} raw {100 * r['raw']['difference']:+.2f} points "
                         f"({r['raw']['verdict']}); length-matched excess {adjusted}: {r['verdict']} ({r['reason']})")
    if report.get("heads"):
        lines += _heads_text(report["heads"])
    if report.get("layers"):
        lines += _layers_text(report["layers"])
    if report.get("heads_matter"):
        lines += _heads_matter_text(report["heads_matter"])
    return "\n".join(lines)


def add_tour(commands) -> None:
    o = commands.add_parser("tour", help="how often each Tour claim holds over the test split, and the documents "
                                         "that show it best, typically and worst (the Tour page reads the recorded "
                                         "file)")
    o.add_argument("--steps", type=int, nargs="*", help="the steps to compute (default all)")
    o.add_argument("--documents", type=int, help="at most this many documents of each split, spread evenly (a quick "
                                                 "budget)")
    o.add_argument("--checkpoints", help="the folder of the shipped checkpoints (default checkpoints/)")
    o.add_argument("--write", metavar="JSON", help="record the figures here (the Tour reads results/tour.json)")
    o.add_argument("--device")
    o.set_defaults(func=tour_rates)


def tour_rates(args) -> int:
    """How often each Tour claim holds over the test split, recorded for the Tour page."""
    from pathlib import Path

    from hierattn.analysis.battery_split import evenly_spaced
    from hierattn.analysis.tour import record
    from hierattn.analysis.tour.steps import STEPS
    from hierattn.checkpoint.format import CheckpointError
    from hierattn.checkpoint.reading import load_classifier
    from hierattn.data.builtin import load_builtin
    from hierattn.data.split import stratified_split
    from hierattn.home import checkpoint_root

    root = Path(args.checkpoints) if args.checkpoints else checkpoint_root()
    splits = {}
    for name in ("bbc-news", "tweets"):
        ds = load_builtin(name)
        test = stratified_split(ds.labels)["test"]
        texts, truth = [ds.texts[i] for i in test], [ds.label_names[ds.labels[i]] for i in test]
        if args.documents:  # a quick budget: documents spread evenly through the class-sorted split
            texts, truth = evenly_spaced(texts, args.documents), evenly_spaced(truth, args.documents)
        splits[name] = (texts, truth)
    rates, stamps = {}, {}
    before, before_stamps = record.load(Path(args.write)) if args.write and args.steps else ({}, {})
    taken: dict[str, set[int]] = {}  # data set -> documents earlier steps offer: no document shows two steps
    for number in args.steps or sorted(STEPS):
        step = STEPS[number]
        try:
            models = [load_classifier(root / n, device=args.device or "cpu") for n in step.checkpoints]
        except CheckpointError as exc:
            print(f"error: step {number}: {exc}", file=sys.stderr)
            return 2
        for n in step.checkpoints:
            stamps[n] = record.checkpoint_digest(root / n)
        for earlier in [r for n, r in before.items() if n < number] + [r for n, r in rates.items() if n < number]:
            for dataset, indices in earlier.showcased().items():
                taken.setdefault(dataset, set()).update(indices)
        rates[number] = step.rate(models, {name: splits[name] for name in step.datasets}, taken=taken)
        print(f"step {number}: {step.sentence(rates[number])}", flush=True)
    if args.write:
        if args.steps:  # some steps: the others' records stay
            rates, stamps = {**before, **rates}, {**before_stamps, **stamps}
        record.save(dict(sorted(rates.items())), stamps, Path(args.write))
        print(f"wrote {args.write}")
    return 0
