"""Reading runs for the dashboard, as pandas DataFrames whose columns docs/CONTRACTS.md fixes.

pandas is imported when a frame is built, not with the module: a GPU host that only runs the
engine (requirements-engine.txt) imports ``storage`` without having pandas installed.

Speed rule: one query per table, never one per run. ``list_runs`` is one query on ``runs`` (the
best speedup is a correlated subquery answered from a covering index) plus one on ``run_tags``;
``load_runs`` adds one query per child table. Frames are built from plain tuples. Runs whose
``environment`` or ``spec`` text is the same share one decoded dict: treat them as read-only.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Select, Text, func, select, type_coerce
from sqlalchemy.orm import Session

from contract.schema import FIGURES
from storage.db import Database
from storage.models import GraphBreak, Recompile, Run, RunTag, SweepPoint, VariantResult
from storage.records import typed_variant
from storage.results import CHILDREN, RESULT_FIELDS, STATS_FIELDS, id_chunks

if TYPE_CHECKING:
    import pandas as pd

RUN_COLUMNS: list[str] = [
    "run_id",
    "created_at",
    "started_at",
    "finished_at",
    "status",
    "model",
    "dims",
    "dims_label",
    "sweep_dim",
    "dtype",
    "device",
    "gpu",
    "torch_version",
    "best_speedup",
    "tags",
    "note",
    "error",
    "progress_variant",
    "progress_phase",
    "progress_fraction",
    "cancel_requested",
    "heartbeat_at",
    "executor",
    "environment",
    "spec",
]
# Every figure of the contract (contract/schema.py) except the series, which feed the warmup and
# samples frames.  Figures without a column of their own are read from the result's ``extra``
# (stats figures from ``extra["stats"]``); they are None/NaN for results saved before they existed.
VARIANT_COLUMNS: list[str] = [
    "run_id",
    "variant",
    "status",
    *(f.name for f in FIGURES if f.kind != "series"),
]
# VARIANT_COLUMNS that are fields inside VariantResult.extra (where: "result" or "stats").
_FROM_EXTRA: dict[str, str] = {f.name: f.where for f in FIGURES if not f.column}
GRAPH_BREAK_COLUMNS = ["run_id", "variant", "reason", "file", "line", "count"]
RECOMPILE_COLUMNS = ["run_id", "variant", "reason", "call_index", "dim_value", "phase"]
SWEEP_COLUMNS = [
    "run_id",
    "variant",
    "value",
    "first_call_ms",
    "median_ms",
    "p10_ms",
    "p90_ms",
    "n",
    "recompiled",
    "eager_median_ms",
]
WARMUP_COLUMNS = ["run_id", "variant", "call_index", "ms"]
SAMPLE_COLUMNS = ["run_id", "variant", "kind", "round_index", "ms"]
# samples.kind -> VariantResult series it comes from.
SAMPLE_KINDS: dict[str, str] = {
    "per_call": "samples_ms",
    "pipelined": "pipelined_ms",
    "eager_per_call": "eager_samples_ms",
    "eager_pipelined": "eager_pipelined_ms",
}
_TIME_COLUMNS = {"created_at", "started_at", "finished_at", "heartbeat_at"}
_INDEX_COLUMNS = {"run_id", "call_index", "round_index"}
_NUMERIC_COLUMNS = {
    "run_id",
    "best_speedup",
    "progress_fraction",
    "call_index",
    "round_index",
    "ms",
    *(name for name, kind in RESULT_FIELDS.items() if kind in ("int", "float")),
    *(f.name for f in FIGURES if not f.column and f.kind in ("int", "float")),
    *(name for name, kind in STATS_FIELDS.items() if kind in ("int", "float")),
    *(
        name
        for _entity, fields in CHILDREN.values()
        for name, kind in fields.items()
        if kind in ("int", "float")
    ),
}
# VariantResult columns read for load_runs (the series feed the warmup/samples frames).
_SERIES = ["warmup_ms", *SAMPLE_KINDS.values()]
_VARIANT_SELECT = [c for c in VARIANT_COLUMNS if c not in ("run_id", *_FROM_EXTRA)] + _SERIES + [
    "extra"
]

Filter = str | Iterable[str] | None


# ---- helpers ----


def _values(value: Filter) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    return list(value)


def _as_utc(moment: datetime | date, end_of_day: bool = False) -> datetime:
    """Filter bound as aware UTC; a bare date means its midnight (or the next one, for until)."""
    if isinstance(moment, datetime):
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    day = moment + timedelta(days=1) if end_of_day else moment
    return datetime.combine(day, time(), tzinfo=UTC)


def _best_speedup() -> Any:
    """Max speedup over a run's ok compile variants: a correlated subquery (covering index)."""
    return (
        select(func.max(VariantResult.speedup))
        .where(
            VariantResult.run_id == Run.id,
            VariantResult.status == "ok",
            VariantResult.variant != "eager",
        )
        .correlate(Run)
        .scalar_subquery()
        .label("best_speedup")
    )


