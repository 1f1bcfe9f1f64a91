"""The Train page's closing message agrees with itself: "stopped early" only where the patience ran out."""
from pathlib import Path

import pytest

from hierattn.data.text import TextConfig
from hierattn.training.jobs import TrainingJob
from hierattn.training.loop import TrainConfig


def _finished(epochs_run: int, best: int, epochs: int = 5, patience: int = 3) -> str:
    job = TrainingJob("run", Path("/tmp/none"), "han", {}, None, TextConfig(4, 8),
                      TrainConfig(epochs=epochs, patience=patience))
    job._report({"epochs_run": epochs_run, "best_epoch": best, "validation_accuracy": 0.7, "test_accuracy": 0.7})
    return job.message


def test_stopped_early_only_when_the_patience_ran_out():
    assert "Stopped early after 4 of 5 epochs: validation accuracy had not improved for 3" in _finished(4, 1)
    message = _finished(4, 4)  # the last epoch was the best: nothing ran out
    assert "Stopped early" not in message and "Ended after 4 of 5 epochs." in message
    assert "Stopped early" not in _finished(5, 2) and "Ended after" not in _finished(5, 2)


def test_the_time_left_counts_the_batches_then_the_validations_and_the_test_at_the_measured_rate(tmp_path):
    """1,000 documents (100 validation, 100 test), 2 epochs of 10 batches of 40, 8 batches done at
    20 documents a second: 12 batches (480 documents) to train, then 2 validations and the test (300
    documents predicted, at about twice the training rate): (480 + 150) / 20 = 31.5 s. Nothing before a
    rate is measured: the time spent reading the data says nothing of the model's speed."""
    from hierattn.data.dataset import Dataset
    from hierattn.data.text import TextConfig
    from hierattn.training.jobs import TrainingJob
    from hierattn.training.loop import TrainConfig

    data = Dataset("toy", ["a b"] * 1000, [0, 1] * 500, ["x", "y"])
    job = TrainingJob("run", tmp_path / "run", "han", {}, data, TextConfig(), TrainConfig(epochs=2, batch_size=40))
    job.status, job.epoch, job.step, job.steps = "running", 1, 8, 10
    assert job.snapshot()["eta_seconds"] is None
    job.docs_per_s = 20.0
    assert job.snapshot()["eta_seconds"] == pytest.approx(31.5)
