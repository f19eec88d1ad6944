"""A stored run's timeline as text: every measuring process's phases, in seconds from the run's
start, one line per process, and the spans in which each kind of work was going on.

    python acceptance/run_timeline.py RUN_ID --db sqlite:///compilelab.db

For picking the levers of issue "time to answer": which processes prepared, compiled and timed
when, and what ran beside what.  Reads the run through ``engine show --json`` (the product's own
read path); prints, does not test.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHORT = {"imports": "imp", "model build": "build", "environment": "env",
         "eager reference": "ref", "profiler import": "pimp", "compiler import": "cimp",
         "waiting": "wait", "compile": "COMPILE", "compile workers": "kill", "warm-up": "wu",
         "host settle": "settle",
         "measure": "MEASURE", "profile": "prof", "roofline": "roof", "lost time": "lost",
         "explain": "expl"}


def load(run_id: str, db: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "engine", "show", run_id, "--json", "--db", db],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def merged(phases: list[dict]) -> list[tuple[str, float, float]]:
    """Consecutive phases of one name (the warm-up's calls) as one span."""
    spans: list[tuple[str, float, float]] = []
    for p in sorted(phases, key=lambda p: p["start"]):
        if spans and spans[-1][0] == p["name"] and p["start"] - spans[-1][2] < 0.05:
            spans[-1] = (p["name"], spans[-1][1], p["end"])
        else:
            spans.append((p["name"], p["start"], p["end"]))
    return spans


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_id")
    ap.add_argument("--db", required=True)
    args = ap.parse_args()
    run = load(args.run_id, args.db)
    if not run.get("started_at"):
        print(f"run {args.run_id}: never started ({run['status']})")
        return 1
    t0 = datetime.fromisoformat(run["started_at"]).timestamp()
    span = (f"{datetime.fromisoformat(run['finished_at']).timestamp() - t0:.1f} s from start to "
            "finish" if run.get("finished_at") else "not finished")
    print(f"run {args.run_id}: {run['model']} {run['dims_label']} {run['device']}, "
          f"{run['status']}, {span}" + (f": {run['error']}" if run.get("error") else ""))
    rows = []
    for v in run["variants"]:
        for i, p in enumerate(v.get("processes") or []):
            rows.append((p.get("spawned_at") or p.get("started_at") or t0, v["variant"], i, p))
    for spawned, variant, i, p in sorted(rows, key=lambda r: r[0]):
        parts = [f"{SHORT.get(n, n)} {a - t0:.1f}-{b - t0:.1f}" for n, a, b in
                 merged(p.get("phases") or []) if b - a >= 0.05 or n in ("compile", "measure")]
        end = p.get("ended_at")
        print(f"{variant:>22s}#{i} spawn {spawned - t0:5.1f} end "
              f"{(end - t0) if end else float('nan'):5.1f}: " + ", ".join(parts))
    print("\nphase totals over processes (s): " + ", ".join(
        f"{k} {s:.1f}" for k, s in sorted(
            {n: sum(b - a for _, _, _, p in rows for m, a, b in merged(p.get("phases") or [])
                    if m == n) for n in SHORT}.items(), key=lambda kv: -kv[1]) if s > 0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