_RUN_SELECT_COLUMNS = (
    Run.id,
    Run.created_at,
    Run.started_at,
    Run.finished_at,
    Run.status,
    Run.model,
    Run.dims,
    Run.dtype,
    Run.device,
    Run.gpu,
    Run.torch_version,
    Run.note,
    Run.error,
    Run.progress_variant,
    Run.progress_phase,
    Run.progress_fraction,
    Run.cancel_requested,
    Run.heartbeat_at,
    Run.executor,
    # JSON read as text and decoded in _runs_frame, each distinct text once: a history repeats
    # one environment per host and a few specs, and decoding them row by row was 40 % of
    # list_runs on 10 000 runs.
    type_coerce(Run.environment, Text).label("environment"),
    type_coerce(Run.spec, Text).label("spec"),
)
_JSON_TEXT_COLUMNS = ("environment", "spec")


def _dims_label(dims: Any, spec: Any = None) -> str:
    """``batch=32, seq=64`` — and for a sweep, every swept value (``seq=64/128/256``): the dims
    hold only the first value, and titles used to show just that one."""
    if not isinstance(dims, dict):
        return ""
    sweep = spec.get("sweep") if isinstance(spec, dict) else None
    swept = sweep.get("dim") if isinstance(sweep, dict) else None
    values = sweep.get("values") if isinstance(sweep, dict) else None

    def shown(key: str, value: Any) -> str:
        if key == swept and isinstance(values, list) and values:
            return "/".join(map(str, values[:8])) + ("/…" if len(values) > 8 else "")
        return str(value)

    return ", ".join(f"{key}={shown(key, value)}" for key, value in dims.items())


def _sweep_dim(spec: Any) -> str | None:
    sweep = spec.get("sweep") if isinstance(spec, dict) else None
    dim = sweep.get("dim") if isinstance(sweep, dict) else None
    return dim if isinstance(dim, str) else None


def _frame(records: list[Any], columns: list[str]) -> pd.DataFrame:
    """A frame with numeric columns as int64/float64 (NaN when missing), times as UTC
    datetimes, and everything else as objects where missing is ``None`` (not NaN), so text,
    booleans, dicts and lists read the same whether or not a value is missing."""
    import pandas as pd  # here, not at the top: GPU hosts run storage without pandas

    frame = pd.DataFrame(records, columns=columns, dtype=object)
    for column in columns:
        if column in _NUMERIC_COLUMNS:
            # coerce: a number column of SQLite can hold text written by hand; shown missing
            values = pd.to_numeric(frame[column], errors="coerce")
            if not len(values):
                values = values.astype("int64" if column in _INDEX_COLUMNS else "float64")
            frame[column] = values
        elif column in _TIME_COLUMNS:
            # One unit everywhere (an all-missing column would otherwise infer seconds).
            frame[column] = pd.to_datetime(frame[column], utc=True).dt.as_unit("us")
    return frame


