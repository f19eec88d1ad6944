"""One stored run as plain dicts, without pandas: what ``engine show`` (text and ``--json``)
reads on a GPU host that has only requirements-engine.txt.

Each stored variant is read as the contract's typed result (``typed_variant``: its columns and
``extra`` through ``contract.results.VariantResult.from_json``), and shown as that result's
flat row: keyed by the contract's figure names (contract/schema.py), the same names as the
dashboard's ``variants`` DataFrame columns (built by the same reader in storage/queries.py),
plus the lists ``graph_breaks``, ``recompiles`` and ``sweep``.  The per-call series are left
out unless asked for.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import defer, selectinload

from contract.results import VariantResult as TypedVariant
from contract.schema import FIGURES
from storage.db import Database
from storage.models import Run, RunTag, VariantResult
from storage.results import CHILDREN


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def typed_variant(source: Any, series: bool, children: dict[str, list[Any]] | None = None
                  ) -> TypedVariant:
    """A stored variant (an entity, or a selected row with the figures' columns and ``extra``)
    as the contract's typed result: its columns and ``extra`` put back in the result's JSON
    shape and read through ``VariantResult.from_json``, the one reader of results from outside
    (a figure that does not fit its kind reads as missing).  The series columns are read only
    with ``series`` (deferred on an entity: touching them would load them)."""
    extra = source.extra if isinstance(source.extra, dict) else {}
    stats = dict(extra["stats"]) if isinstance(extra.get("stats"), dict) else {}
    raw: dict[str, Any] = {k: v for k, v in extra.items() if k != "stats"}
    for f in FIGURES:
        if f.column and (series or f.kind != "series"):
            (stats if f.where == "stats" else raw)[f.name] = getattr(source, f.name, None)
    raw.update(variant=source.variant, status=source.status, stats=stats, **(children or {}))
    return TypedVariant.from_json(raw)


def _variant(entity: VariantResult, series: bool) -> dict[str, Any]:
    children = {key: [{name: getattr(child, name) for name in fields} for child in
                      getattr(entity, "sweep_points" if key == "sweep" else key)]
                for key, (_entity, fields) in CHILDREN.items()}
    return typed_variant(entity, series, children).row(series)


# Children in one query each for all of a run's variants (lazily, three queries per variant:
# the Review page reads 400 runs); the series columns not read at all unless asked for.
_CHILDREN = tuple(selectinload(getattr(VariantResult, "sweep_points" if key == "sweep" else key))
                  for key in CHILDREN)
_SERIES = tuple(defer(getattr(VariantResult, f.name)) for f in FIGURES
                if f.kind == "series" and f.column)


def _loading(series: bool) -> tuple[Any, ...]:
    return _CHILDREN if series else _CHILDREN + _SERIES


def load_run(db: Database, run_id: int, *, series: bool = False) -> dict[str, Any] | None:
    """The run with its variants in the order of its spec, or None when there is no such run."""
    return load_runs_by_id(db, [run_id], series=series).get(int(run_id))


# Ids per IN (...) query: below SQLite's bound-parameter limit, few round trips for 400 runs.
_ID_CHUNK = 500


def load_runs_by_id(db: Database, run_ids: list[int], *, series: bool = False
                    ) -> dict[int, dict[str, Any]]:
    """:func:`load_run` for many runs in a few queries (runs, tags, variants and their
    children, each by ``IN``), not a round of queries per run: the Review page reads up to
    400 runs. Ids that are not there are simply absent from the result."""
    ids = list(dict.fromkeys(int(i) for i in run_ids))
    out: dict[int, dict[str, Any]] = {}
    with db.session() as session:
        for start in range(0, len(ids), _ID_CHUNK):
            chunk = ids[start:start + _ID_CHUNK]
            runs = list(session.scalars(select(Run).where(Run.id.in_(chunk))))
            tags: dict[int, list[str]] = {}
            for rid, tag in session.execute(select(RunTag.run_id, RunTag.tag)
                                            .where(RunTag.run_id.in_(chunk))
                                            .order_by(RunTag.tag)):
                tags.setdefault(rid, []).append(tag)
            variants: dict[int, list[VariantResult]] = {}
            for e in session.scalars(select(VariantResult).where(VariantResult.run_id.in_(chunk))
                                     .order_by(VariantResult.id).options(*_loading(series))):
                variants.setdefault(e.run_id, []).append(e)
            for run in runs:
                out[run.id] = _run_dict(run, tags.get(run.id, []), variants.get(run.id, []),
                                        series)
    return {i: out[i] for i in ids if i in out}


def _run_dict(run: Run, tags: list[str], entities: list[VariantResult], series: bool
              ) -> dict[str, Any]:
    spec = run.spec if isinstance(run.spec, dict) else {}
    order = {v: i for i, v in enumerate(spec.get("variants") or [])}
    entities = sorted(entities, key=lambda e: order.get(e.variant, len(order)))
    dims = run.dims if isinstance(run.dims, dict) else {}
    return {
        "run_id": run.id, "status": run.status, "model": run.model, "dims": dims,
        "dims_label": ", ".join(f"{k}={v}" for k, v in dims.items()),
        "dtype": run.dtype, "device": run.device, "gpu": run.gpu,
        "torch_version": run.torch_version, "error": run.error, "note": run.note,
        "tags": tags, "created_at": _iso(run.created_at), "started_at": _iso(run.started_at),
        "finished_at": _iso(run.finished_at), "heartbeat_at": _iso(run.heartbeat_at),
        "environment": run.environment or {},
        "spec": spec, "variants": [_variant(e, series) for e in entities],
    }
