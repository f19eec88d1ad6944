"""The run queue: the ``runs`` table, claimed and kept alive by workers.

Life of a run::

    enqueue_run -> queued -> claim_next_run / claim_run -> running -> finish_run -> done
                     |  ^                                   |  |                   failed
    request_cancel   |  +- requeue_run, recover_stale_runs -+  |                   cancelled
                     v                                         +- request_cancel: the flag
                 cancelled                                        cancel_requested; heartbeat
                                                                  answers False, the worker
                                                                  stops and finishes the run

Claims rely on the database's own locking, never on a home-made lock: PostgreSQL takes the
oldest queued row with ``SELECT ... FOR UPDATE SKIP LOCKED`` (workers never wait on each other);
SQLite does it in one conditional ``UPDATE ... RETURNING`` inside a ``BEGIN IMMEDIATE``
transaction (SQLite has a single writer, so the statement is atomic by construction).

Every timestamp comes from ``utcnow()`` (Python, aware UTC) so staleness is computed against the
same clock that wrote the heartbeats, whatever the database's own clock or time zone.

Giving a run back to the queue (a worker that stops cleanly, or one that died) lives in
``storage/queue_recovery.py``; its functions are re-exported here, so ``storage.queue`` stays
the one name for the whole queue.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Text, cast, select, update

from contract.text import check_note
from storage.db import Database
from storage.models import FINAL_RUN_STATUSES, Run, RunTag, utcnow
from storage.queue_recovery import (
    MAX_ATTEMPTS,
    WORKER_LOST_ERROR,
    parse_worker_id,
    recover_dead_runs,
    recover_stale_runs,
    requeue_run,
    select_queue_columns,
    silence_note,
    silent_for_s,
    worker_identity,
)
from storage.results import (
    RunNotFound,
    apply_environment,
    build_variant_result,
    json_safe,
    normalize_tags,
    put_variant_result,
    require_run,
)
from storage.workers import Capabilities, servable

_NO_SYNC = {"synchronize_session": False}

__all__ = [
    "MAX_ATTEMPTS",
    "WORKER_LOST_ERROR",
    "RunNotFound",
    "claim_next_run",
    "claim_run",
    "enqueue_run",
    "finish_run",
    "heartbeat",
    "parse_worker_id",
    "recover_dead_runs",
    "recover_stale_runs",
    "silence_note",
    "silent_for_s",
    "request_cancel",
    "requeue_run",
    "worker_identity",
]


def _dims_of(spec: Mapping[str, Any]) -> dict[str, Any]:
    dims = spec.get("dims") or {}
    if not isinstance(dims, Mapping):
        raise ValueError(f"spec['dims'] must be an object, got {type(dims).__name__}")
    return dict(dims)


def _requirement(spec: Mapping[str, Any], key: str, limit: int) -> str | None:
    """A run's hardware requirement copied into its column (None or "" means any)."""
    value = spec.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise ValueError(f"spec[{key!r}] must be a string of at most {limit} characters")
    return value


def enqueue_run(
    db: Database, spec: Mapping[str, Any], *, tags: Iterable[str] = (), note: str = "",
    executor: str | None = None,
) -> int:
    """Queue a RunSpec (stored verbatim) and return the new run's id.

    ``model``, ``dims``, ``dtype`` and ``device`` are copied out of the spec into columns so the
    runs page can filter on them without parsing JSON; ``require_gpu`` and ``require_torch``
    too, so that only a worker that can serve the run claims it (``storage.workers.servable``).
    ``executor="slurm"``: the run waits for its own Slurm job (storage/slurm_jobs.py), never
    for a worker.
    """
    if executor not in (None, "slurm"):
        raise ValueError(f"executor must be None or 'slurm', got {executor!r}")
    if not isinstance(spec, Mapping):
        raise TypeError(f"spec must be a dict, got {type(spec).__name__}")
    model = spec.get("model")
    if not isinstance(model, str) or not model:
        raise ValueError("spec['model'] must be a non-empty string")
    check_note(note or "")
    run = Run(
        created_at=utcnow(),
        status="queued",
        model=model,
        dims=_dims_of(spec),
        dtype=str(spec.get("dtype") or "float32"),
        device=str(spec.get("device") or "cpu"),
        spec=json_safe(dict(spec)),
        require_gpu=_requirement(spec, "require_gpu", 256),
        require_torch=_requirement(spec, "require_torch", 64),
        executor=executor,
        note=note or "",
        attempts=0,
        cancel_requested=False,
        progress_phase="queued",
    )
    run.tags = [RunTag(tag=tag) for tag in normalize_tags(tags)]
    with db.session(write=True) as session:
        session.add(run)
        session.flush()
        return run.id


