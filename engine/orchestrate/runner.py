"""Runs one RunSpec: every variant measured in several fresh processes, scheduled so that they
prepare and compile side by side but each times alone (``engine.orchestrate.schedule``).

Nothing here touches the database: the caller (CLI or worker, see ``engine.orchestrate.execute``)
passes callbacks for progress, cancellation and finished results. A child that crashes, runs out
of memory, fails to compile or passes its timeout becomes a failed result with its reason and
stderr tail (``engine.orchestrate.process``); the other variants go on.  ``_Run`` keeps a run's
state (its plan of processes, the results so far, which variants may still get processes);
``_schedule`` works through the plan under the schedule's rules.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.analysis import stats
from engine.measure import autotune_draw, roofline, startup, torch_trace
from engine.orchestrate import compiler_server, forked, gates, preloads
from engine.orchestrate.eta import Eta, describe
from engine.orchestrate.fold import first_process, merge_process, time_breakdown, with_stats
from engine.orchestrate.process import ChildProcess, run_child, wants_compiler_server
from engine.orchestrate.schedule import ALIVE, Job, decide, explains_ahead, resolve

__all__ = ["run_child", "run_variants", "time_breakdown"]

ProgressFn = Callable[[str, str, float], None]  # (variant, phase, overall fraction 0..1)
CancelFn = Callable[[], bool]
ResultFn = Callable[[dict[str, Any]], None]
# (variant, kind, meta, bytes): a file the run keeps (engine/measure/torch_trace.py)
ArtifactFn = Callable[[str, str, dict[str, Any], bytes], None]
TICK_S = 0.02
DECIDED = ("interval tight enough", "interval excludes 1.0")


class _Run:
    """One run while its processes come and go: the plan, the results so far, and the rules that
    fold a finished process in and decide whether its variant gets another."""

    def __init__(self, spec: dict[str, Any], on_progress: ProgressFn, on_result: ResultFn,
                 on_artifact: ArtifactFn, eta_priors: Any, history: Any) -> None:
        self.spec, self.history = spec, history
        self.on_progress, self.on_result, self.on_artifact = on_progress, on_result, on_artifact
        self.variants = list(spec["variants"])
        self.compiled = [v for v in self.variants if v != "eager"]
        self.k_min, self.k_max = autotune_draw.process_bounds(spec)
        self.concurrency, self.compile_slots = resolve(
            int(spec.get("concurrency") or 0),
            spec_compile_slots=int(spec.get("compile_slots") or 0))
        self.gated = gates.supported()
        if not self.gated:
            self.concurrency = self.compile_slots = 1
        # A variant whose processes draw their autotuned kernels anew needs one more process
        # for as many independent draws (engine/measure/autotune_draw.min_processes).
        self.need = {v: autotune_draw.variant_min_processes(spec, v, self.k_min, self.k_max)
                     for v in self.compiled}
        self.results: dict[str, dict[str, Any]] = {}
        self.eager_first_ms: float | None = None
        self.plan = self._initial_plan()
        self.active = set(self.compiled)  # variants that may still get processes
        self.done_count = {v: 0 for v in self.compiled}
        self.extra_since: float | None = None  # when the first variant passed its minimum
        self.failed: dict[str, list[dict[str, Any]]] = {}  # further processes' failures
        self.final: dict[str, float] = {}  # variant -> when its figures became final (unix s)
        self.eta = Eta(concurrency=self.concurrency, compile_slots=self.compile_slots,
                       min_time_s=float(spec.get("min_time_s", 0.5)), priors=eta_priors)
        self.scheduling = {"concurrency": self.concurrency, "compile_slots": self.compile_slots}
        self.root = Path(".")

    def _initial_plan(self) -> list[Job]:
        plan = [Job("eager", 0)] if "eager" in self.variants else []
        plan += [Job(v, i) for i in range(max(self.need.values(), default=0))
                 for v in self.compiled if i < self.need[v]]
        further = [v for v in self.compiled if self.k_max > self.need[v]]
        if further and len(plan) + len(further) <= self.concurrency:
            # Where the whole run fits in one batch, each variant's first further process
            # starts with the rest (speculative: it times only if the interval asks for it,
            # else it is ended), so it does not pay its own start-up and compiler import after
            # everything else (docs/measurements: 11 s of a 78 s seed-MLP run).
            plan += [Job(v, self.need[v], speculative=True) for v in further]
        return plan

    def stats_of(self, result: dict[str, Any]) -> dict[str, Any]:
        return with_stats(result, self.results, self.eager_first_ms, self.history)

    def drop(self, variant: str, speculative_only: bool = False, from_index: int = 0) -> None:
        """No more processes for ``variant``: pending ones go, live ones are ended (with
        ``speculative_only``, only its processes started before they were asked for; with
        ``from_index``, only those from that index on)."""
        if not speculative_only:
            self.active.discard(variant)
        for j in self.plan:
            if (j.variant == variant and (j.speculative or not speculative_only)
                    and j.index >= from_index
                    and (j.state == "pending" or j.state in ALIVE and j.state != "timing")):
                if j.handle is not None:
                    j.handle.kill("dropped")
                j.state = "dropped"

    def report(self) -> None:
        focus = next((j for j in self.plan if j.state == "timing"), None) or next(
            (j for j in self.plan if j.state in ("compiling", "preparing")), None)
        if focus is None or focus.handle is None:
            return
        p = focus.handle.progress()
        if p is None:
            return
        phase, frac = p
        seconds, by_time = self.eta.estimate(self.plan)
        total = max(sum(j.state != "dropped" for j in self.plan), 1)
        finished = sum(j.state == "done" for j in self.plan)
        overall = by_time if by_time is not None else (finished + frac) / total
        left = describe(seconds, self.eta.overrun)  # "at least" once a stage overran
        self.on_progress(focus.variant, f"{phase} · {left}" if left else phase,
                         min(overall, 1.0))

    def publish(self) -> None:
        """Every variant's result with the run's statistics as they stand: a process of any
        variant moves the run's eager, and so every compiled figure (engine/variant_stats)."""
        if "eager" in self.results and not self.active:
            self.final.setdefault("eager", time.time())
        for name, raw in self.results.items():
            raw["final_at"] = self.final.get(name)
            self.on_result(self.stats_of(raw))

    def end_variant(self, v: str, reason: str | None = None) -> None:
        if reason:
            self.results[v]["stop_reason"] = reason
        self.active.discard(v)
        self.final.setdefault(v, time.time())

    def finish_eager(self, child: dict[str, Any]) -> None:
        first_process(child)
        if child.get("status") == "ok":
            # Call 1 of eager's curve: like the compiled first call, it follows the eager
            # reference call that paid the CUDA/cuBLAS start-up (engine/measure/child.py).
            self.eager_first_ms = (child.get("warmup_ms") or [None])[0]
            child["stop_reason"] = "one process asked"
        for other in self.results.values():  # a compiled process that counted before eager
            if roofline.fill_deferred(child, other, self.spec.get("device", "cpu")):
                break
        self.results["eager"] = child

    def finish_cold(self, v: str, child: dict[str, Any]) -> None:
        """The variant's first (cold) process, which carries its one-off figures."""
        first_process(child)
        torch_trace.keep(self.spec, self.root, v, child, self.on_artifact)  # spec keep_trace
        self.results[v] = child
        if self.failed.get(v):  # a further process failed before this one ended
            child["process_errors"] = list(self.failed[v])
            child["stop_reason"] = "a measuring process failed"
        if "eager" in self.results:
            roofline.fill_deferred(self.results["eager"], child, self.spec.get("device", "cpu"))
        if child.get("status") != "ok":
            self.drop(v)
            self.end_variant(v)

    def finish_further(self, job: Job, child: dict[str, Any]) -> None:
        v = job.variant
        if child.get("status") == "ok":
            merge_process(self.results[v], child)
            return
        # a further process failed: the variant keeps what it has, with the reason
        self.failed.setdefault(v, []).append(
            {"index": job.index, "failure_kind": child.get("failure_kind"),
             "error": child.get("error")})
        self.drop(v, from_index=job.index)  # its earlier processes may still be measuring
        if v in self.results:  # else it failed before the cold process ended: noted there
            self.results[v]["process_errors"] = list(self.failed[v])
            self.end_variant(v, "a measuring process failed")

    def finish(self, job: Job, child: dict[str, Any]) -> None:
        """Fold one finished process into its variant's result and decide what comes next."""
        v = job.variant
        child.setdefault("scheduling", self.scheduling)
        if v == "eager":
            self.finish_eager(child)
        elif job.speculative or (job.index > 0 and child.get("status") == "cancelled"):
            return  # ended before it was asked for, or cancelled: nothing to keep
        elif job.index == 0:
            self.finish_cold(v, child)
        else:
            self.finish_further(job, child)
        if v != "eager" and v in self.results:
            self.done_count[v] += 1
            if v in self.active:
                self.next_step(v)
        self.publish()

    def stop_reason(self, v: str) -> str | None:
        """Why ``v`` gets no more processes (engine/analysis/stats.stop_reason, the time
        budget), or None."""
        if self.done_count[v] >= self.need[v] and self.extra_since is None:
            self.extra_since = time.monotonic()
        now = self.stats_of(self.results[v])["stats"]
        low, high = now.get("speedup_ci_low"), now.get("speedup_ci_high")
        reason = stats.stop_reason(stats.rel_halfwidth(low, high), self.done_count[v],
                                   min_processes=self.need[v], max_processes=self.k_max,
                                   target_halfwidth=float(self.spec.get("target_halfwidth", 0)),
                                   low=low, high=high)
        budget = float(self.spec.get("process_budget_s", 0))
        # The budget is for processes past a variant's own minimum, never below it: variants'
        # minimums differ (a redrawing one needs a process more), and the clock starts when
        # the first of them reaches its own.
        if (reason is None and self.extra_since is not None
                and self.done_count[v] >= self.need[v]
                and time.monotonic() - self.extra_since >= budget):
            reason = "time budget"
        return reason

    def next_step(self, v: str) -> None:
        """After a variant's process: stop it (with the reason) or give it another process."""
        planned = sum(j.variant == v and j.state != "dropped" and not j.speculative
                      for j in self.plan)
        if self.done_count[v] < planned:
            return
        reason = self.stop_reason(v)
        ahead = next((j for j in self.plan if j.variant == v and j.speculative
                      and j.state not in ("dropped", "done")), None)
        if reason in DECIDED and ahead is not None:
            # Already prepared and compiled, it costs only its timing slot, and three processes
            # can agree by chance (docs/measurements): it is measured, and judged again.
            reason = None
        if reason:
            self.drop(v, speculative_only=True)
            self.end_variant(v, reason)
        elif ahead is not None:  # started early: it may time now
            ahead.speculative = False
        else:
            self.plan.append(Job(v, self.done_count[v]))

    def kill_all(self) -> None:
        for j in self.plan:
            if j.handle is not None and j.state not in ("done", "dropped"):
                j.handle.kill("cancelled")

    def closed(self) -> list[dict[str, Any]]:
        """The results once the run is over: what was measured stands, no longer moving."""
        for v in self.results:
            self.final.setdefault(v, time.time())
            self.results[v]["final_at"] = self.final[v]
        return [self.stats_of(self.results[v]) for v in self.variants if v in self.results]


