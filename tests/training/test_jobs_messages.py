"""The Train page's closing message agrees with the run: a run that ends before its epochs says why,
"best epoch" and the patience follow one rule, and after an early stop the advice is not more epochs."""
from pathlib import Path

import pytest

from hierattn.data.text import TextConfig
from hierattn.training.jobs import TrainingJob
from hierattn.training.loop import TrainConfig


def _finished(epochs_run: int, best: int, epochs: int = 5, patience: int = 3, **metrics) -> str:
    job = TrainingJob("run", Path("/tmp/none"), "han", {}, None, TextConfig(4, 8),
                      TrainConfig(epochs=epochs, patience=patience))
    job._report({"epochs_run": epochs_run, "best_epoch": best, "validation_accuracy": 0.7, "test_accuracy": 0.7,
                 "validations_since_best": epochs_run - best, **metrics})
    return job.message


def test_a_run_that_ends_before_its_epochs_says_why():
    message = _finished(4, 1)
    assert "Stopped early after 4 of 5 epochs: no validation in the last 3 beat epoch 1" in message
    assert "the patience is 3" in message
    assert "Stopped early" not in _finished(5, 2) and "Stopped early" not in _finished(5, 5)


def test_the_best_epoch_and_the_patience_follow_one_rule():
    """Ties in accuracy go to the lower loss, for the best epoch and for the patience alike: a run
    whose accuracy holds while its loss falls goes on, and its best epoch is the latest."""
    from hierattn.training.loop import Progress

    falling = Progress()
    for epoch, loss in enumerate((0.9, 0.8, 0.7, 0.6), start=1):
        falling.epoch = epoch + 1  # at an epoch's end the counter has moved on
        falling.observe(0.8, loss)
    assert falling.best_epoch == 4 and falling.stale == 0
    rising = Progress()
    for epoch, loss in enumerate((0.6, 0.7, 0.8, 0.9), start=1):
        rising.epoch = epoch + 1
        rising.observe(0.8, loss)
    assert rising.best_epoch == 1 and rising.stale == 3  # the patience of 3 ran out after epoch 4


def test_after_an_early_stop_the_advice_is_not_more_epochs(monkeypatch):
    from hierattn.training import baselines

    monkeypatch.setattr(baselines, "judge", lambda *a, **k: ("within noise", "within noise of always 'pos'"))
    monkeypatch.setattr(baselines, "sentence", lambda *a, **k: "")
    early, full = _finished(8, 3, epochs=10, patience=5), _finished(10, 9, epochs=10, patience=5)
    assert "Not a clear win" in early and "more epochs" not in early and "More data or a smaller model" in early
    assert "More data, more epochs or a smaller model" in full


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
