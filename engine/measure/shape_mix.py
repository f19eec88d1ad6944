"""Shape distributions: the sizes a service sees, with weights, replayed in that mix.

The spec names the sizes as a sweep (``--dim seq=32,64,128``) and their weights
(``shape_weights``, ``--weights 0.6,0.3,0.1``).  The child first measures the sweep as before: the
first call at each new size shows the recompile stall it causes (``sweep[].first_call_ms`` and
``recompiled``).  Then :func:`replay` feeds the same compiled model ``mix_requests`` requests
whose sizes are drawn from the weights (seeded, so every variant sees the same order) and times
each one: the steady per-request time in that mix, with whatever switching sizes costs (CUDA
graphs recorded per size, guards, a dynamic kernel against specialised ones), and any recompile
the replay still triggers (a recompile limit reached falls back to eager: it shows here).

:func:`expected` turns both into the expected per-request time of a process that serves ``N``
requests::

    per_request(N) = mean replay time + sum over sizes s that recompiled of
                     stall_s * P(s appears in N requests) / N,   P = 1 - (1 - w_s) ** N

with ``stall_s = first_call_ms_s - median_ms_s``.  The first size's compile is the variant's
compile cost (``first_call_cold_s``), counted by ``engine recommend``, not here.  The sweep meets
sizes in the order given, which decides when ``dynamic=None`` turns dynamic: with sizes in another
order the stalls would land on other sizes, but their number (one per size until the graph
turns dynamic) is the same.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from contract import fmt
from contract.schema import BOUNDS

MAX_REQUESTS = int(BOUNDS["mix_requests"].hi)


def check(spec: dict[str, Any]) -> None:
    """Validate ``shape_weights`` against the sweep and normalise them to sum 1 (in place);
    raises ValueError with a message for the user."""
    weights = spec.get("shape_weights")
    if weights is None:
        return
    sweep = spec.get("sweep")
    if not sweep:
        raise ValueError("shape_weights weigh the sizes of a sweep: give the sizes as a sweep "
                         "too (e.g. --dim seq=32,64,128 --weights 0.6,0.3,0.1)")
    if not isinstance(weights, list) or len(weights) != len(sweep["values"]):
        raise ValueError(f"shape_weights must be a list of {len(sweep['values'])} numbers, one "
                         f"per value of {sweep['dim']}")
    if not all(fmt.is_num(w) and 0 <= float(w) <= 1e12 for w in weights):
        raise ValueError("shape_weights must be numbers from 0 to 1e12 (only their ratios count)")
    total = sum(float(w) for w in weights)
    if total <= 0:
        raise ValueError("shape_weights must not all be 0")
    spec["shape_weights"] = [float(w) / total for w in weights]


def draw(values: Sequence[int], weights: Sequence[float], n: int, seed: int) -> list[int]:
    """``n`` sizes drawn from the mix, the same for every variant of a run (seeded)."""
    return random.Random(seed).choices(list(values), weights=list(weights), k=n)


def replay(values: Sequence[int], weights: Sequence[float], requests: int, seed: int,
           inputs_for: Callable[[int], Any], call: Callable[[Any], Any],
           time_ms: Callable[[Callable[[], Any]], float],
           compile_count: Callable[[], int]) -> dict[str, Any]:
    """Time ``requests`` calls in the mix (each timed alone, synchronised: a request's latency)."""
    inputs = {v: inputs_for(v) for v in dict.fromkeys(values)}
    order = draw(values, weights, requests, seed)
    before = compile_count()
    times: dict[int, list[float]] = {v: [] for v in inputs}
    for v in order:
        x = inputs[v]
        times[v].append(time_ms(lambda x=x: call(x)))
    every = [t for ts in times.values() for t in ts]
    return {"requests": requests, "seed": seed,
            "weights": {str(v): w for v, w in zip(values, weights, strict=True)},
            "mean_ms": statistics.fmean(every) if every else None,
            "median_ms": statistics.median(every) if every else None,
            "per_value_median_ms": {str(v): statistics.median(ts) for v, ts in times.items()
                                    if ts},
            "recompiles": compile_count() - before}


def expected(mix: Mapping[str, Any], sweep: Sequence[Mapping[str, Any]], calls: int
             ) -> dict[str, Any] | None:
    """The expected per-request time over ``calls`` requests (module doc), or None without a
    replay."""
    mean = fmt.num(mix.get("mean_ms")) if isinstance(mix, Mapping) else None
    if mean is None:
        return None
    weights = mix.get("weights") or {}
    stalls = 0.0
    recompiles = 0.0
    for p in sweep:
        if not p.get("recompiled"):
            continue
        w = fmt.num(weights.get(str(int(p["value"])))) or 0.0
        first, med = fmt.num(p.get("first_call_ms")), fmt.num(p.get("median_ms"))
        if first is None or med is None or w <= 0:
            continue
        seen = 1.0 - math.pow(1.0 - w, calls) if w < 1 else 1.0
        stalls += max(first - med, 0.0) * seen
        recompiles += seen
    return {"steady_ms": mean, "stall_ms": stalls, "recompiles": recompiles,
            "per_request_ms": mean + stalls / calls, "replay_recompiles": mix.get("recompiles")}


def lines(rows: Sequence[Mapping[str, Any]], calls: int) -> list[str]:
    """Per variant that replayed a mix: its dynamic setting and expected per-request time."""
    from engine.grid import settings

    out: list[str] = []
    for r in rows:
        mix = r.get("shape_mix")
        if r.get("status", "ok") != "ok" or not isinstance(mix, Mapping):
            continue
        e = expected(mix, r.get("sweep") or [], calls)
        if e is None:
            continue
        dyn = settings(str(r["variant"])).get("dynamic", "as the run's")
        what = "not compiled" if r["variant"] == "eager" else f"dynamic {dyn}"
        out.append(f"  {r['variant']} ({what}): {fmt.ms(e['per_request_ms'])} per request "
                   f"= {fmt.ms(e['steady_ms'])} in the mix + {fmt.ms(e['stall_ms'])} of "
                   f"recompile stalls ({e['recompiles']:.2g} expected) over {calls:,} requests"
                   + (f"; {e['replay_recompiles']} recompiles during the replay itself"
                      if e.get("replay_recompiles") else ""))
    if out:
        out.insert(0, f"Shape mix: expected per-request time over {calls:,} requests, "
                      "recompile stalls included:")
    return out
