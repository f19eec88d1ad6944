"""Runs one RunSpec: every variant measured in several fresh processes, scheduled so that they
prepare and compile side by side but each times alone (``engine.orchestrate.schedule``).

Nothing here touches the database: the caller (CLI or worker, see ``engine.orchestrate.execute``) passes
callbacks for progress, cancellation and finished results. A child that crashes, runs out of
memory, fails to compile or passes its timeout becomes a failed result with its reason and stderr
tail (``engine.orchestrate.process``); the other variants go on.
"""

from __future__ import annotations

import copy
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.analysis import stats, variant_stats
from engine.measure import forensics, roofline, startup, torch_trace
from engine.orchestrate import compiler_server, forked, gates, preloads
from engine.orchestrate.eta import Eta, describe
from engine.orchestrate.process import ChildProcess, run_child, wants_compiler_server
from engine.orchestrate.schedule import ALIVE, Job, decide, explains_ahead, resolve

__all__ = ["run_child", "run_variants", "time_breakdown"]

ProgressFn = Callable[[str, str, float], None]  # (variant, phase, overall fraction 0..1)
CancelFn = Callable[[], bool]
ResultFn = Callable[[dict[str, Any]], None]
# (variant, kind, meta, bytes): a file the run keeps beside its results (engine/measure/torch_trace.py)
ArtifactFn = Callable[[str, str, dict[str, Any], bytes], None]
TICK_S = 0.02


def _merge_process(base: dict[str, Any], child: dict[str, Any]) -> None:
    """Fold a further measuring process's result into its variant's result (the cold process's,
    which carries the warm-up curve, compile, memory, profiler and graph-break figures)."""
    proc = dict(child["processes"][0])
    proc.update(first_call_s=child.get("first_call_warm_s"), phases=child.get("phases"),
                compile_load=child.get("compile_load"),
                started_at=child.get("process_started_at"),
                spawned_at=child.get("process_spawned_at"), ended_at=child.get("process_ended_at"))
    base["processes"].append(proc)
    for key in ("samples_ms", "pipelined_ms", "eager_samples_ms", "eager_pipelined_ms"):
        base[key] = list(base.get(key) or []) + list(proc[key])
    if proc.get("pipeline_k") is not None:  # the pipelined K each process used (engine/pipeline_k)
        base["pipeline_k"] = list(base.get("pipeline_k") or []) + [proc["pipeline_k"]]
    loads = [p.get("host_other_busy_cores") for p in base["processes"]]
    loads = [x for x in loads if x is not None]
    base["host_other_busy_cores"] = max(loads) if loads else None
    base["host_probe"] = host_probe_median(base["processes"])
    # The first warm-cache process's first call: a fresh process on the filled cache with
    # inductor's defaults, as a user's restart (later ones run without the compile-worker pool).
    base["first_call_warm_s"] = base["processes"][1].get("first_call_s")
    base["compile_load"] = {"cold": base["processes"][0].get("compile_load"),
                            "warm": base["processes"][1].get("compile_load")}
    base.setdefault("compile_phases_warm_s", child.get("compile_phases_warm_s"))
    forensics.merge_cache(base, child)


def host_probe_median(processes: list[dict[str, Any]]) -> dict[str, float] | None:
    """Each host-probe figure (engine/measure/host_probe.py) as the median over ``processes``."""
    probes = [p["host_probe"] for p in processes if isinstance(p.get("host_probe"), dict)]
    keys = sorted({k for p in probes for k in p})
    out = {k: statistics.median(v) for k in keys
           if (v := [float(p[k]) for p in probes if isinstance(p.get(k), (int, float))])}
    return out or None


def _first_process(result: dict[str, Any]) -> None:
    """The cold process's own entry in ``processes``: when it ran and its phases."""
    load = result.get("compile_load")
    if load is not None:  # the cold compile's host (engine/measure/compile_load.py); "warm" joins later
        result["compile_load"] = {"cold": load}
    for proc in result.get("processes") or []:
        proc.update(first_call_s=result.get("first_call_cold_s"), phases=result.pop("phases", None),
                    compile_load=load,
                    started_at=result.pop("process_started_at", None),
                    spawned_at=result.pop("process_spawned_at", None),
                    ended_at=result.pop("process_ended_at", None))


