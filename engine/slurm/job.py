"""The batch job's side: ``python -m engine worker --once --run-id N [--spec-sha256 H]``.

What the script of engine/slurm/script.py runs on the compute node. It claims exactly run N
(``storage.queue.claim_run``: only while the run is queued, so a run cancelled before the job
started is left alone), checks that the stored spec is still the one its submitter saw (the
SHA-256 in the script), then validates and measures it as any worker does
(``engine.orchestrate.worker.Worker.run_claimed``: the same validator, file and module references only with
``--allow-user-models``, the spec's device, GPU and torch checked against this node's hardware).

Slurm's SIGTERM (scancel, time limit, preemption) ends the current child and gives the run back
to the queue, as a worker's stop does; the reconciler then reads how the job ended and ends the
run with that reason, or leaves it queued for the job's next start after a requeue. A start
after a requeue first releases the claim an earlier start of the same job left behind. A job
that cannot open the database within ``--db-wait`` seconds exits with code 3
(``states.EXIT_NO_DATABASE``), which the reconciler reports as such.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from typing import Any

from engine.slurm.script import spec_digest
from engine.slurm.states import EXIT_NO_DATABASE

log = logging.getLogger("compilelab.slurm.job")


def slurm_job_id(environ: dict[str, str] | None = None) -> int | None:
    """This process's Slurm job id (``SLURM_JOB_ID``), None outside a job."""
    text = (os.environ if environ is None else environ).get("SLURM_JOB_ID", "")
    return int(text) if text.isdigit() else None


def open_with_wait(url: str | None, wait_s: float, sleep: Any = time.sleep) -> Any:
    """The database, tried until ``wait_s`` has passed (a node may come up before the network
    to the database does); None after that, the reason logged."""
    from contract.text import one_line
    from storage import open_database
    from storage.db import DatabaseOpenError, SchemaError, mask_url

    deadline = time.monotonic() + wait_s
    delay = 1.0
    while True:
        try:
            return open_database(url, create=False)
        except SchemaError as e:  # a newer Compile Lab migrated it: waiting will not help
            log.error("cannot use database %s: %s", mask_url(url or os.environ.get(
                "COMPILELAB_DB")), one_line(e, 300))
            return None
        except DatabaseOpenError as e:
            if time.monotonic() + delay > deadline:
                log.error("cannot reach the database after %.0f s: %s", wait_s, one_line(e, 300))
                return None
            log.warning("database not reachable yet (trying again in %.0f s): %s", delay,
                        one_line(e, 200))
            sleep(delay)
            delay = min(delay * 2, 15.0)


def _claim(db: Any, run_id: int, worker_id: str, job_id: int | None) -> Any:
    from storage import queue, slurm_jobs

    if job_id is not None and slurm_jobs.back_to_queue(db, run_id, job_id=job_id):
        log.info("run %s: released the claim of an earlier start of Slurm job %s", run_id, job_id)
    return queue.claim_run(db, run_id, worker_id)


def main(args: argparse.Namespace) -> int:
    """Serve run ``args.run_id`` once; the exit code (0 also when there was nothing to do)."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("alembic").setLevel(logging.WARNING)
    from engine.orchestrate.worker import Worker
    from engine.spec import user_models_allowed_by_env
    from storage import queue
    from storage.records import load_run

    run_id, job_id = int(args.run_id), slurm_job_id()
    db = open_with_wait(args.db, float(args.db_wait))
    if db is None:
        return EXIT_NO_DATABASE
    worker_id = queue.worker_identity(suffix=f"slurm{job_id}" if job_id else "once")
    raw = _claim(db, run_id, worker_id, job_id)
    if raw is None:
        run = load_run(db, run_id)
        log.info("run %s is %s: nothing to do", run_id, run["status"] if run else "not stored")
        return 0
    where = f"Slurm job {job_id}" if job_id else f"worker {worker_id}"
    if args.spec_sha256 and spec_digest(raw) != args.spec_sha256:
        reason = (f"refused by {where}: the run's spec in the database is not the one that was "
                  "submitted (it changed after submission)")
        log.warning("run %s failed: %s", run_id, reason)
        queue.finish_run(db, run_id, "failed", error=reason, worker_id=worker_id)
        return 0
    from engine.orchestrate.hardware import describe, probe_capabilities

    capabilities = probe_capabilities()
    log.info("%s can run: %s", where, describe(capabilities))
    worker = Worker(db, worker_id, capabilities=capabilities,
                    allow_user_models=bool(args.allow_user_models) or user_models_allowed_by_env())
    signal.signal(signal.SIGINT, worker.request_stop)
    signal.signal(signal.SIGTERM, worker.request_stop)
    worker.run_claimed(run_id, raw)
    return 0