def run_variants(
    spec: dict[str, Any],
    *,
    on_progress: ProgressFn = lambda v, p, f: None,
    should_cancel: CancelFn = lambda: False,
    on_result: ResultFn = lambda r: None,
    on_artifact: ArtifactFn = lambda v, k, m, b: None,
    eta_priors: dict[tuple[str, str, str], list[float]] | None = None,
    variance_priors: dict[str, stats.VariancePrior] | None = None,
) -> list[dict[str, Any]]:
    """Measure every variant of ``spec`` and return the results with statistics added.

    Eager runs once, in its own process.  Each compiled variant runs in at least
    ``processes`` fresh processes (engine/analysis/stats.py: the process is the unit of replication;
    four where a GPU variant redraws its autotuned kernels, engine/measure/autotune_draw.py):
    the first on an empty inductor cache (the cold compile, warm-up curve, memory, profiler and
    graph-break report), the others on that cache (their first call is the warm-cache compile),
    each timing eager and the variant in paired rounds.  Processes of different variants take
    turns timing (A, B, A, B, ...), so drift over minutes reaches every variant alike; they
    prepare and compile side by side where the host has the cores (``engine.orchestrate.schedule``).  After
    the minimum, a variant gets more processes while its interval is wider than
    ``target_halfwidth`` and does not exclude 1.0 (engine/stats.stop_reason), up to ``max_processes`` or ``process_budget_s`` seconds of extra
    processes; why it stopped is stored.  With ``warm_cache`` a compiled variant gets at least
    two processes.  ``on_result`` is called after every process with the variant's result so
    far, so that nothing measured is lost if a later process crashes.  ``eta_priors``: what each
    stage took in earlier runs of the model (``engine.orchestrate.eta.stage_seconds``), for the live ETA.
    ``variance_priors``: this host's earlier spread of each variant's per-process speedups
    (``storage.history``), which a variant's interval may borrow (``engine.analysis.stats``).  Every
    result passed to ``on_result`` carries the run's statistics as they stand, marked
    provisional until its variant is done; the eager figure is the run's (engine/variant_stats),
    so a process of any variant re-sends them all."""
    run = _Run(spec, on_progress, on_result, on_artifact, eta_priors, variance_priors)
    if run.concurrency > 1 and forked.usable():
        # side by side: eager and the further processes fork from the compiler server, whose
        # imports count as a preparing process until it is ready (engine/schedule.decide)
        compiler_server.start(preloads.wants_libraries(str(spec.get("model"))))
    with tempfile.TemporaryDirectory(prefix="compilelab-") as tmp:
        run.root = Path(tmp)
        try:
            _schedule(run, should_cancel)
            if spec.get("startup") and not should_cancel():  # engine/measure/startup.py
                startup.run_strategies(
                    spec, run.compiled, run.results, run.root, run_child,
                    lambda v, kind: (lambda phase, frac: on_progress(
                        v, f"start-up strategies: {phase}", 0.99)),
                    should_cancel, lambda r: on_result(run.stats_of(r)))
        except BaseException:  # Ctrl-C, or a signal handler raising: never leave a child
            run.kill_all()
            raise
    return run.closed()


