"""Execute one claimed run end to end: the single path shared by the CLI and the worker.

Runs the variants through ``engine.orchestrate.runner``, writes each finished variant to storage at once,
heartbeats progress (which is also how a cancel request is noticed), and closes the run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from engine.environment import host_fingerprint
from engine.orchestrate.runner import run_variants

Log = Callable[[str], None]


def execute_run(
    db: Any,
    run_id: int,
    spec: dict[str, Any],
    worker_id: str,
    *,
    log: Log = print,
    on_progress: Callable[[str, str, float], None] | None = None,
    stop_requested: Callable[[], bool] = lambda: False,
    heartbeat_every_s: float = 0.5,
    retry_cap_s: float = 30.0,
) -> str:
    """Returns the run's final status: done, failed or cancelled. ``stop_requested`` (the worker's
    SIGTERM) ends the current child like a cancel, but the caller re-queues the run instead
    ("interrupted"). "lost": the run stopped being this worker's while it ran (re-queued as stale
    while this worker was stalled, and maybe taken by another worker); nothing more is written.

    A heartbeat answering "stop" means either a cancel or a lost run, and only ``finish_run``
    (which checks the owner) tells them apart: from that moment results are held back and saved
    only once the run has been finished as this worker's, so a stalled worker that wakes up can
    neither overwrite another worker's results nor end its run as cancelled.

    A database outage does not end the run: heartbeats that fail are skipped (the child goes on
    measuring), and saving a result or finishing the run is retried with capped backoff until
    the database is back (``engine.orchestrate.dbretry``), so results measured during the outage are written
    when it ends. If the outage outlasted the stale timeout, another worker may have taken the
    run meanwhile: the ownership checks above then drop this worker's results."""
    from engine.orchestrate.dbretry import is_outage, retry
    from storage import queue, results

    env: dict[str, Any] = host_fingerprint()
    state: dict[str, Any] = {"cancel": False, "beat": 0.0, "outage": False}
    held: list[dict[str, Any]] = []

    def durable(what: str, fn: Callable[[], Any]) -> Any:
        return retry(fn, db=db, what=f"{what} (run {run_id})", log=log, cap_s=retry_cap_s)

    def beat(variant: str | None, phase: str | None, fraction: float | None,
             force: bool = False) -> None:
        now = time.monotonic()
        if force or now - state["beat"] >= heartbeat_every_s:
            state["beat"] = now
            try:
                alive = queue.heartbeat(db, run_id, worker_id, variant=variant, phase=phase,
                                        fraction=fraction)
            except Exception as exc:
                if not is_outage(exc):
                    raise
                if not state["outage"]:
                    log(f"run {run_id}: database {db.url} unavailable, measuring on; results "
                        "are saved when it is back")
                state["outage"] = True
                return
            state["outage"] = False
            if not alive:
                state["cancel"] = True

    def progress(variant: str, phase: str, fraction: float) -> None:
        beat(variant, phase, fraction)
        if on_progress:
            on_progress(variant, phase, fraction)

    def should_cancel() -> bool:
        beat(None, None, None)
        return state["cancel"] or stop_requested()

    def add_environment(result: dict[str, Any]) -> bool:
        if result.get("environment") and "gpu" not in env:
            env.update(result["environment"])
            return True
        return False

    def save(result: dict[str, Any]) -> None:
        if add_environment(result):
            durable("saving the environment", lambda: results.set_environment(db, run_id, env))
        durable(f"saving variant {result.get('variant')}",
                lambda: results.save_variant_result(db, run_id, result))
        s = result.get("stats") or {}
        key = (result.get("status"), s.get("n_processes"), s.get("provisional"))
        line = result_line(result)
        if line and logged.get(str(result.get("variant"))) != key:
            logged[str(result.get("variant"))] = key
            log(f"run {run_id}: {line}")
        latest[str(result.get("variant"))] = {**result, **s}
        said = verdict_line(latest.values())
        # said again only when its answer changes or it becomes final, not as figures move
        gist = said.split(" — ")[0] if said else None
        if said and gist != logged_verdict.get("gist"):
            logged_verdict["gist"] = gist
            log(f"run {run_id}: {said}")

    # what the log last said of each variant: the runner re-sends every variant after each
    # process (the run's eager moves), and a line is worth a new process or the final figure
    logged: dict[str, tuple[Any, ...]] = {}
    latest: dict[str, dict[str, Any]] = {}  # each variant's row as it stands, for the verdict
    logged_verdict: dict[str, str] = {}

    def store(result: dict[str, Any]) -> None:
        if not state["cancel"]:
            # Still ours? (a variant can outlast a stall.) Asked until the database answers.
            beat(None, None, None, force=True)
            while state["outage"] and not stop_requested():
                time.sleep(min(retry_cap_s, 2.0))
                beat(None, None, None, force=True)
        if state["cancel"] or result.get("status") == "cancelled":
            held.append(result)  # saved after finish_run, if the run is still ours
        else:
            save(result)

    held_files: list[tuple[str, str, dict[str, Any], bytes]] = []

    def save_file(variant: str, kind: str, meta: dict[str, Any], data: bytes) -> None:
        from storage import artifacts

        durable(f"saving the {kind} of {variant}", lambda: artifacts.save_artifact(
            db, run_id, variant, kind, str(meta.get("name") or kind), data, meta.get("note")))

    def keep_file(variant: str, kind: str, meta: dict[str, Any], data: bytes) -> None:
        """An artifact (engine/measure/torch_trace.py): held back like results once a stop came."""
        if state["cancel"]:
            held_files.append((variant, kind, meta, data))
        else:
            save_file(variant, kind, meta, data)

    beat(None, "building", 0.0, force=True)
    res = run_variants(spec, on_progress=progress, should_cancel=should_cancel, on_result=store,
                       on_artifact=keep_file, eta_priors=_eta_priors(db, spec, env, log),
                       variance_priors=_variance_priors(db, spec, env, log))
    if stop_requested() and not state["cancel"]:
        # The run goes back to the queue; a half-measured variant is not a result.
        return "interrupted"
    if state["cancel"]:
        status, error = "cancelled", "cancelled by the user"
    elif any(r.get("status") == "ok" for r in res):
        status, error = "done", None
    else:
        status = "failed"
        error = next((r.get("error") for r in res if r.get("error")), "no variant finished")
    for r in held:
        add_environment(r)
    if not durable("finishing the run", lambda: queue.finish_run(
            db, run_id, status, error=error, environment=env, worker_id=worker_id)):
        log(f"run {run_id}: no longer this worker's (re-queued after its heartbeat went stale, "
            "or finished elsewhere): its results here are dropped")
        return "lost"
    for r in held:
        save(r)
    for f in held_files:
        save_file(*f)
    return status


