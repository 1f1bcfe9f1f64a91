"""The start sweep's lesson (hierattn/experiments/start_sweep.py) says only what its recorded runs
support: no verdict on accuracy before a start has two seeds."""
import math

import pytest

from hierattn.experiments.start_sweep import TAUS, StartRow, lesson


def _row(variance, accuracy, jsd):
    n = len(accuracy)
    return StartRow("hcan", "tweets", variance, n, accuracy, jsd, [0.01] * n, [1.0] * n, [1.1] * n,
                    {TAUS[0]: [0.05] * n}, "HCAN")


def test_one_seed_a_start_leaves_accuracy_unjudged():
    (line,) = lesson([_row(0.01, [0.72], [0.005]), _row(1.0, [0.70], [0.11])])
    assert "one seed a start so far" in line and "waits for the seeds" in line and "+10%" in line


def test_with_seeds_the_spread_follows_the_start_and_accuracy_stays_within_their_noise():
    flat = [_row(0.01, [0.720, 0.725, 0.715], [0.005] * 3), _row(1.0, [0.722, 0.718, 0.726], [0.11] * 3)]
    assert "mostly the start's doing" in lesson(flat)[0]
    moved = [_row(0.01, [0.720, 0.721, 0.719], [0.005] * 3), _row(1.0, [0.760, 0.761, 0.759], [0.11] * 3)]
    assert "accuracy moves beyond the seeds' spread too" in lesson(moved)[0]
    still = [_row(0.01, [0.72] * 3, [0.05] * 3), _row(1.0, [0.72] * 3, [0.06] * 3)]
    assert "does not simply follow" in lesson(still)[0]


def test_the_shipped_checkpoints_starts_are_read_as_the_models_read_them():
    from hierattn.experiments.start_sweep import shipped_starts
    from hierattn.home import checkpoint_root
    from hierattn.models import query_start_variance

    root = checkpoint_root()
    folders = {name: root / name for name in ("tweets-hcan", "tweets-han", "bbc-news-hcan", "bbc-news-han")}
    assert shipped_starts(folders, "tweets", ("hcan", "han")) == {"HCAN": 1.0, "HAN": 0.005}
    assert shipped_starts(folders, "bbc-news", ("hcan", "han")) == {"HCAN": 1.0, "HAN": 0.005}
    assert query_start_variance("hcan", {"d": 128}) == 1 / 128  # a config written before target_start: scaled
    assert query_start_variance("hcan", {"target_start": "normal", "target_variance": 10.0}) == 10.0
    assert query_start_variance("hcan", {"pooling": "max"}) is None
    assert query_start_variance("han", {"attention_dim": 100}) == 0.01
    assert query_start_variance("sanet", {}) is None


def test_the_shipped_start_is_ringed_on_the_sweep_chart():
    from hierattn.viz.curves import SHIPPED_KEY, start_sweep_chart

    fig = start_sweep_chart({"HCAN": ([0.1, 0.1, 1.0, 1.0], [0.01, 0.03, 0.09, 0.11]),
                             "HAN": ([0.005, 1.0], [0.2, 0.5])}, "JSD", shipped={"HCAN": 1.0, "HAN": 0.005})
    rings = [t for t in fig.data if t.name == SHIPPED_KEY]
    assert [(list(t.x), list(t.y)) for t in rings] == [([1.0], [pytest.approx(0.10)]), ([0.005], [0.2])]
    assert [t.showlegend for t in rings] == [True, False]  # one key for both
    assert not [t for t in start_sweep_chart({"HCAN": ([0.1], [0.01])}, "JSD").data if t.name == SHIPPED_KEY]


def test_equal_accuracy_is_said_with_its_resolution():
    """With 3 seeds a start and the recorded seed spreads, the smallest difference between two starts
    that the sweep resolves: t(8) x pooled sd x sqrt(2/3) (tweets' HCAN: 1.2 points)."""
    from hierattn.experiments.start_sweep import by_model

    sds = [0.0022, 0.0048, 0.0086, 0.0077]
    found = [_row(v, [0.72 - sd, 0.72, 0.72 + sd], [0.01 * (i + 1)] * 3) for i, (v, sd) in enumerate(zip(
        (0.0078125, 0.1, 1.0, 10.0), sds))]
    (m,) = by_model(found)
    pooled = math.sqrt(sum(sd ** 2 for sd in sds) / 4)
    assert m.accuracy_resolution == pytest.approx(2.306004 * pooled * math.sqrt(2 / 3), rel=1e-5)
    assert f"{100 * m.accuracy_resolution:.1f} points between two starts" in lesson(found)[0]


def test_every_start_counts_the_cells_that_resolve():
    """HAN's lead over HCAN in tau is said per start with Welch's interval, and a start whose interval
    reaches zero is named, not folded into "every start" (the review's tweets cell at v = 10:
    HAN 0.189 ± 0.071, HCAN 0.049 ± 0.009 over 3 seeds -> +0.140 [-0.032, +0.311])."""
    from hierattn.experiments.start_sweep import lead_cells, lead_sentence, welch_interval

    diff, low, high = welch_interval([0.189 - 0.071, 0.189, 0.189 + 0.071], [0.049 - 0.009, 0.049, 0.049 + 0.009])
    assert (diff, low, high) == pytest.approx((0.140, -0.032, 0.311), abs=0.003)  # from rounded sds

    def row(model, v, taus):
        r = _row(v, [0.7] * 3, [0.1] * 3)
        r.model, r.label, r.taus = model, model.upper(), {TAUS[0]: taus}
        return r

    found = [row("hcan", 0.0078125, [0.05, 0.08, 0.11]), row("hcan", 10.0, [0.040, 0.049, 0.058]),
             row("han", 0.005, [0.28, 0.29, 0.30]), row("han", 10.0, [0.118, 0.189, 0.260])]
    cells = lead_cells(found)
    assert [c.resolves for c in cells] == [True, False]
    said = lead_sentence(cells)
    assert "from 1 of 2 starts" in said and "v = 10 (HAN)" in said and "every start" not in said


def test_the_tau_beside_its_null_is_on_the_same_documents():
    """A side-by-side pair covers the same documents: in every recorded run of the sweep, the
    attention's tau on documents of two or more sentences and its null's have the same count."""
    from hierattn.experiments.results import RESULTS, recorded
    from hierattn.experiments.spec import load_experiments

    pairs = 0
    for e in load_experiments().values():
        if not (e.group.endswith("-start") or e.group == "epochs"):
            continue
        for r in recorded(RESULTS, e):
            taus = (r.attention or {}).get("taus", {})
            for reference in ("leave-one-out", "integrated gradients"):
                attention = taus.get(f"tau {reference}: attention, multi-sentence")
                null = taus.get(f"tau {reference}: sentence x even words")
                assert (attention is None) == (null is None), (r.experiment, r.seed)
                if attention:
                    assert attention["documents"] == null["documents"], (r.experiment, r.seed, reference)
                    pairs += 1
    assert pairs >= 96  # 48 runs of the sweep, two references each
