"""``python -m engine worker``: serve queued runs from the database, one at a time.

The runs table is the queue (storage.queue): a claim is one atomic statement, so several workers
on one database never take the same run. While a run executes, progress is written as a
heartbeat about twice a second; a worker that dies leaves a stale heartbeat, and any live worker
re-queues that run once (a second loss marks it failed, "worker lost"); a dead claimer on the
same host is noticed at once by its pid. SIGINT/SIGTERM end the current child, give the run back
to the queue and exit cleanly; a second signal exits at once.

The worker trusts nothing it reads from the database: each claimed spec goes through
``engine.spec.normalise`` (the validator of the CLI and the dashboard) before anything is
imported, and file or module references run only with ``--allow-user-models`` (or
``COMPILELAB_ALLOW_USER_MODELS=1``). Its database calls ride out an outage (engine.orchestrate.dbretry).

``--gpus all`` (or ``0,1``) starts one worker process per GPU, each pinned with
CUDA_VISIBLE_DEVICES; the run's environment records the GPU and CUDA_VISIBLE_DEVICES it ran on.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import psutil

from contract.text import one_line
from engine.orchestrate.dbretry import retry
from engine.orchestrate.execute import execute_run
from engine.spec import SpecError, normalise, user_models_allowed_by_env
from storage.workers import BEAT_EVERY_S, Capabilities

T = TypeVar("T")

log = logging.getLogger("compilelab.worker")


def _pid_alive(pid: int) -> bool:
    """Is there a process ``pid`` on this host (zombies count as gone)?"""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # another user's process: it exists
        return True


# The shortest heartbeat silence after which a running run counts as lost: four heartbeats of a
# live run (execute.py beats every half second).
MIN_STALE_AFTER_S = 2.0


class Worker:
    def __init__(self, db: Any, worker_id: str, *, poll_s: float = 1.0,
                 stale_after_s: float = 60.0, allow_user_models: bool = False,
                 retry_cap_s: float = 30.0, capabilities: Capabilities | None = None,
                 beat_every_s: float = BEAT_EVERY_S) -> None:
        """``capabilities``: what this worker registers and claims by (``engine.orchestrate.hardware``);
        None (tools and tests) registers nothing and claims any queued run."""
        if not (math.isfinite(stale_after_s) and stale_after_s >= MIN_STALE_AFTER_S):
            # zero or negative: every live run of every other worker would look lost
            raise ValueError(f"stale_after_s must be at least {MIN_STALE_AFTER_S:g} s, got "
                             f"{stale_after_s!r}")
        self.db = db
        self.worker_id = worker_id
        self.poll_s = poll_s
        self.stale_after_s = stale_after_s
        # File and module references in queued specs run only when the operator said so.
        self.allow_user_models = allow_user_models
        self.retry_cap_s = retry_cap_s
        self.stopping = False
        self._last_recovery = 0.0
        self.capabilities = capabilities
        self.beat_every_s = beat_every_s
        self.current_run: int | None = None
        self._beating = threading.Event()

    def request_stop(self, signum: int, _frame: Any = None) -> None:
        if self.stopping:  # second signal: the user means it
            log.warning("second signal: exiting now")
            raise SystemExit(128 + signum)
        log.info("%s received: ending the current child and re-queueing its run",
                 signal.Signals(signum).name)
        self.stopping = True

    def _db(self, what: str, fn: Callable[[], T]) -> T:
        """A database call of the worker's loop, retried through an outage (engine.orchestrate.dbretry)."""
        return retry(fn, db=self.db, what=what, log=log.warning, cap_s=self.retry_cap_s,
                     should_stop=lambda: self.stopping)

    def recover(self, force: bool = False) -> list[int]:
        """Re-queue (or fail) runs whose worker is gone: at once for a claimer of this host whose
        process no longer exists (pid check), after ``stale_after_s`` without heartbeat for the
        rest (other hosts, a stalled process). Returns the ids changed."""
        from storage import queue

        host = socket.gethostname()
        dead = self._db("recovering runs of dead workers",
                        lambda: queue.recover_dead_runs(self.db, host, _pid_alive))
        self._report(dead, f"its worker process on {host} is gone")
        now = time.monotonic()
        if not force and now - self._last_recovery < min(self.stale_after_s / 4, 10.0):
            return dead
        self._last_recovery = now
        stale = self._db("recovering stale runs",
                         lambda: queue.recover_stale_runs(self.db, self.stale_after_s))
        self._report(stale, f"its worker stopped heartbeating for over {self.stale_after_s:g} s")
        return dead + stale

    def _report(self, changed: list[int], why: str) -> None:
        if not changed:
            return
        from storage.records import load_run  # plain dicts: no pandas on a GPU host

        for run_id in changed:
            run = load_run(self.db, run_id) or {}
            status = run.get("status")
            if status in ("queued", "running"):  # running: another worker claimed it already
                outcome = "re-queued"
            elif status == "cancelled":
                outcome = "cancelled (a cancel was pending)"
            else:
                outcome = f"{status}: {run.get('error')}"  # failed: worker lost
            log.warning("run %s recovered: %s; %s", run_id, why, outcome)

    def validate(self, run_id: int, raw: Any) -> dict[str, Any] | None:
        """The claimed spec through the same validator as the CLI and the dashboard, before
        anything is imported, then against this worker's own capabilities (the spec's device,
        require_gpu, require_torch); a spec that fails either ends the run failed, with the
        reason."""
        from storage import queue

        try:
            spec = normalise(raw, allow_user_models=self.allow_user_models)
            unmet = self.capabilities.unmet(spec["device"], spec["require_gpu"],
                                            spec["require_torch"]) if self.capabilities else []
            if not unmet:
                return spec
            # The claim matched the row's columns; the spec, which is what would be measured,
            # asks for more (a row written by hand): never measure it on the wrong hardware.
            reason = one_line(f"refused by worker {self.worker_id}: the run's spec needs "
                              f"{'; '.join(unmet)}, but its queue columns let this worker claim "
                              "it (columns and spec disagree: queue the spec again)", 1000)
        except SpecError as e:
            reason = f"refused by worker {self.worker_id}: {one_line(e, 900)}"
        except Exception as e:  # a hostile spec must never crash the worker
            reason = (f"refused by worker {self.worker_id}: invalid spec "
                      f"({type(e).__name__}: {one_line(e, 300)})")
        log.warning("run %s failed: %s", run_id, reason)
        self._db(f"failing run {run_id}", lambda: queue.finish_run(
            self.db, run_id, "failed", error=reason, worker_id=self.worker_id))
        return None

    def _register(self) -> None:
        from storage import workers

        workers.register_worker(self.db, self.worker_id, self.capabilities,
                                host=socket.gethostname(), pid=os.getpid())

    def _beat_forever(self) -> None:
        """Keep this worker's row fresh, idle or busy (a run's own heartbeat says nothing
        about an idle worker): a thread, so a long variant never makes the worker look gone.
        A database outage is ridden out by trying again at the next beat."""
        from storage import workers

        failing = False
        while not self._beating.wait(self.beat_every_s):
            try:
                if not workers.beat_worker(self.db, self.worker_id, self.current_run):
                    self._register()  # swept while the database was away: register again
                failing = False
            except Exception as e:  # noqa: BLE001 - the next beat tries again
                if not failing:
                    log.warning("worker heartbeat failed (trying again every %g s): %s",
                                self.beat_every_s, one_line(e, 200))
                failing = True

    def serve(self, once: bool = False) -> int:
        """Claim and execute runs until stopped (or, with ``once``, until the queue has none
        this worker can serve). Registered in ``workers`` meanwhile when it has capabilities."""
        if self.capabilities is None:
            return self._serve(once)
        self._db("registering the worker", self._register)
        beat = threading.Thread(target=self._beat_forever, name="worker-beat", daemon=True)
        beat.start()
        try:
            return self._serve(once)
        finally:
            self._beating.set()
            beat.join(timeout=5)
            from storage import workers

            try:
                workers.unregister_worker(self.db, self.worker_id)
            except Exception as e:  # noqa: BLE001 - the row goes stale by itself
                log.warning("could not unregister worker %s: %s", self.worker_id,
                            one_line(e, 200))

    def _serve(self, once: bool) -> int:
        from storage import queue

        log.info("worker %s serving %s (%s)", self.worker_id, self.db.url,
                 "file and module references allowed" if self.allow_user_models
                 else "catalogue and plugin models only")
        while not self.stopping:
            self.recover()
            claimed = self._db("claiming a run", lambda: queue.claim_next_run(
                self.db, self.worker_id, self.capabilities))
            if claimed is None:
                # --once: a run whose worker died a moment ago is recovered before exiting.
                if once and not self.recover(force=True):
                    break
                if not once:
                    time.sleep(self.poll_s)
                continue
            self.run_claimed(*claimed)
        log.info("worker %s stopped", self.worker_id)
        return 0

    def run_claimed(self, run_id: int, raw: Any) -> str | None:
        """Validate and measure a run this worker has claimed (from the queue, or the one run a
        Slurm job claims: engine/slurm/job.py); its final status, "interrupted" (given back to
        the queue: the worker was asked to stop), or None (refused by ``validate``)."""
        from storage import queue

        spec = self.validate(run_id, raw)
        if spec is None:
            return None
        log.info("claimed run %s: %s %s %s on %s, variants %s", run_id, spec["model"],
                 spec["dims"], spec["dtype"], spec["device"], ",".join(spec["variants"]))
        self.current_run = run_id
        try:
            status = execute_run(
                self.db, run_id, spec, self.worker_id, log=log.info,
                on_progress=self._log_phase(run_id), stop_requested=lambda: self.stopping,
                retry_cap_s=self.retry_cap_s,
            )
        except Exception as e:  # a bug or a lost database must not leave it "running"
            log.exception("run %s failed inside the worker", run_id)
            self._db(f"failing run {run_id}", lambda e=e: queue.finish_run(
                self.db, run_id, "failed", error=f"worker error: {one_line(e, 900)}",
                worker_id=self.worker_id))
            return "failed"
        finally:
            self.current_run = None
        if status == "interrupted":
            self._db(f"re-queueing run {run_id}",
                     lambda: queue.requeue_run(self.db, run_id, self.worker_id))
            log.info("run %s re-queued (worker stopping)", run_id)
        else:
            log.info("run %s %s", run_id, status)
        return status

    @staticmethod
    def _log_phase(run_id: int):
        last: dict[str, Any] = {}

        def on_progress(variant: str, phase: str, fraction: float) -> None:
            if last.get("key") != (variant, phase):
                last["key"] = (variant, phase)
                log.info("run %s: %s: %s (%.0f%%)", run_id, variant, phase, 100 * fraction)

        return on_progress


