"""What each run's verdict needs to say whether it trusts its own figures, for a list of runs.

The Runs page flags a run whose verdict cautions about its figures (noisy, busy host, host speed
moved, processes disagree, provisional, eager per variant: ``engine.analysis.verdict.distrust``).  Those cautions
read a few values per variant, but most of them sit in the result's ``extra`` JSON, which holds
every sample (tens of KB per variant): reading it whole for a 2 000-run history would take
seconds.  So the database extracts the few values itself: scalars through SQLAlchemy's JSON
paths (the same on both dialects), and the host probe of each measuring process with each
dialect's JSON table function (the only dialect-specific code here).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from sqlalchemy import bindparam, select, text

from contract import fmt
from storage.db import Database
from storage.models import VariantResult
from storage.results import id_chunks

# One row per (variant result, measuring process): the process's host probe (µs per
# Python-level module call, engine/measure/host_probe.py).  Elements that are not objects
# (hostile or old rows) are skipped rather than failing the query.
_PROBES = {
    "sqlite": """
        SELECT v.id, json_extract(p.value, '$.host_probe.module_call_us')
        FROM variant_results AS v, json_each(v.extra, '$.processes') AS p
        WHERE v.run_id IN :ids AND p.type = 'object'""",
    "postgresql": """
        SELECT v.id, (p -> 'host_probe' ->> 'module_call_us')
        FROM variant_results AS v, json_array_elements(
            CASE WHEN json_typeof(v.extra::json -> 'processes') = 'array'
                 THEN v.extra::json -> 'processes' ELSE '[]'::json END) AS p
        WHERE v.run_id IN :ids AND json_typeof(p) = 'object'
          AND json_typeof(p -> 'host_probe') = 'object'""",
}


def trust_rows(db: Database, run_ids: Iterable[int]) -> dict[int, list[dict[str, Any]]]:
    """Per run id, its variants as the verdict's cautions read them: ``variant``, ``status``,
    ``noisy``, ``host_other_busy_cores``, ``processes_disagree``, ``provisional``,
    ``median_ms``, ``eager_median_ms`` and ``processes`` (each with only its ``host_probe``).  Runs without results are absent."""
    extra = VariantResult.extra
    columns = (
        VariantResult.id, VariantResult.run_id, VariantResult.variant, VariantResult.status,
        VariantResult.noisy, VariantResult.median_ms, VariantResult.eager_median_ms,
        extra["host_other_busy_cores"].as_float().label("busy"),
        extra[("stats", "processes_disagree")].as_boolean().label("disagree"),
        extra[("stats", "provisional")].as_boolean().label("provisional"),
    )
    rows: dict[int, dict[str, Any]] = {}
    out: dict[int, list[dict[str, Any]]] = defaultdict(list)
    probes = text(_PROBES[db.dialect]).bindparams(bindparam("ids", expanding=True))
    with db.session() as session:
        for ids in id_chunks(list(dict.fromkeys(int(r) for r in run_ids))):
            query = select(*columns).where(VariantResult.run_id.in_(ids)).order_by(
                VariantResult.id)
            for r in session.execute(query):
                row = {"variant": r.variant, "status": r.status, "noisy": r.noisy,
                       "host_other_busy_cores": r.busy, "processes_disagree": r.disagree,
                       "provisional": r.provisional, "median_ms": r.median_ms,
                       "eager_median_ms": r.eager_median_ms, "processes": []}
                rows[r.id] = row
                out[r.run_id].append(row)
            for result_id, call_us in session.execute(probes, {"ids": ids}):
                value = fmt.num(call_us)  # PostgreSQL's ->> hands over text
                if result_id in rows and value is not None:
                    rows[result_id]["processes"].append({"host_probe": {"module_call_us": value}})
    return dict(out)

