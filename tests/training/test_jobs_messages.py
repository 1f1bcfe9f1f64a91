"""The Train page's closing message agrees with itself: "stopped early" only where the patience ran out."""
from pathlib import Path

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