def _eta_priors(db: Any, spec: dict[str, Any], env: dict[str, Any], log: Log
                ) -> dict[tuple[str, str, str], list[float]] | None:
    """What each stage took in this host's latest runs of the model (engine/orchestrate/eta.py): the live
    ETA starts from them instead of guessing until this run's own processes have been through
    each stage (replayed over stored runs, ``acceptance/eta_replay.py --history``).  A history
    that cannot be read only costs the estimate its head start."""
    from engine.orchestrate.eta import stage_seconds
    from storage.history import recent_processes

    try:
        return stage_seconds(recent_processes(
            db, str(spec.get("model")), str(spec.get("device")), host=env.get("host"),
            dims=spec.get("dims"), dtype=spec.get("dtype"),
            step=str(spec.get("step") or "inference"))) or None
    except Exception as e:  # the estimate is a convenience; the run goes on without it
        log(f"the ETA starts without history: {type(e).__name__}: {str(e)[:200]}")
        return None


def result_line(result: dict[str, Any]) -> str | None:
    """What the log says of a variant's result as it stands: its figures, marked provisional
    until its variant is done (None before it has a figure)."""
    s = result.get("stats") or {}
    name = result.get("variant")
    if result.get("status") != "ok":
        return f"{name} {result.get('status')}: {result.get('error')}"
    median = s.get("median_ms")
    if median is None:
        return None
    state = ("provisional" if s.get("provisional") else "final") + (
        f", {s['n_processes']} process{'es' * (s['n_processes'] != 1)}"
        if s.get("n_processes") else "")
    text = f"{name} ({state}): {median:.4g} ms/call"
    if name != "eager" and s.get("speedup"):
        low, high = s.get("speedup_ci_low"), s.get("speedup_ci_high")
        text += f", speedup {s['speedup']:.2f}x" + (f" [{low:.2f}, {high:.2f}]"
                                                      if low and high else "")
    return text


def _variance_priors(db: Any, spec: dict[str, Any], env: dict[str, Any], log: Log
                     ) -> dict[str, Any] | None:
    """Each variant's spread of per-process speedups in this host's latest runs of exactly
    this configuration, as the variance its interval may borrow (engine/analysis/stats.py).  A history
    that cannot be read only costs the interval its head start."""
    from engine.analysis.stats import history_prior
    from storage.history import recent_process_speedups

    try:
        found = recent_process_speedups(
            db, str(spec.get("model")), str(spec.get("device")), host=env.get("host"),
            dims=spec.get("dims"), dtype=spec.get("dtype"),
            step=str(spec.get("step") or "inference"))
    except Exception as e:
        log(f"the intervals start without history: {type(e).__name__}: {str(e)[:200]}")
        return None
    priors = {v: p for v, runs in found.items() if (p := history_prior(runs)) is not None}
    return priors or None


def verdict_line(rows: Any) -> str | None:
    """The latency verdict as the rows stand, marked provisional while any figure may move: a
    user sees an answer as soon as eager and one compiled process are in (engine/analysis/verdict.py),
    and sees it become final. None before there is anything to compare."""
    from engine.analysis.verdict import decide

    rows = list(rows)
    if not any(r.get("variant") != "eager" and r.get("speedup") is not None for r in rows) \
            or not any(r.get("variant") == "eager" for r in rows):
        return None
    verdict = decide(rows)
    state = "provisional verdict" if verdict.provisional else "verdict (final)"
    return f"{state}: {verdict.latency}"
