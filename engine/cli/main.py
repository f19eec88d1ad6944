"""``python -m engine``: models | run | show | worker | cancel | slurm (engine/slurm/cli.py; and,
from engine/cli/regress.py, gate | export | import | rerun | baseline | suite | recommend | trace).

Bad input gets one clear line on stderr and exit code 2, and nothing is stored: the spec, tags
and note are validated completely (including the device, the backend and user factories) before
a run row is written. Database URLs are only ever shown with the password masked. ``show`` and
``cancel`` never create a database. ``run`` ends its run as cancelled on Ctrl-C, SIGTERM or
SIGHUP (the measuring child's process group is ended first), so nothing is left ``running``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import NoReturn

from engine.cli import run as cli_run
from engine.cli.run import UsageError, cmd_run
from engine.models.catalogue import CatalogueError
from engine.spec import SpecError

MAX_RUN_ID = 2**63 - 1  # the id column is a 64-bit integer on both databases


def _run_id(text: str) -> int:
    """A run id as the user typed it: a positive whole number that fits the id column."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a run id is a positive whole number, got {text!r}") \
            from None
    if not 1 <= value <= MAX_RUN_ID:
        raise argparse.ArgumentTypeError(f"no run can have id {text} (ids are 1..{MAX_RUN_ID})")
    return value


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and a pointer to ``--help`` (argparse prints
    the whole usage block above it: 28 lines for ``run``, the useful one last).  Subcommand
    parsers are made of this class too (``add_subparsers`` uses the parent's)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (usage: {self.prog} --help)\n")


def _seconds(lo: float, hi: float):  # noqa: ANN202 - an argparse type
    """An argparse type: a finite number of seconds in [lo, hi]."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and lo <= value <= hi):
            raise argparse.ArgumentTypeError(f"expected seconds between {lo:g} and {hi:g}, "
                                             f"got {text[:40]!r}")
        return value
    return parse


def _stale_after(text: str) -> float:
    """``--stale-after``: at least the worker's own floor (a negative or tiny limit would take
    live runs of other workers over)."""
    from engine.orchestrate.worker import MIN_STALE_AFTER_S

    return _seconds(MIN_STALE_AFTER_S, 7 * 24 * 3600)(text)


def _gpus(text: str) -> str:
    """``--gpus``: 'all' or distinct GPU indexes (0,1,...); whether each names a GPU of this
    host is checked when the pool starts (engine/orchestrate/worker.py), where torch is."""
    if text.strip() == "all":
        return "all"
    items = [g.strip() for g in text.split(",")]
    if not items or any(not g.isascii() or not g.isdigit() for g in items):
        raise argparse.ArgumentTypeError(f"expected 'all' or GPU indexes like 0,1, got "
                                         f"{text[:40]!r}")
    repeated = next((g for i, g in enumerate(items) if int(g) in map(int, items[:i])), None)
    if repeated is not None:
        raise argparse.ArgumentTypeError(f"GPU {repeated} is given twice")
    return ",".join(str(int(g)) for g in items)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m engine",
               description="Measure torch.compile against eager, truthfully.")
    sub = p.add_subparsers(dest="cmd", required=True)
    from engine.cli import models as cli_models

    cli_models.add_parser(sub)

    r = cli_run.add_parser(sub)

    s = sub.add_parser("show", help="print a stored run as a table")
    s.add_argument("run_id", type=_run_id)
    s.add_argument("--json", action="store_true",
                   help="print the run as one JSON document (docs/CONTRACTS.md)")
    s.add_argument("--wide", action="store_true",
                   help="one table with every column, lines unwrapped (default: 120 columns)")

    w = sub.add_parser("worker", help="serve queued runs from the database")
    w.add_argument("--gpus", type=_gpus, default=None,
                   help="'all' or a list like 0,1: one worker process per GPU, pinned with "
                        "CUDA_VISIBLE_DEVICES")
    w.add_argument("--poll", type=_seconds(0.05, 3600), default=1.0,
                   help="seconds between polls when idle")
    w.add_argument("--stale-after", type=_stale_after, default=60.0,
                   help="seconds without heartbeat after which a running run is recovered "
                        "(2 s at least: live runs heartbeat every half second)")
    w.add_argument("--once", action="store_true", help="exit when the queue is empty")
    w.add_argument("--run-id", type=_run_id, default=None, metavar="N",
                   help="serve exactly run N once, then exit (what a Slurm job runs: "
                        "engine/slurm/job.py)")
    w.add_argument("--spec-sha256", default=None, metavar="HEX",
                   help="with --run-id: refuse the run unless its stored spec has this digest")
    w.add_argument("--db-wait", type=_seconds(0, 24 * 3600), default=120.0, metavar="S",
                   help="with --run-id: seconds to keep trying to reach the database (then "
                        "exit code 3)")
    w.add_argument("--allow-user-models", action="store_true",
                   help="also run file and module references (path/file.py:factory, "
                        "pkg.mod:factory) found in queued specs: anyone who can write the "
                        "database can then run code on this host (also: "
                        "COMPILELAB_ALLOW_USER_MODELS=1). Default: catalogue and plugin:NAME only")

    c = sub.add_parser("cancel", help="cancel a queued or running run")
    c.add_argument("run_id", type=_run_id)
    from engine.cli.regress import add_parsers
    from engine.slurm.cli import add_parser as add_slurm_parser

    for sp in (r, s, w, c, add_slurm_parser(sub), *add_parsers(sub, _run_id)):
        sp.add_argument("--db", default=None,
                        help="database URL (default: $COMPILELAB_DB or sqlite:///compilelab.db)")
    return p


def cmd_show(args: argparse.Namespace) -> int:
    from engine.analysis.show import format_run, run_json
    from storage import open_database

    db = open_database(args.db, create=False)
    from engine.slurm.reconcile import refresh

    slurm_note = refresh(db, args.run_id, min_interval_s=0)  # a Slurm run: ask Slurm first
    if slurm_note and not args.json:
        print(f"note: {slurm_note}", file=sys.stderr)
    if args.json:
        # Exactly one JSON document on stdout; NaN (never stored, but be safe) becomes null.
        print(json.dumps(run_json(db, args.run_id), default=str, allow_nan=False))
    else:
        from contract.text import terminal_text

        text = format_run(db, args.run_id, width=None if args.wide else 120)
        print(terminal_text(text))  # stored text: no terminal escapes
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    from storage import open_database, queue

    db = open_database(args.db, create=False)
    status = queue.request_cancel(db, args.run_id)
    from engine.slurm.submit import cancel_job

    job = cancel_job(db, args.run_id) if status in ("cancelled", "running") else None
    said = {"cancelled": "", "running": " (cancel requested: its worker stops it at its next "
            "heartbeat, within seconds)"}.get(status, " (already finished: nothing to cancel)")
    print(f"run {args.run_id}: {status}{said}" + (f"; {job}" if job else ""))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from sqlalchemy.exc import SQLAlchemyError

    from contract.text import one_line
    from engine.slurm.commands import SlurmError
    from storage.db import DatabaseOpenError, SchemaError, mask_url

    try:
        if args.cmd == "models":
            from engine.cli import models as cli_models

            return cli_models.run(args)
        if args.cmd == "run":
            return cmd_run(args)
        if args.cmd == "show":
            return cmd_show(args)
        if args.cmd == "cancel":
            return cmd_cancel(args)
        if args.cmd == "worker" and args.run_id is not None:
            from engine.slurm.job import main as job_main

            return job_main(args)
        if args.cmd == "slurm":
            from engine.slurm.cli import run as slurm_run

            return slurm_run(args)
        if args.cmd == "worker":
            from engine.orchestrate.worker import main as worker_main

            return worker_main(args)
        from engine.cli.regress import dispatch

        code = dispatch(args)
        if code is not None:
            return code
    except (SpecError, CatalogueError, UsageError, LookupError, DatabaseOpenError, SchemaError,
            ValueError, TypeError, SlurmError) as e:
        # ValueError/TypeError: contract.text's rule for tags and notes (TextError), or a value
        # storage refused; each carries a message meant for the user.
        print(f"error: {one_line(e)}", file=sys.stderr)
        return 2
    except SQLAlchemyError as e:  # the database failed mid-command (server gone, disk full)
        reason = one_line(getattr(e, "orig", None) or e, 300)
        db = mask_url(getattr(args, "db", None) or os.environ.get("COMPILELAB_DB"))
        print(f"error: database {db}: {reason}", file=sys.stderr)
        return 2
    return 2


if __name__ == "__main__":
    sys.exit(main())
