"""Optional cross-check of the engine's timing methods against library timers (spec option
``cross_check``), in the same child, right after the engine's own steady-state rounds.

Why in the same process and in the same time window: on the H200 host the same eager model
measured 20-40 % apart between two processes, and within one process the host's speed drifted by
±30 % over seconds (it is launch-bound work: a busy neighbour on the CPU shows directly). A
reference timed a few seconds after the engine's figure therefore checks the host, not the
method. So each function is timed in ``reps`` repetitions, and in each repetition the engine's
own timers and every library timer run back to back (order flipping each repetition); the
medians over all repetitions are compared. Pairs that time the same thing the same way:

- engine per-call (device idle first, CUDA events around one call)  <->
  ``torch.utils.benchmark.Timer.timeit(1)`` (host clock between two synchronises: the same
  call, read on the host clock, so it also holds the synchronise's return, a few µs);
- engine pipelined (K calls back to back, one synchronise, / K)  <->
  ``Timer.blocked_autorange`` (blocks of calls, one synchronise per block, / block size).

``triton.testing.do_bench`` answers other questions and is reported beside them: raw
``do_bench(fn)`` puts CUDA events around each call with no synchronise in between and flushes
L2 (a 256 MB write) before every call, so the host runs ahead and it measures the device time of
a call with a cold L2, without launch overhead; ``do_bench(synchronize; fn)`` adds the launch
overhead back but still has the cold L2 and the synchronise's return inside its events.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from engine.timing import Timer as EngineTimer

Step = Callable[[], dict[str, list[float]]]


def _steps(fn: Callable[[], object], timer: EngineTimer, k: int, samples: int,
           do_bench: Callable[..., float] | None) -> list[Step]:
    """The timers of one repetition, each a callable returning {figure name: samples}."""
    import torch
    from torch.utils.benchmark import Timer

    # Timer defaults to one CPU thread; time with the threads the engine used.
    t = Timer("fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())

    def naive() -> dict[str, list[float]]:
        # What most articles do: a loop with no synchronise. It times the host enqueueing work,
        # not the work; shown to say why the product never does this.
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        ms = (time.perf_counter() - t0) * 1e3 / k
        timer.sync()
        return {"naive_no_sync_ms": [ms]}

    def bench() -> dict[str, list[float]]:
        assert do_bench is not None
        return {"do_bench_ms": [do_bench(fn, return_mode="median")],
                "do_bench_sync_ms": [do_bench(lambda: (torch.cuda.synchronize(), fn()),
                                              return_mode="median")]}

    steps: list[Step] = [
        lambda: {"engine_per_call_ms": [timer.per_call_ms(fn) for _ in range(samples)]},
        lambda: {"timer_per_call_ms": [t.timeit(1).median * 1e3 for _ in range(samples)]},
        lambda: {"engine_pipelined_ms": [timer.pipelined_ms(fn, k) for _ in range(3)]},
        lambda: {"timer_blocked_ms": [t.blocked_autorange(min_run_time=0.2).median * 1e3]},
        naive,
    ]
    return steps + [bench] if do_bench is not None else steps


def cross_check(fns: dict[str, Callable[[], object]], timer: EngineTimer, k: int,
                reps: int = 5, samples: int = 20, warm: int = 3) -> dict[str, dict[str, Any]]:
    """For each function: medians of the engine's per-call and pipelined timers and of the library
    timers, all taken in the same repetitions (see the module docstring)."""
    do_bench = None
    if timer.cuda:
        try:
            from triton.testing import do_bench
        except Exception:  # triton absent: report the other references
            do_bench = None

    out: dict[str, dict[str, Any]] = {}
    for name, fn in fns.items():
        steps = _steps(fn, timer, k, samples, do_bench)
        acc: dict[str, list[float]] = {}
        error = None
        for rep in range(reps):
            for step in steps if rep % 2 == 0 else steps[::-1]:
                for _ in range(warm):  # every timer starts on a warm host path
                    fn()
                try:
                    got = step()
                except Exception as e:  # a library API moved: say so, keep the other figures
                    error = f"{type(e).__name__}: {e}"[:300]
                    continue
                for key, vals in got.items():
                    acc.setdefault(key, []).extend(vals)
        row: dict[str, Any] = {key: statistics.median(vals) for key, vals in acc.items()}
        row["reps"] = reps
        if error:
            row["error"] = error
        out[name] = row
    return out
