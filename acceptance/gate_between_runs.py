"""The gate with and without the run-to-run spread of its baseline's runs, in simulation.

Each case: a configuration whose runs move ``between`` (sd, log scale) apart, four processes a
run 2 % apart inside it; five baseline runs under a tag, the last the baseline; a candidate run
of identical code and one whose compiled call is 10 % slower. Counts how often the gate
(engine/analysis/gate.compare_speedup) calls each a regression, with the baseline's runs as its
history (engine/analysis/between_runs.py) and without. No torch.

    python3 acceptance/gate_between_runs.py --pairs 400
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.analysis.gate import Thresholds, compare_speedup  # noqa: E402

LEVEL = math.log(3.4)  # BERT-base reduce-overhead on an H100, about


def row(level: float, rng: random.Random, k: int = 4, sd: float = 0.02) -> dict:
    """A variant row whose k processes read speedups around exp(level)."""
    speeds = [math.exp(level + rng.gauss(0, sd)) for _ in range(k)]
    s = math.exp(sum(math.log(x) for x in speeds) / k)
    return {"speedup": s, "speedup_ci_low": s * 0.97, "speedup_ci_high": s * 1.03,
            "process_speedups": speeds, "n_processes": k}


def simulate(between: float, use_history: bool, pairs: int = 300, seed: int = 7
             ) -> tuple[float, float]:
    """(share of identical pairs called regressions, share of 10 % slowdowns caught)."""
    rng = random.Random(seed)
    false = caught = 0
    for _ in range(pairs):
        levels = [LEVEL + rng.gauss(0, between) for _ in range(6)]
        history = [row(lv, rng) for lv in levels[:5]]
        kwargs = {"history": history} if use_history else {}
        same = compare_speedup(history[-1], row(levels[5], rng), Thresholds(), config="c",
                               variant="v", **kwargs)
        slow = compare_speedup(history[-1], row(levels[5] - math.log(1.10), rng), Thresholds(),
                               config="c", variant="v", **kwargs)
        false += same.verdict == "regression"
        caught += slow.verdict == "regression"
    return false / pairs, caught / pairs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=400)
    args = ap.parse_args()
    print("between-run sd | history | identical called | x1.10 caught")
    for between in (0.0, 0.03, 0.06, 0.10):
        for use in (False, True):
            f, c = simulate(between, use, args.pairs)
            print(f"{100 * between:>13.0f} % | {'5 runs' if use else 'none':>7s} | "
                  f"{100 * f:>15.1f} % | {100 * c:>11.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
