"""How many calls one pipelined sample takes: the spec's ``pipeline_k``, capped by time on the CPU.

A pipelined sample is K calls back to back with one synchronise at the end, divided by K
(``engine.timing.Timer.pipelined_ms``).  On a GPU that is a different figure from the per-call
one: host launches overlap device work, and K = 50 keeps the pipeline's unoverlapped start
under ~1 % of it.  On the CPU there is nothing to overlap: the "synchronise" is a no-op and K
calls back to back are K synchronous calls, so K buys no new information, only time.  On the
2-core CPU host (issue "time to answer") the seed MLP took ~16 ms a call: 50 calls were 0.8 s of
each function's ~1 s a round, 3 rounds at least, in every measuring process.

So on the CPU only, the sample is capped to a time budget: ``k = min(K, max(1, ceil(T /
per-call estimate)))`` with ``T = CPU_SAMPLE_BUDGET_MS``, the estimate being the median of the
first block of per-call samples in the process (taken just before the first pipelined sample).
The K then stays fixed for the whole process, for every function alike, so the eager and
compiled pipelined samples of a round are the same protocol.  The K actually used is recorded
(``pipeline_k`` per process and in the result) and shown.  Every other device keeps the spec's
K unchanged: the GPU's figures are measured exactly as before.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

CPU_SAMPLE_BUDGET_MS = 75.0
"""Target length of one pipelined sample on the CPU (ms): long enough that perf_counter's
resolution and one slow call do not dominate, short next to a round of per-call samples."""


def sample_budget_ms(device: str) -> float | None:
    """The time budget of one pipelined sample on ``device``: ``CPU_SAMPLE_BUDGET_MS`` on the
    CPU, None (K as the spec asks) anywhere else."""
    return CPU_SAMPLE_BUDGET_MS if str(device).split(":")[0] == "cpu" else None


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
    """The K of a run for a reader: "50", or "4-6 (capped to ~75 ms a sample on the CPU; the
    spec asked 50)" when the cap applied."""
    used = sorted({int(k) for k in ks if isinstance(k, int) and not isinstance(k, bool)})
    if not used:
        return str(asked) if asked else "K"
    text = str(used[0]) if len(used) == 1 else f"{used[0]}-{used[-1]}"
    if asked is not None and used[0] < int(asked):
        text += (f" (capped to ~{CPU_SAMPLE_BUDGET_MS:g} ms a sample on the CPU; the spec asked "
                 f"{asked})")
    return text
