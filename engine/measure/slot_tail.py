"""The tail of a measuring process's timing slot: what it records after measuring, each part
a named phase of the process's clock (the timeline shows where a slot's time goes).

* ``profile``: kernels and device-busy time per call from ``torch.profiler``, the variant's
  and eager's (eager's once per run, engine/measure/run_share.py).  A compiled variant's one profiler
  pass also gives its lost-time account (engine/measure/losttime.py), taken before the graph-break
  trace resets dynamo: two passes, each with the profiler's own start and trace processing,
  had cost seconds of tail in every compiled slot (docs/measurements/2026-12-04-time-to-answer.md);
* ``train phases`` (training steps): forward, backward and the optimizer step timed apart over a
  few more steps (engine/measure/train_step.py ``phase_times``), before ``explain`` resets dynamo;
* ``roofline``: FLOPs and bytes per call against the GPU's ceilings (engine/measure/roofline.py);
* ``explain`` (compiled variants): the graph-break report from ``torch._dynamo.explain``,
  traced once per run (engine/measure/run_share.py), merged with this process's own dynamo counters.
  (Tried in eager's process while it prepares: beside the others' imports the trace took
  longer still, and every reported compile waited for it.)  Where a run has
  further measuring processes and a host of 8 cores or more, one of them traces it before its
  own first call (``explain_ahead``; the runner picks it, engine/schedule.explains_ahead),
  beside the other further processes' compiles, whose times nobody reports, instead of in a
  cold process's timing slot, when nothing else may run.

Nothing here is a latency: the slot is the process's own, nothing else runs beside it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.measure import losttime, roofline, run_share, signals

PROFILE_CALLS = 10
"""Calls in a profiler pass: kernels and device time per call are their mean."""


def explain_ahead(model: Any, inputs: Any, clock: Any) -> None:
    """In the further measuring process the runner picked (its first call is a compile
    nobody reports), before that call: trace the graph breaks for the whole run.
    ``torch._dynamo.explain`` resets dynamo before and after, so the process's own compile
    that follows starts clean; the slot tails read the result (engine/measure/run_share.py), and
    compute it themselves if this process was ended first.  A trace that raises is left to the
    cold process's tail, which reports it as before, rather than costing this variant one of
    its measuring processes; dynamo is reset here, as explain does when it completes."""
    with clock.phase("explain"):
        try:
            run_share.once("explain", lambda: signals.explain_breaks(model, inputs),
                           run_share.explained_ok)
        except Exception:  # noqa: BLE001 - see above: the tail traces again and says why
            import torch._dynamo

            torch._dynamo.reset()


def record(res: dict[str, Any], *, run: dict[str, Any], variant: str, device: str,
        fn: Callable[[], object], eager: Callable[[], object], model: Any, inputs: Any,
        train: Any, capture: Any, clock: Any, progress: Callable[..., None]) -> None:
    """Add the tail's figures to ``res`` (the child's result), in place."""
    is_eager = variant == "eager"
    cuda = device.startswith("cuda")
    lost = None
    if train is not None:
        with clock.phase("train phases"):
            res["train_phases_ms"] = train.phase_figures(cuda)
    if run.get("profile", True):  # the spec can skip the profiler pass
        with clock.phase("profile"):
            # eager's figures: profiled once per run, by the first process that needs
            # them (eager's own, which times first), read by the others (run_share)
            eager_prof = run_share.once(
                "eager_profile", lambda: signals.profile_calls(eager, PROFILE_CALLS, cuda),
                run_share.eager_profile_ok)
            if is_eager:
                res.update(eager_prof)
            else:  # one pass: kernels, device time and the lost-time trace
                lost = losttime.LostTime(fn, cuda, calls=PROFILE_CALLS)
                res.update(lost.kernel_figures()
                           or signals.profile_calls(fn, PROFILE_CALLS, cuda))
            res["eager_kernels_per_call"] = eager_prof["kernels_per_call"]
            res["eager_device_busy_ms_per_call"] = eager_prof["device_busy_ms_per_call"]
        with clock.phase("roofline"):
            # FLOPs / bytes per call against the GPU's ceilings (engine/measure/roofline.py)
            res["roofline"] = ({"deferred": roofline.DEFERRED}
                               if roofline.deferred(run, variant, device) else
                               roofline.figures(model, inputs,
                                                res.get("wall_ms_per_call"), device))
    counts = signals.dynamo_counters()
    res["recompiles"] = capture.recompiles
    res["cudagraph_skips"] = capture.cudagraph_skips
    if not is_eager:
        progress("profiling", 0.95, force=True)
        res["graph_count"] = counts.get("graph_count")
        target = train.explain_target() if train else (model, inputs)
        with clock.phase("explain"):
            explained = run_share.once(  # once per run; resets dynamo: keep last
                "explain", lambda: signals.explain_breaks(*target),
                run_share.explained_ok)
        res["graph_breaks"] = explained["graph_breaks"]
        res["graph_break_count"] = max(explained["graph_break_count"],
                                       counts.get("graph_break_total", 0))
        if res["graph_break_count"] > explained["graph_break_count"]:
            # counted but not in the model's trace: say where, with dynamo's reason
            res["graph_breaks"] += signals.unexplained_breaks(
                counts.get("graph_break_reasons", {}), explained["graph_breaks"],
                "compiled optimizer step" if train and train.compiles_optimizer
                else "not in explain's trace of the model")
        if lost is not None:
            res.update(lost.result(res, run, variant))
    else:
        res.update(graph_count=0, graph_break_count=0, graph_breaks=[])

