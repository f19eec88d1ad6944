"""Folding measuring processes into a variant's result, and its stats over the whole run.

A variant's first (cold) process result carries its one-off figures (warm-up curve, compile,
memory, profiler, graph breaks); each further process adds its paired rounds, first call and
host figures (``merge_process``).  ``with_stats`` then computes the stats block from the whole
run (engine/analysis/variant_stats.py: one eager for the run).
"""

from __future__ import annotations

import copy
import statistics
from typing import Any

from contract.results import SERIES, ProcessResult, VariantResult
from engine.analysis import stats, variant_stats
from engine.measure import forensics


def merge_process(base: dict[str, Any], child: dict[str, Any]) -> None:
    """Fold a further measuring process's result into its variant's result (the cold process's,
    which carries the warm-up curve, compile, memory, profiler and graph-break figures)."""
    base["processes"].append(
        ProcessResult.from_child(child, child.get("first_call_warm_s")).to_json())
    procs = [ProcessResult.from_json(p) for p in base["processes"]]
    for key in SERIES:  # the pooled series, process after process
        base[key] = [x for p in procs for x in getattr(p, key)]
    base["pipeline_k"] = [p.pipeline_k for p in procs if p.pipeline_k is not None] or None
    loads = [p.host_other_busy_cores for p in procs if p.host_other_busy_cores is not None]
    base["host_other_busy_cores"] = max(loads) if loads else None
    base["host_probe"] = host_probe_median(procs)
    # The first warm-cache process's first call: a fresh process on the filled cache with
    # inductor's defaults, as a user's restart (later ones run without the compile-worker pool).
    base["first_call_warm_s"] = procs[1].first_call_s
    base["compile_load"] = {"cold": base["processes"][0].get("compile_load"),
                            "warm": base["processes"][1].get("compile_load")}
    base.setdefault("compile_phases_warm_s", child.get("compile_phases_warm_s"))
    forensics.merge_cache(base, child)


def host_probe_median(processes: list[ProcessResult]) -> dict[str, float] | None:
    """Each host-probe figure (engine/measure/host_probe.py) as the median over ``processes``."""
    probes = [p.host_probe for p in processes if p.host_probe]
    keys = sorted({k for p in probes for k in p})
    out = {k: statistics.median(v) for k in keys if (v := [p[k] for p in probes if k in p])}
    return out or None


def first_process(result: dict[str, Any]) -> None:
    """The cold process's own entry in ``processes``: when it ran and its phases."""
    load = result.get("compile_load")
    if load is not None:  # the cold compile's host (engine/measure/compile_load.py)
        result["compile_load"] = {"cold": load}
    draw = {k: result.pop(k, None) for k in ("autotune_draw", "autotune_draw_note")}
    if not result.get("processes"):
        return  # a process that failed before timing keeps its phases where they are
    child = {**result, "compile_load": load, **draw}
    result["processes"] = [ProcessResult.from_child(
        child, result.get("first_call_cold_s")).to_json()]
    for key in ("phases", "process_started_at", "process_spawned_at", "process_ended_at"):
        result.pop(key, None)


def time_breakdown(processes: list[dict[str, Any]]) -> dict[str, float]:
    """Where a variant's wall time went, summed over its processes (seconds): "process start"
    (spawn to the interpreter running our code), then the child's own phases (imports, setup,
    compile, warm-up, measure, profile), and "exit" (last phase to the process being reaped)."""
    out: dict[str, float] = {}

    def add(name: str, seconds: float | None) -> None:
        if seconds is not None and seconds >= 0:
            out[name] = out.get(name, 0.0) + seconds

    for p in processes:
        phases = [ph for ph in p.get("phases") or [] if isinstance(ph, dict)]
        if p.get("spawned_at") and p.get("started_at"):
            add("process start", p["started_at"] - p["spawned_at"])
        for ph in phases:
            add(str(ph.get("name")), float(ph["end"]) - float(ph["start"]))
        if phases and p.get("ended_at"):
            add("exit", p["ended_at"] - max(float(ph["end"]) for ph in phases))
    return {k: round(v, 3) for k, v in out.items()}


def with_stats(result: dict[str, Any], results: dict[str, dict[str, Any]],
               eager_first_ms: float | None,
               history: dict[str, stats.VariancePrior] | None = None) -> dict[str, Any]:
    """A copy of ``result`` with its stats block, computed with the whole run's results (one
    eager for the run, the variance its variants may share: engine/analysis/variant_stats.py)."""
    out = variant_stats.add_stats(copy.deepcopy(result), results,
                                  eager_first_call_ms=eager_first_ms, history=history)
    if out.get("processes"):
        out["time_s"] = time_breakdown(out["processes"])
    # Through the typed result once (contract/results.py): what a child wrote that does not fit
    # its figure's kind is dropped here, before anything stores or shows it.
    return VariantResult.from_json(out).to_json()
