"""Importing a bundle into the database: validated first, then written whole or not at all.

``import_bundle`` parses and validates the bundle (storage/bundle_validation.py) and writes all
its runs in one transaction, so a bad bundle leaves the database untouched. Imported runs keep
their timestamps, environment, tags and notes; they get new ids in this database.

Importing the same runs twice does not duplicate them: two runs are the same when their content
fingerprints match (``storage/fingerprint.py``: model, ``created_at`` to the microsecond, spec,
environment and every result; not tags or notes). ``import_bundle_result`` says which runs were
new and which were already here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import DataError, IntegrityError

from contract.text import normalize_tags
from storage.bundle_export import export_runs
from storage.bundle_format import BundleError
from storage.bundle_validation import parse_bundle, validate_bundle
from storage.db import Database
from storage.fingerprint import run_fingerprint
from storage.models import Run, RunTag
from storage.results import apply_environment, build_variant_result


def _run_entity(data: dict[str, Any]) -> Run:
    spec = data["spec"]
    run = Run(
        created_at=datetime.fromisoformat(data["created_at"]),
        started_at=_parse_time(data.get("started_at")),
        finished_at=_parse_time(data.get("finished_at")),
        status=data["status"],
        model=data["model"],
        dims=dict(data.get("dims") if data.get("dims") is not None else spec.get("dims") or {}),
        dtype=data.get("dtype") or str(spec.get("dtype") or "float32"),
        device=data.get("device") or str(spec.get("device") or "cpu"),
        spec=spec,
        error=data.get("error"),
        note=data.get("note") or "",
        attempts=0,
        cancel_requested=False,
    )
    if data.get("environment") is not None:
        apply_environment(run, data["environment"])
    run.tags = [RunTag(tag=tag) for tag in normalize_tags(data.get("tags") or [])]
    run.variants = [build_variant_result(variant) for variant in data["variants"]]
    return run


def _parse_time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def import_bundle(db: Database, bundle: Mapping[str, Any] | str | bytes) -> list[int]:
    """Validate and import a bundle (a dict, or its JSON text); returns the new run ids in order.

    All or nothing: any problem raises ``BundleError`` before the single transaction commits.
    Runs already in the database (same model and ``created_at``) are not imported again and
    are not in the result; ``import_bundle_result`` names them.
    """
    return import_bundle_result(db, bundle).new_ids


@dataclass(frozen=True)
class ImportResult:
    """What ``import_bundle_result`` did: ids of the runs it created, in bundle order, the ids
    of the runs of the bundle that this database already held (not imported again), and
    ``ids``: every run of the bundle as its id here, in bundle order."""

    new_ids: list[int]
    existing_ids: list[int]
    ids: list[int] = field(default_factory=list)


def _identity(created_at: datetime, model: str) -> tuple[datetime, str]:
    return created_at, model


def _existing_runs(session: Any, keys: list[tuple[datetime, str]]) -> dict[tuple, list[int]]:
    """Ids of the runs already stored under these (created_at, model) identities: the runs that
    may be the same run (storage/fingerprint.py decides)."""
    found: dict[tuple, list[int]] = defaultdict(list)
    moments = sorted({moment for moment, _model in keys})
    for i in range(0, len(moments), 500):
        rows = session.execute(
            select(Run.id, Run.created_at, Run.model).where(
                Run.created_at.in_(moments[i : i + 500])
            ).order_by(Run.id)
        )
        for run_id, created_at, model in rows:
            found[_identity(created_at, model)].append(run_id)
    return found


def import_bundle_result(db: Database, bundle: Mapping[str, Any] | str | bytes) -> ImportResult:
    """``import_bundle`` that also reports the runs that were already here.

    A run is already here when a stored run has the same content fingerprint
    (``storage.fingerprint``: model, times, spec, environment and results; not tags or note).
    Only runs with the same model and ``created_at`` are fingerprinted, so this stays cheap.
    """
    data = parse_bundle(bundle) if isinstance(bundle, (str, bytes)) else validate_bundle(bundle)
    try:
        entities = [_run_entity(run) for run in data["runs"]]
    except (TypeError, ValueError) as exc:  # validation should have caught it; say so plainly
        raise BundleError(f"bundle rejected: {exc}") from exc
    prints = [run_fingerprint(run) for run in data["runs"]]
    try:
        with db.session(write=True) as session:
            keys = [_identity(run.created_at, run.model) for run in entities]
            known = _existing_runs(session, keys)
            stored = export_runs(session, [i for ids in known.values() for i in ids])
            here = {run_fingerprint(run): run_id for run_id, run in sorted(stored.items())}
            fresh, existing, seen = [], [], {}
            order: list[Run | int] = []
            for fp, run in zip(prints, entities, strict=True):
                if fp in here:
                    existing.append(here[fp])
                    order.append(here[fp])
                elif fp in seen:  # the same run twice in one bundle: once
                    order.append(seen[fp])
                else:
                    seen[fp] = run
                    fresh.append(run)
                    order.append(run)
            session.add_all(fresh)
            session.flush()
            ids = [item if isinstance(item, int) else item.id for item in order]
            return ImportResult([run.id for run in fresh], list(dict.fromkeys(existing)), ids)
    except (IntegrityError, DataError) as exc:
        raise BundleError(f"bundle rejected by the database: {exc.orig}") from exc
