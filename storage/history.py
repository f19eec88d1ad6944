"""Seconds that measuring processes took in earlier runs of a model, for a grid's estimate
before it starts (engine/analysis/grid_plan.py) and the live ETA's priors (engine/orchestrate/eta.py).  Plain dicts,
no pandas."""

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


def recent_processes(db: Database, model: str, device: str, *, host: str | None = None,
                     dims: Any = None, dtype: str | None = None, step: str = "inference",
                     runs: int = 5) -> list[tuple[str, int, dict[str, Any]]]:
    """``(variant, index, process)`` of every measuring process stored for the latest ``runs``
    finished runs of ``model`` on ``device`` with the same ``step`` (a training step compiles
    and times another graph), on ``host`` where given (as the run's environment recorded it):
    the live ETA's priors (engine/orchestrate/eta.py ``stage_seconds``).  Runs of the same ``dims`` and
    ``dtype`` are preferred where there are any.  The processes are as stored (hostile until
    checked: the ETA reads only numbers it can use)."""
    with db.session() as session:
        rows = session.execute(
            select(Run.id, Run.environment, Run.dims, Run.dtype, Run.spec)
            .where(Run.model == model, Run.device == device, Run.status == "done")
            .order_by(Run.id.desc()).limit(4 * runs)).all()
        rows = [r for r in rows if isinstance(r.spec, dict)
                and r.spec.get("step", "inference") == step]
        if host is not None:
            rows = [r for r in rows if isinstance(r.environment, dict)
                    and r.environment.get("host") == host]
        same = [r for r in rows if r.dims == dims and r.dtype == dtype]
        ids = [r.id for r in (same or rows)[:runs]]
        if not ids:
            return []
        out: list[tuple[str, int, dict[str, Any]]] = []
        for variant, extra in session.execute(
                select(VariantResult.variant, VariantResult.extra)
                .where(VariantResult.run_id.in_(ids), VariantResult.status == "ok")):
            procs = extra.get("processes") if isinstance(extra, dict) else None
            if isinstance(procs, list):
                out += [(str(variant), i, p) for i, p in enumerate(procs) if isinstance(p, dict)]
        return out


def _same_runs(session: Any, model: str, device: str, host: str | None, dims: Any,
               dtype: str | None, step: str, runs: int) -> list[int]:
    """Ids of the latest ``runs`` finished runs of exactly this configuration on ``host``."""
    rows = session.execute(
        select(Run.id, Run.environment, Run.dims, Run.dtype, Run.spec)
        .where(Run.model == model, Run.device == device, Run.status == "done")
        .order_by(Run.id.desc()).limit(8 * runs)).all()
    return [r.id for r in rows
            if isinstance(r.spec, dict) and r.spec.get("step", "inference") == step
            and r.dims == dims and r.dtype == dtype and isinstance(r.environment, dict)
            and host is not None and r.environment.get("host") == host][:runs]


def recent_process_speedups(db: Database, model: str, device: str, *, host: str | None,
                            dims: Any, dtype: str | None, step: str = "inference",
                            runs: int = 5) -> dict[str, list[tuple[list[Any], list[Any]]]]:
    """``{variant: [(per-process speedups of one run, its processes' kernel draws), ...]}``
    from the latest ``runs`` finished runs of exactly this configuration (model, dims, dtype,
    device, step) on ``host``: the history a variant's interval may borrow its variance from
    (engine/analysis/stats.py ``history_prior``).  Nothing without a host.  As stored (hostile
    until checked: the caller keeps only positive finite numbers and the three draw words)."""
    out: dict[str, list[tuple[list[Any], list[Any]]]] = {}
    with db.session() as session:
        ids = _same_runs(session, model, device, host, dims, dtype, step, runs)
        if not ids:
            return out
        for variant, extra in session.execute(
                select(VariantResult.variant, VariantResult.extra)
                .where(VariantResult.run_id.in_(ids), VariantResult.status == "ok",
                       VariantResult.variant != "eager")):
            stats = extra.get("stats") if isinstance(extra, dict) else None
            speeds = stats.get("process_speedups") if isinstance(stats, dict) else None
            procs = extra.get("processes") if isinstance(extra, dict) else None
            draws = [p.get("autotune_draw") if isinstance(p, dict) else None
                     for p in (procs if isinstance(procs, list) else [])]
            if isinstance(speeds, list):
                out.setdefault(str(variant), []).append((speeds, draws))
    return out


def earlier_same_config(db: Database, spec: Any, before: int, *, runs: int = 3) -> list[int]:
    """Ids of the latest ``runs`` finished runs before run ``before`` whose config is ``spec``'s
    (contract/config_key.py: the same model, dims, dtype, device and options; how long or how
    carefully each was measured may differ), newest first; [] for a spec that is not a mapping."""
    from contract.config_key import stored_config_key

    key = stored_config_key(spec)
    if key is None or not isinstance(spec.get("model"), str):
        return []
    with db.session() as session:
        rows = session.execute(
            select(Run.id, Run.spec)
            .where(Run.model == spec["model"], Run.status == "done", Run.id < int(before))
            .order_by(Run.id.desc()).limit(50 * runs)).all()
    return [int(r.id) for r in rows if stored_config_key(r.spec) == key][:runs]
