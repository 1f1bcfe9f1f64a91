"""RESULTS's erasure table, from ``results/erasure/*.json`` (``python -m hierattn erasure``): each
ranking's mean drop in the predicted class's probability over a split, and, where a hierarchical
model has the structural null (its sentence attention times even words), the attention, random
and the null on exactly the documents the null exists for. A pair of figures in one cell or one
row always covers the same documents: the null needs two or more sentences, so its column is
never put beside an all-document mean."""
from __future__ import annotations

import json
from pathlib import Path

from hierattn.analysis.attribution_methods import INTEGRATED
from hierattn.analysis.faithfulness import STRUCTURAL
from hierattn.experiments.results import RESULTS

IG = INTEGRATED.name
COLUMNS = ("attention", "gradient × input", IG, "leave-one-out", "random")
AGREEMENT = ("gradient × input", IG, "leave-one-out")


def recorded(root: Path = RESULTS) -> list[dict]:
    folder = root / "erasure"
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))] if folder.exists() else []


def rows(root: Path = RESULTS) -> list[dict]:
    """Per checkpoint: its all-document areas, and the same-document triple beside the null."""
    out = []
    for r in recorded(root):
        row = {"checkpoint": r["checkpoint"], "documents": r["documents"],
               "all": {m: r["auc"].get(m) for m in COLUMNS},
               "agreement": {m: r["agreement"].get(m) for m in AGREEMENT}}
        if STRUCTURAL in r.get("paired", {}):
            row["paired"] = {m: r["paired"].get(m) for m in ("attention", "random", STRUCTURAL)}
            row["paired_documents"] = r["paired_documents"]
        out.append(row)
    return out


def table(root: Path = RESULTS) -> str | None:
    found = rows(root)
    if not found:
        return None

    def points(value) -> str:
        return "—" if value is None else f"{100 * value:.1f}"

    def rho(value) -> str:
        return "—" if value is None else f"{value:+.2f}"

    lines = ["| checkpoint | documents | attention | gradient x input | Integrated Gradients | leave-one-out | "
             "random | "
             "Spearman attention vs gradient x input | vs Integrated Gradients | vs leave-one-out |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in found:
        lines.append(f"| `{r['checkpoint']}` | {r['documents']} | "
                     + " | ".join(points(r["all"][m]) for m in COLUMNS) + " | "
                     + " | ".join(rho(r["agreement"][m]) for m in AGREEMENT) + " |")
    lines += ["", "Beside the structural null, on the documents it exists for (two or more sentences, a hierarchical "
                  "model), each figure on those same documents:", "",
              "| checkpoint | documents of 2+ sentences | attention | sentence attention × even words | random |",
              "|---|---:|---:|---:|---:|"]
    for r in found:
        if "paired" in r:
            p = r["paired"]
            lines.append(f"| `{r['checkpoint']}` | {r['paired_documents']} | {points(p['attention'])} | "
                         f"{points(p[STRUCTURAL])} | {points(p['random'])} |")
    return "\n".join(lines) + "\n"
