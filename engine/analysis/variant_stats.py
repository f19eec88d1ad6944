"""The ``stats`` blocks of a run's results (docs/CONTRACTS.md), filled from every measuring
process of the run at once.

``engine.analysis.stats`` holds the methods; this module applies them to a run, because two of its
figures belong to the run and not to one variant:

* **One eager.**  Eager is timed in its own process and, paired in rounds, inside every compiled
  variant's processes.  Its figure, everywhere, is the geometric mean of every one of those
  processes' eager medians (``run_eager``): on a host whose speed moves from minute to minute,
  the eager of one process is one draw of the host's state (docs/METHOD.md "One eager").
* **The compiled figure is that eager ÷ the speedup.**  The speedup is paired (each process's
  eager against its own compiled rounds, so the host's state in that process cancels), and the
  variant's ``median_ms`` is ``eager_median_ms / speedup``: the compiled per-call time at the
  run's eager conditions, the block-adjusted mean of a design whose blocks are processes.  So on
  every surface the shown speedup is the shown eager over the shown compiled figure.  What the
  variant's own processes read is kept beside it: ``measured_median_ms`` and
  ``paired_eager_median_ms``.

The interval's units are independent kernel draws: processes that replayed one compile's
autotuned choice count once where others drew anew (``process_units``).  The variance a
variant may borrow (``engine.analysis.stats.moderated_variance``) comes from the caller's
history prior for that variant, else from the run's other compiled variants.  numpy and scipy
only (no torch).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from contract.results import ProcessResult
from engine.analysis.stats import (
    ProcessRounds,
    VariancePrior,
    as_samples,
    break_even_calls,
    decision,
    draw_units,
    paired_speedup,
    pooled_prior,
    summarize,
    unit_log_ratios,
    variance_components,
)

Result = dict[str, Any]


def _geomean(values: Sequence[float]) -> float:
    return float(math.exp(np.mean(np.log(np.asarray(values, dtype=np.float64)))))


def _median_or_none(values: Sequence[float] | None) -> float | None:
    if values is None or len(values) == 0:
        return None
    return float(np.median(as_samples(values)))


def _per_process_location(processes: list[ProcessResult], key: str) -> float | None:
    """Geometric mean over processes of each process's median of ``key`` (None if any lacks it)."""
    medians = [_median_or_none(getattr(p, key)) for p in processes]
    if not medians or any(m is None or m <= 0 for m in medians):
        return None
    return _geomean(medians)  # type: ignore[arg-type]


def _processes(result: Result) -> list[ProcessResult]:
    """A result's measuring processes with samples, typed (contract/results.py: what does not
    fit is left out); a result from an older engine, without the list, counts as one process
    over its pooled samples."""
    raw = result.get("processes") or [{
        "samples_ms": result.get("samples_ms") or [],
        "eager_samples_ms": result.get("eager_samples_ms") or [],
        "pipelined_ms": result.get("pipelined_ms"),
        "eager_pipelined_ms": result.get("eager_pipelined_ms"), "block": 1}]
    procs = [ProcessResult.from_json(p) for p in raw]
    return [p for p in procs if p.samples_ms]


def process_units(processes: list[ProcessResult]) -> list[int] | None:
    """The interval's unit of each process, from its stored kernel draw (``stats.draw_units``)."""
    return draw_units([p.autotune_draw for p in processes])


def process_rounds(processes: list[ProcessResult]) -> list[ProcessRounds]:
    """The paired rounds of each measuring process of a VariantResult."""
    return [ProcessRounds.from_samples(p.eager_samples_ms, p.samples_ms, p.block)
            for p in processes]


def _eager_series(result: Result, key: str) -> list[tuple[float, ...]]:
    """Eager's series ``key`` ("samples_ms" or "pipelined_ms") of each of a result's processes:
    the eager variant's own, and the paired eager of a compiled variant's."""
    if result.get("status") != "ok":
        return []
    name = key if result.get("variant") == "eager" else f"eager_{key}"
    return [getattr(p, name) for p in _processes(result) if getattr(p, name)]