def _claim_values(worker_id: str) -> dict[str, Any]:
    now = utcnow()
    return {
        "status": "running",
        "worker_id": worker_id,
        "started_at": now,
        "heartbeat_at": now,
        "attempts": Run.attempts + 1,
        "progress_variant": None,
        "progress_phase": None,
        "progress_fraction": None,
    }


def _decode_spec(text: Any) -> Any:
    """The stored spec, decoded by hand: a row rewritten with text that is not JSON (or JSON too
    deep or too large to decode) must reach the worker's validator, which fails the run with the
    reason, rather than raise inside the claim (which would roll it back: the next poll would
    claim the same broken row again, forever)."""
    if not isinstance(text, (str, bytes)):
        return text
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text  # not a JSON object: the validator says so


def _oldest_queued(caps: Capabilities | None = None) -> Any:
    # A Slurm run waits for its own job (claim_run), never for a worker.
    return (select(Run.id).where(Run.status == "queued", Run.executor.is_(None), servable(caps))
            .order_by(Run.created_at, Run.id).limit(1))


def claim_next_run(db: Database, worker_id: str, capabilities: Capabilities | None = None
                   ) -> tuple[int, Any] | None:
    """Atomically take the oldest queued run for ``worker_id``: ``(run_id, spec)`` or None.

    With ``capabilities`` only a run this worker can serve is taken (its device among the
    worker's, its GPU model and torch requirement met, ``storage.workers.servable``); the
    others stay queued for a worker that can. Without, any queued run (tests, tools).

    Each queued run is handed to exactly one caller, however many workers (processes, hosts)
    call this at once. ``spec`` is what the row holds, decoded but **not validated**: anyone who
    can write the database can put anything there, so the caller validates it
    (``engine.spec.normalise``) before acting on it; it may not even be a dict.
    """
    spec_text = cast(Run.spec, Text)
    with db.session(write=True) as session:
        if db.dialect == "sqlite":
            # Single writer + one statement: choosing and taking the run cannot interleave with
            # another claim. The status check in the outer WHERE is belt and braces.
            stmt = (
                update(Run)
                .where(Run.id == _oldest_queued(capabilities).scalar_subquery(),
                       Run.status == "queued")
                .values(_claim_values(worker_id))
                .returning(Run.id, spec_text)
                .execution_options(**_NO_SYNC)
            )
            row = session.execute(stmt).one_or_none()
        else:
            # Rows locked by another claimer are skipped rather than waited for.
            run_id = session.scalar(
                _oldest_queued(capabilities).with_for_update(skip_locked=True))
            if run_id is None:
                return None
            stmt = (
                update(Run)
                .where(Run.id == run_id)
                .values(_claim_values(worker_id))
                .returning(Run.id, spec_text)
                .execution_options(**_NO_SYNC)
            )
            row = session.execute(stmt).one()
    if row is None:
        return None
    return int(row[0]), _decode_spec(row[1])


def claim_run(db: Database, run_id: int, worker_id: str) -> dict[str, Any] | None:
    """Claim one specific queued run (the CLI runs the run it just enqueued): its spec or None.

    None when the run is no longer queued (a worker took it first, or it was cancelled).
    """
    with db.session(write=True) as session:
        stmt = (
            update(Run)
            .where(Run.id == run_id, Run.status == "queued")
            .values(_claim_values(worker_id))
            .returning(Run.spec)
            .execution_options(**_NO_SYNC)
        )
        spec = session.execute(stmt).scalar_one_or_none()
    return None if spec is None else dict(spec)


