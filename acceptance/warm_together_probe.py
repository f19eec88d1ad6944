"""Warm-cache first calls alone against two together: does running the first warm-cache compiles
side by side (engine/orchestrate/schedule.py rule 4's exception) make them read slow?

    python acceptance/warm_together_probe.py --model bert --modes default,reduce-overhead --rounds 2

Uses the naive harness's own child (one fresh process per first call, as in
``acceptance/naive_harness.py``): first each mode's cold process fills its own inductor
cache (all modes at once: those first calls are not the question), then per round each mode's
warm-cache process alone, one after another, and then all of them together.  Prints each
first call.  A benchmark script, not a test.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from acceptance import naive_harness as harness  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--model", choices=("mlp", "bert"), default="bert")
    p.add_argument("--modes", default="default,reduce-overhead")
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    child_args = argparse.Namespace(device=args.device, model=args.model,
                                    batch=8 if args.model == "bert" else 32, hidden=1024,
                                    seq=128, calls=20)
    modes = args.modes.split(",")
    caches = {m: tempfile.mkdtemp(prefix="warm_probe_") for m in modes}
    t0 = time.perf_counter()

    def first_call(mode: str, out: dict[str, float | None]) -> None:
        out[mode] = harness.run(child_args, mode, caches[mode]).get("first_call_s")

    def together() -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        threads = [threading.Thread(target=first_call, args=(m, out)) for m in modes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return out

    print(f"cold, together (cache fill): {together()}  at {time.perf_counter() - t0:.0f} s",
          flush=True)
    for r in range(args.rounds):
        alone: dict[str, float | None] = {}
        for m in modes:
            first_call(m, alone)
        both = together()
        print(f"round {r + 1}: warm alone {alone} | warm together {both}  "
              f"at {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