def run_eager(results: Mapping[str, Result], key: str = "samples_ms") -> float | None:
    """The run's eager per-call figure (ms): the geometric mean over every measuring process of
    the run (eager's own and every compiled variant's) of that process's eager median."""
    medians = [m for r in results.values() for s in _eager_series(r, key)
               if (m := _median_or_none(s)) is not None and m > 0]
    return _geomean(medians) if medians else None


def _device_readings(result: Result, name: str) -> list[float]:
    """Each of the result's processes' device time per call of ``name`` ("variant", "eager"),
    with the host queued ahead (engine/measure/device_time.py), where it took one."""
    return [d for p in _processes(result) if p.device_ms is not None
            and (d := p.device_ms.get(name)) is not None]


def run_eager_device(results: Mapping[str, Result]) -> float | None:
    """The run's eager device time per call (ms): the median over every process of the run that
    timed eager (its own and each compiled variant's paired eager); one figure, as eager is."""
    got = [d for r in results.values() if r.get("status") == "ok"  # as run_eager reads
           for d in _device_readings(r, "variant" if r.get("variant") == "eager" else "eager")]
    return float(np.median(got)) if got else None


def _device(stats: dict[str, Any], result: Result, results: Mapping[str, Result]) -> None:
    eager = run_eager_device(results)
    own = eager if result.get("variant") == "eager" else (
        float(np.median(got)) if (got := _device_readings(result, "variant")) else None)
    stats.update(device_ms_per_call=own, eager_device_ms_per_call=eager)


def _summary(stats: dict[str, Any], samples: Sequence[float]) -> None:
    s = summarize(samples)
    stats.update(mean_ms=s.mean, p10_ms=s.p10, p90_ms=s.p90, iqr_ms=s.iqr, n=s.n, noisy=s.noisy)


def _eager_stats(stats: dict[str, Any], results: Mapping[str, Result]) -> None:
    """The eager row: the run's eager, over every process that timed it."""
    series = [s for r in results.values() for s in _eager_series(r, "samples_ms")]
    _summary(stats, [x for s in series for x in s])
    stats.update(n_processes=len(series), median_ms=run_eager(results),
                 pipelined_median_ms=run_eager(results, "pipelined_ms"),
                 speedup=1.0, speedup_ci_low=1.0, speedup_ci_high=1.0)
    stats.update(eager_median_ms=stats["median_ms"],
                 eager_pipelined_median_ms=stats["pipelined_median_ms"])


def _own_variance(result: Result) -> tuple[float, int] | None:
    """(sample variance of the per-process log speedups, its df) of one compiled result."""
    if result.get("status") != "ok" or result.get("variant") == "eager":
        return None
    procs = _processes(result)
    try:
        r = unit_log_ratios([p.log_ratio() for p in process_rounds(procs)], process_units(procs))
    except (ValueError, KeyError, TypeError):
        return None
    return (float(np.var(r, ddof=1)), len(r) - 1) if len(r) >= 2 else None


def shared_prior(results: Mapping[str, Result], variant: str,
                 history: Mapping[str, VariancePrior] | None = None) -> VariancePrior | None:
    """The variance ``variant`` may borrow: this host's history of it where given, else the
    pooled variance of the run's other compiled variants."""
    if history and variant in history:
        return history[variant]
    own = [v for name, r in results.items() if name != variant and (v := _own_variance(r))]
    n = len(own)
    return pooled_prior(own, f"{n} other variant{'s' * (n != 1)} of this run")


def _pipelined(stats: dict[str, Any], procs: list[ProcessResult], eager_pipe: float | None,
               ci: float) -> None:
    """The throughput figures: pipelined calls of the same paired rounds, the same method."""
    try:
        pe = paired_speedup([ProcessRounds.from_samples(p.eager_pipelined_ms, p.pipelined_ms, 1)
                             for p in procs], ci=ci, units=process_units(procs))
    except (ValueError, TypeError, KeyError):
        return  # no pipelined rounds (older results, a failed pass)
    stats.update(pipelined_speedup=pe.speedup, pipelined_ci_low=pe.low,
                 pipelined_ci_high=pe.high)
    if eager_pipe is not None:
        stats["pipelined_median_ms"] = eager_pipe / pe.speedup