def _launch(run: _Run, j: Job) -> None:
    cache = run.root / f"cache-{j.variant}"
    cache.mkdir(exist_ok=True)
    phase = "warm_cache" if j.index > 0 else "cold"
    j.handle = ChildProcess(run.spec, j.variant, phase, cache, run.root, index=j.index,
                            gated=run.gated, explain_ahead=run.gated and run.concurrency > 1
                            and explains_ahead(j, run.plan))


def _cancel(run: _Run, alive: list[Job]) -> None:
    for j in alive:
        j.handle.kill("cancelled")
    for j in alive:
        run.finish(j, j.handle.result())
        j.state = "done"
    for j in run.plan:
        if j.state == "pending" or j.handle is None and j.state == "preparing":
            j.state = "dropped"


def _gate_states(j: Job) -> None:
    """A live gated child's state from the gates it has reached (engine/orchestrate/gates.py)."""
    h = j.handle
    if j.state == "preparing":
        if h.gates.waiting("compile"):
            j.state = "compile_wait"
        elif h.gates.waiting("time"):
            j.state = "time_wait"
    if j.state in ("compiling", "settling") and h.gates.waiting("time"):
        j.state = "time_wait"
    elif j.state == "compiling" and h.gates.arrived("compiled"):
        j.state = "settling"  # its compile slot is free; still busy (engine/schedule)
    h.parked(j.state in ("compile_wait", "time_wait"))


