"""How often the speedup interval covers the speedup averaged over a compile's kernel draws,
when the processes share or redraw the autotuned kernel choice (docs/METHOD.md §2).

    python acceptance/draw_coverage_sim.py [--sims 300] [--draw-sd 0.024] [--process-sd 0.005]

Each simulated process reads eager and compiled in paired rounds (autocorrelated per-call noise
about 2 %, a host level the pairing cancels); its log speedup is moved by the draw it measures
(``--draw-sd``: the spread between compiles' kernel choices) and by its own process offset
(``--process-sd``). The processes go through the product's estimator and stopping rule at the
shipped defaults (``engine.analysis.variant_stats.add_stats``, ``engine.analysis.stats.
stop_reason``). Designs: every process replays the cold compile's draw (the engine before the
redraw); processes from index 2 draw anew (the engine now: the first warm-cache process
replays, so its first call is the warm-cache compile a user's restart pays), with the interval
over processes (as first built) or over draws (now: the two processes of the cold draw count
once); and processes from index 1 draw anew. The truth is the speedup averaged over draws. A benchmark script: it prints
figures. No torch.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from contract.schema import RunSpec  # noqa: E402
from engine.analysis.stats import rel_halfwidth, stop_reason  # noqa: E402
from engine.analysis.variant_stats import add_stats  # noqa: E402
from engine.measure.autotune_draw import FIRST_REDRAW, min_processes  # noqa: E402

SPEC = RunSpec(model="sim")
ROUNDS, BLOCK, NOISE_SD, AR = 4, 10, 0.02, 0.7


def _noise(rng: np.random.Generator, n: int) -> np.ndarray:
    out = np.empty(n)
    out[0] = rng.normal(0.0, NOISE_SD)
    step = rng.normal(0.0, NOISE_SD * math.sqrt(1 - AR**2), n)
    for i in range(1, n):
        out[i] = AR * out[i - 1] + step[i]
    return out


def _process(rng: np.random.Generator, speedup: float, offset: float) -> dict:
    n = ROUNDS * BLOCK
    host = rng.normal(0.0, 0.2)
    compiled = np.exp(host + _noise(rng, n))
    eager = speedup * math.exp(host + offset) * np.exp(_noise(rng, n))
    return {"samples_ms": compiled.tolist(), "eager_samples_ms": eager.tolist(), "block": BLOCK}


def _label(index: int, first_redraw: int) -> str:
    """The ``autotune_draw`` the runner stores for process ``index``."""
    if index >= first_redraw:
        return "redrawn"
    return "drawn" if index == 0 else "replayed"


def one_run(rng: np.random.Generator, truth: float, first_redraw: int, draw_sd: float,
            process_sd: float, by_draw: bool = True) -> tuple[float, float, int]:
    """(low, high, processes) of one variant measured with the shipped stopping rule; with
    ``by_draw`` False the processes carry no stored draw, so the estimator counts each apart
    (the product before its interval was taken over draws)."""
    draws = [rng.normal(0.0, draw_sd)]

    def process(index: int) -> dict:
        if index >= first_redraw:
            draws.append(rng.normal(0.0, draw_sd))
        out = _process(rng, truth, draws[-1] + rng.normal(0.0, process_sd))
        return {**out, "autotune_draw": _label(index, first_redraw) if by_draw else None}

    k_min = max(SPEC.processes, 2 if SPEC.warm_cache else 1)
    k_max = max(SPEC.max_processes, k_min)
    if by_draw and first_redraw == FIRST_REDRAW:  # the engine's minimum for such a variant
        k_min = min_processes(k_min, k_max)
    procs = [process(i) for i in range(k_min)]
    eager = {"variant": "eager", "status": "ok", "samples_ms": [1.0] * BLOCK,
             "processes": [{"samples_ms": [1.0] * BLOCK, "block": BLOCK}]}
    while True:
        result = {"variant": "v", "status": "ok", "processes": procs,
                  "samples_ms": [x for p in procs for x in p["samples_ms"]]}
        s = add_stats(dict(result), {"eager": eager, "v": result})["stats"]
        low, high = s["speedup_ci_low"], s["speedup_ci_high"]
        if stop_reason(rel_halfwidth(low, high), len(procs), min_processes=k_min,
                       max_processes=k_max,
                       target_halfwidth=SPEC.target_halfwidth, low=low, high=high):
            return low, high, len(procs)
        procs.append(process(len(procs)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=300)
    ap.add_argument("--draw-sd", type=float, default=0.024)
    ap.add_argument("--process-sd", type=float, default=0.005)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    designs = (("every process replays one draw", 10**6, True),
               ("anew from index 2, processes counted apart", 2, False),
               ("anew from index 2, counted by draw (now)", 2, True),
               ("draws anew from index 1", 1, True))
    print(f"draw sd {args.draw_sd:.3f}, process sd {args.process_sd:.3f} (log), {args.sims} "
          "simulated runs per line, shipped defaults")
    for label, first, by_draw in designs:
        for truth in (3.0, 1.03):
            rng = np.random.default_rng(args.seed)
            runs = [one_run(rng, truth, first, args.draw_sd, args.process_sd, by_draw)
                    for _ in range(args.sims)]
            cover = sum(low <= truth <= high for low, high, _ in runs) / len(runs)
            width = statistics.median(rel_halfwidth(low, high) for low, high, _ in runs)
            k = statistics.fmean(n for _, _, n in runs)
            print(f"{label:44s} speedup {truth:4.2f}: coverage {cover:.3f}, median half-width "
                  f"{100 * width:.1f} %, mean processes {k:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
