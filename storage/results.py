"""Writing what a run produced: variant results (one transaction each), environment, notes, tags.

``save_variant_result`` is called by the worker as soon as each variant's child process ends, and
commits right away: a worker crash in the middle of a run loses at most the variant in flight.

The field lists below are the single description of the VariantResult JSON on the storage side:
saving maps them to columns, ``storage.queries`` reads them back and ``storage.bundle`` validates
imports against them.
"""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from contract.schema import kinds
from contract.text import check_note, normalize_tags
from storage.db import Database
from storage.models import (
    VARIANT_STATUSES,
    GraphBreak,
    Recompile,
    Run,
    RunTag,
    SweepPoint,
    VariantResult,
)

log = logging.getLogger(__name__)

# Derived from the one contract (contract/schema.py): figures with a column of their own.  The
# others (``column=False``) are kept in ``extra`` like any key this schema does not know.
RESULT_FIELDS: dict[str, str] = kinds("result", column=True)
STATS_FIELDS: dict[str, str] = kinds("stats", column=True)
GRAPH_BREAK_FIELDS: dict[str, str] = {"reason": "str", "file": "str", "line": "int", "count": "int"}
RECOMPILE_FIELDS: dict[str, str] = {"reason": "str", "call_index": "int", "dim_value": "float",
                                    "phase": "str"}
SWEEP_FIELDS: dict[str, str] = {
    "value": "float",
    "first_call_ms": "float",
    "median_ms": "float",
    "p10_ms": "float",
    "p90_ms": "float",
    "n": "int",
    "recompiled": "bool",
    "eager_median_ms": "float",  # paired eager median at this value (schema revision 0002)
}
# Child lists of a VariantResult: JSON key -> (entity, its fields).
CHILDREN: dict[str, tuple[type, dict[str, str]]] = {
    "graph_breaks": (GraphBreak, GRAPH_BREAK_FIELDS),
    "recompiles": (Recompile, RECOMPILE_FIELDS),
    "sweep": (SweepPoint, SWEEP_FIELDS),
}
# Keys handled explicitly rather than through the tables above.
STRUCTURAL_KEYS = frozenset({"variant", "status", "stats", "extra", *CHILDREN})

# Text caps: an engine bug must not be able to write megabytes into every row.
MAX_ERROR_CHARS = 10_000
MAX_STDERR_CHARS = 64_000
# Notes and tags: contract/text.py (MAX_NOTE_CHARS, MAX_TAGS), the one rule for user text.


# Ids per IN (...) list: well under SQLite's and PostgreSQL's bound-parameter limits.
IN_CHUNK = 5000


def id_chunks(ids: Iterable[int]) -> list[list[int]]:
    """Distinct ids in ascending order, cut into lists short enough for one ``IN (...)``."""
    unique = sorted({int(run_id) for run_id in ids})
    return [unique[i : i + IN_CHUNK] for i in range(0, len(unique), IN_CHUNK)]


class RunNotFound(LookupError):
    """No run with the given id."""


def require_run(session: Session, run_id: int) -> Run:
    """The run with ``run_id``, or ``RunNotFound``."""
    run = session.get(Run, run_id)
    if run is None:
        raise RunNotFound(f"no run with id {run_id}")
    return run


# ---- value coercion (lenient: the engine's own results, possibly numpy scalars) ----


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool) or (
        type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_")
    )


def _finite_or_none(value: float) -> float | None:
    # SQLite stores NaN as NULL anyway, and standard JSON has neither NaN nor Infinity.
    return value if math.isfinite(value) else None


