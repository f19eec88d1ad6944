"""Seconds that measuring processes took in earlier runs of a model, for a grid's estimate
before it starts (engine/grid_plan.py).  Plain dicts, no pandas."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from storage.db import Database
from storage.models import Run, VariantResult


def process_seconds(db: Database, model: str, device: str, *, runs: int = 5
                    ) -> dict[str, list[float]]:
    """{"eager": [...], "compiled": [...]}: seconds per measuring process (the variant's
    ``time_s`` summed, over its processes) in the latest ``runs`` finished runs of ``model`` on
    ``device``; empty lists when there are none."""
    out: dict[str, list[float]] = {"eager": [], "compiled": []}
    with db.session() as session:
        ids = list(session.scalars(
            select(Run.id).where(Run.model == model, Run.device == device, Run.status == "done")
            .order_by(Run.id.desc()).limit(runs)))
        if not ids:
            return out
        for variant, status, extra in session.execute(
                select(VariantResult.variant, VariantResult.status, VariantResult.extra)
                .where(VariantResult.run_id.in_(ids))):
            per = _per_process(extra)
            if status == "ok" and per is not None:
                out["eager" if variant == "eager" else "compiled"].append(per)
    return out


def _per_process(extra: Any) -> float | None:
    if not isinstance(extra, dict) or not isinstance(extra.get("time_s"), dict):
        return None
    total = sum(float(v) for v in extra["time_s"].values() if isinstance(v, (int, float)))
    n = len(extra.get("processes") or []) or 1
    return total / n if total > 0 else None
