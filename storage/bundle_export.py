"""Writing a bundle: ``export_bundle`` turns finished runs into one JSON-serialisable document.

Files a run kept (the ``artifacts`` table: TORCH_TRACE logs) are not in a bundle: a bundle
carries results. A variant's ``extra.torch_trace`` still names what was kept, and ``python -m
engine export`` prints one note per artifact left out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import select

from storage.bundle_format import BUNDLE_FORMAT, BUNDLE_VERSION, BundleError
from storage.db import Database
from storage.models import (
    FINAL_RUN_STATUSES,
    GraphBreak,
    Recompile,
    Run,
    RunTag,
    SweepPoint,
    VariantResult,
    utcnow,
)
from storage.results import CHILDREN, RESULT_FIELDS, STATS_FIELDS, id_chunks


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _variant_dict(entity: VariantResult, children: dict[str, list[Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {"variant": entity.variant, "status": entity.status}
    result.update({f: getattr(entity, f) for f in RESULT_FIELDS})
    for key, (_entity, fields) in CHILDREN.items():
        result[key] = [{f: getattr(row, f) for f in fields} for row in children[key]]
    result["stats"] = {f: getattr(entity, f) for f in STATS_FIELDS}
    if entity.extra:
        result["extra"] = entity.extra
    return result


def export_bundle(db: Database, run_ids: Iterable[int]) -> dict[str, Any]:
    """The given runs as a JSON-serialisable bundle (see the module docstring).

    Only finished runs can be exported (a queued or running run has no results to share yet);
    ``BundleError`` names the others, and unknown ids.
    """
    wanted = list(dict.fromkeys(int(run_id) for run_id in run_ids))
    with db.session() as session:
        runs = export_runs(session, wanted)
    missing = [run_id for run_id in wanted if run_id not in runs]
    if missing:
        raise BundleError(f"no runs with ids {missing}")
    unfinished = [run_id for run_id in wanted if runs[run_id]["status"] not in FINAL_RUN_STATUSES]
    if unfinished:
        raise BundleError(f"runs {unfinished} have not finished yet; export finished runs only")
    # A time column holding something else reads as missing (storage/models/base.py); a bundle
    # without a creation time would be refused by every import, this one's included.
    undated = [run_id for run_id in wanted if runs[run_id]["created_at"] is None]
    if undated:
        raise BundleError(f"runs {undated} have no readable creation time in this database "
                          "(something else was written there); they cannot be exported")
    return {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "exported_at": utcnow().isoformat(),
        "runs": [runs[run_id] for run_id in wanted],
    }


def export_runs(session: Any, wanted: list[int]) -> dict[int, dict[str, Any]]:
    """The bundle form of each run in ``wanted`` that exists, by id, read in ``session``."""
    runs: dict[int, Run] = {}
    tags: dict[int, list[str]] = defaultdict(list)
    variants: dict[int, list[VariantResult]] = defaultdict(list)
    children: dict[int, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for ids in id_chunks(wanted):
        runs.update(
            (run.id, run) for run in session.scalars(select(Run).where(Run.id.in_(ids)))
        )
        for run_id, tag in session.execute(
            select(RunTag.run_id, RunTag.tag).where(RunTag.run_id.in_(ids)).order_by(RunTag.tag)
        ):
            tags[run_id].append(tag)
        for entity in session.scalars(
            select(VariantResult)
            .where(VariantResult.run_id.in_(ids))
            .order_by(VariantResult.id)
        ):
            variants[entity.run_id].append(entity)
        for key, child in (
            ("graph_breaks", GraphBreak),
            ("recompiles", Recompile),
            ("sweep", SweepPoint),
        ):
            rows = session.scalars(
                select(child)
                .join(VariantResult, VariantResult.id == child.variant_result_id)
                .where(VariantResult.run_id.in_(ids))
                .order_by(child.variant_result_id, child.position)
            )
            for row in rows:
                children[row.variant_result_id][key].append(row)
    return {
        run.id: {
            "source_id": run.id,
            "created_at": _iso(run.created_at),
            "started_at": _iso(run.started_at),
            "finished_at": _iso(run.finished_at),
            "status": run.status,
            "model": run.model,
            "dims": run.dims,
            "dtype": run.dtype,
            "device": run.device,
            "spec": run.spec,
            "error": run.error,
            "note": run.note,
            "environment": run.environment,
            "tags": tags[run.id],
            "variants": [_variant_dict(v, children[v.id]) for v in variants[run.id]],
        }
        for run in runs.values()
    }
