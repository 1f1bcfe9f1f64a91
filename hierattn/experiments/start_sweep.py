"""The sweep of where HAN's and HCAN's pooling query starts (``experiments/<data set>.hcan-start.toml``
and ``.han-start.toml``), summarised from the recorded runs: per model and start variance, over
the recorded seeds, the test accuracy, the spread of the trained attention from even, the query's
norm before and after training, and the Kendall taus (``probe.py``). RESULTS and the Tour read it.

What a reader should take from it is in which columns move with the start: a sharpness (the
Jensen-Shannon divergence from even) that follows the start while accuracy stays flat says that
training does not decide how peaked the attention is; a rank correlation (tau) does not change
when the scores are multiplied by a constant, so it is the figure on which two models can be
compared whatever their start.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from hierattn.experiments.results import RESULTS, recorded
from hierattn.experiments.spec import load_experiments

SUFFIX = "-start"  # the sweep's spec files: experiments/<data set>.<model>-start.toml
TAUS = ("tau leave-one-out: attention", "tau integrated gradients: attention",
        "tau leave-one-out: attention within sentences", "tau leave-one-out: attention, multi-sentence",
        "tau leave-one-out: sentence x even words")


@dataclass
class StartRow:
    """One (model, start variance) of the sweep: each figure's values over its recorded seeds."""

    model: str  # the model type
    dataset: str
    variance: float
    seeds: int = 0
    accuracy: list[float] = field(default_factory=list)
    word_jsd: list[float] = field(default_factory=list)
    sentence_jsd: list[float] = field(default_factory=list)
    norm_start: list[float] = field(default_factory=list)  # mean over the word-level heads
    norm_end: list[float] = field(default_factory=list)
    taus: dict[str, list[float]] = field(default_factory=dict)
    label: str = ""  # the model's name as the papers write it

    @property
    def moved(self) -> list[float]:
        """How far each seed's word-level query norm moved in training, as a share of where it started."""
        return [(e - s) / s for s, e in zip(self.norm_start, self.norm_end) if s > 0]


