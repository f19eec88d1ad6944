"""Device time of one call with the host queued ahead: what the call's kernels cost the GPU,
apart from how fast this process's host work launched them.

A measuring process's compiled call can read slower than in the run's other processes while its
eager held (engine/analysis/disagreement.py).  Two different things do that: kernels that run
slower on the device (another autotuned config) or host work for the compiled call that ran
slower in that process (guards, the wrapper, launches).  The per-call time cannot tell them
apart; this figure can, at a fraction of a second a process, without a profiler (which starts
slowly and slows the host).

How: with the device idle, a GPU spin (``torch.cuda._sleep``) longer than the host needs to
launch the call is queued first, then an event, the call and another event.  If the start
event has still not run when the host has queued the whole call, every kernel was waiting in
the queue before the first one started, so the events hold device time only.  Where the host
did not get ahead (the call synchronises inside, or launching outlasted the spin after it was
doubled twice), the sample is dropped; with too few samples the figure is None, never a guess.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

import torch

CALLS = 5  # samples per function: a median of five, each after its own spin
LEAST = 3  # fewer samples ahead than this and there is no figure
MAX_LEAD_MS = 400.0  # the longest spin tried (a call whose launching takes longer gets none)
MISSES = 2  # spins doubled this often at most: a call that synchronises inside costs ~7 spins
_CALIBRATE_CYCLES = 2_000_000


def available(device: str) -> bool:
    """Whether this torch and device can take the figure (CUDA, with ``torch.cuda._sleep``)."""
    return (device.startswith("cuda") and callable(getattr(torch.cuda, "_sleep", None))
            and torch.cuda.is_available())


def _cycles_per_ms(stream: torch.cuda.Stream) -> float:
    """How many ``_sleep`` cycles the device spins a millisecond, timed with events (about a
    millisecond, once for each function measured: the clock may have moved since the last)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record(stream)
    torch.cuda._sleep(_CALIBRATE_CYCLES)
    end.record(stream)
    end.synchronize()
    return _CALIBRATE_CYCLES / max(start.elapsed_time(end), 1e-3)


def summarise(samples: list[float], least: int = LEAST) -> float | None:
    """The median of the samples taken with the host ahead, or None with fewer than ``least``
    of them (a negative reading is not a time)."""
    kept = [s for s in samples if s >= 0]
    return statistics.median(kept) if len(kept) >= least else None


def queued_ms(fn: Callable[[], object], host_ms: float, calls: int = CALLS) -> float | None:
    """Median device milliseconds of ``fn`` per call with the host queued ahead of the device
    (module docstring); ``host_ms`` is a per-call time the host's launching stays under (the
    call's measured per-call median: launching is part of it)."""
    stream = torch.cuda.current_stream()
    per_ms = _cycles_per_ms(stream)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    lead = min(2.0 * max(host_ms, 0.0) + 1.0, MAX_LEAD_MS)
    samples: list[float] = []
    misses = 0
    while len(samples) < calls:
        torch.cuda.synchronize()
        torch.cuda._sleep(int(lead * per_ms))
        start.record(stream)
        fn()
        end.record(stream)
        ahead = not start.query()  # the device still spinning: the whole call waited queued
        end.synchronize()
        if ahead:
            samples.append(start.elapsed_time(end))
            continue
        misses += 1
        if misses > MISSES:
            break  # a call that waits for the device inside never gets ahead: no figure
        lead = min(lead * 2.0, MAX_LEAD_MS)  # a longer spin; this sample does not count
    return summarise(samples)
