"""The results and ordering tables of docs/RESULTS.md, generated from ``results/`` and nothing else.

Each generated section of docs/RESULTS.md sits between ``<!-- report:KEY -->`` and
``<!-- report:end -->``; ``write_readme`` replaces what is between them, and a test checks that the
file holds exactly what ``readme_sections`` gives. (The README links to it and stays short:
what the app is, for a newcomer.)
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from hierattn.experiments.figures import FIGURES, curves, curves_table, figures, sweep, sweep_table
from hierattn.experiments.results import RESULTS, SeedResult, read_test_labels, read_timing, recorded
from hierattn.experiments.spec import EXPERIMENTS, Experiment, load_experiments, load_orderings
from hierattn.experiments.tables import duration, markdown, mean, mean_sd
from hierattn.experiments.verdict import seeds_and_documents
from hierattn.models import REGISTRY

README = EXPERIMENTS.parent / "docs" / "RESULTS.md"  # the file whose generated sections report writes
BEGIN = re.compile(r"<!-- report:(?!end -->)(?P<key>[\w:-]+) -->\n")
END = "<!-- report:end -->"
DIFFERENCE = "difference, 95% interval (seeds and documents)"










def _number(x: float) -> str:
    return f"{x:.0e}".replace("e-0", "e-") if x < 0.01 else f"{x:g}"


def _recipe(experiment: Experiment, defaults: Experiment | None) -> str:
    """The row's budget and what sets it apart (text caps that differ from the data set's first row)."""
    if REGISTRY[experiment.model].fitted:
        return "fitted once"
    r = experiment.recipe
    parts = [f"{r.epochs} epochs", f"lr {_number(r.lr)}"]
    if r.weight_decay:
        parts.append(f"weight decay {_number(r.weight_decay)}")
    if r.lr_schedule != "constant":
        parts.append(r.lr_schedule)
    if r.embeddings != "random":
        parts.append(r.embeddings)
    if defaults is not None and experiment.text != defaults.text:
        parts.append(f"{experiment.text.max_sentences} x {experiment.text.max_words} words")
    return ", ".join(parts)


def results_rows(dataset: str, experiments: dict[str, Experiment], root: Path = RESULTS) -> list[dict]:
    """One row per registered experiment of ``dataset``, best mean test accuracy first; display strings."""
    rows = [e for e in experiments.values() if e.dataset == dataset and e.group == "results"]
    scored = []
    for e in rows:
        found = recorded(root, e)
        test = [r.test_accuracy for r in found]
        scored.append((mean(test) if test else -1, e, found))
    scored.sort(key=lambda t: (-t[0], t[1].row))
    out = []
    for _, e, found in scored:
        out.append({
            "model": e.label, "row": f"`{e.row}`", "recipe": _recipe(e, rows[0]),
            "seeds": f"{len(found)} of {len(e.seeds)}",
            "test accuracy % (mean ± sd)": mean_sd([r.test_accuracy for r in found]),
            "validation accuracy %": mean_sd([r.validation_accuracy for r in found]),
            "training time per run": duration(mean(r.total_seconds for r in found)) if found else "—",
            "epochs run": "/".join(str(r.epochs_run) for r in found) or "—",
            "parameters": f"{found[0].num_parameters:,}" if found else "—",
        })
    return out


def _cost(dataset: str, experiments: dict[str, Experiment], root: Path) -> str:
    """Which machines ran the recorded seeds of ``dataset`` (every group), and their total time."""
    rows = [e for e in experiments.values() if e.dataset == dataset]
    by_row = {e.name: recorded(root, e) for e in rows}
    found = [r for runs in by_row.values() for r in runs]
    planned = sum(len(e.seeds) for e in rows)
    machines = ", ".join(sorted({r.hardware.split(",")[0] for r in found})) or "none yet"
    hours = sum(r.total_seconds for r in found) / 3600
    done = len(found) == planned
    counted = f"{planned} runs" if done else f"{len(found)} of {planned} runs"
    text = (f"Each run used one thread ({machines}), two runs at a time. The {counted} registered for {dataset} "
            f"(these rows and its figures' sweeps) {'' if done else 'recorded so far '}took "
            f"{hours:.1f} hours of one-thread time, about {hours / 2:.1f} hours with two jobs")
    if found and not done:
        text += (f"; the other {planned - len(found)}, at the pace recorded so far, about "
                 f"{_remaining_hours(rows, by_row):.1f} more")
    return text


def _remaining_hours(rows: list[Experiment], by_row: dict[str, list[SeedResult]]) -> float:
    """One-thread hours of the seeds not recorded yet: each at its row's recorded mean, else at the
    mean of the same model's recorded runs on the data set (a sweep's points), else the median run."""
    everything = [r for runs in by_row.values() for r in runs]
    by_model: dict[str, list[float]] = {}
    for e in rows:
        by_model.setdefault(e.model, []).extend(r.total_seconds for r in by_row[e.name])
    typical = float(np.median([r.total_seconds for r in everything]))
    seconds = 0.0
    for e in rows:
        own = [r.total_seconds for r in by_row[e.name]]
        pace = mean(own) if own else mean(by_model[e.model]) if by_model[e.model] else typical
        seconds += (len(e.seeds) - len(own)) * pace
    return seconds / 3600


def results_table(dataset: str, experiments: dict[str, Experiment], root: Path = RESULTS) -> str:
    rows = results_rows(dataset, experiments, root)
    if not rows:
        return f"No experiments are registered for {dataset}.\n"
    note = f"{_cost(dataset, experiments, root)}; `python -m hierattn reproduce {dataset}/ROW` reruns a row."
    return markdown(rows, left=4) + "\n" + note + "\n"


def _correct(found: list[SeedResult], labels: str) -> np.ndarray:
    return np.array([r.correct(labels) for r in found], dtype=bool)


def majority_rate(labels: str) -> float:
    """The accuracy of always answering the test split's largest class: the floor a model must
    clear before an ordering between it and another says anything about the models."""
    return max(labels.count(c) for c in set(labels)) / len(labels)


def beats_majority(correct: np.ndarray, labels: str) -> bool:
    """Whether a row's accuracy (each test document's share of right answers over the seeds) is
    above ``majority_rate`` with 95% confidence (one-sided normal interval over documents)."""
    per_document = correct.mean(0)
    low = per_document.mean() - 1.645 * per_document.std(ddof=1) / np.sqrt(len(per_document))
    return bool(low > majority_rate(labels))


def ordering_rows(dataset: str, experiments: dict[str, Experiment], root: Path = RESULTS) -> list[dict]:
    """Each paper ordering whose two rows are registered for ``dataset``, decided on what was
    recorded. A side that does not beat always answering the largest class is named in the
    verdict: the ordering then compares a model that has not learned the task at this budget."""
    labels = read_test_labels(root, dataset)
    out = []
    for ordering in load_orderings():
        better, worse = experiments.get(f"{dataset}/{ordering.better}"), experiments.get(f"{dataset}/{ordering.worse}")
        if better is None or worse is None:
            continue
        found_better, found_worse = recorded(root, better), recorded(root, worse)
        differences = better.differences(worse)
        recipes = "equal" if not differences and better.recipe.epochs == worse.recipe.epochs else "; ".join(
            differences or [f"epochs {better.recipe.epochs} vs {worse.recipe.epochs}"])
        row = {"paper's ordering": ordering.claim, "source": ordering.source, "better (paper) %": better.label,
               "worse (paper) %": worse.label, DIFFERENCE: "—", "verdict": "not recorded yet", "recipes": recipes}
        if found_better and found_worse and labels is not None:
            right_better, right_worse = _correct(found_better, labels), _correct(found_worse, labels)
            c = seeds_and_documents(right_better, right_worse)
            fewest = min(c.better_seeds, c.worse_seeds)
            seeds = "" if fewest >= 3 else f" ({c.better_seeds} vs {c.worse_seeds} seeds" + (
                ", seed noise not measured)" if fewest < 2 else ")")
            untrained = [e.label for e, right in ((better, right_better), (worse, right_worse))
                         if not beats_majority(right, labels)]
            if untrained:
                seeds += (f"; not a test of the paper: {' and '.join(untrained)} "
                          f"{'does' if len(untrained) == 1 else 'do'} not beat always answering the largest "
                          f"class ({100 * majority_rate(labels):.1f}%)")
            row.update({
                "better (paper) %": f"{better.label} {mean_sd([r.test_accuracy for r in found_better])} "
                                    f"(n={c.better_seeds})",
                "worse (paper) %": f"{worse.label} {mean_sd([r.test_accuracy for r in found_worse])} "
                                   f"(n={c.worse_seeds})",
                DIFFERENCE: f"{100 * c.difference:+.2f} [{100 * c.low:+.2f}, {100 * c.high:+.2f}]",
                "verdict": f"**{c.verdict}**{seeds}"})
        out.append(row)
    return out


def orderings_table(dataset: str, experiments: dict[str, Experiment], root: Path = RESULTS) -> str:
    return markdown(ordering_rows(dataset, experiments, root), left=2, right_until=5)


def batch_one_lines(result: dict) -> list[str]:
    """HCAN Table 2's timing protocol as measured by the bench (``bench.batch_one``), as Markdown."""
    torch_version = f" (PyTorch {result['torch']})" if result.get("torch") else ""
    lines = [f"HCAN Table 2's protocol on {result.get('hardware', result['device'])}{torch_version}: one document a "
             f"step, Adam, {result['steps']} timed steps each on the same bbc-news documents. HAN: "
             f"{result['han_ms_per_document']:.1f} ms per document.", "",
             "| model | ms per training document | time / HAN's (95% interval) |", "|---|---:|---:|"]
    for row in result["variants"]:
        lines.append(f"| {row['name']} | {row['ms_per_document']:.1f} | {row['ratio_to_han']:.2f} "
                     f"[{row['low']:.2f}, {row['high']:.2f}] |")
    kind = "CPU" if result["device"] == "cpu" else "GPU"
    lines += ["", f"\"{result['paper_claim']}\": **{result['verdict']}** on this {kind} (below 1 is faster)."]
    return lines


