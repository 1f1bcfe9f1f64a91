"""How often an ordering's verdict is wrong when the two rows are equal in truth: the false-verdict
rate of ``verdict.seeds_and_documents`` (the t interval docs/RESULTS.md's orderings use) and of the
paired bootstrap it replaced, simulated under nulls shaped like the registry's rows, and recorded
with its Monte Carlo error (``results/verdict-null.json``; ``python -m hierattn verdict-null``).

Each draw makes two rows of three seeds on the same documents, equal in truth: every document has a
difficulty (Beta(3, 1.2), accuracy about 0.71), each seed shifts its row's accuracy as a whole by
N(0, seed_sd) and then gets each document right or wrong on its own. A verdict other than "within
noise" is false. Scenarios: the seed spreads the registry shows (1.4 and 2.8 points on tweets,
6.6 on bbc-news's 223 documents) and none at all. The rate from ``draws`` draws carries a Monte
Carlo standard error sqrt(p (1 - p) / draws): 300 draws leave about 1.3 points of it at 5%, 2,000
about 0.5.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from hierattn.experiments.results import RESULTS
from hierattn.experiments.verdict import WITHIN_NOISE, paired_bootstrap, seeds_and_documents

SCENARIOS = ((0.014, 3816), (0.028, 3816), (0.066, 223), (0.0, 3816))  # (seed sd, documents)
DRAWS = 2000
PATH = RESULTS / "verdict-null.json"


def null_rows(rng: np.random.Generator, difficulty: np.ndarray, seeds: int, seed_sd: float) -> np.ndarray:
    """(seeds, documents) right/wrong of one row under the null, on documents of the given difficulty
    (shared by both rows): each seed shifts the row's accuracy by N(0, seed_sd), then gets each
    document right or wrong on its own."""
    return np.stack([rng.random(len(difficulty)) < np.clip(difficulty + rng.normal(0, seed_sd), 0, 1)
                     for _ in range(seeds)])


def _rate(wrong: int, draws: int) -> dict:
    p = wrong / draws
    return {"false": wrong, "rate": p, "monte_carlo_error": math.sqrt(p * (1 - p) / draws)}


def false_verdict_rates(draws: int = DRAWS, seed: int = 32, scenarios=SCENARIOS, bootstrap: bool = True,
                        replicates: int = 1000) -> list[dict]:
    """Per scenario: the t interval's false verdicts (and the paired bootstrap's, where a seed
    shifts accuracy) among ``draws`` null draws, each rate with its Monte Carlo error."""
    rng = np.random.default_rng(seed)
    out = []
    for seed_sd, documents in scenarios:
        wrong_t = wrong_bootstrap = 0
        for _ in range(draws):
            difficulty = rng.beta(3, 1.2, documents)
            a, b = null_rows(rng, difficulty, 3, seed_sd), null_rows(rng, difficulty, 3, seed_sd)
            wrong_t += seeds_and_documents(a, b).verdict != WITHIN_NOISE
            if bootstrap and seed_sd > 0:
                wrong_bootstrap += paired_bootstrap(a, b, replicates=replicates).verdict != WITHIN_NOISE
        row = {"seed_sd": seed_sd, "documents": documents, "draws": draws, "t interval": _rate(wrong_t, draws)}
        if bootstrap and seed_sd > 0:
            row["paired bootstrap"] = _rate(wrong_bootstrap, draws)
        out.append(row)
    return out


def record(rows: list[dict], path: Path = PATH) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.part")
    tmp.write_text(json.dumps({"scenarios": rows}, indent=1) + "\n")
    tmp.replace(path)


def table(path: Path = PATH) -> str | None:
    """The recorded rates as the RESULTS table; None when nothing is recorded."""
    try:
        rows = json.loads(path.read_text())["scenarios"]
    except (OSError, ValueError, KeyError):
        return None

    def cell(rate: dict | None) -> str:
        if rate is None:
            return "—"
        return f"{100 * rate['rate']:.1f}% ± {100 * rate['monte_carlo_error']:.1f}"

    lines = ["| a seed shifts accuracy by (sd, points) | test documents | null draws | t interval (used) | "
             "paired bootstrap (before) |", "|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {100 * r['seed_sd']:.1f} | {r['documents']:,} | {r['draws']:,} | {cell(r['t interval'])} | "
                     f"{cell(r.get('paired bootstrap'))} |")
    return ("\n".join(lines) + "\n\nFalse verdicts (\"holds\" or \"reversed\" between two rows equal in truth, three "
            "seeds each), with their Monte Carlo standard error; `python -m hierattn verdict-null` records them.\n")
