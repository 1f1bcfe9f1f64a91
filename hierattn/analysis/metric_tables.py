"""The metric rows of an explanation as the tables a reader sees: every matrix's row, one map's or
one sentence's (``metrics_table``, the exports), and the table beside one self-attention heatmap
(``metrics_view``). pandas is imported when a table is made: the command line's explain does
without it."""
from __future__ import annotations

from typing import TYPE_CHECKING

from hierattn.analysis.explain import Explanation
from hierattn.analysis.metrics import GROUP_AXES, shown_columns

if TYPE_CHECKING:
    import pandas as pd


def metrics_table(explanation: Explanation, name: str | None = None, sentence: int | None = None) -> pd.DataFrame:
    """The metric rows as a pandas DataFrame, optionally for one map and one sentence: each metric
    followed by its even-spread value at the matrix's size (``diagonality_b1_even``, ...) where that
    value depends on the size (``metrics.shown_columns``: an even spread's Gini is 0 at every size)."""
    rows = [r for r in explanation.metrics
            if (name is None or r["map"] == name) and (sentence is None or r["sentence"] == sentence)]
    return _table(rows)


def _table(rows: list[dict]) -> pd.DataFrame:
    import pandas as pd  # lazily: the command line's explain does without it

    df = pd.DataFrame(rows)
    if df.empty:
        return df
    where = ["sentence"] + [axis for axis in GROUP_AXES[1:] if axis in df.columns]
    df[where] = df[where].astype("Int64")  # indices with gaps (maps without the axis), not floats
    return df[["map", "level"] + where + ["head", "size"] + shown_columns()]


def metrics_view(explanation: Explanation, level: str, group_axis: str | None, group: int | None,
                 heads: int) -> pd.DataFrame:
    """The metrics table a reader sees beside one self-attention heatmap: every map of ``level``
    (so its branches compare), for one sentence or time step (``group`` along ``group_axis``),
    numbered from 1 as the pickers number them, and the head column only where there are heads.
    ``metrics.column_labels`` names its figures for a reader. Made from the rows in one step: a
    table of a few rows took 4-5 ms through pandas' filters, drops and shifts, on every new paste."""
    import pandas as pd  # lazily: the command line's explain does without it

    names = [n for n in explanation.self_attention_names if explanation.describe(n).level == level]
    # that layer's, sentence's or time step's matrices alone are computed
    rows = [r for n in names for r in explanation.metrics_of(n, group if group_axis else None)
            if not group_axis or r.get(group_axis) == group]
    numbered = {column: 1 for column in ([group_axis] if group_axis else []) + (["head"] if heads > 1 else [])}
    columns = ["map", *numbered, "size", *shown_columns()]  # the head after the group axis, as in metrics_table
    table = pd.DataFrame([[r[c] + numbered[c] if c in numbered else r[c] for c in columns] for r in rows],
                         columns=columns)
    if group_axis:
        table[group_axis] = table[group_axis].astype("Int64")  # as metrics_table types the group axes
    return table