def batch_one_markdown(root: Path = RESULTS) -> str | None:
    """Every recorded batch-1 timing, the CPU's first, then a GPU's where one was measured."""
    timings = [t for t in (read_timing("batch-one", root), read_timing("batch-one-cuda", root)) if t]
    return "\n\n".join("\n".join(batch_one_lines(t)) for t in timings) if timings else None


def _image(name: str, alt: str) -> str:
    return f"![{alt}](figures/{name})\n"  # relative to docs/RESULTS.md


def _interval(value) -> str:
    mean, low, high = value
    return f"{mean:.3f} [{low:.3f}, {high:.3f}]"


def _signed(value) -> str:
    mean, low, high = value
    return f"**{mean:+.3f}** [{low:+.3f}, {high:+.3f}]"


def faithfulness_table(dataset: str, root: Path = RESULTS) -> str | None:
    """The faithfulness battery's split-level figures for the checkpoints recorded under
    ``results/faithfulness/`` (``python -m hierattn faithfulness --json ...``): one column per
    checkpoint, each figure's mean and bootstrap 95% interval over documents, beside its baseline,
    and their difference paired by document (for accuracy: trained minus uniform)."""
    recorded = [json.loads(f.read_text()) for f in sorted((root / "faithfulness").glob("*.json"))]
    recorded = [r for r in recorded if r["dataset"] == dataset]
    if not recorded:
        return None
    keys = []
    for r in recorded:
        keys += [(row["test"], row["level"]) for row in r["rows"] if (row["test"], row["level"]) not in keys]
    tests = list(dict.fromkeys(test for test, _ in keys))  # each test's rows together, words first
    keys.sort(key=lambda k: (tests.index(k[0]), ("word", "sentence", "both").index(k[1])))
    header = "| test | level | " + " | ".join(f"{r['model']} (`{r['checkpoint']}`)" for r in recorded) + " |"
    lines = [header, "|---|---|" + "---|" * len(recorded)]
    for test, level in keys:
        cells = []
        for r in recorded:
            row = next((x for x in r["rows"] if (x["test"], x["level"]) == (test, level)), None)
            if row is None:
                cells.append("n/a")
                continue
            cell = _interval(row["value"])
            if row.get("baseline"):
                cell += f"<br>{row['baseline is']}: {_interval(row['baseline'])}"
            if row.get("difference"):  # paired by document: the figure that says whether it beats the baseline
                cell += f"<br>difference: {_signed(row['difference'])}"
            if row.get("structural"):  # a hierarchical model's words: beside its sentence attention x even words
                same = row.get("value on structural documents")
                cell += ((f"<br>on the {row['structural documents']} documents of 2+ sentences: {_interval(same)}"
                          if same else "")
                         + f"<br>sentence × even words: {_interval(row['structural'])}"
                         f"<br>difference: {_signed(row['structural difference'])}")
            if row["documents"] != r["documents"]:  # one-sentence documents have no sentence-level figure
                cell += f"<br>({row['documents']} documents)"
            cells.append(cell)
        lines.append(f"| {test} | {level} | " + " | ".join(cells) + " |")
    for level in ("word", "sentence", "both"):
        cells = []
        for r in recorded:
            a = r["accuracy"].get(level)
            cells.append("n/a" if a is None else
                         f"{_interval(a['uniform'])}<br>trained: {_interval(a['trained'])}"
                         f"<br>difference: {_signed(a['difference'])}"
                         + (f"<br>({a['documents']} documents)" if a.get("documents", r["documents"]) != r["documents"]
                            else ""))
        if any(c != "n/a" for c in cells):
            lines.append(f"| accuracy with uniform attention | {level} | " + " | ".join(cells) + " |")
    notes = []
    for r in recorded:
        parts = [f"{r['documents']} documents spread evenly through the {r['split']} split",
                 f"{r['permutations']} permutations each"]
        if r.get("adversarial"):
            parts.append(f"the adversarial search on {r['adversarial']} of them")
        notes.append(f"`{r['checkpoint']}`: " + ", ".join(parts) + f" ({r['seconds']:.0f} s).")
    return "\n".join(lines) + "\n\n" + " ".join(notes) + "\n"


