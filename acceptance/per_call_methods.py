"""Why one call timed with CUDA events and the same call timed by ``Timer.timeit(1)`` can differ.

    python acceptance/per_call_methods.py [--device cuda] [--samples 300]

For the seed MLP and the pointwise chain, eager and torch.compile (default), in one process, the
methods below take turns sample by sample (each after two untimed calls, as ``timeit`` does), and
the script prints each one's median and its median paired gap to ``timeit(1)``:
- ``events``: the engine's per-call timer (CUDA events made once, recorded on a stream looked up
  once; Python's garbage collector on);
- ``events, gc off``: the same with the garbage collector off, as ``timeit`` runs;
- ``events, fresh``: new CUDA events for every sample and no stream given, as the engine did in
  session 2's GPU runs (torch creates an event on its first record, so the end event was created
  inside the window);
- ``host clock``: synchronise, perf_counter, call, synchronise, perf_counter (collector on);
- ``host clock, gc off``;
- ``timeit(1)``: torch.utils.benchmark.Timer (which turns the collector off while it times);
- ``events, timeit prelude`` / ``host clock, timeit prelude``: those methods after the same
  prelude as timeit's timed call (two calls between synchronises, then a synchronise);
- ``events, no stream given``: reused events, but ``record()`` without its stream, as the engine
  did until 2026-12-02: torch then looks the current stream up inside the window;
- ``events on pass``: the events' own cost, nothing between them (an empty window);
- ``timeit(1) on pass``: the Timer's own cost (a synchronise and two clock reads), right after;
- ``one sample: ...``: three readings of the very same call, so no drift can come between them:
  the events around it, the host clock from before the start event to after the end event's
  synchronise, and the host clock from before the start event to the call's return (no
  synchronise: the host's own share of the call).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from torch.utils.benchmark import Timer as TorchTimer  # noqa: E402

from engine.measure.child import build  # noqa: E402
from engine.measure.hostload import settle_compile_workers  # noqa: E402
from engine.measure.timing import Timer  # noqa: E402

MODELS = [("mlp", {"batch": 32, "hidden": 1024}),
          ("pointwise_chain", {"batch": 64, "width": 4096, "depth": 8})]


def _gc_off(measure):
    def run(fn):
        gc.disable()
        try:
            return measure(fn)
        finally:
            gc.enable()
    return run


def methods(timer: Timer) -> dict:
    def host_clock(fn) -> float:
        timer.sync()
        t0 = time.perf_counter()
        fn()
        timer.sync()
        return (time.perf_counter() - t0) * 1e3

    def events_fresh(fn) -> float:
        timer.sync()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def one_sample(fn) -> tuple[float, float, float]:
        start, end, stream = timer._event_pair()
        timer.sync()
        t0 = time.perf_counter()
        start.record(stream)
        fn()
        t_ret = time.perf_counter()
        end.record(stream)
        end.synchronize()
        t1 = time.perf_counter()
        return start.elapsed_time(end), (t1 - t0) * 1e3, (t_ret - t0) * 1e3

    def timeit_prelude(measure):
        # timeit(1) first runs two calls between synchronises, then synchronises again (on an
        # idle device) just before its clock read; this gives another method the same prelude.
        def run(fn):
            timer.sync()
            fn()
            fn()
            timer.sync()
            return measure(fn)
        return run

    def events_no_stream(fn) -> float:
        start, end, _ = timer._event_pair()
        timer.sync()
        start.record()  # looks the current stream up itself, inside the window
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    out = {"events": timer.per_call_ms,
           "events, timeit prelude": timeit_prelude(timer.per_call_ms),
           "host clock, timeit prelude": timeit_prelude(host_clock),
           "events, gc off": _gc_off(timer.per_call_ms),
           "host clock": host_clock,
           "host clock, gc off": _gc_off(host_clock)}
    if timer.cuda:
        out["events, fresh"] = events_fresh
        out["one sample"] = one_sample
        out["events, no stream given"] = events_no_stream
        out["events on pass"] = lambda fn: timer.per_call_ms(lambda: None)
    return out


def compare(name: str, fn, timer: Timer, samples: int) -> list[str]:
    ref = TorchTimer("fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    empty = TorchTimer("pass", num_threads=torch.get_num_threads())  # the Timer's own cost
    ms = methods(timer)
    got: dict[str, list[float]] = {m: [] for m in [*ms, "timeit(1)"] if m != "one sample"}
    parts = ["one sample: events", "one sample: host", "one sample: return"]
    for i in range(samples):
        order = [*ms, "timeit(1)"]
        if i % 2:
            order.reverse()
        for m in order:
            fn()
            fn()
            if m == "timeit(1)":
                got[m].append(ref.timeit(1).median * 1e3)
                got.setdefault("timeit(1) on pass", []).append(empty.timeit(1).median * 1e3)
            elif m == "one sample":
                for part, value in zip(parts, ms[m](fn), strict=True):
                    got.setdefault(part, []).append(value)
            else:
                got[m].append(ms[m](fn))
    lines = []
    for m, vals in got.items():
        gap = statistics.median(a / b - 1 for a, b in zip(vals, got["timeit(1)"], strict=True))
        lines.append(f"{name:28s} {m:28s} {statistics.median(vals):9.4f} {gap * 100:+7.1f}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--samples", type=int, default=300)
    args = ap.parse_args()
    timer = Timer(args.device)
    print(f"{'function':28s} {'method':28s} {'median ms':>9s} {'vs timeit':>7s}")
    for model_name, dims in MODELS:
        model, inputs, _ = build({"dtype": "float32", "seed": 0, "model": model_name}, dims,
                              args.device)
        compiled = torch.compile(model)
        with torch.no_grad():
            for _ in range(10):
                compiled(*inputs)
            settle_compile_workers()
            fns = {"eager": lambda m=model, i=inputs: m(*i),
                   "default": lambda c=compiled, i=inputs: c(*i)}
            for variant, fn in fns.items():
                label = f"{model_name} {variant}"
                for line in compare(label, fn, timer, args.samples):
                    print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
