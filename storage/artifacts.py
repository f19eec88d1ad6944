"""Files a run keeps beside its results (the ``artifacts`` table): saving, listing, reading.

What comes back from the database is treated as hostile, like a bundle: a listing never loads
the bytes, a read refuses anything larger than ``MAX_BYTES`` before loading it, and the name a
file is offered under (``download_name``) is built from the run id, a sanitised variant and the
kind, never taken from the stored ``name``. Nothing here unpacks bytes or writes files.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import delete, func, select

from contract.text import one_line
from storage.db import Database
from storage.models import Artifact
from storage.results import require_run

MAX_BYTES = 32 * 2**20  # the engine keeps at most 20 MiB of gzip per trace
KINDS = ("torch_trace",)
SUFFIX = {"torch_trace": ".log.gz"}
_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class ArtifactNotFound(LookupError):
    """No such run, variant or artifact; the message says which."""


def _safe(text: str, limit: int = 64) -> str:
    """Letters, digits, dot, dash and underscore only; no leading dot (no hidden or ``..``)."""
    return _NAME.sub("_", str(text))[:limit].lstrip(".") or "_"


def download_name(run_id: int, variant: str, kind: str) -> str:
    """``run12-reduce-overhead-torch_trace.log.gz``: a file name that is safe anywhere."""
    return f"run{int(run_id)}-{_safe(variant)}-{_safe(kind, 32)}{SUFFIX.get(kind, '.bin')}"


def save_artifact(db: Database, run_id: int, variant: str, kind: str, name: str, data: bytes,
                  note: str | None = None) -> int:
    """Store ``data`` as the ``kind`` artifact of ``variant`` of the run (replacing an earlier
    one); returns its id. Refuses unknown kinds and more than ``MAX_BYTES``."""
    if kind not in KINDS:
        raise ValueError(f"unknown artifact kind {kind!r}; known: {', '.join(KINDS)}")
    if not isinstance(data, bytes) or len(data) > MAX_BYTES:
        raise ValueError(f"artifact of {len(data)} bytes; the limit is {MAX_BYTES}")
    with db.session(write=True) as session:
        require_run(session, run_id)
        session.execute(delete(Artifact).where(Artifact.run_id == run_id,
                                               Artifact.variant == variant,
                                               Artifact.kind == kind))
        row = Artifact(run_id=run_id, variant=str(variant)[:64], kind=kind,
                       name=_safe(name, 200), size=len(data),
                       note=None if note is None else one_line(note, 2000), content=data)
        session.add(row)
        session.flush()
        return row.id


def list_artifacts(db: Database, run_id: int) -> list[dict[str, Any]]:
    """The run's artifacts without their bytes: variant, kind, name (sanitised), size (as
    measured by the database, not as stored in ``size``), note, created_at."""
    with db.session() as session:
        rows = session.execute(
            select(Artifact.variant, Artifact.kind, Artifact.name, func.length(Artifact.content),
                   Artifact.note, Artifact.created_at)
            .where(Artifact.run_id == run_id).order_by(Artifact.variant, Artifact.kind)).all()
    return [{"variant": v, "kind": k, "name": download_name(run_id, v, k),
             "stored_name": _safe(n, 200), "size": int(size or 0), "note": note,
             "created_at": None if at is None else at.isoformat()}
            for v, k, n, size, note, at in rows]


def read_artifact(db: Database, run_id: int, variant: str, kind: str = "torch_trace"
                  ) -> tuple[dict[str, Any], bytes]:
    """``(meta, bytes)`` of one artifact; ``ArtifactNotFound`` names what is missing, and
    ``ValueError`` refuses one larger than ``MAX_BYTES`` without loading it."""
    with db.session() as session:
        require_run(session, run_id)
        found = session.execute(
            select(Artifact.id, func.length(Artifact.content), Artifact.note)
            .where(Artifact.run_id == run_id, Artifact.variant == variant,
                   Artifact.kind == kind)).first()
        if found is None:
            have = session.scalars(select(Artifact.variant).where(
                Artifact.run_id == run_id, Artifact.kind == kind)).all()
            where = (f"variants with one: {', '.join(sorted(have))}" if have else
                     "this run kept none (run it with --keep-trace)")
            raise ArtifactNotFound(f"run {run_id} has no {kind} for variant "
                                   f"{_safe(variant)!r}; {where}")
        artifact_id, size, note = found
        if int(size or 0) > MAX_BYTES:
            raise ValueError(f"the stored {kind} is {size} bytes, over the {MAX_BYTES} limit; "
                             "refusing to read it")
        data = session.scalar(select(Artifact.content).where(Artifact.id == artifact_id))
    data = bytes(data or b"")[:MAX_BYTES]
    return {"variant": variant, "kind": kind, "name": download_name(run_id, variant, kind),
            "size": len(data), "note": note}, data