def spread_table(dataset: str, root: Path = RESULTS) -> str | None:
    """How far each recorded checkpoint's pooling attention is from an even spread over the whole
    split (``python -m hierattn spread ... --json results/spread/DATASET.json``): the mean over
    documents of each document's mean per-head, per-sentence Jensen-Shannon divergence, with its
    bootstrap 95% interval, beside the checkpoint's accuracy."""
    path = root / "spread" / f"{dataset}.json"
    if not path.exists():
        return None
    recorded = json.loads(path.read_text())
    lines = ["| checkpoint | model | target vector starts | word attention: JSD from even | "
             "sentence attention: JSD from even | validation | test |", "|---|---|---|---|---|---|---|"]
    for r in recorded["checkpoints"]:
        cells = [_interval(r["levels"][level]["jsd"]) if level in r["levels"] else "n/a"
                 for level in ("word", "sentence")]
        start = {"normal": "N(0, 1)", "scaled": "N(0, 1/d)"}.get(r["target_start"], "")
        accuracy = [f"{100 * r[k]:.2f}" if r.get(k) is not None else "" for k in ("validation_accuracy",
                                                                                "test_accuracy")]
        lines.append(f"| `{r['checkpoint']}` | {r['model']} | {start} | " + " | ".join(cells + accuracy) + " |")
    return "\n".join(lines) + (f"\n\nOver the {recorded['documents']:,} documents of the {recorded['split']} split "
                               "(a sentence-level figure reads the documents of two or more sentences).\n")