def _integral_if_possible(frame: pd.DataFrame, column: str) -> None:
    """Dim values are stored as floats; show them as ints when they all are (no NaN)."""
    values = frame[column]
    if len(values) and values.notna().all() and (values % 1 == 0).all():
        frame[column] = values.astype("int64")


def _runs_frame(session: Session, query: Select[Any], tag_ids: Select[Any]) -> pd.DataFrame:
    # Core execution on the session's connection: plain column rows need none of the ORM's
    # per-row work, which is a third of the time on a 10 000-run history.
    conn = session.connection()
    rows = conn.execute(query).all()
    tags: dict[int, list[str]] = defaultdict(list)
    tag_query = (
        select(RunTag.run_id, RunTag.tag)
        .where(RunTag.run_id.in_(tag_ids))
        .order_by(RunTag.run_id, RunTag.tag)
    )
    for run_id, tag in conn.execute(tag_query):
        tags[run_id].append(tag)
    decoded: dict[str, Any] = {}

    def from_json(value: Any) -> Any:
        # A driver that decodes JSON itself (psycopg) hands over the object already.
        if not isinstance(value, str):
            return value
        if value not in decoded:
            decoded[value] = json.loads(value)
        return decoded[value]

    records = []
    for row in rows:
        record = row._asdict()
        for column in _JSON_TEXT_COLUMNS:
            record[column] = from_json(record[column])
        record.update(
            run_id=row.id,
            dims_label=_dims_label(row.dims, record["spec"]),
            sweep_dim=_sweep_dim(record["spec"]),
            tags=tags.get(row.id, []),
        )
        records.append(record)
    return _frame(records, RUN_COLUMNS)


# ---- public API ----


def list_runs(
    db: Database,
    model: Filter = None,
    device: Filter = None,
    gpu: Filter = None,
    status: Filter = None,
    tag: Filter = None,
    since: datetime | date | None = None,
    until: datetime | date | None = None,
    limit: int | None = None,
) -> pd.DataFrame:
    """Runs matching every given filter, newest first, with the columns of ``RUN_COLUMNS``.

    Each of ``model``, ``device``, ``gpu``, ``status`` and ``tag`` takes one value or several
    (a run matches if it has any of them). ``since`` is inclusive, ``until`` exclusive; a
    ``date`` for ``until`` includes that whole day (UTC). Naive datetimes are read as UTC.
    """
    conditions: list[ColumnElement[bool]] = []
    for column, value in (
        (Run.model, model),
        (Run.device, device),
        (Run.gpu, gpu),
        (Run.status, status),
    ):
        values = _values(value)
        if values is not None:
            conditions.append(column.in_(values))
    tags = _values(tag)
    if tags is not None:
        conditions.append(Run.id.in_(select(RunTag.run_id).where(RunTag.tag.in_(tags))))
    if since is not None:
        conditions.append(Run.created_at >= _as_utc(since))
    if until is not None:
        conditions.append(Run.created_at < _as_utc(until, end_of_day=True))

    ids = select(Run.id).where(*conditions).order_by(Run.created_at.desc(), Run.id.desc())
    query = (
        select(*_RUN_SELECT_COLUMNS, _best_speedup())
        .where(*conditions)
        .order_by(Run.created_at.desc(), Run.id.desc())
    )
    if limit is not None:
        ids = ids.limit(limit)
        query = query.limit(limit)
    with db.session() as session:
        return _runs_frame(session, query, ids)


def _variant_order(spec: Any) -> dict[str, int]:
    variants = spec.get("variants") if isinstance(spec, dict) else None
    if not isinstance(variants, list):
        return {}
    return {name: i for i, name in enumerate(variants) if isinstance(name, str)}