def time_breakdown(processes: list[dict[str, Any]]) -> dict[str, float]:
    """Where a variant's wall time went, summed over its processes (seconds): "process start"
    (spawn to the interpreter running our code), then the child's own phases (imports, setup,
    compile, warm-up, measure, profile), and "exit" (last phase to the process being reaped)."""
    out: dict[str, float] = {}

    def add(name: str, seconds: float | None) -> None:
        if seconds is not None and seconds >= 0:
            out[name] = out.get(name, 0.0) + seconds

    for p in processes:
        phases = [ph for ph in p.get("phases") or [] if isinstance(ph, dict)]
        if p.get("spawned_at") and p.get("started_at"):
            add("process start", p["started_at"] - p["spawned_at"])
        for ph in phases:
            add(str(ph.get("name")), float(ph["end"]) - float(ph["start"]))
        if phases and p.get("ended_at"):
            add("exit", p["ended_at"] - max(float(ph["end"]) for ph in phases))
    return {k: round(v, 3) for k, v in out.items()}


def with_stats(result: dict[str, Any], results: dict[str, dict[str, Any]],
               eager_first_ms: float | None,
               history: dict[str, stats.VariancePrior] | None = None) -> dict[str, Any]:
    """A copy of ``result`` with its stats block, computed with the whole run's results (one
    eager for the run, the variance its variants may share: engine/analysis/variant_stats.py)."""
    out = variant_stats.add_stats(copy.deepcopy(result), results,
                                  eager_first_call_ms=eager_first_ms, history=history)
    if out.get("processes"):
        out["time_s"] = time_breakdown(out["processes"])
    return out


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
    ``processes`` fresh processes (engine/analysis/stats.py: the process is the unit of replication):
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
    history = variance_priors
    variants = list(spec["variants"])
    compiled = [v for v in variants if v != "eager"]
    k_min = max(int(spec.get("processes", 1)), 2 if spec.get("warm_cache", True) else 1)
    k_max = max(int(spec.get("max_processes", k_min)), k_min)
    concurrency, compile_slots = resolve(int(spec.get("concurrency") or 0),
                                         spec_compile_slots=int(spec.get("compile_slots") or 0))
    gated = gates.supported()
    if not gated:
        concurrency = compile_slots = 1
    if concurrency > 1 and forked.usable():
        # side by side: eager and the further processes fork from the compiler server, whose
        # imports count as a preparing process until it is ready (engine/schedule.decide)
        compiler_server.start(preloads.wants_libraries(str(spec.get("model"))))
    results: dict[str, dict[str, Any]] = {}
    eager_first: dict[str, float | None] = {"ms": None}
    plan: list[Job] = ([Job("eager", 0)] if "eager" in variants else [])
    plan += [Job(v, i) for i in range(k_min) for v in compiled]
    if k_max > k_min and len(plan) + len(compiled) <= concurrency:
        # Where the whole run fits in one batch, each variant's first further process starts
        # with the rest (speculative: it times only if the interval asks for it, else it is
        # ended), so it does not pay its own start-up and compiler import after everything
        # else: on the H200 host that last batch took 11 s of a 78 s seed-MLP run.
        plan += [Job(v, k_min, speculative=True) for v in compiled]
    active = set(compiled)  # variants that may still get processes
    done_count = {v: 0 for v in compiled}
    extra_since: list[float] = []
    eta = Eta(concurrency=concurrency, compile_slots=compile_slots,
              min_time_s=float(spec.get("min_time_s", 0.5)), priors=eta_priors)
    scheduling = {"concurrency": concurrency, "compile_slots": compile_slots}

    failed: dict[str, list[dict[str, Any]]] = {}  # further processes' failures by variant

    def drop(variant: str, speculative_only: bool = False, from_index: int = 0) -> None:
        """No more processes for ``variant``: pending ones go, live ones are ended (with
        ``speculative_only``, only its processes started before they were asked for; with
        ``from_index``, only those from that index on)."""
        if not speculative_only:
            active.discard(variant)
        for j in plan:
            if (j.variant == variant and (j.speculative or not speculative_only)
                    and j.index >= from_index
                    and (j.state == "pending" or j.state in ALIVE and j.state != "timing")):
                if j.handle is not None:
                    j.handle.kill("dropped")
                j.state = "dropped"

    def report() -> None:
        focus = next((j for j in plan if j.state == "timing"), None) or next(
            (j for j in plan if j.state in ("compiling", "preparing")), None)
        if focus is None or focus.handle is None:
            return
        p = focus.handle.progress()
        if p is None:
            return
        phase, frac = p
        seconds, by_time = eta.estimate(plan)
        total = max(sum(j.state != "dropped" for j in plan), 1)
        finished = sum(j.state == "done" for j in plan)
        overall = by_time if by_time is not None else (finished + frac) / total
        left = describe(seconds)
        on_progress(focus.variant, f"{phase} · {left}" if left else phase, min(overall, 1.0))

    final: dict[str, float] = {}  # variant -> when its figures became final (unix s)

    def publish() -> None:
        """Every variant's result with the run's statistics as they stand: a process of any
        variant moves the run's eager, and so every compiled figure (engine/variant_stats)."""
        if "eager" in results and not active:
            final.setdefault("eager", time.time())
        for name, raw in results.items():
            raw["final_at"] = final.get(name)
            on_result(with_stats(raw, results, eager_first["ms"], history))

    def end_variant(v: str, reason: str | None = None) -> None:
        if reason:
            results[v]["stop_reason"] = reason
        active.discard(v)
        final.setdefault(v, time.time())

    def finish_eager(child: dict[str, Any]) -> None:
        _first_process(child)
        if child.get("status") == "ok":
            # Call 1 of eager's curve: like the compiled first call, it follows the eager
            # reference call that paid the CUDA/cuBLAS start-up (engine/measure/child.py).
            eager_first["ms"] = (child.get("warmup_ms") or [None])[0]
            child["stop_reason"] = "one process asked"
        for other in results.values():  # a compiled process that counted before eager ended
            if roofline.fill_deferred(child, other, spec.get("device", "cpu")):
                break
        results["eager"] = child

    def finish_cold(v: str, child: dict[str, Any]) -> None:
        """The variant's first (cold) process, which carries its one-off figures."""
        _first_process(child)
        torch_trace.keep(spec, root, v, child, on_artifact)  # spec keep_trace
        results[v] = child
        if failed.get(v):  # a further process failed before this one ended
            child["process_errors"] = list(failed[v])
            child["stop_reason"] = "a measuring process failed"
        if "eager" in results:
            roofline.fill_deferred(results["eager"], child, spec.get("device", "cpu"))
        if child.get("status") != "ok":
            drop(v)
            end_variant(v)

    def finish_further(job: Job, child: dict[str, Any]) -> None:
        v = job.variant
        if child.get("status") == "ok":
            _merge_process(results[v], child)
            return
        # a further process failed: the variant keeps what it has, with the reason
        failed.setdefault(v, []).append({"index": job.index, "failure_kind":
                                         child.get("failure_kind"), "error": child.get("error")})
        drop(v, from_index=job.index)  # its earlier processes may still be measuring
        if v in results:  # else it failed before the cold process ended: noted there
            results[v]["process_errors"] = list(failed[v])
            end_variant(v, "a measuring process failed")

    def finish(job: Job, child: dict[str, Any]) -> None:
        """Fold one finished process into its variant's result and decide what comes next."""
        v = job.variant
        child.setdefault("scheduling", scheduling)
        if v == "eager":
            finish_eager(child)
        elif job.speculative or (job.index > 0 and child.get("status") == "cancelled"):
            return  # ended before it was asked for, or cancelled: nothing to keep
        elif job.index == 0:
            finish_cold(v, child)
        else:
            finish_further(job, child)
        if v != "eager" and v in results:
            done_count[v] += 1
            if v in active:
                next_step(v)
        publish()

    def next_step(v: str) -> None:
        """After a variant's process: stop it (with the reason) or give it another process."""
        planned = sum(j.variant == v and j.state != "dropped" and not j.speculative
                      for j in plan)
        if done_count[v] < planned:
            return
        if done_count[v] >= k_min and not extra_since:
            extra_since.append(time.monotonic())
        now = with_stats(results[v], results, eager_first["ms"], history)["stats"]
        low, high = now.get("speedup_ci_low"), now.get("speedup_ci_high")
        reason = stats.stop_reason(stats.rel_halfwidth(low, high), done_count[v],
                                   min_processes=k_min, max_processes=k_max,
                                   target_halfwidth=float(spec.get("target_halfwidth", 0)),
                                   low=low, high=high)
        if (reason is None and extra_since and time.monotonic() - extra_since[0]
                >= float(spec.get("process_budget_s", 0))):
            reason = "time budget"
        ahead = next((j for j in plan if j.variant == v and j.speculative
                      and j.state not in ("dropped", "done")), None)
        if reason in ("interval tight enough", "interval excludes 1.0") and ahead is not None:
            # Already prepared and compiled, it costs only its timing slot (0.6 s on the H200
            # seed MLP), and three processes can agree by chance: on the H200 one run's three
            # gave default 0.625x [0.611, 0.640] while two runs of four gave 0.585x and 0.543x.
            # So it is measured, and the interval judged again with it.
            reason = None
        if reason:
            drop(v, speculative_only=True)
            end_variant(v, reason)
        elif ahead is not None:  # started early: it may time now
            ahead.speculative = False
        else:
            plan.append(Job(v, done_count[v]))

    with tempfile.TemporaryDirectory(prefix="compilelab-") as tmp:
        root = Path(tmp)
        try:
            _schedule(plan, spec, root, gated=gated, concurrency=concurrency,
                      compile_slots=compile_slots, should_cancel=should_cancel, finish=finish,
                      report=report, eta=eta)
            if spec.get("startup") and not should_cancel():  # engine/measure/startup.py, one at a time
                startup.run_strategies(
                    spec, compiled, results, root, run_child,
                    lambda v, kind: (lambda phase, frac: on_progress(
                        v, f"start-up strategies: {phase}", 0.99)),
                    should_cancel,
                    lambda r: on_result(with_stats(r, results, eager_first["ms"], history)))
        except BaseException:  # Ctrl-C, or a signal handler raising: never leave a child
            for j in plan:
                if j.handle is not None and j.state not in ("done", "dropped"):
                    j.handle.kill("cancelled")
            raise

    for v in results:  # cancelled or cut short: what was measured stands, no longer moving
        final.setdefault(v, time.time())
        results[v]["final_at"] = final[v]
    return [with_stats(results[v], results, eager_first["ms"], history)
            for v in variants if v in results]


