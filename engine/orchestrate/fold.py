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

from engine.analysis import stats, variant_stats
from engine.measure import forensics


def merge_process(base: dict[str, Any], child: dict[str, Any]) -> None:
    """Fold a further measuring process's result into its variant's result (the cold process's,
    which carries the warm-up curve, compile, memory, profiler and graph-break figures)."""
    proc = dict(child["processes"][0])
    proc.update(first_call_s=child.get("first_call_warm_s"), phases=child.get("phases"),
                compile_load=child.get("compile_load"),
                started_at=child.get("process_started_at"),
                spawned_at=child.get("process_spawned_at"), ended_at=child.get("process_ended_at"))
    base["processes"].append(proc)
    for key in ("samples_ms", "pipelined_ms", "eager_samples_ms", "eager_pipelined_ms"):
        base[key] = list(base.get(key) or []) + list(proc[key])
    if proc.get("pipeline_k") is not None:  # the pipelined K each process used (engine/pipeline_k)
        base["pipeline_k"] = list(base.get("pipeline_k") or []) + [proc["pipeline_k"]]
    loads = [p.get("host_other_busy_cores") for p in base["processes"]]
    loads = [x for x in loads if x is not None]
    base["host_other_busy_cores"] = max(loads) if loads else None
    base["host_probe"] = host_probe_median(base["processes"])
    # The first warm-cache process's first call: a fresh process on the filled cache with
    # inductor's defaults, as a user's restart (later ones run without the compile-worker pool).
    base["first_call_warm_s"] = base["processes"][1].get("first_call_s")
    base["compile_load"] = {"cold": base["processes"][0].get("compile_load"),
                            "warm": base["processes"][1].get("compile_load")}
    base.setdefault("compile_phases_warm_s", child.get("compile_phases_warm_s"))
    forensics.merge_cache(base, child)


def host_probe_median(processes: list[dict[str, Any]]) -> dict[str, float] | None:
    """Each host-probe figure (engine/measure/host_probe.py) as the median over ``processes``."""
    probes = [p["host_probe"] for p in processes if isinstance(p.get("host_probe"), dict)]
    keys = sorted({k for p in probes for k in p})
    out = {k: statistics.median(v) for k in keys
           if (v := [float(p[k]) for p in probes if isinstance(p.get(k), (int, float))])}
    return out or None


def first_process(result: dict[str, Any]) -> None:
    """The cold process's own entry in ``processes``: when it ran and its phases."""
    load = result.get("compile_load")
    if load is not None:  # the cold compile's host (engine/measure/compile_load.py); "warm" joins later
        result["compile_load"] = {"cold": load}
    for proc in result.get("processes") or []:
        proc.update(first_call_s=result.get("first_call_cold_s"), phases=result.pop("phases", None),
                    compile_load=load,
                    started_at=result.pop("process_started_at", None),
                    spawned_at=result.pop("process_spawned_at", None),
                    ended_at=result.pop("process_ended_at", None))


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
    return out
