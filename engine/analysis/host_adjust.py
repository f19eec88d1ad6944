"""Two runs' compiled time compared at one host speed: the gate's test where both runs stored
each process's eager (analysis of covariance with eager as the covariate).

A launch-bound eager follows the host's speed, which moves between runs minutes apart; a
compiled call follows it less (a CUDA-graph replay hardly at all, fused code in between). So two
runs of identical code read speedups apart by the host alone, and a gate that compares speedups
calls a regression when eager moved and misses one when eager moved the other way
(docs/measurements/2026-12-07-h200-verify.md: identical BERT-base runs 0.863x apart at
p = 0.025 while the compiled call held within 2 %).

Every process times eager and the variant paired, so each measured unit gives a point (log
eager, log compiled) at that moment's host speed. Within each run, how far compiled follows
eager across its units is a slope ``theta``; fitted on both runs together (each with its own
level), the difference of the levels is the candidate's compiled time against the baseline's
at one eager, i.e. at one host speed:

    log c = level_run + theta * log e + noise,   shift = level_candidate - level_baseline

``exp(-shift)`` is the candidate's speedup over the baseline's once the host's move is taken
out; its standard error is the usual one of a fitted group difference (t with n - 3 degrees of
freedom, n the units of both runs), which includes the uncertainty of ``theta``. ``theta`` is
kept in [0, 1] (compiled neither speeds up when the host slows, nor slows more than eager); the
slope's uncertainty is kept where it was clipped too (the clip is chosen from the same data),
and the spread is read about the line the shift is read from. Where the slope is not seen
(its standard error above ``SLOPE_SE``: eager hardly moved inside the runs) no comparison is
made here and the gate tests the speedups. Where processes redrew their autotuned kernels
(docs/METHOD.md §2) the units are the draws, as for the interval (``stats.draw_units``).

What this cannot take out: a move of the compiled call that eager does not share (another
kernel choice between runs that replayed one draw each), which stays in ``shift`` as before.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from contract import fmt
from contract.results import process_draws
from engine.analysis import stats

MIN_UNITS = 2  # per run: a level and a spread
# The slope's standard error above which the comparison is not made at one host speed: where
# eager hardly moves inside a run, its own noise pulls the fitted slope towards 0 and a
# launch-bound compiled call (slope near 1) would be judged as if it did not follow the host
# (in simulation, 11-14 % of identical pairs called regressions where the speedup's test
# called none: docs/measurements/2026-12-07-gate-host-adjust.md).
SLOPE_SE = 0.2
MAX_LOG = 50.0  # |log ratio| beyond which the figures are not a timing (hostile rows)


@dataclass(frozen=True)
class HostAdjusted:
    """The candidate's log compiled time against the baseline's at one host speed."""

    shift: float
    """log(candidate compiled / baseline compiled) at one eager: > 0 is slower."""
    se: float
    df: float
    theta: float
    """How far compiled follows eager within the runs (0: not at all, 1: as far)."""
    eager_shift: float
    """log(candidate eager / baseline eager), the host's move between the runs."""

    @property
    def ratio(self) -> float:
        """The candidate's speedup over the baseline's at one host speed."""
        return math.exp(-self.shift)


def units(row: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """(log eager, log compiled) per measured unit of a stored variant row, or None where the
    row lacks per-process eager figures or holds anything but positive numbers (rows are read
    from a database: hostile)."""
    eager, speeds = row.get("process_eager_ms"), row.get("process_speedups")
    if not (isinstance(eager, list) and isinstance(speeds, list) and len(eager) == len(speeds)):
        return None
    e = [fmt.positive(x) for x in eager]
    s = [fmt.positive(x) for x in speeds]
    if any(x is None for x in e + s):
        return None
    log_e = np.log(np.asarray(e, dtype=np.float64))
    log_c = log_e - np.log(np.asarray(s, dtype=np.float64))
    procs = row.get("processes")
    ids = stats.draw_units(process_draws(procs)) if isinstance(procs, list) and \
        len(procs) == len(e) else None
    # a draw's processes averaged into one unit, as for the interval
    log_e, log_c = stats.unit_log_ratios(log_e, ids), stats.unit_log_ratios(log_c, ids)
    return (log_e, log_c) if log_e.size >= MIN_UNITS else None


def compare(base: Mapping[str, Any], cand: Mapping[str, Any],
            floor: float | None = None) -> HostAdjusted | None:
    """The host-adjusted comparison of two variant rows, or None where either lacks the
    per-unit figures or the slope is not seen well enough to lean on (``SLOPE_SE``): the gate
    then tests the speedups as before. ``floor``: the least residual standard deviation (log
    scale) to test with, as the speedup test floors its spread at the noise inside one
    process."""
    b, c = units(base), units(cand)
    if b is None or c is None:
        return None
    (eb, cb), (ec, cc) = b, c
    x = np.concatenate([eb - eb.mean(), ec - ec.mean()])  # within-run deviations
    y = np.concatenate([cb - cb.mean(), cc - cc.mean()])
    sxx, df = float(x @ x), x.size - 3
    if df < 1 or not sxx > 0:
        return None
    def residual_var(slope: float) -> float:
        res = y - slope * x
        return max(float(res @ res) / df, (floor or 0.0) ** 2)

    fitted = float(x @ y) / sxx
    if not math.sqrt(residual_var(fitted) / sxx) <= SLOPE_SE:  # NaN too
        return None
    theta = min(1.0, max(0.0, fitted))
    var = residual_var(theta)  # the spread about the line the shift is read from
    eager_shift = float(ec.mean() - eb.mean())
    shift = float(cc.mean() - cb.mean()) - theta * eager_shift
    # the slope's own uncertainty, carried over the eager shift, kept where the slope was
    # clipped too: the clip is chosen from the same data
    se = math.sqrt(var * (1 / eb.size + 1 / ec.size) + var / sxx * eager_shift ** 2)
    if not all(math.isfinite(v) and abs(v) < MAX_LOG for v in (shift, eager_shift, se)):
        return None
    return HostAdjusted(shift, se, float(df), theta, eager_shift)


def slower_p(adj: HostAdjusted) -> float:
    """One-sided p-value of "the candidate's compiled call is slower at one host speed"."""
    return _one_sided(adj.shift, adj.se, adj.df)


def faster_p(adj: HostAdjusted) -> float:
    """One-sided p-value of "the candidate's compiled call is faster at one host speed"."""
    return _one_sided(-adj.shift, adj.se, adj.df)


def _one_sided(shift: float, se: float, df: float) -> float:
    """P(T >= shift / se) for t with ``df``; with no spread, 0, 1 or 0.5 by the sign."""
    from scipy import stats as sps

    if se <= 0:
        return 0.0 if shift > 0 else 1.0 if shift < 0 else 0.5
    return float(sps.t.sf(shift / se, df))


def words(adj: HostAdjusted) -> str:
    """The adjustment said for a report's note."""
    return (f"at one host speed {adj.ratio - 1:+.1%} (eager moved {math.expm1(adj.eager_shift):+.1%}"
            f" between the runs; compiled follows eager by {adj.theta:.2f} within them)")
