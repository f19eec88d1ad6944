"""How long a run has left, for the CLI's progress line and the dashboard's progress bar.

A run is a sequence of child processes of three kinds: the eager process, each compiled
variant's cold process (compile from an empty cache, profiler, graph-break report) and its
further warm-cache processes (a warm compile, then measuring).  Their durations differ by kind
and by model, so the estimate is per kind, from the processes of this run that have finished:
seconds left = Σ over kinds (processes left × mean duration of that kind), less what the running
process has already spent.  Before a kind has a finished process, a cold process is guessed at
three eager processes and a warm one at half a cold one; before anything has finished there is
no estimate.  The adaptive process count changes what is left as the run goes (``set_left``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

KINDS = ("eager", "cold", "warm")


class Eta:
    def __init__(self, *, eager: int, cold: int, warm: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.left = {"eager": eager, "cold": cold, "warm": warm}
        self.took: dict[str, list[float]] = {k: [] for k in KINDS}
        self.clock = clock
        self.started = clock()
        self.current: tuple[str, float] | None = None

    def start(self, kind: str) -> None:
        self.current = (kind, self.clock())

    def finish(self) -> None:
        if self.current is None:
            return
        kind, t0 = self.current
        self.took[kind].append(self.clock() - t0)
        self.left[kind] = max(self.left[kind] - 1, 0)
        self.current = None

    def set_left(self, kind: str, n: int) -> None:
        self.left[kind] = max(int(n), 0)

    def _mean(self, kind: str) -> float | None:
        took = self.took[kind]
        return sum(took) / len(took) if took else None

    def per_process(self, kind: str) -> float | None:
        """Expected seconds of one process of ``kind`` (None: nothing to go on yet)."""
        eager, cold, warm = self._mean("eager"), self._mean("cold"), self._mean("warm")
        if cold is None and eager is not None:
            cold = 3 * eager
        if warm is None and cold is not None:
            warm = cold / 2
        return {"eager": eager, "cold": cold, "warm": warm}[kind]

    def seconds_left(self) -> float | None:
        total = 0.0
        for kind in KINDS:
            n = self.left[kind]
            if n:
                each = self.per_process(kind)
                if each is None:
                    return None
                total += n * each
        if self.current is not None:  # the running process has spent part of its share
            kind, t0 = self.current
            each = self.per_process(kind) or 0.0
            total -= min(self.clock() - t0, each * 0.95)
        return max(total, 0.0)

    def fraction(self) -> float | None:
        """Share of the run done, by time (None without an estimate)."""
        left = self.seconds_left()
        if left is None:
            return None
        spent = self.clock() - self.started
        return spent / (spent + left) if spent + left > 0 else 1.0


def describe(seconds: float | None) -> str:
    """``about 40 s left`` / ``about 3 min left``; empty without an estimate."""
    if seconds is None:
        return ""
    if seconds < 90:
        return f"about {max(round(seconds), 1)} s left"
    return f"about {round(seconds / 60)} min left"
