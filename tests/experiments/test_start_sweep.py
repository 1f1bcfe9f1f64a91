"""The start sweep's lesson (hierattn/experiments/start_sweep.py) says only what its recorded runs
support: no verdict on accuracy before a start has two seeds."""
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
    assert "the start's doing" in lesson(flat)[0]
    moved = [_row(0.01, [0.720, 0.721, 0.719], [0.005] * 3), _row(1.0, [0.760, 0.761, 0.759], [0.11] * 3)]
    assert "accuracy moves beyond the seeds' spread too" in lesson(moved)[0]
    still = [_row(0.01, [0.72] * 3, [0.05] * 3), _row(1.0, [0.72] * 3, [0.06] * 3)]
    assert "does not simply follow" in lesson(still)[0]
