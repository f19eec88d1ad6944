"""Execute one claimed run end to end: the single path shared by the CLI and the worker.

Runs the variants through ``engine.orchestrate.runner``, writes each finished variant to storage at once,
heartbeats progress (which is also how a cancel request is noticed), and closes the run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from contract.text import one_line
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
    in the transaction that ends the run as this worker's, so a stalled worker that wakes up can
    neither overwrite another worker's results nor end its run as cancelled, and a reader never
    sees the run final without them.

    A database outage does not end the run: heartbeats that fail are skipped (the child goes on
    measuring), and saving a result or finishing the run is retried with capped backoff until
    the database is back (``engine.orchestrate.dbretry``), so results measured during the outage are written
    when it ends. If the outage outlasted the stale timeout, another worker may have taken the
    run meanwhile: the ownership checks above then drop this worker's results."""
    ex = _Execution(db, run_id, worker_id, log=log, on_progress=on_progress,
                    stop_requested=stop_requested, heartbeat_every_s=heartbeat_every_s,
                    retry_cap_s=retry_cap_s)
    ex.beat(None, "building", 0.0, force=True)
    res = run_variants(spec, on_progress=ex.progress, should_cancel=ex.should_cancel,
                       on_result=ex.store, on_artifact=ex.keep_file,
                       eta_priors=_eta_priors(db, spec, ex.env, log),
                       variance_priors=_variance_priors(db, spec, ex.env, log))
    return ex.close(res)