def mean_of(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def sd_of(values: list[float]) -> float:
    if len(values) < 2:
        return math.nan
    m = mean_of(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def spread_at(spread: dict, level: str) -> float:
    """A probe's mean JSD from even at ``level`` (``probe.pooling_spread``'s record), NaN where absent."""
    return spread.get(level, {}).get("jsd", [math.nan])[0]


def rows(dataset: str, root: Path = RESULTS) -> list[StartRow]:
    """The sweep's rows of ``dataset`` with at least one recorded seed, HCAN first, by start."""
    experiments = load_experiments()
    groups = sorted({e.group for e in experiments.values() if e.group.endswith(SUFFIX)}, reverse=True)
    out = []
    for group in groups:
        for e in sorted((e for e in experiments.values() if e.dataset == dataset and e.group == group),
                        key=lambda e: float(e.value)):
            row = StartRow(e.model, dataset, float(e.value), label=e.label)
            for r in recorded(root, e):
                a = r.attention or {}
                if not a:
                    continue
                row.seeds += 1
                row.accuracy.append(r.test_accuracy)
                spread = a.get("from_even", {})
                row.word_jsd.append(spread_at(spread, "word"))
                row.sentence_jsd.append(spread_at(spread, "sentence"))
                start, end = a["query_norm_start"].get("word.target", []), a["query_norm_end"].get("word.target", [])
                row.norm_start.append(mean_of(start))
                row.norm_end.append(mean_of(end))
                for name in TAUS:
                    tau = a.get("taus", {}).get(name)
                    if tau:
                        row.taus.setdefault(name, []).append(tau["tau"][0])
            if row.seeds:
                out.append(row)
    return out


def table_cell(values: list[float], digits: int = 3, scale: float = 1.0) -> str:
    if not values:
        return "—"
    mean = mean_of(values) * scale
    sd = sd_of(values) * scale
    return f"{mean:.{digits}f}" + ("" if math.isnan(sd) else f" ± {sd:.{digits}f}")


def table(dataset: str, root: Path = RESULTS) -> str | None:
    """The RESULTS table of the sweep on ``dataset``: mean ± sd over the recorded seeds."""
    found = rows(dataset, root)
    if not found:
        return None
    registered = sum(len(e.seeds) for e in load_experiments().values()
                     if e.dataset == dataset and e.group.endswith(SUFFIX))
    recorded_runs = sum(r.seeds for r in found)
    lines = ["| model | T or u_w starts at N(0, v), v = | seeds | test accuracy (%) | word JSD from even | "
             "sentence JSD from even | word-level query norm: start → end | Kendall tau with leave-one-out | "
             "with Integrated Gradients | within sentences (leave-one-out) | documents of 2+ sentences: attention "
             "(leave-one-out) | the same documents: sentence × even words |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in found:
        lines.append(
            f"| {r.label} | {r.variance:g} | {r.seeds} | {table_cell(r.accuracy, 2, 100)} | {table_cell(r.word_jsd)} | "
            f"{table_cell(r.sentence_jsd)} | {mean_of(r.norm_start):.2f} → {mean_of(r.norm_end):.2f} | "
            + " | ".join(table_cell(r.taus.get(t, [])) for t in (TAUS[0], TAUS[1], TAUS[2], TAUS[3], TAUS[4])) + " |")
    return ("\n".join(lines) + "\n\nMean ± standard deviation over the recorded seeds. JSD: the mean Jensen-Shannon "
            "divergence (natural log, 0..0.69) of the target attention from an even spread over the same keys, over "
            "the whole test split. Norms: the word-level query per head (HCAN: T split into its heads; HAN: u_w), "
            "averaged over heads. Taus: the two-stage word ranking against leave-one-out and Integrated Gradients "
            "on documents spread through the test split (tweets 200, bbc-news 50); \"within sentences\" the mean "
            "tau inside each sentence. The last two columns are a pair on the same documents (those of two or more "
            "sentences where both taus are defined): the attention's tau and its null's, the sentence weights "
            f"spread evenly over each sentence's words. {recorded_runs} of the sweep's {registered} runs on "
            f"{dataset} are recorded.\n\n"
            + "".join(f"- {line}\n" for line in lesson(found)))


def shipped_starts(folders: dict[str, Path], dataset: str, model_types) -> dict[str, float]:
    """The sweep's series label -> the start of the shipped checkpoint of that model type on
    ``dataset`` (the folder ``<data set>-<model type>``), to mark on the sweep's charts."""
    import json

    from hierattn.models import display_name, query_start_variance

    out = {}
    for model in model_types:
        folder = folders.get(f"{dataset}-{model}")
        try:
            config = json.loads((Path(folder) / "config.json").read_text()) if folder else None
        except (OSError, ValueError):
            config = None
        if not config or config.get("model_type") != model:
            continue
        variance = query_start_variance(model, config.get("model_config", {}))
        if variance is not None:
            out[display_name(model, config.get("model_config", {}))] = variance
    return out


@dataclass
class ModelSweep:
    """One model's sweep on one data set, read across its starts."""

    model: str
    label: str
    starts: list[float]
    accuracy: list[float]  # mean over seeds, per start
    seed_sd: float  # the typical spread of accuracy between seeds of one start
    word_jsd: list[float]
    tau: list[float]  # with leave-one-out
    moved: list[float]  # every run's relative change of the word-level query norm in training

    accuracy_sds: list[float] = field(default_factory=list)  # per start, over its seeds
    seeds: int = 0  # seeds per start (the fewest of any start)

    @property
    def accuracy_range(self) -> float:
        return max(self.accuracy) - min(self.accuracy)

    @property
    def accuracy_resolution(self) -> float:
        """The smallest accuracy difference between two starts that this many seeds resolve: the
        half-width of a 95% interval of a difference of two starts' means, t(k(n - 1)) x the pooled
        sd x sqrt(2 / n). "Equal accuracy" means no difference of this size or more."""
        n, k = self.seeds, len(self.accuracy_sds)
        if n < 2 or k == 0:
            return math.nan
        pooled = math.sqrt(sum(sd ** 2 for sd in self.accuracy_sds) / k)
        return t_quantile(k * (n - 1)) * pooled * math.sqrt(2 / n)

    @property
    def sharpness_ratio(self) -> float:
        """Word JSD from even at the largest start over that at the smallest."""
        return self.word_jsd[-1] / self.word_jsd[0] if self.word_jsd[0] > 0 else math.inf

    @property
    def start_decides_sharpness(self) -> bool:
        """The spread follows the start (3 times further from even or more across the sweep) while
        accuracy stays within the seeds' own spread (or 1 point)."""
        return (len(self.starts) >= 2 and self.sharpness_ratio >= 3
                and self.accuracy_range <= max(2 * self.seed_sd, 0.01))


def by_model(found: list[StartRow]) -> list[ModelSweep]:
    out = []
    for model in dict.fromkeys(r.model for r in found):
        mine = sorted((r for r in found if r.model == model), key=lambda r: r.variance)
        sds = [sd_of(r.accuracy) for r in mine if len(r.accuracy) >= 2]
        out.append(ModelSweep(model, mine[0].label, [r.variance for r in mine], [mean_of(r.accuracy) for r in mine],
                              mean_of(sds) if sds else 0.0, [mean_of(r.word_jsd) for r in mine],
                              [mean_of(r.taus.get(TAUS[0], [])) for r in mine], [m for r in mine for m in r.moved],
                              [sd_of(r.accuracy) for r in mine], min(r.seeds for r in mine)))
    return out


def t_quantile(df: float, p: float = 0.975) -> float:
    """Student's t quantile at ``df`` degrees of freedom (fractional for Welch's)."""
    from scipy.stats import t

    return float(t.ppf(p, df))


@dataclass
class LeadCell:
    """The sweep's second model's Kendall tau with leave-one-out less its first's (HAN's less
    HCAN's) at the i-th start of each (their starts differ in scale: 1/200 and 1/128 the
    smallest), with a Welch 95% interval over the seeds."""

    dataset: str
    leader: str  # the label of the model whose lead it is
    trailer: str
    leader_start: float
    trailer_start: float
    lead: float
    low: float
    high: float

    @property
    def resolves(self) -> bool:
        """The interval excludes no lead: the leader ahead, with these seeds."""
        return self.low > 0


def welch_interval(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """(mean(a) - mean(b), low, high): Welch's 95% interval of a difference of two means."""
    va, vb = sd_of(a) ** 2 / len(a), sd_of(b) ** 2 / len(b)
    se = math.sqrt(va + vb)
    diff = mean_of(a) - mean_of(b)
    if se == 0:
        return diff, diff, diff
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    half = t_quantile(df) * se if df >= 1 else math.inf
    return diff, diff - half, diff + half


def lead_cells(found: list[StartRow]) -> list[LeadCell]:
    """The sweep's second model's lead over its first (HAN over HCAN) in Kendall tau with
    leave-one-out, start by start (the i-th smallest of each), each with its interval: "leads from
    every start" holds only where each resolves."""
    models = list(dict.fromkeys(r.model for r in found))
    if len(models) != 2:
        return []
    trailing, leading = ([r for r in found if r.model == m] for m in models)
    out = []
    for a, b in zip(sorted(leading, key=lambda r: r.variance), sorted(trailing, key=lambda r: r.variance)):
        ta, tb = a.taus.get(TAUS[0], []), b.taus.get(TAUS[0], [])
        if len(ta) >= 2 and len(tb) >= 2:
            out.append(LeadCell(a.dataset, a.label, b.label, a.variance, b.variance, *welch_interval(ta, tb)))
    return out


def lead_sentence(cells: list[LeadCell]) -> str:
    """From how many starts the lead resolves, and the ones where it does not."""
    if not cells:
        return ""
    open_cells = [c for c in cells if not c.resolves]
    first = cells[0]
    out = (f"{first.leader} ranks words more like leave-one-out than {first.trailer} (Kendall tau, Welch 95% "
           f"interval over the seeds) from {len(cells) - len(open_cells)} of {len(cells)} starts on {first.dataset}")
    if open_cells:
        out += "; not resolved: " + "; ".join(
            f"from v = {c.leader_start:g} ({c.leader}) and {c.trailer_start:g} ({c.trailer}), {c.leader}'s lead "
            f"{c.lead:+.3f} [{c.low:+.3f}, {c.high:+.3f}]" for c in open_cells)
    return out + "."


def lesson(found: list[StartRow]) -> list[str]:
    """The sweep in sentences, each figure from the recorded runs: per model, how accuracy, the
    spread from even, the rank agreement and the query's norm behave across the starts. Whether
    accuracy moves is judged against the seeds' own spread, and not at all before a start has two
    seeds."""
    lines = []
    for m in by_model(found):
        seeded = m.seed_sd > 0
        noise = (f"seeds of one start differ by {100 * m.seed_sd:.1f} points" if seeded else
                 "one seed a start so far: the seeds' own spread is not measured yet")
        follows = len(m.starts) >= 2 and m.sharpness_ratio >= 3
        if follows and seeded:
            verdict = ("The spread follows the start while accuracy stays within what the seeds resolve: how "
                       "focused it looks is mostly the start's doing." if m.start_decides_sharpness else
                       "The spread follows the start, and accuracy moves beyond the seeds' spread too.")
        elif follows:
            verdict = ("The spread follows the start; whether accuracy does waits for the seeds still to run.")
        else:
            verdict = "The spread does not simply follow the start here."
        resolution = m.accuracy_resolution
        if not math.isnan(resolution):
            noise += (f"; with {m.seeds} seeds a start, a difference of {100 * resolution:.1f} points between two "
                      "starts is the smallest these runs resolve")
        lines.append(
            f"{m.label}: test accuracy {100 * min(m.accuracy):.1f}% to {100 * max(m.accuracy):.1f}% across "
            f"the {len(m.starts)} starts ({noise}); the word attention's JSD from even {m.word_jsd[0]:.3f} at "
            f"v = {m.starts[0]:g} and {m.word_jsd[-1]:.3f} at v = {m.starts[-1]:g} ({m.sharpness_ratio:.1f} "
            f"times); Kendall tau with leave-one-out {min(m.tau):z.2f} to {max(m.tau):z.2f}; training changed the "
            f"query's norm by {100 * min(m.moved):+.0f}% to {100 * max(m.moved):+.0f}%. {verdict}")
    lead = lead_sentence(lead_cells(found))
    return lines + null_lines(found) + ([lead] if lead else [])


def null_lines(found: list[StartRow]) -> list[str]:
    """Per model, in how many runs the attention's tau on documents of two or more sentences is
    above its null's on the same documents (the sentence weights spread evenly over the words)."""
    out = []
    for model in dict.fromkeys(r.model for r in found):
        pairs = [(a, b) for r in found if r.model == model
                 for a, b in zip(r.taus.get(TAUS[3], []), r.taus.get(TAUS[4], []))]
        if not pairs:
            continue
        above = sum(a > b for a, b in pairs)
        label = next(r.label for r in found if r.model == model)
        out.append(f"{label}'s word ranking is above its null (sentence weights times even words, the same documents "
                   f"of two or more sentences, Kendall tau with leave-one-out) in {above} of {len(pairs)} runs across "
                   "the starts.")
    return out

