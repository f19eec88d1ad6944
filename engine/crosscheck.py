"""Optional cross-check of the engine's timings against library timers, in the same process,
right after the engine's own steady-state rounds (spec option ``cross_check``).

Timing in the same process matters: on the H200 host the same eager model measured 20-40 %
apart between two processes, more than any difference between timing methods, so only an
in-process comparison checks the *method*. Pairs that time the same thing the same way:
- engine per-call (idle device, CUDA events)  <->  ``triton.testing.do_bench`` of
  ``synchronize(); fn()`` (CUDA events around each call, which then starts on an idle device;
  do_bench also flushes L2 first) and ``torch.utils.benchmark.Timer.timeit(1)`` (host clock
  between two synchronises);
- engine pipelined (K calls, one sync)  <->  ``Timer.blocked_autorange`` (blocks of calls, one
  synchronise per block).
Raw ``do_bench(fn)`` (no synchronise between calls) is reported for information.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def cross_check(fns: dict[str, Callable[[], object]], cuda: bool) -> dict[str, dict[str, Any]]:
    import torch
    from torch.utils.benchmark import Timer

    out: dict[str, dict[str, Any]] = {}
    for name, fn in fns.items():
        # Timer defaults to one CPU thread; time with the threads the engine used.
        t = Timer("fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
        row: dict[str, Any] = {"timer_blocked_ms": t.blocked_autorange(min_run_time=1.0).median * 1e3}
        per_call = sorted(t.timeit(1).median for _ in range(200))
        row["timer_per_call_ms"] = per_call[len(per_call) // 2] * 1e3
        if cuda:
            try:
                from triton.testing import do_bench

                row["do_bench_ms"] = do_bench(fn, return_mode="median")
                row["do_bench_sync_ms"] = do_bench(lambda fn=fn: (torch.cuda.synchronize(), fn()),
                                                   return_mode="median")
            except Exception as e:  # triton absent or its API moved: say so, do not fail the run
                row["do_bench_error"] = f"{type(e).__name__}: {e}"[:300]
        out[name] = row
    return out
