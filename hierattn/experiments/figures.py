"""The figures of the registry: HA-LSTM's input-length sweep (its Figures 4-6: a, HA-LSTM-4
against the three baselines; b, N = 4, 8, 12), MahNN's Figure 4 (b: channels, c: filter size) and
HCAN's Figure 3 (validation accuracy against training time), each as the data the app draws, a
Markdown table and an SVG for docs/RESULTS.md."""
from __future__ import annotations

from pathlib import Path

from hierattn.experiments.results import RESULTS, recorded
from hierattn.experiments.spec import EXPERIMENTS, Experiment, load_experiments, load_figure_rows
from hierattn.experiments.tables import markdown, mean

FIGURES = EXPERIMENTS.parent / "docs" / "figures"
LENGTH_A = ("HA-LSTM-4", "LSTM", "BiLSTM", "ON-LSTM")
LENGTH_B = ("HA-LSTM-4", "HA-LSTM-8", "HA-LSTM-12")


def sweep(dataset: str, group: str, experiments: dict[str, Experiment], root: Path = RESULTS):
    """(x values, {series label: [mean test accuracy or None per x]}) for one sweep group."""
    rows = [e for e in experiments.values() if e.dataset == dataset and e.group == group]
    xs = sorted({_x(e.value) for e in rows})
    series: dict[str, list] = {}
    for e in rows:
        label = e.label  # a sweep that changes the model's name (MahNN-L) names its line in its spec
        found = recorded(root, e)
        series.setdefault(label, [None] * len(xs))[xs.index(_x(e.value))] = (
            mean([r.test_accuracy for r in found]) if found else None)
    return xs, series


def _x(value) -> float:
    return value[0] if isinstance(value, list) else value


def sweep_table(xs: list, series: dict[str, list], x_name: str) -> str:
    rows = [{"model": name, **{f"{x_name} = {x:g}": "—" if v is None else f"{100 * v:.2f}"
                               for x, v in zip(xs, values)}} for name, values in series.items()]
    return markdown(rows, left=1) if rows else "Nothing registered.\n"


def curves(dataset: str, experiments: dict[str, Experiment], root: Path = RESULTS, drawn: bool = False):
    """HCAN Figure 3: {row label: (training seconds, validation accuracy)} per validation, each the
    mean over the row's seeds at that validation, for the rows ``experiments/figures.toml`` names
    (``drawn``: only those drawn as lines)."""
    chosen = load_figure_rows()["curves"]["drawn" if drawn else "rows"]
    out = {}
    for row in chosen:
        e = experiments.get(f"{dataset}/{row}")
        if e is None:
            continue
        found = [r for r in recorded(root, e) if r.curve]
        if not found:
            continue
        steps = min(len(r.curve) for r in found)
        out[e.label] = ([mean(r.curve[i][0] for r in found) for i in range(steps)],
                        [mean(r.curve[i][1] for r in found) for i in range(steps)])
    return out


def curves_table(series: dict) -> str:
    if not series:
        return "Nothing recorded yet.\n"
    steps = max(len(xs) for xs, _ in series.values())
    rows = [{"model": name, **{f"epoch {i + 1}": (f"{100 * ys[i]:.2f} after {xs[i]:.0f} s" if i < len(xs) else "—")
                               for i in range(steps)}} for name, (xs, ys) in series.items()]
    return markdown(rows, left=1)


def figures(root: Path = RESULTS) -> dict[str, str]:
    """File name -> SVG text, for every figure docs/RESULTS.md shows."""
    from hierattn.viz.svg import line_chart

    experiments = load_experiments()
    out = {}
    for dataset in ("tweets", "bbc-news"):
        xs, series = sweep(dataset, "length", experiments, root)
        if series:
            for part, names in (("a", LENGTH_A), ("b", LENGTH_B)):
                chosen = {n: (xs, series[n]) for n in names if n in series}
                out[f"length-{dataset}-{part}.svg"] = line_chart(
                    chosen, f"{dataset}: test accuracy against input length ({part})", "input length q (words)",
                    "test accuracy")
        series3 = curves(dataset, experiments, root, drawn=True)
        out[f"curves-{dataset}.svg"] = line_chart(series3, f"{dataset}: validation accuracy against training time",
                                                  "training seconds (one thread)", "validation accuracy")
    for group, x_title in (("mahnn-channels", "channels L"), ("mahnn-filters", "filter size")):
        xs, series = sweep("tweets", group, experiments, root)
        if series:
            out[f"{group}-tweets.svg"] = line_chart({n: (xs, v) for n, v in series.items()},
                                                    f"tweets: MahNN test accuracy against {x_title}", x_title,
                                                    "test accuracy")
    return out