def _fit(text: str, column: Any) -> str:
    """``text`` cut to ``column``'s length with an ellipsis: progress is a label, and
    PostgreSQL refuses a longer value where SQLite keeps it (a long phase once ended a
    heartbeat, and with it the run, on PostgreSQL only)."""
    limit = column.type.length
    return text if len(text) <= limit else text[: limit - 1] + "…"


def heartbeat(
    db: Database,
    run_id: int,
    worker_id: str,
    variant: str | None = None,
    phase: str | None = None,
    fraction: float | None = None,
) -> bool:
    """Mark ``worker_id`` alive on ``run_id`` and record progress; False means "stop now".

    Progress fields given as None are left as they are (a keep-alive thread can beat without
    knowing the progress). Returns False when a cancel was requested, and also when the run is
    no longer this worker's (it was re-queued as stale and maybe claimed by another worker, or
    finished): either way the worker must stop working on it.
    """
    values: dict[str, Any] = {"heartbeat_at": utcnow()}
    if variant is not None:
        values["progress_variant"] = _fit(variant, Run.progress_variant)
    if phase is not None:
        values["progress_phase"] = _fit(phase, Run.progress_phase)
    if fraction is not None:
        values["progress_fraction"] = min(max(float(fraction), 0.0), 1.0)
    with db.session(write=True) as session:
        stmt = (
            update(Run)
            .where(Run.id == run_id, Run.status == "running", Run.worker_id == worker_id)
            .values(values)
            .returning(Run.cancel_requested)
            .execution_options(**_NO_SYNC)
        )
        cancel_requested = session.execute(stmt).scalar_one_or_none()
    return cancel_requested is False


def finish_run(
    db: Database,
    run_id: int,
    status: str,
    error: str | None = None,
    environment: Mapping[str, Any] | None = None,
    *,
    worker_id: str | None = None,
    results: Iterable[Mapping[str, Any]] = (),
) -> bool:
    """End a queued or running run as ``done``, ``failed`` or ``cancelled``; True if it did.

    With ``worker_id``, only a run still owned by that worker is finished, so a worker that lost
    its run to stale recovery cannot overwrite the new owner's state. Returns False when the run
    had already finished (for instance cancelled while still queued). ``results``: variant
    results held back until the end (a cancelled run's), saved in the same transaction, so a
    reader never sees the run final without them.
    """
    if status not in FINAL_RUN_STATUSES:
        raise ValueError(f"status must be one of {FINAL_RUN_STATUSES}, got {status!r}")
    entities = [build_variant_result(r) for r in results]
    with db.session(write=True) as session:
        conditions = [Run.id == run_id, Run.status.in_(("queued", "running"))]
        if worker_id is not None:
            conditions.append(Run.worker_id == worker_id)
        # FOR UPDATE: a concurrent request_cancel must not slip between this read and the write.
        run = session.scalars(
            select_queue_columns().where(*conditions).with_for_update()
        ).one_or_none()
        if run is None:
            require_run(session, run_id)
            return False
        run.status = status
        run.finished_at = utcnow()
        run.error = error
        if environment is not None:
            apply_environment(run, environment)
        for entity in entities:
            put_variant_result(session, run_id, entity)
        return True


def request_cancel(db: Database, run_id: int) -> str:
    """Cancel a run: queued runs end at once, running ones are flagged for their worker.

    Returns the run's status afterwards (``"cancelled"`` for a queued run, ``"running"`` for a
    running run whose worker will stop at its next heartbeat, or the unchanged final status).
    """
    now = utcnow()
    with db.session(write=True) as session:
        cancelled = session.execute(
            update(Run)
            .where(Run.id == run_id, Run.status == "queued")
            .values(status="cancelled", finished_at=now, progress_phase=None)
            .returning(Run.id)
            .execution_options(**_NO_SYNC)
        ).scalar_one_or_none()
        if cancelled is not None:
            return "cancelled"
        session.execute(
            update(Run)
            .where(Run.id == run_id, Run.status == "running")
            .values(cancel_requested=True)
            .execution_options(**_NO_SYNC)
        )
        return require_run(session, run_id).status

