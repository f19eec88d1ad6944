"""``python -m engine worker``: serve queued runs from the database, one at a time.

The runs table is the queue (storage.queue): a claim is one atomic statement, so several workers
on one database never take the same run. While a run executes, progress is written as a
heartbeat about twice a second; a worker that dies leaves a stale heartbeat, and any live worker
re-queues that run once (a second loss marks it failed, "worker lost"). SIGINT/SIGTERM end the
current child, give the run back to the queue and exit cleanly; a second signal exits at once.

``--gpus all`` (or ``0,1``) starts one worker process per GPU, each pinned with
CUDA_VISIBLE_DEVICES; the run's environment records the GPU and CUDA_VISIBLE_DEVICES it ran on.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from engine.execute import execute_run

log = logging.getLogger("compilelab.worker")


class Worker:
    def __init__(self, db: Any, worker_id: str, *, poll_s: float = 1.0,
                 stale_after_s: float = 60.0) -> None:
        self.db = db
        self.worker_id = worker_id
        self.poll_s = poll_s
        self.stale_after_s = stale_after_s
        self.stopping = False
        self._last_recovery = 0.0

    def request_stop(self, signum: int, _frame: Any = None) -> None:
        if self.stopping:  # second signal: the user means it
            log.warning("second signal: exiting now")
            raise SystemExit(128 + signum)
        log.info("%s received: ending the current child and re-queueing its run",
                 signal.Signals(signum).name)
        self.stopping = True

    def recover(self) -> None:
        from storage import queue

        now = time.monotonic()
        if now - self._last_recovery < min(self.stale_after_s / 4, 10.0):
            return
        self._last_recovery = now
        changed = queue.recover_stale_runs(self.db, self.stale_after_s)
        if not changed:
            return
        from storage import queries

        runs = queries.load_runs(self.db, changed)["runs"].set_index("run_id")
        for run_id in changed:
            status = runs["status"].get(run_id)
            if status in ("queued", "running"):  # running: another worker claimed it already
                outcome = "re-queued"
            elif status == "cancelled":
                outcome = "cancelled (a cancel was pending)"
            else:
                outcome = f"{status}: {runs['error'].get(run_id)}"  # failed: worker lost
            log.warning("run %s recovered: its worker stopped heartbeating for over %g s; %s",
                        run_id, self.stale_after_s, outcome)

    def serve(self, once: bool = False) -> int:
        from storage import queue

        log.info("worker %s serving %s", self.worker_id, self.db.url)
        while not self.stopping:
            self.recover()
            claimed = queue.claim_next_run(self.db, self.worker_id)
            if claimed is None:
                if once:
                    break
                time.sleep(self.poll_s)
                continue
            run_id, spec = claimed
            log.info("claimed run %s: %s %s %s on %s, variants %s", run_id, spec["model"],
                     spec.get("dims"), spec.get("dtype"), spec.get("device"),
                     ",".join(spec.get("variants", [])))
            try:
                status = execute_run(
                    self.db, run_id, spec, self.worker_id, log=log.info,
                    on_progress=self._log_phase(run_id), stop_requested=lambda: self.stopping,
                )
            except Exception as e:  # a bug or a lost database must not leave it "running"
                log.exception("run %s failed inside the worker", run_id)
                queue.finish_run(self.db, run_id, "failed", error=f"worker error: {e}"[:1000],
                                 worker_id=self.worker_id)
                continue
            if status == "interrupted":
                queue.requeue_run(self.db, run_id, self.worker_id)
                log.info("run %s re-queued (worker stopping)", run_id)
            else:
                log.info("run %s %s", run_id, status)
        log.info("worker %s stopped", self.worker_id)
        return 0

    @staticmethod
    def _log_phase(run_id: int):
        last: dict[str, Any] = {}

        def on_progress(variant: str, phase: str, fraction: float) -> None:
            if last.get("key") != (variant, phase):
                last["key"] = (variant, phase)
                log.info("run %s: %s: %s (%.0f%%)", run_id, variant, phase, 100 * fraction)

        return on_progress


def _gpu_list(text: str) -> list[str]:
    if text == "all":
        import torch

        n = torch.cuda.device_count()
        if n == 0:
            raise SystemExit("error: --gpus all: no CUDA GPU is visible here")
        return [str(i) for i in range(n)]
    return [g.strip() for g in text.split(",") if g.strip()]


def run_pool(args: argparse.Namespace) -> int:
    """One worker process per GPU; signals are forwarded, and the pool waits for all."""
    gpus = _gpu_list(args.gpus)
    argv = [sys.executable, "-m", "engine", "worker", "--poll", str(args.poll),
            "--stale-after", str(args.stale_after)] + (["--db", args.db] if args.db else []) \
        + (["--once"] if args.once else [])
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
    from storage import open_database

    suffix = os.environ.get("COMPILELAB_WORKER_SUFFIX")
    worker_id = f"{socket.gethostname()}:{os.getpid()}" + (f":{suffix}" if suffix else "")
    worker = Worker(open_database(args.db), worker_id, poll_s=args.poll,
                    stale_after_s=args.stale_after)
    signal.signal(signal.SIGINT, worker.request_stop)
    signal.signal(signal.SIGTERM, worker.request_stop)
    return worker.serve(once=args.once)