def coerce(value: Any, kind: str, name: str) -> Any:
    """Convert ``value`` to what column kind ``kind`` stores; ``ValueError`` if it cannot."""
    if value is None:
        return None
    if kind == "str":
        return _clean_text(value if isinstance(value, str) else str(value))
    if kind == "bool":
        if _is_bool(value):
            return bool(value)
        raise ValueError(f"{name}: expected a boolean, got {value!r}")
    if _is_bool(value):
        raise ValueError(f"{name}: expected a number, got {value!r}")
    if kind == "float":
        if isinstance(value, numbers.Real):
            return _finite_or_none(float(value))
        raise ValueError(f"{name}: expected a number, got {value!r}")
    if kind == "int":
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, numbers.Real) and float(value).is_integer():
            return int(value)
        raise ValueError(f"{name}: expected an integer, got {value!r}")
    if kind == "series":
        if hasattr(value, "tolist"):
            value = value.tolist()
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            raise ValueError(f"{name}: expected a list of numbers, got {type(value).__name__}")
        return [coerce(item, "float", name) for item in value]
    if kind == "json":
        return json_safe(value)
    raise AssertionError(f"unknown field kind {kind!r}")


def _clean_text(text: str) -> str:
    # PostgreSQL text cannot hold NUL, and a crashing child's stderr may contain anything.
    return text.replace("\x00", "\ufffd")


def json_safe(value: Any) -> Any:
    """A copy of ``value`` made of plain JSON types (numpy scalars unwrapped, NaN -> None)."""
    if value is None:
        return None
    if isinstance(value, str):
        return _clean_text(value)
    if _is_bool(value):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return _finite_or_none(float(value))
    if isinstance(value, Mapping):
        return {_clean_text(str(key)): json_safe(item) for key, item in value.items()}
    if hasattr(value, "tolist"):
        return json_safe(value.tolist())
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return _clean_text(str(value))


def _cap(text: str | None, limit: int, keep_tail: bool = False) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return "…" + text[-(limit - 1) :] if keep_tail else text[: limit - 1] + "…"


def _children(result: Mapping[str, Any], key: str) -> list[Any]:
    entity, fields = CHILDREN[key]
    items = result.get(key) or []
    if not isinstance(items, (list, tuple)):
        raise ValueError(f"{key}: expected a list, got {type(items).__name__}")
    rows = []
    for position, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ValueError(f"{key}[{position}]: expected an object, got {type(item).__name__}")
        unknown = set(item) - set(fields)
        if unknown:
            log.warning("%s[%d]: ignoring keys without a column: %s", key, position, unknown)
        values = {
            f: coerce(item.get(f), kind, f"{key}[{position}].{f}") for f, kind in fields.items()
        }
        rows.append(entity(position=position, **values))
    return rows


def build_variant_result(result: Mapping[str, Any]) -> VariantResult:
    """Map a VariantResult dict (contract in docs/CONTRACTS.md) to an unsaved entity.

    Keys this schema has no column for (top level or inside ``stats``) go to ``extra`` so that a
    newer engine's additions survive; ``storage.bundle`` puts them back on export.
    """
    if not isinstance(result, Mapping):
        raise TypeError(f"result must be a dict, got {type(result).__name__}")
    variant = result.get("variant")
    if not isinstance(variant, str) or not variant:
        raise ValueError("result['variant'] must be a non-empty string")
    status = result.get("status")
    if status not in VARIANT_STATUSES:
        raise ValueError(f"result['status'] must be one of {VARIANT_STATUSES}, got {status!r}")
    stats = result.get("stats") or {}
    if not isinstance(stats, Mapping):
        raise ValueError(f"stats: expected an object, got {type(stats).__name__}")

    values = {f: coerce(result.get(f), kind, f) for f, kind in RESULT_FIELDS.items()}
    values.update({f: coerce(stats.get(f), kind, f"stats.{f}") for f, kind in STATS_FIELDS.items()})
    values["error"] = _cap(values["error"], MAX_ERROR_CHARS)
    values["stderr_tail"] = _cap(values["stderr_tail"], MAX_STDERR_CHARS, keep_tail=True)

    extra: dict[str, Any] = dict(json_safe(result.get("extra") or {}))
    extra.update(
        {
            k: json_safe(v)
            for k, v in result.items()
            if k not in RESULT_FIELDS and k not in STRUCTURAL_KEYS
        }
    )
    stats_extra = {k: json_safe(v) for k, v in stats.items() if k not in STATS_FIELDS}
    if stats_extra:
        extra["stats"] = {**extra.get("stats", {}), **stats_extra}

    entity = VariantResult(variant=variant, status=status, extra=extra or None, **values)
    entity.graph_breaks = _children(result, "graph_breaks")
    entity.recompiles = _children(result, "recompiles")
    entity.sweep_points = _children(result, "sweep")
    if "recompile_count" not in result and result.get("recompiles") is not None:
        entity.recompile_count = len(entity.recompiles)
    return entity


