"""How the granularity of eager/compiled alternation changes the steady-state figures.

    python acceptance/interleave_check.py [--device cuda] [--reps 6]

For the seed MLP and the pointwise chain (torch.compile default), in one process, repeats in turn:
- ``alternate-1``: rounds that switch function after every timed call (one untimed call first);
- ``blocks-10``: the engine's rounds (3 untimed calls, then 10 timed calls per function);
- ``alone``: each function timed by itself, with no other function in between;
and prints the median per-call and pipelined time of eager and compiled under each. All three
run in the same repetitions, so a drift of the host's speed hits them alike. This is the
experiment behind the engine's choice of blocks (engine/measure/child.py, ``steady_rounds``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from engine.measure.child import build, steady_rounds  # noqa: E402
from engine.measure.hostload import settle_compile_workers  # noqa: E402
from engine.measure.timing import Timer  # noqa: E402

MODELS = [("mlp", {"batch": 32, "hidden": 1024}),
          ("pointwise_chain", {"batch": 64, "width": 4096, "depth": 8})]


PROTOCOLS = ("alternate-1", "blocks-10", "alone")


def _protocol(name: str, timer: Timer, fns: dict, budget: dict) -> dict:
    if name == "alternate-1":
        return steady_rounds(timer, fns, block=1, warm=1, **budget)
    if name == "blocks-10":
        return steady_rounds(timer, fns, block=10, warm=3, **budget)
    return {n: steady_rounds(timer, {n: f}, block=10, warm=3, **budget)[n] for n, f in fns.items()}


def measure_model(model_name: str, dims: dict, device: str, reps: int, samples: int) -> list[str]:
    """Median per-call and pipelined ms of eager and compiled under each protocol, the protocols
    taking turns (order flipping) for ``reps`` repetitions."""
    timer = Timer(device)
    model, inputs, _ = build({"dtype": "float32", "seed": 0, "model": model_name}, dims, device)
    compiled = torch.compile(model)
    fns = {"eager": lambda: model(*inputs), "compiled": lambda: compiled(*inputs)}
    budget = dict(min_samples=samples, min_time_s=0.0, max_time_s=30.0, k=50)
    acc: dict[tuple[str, str, str], list[float]] = {}
    with torch.no_grad():
        for _ in range(10):
            fns["eager"](), fns["compiled"]()
        timer.sync()
        settle_compile_workers()  # as the engine does: no compile-worker start-up while timing
        for rep in range(reps):
            for name in PROTOCOLS if rep % 2 == 0 else PROTOCOLS[::-1]:
                for fn_name, series in _protocol(name, timer, fns, budget).items():
                    for kind, vals in series.items():
                        acc.setdefault((name, fn_name, kind), []).extend(vals)
    return [f"{model_name:16s} {name:12s} {fn_name:8s} "
            f"{statistics.median(acc[(name, fn_name, 'per_call')]):11.4f} "
            f"{statistics.median(acc[(name, fn_name, 'pipelined')]):12.4f}"
            for name in PROTOCOLS for fn_name in fns]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--samples", type=int, default=60)
    args = ap.parse_args()
    print(f"{'model':16s} {'protocol':12s} {'fn':8s} {'per-call ms':>11s} {'pipelined ms':>12s}")
    for model_name, dims in MODELS:
        for line in measure_model(model_name, dims, args.device, args.reps, args.samples):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
