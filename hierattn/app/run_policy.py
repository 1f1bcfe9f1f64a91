"""Who may start, replace, see and keep the Train page's runs: the rules a server shared by a
class holds its visitors to, around the training processes of ``training.jobs``.

``JobManager`` keeps the jobs of one app process (shared by every browser session), caps how many
run at once and refuses two that write one checkpoint, counting the runs of every server process
of the app (``training.run_claims``). A run started by a visitor (``app.visitors``: a browser) is
theirs: only they replace its checkpoint or see its held-out documents, each visitor trains a
bounded number of runs and keeps a bounded number of checkpoints, and the run stops past its time
budget or once its visitor has left, unless it was marked to keep going. A server for one person
(``HIERATTN_SINGLE_USER=1``) lifts the rules on replacing and on held-out documents.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hierattn import limits
from hierattn.app import app_store
from hierattn.training import run_claims
from hierattn.training.jobs import TrainingJob
from hierattn.training.run_names import JobError

MAX_RUNNING = 2  # concurrent training jobs per app (all its server processes); the page says so


def single_user() -> bool:
    """HIERATTN_SINGLE_USER=1: a server for one person, who may replace any checkpoint from the page."""
    return os.environ.get("HIERATTN_SINGLE_USER", "").strip() == "1"


@dataclass
class PageRun:
    """A run started from the page: the visitors who started it, whether it goes on after they
    leave, and ``present`` (visitor -> whether any tab of theirs is still open; None: always)."""
    owners: set[str]
    keep_going: bool = False
    present: Callable[[str], bool] | None = None
    last_seen: float | None = None  # time.monotonic() when one of its visitors was last connected

    def stop_reason(self, job: TrainingJob) -> str:
        """Why the run stops now: past its time budget (``limits.RUN_SECONDS``), or left by its
        visitors for longer than ``limits.RUN_AWAY_SECONDS`` unless it was marked to keep going;
        "" while it goes on."""
        now = time.monotonic()
        if self.last_seen is None or self.present is None or any(self.present(o) for o in list(self.owners)):
            self.last_seen = now
        budget, away = limits.RUN_SECONDS, limits.RUN_AWAY_SECONDS
        if time.time() - job.started > budget.value:
            return (f"it reached the time budget of a run started from the page "
                    f"({budget.value / 60:,.0f} min; set {budget.variable} to raise it)")
        if not self.keep_going and now - self.last_seen > away.value:
            return f"its visitor left more than {away.value / 60:,.0f} min ago and it was not marked to keep going"
        return ""


class JobManager:
    """The jobs of one app process, shared by every session (the app holds one, ``train_form.job_manager``)."""

    def __init__(self, max_running: int = MAX_RUNNING, present=None):
        self.max_running = max_running
        self.present = present  # visitor -> whether any tab of theirs is still open (the app's)
        self._jobs: dict[str, TrainingJob] = {}
        self._page_runs: dict[str, PageRun] = {}  # job id -> its visitors' side, for a run of the page
        self._lock = threading.Lock()

    def owners(self, job: TrainingJob) -> set[str]:
        """The visitors who started ``job`` (none: the command line or a test started it)."""
        run = self._page_runs.get(job.id)
        return set(run.owners) if run else set()

    def made_by(self, out: Path, session: str | None) -> bool:
        """Whether a run of ``session`` on this server wrote the checkpoint at ``out``."""
        return session is not None and (any(
            session in self.owners(j) and j.out.resolve() == out.resolve() and j.metrics for j in self._jobs.values())
            or app_store.owner_of(out) == session)  # another worker's run, or one before a restart

    def may_replace(self, out: Path, session: str | None) -> bool:
        """A visitor of the page replaces only a checkpoint a run of their own session wrote; the
        shipped ones and other visitors' never (HIERATTN_SINGLE_USER=1: the one person at the
        browser owns the server, and may replace any)."""
        return single_user() or not out.exists() or self.made_by(out, session)

    def start(self, job: TrainingJob, session: str | None = None, keep_going: bool = False,
              share_heldout: bool = False) -> TrainingJob:
        """Start ``job``; ``session``: the page's visitor who starts it (None for the command line
        and tests), held to the page's rules: what they may replace, how many runs at once, how long
        it trains (``keep_going``: on after they leave), and whether other visitors see its held-out
        documents (``share_heldout``). The cap and the checks count the runs of every server process
        of the app (``run_claims``)."""
        with self._lock, run_claims.shared() as claims:
            running = [j for j in self._jobs.values() if j.active]
            elsewhere = claims.others()
            writing = [j.out.resolve() for j in running] + [Path(c.out) for c in elsewhere]
            if job.out.resolve() in writing:
                raise JobError(f"a run named '{job.name}' is training right now; wait for it or choose another name")
            page_run = None
            if session is not None:
                if not self.may_replace(job.out, session):
                    raise JobError(f"'{job.name}' is a checkpoint this session did not train (a shipped one, or "
                                   "another visitor's): the page never replaces it; choose another name")
                if not single_user():
                    self._check_kept(job.out, session)
                mine = sum(session in self.owners(j) for j in running) + sum(session in c.owners for c in elsewhere)
                if limits.RUNS_PER_VISITOR.exceeded(mine + 1):
                    raise JobError(f"you have {mine} run{'s' if mine > 1 else ''} training already: "
                                   + limits.RUNS_PER_VISITOR.message(mine + 1) + "; wait for it or cancel it")
                page_run = PageRun({session}, keep_going, self.present)
            if len(running) + len(elsewhere) >= self.max_running:
                raise JobError(f"{len(running) + len(elsewhere)} runs are training already (at most "
                               f"{self.max_running} at once); wait for one to finish or cancel it")
            if page_run is not None:
                self._page_runs[job.id] = page_run
                job.stop_reason = page_run.stop_reason
                # a visitor's own documents stay theirs unless they share them; the command line's are shared
                job.private_heldout = not share_heldout and not single_user()
            self._jobs[job.id] = job
            claims.claim(job.id, job.out, page_run.owners if page_run else set())
        threading.Thread(target=self._run, args=(job,), name=f"train-{job.name}", daemon=True).start()
        return job

    def _check_kept(self, out: Path, session: str) -> None:
        """The checkpoints a visitor keeps (``limits.CHECKPOINTS_PER_VISITOR``) and all visitors keep
        (``VISITOR_CHECKPOINTS``, ``VISITOR_CHECKPOINTS_MB``), counted in the app-wide store: every
        worker's runs and those before a restart. Replacing one's own checkpoint adds nothing."""
        out = out.resolve()
        rows = [(p, owner, mb) for p, owner, mb in app_store.visitor_checkpoints(out.parent) if p != out]
        kept = {p for p, owner, _ in rows if owner == session} | {
            j.out.resolve() for j in self._jobs.values()
            if session in self.owners(j) and j.metrics and j.out.exists() and j.out.resolve() != out}
        if limits.CHECKPOINTS_PER_VISITOR.exceeded(len(kept) + 1):
            raise JobError(f"you have {len(kept)} checkpoints on this server already: "
                           + limits.CHECKPOINTS_PER_VISITOR.message(len(kept) + 1)
                           + "; replace one of yours (same name, 'Replace my checkpoint')")
        if limits.VISITOR_CHECKPOINTS.exceeded(len(rows) + 1):
            raise JobError(f"the visitors of this server keep {len(rows)} checkpoints already: "
                           + limits.VISITOR_CHECKPOINTS.message(len(rows) + 1)
                           + "; replace one of yours (same name, 'Replace my checkpoint') or ask the teacher")
        if limits.VISITOR_CHECKPOINTS_MB.exceeded(total := sum(mb for _, _, mb in rows)):
            raise JobError("the visitors' checkpoints fill this server's share: "
                           + limits.VISITOR_CHECKPOINTS_MB.message(total)
                           + "; replace one of yours (same name, 'Replace my checkpoint') or ask the teacher")

    def _run(self, job: TrainingJob) -> None:
        try:
            job.run()
            run = self._page_runs.get(job.id)
            if run is not None and job.metrics and job.out.exists():  # a visitor's checkpoint, for every worker
                app_store.record_checkpoint(job.out, sorted(run.owners)[0])
        finally:
            run_claims.release(job.id)

    def get(self, job_id: str | None) -> TrainingJob | None:
        return self._jobs.get(job_id or "")

    def jobs(self) -> list[TrainingJob]:
        return sorted(self._jobs.values(), key=lambda j: j.started, reverse=True)

    def running(self) -> list[TrainingJob]:
        return [j for j in self.jobs() if j.active]