class _Execution:
    """One run's execution seen from the database: heartbeats (how a cancel is noticed),
    results saved as they come (held back once a stop came), the run finished once."""

    def __init__(self, db: Any, run_id: int, worker_id: str, *, log: Log,
                 on_progress: Callable[[str, str, float], None] | None,
                 stop_requested: Callable[[], bool], heartbeat_every_s: float,
                 retry_cap_s: float) -> None:
        self.db, self.run_id, self.worker_id, self.log = db, run_id, worker_id, log
        self.on_progress, self.stop_requested = on_progress, stop_requested
        self.heartbeat_every_s, self.retry_cap_s = heartbeat_every_s, retry_cap_s
        self.env: dict[str, Any] = host_fingerprint()
        self.cancel, self.outage, self.last_beat = False, False, 0.0
        self.held: list[dict[str, Any]] = []  # saved with finish_run, if still ours
        self.held_files: list[tuple[str, str, dict[str, Any], bytes]] = []
        # what the log last said of each variant: the runner re-sends every variant after each
        # process (the run's eager moves), and a line is worth a new process or the final one
        self.logged: dict[str, tuple[Any, ...]] = {}
        self.latest: dict[str, dict[str, Any]] = {}  # each variant's row, for the verdict
        self.verdict_gist: str | None = None

    def durable(self, what: str, fn: Callable[[], Any]) -> Any:
        from engine.orchestrate.dbretry import retry

        return retry(fn, db=self.db, what=f"{what} (run {self.run_id})", log=self.log,
                     cap_s=self.retry_cap_s)

    def beat(self, variant: str | None, phase: str | None, fraction: float | None,
             force: bool = False) -> None:
        from engine.orchestrate.dbretry import is_outage
        from storage import queue

        now = time.monotonic()
        if not force and now - self.last_beat < self.heartbeat_every_s:
            return
        self.last_beat = now
        try:
            alive = queue.heartbeat(self.db, self.run_id, self.worker_id, variant=variant,
                                    phase=phase, fraction=fraction)
        except Exception as exc:
            if not is_outage(exc):
                raise
            if not self.outage:
                self.log(f"run {self.run_id}: database {self.db.url} unavailable, measuring "
                         "on; results are saved when it is back")
            self.outage = True
            return
        self.outage = False
        if not alive:
            self.cancel = True

    def progress(self, variant: str, phase: str, fraction: float) -> None:
        self.beat(variant, phase, fraction)
        if self.on_progress:
            self.on_progress(variant, phase, fraction)

    def should_cancel(self) -> bool:
        self.beat(None, None, None)
        return self.cancel or self.stop_requested()

    def add_environment(self, result: dict[str, Any]) -> bool:
        if result.get("environment") and "gpu" not in self.env:
            self.env.update(result["environment"])
            return True
        return False

    def say(self, result: dict[str, Any]) -> None:
        """The log's line for a variant when it has a new process or turned final, and the
        verdict when its answer changes or becomes final (not as its figures move)."""
        s = result.get("stats") or {}
        name = str(result.get("variant"))
        key = (result.get("status"), s.get("n_processes"), s.get("provisional"))
        line = result_line(result)
        if line and self.logged.get(name) != key:
            self.logged[name] = key
            self.log(f"run {self.run_id}: {line}")
        self.latest[name] = {**result, **s}
        said = verdict_line(self.latest.values())
        gist = said.split(" — ")[0] if said else None
        if said and gist != self.verdict_gist:
            self.verdict_gist = gist
            self.log(f"run {self.run_id}: {said}")

    def save(self, result: dict[str, Any]) -> None:
        from storage import results

        if self.add_environment(result):
            self.durable("saving the environment",
                         lambda: results.set_environment(self.db, self.run_id, self.env))
        self.durable(f"saving variant {result.get('variant')}",
                     lambda: results.save_variant_result(self.db, self.run_id, result))
        self.say(result)

    def store(self, result: dict[str, Any]) -> None:
        if not self.cancel:
            # Still ours? (a variant can outlast a stall.) Asked until the database answers.
            self.beat(None, None, None, force=True)
            while self.outage and not self.stop_requested():
                time.sleep(min(self.retry_cap_s, 2.0))
                self.beat(None, None, None, force=True)
        if self.cancel or result.get("status") == "cancelled":
            self.held.append(result)  # saved with finish_run, if the run is still ours
        else:
            self.save(result)

    def save_file(self, variant: str, kind: str, meta: dict[str, Any], data: bytes) -> None:
        from storage import artifacts

        self.durable(f"saving the {kind} of {variant}", lambda: artifacts.save_artifact(
            self.db, self.run_id, variant, kind, str(meta.get("name") or kind), data,
            meta.get("note")))

    def keep_file(self, variant: str, kind: str, meta: dict[str, Any], data: bytes) -> None:
        """An artifact (engine/measure/torch_trace.py): held back like results once a stop came."""
        if self.cancel:
            self.held_files.append((variant, kind, meta, data))
        else:
            self.save_file(variant, kind, meta, data)

    def last_held(self) -> list[dict[str, Any]]:
        """The held results to save with the run's end: each variant's last (the runner re-sends
        every variant after each process), and only those storage can build, so one bad result
        costs itself, not the others and the run's end."""
        from storage import results

        last = {str(r.get("variant")): r for r in self.held}
        out = []
        for name, r in last.items():
            try:
                results.build_variant_result(r)
            except (TypeError, ValueError) as e:
                self.log(f"run {self.run_id}: variant {one_line(name, 64)}'s result cannot be "
                         f"stored: {one_line(e, 300)}")
                continue
            out.append(r)
        return out

    def close(self, res: list[dict[str, Any]]) -> str:
        """Finish the run with its status (and save what was held back), or say it is gone."""
        from storage import queue

        if self.stop_requested() and not self.cancel:
            # The run goes back to the queue; a half-measured variant is not a result.
            return "interrupted"
        if self.cancel:
            status, error = "cancelled", "cancelled by the user"
        elif any(r.get("status") == "ok" for r in res):
            status, error = "done", None
        else:
            status = "failed"
            error = next((r.get("error") for r in res if r.get("error")), "no variant finished")
        held = self.last_held()
        for r in held:
            self.add_environment(r)
        if not self.durable("finishing the run", lambda: queue.finish_run(
                self.db, self.run_id, status, error=error, environment=self.env,
                worker_id=self.worker_id, results=held)):
            self.log(f"run {self.run_id}: no longer this worker's (re-queued after its heartbeat "
                     "went stale, or finished elsewhere): its results here are dropped")
            return "lost"
        for r in held:
            self.say(r)
        for f in self.held_files:
            self.save_file(*f)
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
    from engine.measure.autotune_draw import applies

    # A variant that redraws borrows only from runs that redrew too: earlier runs replayed
    # one draw in every process and would lend it a spread without the draw in it.
    found = {v: [r for r in runs if not applies(spec, v) or "redrawn" in r[1]]
             for v, runs in found.items()}
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