def save_variant_result(db: Database, run_id: int, result: Mapping[str, Any]) -> int:
    """Persist one variant's result with its child rows, in its own transaction; returns its id.

    Saving the same variant of a run again (a re-queued run measured a second time) replaces
    the earlier result.
    """
    entity = build_variant_result(result)
    with db.session(write=True) as session:
        require_run(session, run_id)
        return put_variant_result(session, run_id, entity)


def put_variant_result(session: Session, run_id: int, entity: VariantResult) -> int:
    """Replace the run's result of ``entity.variant`` inside the caller's transaction (the run
    is known to exist); returns the new row's id."""
    session.execute(
        delete(VariantResult).where(
            VariantResult.run_id == run_id, VariantResult.variant == entity.variant
        )
    )
    entity.run_id = run_id
    session.add(entity)
    session.flush()
    return entity.id


# ---- environment, notes, tags ----


def _first_name(value: Any) -> str | None:
    if isinstance(value, list):
        value = value[0] if value else None
    if isinstance(value, Mapping):
        value = value.get("name")
    return value if isinstance(value, str) and value else None


def apply_environment(run: Run, environment: Mapping[str, Any]) -> None:
    """Store the fingerprint on ``run`` and denormalise ``gpu`` and ``torch_version`` from it.

    Reads ``gpu`` (name of the GPU the run used; ``gpu_name`` is accepted too) and ``torch``
    (``torch_version`` too). A CPU run without a GPU entry gets ``gpu = "cpu"``, so the runs
    page can filter "cpu" like any GPU name.
    """
    if not isinstance(environment, Mapping):
        raise TypeError(f"environment must be a dict, got {type(environment).__name__}")
    env = json_safe(environment)
    run.environment = env
    gpu = _first_name(env.get("gpu")) or _first_name(env.get("gpu_name"))
    if gpu is None and run.device == "cpu":
        gpu = "cpu"
    run.gpu = gpu[:256] if gpu else None
    torch_version = env.get("torch") or env.get("torch_version")
    run.torch_version = str(torch_version)[:64] if torch_version else None


def set_environment(db: Database, run_id: int, env: Mapping[str, Any]) -> None:
    """Record the environment fingerprint of a run (see ``apply_environment``)."""
    with db.session(write=True) as session:
        apply_environment(require_run(session, run_id), env)


def set_note(db: Database, run_id: int, text: str) -> None:
    """Replace a run's free-text note (``contract.text.check_note``: the one rule for notes)."""
    check_note(text)
    with db.session(write=True) as session:
        require_run(session, run_id).note = text


def set_tags(db: Database, run_id: int, tags: Iterable[str]) -> list[str]:
    """Replace a run's tags; returns them as stored (normalised)."""
    clean = normalize_tags(tags)
    with db.session(write=True) as session:
        require_run(session, run_id)
        session.execute(delete(RunTag).where(RunTag.run_id == run_id))
        session.add_all(RunTag(run_id=run_id, tag=tag) for tag in clean)
    return clean


def delete_runs(db: Database, run_ids: Iterable[int]) -> int:
    """Delete finished or queued runs with all their results; returns how many were deleted.

    Running runs are refused (cancel them first): their worker would go on writing results.
    """
    deleted = 0
    with db.session(write=True) as session:
        for ids in id_chunks(run_ids):
            running = session.scalars(
                select(Run.id).where(Run.id.in_(ids), Run.status == "running")
            ).all()
            if running:
                raise ValueError(f"runs {sorted(running)} are running; cancel them first")
            stmt = delete(Run).where(Run.id.in_(ids)).execution_options(synchronize_session=False)
            deleted += session.execute(stmt).rowcount
    return deleted
