"""The start sweep's training-length axis (``experiments/<data set>.epochs.toml``): the shipped
checkpoints' starts trained longer than the sweep's 3 epochs, beside the sweep's own 3-epoch rows
at the same start. The sweep (``start_sweep``) shows how far the start moves a target attention's
sharpness; this shows how far training length does, so that neither is said without the other.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hierattn.experiments.results import RESULTS, recorded
from hierattn.experiments.spec import load_experiments
from hierattn.experiments.start_sweep import SUFFIX, by_model, mean_of, rows, spread_at, table_cell, welch_interval
from hierattn.models import query_start_variance

GROUP = "epochs"  # experiments/<data set>.epochs.toml


@dataclass
class LengthRow:
    """One (model, training length) at the shipped start: each figure's values over its seeds."""

    model: str
    label: str
    variance: float
    epochs: int
    seeds: int = 0
    accuracy: list[float] = field(default_factory=list)
    word_jsd: list[float] = field(default_factory=list)
    sentence_jsd: list[float] = field(default_factory=list)
    best_epochs: list[int] = field(default_factory=list)  # the epoch whose weights were kept


def length_rows(dataset: str, root: Path = RESULTS) -> list[LengthRow]:
    """The training-length axis of ``dataset``: for each model of the length group, the sweep's row
    at the same start (its 3-epoch point) and the longer runs, in the spec's order of models; rows
    with a recorded seed only."""
    experiments = load_experiments()
    longer = [e for e in experiments.values() if e.dataset == dataset and e.group == GROUP]
    out = []
    for model in dict.fromkeys(e.model for e in longer):
        mine = [e for e in longer if e.model == model]
        variance = query_start_variance(model, mine[0].config)
        shorter = [e for e in experiments.values() if e.dataset == dataset and e.group.endswith(SUFFIX)
                   and e.model == model and query_start_variance(model, e.config) == variance]
        for e in sorted(shorter + mine, key=lambda e: e.recipe.epochs):
            row = LengthRow(model, e.label, variance, e.recipe.epochs)
            for r in recorded(root, e):
                spread = (r.attention or {}).get("from_even", {})
                if not spread:
                    continue
                row.seeds += 1
                row.accuracy.append(r.test_accuracy)
                row.word_jsd.append(spread_at(spread, "word"))
                row.sentence_jsd.append(spread_at(spread, "sentence"))
                row.best_epochs.append(r.best_epoch)
            if row.seeds:
                out.append(row)
    return out


def length_factor(found: list[LengthRow], model: str) -> tuple[float, LengthRow, LengthRow] | None:
    """How many times further from even (or nearer) the word attention of ``model`` ends trained
    longest against shortest at the same start (the larger JSD over the smaller), and the two rows;
    None before both have a seed."""
    mine = sorted((r for r in found if r.model == model and r.seeds), key=lambda r: r.epochs)
    if len(mine) < 2:
        return None
    short, long = mean_of(mine[0].word_jsd), mean_of(mine[-1].word_jsd)
    if min(short, long) <= 0:
        return None
    return max(short, long) / min(short, long), mine[0], mine[-1]


def _way(short: LengthRow, long: LengthRow) -> str:
    return "flatter" if mean_of(long.word_jsd) < mean_of(short.word_jsd) else "sharper"


def _resolved(short: LengthRow, long: LengthRow) -> str:
    """The longer run's word JSD less the shorter's, with Welch's 95% interval over the seeds, and
    whether these seeds resolve it."""
    if len(short.word_jsd) < 2 or len(long.word_jsd) < 2:
        return "one seed: not resolved"
    diff, low, high = welch_interval(long.word_jsd, short.word_jsd)
    return f"{diff:+.3f} [{low:+.3f}, {high:+.3f}], {'resolved' if low > 0 or high < 0 else 'not resolved'} with " \
           f"{min(len(short.word_jsd), len(long.word_jsd))} seeds"


def length_table(dataset: str, root: Path = RESULTS) -> str | None:
    """RESULTS' table of the training-length axis on ``dataset``, with a line per model."""
    found = length_rows(dataset, root)
    if not found:
        return None
    lines = ["| model | start variance v | epochs | seeds | best epoch (each seed) | test accuracy (%) | "
             "word JSD from even | sentence JSD from even |", "|---|---:|---:|---:|---|---:|---:|---:|"]
    for r in found:
        lines.append(f"| {r.label} | {r.variance:g} | {r.epochs} | {r.seeds} | "
                     f"{', '.join(str(b) for b in r.best_epochs)} | {table_cell(r.accuracy, 2, 100)} | "
                     f"{table_cell(r.word_jsd)} | {table_cell(r.sentence_jsd)} |")
    said = []
    sweeps = {m.model: m for m in by_model(rows(dataset, root))}
    for model in dict.fromkeys(r.model for r in found):
        factor = length_factor(found, model)
        if factor is None:
            continue
        times, short, long = factor
        start = sweeps.get(model)
        by_start = (f"; across the sweep's starts at 3 epochs it moves {start.sharpness_ratio:.1f} times "
                    f"({start.word_jsd[0]:.3f} at v = {start.starts[0]:g} to {start.word_jsd[-1]:.3f} at "
                    f"v = {start.starts[-1]:g})" if start and len(start.starts) >= 2 else "")
        said.append(f"{short.label} from v = {short.variance:g}: the word attention's JSD from even is "
                    f"{mean_of(short.word_jsd):.3f} after {short.epochs} epochs and {mean_of(long.word_jsd):.3f} after "
                    f"{long.epochs} ({times:.1f} times {_way(short, long)} trained longer: {_resolved(short, long)})"
                    f"{by_start}; test accuracy "
                    f"{100 * mean_of(short.accuracy):.1f}% and {100 * mean_of(long.accuracy):.1f}%.")
    return ("\n".join(lines) + "\n\nMean ± standard deviation over the recorded seeds, at the shipped checkpoints' "
            "starts; the 3-epoch rows are the start sweep's. Longer runs keep the weights of their best validation "
            "epoch (patience 10, so each saw all its epochs).\n\n" + "".join(f"- {line}\n" for line in said))


def start_and_length(dataset: str, model: str, root: Path = RESULTS) -> str | None:
    """How much the start and how much training length move the word attention's sharpness of
    ``model`` on ``dataset``, each with its figure; None until both are recorded."""
    sweep = next((m for m in by_model(rows(dataset, root)) if m.model == model), None)
    factor = length_factor(length_rows(dataset, root), model)
    if sweep is None or len(sweep.starts) < 2 or factor is None:
        return None
    times, short, long = factor
    by_start = f"{sweep.sharpness_ratio:.0f}" if sweep.sharpness_ratio >= 10 else f"{sweep.sharpness_ratio:.1f}"
    return (f"on {dataset}, {sweep.label}'s word attention ends {by_start} times further from even "
            f"started at v = {sweep.starts[-1]:g} than at v = {sweep.starts[0]:g} (JSD {sweep.word_jsd[0]:.3f} to "
            f"{sweep.word_jsd[-1]:.3f}, 3 epochs each), and {times:.1f} times {_way(short, long)} trained "
            f"{long.epochs} epochs instead of {short.epochs} from the shipped start (JSD {mean_of(short.word_jsd):.3f} "
            f"to {mean_of(long.word_jsd):.3f}; {_resolved(short, long)}).")
