"""A variant's ``stats`` block (docs/CONTRACTS.md), filled from its measuring processes.

``engine.stats`` holds the methods (summaries, the hierarchical speedup interval, break-even);
this module applies them to one stored VariantResult: the per-process locations, the per-call
and pipelined speedups with their intervals, the disagreement test and both break-evens.  The
runner calls ``add_stats`` on every result it stores; numpy and scipy only (no torch).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.stats import (
    ProcessRounds,
    as_samples,
    break_even_calls,
    hierarchical_speedup,
    summarize,
)


def _geomean(values: Sequence[float]) -> float:
    return float(math.exp(np.mean(np.log(np.asarray(values, dtype=np.float64)))))


def _median_or_none(values: Sequence[float] | None) -> float | None:
    if values is None or len(values) == 0:
        return None
    return float(np.median(as_samples(values)))


def _per_process_location(processes: list[dict[str, Any]], key: str) -> float | None:
    """Geometric mean over processes of each process's median of ``key`` (None if any lacks it)."""
    medians = [_median_or_none(p.get(key)) for p in processes]
    if not medians or any(m is None or m <= 0 for m in medians):
        return None
    return _geomean(medians)  # type: ignore[arg-type]


def process_rounds(processes: list[dict[str, Any]]) -> list[ProcessRounds]:
    """The paired rounds of each measuring process of a VariantResult."""
    return [ProcessRounds.from_samples(p["eager_samples_ms"], p["samples_ms"],
                                       int(p.get("block") or 1)) for p in processes]


def add_stats(result: dict[str, Any], eager_first_call_ms: float | None = None, *,
              n_boot: int = 2000, ci: float = 0.95, seed: int = 0) -> dict[str, Any]:
    """Fill ``result["stats"]`` of a VariantResult (docs/CONTRACTS.md) and return ``result``.

    Reads the per-process rounds in ``result["processes"]`` (a result without that list, from
    an older engine, is treated as one process over its pooled samples).  Every key of the
    contract's stats block is present; figures whose inputs are missing are None, and results
    whose status is not "ok" get None everywhere.  ``eager_first_call_ms`` is eager's first
    call after CUDA start-up (the runner takes it from the eager variant), for break-even.
    """
    from engine.contract import empty_stats  # the contract names every key

    stats = empty_stats()
    result["stats"] = stats
    if result.get("status") != "ok":
        return result
    samples = result.get("samples_ms") or []
    if len(samples) == 0:
        return result
    s = summarize(samples)
    stats.update(mean_ms=s.mean, p10_ms=s.p10, p90_ms=s.p90, iqr_ms=s.iqr, n=s.n, noisy=s.noisy)
    procs = result.get("processes") or [{
        "samples_ms": samples, "eager_samples_ms": result.get("eager_samples_ms") or [],
        "pipelined_ms": result.get("pipelined_ms"),
        "eager_pipelined_ms": result.get("eager_pipelined_ms"), "block": 1}]
    procs = [p for p in procs if p.get("samples_ms")]
    stats["n_processes"] = len(procs)
    stats["median_ms"] = _per_process_location(procs, "samples_ms")
    stats["eager_median_ms"] = _per_process_location(procs, "eager_samples_ms")
    stats["pipelined_median_ms"] = _per_process_location(procs, "pipelined_ms")
    stats["eager_pipelined_median_ms"] = _per_process_location(procs, "eager_pipelined_ms")
    stats["stop_reason"] = result.pop("stop_reason", None)  # the runner's; kept in stats only

    if result.get("variant") == "eager":
        # The baseline against itself, by construction.
        stats.update(speedup=1.0, speedup_ci_low=1.0, speedup_ci_high=1.0)
        return result
    if stats["eager_median_ms"] is None or not stats["median_ms"]:
        return result
    try:
        est = hierarchical_speedup(process_rounds(procs), ci=ci, n_boot=n_boot, seed=seed)
    except ValueError:
        # Unpaired or broken series (not from this runner): the point estimate only, never an
        # interval that would claim a pairing that is not there.
        stats["speedup"] = stats["eager_median_ms"] / stats["median_ms"]
        return result
    stats.update(speedup=est.speedup, speedup_ci_low=est.low, speedup_ci_high=est.high,
                 process_speedups=list(est.process_speedups), speedup_spread=est.spread,
                 within_process_spread=est.within_spread, disagree_p=est.disagree_p,
                 processes_disagree=est.disagree, interval_method=est.method)

    # The throughput verdict's interval: the pipelined calls of the same paired rounds (one
    # sample a side a round), by the same hierarchical bootstrap as the per-call speedup.
    try:
        pe = hierarchical_speedup(
            [ProcessRounds.from_samples(p["eager_pipelined_ms"], p["pipelined_ms"], 1)
             for p in procs], ci=ci, n_boot=n_boot, seed=seed)
        stats.update(pipelined_speedup=pe.speedup, pipelined_ci_low=pe.low,
                     pipelined_ci_high=pe.high)
    except (ValueError, TypeError, KeyError):
        pass  # no pipelined rounds (older results, a failed pass): the point estimate only

    eager_first = (float(eager_first_call_ms) if eager_first_call_ms is not None
                   else stats["eager_median_ms"])
    stats["eager_first_call_ms"] = eager_first
    # The compiled per-call time as the paired speedup puts it (paired eager / speedup), the
    # figure `engine recommend` uses too, so both name the same break-even (engine/recommend.py)
    compiled_per_call = stats["eager_median_ms"] / est.speedup
    for key, first_s in (("break_even_calls", result.get("first_call_cold_s")),
                         ("break_even_calls_warm", result.get("first_call_warm_s"))):
        if first_s is not None:
            stats[key] = break_even_calls(eager_first, float(first_s) * 1000.0,
                                          stats["eager_median_ms"], compiled_per_call)
    return result
