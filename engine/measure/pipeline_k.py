"""How many calls one pipelined sample takes: the spec's ``pipeline_k``, capped by time.

A pipelined sample is K calls back to back with one synchronise at the end, divided by K
(``engine.measure.timing.Timer.pipelined_ms``).  On a GPU host launches overlap device work; what no
call overlaps is the pipeline's start (the first launch, tens of microseconds) and its tail, so K
must make the sample long next to those: K = 50 keeps them under ~1 % of a 0.1 ms call's sample.
A long call needs far fewer: for a call of several milliseconds (BERT-base's launch-bound eager
on a GPU) K = 50 made each round's pipelined sample most of a process's timing slot, in every
measuring process of the run, for a start that is already well under 1 % after ten calls
(docs/measurements/2026-12-05-time-to-answer-h200.md).  On the CPU there is nothing to overlap at
all (the "synchronise" is a no-op), so K calls back to back are K synchronous calls and K buys only
time.

So on every device the sample is capped to a time budget: ``k = min(K, max(1, ceil(T /
per-call estimate)))`` with ``T = SAMPLE_BUDGET_MS``, the estimate being the median of the first
block of per-call samples in the process (taken just before the first pipelined sample; the
first function of a round is eager where a process times eager, so every process of a run
estimates from the same call).  Calls under T / K (1.5 ms at the defaults, the seed MLP's on a
GPU) keep the spec's K: the cap binds only where a sample of K calls would take longer
than T.  The K then stays fixed for the whole process, for every function alike, so the eager and
compiled pipelined samples of a round are the same protocol; a compiled call S times faster than
eager's then fills about T / S of a sample (7.5 ms at a 10x speedup, where a 30 µs start is 0.4
%).  The K actually used is recorded (``pipeline_k`` per process and in the result) and shown.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

SAMPLE_BUDGET_MS = 75.0
"""Target length of one pipelined sample (ms), on every device: long enough that the timer's
resolution, the pipeline's start and one slow call do not dominate, short next to a round of
per-call samples."""


def capped_k(k: int, per_call_ms: Sequence[float], budget_ms: float | None) -> int:
    """The K to use: the spec's ``k``, or with a ``budget_ms``, at most as many calls as fit in
    it at the median of ``per_call_ms`` (at least one call)."""
    k = max(int(k), 1)
    if budget_ms is None or not per_call_ms:
        return k
    estimate = statistics.median(per_call_ms)
    if not estimate > 0:  # a timer that read 0 (or NaN): keep K rather than divide by it
        return k
    return min(k, max(1, math.ceil(budget_ms / estimate)))


def describe(ks: Sequence[int], asked: int | None) -> str:
    """The K of a run for a reader: "50", or "4-6 (capped to ~75 ms a sample; the spec
    asked 50)" when the cap applied."""
    used = sorted({int(k) for k in ks if isinstance(k, int) and not isinstance(k, bool)})
    if not used:
        return str(asked) if asked else "K"
    text = str(used[0]) if len(used) == 1 else f"{used[0]}-{used[-1]}"
    if asked is not None and used[0] < int(asked):
        text += f" (capped to ~{SAMPLE_BUDGET_MS:g} ms a sample; the spec asked {asked})"
    return text
