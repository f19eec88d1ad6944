"""Connected workers: registration, heartbeat, and which queued runs a worker may claim.

A worker registers what it can serve (``Capabilities``: device kinds, GPU model and memory,
torch release) in the ``workers`` table when it starts, beats ``heartbeat_at`` every few
seconds while it lives (idle or busy: a thread of its own does it), and deletes its row when it
stops cleanly. ``live_workers`` is what the dashboard shows as "connected": rows beaten within
``LIVE_AFTER_S``. A worker killed with -9 leaves a row that simply goes stale; ``register_worker``
sweeps rows stale for over ``FORGET_AFTER_S``.

A run records what it needs (its ``device`` column, and optionally ``require_gpu``: a GPU model
by exact name, ``require_torch``: a torch release or a prefix of one such as ``"2.11"``).
``servable`` turns a worker's capabilities into the SQL condition the claim query adds, so a CPU
laptop on the team database never takes a cuda run, and a baseline asked for on an H200 is
measured on an H200. Plain equality and ``IN`` lists only: the same on SQLite and PostgreSQL.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, or_, select, true, update

from storage.db import Database
from storage.models import Run, Worker, utcnow
from storage.results import json_safe

LIVE_AFTER_S = 30.0  # workers beat every BEAT_EVERY_S; three missed beats and it is gone
BEAT_EVERY_S = 10.0
FORGET_AFTER_S = 24 * 3600.0
DEVICE_KINDS = ("cpu", "cuda")


@dataclass(frozen=True)
class Capabilities:
    """What one worker process can run: the devices torch sees on its host (``cuda`` only when a
    GPU is visible to it), the GPU's model name, count and memory, its torch release."""

    devices: tuple[str, ...] = ("cpu",)
    gpu_name: str | None = None
    gpu_count: int = 0
    gpu_memory_bytes: int | None = None
    torch_version: str | None = None
    info: Mapping[str, Any] = field(default_factory=dict)

    def serves(self, device: str | None, require_gpu: str | None = None,
               require_torch: str | None = None) -> bool:
        """The claim query's rule in Python (for the dashboard's "who could run this" notes)."""
        return not self.unmet(device, require_gpu, require_torch)

    def unmet(self, device: str | None, require_gpu: str | None = None,
              require_torch: str | None = None) -> list[str]:
        """What of a run's needs this worker lacks, each as a short phrase ([]: it serves it).
        The worker checks a claimed run's spec with it: the claim query tests the row's
        columns, which someone writing the database may have made disagree with the spec."""
        out = []
        if (device or "cpu") not in self.devices:
            out.append(f"device {device!r} (this worker has {', '.join(self.devices)})")
        if require_gpu and require_gpu != self.gpu_name:
            out.append(f"GPU {require_gpu!r} (this worker has {self.gpu_name or 'none'!r})")
        if require_torch and require_torch not in torch_prefixes(self.torch_version):
            out.append(f"torch {require_torch!r} (this worker has "
                       f"{self.torch_version or 'unknown'!r})")
        return out


def torch_prefixes(version: str | None) -> list[str]:
    """Every requirement a torch release satisfies: ``"2.11.0+cu128"`` -> ``["2", "2.11",
    "2.11.0", "2.11.0+cu128"]``. A run asking for ``"2.11"`` is claimable by any 2.11 build;
    listing the prefixes keeps the claim an ``IN`` test (no LIKE patterns, no dialect quirks)."""
    if not version:
        return []
    cuts = [m.start() for m in re.finditer(r"[.+]", version)]
    return [version[:i] for i in cuts] + [version]


def servable(caps: Capabilities | None) -> ColumnElement[bool]:
    """SQL condition on ``runs``: the run is one this worker can serve (None: any run)."""
    if caps is None:
        return true()
    gpu_ok = Run.require_gpu.is_(None)
    if caps.gpu_name:
        gpu_ok = or_(gpu_ok, Run.require_gpu == caps.gpu_name)
    torch_ok = Run.require_torch.is_(None)
    prefixes = torch_prefixes(caps.torch_version)
    if prefixes:
        torch_ok = or_(torch_ok, Run.require_torch.in_(prefixes))
    return and_(Run.device.in_(list(caps.devices)), gpu_ok, torch_ok)


def _row_values(caps: Capabilities) -> dict[str, Any]:
    return {
        "devices": [d for d in caps.devices if isinstance(d, str)],
        "gpu_name": (caps.gpu_name or None) and str(caps.gpu_name)[:256],
        "gpu_count": int(caps.gpu_count or 0),
        "gpu_memory_bytes": int(caps.gpu_memory_bytes) if caps.gpu_memory_bytes else None,
        "torch_version": (caps.torch_version or None) and str(caps.torch_version)[:64],
        "info": json_safe(dict(caps.info)) if caps.info else None,
    }