def _watch(run: _Run, alive: list[Job]) -> None:
    """Exits, timeouts and gate arrivals of the live children."""
    for j in alive:
        h = j.handle
        if h.poll():
            if not h.ended:
                h.reap_group()
            j.state = "done"
            run.finish(j, h.result())
        elif h.timed_out():
            h.kill("timeout")
            j.state = "done"
            run.finish(j, h.result())
        elif run.gated:
            _gate_states(j)


def _start(run: _Run, j: Job, deferred: list[Job]) -> None:
    # Without gates nothing is held back: the child prepares, compiles and times in one go, so
    # it counts as timing (nothing else may start beside it).
    j.state = "preparing" if run.gated else "timing"
    if (run.gated and j.variant != "eager" and compiler_server.pending()
            and wants_compiler_server(j.variant, "warm_cache" if j.index else "cold", j.index)):
        # its server is still importing: fork it from there in a moment (it counts as preparing
        # meanwhile, so no reported compile starts without it). Eager is not held back: its
        # model build can be long, and every reported compile waits for it.
        deferred.append(j)
    else:
        _launch(run, j)


def _act(run: _Run, deferred: list[Job]) -> None:
    """What the schedule decides next: start, let compile, let time."""
    for action, j in decide(run.plan, concurrency=run.concurrency,
                            compile_slots=run.compile_slots,
                            server_importing=compiler_server.pending()):
        if action == "start":
            _start(run, j, deferred)
        elif action in ("compile", "time") and j.handle.gates.open(action):
            j.state = "compiling" if action == "compile" else "timing"
            j.handle.parked(False)


def _schedule(run: _Run, should_cancel: CancelFn) -> None:
    """Work through the run's plan (which ``finish`` may extend) under
    ``engine.orchestrate.schedule``'s rules."""
    deferred: list[Job] = []  # started, forked once the compiler server is ready
    while True:
        # Progress first: the caller's heartbeat is throttled, and a cancel check every tick
        # (which beats without progress) would otherwise always take its turn.
        run.eta.sync(run.plan)  # the states' changes since the last tick are its observations
        run.report()
        if deferred and not compiler_server.pending():  # ready, or not worth waiting for
            for j in deferred:
                if j.state == "preparing":  # not dropped or cancelled meanwhile
                    _launch(run, j)
            deferred.clear()
        alive = [j for j in run.plan if j.handle is not None and j.state not in ("done", "dropped")]
        if should_cancel():
            _cancel(run, alive)
            return
        _watch(run, alive)
        if not any(j.state == "pending" or j.state in ALIVE for j in run.plan):
            return
        _act(run, deferred)
        timing = next((j for j in run.plan if j.state == "timing"), None)
        if timing is not None:
            timing.handle.wait(TICK_S * 5)  # an exiting child is noticed at once
        else:
            time.sleep(TICK_S)
