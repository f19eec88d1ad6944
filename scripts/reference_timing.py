"""Independent reference timings for one model, to check the engine against (issue 2).

    python scripts/reference_timing.py MODEL '{"batch": 32}' float32 cuda

Prints one JSON line: for eager and for torch.compile(mode=default), the median ms per call from
- ``torch.utils.benchmark.Timer.blocked_autorange``: blocks of calls with one synchronise per
  block, so it times the same thing as the engine's *pipelined* figure;
- ``triton.testing.do_bench(..., return_mode="median")``: CUDA events around each call (after an
  L2 flush, with no synchronise between calls), the nearest library analogue of the engine's
  *per-call* figure;
- ``Timer.timeit(number=1)`` repeated, and do_bench with a synchronise before each call: the
  per-call analogues (one call on an idle device);
- a naive loop as the seed article wrote it (perf_counter around 100 calls, no synchronise),
  which only times the launches.
"""

from __future__ import annotations

import json
import sys
import time

import torch
from torch.utils.benchmark import Timer

from engine.catalogue import get_model, load_factory


def main() -> None:
    name, dims, dtype, device = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
    torch.manual_seed(0)
    model, inputs = load_factory(get_model(name).factory)(**dims)
    dt = getattr(torch, dtype)
    model = model.to(device=device, dtype=dt).eval()
    inputs = tuple(x.to(device=device, dtype=dt) if x.is_floating_point() else x.to(device)
                   for x in inputs)
    out: dict[str, dict[str, float]] = {}
    with torch.no_grad():
        fns = {"eager": model, "default": torch.compile(model)}
        for variant, m in fns.items():
            for _ in range(20):  # compile and warm up outside every timer
                m(*inputs)
            torch.cuda.synchronize()
            t = Timer("m(*inputs)", globals={"m": m, "inputs": inputs},
                      num_threads=torch.get_num_threads())
            blocked = t.blocked_autorange(min_run_time=2.0)
            row = {"timer_blocked_ms": blocked.median * 1e3}
            # Timer.timeit(number=1): one call between two synchronises, host clock: per-call.
            per_call = sorted(t.timeit(1).median for _ in range(300))
            row["timer_per_call_ms"] = per_call[len(per_call) // 2] * 1e3
            try:
                import triton.testing

                row["do_bench_ms"] = triton.testing.do_bench(lambda m=m: m(*inputs),
                                                             return_mode="median")
                # With a synchronise first, each call starts on an idle device, as in the
                # engine's per-call figure (do_bench still flushes L2 before each call).
                row["do_bench_sync_ms"] = triton.testing.do_bench(
                    lambda m=m: (torch.cuda.synchronize(), m(*inputs)), return_mode="median")
            except Exception as e:  # triton missing (CPU) or API change
                row["do_bench_error"] = str(e)[:200]
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(100):
                m(*inputs)
            row["naive_no_sync_ms"] = (time.perf_counter() - t0) * 1e3 / 100
            torch.cuda.synchronize()
            out[variant] = row
    print(json.dumps(out))


if __name__ == "__main__":
    main()
