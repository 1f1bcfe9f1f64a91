"""Small pieces docs/RESULTS.md's tables share: means and spreads as text, durations, Markdown tables."""
from __future__ import annotations

import numpy as np


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


def sd(values: list[float]) -> float:
    return float(np.std(values, ddof=1))


def mean_sd(values: list[float]) -> str:
    if not values:
        return "—"
    centre = 100 * mean(values)
    return f"{centre:.2f} ± {100 * sd(values):.2f}" if len(values) > 1 else f"{centre:.2f}"


def duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def markdown(rows: list[dict], left: int, right_until: int | None = None) -> str:
    """A Markdown table of ``rows``: the first ``left`` columns left-aligned, then right-aligned up
    to column ``right_until`` (all the rest when None), then left-aligned."""
    columns = list(rows[0])
    align = ["---" if i < left or (right_until is not None and i >= right_until) else "---:"
             for i in range(len(columns))]
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(str(row[c]) for c in columns) + " |" for row in rows]
    return "\n".join(lines) + "\n"
