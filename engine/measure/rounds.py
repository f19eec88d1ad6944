"""Steady-state sampling inside one measuring process: interleaved rounds of eager and compiled.

``steady_rounds`` is the schedule the measuring child (engine/measure/child.py) runs once its process
times alone: per round and function, untimed warm calls, a block of per-call samples and one
pipelined sample of K calls (K capped by time, engine/measure/pipeline_k.py), the order flipping every
round.  ``timing_budget`` turns a run spec into its keyword arguments.  No torch import: the
timer (engine/measure/timing.py) does the synchronising.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from engine.measure import pipeline_k
from engine.measure.timing import Timer

BLOCK, WARM = 10, 3


def steady_rounds(
    timer: Timer,
    fns: dict[str, Callable[[], object]],
    *,
    min_samples: int,
    min_time_s: float,
    max_time_s: float,
    k: int,
    block: int = BLOCK,
    warm: int = WARM,
    k_budget_ms: float | None = None,
    on_round: Callable[[float], None] | None = None,
) -> dict[str, dict[str, list[float]]]:
    """Interleaved rounds, alternating in blocks. In each round every function in turn gets
    ``warm`` untimed calls, then ``block`` per-call samples, then one pipelined sample of ``k``
    calls; the order of the functions flips every round. Rounds still alternate, so drift of the
    clocks or of the host's load hits eager and compiled alike and sample i of round r is paired
    across functions. Why blocks and not one call each: switching between the eager and compiled
    code paths leaves the host's caches and predictors cold, and alternating every call slowed
    *both* functions (docs/measurements/2026-12-02-h200-acceptance.md;
    acceptance/interleave_check.py measures it); a serving loop calls the same model over and over,
    which is what we time.
    Stops once ``min_samples`` per-call samples and ``min_time_s`` are reached, or at
    ``max_time_s`` (after at least 3 rounds).  With ``k_budget_ms`` (``engine.measure.pipeline_k``)
    the pipelined K is capped from the first block's per-call times; the K of each pipelined
    sample is in ``pipeline_k``."""
    names = list(fns)
    out = {n: {"per_call": [], "pipelined": [], "pipeline_k": []} for n in names}
    block, warm = max(int(block), 1), max(int(warm), 0)
    k_used = None if k_budget_ms is not None else k  # None: chosen after the first block
    t_start = time.perf_counter()
    rounds = 0
    while True:
        for n in names if rounds % 2 == 0 else names[::-1]:
            fn = fns[n]
            for _ in range(warm):
                fn()
            out[n]["per_call"].extend(timer.per_call_ms(fn) for _ in range(block))
            if k_used is None:
                k_used = pipeline_k.capped_k(k, out[n]["per_call"], k_budget_ms)
            out[n]["pipelined"].append(timer.pipelined_ms(fn, k_used))
            out[n]["pipeline_k"].append(k_used)
        rounds += 1
        elapsed = time.perf_counter() - t_start
        n_samples = rounds * block
        if on_round:
            on_round(max(n_samples / max(min_samples, 1), elapsed / max_time_s))
        if n_samples >= min_samples and elapsed >= min_time_s:
            break
        if elapsed >= max_time_s and rounds >= 3:
            break
    return out


def timing_budget(run: dict[str, Any]) -> dict[str, Any]:
    """``steady_rounds``' keyword arguments from the run spec."""
    budget = dict(min_samples=int(run.get("min_samples", 30)),
                  min_time_s=float(run.get("min_time_s", 0.5)),
                  max_time_s=float(run.get("max_time_s", 10.0)),
                  k=int(run.get("pipeline_k", 50)),
                  # at most K calls a pipelined sample, about 75 ms of them (engine/pipeline_k)
                  k_budget_ms=pipeline_k.SAMPLE_BUDGET_MS)
    # Blocks of 10 per-call samples per function and round; a smaller minimum-samples
    # budget (quick CPU checks) gets smaller blocks rather than more samples than asked.
    budget["block"] = min(BLOCK, budget["min_samples"])
    return budget
