"""Training jobs for the app: one training process per run, watched by a background thread,
polled by the page, never touching Streamlit.

A ``TrainingJob`` holds everything the page shows (status, progress, per-epoch history, the final
message) behind a lock; the watching thread writes what the process reports, the page reads
``snapshot()``. The process runs the same ``training.train`` the command line runs, its event
callback sending each event back through a queue. Who may start, replace, see or keep a run is
decided by whoever starts it (the app, for the page's runs), which hands the job ``stop_reason``
(asked while it trains) and ``private_heldout``.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize
import queue
import sys
import threading
import time
import traceback
import types
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from hierattn.data.dataset import Dataset
from hierattn.data.split import prepare
from hierattn.data.text import TextConfig
from hierattn.models import display_name
from hierattn.threads import cores, threads_of
from hierattn.training import baselines
from hierattn.training.in_memory import train
from hierattn.training.loop import TrainConfig, TrainEvent
from hierattn.training.playback import WATCHED
from hierattn.training.run_names import JobError, validate_run_name
from hierattn.training.sharpness import mean_self_attention_metrics

MAX_LOSSES = 20_000  # points of a run's live loss curve the server keeps
ACTIVE = ("preparing", "running")

_LIVE: set = set()  # training processes of this app process that have not ended
_LIVE_LOCK = threading.Lock()


def stop_all(timeout: float = 5.0) -> int:
    """End every training process this app process started (the server is shutting down): a
    daemon child is only ended by a normal interpreter exit, and a server stopped by a signal may
    not exit normally. Returns how many were still running."""
    with _LIVE_LOCK:
        running = [p for p in _LIVE if p.is_alive()]
        _LIVE.clear()
    for process in running:
        process.terminate()
    for process in running:
        process.join(timeout)
        if process.is_alive():
            process.kill()
            process.join(timeout)
    return len(running)


@dataclass
class TrainingJob:
    name: str
    out: Path
    model_type: str
    model_config: dict
    dataset: Dataset | None  # handed to the training process at its start, then let go (see ``run``)
    text_config: TextConfig
    config: TrainConfig
    device: str | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    status: str = "preparing"  # preparing -> running -> finished | cancelled | failed
    epoch: int = 0
    step: int = 0
    steps: int = 0
    docs_per_s: float | None = None
    history: list[dict] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)  # every batch, for the live loss curve
    message: str = ""
    metrics: dict = field(default_factory=dict)
    started: float = field(default_factory=time.time)
    finished: float | None = None
    # Shared with the training process: set by the page's Cancel, read by the training loop.
    stop: multiprocessing.synchronize.Event = field(
        default_factory=lambda: multiprocessing.get_context("spawn").Event(), repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _process: multiprocessing.process.BaseProcess | None = field(default=None, repr=False)
    dataset_name: str = ""
    documents: int = 0
    loss_stride: int = 1  # batches per point of ``losses``
    # Set by whoever starts it (None and False: the command line or a test): asked at every poll
    # while it trains, a reason to stop it now ("" while it goes on); whether its held-out documents
    # are kept marked as its starter's own. ``stopped_because``: the reason that stopped it.
    stop_reason: Callable[[TrainingJob], str] | None = field(default=None, repr=False)
    private_heldout: bool = False
    stopped_because: str = ""

    def __post_init__(self):
        if self.dataset is not None:
            self.dataset_name, self.documents = self.dataset.name, len(self.dataset.texts)

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    def cancel(self) -> None:
        self.stop.set()

    def _time_left(self, done_steps: int, total_steps: int) -> float | None:
        """At most the time left at the measured training rate: the batches left, then the validations
        to come and the test (a tenth of the documents each, predicted about twice as fast as trained:
        a forward was 46% of a MiniLM step). None before a rate is measured."""
        if self.status != "running" or not done_steps or not total_steps or not self.docs_per_s:
            return None
        predicting = (self.documents or 0) // 10 * (self.config.epochs - self.epoch + 2) / 2
        return ((total_steps - done_steps) * self.config.batch_size + predicting) / self.docs_per_s

    def snapshot(self) -> dict:
        """A consistent copy of what the page shows."""
        with self._lock:
            done_steps = (self.epoch - 1) * self.steps + self.step if self.epoch else 0
            total_steps = self.config.epochs * self.steps
            elapsed = (self.finished or time.time()) - self.started
            return {"id": self.id, "name": self.name, "status": self.status, "epoch": self.epoch,
                    "epochs": self.config.epochs, "step": self.step, "steps": self.steps,
                    "fraction": done_steps / total_steps if total_steps else 0.0, "docs_per_s": self.docs_per_s,
                    "eta_seconds": self._time_left(done_steps, total_steps), "elapsed_seconds": elapsed,
                    "history": [dict(h) for h in self.history], "losses": list(self.losses),
                    "loss_stride": self.loss_stride, "message": self.message, "metrics": dict(self.metrics),
                    "model_type": self.model_type, "dataset": self.dataset_name, "documents": self.documents,
                    "display_name": display_name(self.model_type, self.model_config),  # "HCAN", as slides name it
                    "stopping": self.stop.is_set(), "cores": cores(),
                    "threads": threads_of(self._process.pid) if self._process and self.status == "running" else None}

    # -- the thread's side ------------------------------------------------------------------
    def _on_event(self, event: TrainEvent) -> None:
        with self._lock:
            if event.kind == "batch":
                self.epoch, self.step, self.steps = event.epoch, event.step, event.steps
                self.docs_per_s = event.docs_per_s
                self.losses.append(event.loss)
                if len(self.losses) > MAX_LOSSES:  # a long run's curve, thinned: every other point
                    self.losses[:] = self.losses[1::2]  # point j: batch (j + 1) * stride
                    self.loss_stride *= 2
            elif event.kind == "epoch":
                self.history.append(dict(event.extra))

    def run(self) -> None:
        """Train in a child process and mirror its progress here until it ends.

        A process, not a thread: training issues thousands of small torch calls per batch, each of
        which must take back the GIL, and the app's own Python work (redrawing the page every
        second) made an in-process run 50-70 times slower than the same run alone.
        """
        context = multiprocessing.get_context("spawn")  # a fresh interpreter: no inherited locks or threads
        events = context.Queue()
        process = context.Process(target=_train_in_child, daemon=True, name=f"train-{self.name}",
                                  args=(self._spec(), events, self.stop))
        try:
            _start_without_the_script(process)
        except Exception as exc:  # e.g. data that cannot be handed to another process
            traceback.print_exc()
            self._finish("failed", f"training could not start: {exc}")
            return
        finally:
            # The process has its copy; the server keeps only the name and the count. An uploaded
            # data set (up to the upload limit) held by every finished job kept memory from coming back.
            self.dataset = None
        self._process = process
        with _LIVE_LOCK:
            _LIVE.add(process)
        outcome = None
        while outcome is None:
            self._watch()
            try:
                kind, payload = events.get(timeout=0.25)
            except queue.Empty:
                if not process.is_alive():
                    outcome = ("crashed", process.exitcode)
                continue
            if kind == "prepared":
                with self._lock:
                    self.status = "running"
            elif kind == "event":
                self._on_event(TrainEvent(**payload))
            else:
                outcome = (kind, payload)
        process.join(timeout=10)
        with _LIVE_LOCK:
            _LIVE.discard(process)
        kind, payload = outcome
        if kind == "crashed":
            self._finish("failed", f"the training process stopped unexpectedly (exit code {payload}); nothing "
                                   "already in checkpoints/ was changed")
        elif kind == "error":
            self._finish("failed", f"training failed: {payload}")
        else:
            self._report(payload)

    def _watch(self) -> None:
        """Stop the run, after its current batch, once ``stop_reason`` gives a reason."""
        if self.stop_reason is None or self.stop.is_set():
            return
        self.stopped_because = self.stop_reason(self)
        if self.stopped_because:
            self.stop.set()

    def _spec(self) -> dict:
        return {"model_type": self.model_type, "model_config": self.model_config, "dataset": self.dataset,
                "text_config": self.text_config, "config": self.config, "out": str(self.out), "device": self.device,
                "private_heldout": self.private_heldout}

    def _report(self, metrics: dict) -> None:
        if not metrics:
            why = f"Stopped because {self.stopped_because}" if self.stopped_because else "Cancelled"
            self._finish("cancelled", f"{why} before the first epoch finished: nothing was written.")
        elif self.stop.is_set():
            why = f"Stopped because {self.stopped_because}" if self.stopped_because else "Cancelled"
            self._finish("cancelled", f"{why} after epoch {metrics['epochs_run']}. The best epoch so far "
                                      f"(epoch {metrics['best_epoch']}, validation accuracy "
                                      f"{metrics['validation_accuracy']:.1%}) was saved as '{self.name}'.", metrics)
        else:
            early = ""
            stopped_early = metrics["epochs_run"] < self.config.epochs  # the only way a finished run ends early
            if stopped_early:
                stale = metrics.get("validations_since_best", metrics["epochs_run"] - metrics["best_epoch"])
                early = (f" Stopped early after {metrics['epochs_run']} of {self.config.epochs} epochs: no "
                         f"validation in the last {stale} beat epoch {metrics['best_epoch']} (a higher accuracy, or "
                         f"the same with a lower loss), and the patience is {self.config.patience}.")
            recorded = metrics.get("baselines", {})
            against = baselines.sentence(metrics["test_accuracy"], recorded)
            kind, said = baselines.judge(metrics["validation_accuracy"], recorded, "validation",
                                         metrics.get("split_sizes", {}).get("validation"))
            verdict = ""
            answered = [label for label, n in metrics.get("validation_predicted", {}).items() if n]
            if len(answered) == 1 and len(metrics.get("validation_predicted", {})) > 1:
                kind = "one class"  # whatever its accuracy beside the baselines, it has learned no distinction
                verdict = (f" Every validation prediction is '{answered[0]}': the model answers one class whatever "
                           "the text, and has learned nothing that tells the classes apart. More optimiser steps "
                           "(more epochs, a smaller batch), a larger learning rate or more data may help.")
            elif kind == "beats":
                verdict = f" Beside the best baseline: {said}."
            elif kind != "unknown":
                # after an early stop more epochs would not have helped: validation had stopped improving
                verdict = (f" Not a clear win: {said}. More data{'' if stopped_early else ', more epochs'} or a "
                           "smaller model may help; a larger validation split measures it more closely.")
            metrics["baseline_verdict"] = kind
            self._finish("finished", f"Finished: epoch {metrics['best_epoch']} of {metrics['epochs_run']} was best "
                                     f"(validation {metrics['validation_accuracy']:.1%}, test "
                                     f"{metrics['test_accuracy']:.1%}" + (f"; on test, {against}" if against else "")
                         + f"); saved as '{self.name}'.{early}{verdict}", metrics)

    def _finish(self, status: str, message: str, metrics: dict | None = None) -> None:
        with self._lock:
            self.status, self.message, self.finished = status, message, time.time()
            self.metrics = metrics or {}


def make_job(name: str, root: Path, model_type: str, model_config: dict, dataset: Dataset, text_config: TextConfig,
             config: TrainConfig, replace_existing: bool = False, device: str | None = None) -> TrainingJob:
    """Validate the name and the model config, and build a job (not started)."""
    from hierattn.budget import model_problem
    from hierattn.models.footprint import config_problems

    out = validate_run_name(name, root, replace_existing)
    try:  # what opening its checkpoint would refuse is not trained
        problem = model_problem(model_type, {"vocab_size": 10, "num_classes": len(dataset.label_names),
                                             **model_config}, text_config)
    except (TypeError, ValueError, RuntimeError) as exc:
        problem = str(exc)
    if problem:
        raise JobError(f"this model configuration is not valid: {problem}")
    problems = config_problems(TrainConfig, asdict(config))
    if problems:
        raise JobError("these training settings are not valid: " + "; ".join(problems))
    return TrainingJob(name, out, model_type, dict(model_config), dataset, text_config, replace(config), device)


_MAIN_SWAP = threading.Lock()


def _start_without_the_script(process) -> None:
    """Start a spawned process without it re-running the page script first.

    Streamlit runs every script as a fake ``__main__`` module whose ``__file__`` is the script, and
    a spawned child re-executes ``__main__.__file__`` before its target (to unpickle objects
    defined there). The child would run a page script in bare mode: slow at best, and a crash when
    another session's script is ``__main__`` at that moment (the 10-explorers test caught Explore's
    script failing in a training child). The target lives in this module, so the child needs
    nothing from ``__main__``: it sees a blank one while the process starts.
    """
    with _MAIN_SWAP:
        script = sys.modules.get("__main__")
        blank = types.ModuleType("__main__")
        sys.modules["__main__"] = blank
        try:
            process.start()
        finally:
            if sys.modules.get("__main__") is blank:  # unless a script run has installed its own since
                sys.modules["__main__"] = script


def _train_in_child(spec: dict, events, stop) -> None:
    """The training process: the CLI's loop, its events sent back to the app through ``events``."""
    try:
        data = prepare(spec["dataset"], spec["text_config"], spec["config"].seed)
        events.put(("prepared", None))
        metrics = {}
        if not stop.is_set():
            metrics = train(spec["model_type"], spec["model_config"], data, spec["text_config"], spec["config"],
                            spec["out"], on_event=lambda e: events.put(("event", asdict(e))), stop=stop,
                            device=spec["device"], after_epoch=mean_self_attention_metrics, watch=WATCHED,
                            private_heldout=spec.get("private_heldout", False))
        events.put(("done", metrics))
    except Exception as exc:  # the page shows the message; the traceback goes to the server log
        traceback.print_exc()
        events.put(("error", str(exc)))