def load_runs(db: Database, run_ids: Iterable[int]) -> dict[str, pd.DataFrame]:
    """Everything the dashboard draws for the given runs, as DataFrames keyed by table name.

    Keys: ``runs`` (in the order of ``run_ids``; unknown ids are left out), ``variants`` (per
    run in the order of the spec's variants), ``graph_breaks``, ``recompiles``,
    ``sweep_points``, and the long frames ``warmup`` (1-based ``call_index``) and ``samples``
    (``kind`` per SAMPLE_KINDS, 1-based ``round_index``).
    """
    wanted = list(dict.fromkeys(int(run_id) for run_id in run_ids))
    run_frames, variant_rows = [], []
    children: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    with db.session() as session:
        for ids in id_chunks(wanted):
            query = select(*_RUN_SELECT_COLUMNS, _best_speedup()).where(Run.id.in_(ids))
            run_frames.append(_runs_frame(session, query, select(Run.id).where(Run.id.in_(ids))))
            variant_rows += session.execute(
                select(
                    VariantResult.id,
                    VariantResult.run_id,
                    *(getattr(VariantResult, c) for c in _VARIANT_SELECT),
                )
                .where(VariantResult.run_id.in_(ids))
                .order_by(VariantResult.id)
            ).all()
            for name, entity, columns in (
                ("graph_breaks", GraphBreak, GRAPH_BREAK_COLUMNS[2:]),
                ("recompiles", Recompile, RECOMPILE_COLUMNS[2:]),
                ("sweep_points", SweepPoint, SWEEP_COLUMNS[2:]),
            ):
                children[name] += session.execute(
                    select(entity.variant_result_id, *(getattr(entity, c) for c in columns))
                    .join(VariantResult, VariantResult.id == entity.variant_result_id)
                    .where(VariantResult.run_id.in_(ids))
                    .order_by(entity.variant_result_id, entity.position)
                ).all()

    if len(run_frames) > 1:
        import pandas as pd

        runs = pd.concat(run_frames, ignore_index=True)
    else:
        runs = run_frames[0] if run_frames else _frame([], RUN_COLUMNS)
    rank = {run_id: i for i, run_id in enumerate(wanted)}
    runs = runs.iloc[sorted(range(len(runs)), key=lambda i: rank[runs["run_id"].iat[i]])]
    runs = runs.reset_index(drop=True)

    # Order variants: by requested run, then as the run's spec lists them, then by save order.
    orders = {row.run_id: _variant_order(row.spec) for row in runs.itertuples()}
    variant_rows.sort(
        key=lambda r: (rank[r.run_id], orders[r.run_id].get(r.variant, len(orders[r.run_id])), r.id)
    )
    owner = {r.id: (r.run_id, r.variant) for r in variant_rows}
    position = {r.id: i for i, r in enumerate(variant_rows)}

    variant_records, warmup, samples = [], [], []
    for r in variant_rows:
        # each row through the contract's typed result, as ``show`` reads it (storage/records)
        typed = typed_variant(r, series=True)
        row = typed.row(series=True)
        variant_records.append(
            tuple(r.run_id if c == "run_id" else r.variant if c == "variant" else row.get(c)
                  for c in VARIANT_COLUMNS)
        )
        warmup += [(r.run_id, r.variant, i, ms)
                   for i, ms in enumerate(typed.figure("warmup_ms") or [], 1)]
        for kind, column in SAMPLE_KINDS.items():
            series = typed.figure(column) or []
            samples += [(r.run_id, r.variant, kind, i, ms) for i, ms in enumerate(series, 1)]

    def child_frame(name: str, columns: list[str]) -> pd.DataFrame:
        rows = sorted(children[name], key=lambda row: position[row[0]])
        return _frame([(*owner[row[0]], *row[1:]) for row in rows], columns)

    frames = {
        "runs": runs,
        "variants": _frame(variant_records, VARIANT_COLUMNS),
        "graph_breaks": child_frame("graph_breaks", GRAPH_BREAK_COLUMNS),
        "recompiles": child_frame("recompiles", RECOMPILE_COLUMNS),
        "sweep_points": child_frame("sweep_points", SWEEP_COLUMNS),
        "warmup": _frame(warmup, WARMUP_COLUMNS),
        "samples": _frame(samples, SAMPLE_COLUMNS),
    }
    _integral_if_possible(frames["recompiles"], "dim_value")
    _integral_if_possible(frames["sweep_points"], "value")
    return frames
