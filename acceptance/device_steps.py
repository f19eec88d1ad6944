"""Run several acceptance commands in one device call, in order, within a time budget.

    python acceptance/device_steps.py --budget-s 540 --log "$OUT/steps.log" \
        "90=python acceptance/forensics_acceptance.py --db sqlite:///$OUT/f.db --only mlp" \
        "150=python acceptance/forensics_acceptance.py --db sqlite:///$OUT/f.db --only bert_base"

Each step is ``ESTIMATED_SECONDS=COMMAND``. A lent GPU host runs one command of at most ten
minutes, and each new start costs minutes of the session's device time, so the steps that belong
together go into one call: a step whose estimate no longer fits the time left is skipped (and
said so) rather than cut off half-way, and a step that overruns is stopped at the budget. Each
step's output goes to stdout and to the log; the summary at the end names every step's exit status
and wall time. Exit 0 when every step that ran exited 0 (or 1, the scripts' "a check failed",
which the log shows), 2 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def parse_step(text: str) -> tuple[float, str]:
    est, sep, cmd = text.partition("=")
    try:
        seconds = float(est)
    except ValueError:
        seconds = -1.0
    if not sep or seconds < 0 or not cmd.strip():
        raise argparse.ArgumentTypeError(f"expected SECONDS=COMMAND, got {text!r}")
    return seconds, cmd.strip()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def run_step(cmd: str, timeout: float, log) -> tuple[int, float]:
    """Run one command under ``timeout`` seconds, copying its output to stdout and ``log``."""
    t0 = time.monotonic()
    proc = subprocess.Popen(shlex.split(cmd), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, bufsize=1,
                            start_new_session=True)
    assert proc.stdout is not None
    # a silent step blocks the read below, so the stop comes from a timer, not the loop; the
    # whole process group goes, or a grandchild holding the pipe keeps the read open
    killer = threading.Timer(timeout, lambda: _kill_group(proc.pid))
    killer.start()
    try:
        for line in proc.stdout:
            sys.stdout.write(line)
            log.write(line)
        rc = proc.wait()
    finally:
        killer.cancel()
    wall = time.monotonic() - t0
    return (124 if wall >= timeout else rc), wall


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("steps", nargs="+", type=parse_step, metavar="SECONDS=COMMAND")
    p.add_argument("--budget-s", type=float, default=540.0)
    p.add_argument("--log", type=Path, required=True)
    args = p.parse_args(argv)
    t0, summary, bad = time.monotonic(), [], False
    with args.log.open("w") as log:
        for est, cmd in args.steps:
            left = args.budget_s - (time.monotonic() - t0)
            if est > left:
                summary.append(f"SKIPPED (estimate {est:.0f} s, {left:.0f} s left): {cmd}")
                continue
            banner = f"\n===== step: {cmd}  ({left:.0f} s left)\n"
            sys.stdout.write(banner)
            log.write(banner)
            rc, wall = run_step(cmd, left, log)
            bad |= rc not in (0, 1)
            summary.append(f"exit {rc} in {wall:.0f} s: {cmd}")
        text = "\n===== summary\n" + "\n".join(summary) + "\n"
        sys.stdout.write(text)
        log.write(text)
    return 2 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