def _schedule(plan: list[Job], spec: dict[str, Any], root: Path, *, gated: bool,
              concurrency: int, compile_slots: int, should_cancel: CancelFn,
              finish: Callable[[Job, dict[str, Any]], None], report: Callable[[], None],
              eta: Eta) -> None:
    """Work through ``plan`` (which ``finish`` may extend) under ``engine.orchestrate.schedule``'s rules."""
    deferred: list[Job] = []  # started, forked once the compiler server is ready

    def launch(j: Job) -> None:
        cache = root / f"cache-{j.variant}"
        cache.mkdir(exist_ok=True)
        phase = "warm_cache" if j.index > 0 else "cold"
        j.handle = ChildProcess(spec, j.variant, phase, cache, root, index=j.index, gated=gated,
                                explain_ahead=gated and concurrency > 1
                                and explains_ahead(j, plan))

    while True:
        # Progress first: the caller's heartbeat is throttled, and a cancel check every tick
        # (which beats without progress) would otherwise always take its turn.
        eta.sync(plan)  # the states' changes since the last tick are its observations
        report()
        if deferred and not compiler_server.pending():  # ready, or not worth waiting for
            for j in deferred:
                if j.state == "preparing":  # not dropped or cancelled meanwhile
                    launch(j)
            deferred.clear()
        alive = [j for j in plan if j.handle is not None and j.state not in ("done", "dropped")]
        if should_cancel():
            for j in alive:
                j.handle.kill("cancelled")
            for j in alive:
                finish(j, j.handle.result())
                j.state = "done"
            for j in plan:
                if j.state == "pending" or j.handle is None and j.state == "preparing":
                    j.state = "dropped"
            return
        for j in alive:  # exits, timeouts, gate arrivals
            h = j.handle
            if h.poll():
                if not h.ended:
                    h.reap_group()
                j.state = "done"
                finish(j, h.result())
                continue
            if h.timed_out():
                h.kill("timeout")
                j.state = "done"
                finish(j, h.result())
                continue
            if not gated:
                continue
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
        if not any(j.state == "pending" or j.state in ALIVE for j in plan):
            return
        for action, j in decide(plan, concurrency=concurrency, compile_slots=compile_slots,
                                server_importing=compiler_server.pending()):
            if action == "start":
                # Without gates nothing is held back: the child prepares, compiles and times
                # in one go, so it counts as timing (nothing else may start beside it).
                j.state = "preparing" if gated else "timing"
                if (gated and j.variant != "eager" and compiler_server.pending()
                        and wants_compiler_server(j.variant, "warm_cache" if j.index else "cold",
                                                  j.index)):
                    # its server is still importing: fork it from there in a moment (it counts
                    # as preparing meanwhile, so no reported compile starts without it). Eager
                    # is not held back: its model build can be long (BERT-base on the H200
                    # host: 10 s, started 9 s late), and every reported compile waits for it.
                    deferred.append(j)
                else:
                    launch(j)
            elif action == "compile" and j.handle.gates.open("compile"):
                j.state = "compiling"
                j.handle.parked(False)
            elif action == "time" and j.handle.gates.open("time"):
                j.state = "timing"
                j.handle.parked(False)
        timing = next((j for j in plan if j.state == "timing"), None)
        if timing is not None:
            timing.handle.wait(TICK_S * 5)  # an exiting child is noticed at once
        else:
            time.sleep(TICK_S)


