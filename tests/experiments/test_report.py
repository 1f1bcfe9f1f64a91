"""The results and ordering tables of docs/RESULTS.md are exactly what ``report`` makes of results/, and the
report reads recorded predictions into verdicts."""
import numpy as np

from hierattn.experiments.report import (
    END,
    README,
    orderings_table,
    readme_blocks,
    readme_sections,
    replace_sections,
    results_table,
)
from hierattn.experiments.results import SeedResult, encode, write_result, write_test_labels
from hierattn.experiments.spec import load_experiments


def test_the_readme_holds_what_report_writes():
    blocks = readme_blocks(README.read_text(encoding="utf-8"))
    sections = readme_sections()
    assert set(sections) <= set(blocks), f"README lacks the sections {set(sections) - set(blocks)}"
    for key, text in sections.items():
        assert blocks[key] == text, f"README section {key} is not what 'python -m hierattn report' writes"


def test_replace_sections_rewrites_only_between_the_markers():
    text = f"intro\n<!-- report:a -->\nold\n{END}\nmiddle\n<!-- report:b -->\nkept\n{END}\nend\n"
    out = replace_sections(text, {"a": "new\n"})
    assert out == f"intro\n<!-- report:a -->\nnew\n{END}\nmiddle\n<!-- report:b -->\nkept\n{END}\nend\n"
    assert readme_blocks(out) == {"a": "new\n", "b": "kept\n"}


def _record(root, experiment, seed, correct_share, labels, rng):
    right = rng.random(len(labels)) < correct_share
    predicted = [t if ok else (t + 1) % 3 for t, ok in zip(labels, right)]
    write_result(root, SeedResult(experiment.name, seed, experiment.digest(), correct_share, float(np.mean(right)),
                                  encode(predicted), 10.0, 12.0, 0.3, 3, 3, 1000, "CPU: test, 1 threads",
                                  [[5.0, 0.5], [10.0, 0.6]]))


def _record_rows(root, experiments, shares: dict, labels, rng):
    """Three seeds of each row, each right on about ``shares[row]`` of the test documents."""
    for seed in (1, 2, 3):
        for row, share in shares.items():
            _record(root, experiments[f"tweets/{row}"], seed, share, labels, rng)


def _ordering(table: str, start: str) -> str:
    return next(line for line in table.splitlines() if line.startswith(start))


def test_orderings_read_recorded_predictions_into_a_verdict(tmp_path):
    experiments = load_experiments()
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 3000).tolist()
    write_test_labels(tmp_path, "tweets", list(range(3000)), labels)
    _record_rows(tmp_path, experiments, {"hcan": 0.70, "han": 0.76, "kimcnn": 0.755}, labels, rng)
    table = orderings_table("tweets", experiments, tmp_path)
    hcan_han = _ordering(table, "| HCAN >= HAN ")
    assert "**reversed**" in hcan_han and "(n=3)" in hcan_han and "| equal |" in hcan_han
    assert "**within noise**" in _ordering(table, "| HAN >= CNN ")
    assert "not recorded yet" in next(line for line in table.splitlines() if "SANet" in line)
    results = results_table("tweets", experiments, tmp_path)
    han_row = next(line for line in results.splitlines() if "`han`" in line)
    assert "| 3 of 3 |" in han_row and "±" in han_row


def test_a_result_from_another_spec_is_not_counted(tmp_path):
    experiments = load_experiments()
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 3, 500).tolist()
    write_test_labels(tmp_path, "tweets", list(range(500)), labels)
    han = experiments["tweets/han"]
    _record(tmp_path, han, 1, 0.7, labels, rng)
    stale = tmp_path / "tweets/han/seed-1.json"
    stale.write_text(stale.read_text().replace(han.digest(), "000000000000"))
    row = next(line for line in results_table("tweets", experiments, tmp_path).splitlines() if "`han`" in line)
    assert "| 0 of 3 |" in row


def test_the_committed_figures_are_what_report_draws():
    from hierattn.experiments.figures import FIGURES, figures

    for name, svg in figures().items():
        path = FIGURES / name
        assert path.exists() and path.read_text(encoding="utf-8") == svg, f"docs/figures/{name} is stale"