def readme_sections(root: Path = RESULTS) -> dict[str, str]:
    experiments = load_experiments()
    sections = {}
    for dataset in sorted({e.dataset for e in experiments.values()}, reverse=True):  # tweets first
        sections[f"results:{dataset}"] = results_table(dataset, experiments, root)
        sections[f"orderings:{dataset}"] = orderings_table(dataset, experiments, root)
        xs, series = sweep(dataset, "length", experiments, root)
        if series:
            sections[f"length:{dataset}"] = (
                sweep_table(xs, series, "q") + "\n"
                + _image(f"length-{dataset}-a.svg", f"{dataset}: HA-LSTM-4 and the baselines")
                + _image(f"length-{dataset}-b.svg", f"{dataset}: HA-LSTM-4, -8, -12"))
        sections[f"curves:{dataset}"] = (_image(f"curves-{dataset}.svg", f"{dataset}: HCAN Figure 3") + "\n"
                                         + curves_table(curves(dataset, experiments, root)))
        table = faithfulness_table(dataset, root)
        if table:
            sections[f"faithfulness:{dataset}"] = table
        table = spread_table(dataset, root)
        if table:
            sections[f"spread:{dataset}"] = table
    from hierattn.experiments import erasure_table, null_rates, start_length, start_sweep

    table = erasure_table.table(root)
    if table:
        sections["erasure"] = table

    for dataset in ("tweets", "bbc-news"):
        table = start_sweep.table(dataset, root)
        if table:
            sections[f"start:{dataset}"] = table
        table = start_length.length_table(dataset, root)
        if table:
            sections[f"start-epochs:{dataset}"] = table
    table = null_rates.table(root / "verdict-null.json")
    if table:
        sections["verdict-null"] = table
    timing = batch_one_markdown(root)
    missing = "Not measured yet: `python -m hierattn bench --only batch-one --json bench.json`.\n"
    sections["timing:batch-one"] = timing + "\n" if timing else missing
    for group, x_name in (("mahnn-channels", "L"), ("mahnn-filters", "k")):
        xs, series = sweep("tweets", group, experiments, root)
        if series:
            sections[f"{group}:tweets"] = (sweep_table(xs, series, x_name) + "\n"
                                           + _image(f"{group}-tweets.svg", f"tweets: MahNN Figure 4, {group}"))
    return sections


