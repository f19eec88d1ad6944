"""How good the live ETA was: replay a stored run's process states through ``engine.orchestrate.eta``.

    python acceptance/eta_replay.py --db sqlite:///compilelab.db RUN_ID [RUN_ID ...]

Each measuring process's stored phases give its states over time (pending until spawned,
preparing until its first gate, waiting to compile, compiling until its next gate, waiting to
time, timing until it ended), as the runner saw them.  Every 0.1 s of the run the states go
through ``Eta.sync`` and ``estimate``, exactly as the runner's tick does, and the estimate is
set against what was really left (the run's last process end).  Printed per run: the estimate
and the truth at 10 %, 25 %, 50 %, 75 % and 90 % of the run, the mean absolute error over the
run, how often the progress bar went backwards, and the longest stretch in which the shown
"about N s left" did not change while the truth moved by 3 s or more.  A script that prints
figures, not a test (issue "time to answer", item 4: a live ETA).  A run measured one process at
a time (no gates) has no stored waits and is skipped.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from acceptance.run_timeline import load  # noqa: E402  (the run as `engine show --json` gives it)
from engine.orchestrate.eta import Eta, describe, stage_seconds, state_changes  # noqa: E402
from engine.orchestrate.schedule import Job, resolve  # noqa: E402

TICK_S = 0.1


def processes(run: dict) -> list[tuple[str, int, dict]]:
    return [(v["variant"], i, p) for v in run["variants"]
            for i, p in enumerate(v.get("processes") or [])]


def replay(run: dict, priors: dict | None = None) -> dict | None:
    """The ETA's estimates over the run against the truth, or None without gated processes.
    ``priors``: stage durations of earlier runs (``engine.orchestrate.eta.stage_seconds``), as the CLI and
    the worker pass them."""
    spec = run.get("spec") or {}
    stored = next((v.get("scheduling") for v in run["variants"] if v.get("scheduling")), None)
    if stored:  # as the run had it (the replaying host may have other cores)
        concurrency, slots = int(stored["concurrency"]), int(stored["compile_slots"])
    else:
        concurrency, slots = resolve(int(spec.get("concurrency") or 0),
                                     spec_compile_slots=int(spec.get("compile_slots") or 0))
    plan: list[tuple[Job, list[tuple[float, str]]]] = []
    for variant, i, proc in processes(run):
        changes = state_changes(variant, proc)
        if changes is None:
            return None
        plan.append((Job(variant, i), changes))
    if not plan:
        return None
    t0 = min(c[0][0] for _, c in plan)
    end = max(c[-1][0] for _, c in plan)
    now = [t0]
    eta = Eta(concurrency=concurrency, compile_slots=slots,
              min_time_s=float(spec.get("min_time_s", 0.5)), clock=lambda: now[0],
              priors=priors)
    jobs = [j for j, _ in plan]
    ticks: list[tuple[float, float | None, float | None, float]] = []  # t, left, fraction, truth
    t = t0
    while t <= end + 1e-9:
        now[0] = t
        for job, changes in plan:
            job.state = "pending"
            for when, state in changes:
                if when <= t:
                    job.state = state
        eta.sync(jobs)
        ticks.append((t - t0, *eta.estimate(jobs), end - t))
        t += TICK_S
    return {"total": end - t0, "ticks": ticks}


def summary(run_id: str, r: dict) -> str:
    total, ticks = r["total"], r["ticks"]
    lines = [f"run {run_id}: {total:.1f} s"]
    at = []
    for share in (0.1, 0.25, 0.5, 0.75, 0.9):
        t, left, frac, truth = min(ticks, key=lambda x: abs(x[0] - share * total))
        shown = "-" if left is None else f"{left:5.1f}"
        bar = "-" if frac is None else f"{100 * frac:3.0f}%"
        at.append(f"{int(share * 100)}%: {shown} s (truth {truth:5.1f}, bar {bar})")
    lines.append("  estimate at " + "; ".join(at))
    errors = [abs(left - truth) for _, left, _, truth in ticks if left is not None]
    shown = [(t, frac) for t, _, frac, _ in ticks if frac is not None]
    back = sum(1 for (_, a), (_, b) in zip(shown, shown[1:], strict=False) if b < a - 0.005)
    # the longest stretch with one label while the truth moved by 3 s or more
    stuck, start, label = 0.0, None, None
    for t, left, _, truth in ticks:
        text = describe(left)
        if text != label:
            start, label, truth0 = t, text, truth
        elif label and truth0 - truth >= 3.0:
            stuck = max(stuck, t - start)
    first = next((t for t, left, _, _ in ticks if left is not None), None)
    lines.append(f"  mean |error| {statistics.fmean(errors):.1f} s "
                 f"({100 * statistics.fmean(errors) / total:.0f} % of the run); first estimate at "
                 f"{first:.1f} s; bar went backwards {back} times; one label held for up to "
                 f"{stuck:.1f} s while the truth moved 3 s or more")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_ids", nargs="+")
    ap.add_argument("--db", required=True)
    ap.add_argument("--history", action="store_true",
                    help="start each run's estimate from the runs listed before it (same model "
                         "and device), as the product does from its database")
    args = ap.parse_args()
    earlier: list[dict] = []
    for run_id in args.run_ids:
        try:
            run = load(run_id, args.db)
        except subprocess.CalledProcessError as e:
            print(f"run {run_id}: {e.stderr.strip() or 'cannot be read'}")
            continue
        priors = None
        if args.history:
            same = [r for r in earlier if (r["model"], r["device"]) == (run["model"], run["device"])]
            priors = stage_seconds(p for r in same[-5:] for p in processes(r))
        earlier.append(run)
        r = replay(run, priors)
        print(summary(run_id, r) if r else f"run {run_id}: no gated processes, skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