def test_sweeps_and_curves_read_the_recorded_results(tmp_path):
    from hierattn.experiments.figures import curves, sweep, sweep_table

    experiments = load_experiments()
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 3, 400).tolist()
    write_test_labels(tmp_path, "bbc-news", list(range(400)), labels)
    write_test_labels(tmp_path, "tweets", list(range(400)), labels)
    _record(tmp_path, experiments["bbc-news/lstm-q40"], 1, 0.6, labels, rng)
    _record(tmp_path, experiments["bbc-news/halstm-8-q120"], 1, 0.8, labels, rng)
    xs, series = sweep("bbc-news", "length", experiments, tmp_path)
    assert xs == [20, 40, 60, 80, 100, 120]
    assert series["LSTM"][1] is not None and series["LSTM"][0] is None and series["HA-LSTM-8"][5] is not None
    assert set(series) == {"LSTM", "BiLSTM", "ON-LSTM", "HA-LSTM-4", "HA-LSTM-8", "HA-LSTM-12"}
    table = sweep_table(xs, series, "q")
    assert "| q = 20 |" in table and "| LSTM | — |" in table
    _record(tmp_path, experiments["tweets/mahnn-k6"], 1, 0.7, labels, rng)
    xs, series = sweep("tweets", "mahnn-filters", experiments, tmp_path)
    assert xs == [2, 4, 6, 8, 10, 12, 14] and series["MahNN-3"][2] is not None
    for seed in (1, 2):
        _record(tmp_path, experiments["tweets/han"], seed, 0.7, labels, rng)  # curves [[5, .5], [10, .6]] each
    assert curves("tweets", experiments, tmp_path) == {"HAN": ([5.0, 10.0], [0.5, 0.6])}


def test_the_time_still_to_run_is_each_rows_recorded_pace(tmp_path):
    """The README states how long the unrecorded runs will take: a row at its own recorded mean, a
    sweep point with nothing recorded at its model's mean on the data set."""
    from hierattn.experiments.report import _remaining_hours
    from hierattn.experiments.results import recorded

    experiments = load_experiments()
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 3, 100).tolist()
    write_test_labels(tmp_path, "tweets", list(range(100)), labels)
    mahnn = experiments["tweets/mahnn-3"]
    for seed in mahnn.seeds[:2]:
        _record(tmp_path, mahnn, seed, 0.7, labels, rng)
    sweep = [e for e in experiments.values() if e.dataset == "tweets" and e.model == "mahnn" and e.group != "results"]
    assert sweep, "the MahNN Figure 4 sweeps are registered"
    rows = [mahnn, *sweep]
    by_row = {e.name: recorded(tmp_path, e) for e in rows}
    pace = by_row[mahnn.name][0].total_seconds
    expected = (len(mahnn.seeds) - 2 + sum(len(e.seeds) for e in sweep)) * pace / 3600
    assert abs(_remaining_hours(rows, by_row) - expected) < 1e-9 and expected > 0
    text = results_table("tweets", experiments, tmp_path)
    assert "at the pace recorded so far, about" in text


def test_an_ordering_with_a_side_that_has_not_learned_says_so(tmp_path):
    """A side no better than always answering the largest class is named in the verdict; a side
    well above it is not."""
    from hierattn.experiments.report import beats_majority, majority_rate

    experiments = load_experiments()
    labels = [0] * 600 + [1] * 200 + [2] * 200  # the largest class: 60%
    write_test_labels(tmp_path, "tweets", list(range(1000)), labels)
    assert majority_rate(encode(labels)) == 0.6
    always_zero = np.array([[t == 0 for t in labels]] * 3)
    assert not beats_majority(always_zero, encode(labels))
    assert beats_majority(np.array([[True] * 900 + [False] * 100] * 3), encode(labels))
    _record_rows(tmp_path, experiments, {"han": 0.9, "kimcnn": 0.5, "hcan": 0.85}, labels, np.random.default_rng(3))
    table = orderings_table("tweets", experiments, tmp_path)
    assert ("not a test of the paper: Kim CNN does not beat always answering the largest class (60.0%)"
            in _ordering(table, "| HAN >= CNN "))
    assert "largest class" not in _ordering(table, "| HCAN >= HAN ")