def _compiled_stats(stats: dict[str, Any], result: Result, eager_ms: float | None,
                    eager_pipe: float | None, prior: VariancePrior | None, ci: float) -> None:
    procs = _processes(result)
    stats["n_processes"] = len(procs)
    stats["measured_median_ms"] = _per_process_location(procs, "samples_ms")
    stats["paired_eager_median_ms"] = _per_process_location(procs, "eager_samples_ms")
    stats["pipelined_median_ms"] = _per_process_location(procs, "pipelined_ms")
    stats["eager_median_ms"] = eager_ms
    stats["eager_pipelined_median_ms"] = eager_pipe
    if eager_ms is None or not stats["measured_median_ms"]:
        return
    try:
        rounds = process_rounds(procs)
        est = paired_speedup(rounds, prior=prior, ci=ci, units=process_units(procs))
    except ValueError:
        # Unpaired or broken series (not from this runner): the point estimate of the two
        # figures as read, never an interval that would claim a pairing that is not there.
        stats.update(median_ms=stats["measured_median_ms"],
                     speedup=eager_ms / stats["measured_median_ms"])
        return
    stats.update(speedup=est.speedup, speedup_ci_low=est.low, speedup_ci_high=est.high,
                 median_ms=eager_ms / est.speedup,
                 process_speedups=list(est.process_speedups), speedup_spread=est.spread,
                 process_eager_ms=[_median_or_none(p.eager_samples_ms) for p in procs],
                 within_process_spread=est.within_spread, disagree_p=est.disagree_p,
                 processes_disagree=est.disagree, interval_method=est.method,
                 speedup_log_se=est.log_se, speedup_df=est.df, variance_prior=est.prior,
                 variance_components=variance_components(rounds),
                 decision=decision(est.low, est.high))
    _pipelined(stats, procs, eager_pipe, ci)


def _break_even(stats: dict[str, Any], result: Result, eager_first_call_ms: float | None) -> None:
    eager_ms, compiled_ms = stats.get("eager_median_ms"), stats.get("median_ms")
    if eager_ms is None or compiled_ms is None or stats.get("speedup") is None:
        return
    eager_first = float(eager_first_call_ms) if eager_first_call_ms is not None else eager_ms
    stats["eager_first_call_ms"] = eager_first
    for key, first_s in (("break_even_calls", result.get("first_call_cold_s")),
                         ("break_even_calls_warm", result.get("first_call_warm_s"))):
        if first_s is not None:
            stats[key] = break_even_calls(eager_first, float(first_s) * 1000.0, eager_ms,
                                          compiled_ms)


def add_stats(result: Result, results: Mapping[str, Result], *,
              eager_first_call_ms: float | None = None,
              history: Mapping[str, VariancePrior] | None = None, ci: float = 0.95) -> Result:
    """Fill ``result["stats"]`` (every key of the contract; figures whose inputs are missing are
    None, a result whose status is not "ok" gets None everywhere) and return ``result``.

    ``results``: the run's results by variant (``result`` among them or not), for the run's
    eager and the shared variance.  ``eager_first_call_ms``: eager's first call after CUDA
    start-up (the runner takes it from the eager variant), for break-even.  ``history``: this
    host's variance prior per variant (``engine.analysis.stats.VariancePrior``), where the caller has
    one.  The runner's ``stop_reason`` and ``final_at`` move into the block."""
    from contract.schema import empty_stats  # the contract names every key

    stats = empty_stats()
    result["stats"] = stats
    stats["stop_reason"] = result.pop("stop_reason", None)
    stats["final_at"] = result.pop("final_at", None)
    stats["provisional"] = stats["final_at"] is None
    if result.get("status") != "ok" or not result.get("samples_ms"):
        return result
    everyone = {**results, str(result.get("variant")): result}
    _device(stats, result, everyone)
    if result.get("variant") == "eager":
        _eager_stats(stats, everyone)
        return result
    _summary(stats, result["samples_ms"])
    _compiled_stats(stats, result, run_eager(everyone), run_eager(everyone, "pipelined_ms"),
                    shared_prior(everyone, str(result.get("variant")), history), ci)
    _break_even(stats, result, eager_first_call_ms)
    return result