def _gpu_list(text: str) -> list[str]:
    """The GPU indexes of ``--gpus`` ('all' or distinct indexes, engine/cli/main.py), each a
    GPU this host has: a worker pinned to a GPU that is not there would claim runs and fail them
    all (ValueError: one line from the CLI)."""
    import torch

    n = torch.cuda.device_count()
    if n == 0:
        raise ValueError(f"--gpus {text}: no CUDA GPU is visible here")
    wanted = [str(i) for i in range(n)] if text == "all" else text.split(",")
    missing = [g for g in wanted if int(g) >= n]
    if missing:
        raise ValueError(f"--gpus {text}: this host has {n} CUDA GPU(s), 0..{n - 1}; "
                         f"{', '.join(missing)} names none")
    return wanted


def run_pool(args: argparse.Namespace) -> int:
    """One worker process per GPU; signals are forwarded, and the pool waits for all."""
    gpus = _gpu_list(args.gpus)
    argv = [sys.executable, "-m", "engine", "worker", "--poll", str(args.poll),
            "--stale-after", str(args.stale_after)] + (["--db", args.db] if args.db else []) \
        + (["--once"] if args.once else []) \
        + (["--allow-user-models"] if args.allow_user_models else [])
    procs = [subprocess.Popen(argv, env={**os.environ, "CUDA_VISIBLE_DEVICES": g,
                                         "COMPILELAB_WORKER_SUFFIX": f"gpu{g}"},
                              # own session: a terminal's Ctrl-C reaches them once, forwarded
                              start_new_session=True)
             for g in gpus]
    log.info("started %d workers on GPUs %s", len(procs), ",".join(gpus))

    def forward(signum: int, _frame: Any) -> None:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)

    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGTERM, forward)
    return max((p.wait() for p in procs), default=0)


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("alembic").setLevel(logging.WARNING)  # migrations are not news
    if args.gpus:
        return run_pool(args)
    from storage import open_database, queue

    worker_id = queue.worker_identity(suffix=os.environ.get("COMPILELAB_WORKER_SUFFIX"))
    allow = bool(getattr(args, "allow_user_models", False)) or user_models_allowed_by_env()
    if allow:
        log.warning("file and module references in queued specs will run on this host: anyone "
                    "who can write the database can run code here")
    from engine.orchestrate.hardware import describe, probe_capabilities

    capabilities = probe_capabilities()
    log.info("worker %s can run: %s%s", worker_id, describe(capabilities),
             f" (GPU probe failed: {capabilities.info['probe_error']})"
             if capabilities.info.get("probe_error") else "")
    worker = Worker(open_database(args.db, lasting=True), worker_id, poll_s=args.poll,
                    stale_after_s=args.stale_after, allow_user_models=allow,
                    capabilities=capabilities)
    signal.signal(signal.SIGINT, worker.request_stop)
    signal.signal(signal.SIGTERM, worker.request_stop)
    try:
        return worker.serve(once=args.once)
    except Exception as e:
        from engine.orchestrate.dbretry import is_outage

        if not is_outage(e):
            raise
        # Only when asked to stop during an outage: the retries gave up on purpose.
        log.error("worker %s stopped while database %s was unavailable: %s", worker_id,
                  worker.db.url, one_line(getattr(e, "orig", None) or e, 300))
        return 1
