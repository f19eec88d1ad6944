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
SE_RANGE = (1e-12, 10.0)  # a log-scale standard error outside this is not a measurement
MAX_SD = math.log(2)  # runs further apart than 2x (sd) are not the host moving: not used


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
    None for a row without them). Rows come from a database: only passing rows with a standard
    error in ``SE_RANGE`` count, and one that cannot be read is skipped. None with fewer than
    ``MIN_RUNS`` usable rows, or where the runs read further apart than ``MAX_SD`` (a broken
    history, not a host that moved: it would hide any regression)."""
    points = [p for r in rows if (p := _point(r, log_estimate)) is not None]
    k = len(points)
    if k < MIN_RUNS:
        return None
    sw = sum(w for _, w in points)
    mean = sum(y * w for y, w in points) / sw
    q = sum(w * (y - mean) ** 2 for y, w in points)
    # sum(w) - sum(w²)/sum(w), written so that one dominant weight does not cancel it away
    scale = sum(w * sum(o for j, (_, o) in enumerate(points) if j != i)
                for i, (_, w) in enumerate(points)) / sw
    tau2 = max(0.0, (q - (k - 1)) / scale) if scale > 0 else 0.0
    if not math.isfinite(tau2) or tau2 > MAX_SD ** 2:
        return None
    return BetweenRuns(tau2, k)


def _point(row: Any, log_estimate: Callable[[Mapping[str, Any]], Any]
           ) -> tuple[float, float] | None:
    """(log speedup, weight 1/se²) of one passing row, or None."""
    if not isinstance(row, Mapping) or row.get("status", "ok") != "ok" \
            or row.get("correct") is False:
        return None
    try:
        est = log_estimate(row)
        mean, se = float(est.mean), float(est.se)
    except (ArithmeticError, ValueError, TypeError, AttributeError):
        return None
    if not (math.isfinite(mean) and abs(mean) < 50 and SE_RANGE[0] < se < SE_RANGE[1]):
        return None
    return mean, 1 / (se * se)
