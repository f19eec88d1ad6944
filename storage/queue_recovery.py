"""Runs given back to the queue: by a worker that stops cleanly, or recovered when it died.

``requeue_run`` is the clean hand-back. A worker that dies leaves its run ``running``:
``recover_stale_runs`` finds it by its stale heartbeat, ``recover_dead_runs`` at once by its
claimer id (``worker_identity``: host and pid, read back by ``parse_worker_id``). A recovered run
goes back to the queue, or fails "worker lost" after ``MAX_ATTEMPTS`` claims, or ends cancelled
if a cancel was pending. ``storage.queue`` re-exports all of these.
"""

from __future__ import annotations

import math
import os
import socket
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import load_only

from storage.db import Database
from storage.models import Run, utcnow

# A run lost by its worker is re-queued while it has been claimed fewer times than this.
MAX_ATTEMPTS = 2
WORKER_LOST_ERROR = "worker lost"
# A live run heartbeats every half second. A reader calls a running run silent after this long:
# twice a worker's default --stale-after, so a run a worker is about to recover is not called
# silent first, and a few seconds of clock difference between hosts never matter.
SILENT_AFTER_S = 120.0


def worker_identity(prefix: str = "", suffix: str | None = None) -> str:
    """This process's claimer id: ``[prefix:]HOST:PID[:suffix]`` (e.g. ``gpu7:4242:gpu0``,
    ``cli:laptop:999``). The host and pid let a worker on the same host see at once that the
    claimer of a running run is gone (``recover_dead_runs``) instead of waiting for its heartbeat
    to go stale. Hosts sharing one database must have distinct host names."""
    parts = [prefix] if prefix else []
    parts += [socket.gethostname(), str(os.getpid())]
    if suffix:
        parts.append(suffix)
    return ":".join(parts)


def parse_worker_id(worker_id: str | None) -> tuple[str, int] | None:
    """``(host, pid)`` of a claimer id written by ``worker_identity``, or None if it is not one."""
    if not worker_id:
        return None
    parts = worker_id.split(":")
    if parts[0] == "cli":
        parts = parts[1:]
    if len(parts) < 2 or not parts[1].isdigit() or not parts[0]:
        return None
    return parts[0], int(parts[1])


def select_queue_columns() -> Any:
    """``select(Run)`` loading only the queue's own columns: the JSON columns (spec, dims,
    environment) may hold anything someone wrote into the database, and finishing or
    re-queueing a run must not depend on decoding them."""
    return select(Run).options(
        load_only(Run.id, Run.status, Run.worker_id, Run.attempts, Run.cancel_requested, Run.device)
    )


def requeue_run(db: Database, run_id: int, worker_id: str) -> bool:
    """Give a running run back to the queue (a worker shutting down cleanly); True if it did.

    A clean hand-back is not a failed attempt, so the claim it made is not counted. A run whose
    cancel was already requested is cancelled instead of re-queued.
    """
    with db.session(write=True) as session:
        run = session.scalars(
            select_queue_columns()
            .where(Run.id == run_id, Run.status == "running", Run.worker_id == worker_id)
            .with_for_update()
        ).one_or_none()
        if run is None:
            return False
        hand_back(run)
        return True


def hand_back(run: Run) -> None:
    """A run given back without fault (its worker stopped cleanly, Slurm requeued its job):
    queued again without counting the claim, or cancelled if a cancel was pending."""
    if run.cancel_requested:
        _end_cancelled(run)
    else:
        _back_to_queue(run)
        run.attempts = max(run.attempts - 1, 0)


def recover_stale_runs(db: Database, stale_after_s: float) -> list[int]:
    """Deal with running runs whose worker stopped beating ``stale_after_s`` ago or more.

    A run claimed fewer than ``MAX_ATTEMPTS`` times goes back to the queue; otherwise it fails
    with "worker lost" (a run that keeps killing its worker must not loop forever). A stale run
    whose cancel had been requested ends as cancelled. Returns the ids of the runs changed.
    Safe to call from every worker at once.
    """
    cutoff = utcnow() - timedelta(seconds=stale_after_s)
    # Rows another recoverer is already handling are skipped (SQLite has no row locks; its
    # BEGIN IMMEDIATE already serialises recoverers).
    stale = (
        select_queue_columns()
        # Slurm runs are the Slurm reconciler's (engine/slurm/reconcile.py): Slurm knows
        # whether their job lives, a heartbeat does not.
        .where(Run.status == "running", Run.heartbeat_at < cutoff, Run.executor.is_(None))
        .order_by(Run.id)
        .with_for_update(skip_locked=True)
    )
    changed: list[int] = []
    with db.session(write=True) as session:
        for run in session.scalars(stale):
            _recover(run)
            changed.append(run.id)
    return changed


