"""Timers for the measuring child. Every figure is taken with the device synchronised.

Three ways of timing one call, all true, answering different questions:
- ``wall_ms``: host clock around a call with a synchronise before and after. Used for the warm-up
  curve, where call 1 includes compilation (host work) and later calls may record CUDA graphs.
- ``per_call_ms``: the device is idle first; on CUDA, events recorded before and after the call
  (the latency a request sees: launch overhead + kernels); on CPU, ``perf_counter``.
- ``pipelined_ms``: K calls back to back, one synchronise at the end, divided by K. Host launch
  work overlaps device work, as in a throughput loop; for small models this is lower than per-call.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch


class Timer:
    def __init__(self, device: str) -> None:
        self.cuda = device.startswith("cuda")
        self.name = "cuda_event" if self.cuda else "perf_counter"
        self._events: tuple[torch.cuda.Event, torch.cuda.Event] | None = None

    def _event_pair(self) -> tuple[torch.cuda.Event, torch.cuda.Event]:
        """Start and end events, made once and reused. torch creates the CUDA event behind a
        ``torch.cuda.Event`` on its first ``record()``; with fresh events per sample, the end
        event was created inside the timed window, after the call. On the H200 host, per-call
        figures then read above ``Timer.timeit(1)`` for the same calls: 26-27 µs for compiled
        default and reduce-overhead calls, 22 µs for the eager pointwise chain, but 3 µs for the
        eager MLP and 8 µs for max-autotune, whose last kernels may still run when the call
        returns and so hide a cost after it. Event creation is such a cost, so both events are
        created and recorded once here, before any window (not yet measured on a GPU)."""
        if self._events is None:
            pair = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            for event in pair:
                event.record()
            torch.cuda.synchronize()
            self._events = pair
        return self._events

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def wall_ms(self, fn: Callable[[], object]) -> float:
        self.sync()
        t0 = time.perf_counter()
        fn()
        self.sync()
        return (time.perf_counter() - t0) * 1e3

    def per_call_ms(self, fn: Callable[[], object]) -> float:
        self.sync()
        if not self.cuda:
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e3
        start, end = self._event_pair()
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def pipelined_ms(self, fn: Callable[[], object], k: int) -> float:
        self.sync()
        if not self.cuda:
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            return (time.perf_counter() - t0) * 1e3 / k
        start, end = self._event_pair()
        start.record()
        for _ in range(k):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / k
