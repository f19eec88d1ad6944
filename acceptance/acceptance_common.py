"""What the GPU acceptance scripts (acceptance/*_acceptance.py) share: their command-line options
and measuring one run through the engine's own path (queue, claim, execute, store)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from typing import Any


def common_parser(models: Iterable[str], what: str) -> argparse.ArgumentParser:
    """--db, --device, --only, --tiny, --backend and --bundle, with the defaults the scripts
    use on the H200 (cuda, inductor, every model)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", default=os.environ.get("COMPILELAB_DB"))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--only", default=",".join(models), help="comma list of models")
    ap.add_argument("--tiny", action="store_true", help="tiny shapes, fp32 (a CPU check)")
    ap.add_argument("--backend", default="inductor")
    ap.add_argument("--bundle", default=None, help=f"also export every {what} run here")
    return ap


def measure(db: Any, spec: dict[str, Any], tags: list[str], worker_id: str) -> int:
    """Queue ``spec``, claim it and measure it here; returns the run id (the run's own status
    says how it ended)."""
    from engine.orchestrate.execute import execute_run
    from storage import queue

    rid = queue.enqueue_run(db, spec, tags=tags)
    queue.claim_run(db, rid, worker_id)
    execute_run(db, rid, spec, worker_id, log=lambda m: print(m, flush=True))
    return rid
