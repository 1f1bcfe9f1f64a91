"""The start sweep's training-length axis (hierattn/experiments/start_length.py): the registry's
10-epoch runs at the shipped starts, beside the sweep's 3-epoch rows at the same start."""
import pytest

from hierattn.experiments import start_length


@pytest.mark.parametrize("dataset", ["tweets", "bbc-news"])
def test_each_model_has_both_lengths_at_its_shipped_start_with_three_seeds(dataset):
    rows = start_length.length_rows(dataset)
    assert [(r.label, r.variance, r.epochs) for r in rows] == [("HCAN", 1.0, 3), ("HCAN", 1.0, 10),
                                                                ("HAN", 0.005, 3), ("HAN", 0.005, 10)]
    assert all(r.seeds == 3 for r in rows)
    assert all(1 <= b <= r.epochs for r in rows for b in r.best_epochs)  # the epoch kept, counted from 1
    table = start_length.length_table(dataset)
    for model in ("hcan", "han"):
        times, short, long = start_length.length_factor(rows, model)
        assert times >= 1 and f"after {short.epochs} epochs and" in table
        said = start_length.start_and_length(dataset, model)
        assert f"{times:.1f} times" in said and "3 epochs each" in said