def register_worker(db: Database, worker_id: str, caps: Capabilities, *,
                    host: str | None = None, pid: int | None = None) -> None:
    """Insert (or refresh) this worker's row; rows silent for ``FORGET_AFTER_S`` are swept."""
    now = utcnow()
    with db.session(write=True) as session:
        session.execute(delete(Worker).where(
            Worker.heartbeat_at < now - timedelta(seconds=FORGET_AFTER_S)))
        row = session.get(Worker, worker_id)
        if row is None:
            row = Worker(worker_id=worker_id, started_at=now)
            session.add(row)
        row.host = host or socket.gethostname()
        row.pid = pid
        row.heartbeat_at = now
        row.current_run_id = None
        for key, value in _row_values(caps).items():
            setattr(row, key, value)


def beat_worker(db: Database, worker_id: str, current_run_id: int | None = None) -> bool:
    """Refresh the heartbeat (and the run being measured); False if the row is gone (swept as
    stale after an outage, or deleted by hand): the caller registers again."""
    with db.session(write=True) as session:
        changed = session.execute(
            update(Worker).where(Worker.worker_id == worker_id)
            .values(heartbeat_at=utcnow(), current_run_id=current_run_id)
            .returning(Worker.worker_id)
            .execution_options(synchronize_session=False)
        ).scalar_one_or_none()
    return changed is not None


def unregister_worker(db: Database, worker_id: str) -> None:
    """A clean stop: the worker is no longer offered to the dashboard."""
    with db.session(write=True) as session:
        session.execute(delete(Worker).where(Worker.worker_id == worker_id))


def live_workers(db: Database, live_after_s: float = LIVE_AFTER_S) -> list[dict[str, Any]]:
    """Workers that beat within ``live_after_s``, oldest first, as plain dicts (the columns of
    ``workers``, ``devices`` as a list, ``info`` as a dict)."""
    cutoff = utcnow() - timedelta(seconds=live_after_s)
    with db.session() as session:
        rows = session.scalars(
            select(Worker).where(Worker.heartbeat_at >= cutoff)
            .order_by(Worker.started_at, Worker.worker_id)).all()
        out = [_as_dict(w) for w in rows]
        # A worker says which run it is on at its next heartbeat: until then, one whose run
        # has ended is not "busy with" it any more (the sidebar said so after the run ended).
        current = {w["current_run_id"] for w in out if w["current_run_id"] is not None}
        running = set(session.scalars(select(Run.id).where(
            Run.id.in_(current), Run.status == "running")).all()) if current else set()
        for w in out:
            if w["current_run_id"] not in running:
                w["current_run_id"] = None
        return out


def capabilities_of(worker: Mapping[str, Any]) -> Capabilities:
    """A ``live_workers`` row back as ``Capabilities`` (whatever its JSON holds)."""
    devices = worker.get("devices")
    return Capabilities(
        devices=tuple(d for d in devices if d in DEVICE_KINDS) if isinstance(devices, list)
        else ("cpu",),
        gpu_name=worker.get("gpu_name"), gpu_count=int(worker.get("gpu_count") or 0),
        gpu_memory_bytes=worker.get("gpu_memory_bytes"),
        torch_version=worker.get("torch_version"))


def _as_dict(w: Worker) -> dict[str, Any]:
    return {
        "worker_id": w.worker_id, "host": w.host, "pid": w.pid, "started_at": w.started_at,
        "heartbeat_at": w.heartbeat_at,
        "devices": list(w.devices) if isinstance(w.devices, list) else [],
        "gpu_name": w.gpu_name, "gpu_count": w.gpu_count,
        "gpu_memory_bytes": w.gpu_memory_bytes, "torch_version": w.torch_version,
        "current_run_id": w.current_run_id,
        "info": dict(w.info) if isinstance(w.info, dict) else {},
    }


__all__ = ["BEAT_EVERY_S", "LIVE_AFTER_S", "Capabilities", "beat_worker",
           "capabilities_of", "live_workers", "queue_summary", "register_worker", "servable",
           "torch_prefixes",
           "unregister_worker"]


def queue_summary(db: Database, limit: int = 500) -> dict[str, Any]:
    """What the dashboard's sidebar needs, in three small queries: the number of running and
    queued runs, the ids of the running ones (at most 20), and the oldest ``limit`` queued runs
    with what they need (run_id, device, require_gpu, require_torch), to tell which of them no
    connected worker can serve."""
    from sqlalchemy import func

    with db.session() as session:
        counts = dict(session.execute(
            select(Run.status, func.count()).where(Run.status.in_(("queued", "running")))
            .group_by(Run.status)).all())
        rows = session.execute(
            select(Run.id, Run.device, Run.require_gpu, Run.require_torch)
            .where(Run.status == "queued").order_by(Run.created_at, Run.id).limit(limit)).all()
        running_ids = session.scalars(select(Run.id).where(Run.status == "running")
                                      .order_by(Run.id).limit(20)).all()
    return {"running": int(counts.get("running", 0)), "running_ids": list(running_ids),
            "queued_total": int(counts.get("queued", 0)),
            "queued": [{"run_id": r[0], "device": r[1], "require_gpu": r[2],
                        "require_torch": r[3]} for r in rows]}