def recover_dead_runs(db: Database, host: str, is_alive: Callable[[int], bool]) -> list[int]:
    """Recover at once the running runs claimed by a process of ``host`` that is gone.

    A worker killed with -9 on this host leaves its run ``running`` with a heartbeat that goes
    stale only after ``stale_after_s``; the claimer id (``worker_identity``: host and pid) says
    which process to ask about, and ``is_alive(pid)`` (the engine passes a pid check) answers.
    Such runs are handled as ``recover_stale_runs`` handles stale ones. Returns the ids changed.
    """
    with db.session() as session:
        claims = session.execute(
            select(Run.id, Run.worker_id).where(
                Run.status == "running", Run.worker_id.like(f"%{host}:%"),
                Run.executor.is_(None),  # Slurm's runs: see recover_stale_runs
            )
        ).all()
    dead: dict[int, str] = {}
    for run_id, worker_id in claims:
        claimer = parse_worker_id(worker_id)
        if claimer is not None and claimer[0] == host and not is_alive(claimer[1]):
            dead[run_id] = worker_id
    if not dead:
        return []
    changed: list[int] = []
    # Only the dead claimers' rows are locked: live workers' heartbeats never wait on this.
    with db.session(write=True) as session:
        rows = session.scalars(
            select_queue_columns()
            .where(Run.id.in_(list(dead)), Run.status == "running")
            .order_by(Run.id)
            .with_for_update(skip_locked=True)
        )
        for run in rows:
            if run.worker_id == dead[run.id]:  # not re-claimed since we looked
                _recover(run)
                changed.append(run.id)
    return changed


def _recover(run: Run) -> None:
    """A run whose worker is gone: cancelled if a cancel was pending, failed "worker lost" after
    ``MAX_ATTEMPTS`` claims, else back to the queue."""
    if run.cancel_requested:
        _end_cancelled(run)
    elif run.attempts >= MAX_ATTEMPTS:
        run.status = "failed"
        run.error = WORKER_LOST_ERROR
        run.finished_at = utcnow()
    else:
        _back_to_queue(run)


def _back_to_queue(run: Run) -> None:
    run.status = "queued"
    run.worker_id = None
    run.started_at = None
    run.heartbeat_at = None
    run.progress_variant = None
    run.progress_phase = "queued"
    run.progress_fraction = None


def _end_cancelled(run: Run) -> None:
    run.status = "cancelled"
    run.finished_at = utcnow()


def silent_for_s(status: Any, heartbeat_at: Any, now: datetime | None = None) -> float | None:
    """Seconds since a ``running`` run last heartbeat, when over ``SILENT_AFTER_S``; else None.

    ``heartbeat_at`` as read back: an aware or naive (UTC) datetime or pandas Timestamp; a value
    that is none of these (NaT, text a hostile row holds) gives None, as does any other status.
    """
    if status != "running" or not isinstance(heartbeat_at, datetime):
        return None
    try:
        beat = heartbeat_at if heartbeat_at.tzinfo else heartbeat_at.replace(tzinfo=UTC)
        age = ((now or utcnow()) - beat).total_seconds()
    except (TypeError, ValueError, OverflowError):
        return None
    return age if math.isfinite(age) and age > SILENT_AFTER_S else None


def silence_note(seconds: float, slurm: bool = False) -> str:
    """What a reader is told about a running run silent for ``seconds`` (``silent_for_s``):
    how long, what it likely means, and what settles it."""
    minutes = seconds / 60
    span = (f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"
            if minutes < 48 * 60 else f"{minutes / 1440:,.0f} days")
    who = ("the Slurm reconciler ends it from its job's state "
           "(python -m engine slurm reconcile)" if slurm else
           "a worker on this database recovers it: re-queued, or failed after "
           f"{MAX_ATTEMPTS} claims (python -m engine worker --once)")
    return (f"no heartbeat for {span}: the process running it seems to have stopped without "
            f"ending the run; {who}")
