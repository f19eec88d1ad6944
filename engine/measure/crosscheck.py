"""Optional cross-check of the engine's timing methods against library timers (spec option
``cross_check``), in the same child, right after the engine's own steady-state rounds.

Why paired, sample by sample: small models are launch-bound, so their per-call time is mostly
host work, and a host's speed (a VM's especially) moves in steps that last seconds, hitting eager
and compiled alike, with no other process busy (docs/measurements/2026-12-02-h200-acceptance.md).
Two timers run a few seconds apart would compare those steps, not the methods. So the engine's timer
and each library timer take turns within milliseconds, and each gap is the median of the *paired*
ratios.

Pairs that time the same thing the same way:

- engine per-call (device idle first, CUDA events around one call)  <->
  ``torch.utils.benchmark.Timer.timeit(1)``: the same call between two synchronises, on the host
  clock. Its window also holds the timer's own cost (the synchronise call and its return, the
  clock reads), which the same Timer measures alone on ``pass``; ``timer_net_ms`` subtracts it.
- engine per-call  <->  ``triton.testing.do_bench(synchronize; fn)``: CUDA events around one call
  started on an idle device, like the engine, but do_bench writes 256 MB to flush L2 before each
  call (so the call runs with a cold L2) and the synchronise's return sits inside its events.
- engine pipelined (K calls back to back, one synchronise, / K)  <->
  ``Timer.blocked_autorange``: blocks of calls, one synchronise per block, / block size.

Raw ``do_bench(fn)`` (CUDA events around each call, no synchronise in between, L2 flushed) is a
different figure: the flush keeps the device busy while the host queues the call, so it measures
a call's device time with a cold L2, without launch overhead. It is reported for information.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from engine.measure.timing import Timer as EngineTimer


def _median_ratio(pairs: list[tuple[float, float]]) -> float | None:
    """Median of a/b - 1 over pairs taken together: the gap between two timers, with drift that
    hits both members of a pair cancelled."""
    ratios = [a / b - 1 for a, b in pairs if a > 0 and b > 0]
    return statistics.median(ratios) if ratios else None


def _check_one(fn: Callable[[], object], timer: EngineTimer, k: int, reps: int, samples: int,
               do_bench: Callable[..., float] | None) -> dict[str, Any]:
    import torch
    from torch.utils.benchmark import Timer

    # Timer defaults to one CPU thread; time with the threads the engine used.
    t = Timer("fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    empty = Timer("pass", num_threads=torch.get_num_threads())  # the timer's own cost
    eng: list[float] = []
    tim: list[float] = []
    overhead: list[float] = []
    pc_pairs: list[tuple[float, float]] = []
    pipe_pairs: list[tuple[float, float]] = []
    bench_pairs: list[tuple[float, float]] = []
    acc: dict[str, list[float]] = {}

    def engine_sample() -> float:
        # Timer.timeit(1) makes two untimed calls before its timed one; so does this, because
        # the first call after other code runs measurably slower (cold host caches: 2x on CPU).
        fn()
        fn()
        return timer.per_call_ms(fn)

    def engine_pipelined() -> float:
        for _ in range(3):  # as in the engine's rounds, which warm up before each block
            fn()
        return timer.pipelined_ms(fn, k)

    def add(key: str, value: float) -> None:
        acc.setdefault(key, []).append(value)

    for rep in range(reps):
        for _ in range(3):  # every repetition starts on a warm host path
            fn()
        for i in range(samples):  # alternate single samples, the order flipping each time
            if (i + rep) % 2 == 0:
                a = engine_sample()
                b = t.timeit(1).median * 1e3
            else:
                b = t.timeit(1).median * 1e3
                a = engine_sample()
            eng.append(a)
            tim.append(b)
            pc_pairs.append((a, b))
            overhead.append(empty.timeit(1).median * 1e3)
        # blocked_autorange takes ~0.2 s: bracket it with engine pipelined samples
        before = engine_pipelined()
        blocked = t.blocked_autorange(min_run_time=0.05).median * 1e3
        after = engine_pipelined()
        add("engine_pipelined_ms", before)
        add("engine_pipelined_ms", after)
        add("timer_blocked_ms", blocked)
        pipe_pairs.append(((before + after) / 2, blocked))
        if do_bench is not None:
            before = statistics.median(engine_sample() for _ in range(10))
            raw = do_bench(fn, return_mode="median")
            synced = do_bench(lambda: (torch.cuda.synchronize(), fn()), return_mode="median")
            after = statistics.median(engine_sample() for _ in range(10))
            add("do_bench_ms", raw)
            add("do_bench_sync_ms", synced)
            bench_pairs.append(((before + after) / 2, synced))
        # What most articles do: a loop with no synchronise. It times the host enqueueing work,
        # not the work; shown to say why the product never does this.
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        add("naive_no_sync_ms", (time.perf_counter() - t0) * 1e3 / k)
        timer.sync()

    net = [(a, b - o) for (a, b), o in zip(pc_pairs, overhead, strict=True)]
    row: dict[str, Any] = {key: statistics.median(vals) for key, vals in acc.items()}
    row.update(
        engine_per_call_ms=statistics.median(eng),
        timer_per_call_ms=statistics.median(tim),
        timer_overhead_ms=statistics.median(overhead),
        timer_net_ms=statistics.median(b - o for b, o in zip(tim, overhead, strict=True)),
        per_call_vs_timer=_median_ratio(pc_pairs),
        per_call_vs_timer_net=_median_ratio(net),
        pipelined_vs_blocked=_median_ratio(pipe_pairs),
        per_call_vs_do_bench_sync=_median_ratio(bench_pairs),
        reps=reps,
        pairs=len(pc_pairs),
    )
    return row


def cross_check(fns: dict[str, Callable[[], object]], timer: EngineTimer, k: int,
                reps: int = 8, samples: int = 25) -> dict[str, dict[str, Any]]:
    """For each function, the engine's timers against the library timers, paired (see the module
    docstring). Values are ms per call; ``*_vs_*`` are fractions (+0.03 = engine 3 % higher)."""
    do_bench = None
    if timer.cuda:
        try:
            from triton.testing import do_bench
        except Exception:  # triton absent: report the other references
            do_bench = None
    out: dict[str, dict[str, Any]] = {}
    for name, fn in fns.items():
        try:
            out[name] = _check_one(fn, timer, k, reps, samples, do_bench)
        except Exception as e:  # a library API moved: say so, never fail the run for it
            out[name] = {"error": f"{type(e).__name__}: {e}"[:300]}
    return out
