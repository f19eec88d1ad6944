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
        self.device = device
        self.cuda = device.startswith("cuda")
        self.name = "cuda_event" if self.cuda else "perf_counter"
        self._events: tuple[torch.cuda.Event, torch.cuda.Event, torch.cuda.Stream] | None = None

    def _event_pair(self) -> tuple[torch.cuda.Event, torch.cuda.Event, torch.cuda.Stream]:
        """Start and end events and the stream they are recorded on, all looked up once, before
        any timed window. Why: whatever the host does between the call's return and the moment
        the end event is submitted lands inside the window when the device is already idle (the
        launch-bound case). Two such costs (``acceptance/per_call_methods.py`` measures them):
        ``record()`` without a stream looks up the current stream inside the window, and a fresh
        ``torch.cuda.Event`` is created on its first ``record()``. With the stream given and the
        events reused, per-call medians agree with ``Timer.timeit(1)`` less the Timer's own cost
        (docs/measurements/2026-12-02-h200-acceptance.md)."""
        if self._events is None:
            stream = torch.cuda.current_stream()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(stream)
            end.record(stream)
            torch.cuda.synchronize()
            self._events = (start, end, stream)
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
        start, end, stream = self._event_pair()
        start.record(stream)
        fn()
        end.record(stream)
        end.synchronize()
        return start.elapsed_time(end)

    def pipelined_ms(self, fn: Callable[[], object], k: int) -> float:
        self.sync()
        if not self.cuda:
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            return (time.perf_counter() - t0) * 1e3 / k
        start, end, stream = self._event_pair()
        start.record(stream)
        for _ in range(k):
            fn()
        end.record(stream)
        end.synchronize()
        return start.elapsed_time(end) / k