def render(sections: dict[str, str]) -> str:
    return "\n".join(f"<!-- report:{key} -->\n{text}{END}\n" for key, text in sections.items())


def replace_sections(text: str, sections: dict[str, str]) -> str:
    """``text`` with each marked section's body replaced; a marker without a section is left alone."""
    out, position = [], 0
    for match in BEGIN.finditer(text):
        end = text.index(END, match.end())
        out.append(text[position: match.end()])
        out.append(sections.get(match["key"], text[match.end(): end]))
        position = end
    out.append(text[position:])
    return "".join(out)


def readme_blocks(text: str) -> dict[str, str]:
    return {m["key"]: text[m.end(): text.index(END, m.end())] for m in BEGIN.finditer(text)}


def write_readme(path: Path = README, root: Path = RESULTS, figure_dir: Path = FIGURES) -> bool:
    """Rewrite docs/RESULTS.md's generated sections and the figures they show; True when anything changed."""
    text = path.read_text(encoding="utf-8")
    updated = replace_sections(text, readme_sections(root))
    changed = updated != text
    if changed:
        path.write_text(updated, encoding="utf-8")
    figure_dir.mkdir(parents=True, exist_ok=True)
    for name, svg in figures(root).items():
        target = figure_dir / name
        if not target.exists() or target.read_text(encoding="utf-8") != svg:
            target.write_text(svg, encoding="utf-8")
            changed = True
    return changed
