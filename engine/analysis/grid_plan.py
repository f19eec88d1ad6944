"""What a grid will cost, said before it starts: the number of variants and an estimated
duration (the CLI prints it, the dashboard's New run page shows it).

Estimate: one eager process, then per compiled variant at least ``processes`` processes (two
with ``warm_cache``; four for a GPU variant that redraws its autotuned kernels,
engine/measure/autotune_draw.variant_min_processes; the adaptive count may add up to
``max_processes``), plus two more per
compiled variant with ``startup``.  Seconds per process come from earlier runs of the same model
on the same device (``storage.history.process_seconds``: the median) when there are any; else a
guess from the spec's own budgets: a compile (``GUESS_COMPILE_S``, more for max-autotune) and
paired timing rounds bounded by ``max_time_s`` for eager and variant each.  Processes are
summed as if one ran at a time: with ``concurrency`` above 1 the wall time is lower.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine import grid
from engine.measure import autotune_draw

GUESS_SETUP_S = 10.0
GUESS_COMPILE_S = {"cuda": 40.0, "cpu": 20.0}
AUTOTUNE_FACTOR = 5.0  # max-autotune benchmarks kernel choices: minutes, not seconds


@dataclass(frozen=True)
class Plan:
    variants: int
    compiled: int
    processes_low: int
    processes_high: int
    seconds_low: float
    seconds_high: float
    from_history: bool

    def text(self) -> str:
        basis = ("from earlier runs of this model here" if self.from_history
                 else "a guess: no earlier run of this model on this device")
        return (f"{self.variants} variants ({self.compiled} compiled): "
                f"{self.processes_low}–{self.processes_high} measuring processes, about "
                f"{_dur(self.seconds_low)}–{_dur(self.seconds_high)} one at a time ({basis})")


def _dur(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else (f"{s / 60:.0f} min" if s < 5400 else f"{s / 3600:.1f} h")


def plan(spec: Mapping[str, Any], history: Mapping[str, list[float]] | None = None) -> Plan:
    """The count and the duration range of ``spec`` (a normalised RunSpec)."""
    variants = list(spec["variants"])
    compiled = [v for v in variants if v != "eager"]
    k_min, k_max = autotune_draw.process_bounds(spec)
    extra = 2 if spec.get("startup") else 0
    hist = history or {}
    timing = 2 * float(spec.get("max_time_s", 10.0)) + GUESS_SETUP_S
    eager_s = statistics.median(hist["eager"]) if hist.get("eager") else timing / 2
    if hist.get("compiled"):
        per = {v: statistics.median(hist["compiled"]) for v in compiled}
    else:
        base = GUESS_COMPILE_S.get(str(spec.get("device")), GUESS_COMPILE_S["cuda"])
        per = {v: timing + base * (AUTOTUNE_FACTOR if grid.mode_of(v).startswith("max-autotune")
                                    else 1.0) for v in compiled}
    need = {v: autotune_draw.variant_min_processes(spec, v, k_min, k_max) for v in compiled}
    low = eager_s + sum(p * (need[v] + extra) for v, p in per.items())
    high = eager_s + sum(p * (k_max + extra) for p in per.values())
    return Plan(len(variants), len(compiled), 1 + sum(need[v] + extra for v in compiled),
                1 + len(compiled) * (k_max + extra), low, high, bool(hist.get("compiled")))
