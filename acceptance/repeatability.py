"""Repeatability check: run the same configs several times and test each pair of intervals.

    python acceptance/repeatability.py --db sqlite:///rep.db --repeats 3 [--config mlp --config bert]
    python acceptance/repeatability.py --db sqlite:///rep.db --table-only

Each run is a separate ``python -m engine run`` at the shipped defaults (as a user would type it).
For every pair of runs i, j of one config and each compiled variant it checks
``|S_i - S_j| <= 1.5 * sqrt(h_i^2 + h_j^2)`` (h: the interval's half-width), which a pair of
honest 95 % intervals passes about 997 times in 1000, and prints one table.
"""

from __future__ import annotations

import argparse
import itertools
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CONFIGS: dict[str, list[str]] = {
    "bert": ["--model", "bert_base", "--dim", "batch=8", "--dim", "seq=128", "--dtype",
             "bfloat16", "--variants", "eager,default,reduce-overhead", "--no-warm-cache"],
    "mlp": ["--model", "mlp", "--dim", "batch=32", "--variants", "eager,default"],
    # The catalogue's fusion showcase, at its catalogue dims (the shipped bundle keeps it).
    "pointwise": ["--model", "pointwise_chain", "--variants", "eager,default,reduce-overhead"],
    # the catalogue's ~1B Llama-shaped decoder at its catalogue dims (issue 36's acceptance)
    "llama": ["--model", "llama_decode", "--dtype", "bfloat16",
              "--variants", "eager,default,reduce-overhead"],
}


def run_once(name: str, db: str, device: str, extra: list[str]) -> int:
    cmd = [sys.executable, "-m", "engine", "run", *CONFIGS[name], "--device", device,
           "--db", db, "--json", "--tag", f"repeat-{name}", *extra]
    t0 = time.monotonic()
    child = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        stdout, stderr = child.communicate()
    finally:
        # Stopped (a `timeout` around this script, Ctrl-C): pass it on, so that the engine ends
        # its run `cancelled` instead of leaving it `running` when the machine goes away.
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(timeout=60)
            except subprocess.TimeoutExpired:
                child.kill()
    if child.returncode not in (0, 1):
        sys.stderr.write(stderr[-3000:])
        raise SystemExit(f"{name}: engine run exited {child.returncode}")
    run_id = int(stdout.strip().splitlines()[-1])
    print(f"{name}: run {run_id} in {time.monotonic() - t0:.0f} s", flush=True)
    return run_id


def points_held(rows: list[dict]) -> tuple[int, list[str]]:
    """The standing rule's check over one variant's runs: for each ordered pair (i, j), does
    run i's interval hold run j's point? How many do, and the misses as ``"3.42 (run 3)
    outside run 1's [3.76, 3.81]"``. A row without a usable interval counts as a miss."""
    got, misses = 0, []
    for a, b in itertools.permutations(rows, 2):
        lo, hi, point = a.get("speedup_ci_low"), a.get("speedup_ci_high"), b.get("speedup")
        try:
            inside = float(lo) <= float(point) <= float(hi)
        except (TypeError, ValueError):
            inside = False
        if inside:
            got += 1
        else:
            misses.append(f"{point:.2f} (run {b['run_id']}) outside run {a['run_id']}'s "
                          f"[{lo:.2f}, {hi:.2f}]" if isinstance(point, float) and
                          isinstance(lo, float) and isinstance(hi, float) else
                          f"run {b['run_id']} against run {a['run_id']} (no usable point or interval)")
    return got, misses


def table(db_url: str, tags: dict[str, str] | None = None) -> int:
    """Every pair of runs of one config, by tag (``{name: tag}``; default the acceptance
    configs' ``repeat-NAME``); returns 1 when a pair fails."""
    from engine.analysis import repeat
    from storage import open_database, queries

    db = open_database(db_url)
    runs = queries.list_runs(db)
    failures, pairs, held, checks = 0, 0, 0, 0
    for name, tag in (tags or {n: f"repeat-{n}" for n in CONFIGS}).items():
        ids = sorted(int(r) for r, run_tags in zip(runs["run_id"], runs["tags"], strict=True)
                     if tag in (run_tags or []))
        if not ids:
            continue
        v = queries.load_runs(db, ids)["variants"]
        v = v[(v["variant"] != "eager") & (v["status"] == "ok")]
        print(f"\n{name}: runs {ids}")
        print(f"{'variant':>16} {'run':>4} {'speedup [95% CI]':>24} {'procs':>5} "
              f"{'spread':>7} {'eager ms':>9} {'ms':>8} {'stop':>22}")
        for variant, g in v.groupby("variant", sort=False):
            rows = g.to_dict("records")
            for r in rows:
                print(f"{variant:>16} {r['run_id']:>4} {r['speedup']:>8.2f}x "
                      f"[{r['speedup_ci_low']:.2f}, {r['speedup_ci_high']:.2f}] "
                      f"{r['n_processes']:>5.0f} {r['speedup_spread']:>7.3f} "
                      f"{r['eager_median_ms']:>9.4f} {r['median_ms']:>8.4f} "
                      f"{str(r['stop_reason']):>22}")
            for a, b in itertools.combinations(rows, 2):
                gap, bound = repeat.pair_gap(a, b) or (math.inf, 0.0)
                ok = gap <= bound
                failures += not ok
                pairs += 1
                print(f"{'':>16} pair {a['run_id']}-{b['run_id']}: |dS| {gap:.3f} <= "
                      f"{bound:.3f}  {'PASS' if ok else 'FAIL'}")
            got, misses = points_held(rows)
            held, checks = held + got, checks + got + len(misses)
            if misses:
                print(f"{'':>16} points outside: {', '.join(misses)}")
    if not pairs:  # nothing compared is not a pass
        print("\nno two runs of one config with these tags: nothing compared")
        return 2
    print(f"\n{f'all {pairs} pairs pass' if not failures else f'{failures} of {pairs} pair(s) FAIL'}")
    print(f"each run's interval holds another run's point in {held} of {checks} checks "
          "(the stricter standing rule: every check)")
    return 1 if failures else 0


def _stop(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through run_once's finally


def main() -> int:
    signal.signal(signal.SIGTERM, _stop)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--config", action="append", choices=sorted(CONFIGS))
    p.add_argument("--table-only", action="store_true")
    p.add_argument("extra", nargs="*", help="more engine run options, after --")
    args = p.parse_args()
    if not args.table_only:
        for name in args.config or list(CONFIGS):
            for _ in range(args.repeats):
                run_once(name, args.db, args.device, args.extra)
    return table(args.db)


if __name__ == "__main__":
    sys.exit(main())
