"""How far identical runs of one configuration move apart beyond their own intervals.

A run's interval covers the spread among its own processes, which time within a minute of each
other. Runs minutes or days apart on one host also meet another host speed (the host probe's
levels, docs/measurements/2026-12-07-host-probe-h100.md) and another kernel choice, so
identical code reads speedups further apart than either interval allows (docs/METHOD.md §5).
With a tag as the gate's baseline, its earlier runs of the configuration are replicates of that
move: the between-run variance ``tau²`` of the log speedup is estimated from them by
DerSimonian and Laird's method of moments (each run weighted by its own interval's variance,
``tau²`` what Cochran's Q leaves beyond it, floored at 0), and the gate adds it once for the
baseline run and once for the candidate run (each is one draw of the run effect).

Where the baseline's runs agree within their intervals ``tau²`` is 0 and the test is the same
as without them. Pure Python.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MIN_RUNS = 3  # below this, Q has one degree of freedom and tau² is noise


@dataclass(frozen=True)
class BetweenRuns:
    """``tau2``: the between-run variance of the log speedup; ``runs``: how many runs gave it."""

    tau2: float
    runs: int

    @property
    def percent(self) -> float:
        """The run-to-run standard deviation as a percentage of the speedup."""
        return 100 * (math.exp(math.sqrt(self.tau2)) - 1)


def estimate(rows: Sequence[Mapping[str, Any]],
             log_estimate: Callable[[Mapping[str, Any]], Any]) -> BetweenRuns | None:
    """``tau²`` over one variant's rows in the baseline's runs of its configuration, each read
    with ``log_estimate`` (engine/analysis/gate.py: mean and standard error on the log scale,
    None for a row without them). None with fewer than ``MIN_RUNS`` usable rows."""
    points = []
    for row in rows:
        est = log_estimate(row) if isinstance(row, Mapping) else None
        if est is not None and math.isfinite(est.mean) and math.isfinite(est.se) and est.se > 0:
            points.append((est.mean, 1 / est.se ** 2))
    k = len(points)
    if k < MIN_RUNS:
        return None
    sw = sum(w for _, w in points)
    sw2 = sum(w * w for _, w in points)
    mean = sum(y * w for y, w in points) / sw
    q = sum(w * (y - mean) ** 2 for y, w in points)
    scale = sw - sw2 / sw
    tau2 = max(0.0, (q - (k - 1)) / scale) if scale > 0 else 0.0
    return BetweenRuns(tau2 if math.isfinite(tau2) else 0.0, k)
