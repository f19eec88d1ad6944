"""``python -m engine slurm reconcile [--watch S]`` and ``python -m engine slurm settings``.

``reconcile`` makes one pass of the reconciler (engine/slurm/reconcile.py) and prints each
change; with ``--watch S`` it repeats every S seconds until interrupted (for a login node's
cron or a tmux pane; ``show`` and the dashboard also reconcile the runs they display).
``settings`` prints the settings in force and whether Slurm's commands are there, or the one
line that says what is wrong.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict
from typing import Any


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("slurm", help="runs on a Slurm cluster: reconcile jobs with runs, "
                                     "show the settings (docs/SLURM.md)")
    p.add_argument("action", choices=("reconcile", "settings"))
    p.add_argument("--watch", type=float, default=None, metavar="S",
                   help="reconcile: repeat every S seconds until interrupted")
    return p


def _settings() -> int:
    from engine.slurm.commands import Slurm, SlurmError
    from engine.slurm.settings import load_settings
    from storage.db import mask_url

    settings = load_settings()
    for key, value in asdict(settings).items():
        if key == "job_db" and value:
            value = mask_url(value)
        print(f"{key} = {value!r}")
    try:
        Slurm().check()
    except SlurmError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"# {settings.summary()}; sbatch, scontrol and scancel found")
    return 0


def _reconcile(args: argparse.Namespace) -> int:
    from engine.slurm.commands import SlurmError
    from engine.slurm.reconcile import reconcile
    from storage import open_database

    db = open_database(args.db, create=False)
    while True:
        try:
            changes = reconcile(db, log=print)
            if not changes and args.watch is None:
                print("nothing to reconcile: every Slurm run matches its job")
        except SlurmError as e:
            if args.watch is None:
                raise
            print(f"error: {e} (trying again in {args.watch:g} s)", file=sys.stderr)
        if args.watch is None:
            return 0
        time.sleep(max(args.watch, 1.0))


def run(args: argparse.Namespace) -> int:
    if args.action == "settings":
        return _settings()
    try:
        return _reconcile(args)
    except KeyboardInterrupt:
        return 130
