"""The timing core chosen by a probe against the fixed last core: BERT-base runs in two arms.

Arm ``a`` runs at the defaults (every process times on the run's last CPU), arm ``b`` with
``COMPILELAB_TIMING_CORE=fastest`` (engine/measure/placement.py): each process probes every CPU
it was given at its time gate and times on the fastest. The arms alternate in ``--order`` so a
host that drifts meets both. ``run`` measures (one ``time_to_answer_steps.py e:MODEL`` step per
letter, each arm into its own database under ``--out``); ``report`` reads those databases (also
here, after the device's files came back) and prints per run the speedups with their
half-widths, where each process timed and what its host probe read before and after its
window; per arm the median half-width and the repeat pair test (engine/analysis/repeat.py).

    python3 acceptance/core_choice_ab.py run --out $OUT --order abab --budget-s 560
    python3 acceptance/core_choice_ab.py report --out /path/to/fetched [/path/to/another]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.analysis import repeat  # noqa: E402

ARMS = {"a": {}, "b": {"COMPILELAB_TIMING_CORE": "fastest"}}
STEP_S = 110  # one BERT-base run on a lent H100, with room


def run(out: Path, order: str, budget_s: float, model: str) -> int:
    start = time.monotonic()
    for arm in order:
        if time.monotonic() - start + STEP_S > budget_s:
            print(f"budget: {arm} and after not run", flush=True)
            break
        env = {**os.environ, **ARMS[arm]}
        cmd = [sys.executable, str(ROOT / "acceptance" / "time_to_answer_steps.py"),
               "--budget-s", "300", "--device", "cuda", "--out", str(out / arm), f"e:{model}"]
        with open(out / f"{arm}.log", "a") as log:
            rc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                timeout=STEP_S + 20, check=False).returncode
        print(f"{arm} rc={rc} at {time.monotonic() - start:.0f} s", flush=True)
    return report([out])


def _rows(db: Path) -> list[dict]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    runs = []
    for run_id, created in con.execute("SELECT id, created_at FROM runs ORDER BY id"):
        found = {"run": run_id, "created": str(created)}
        for variant, extra, *fig in con.execute(
                "SELECT variant, extra, speedup, speedup_ci_low, speedup_ci_high, eager_median_ms"
                " FROM variant_results WHERE run_id = ?", (run_id,)):
            row = dict(zip(("speedup", "speedup_ci_low", "speedup_ci_high", "eager_median_ms"),
                           fig, strict=True))
            row["processes"] = (json.loads(extra or "{}") or {}).get("processes") or []
            found[variant] = row
        runs.append(found)
    return runs


def _where(procs: list[dict]) -> str:
    def us(p: dict, key: str) -> str:
        v = (p.get(key) or {}).get("module_call_us")
        return f"{v:.2f}" if isinstance(v, (int, float)) else "?"
    return " ".join(f"{(p.get('timing_cpus') or ['?'])[0]}:{us(p, 'host_probe')}"
                    f"/{us(p, 'host_probe_after')}" for p in procs)


def _holds(a: dict, b: dict) -> int:
    """How many of the two intervals hold the other run's point (0, 1 or 2)."""
    return sum(1 for x, y in ((a, b), (b, a))
               if x["speedup_ci_low"] <= y["speedup"] <= x["speedup_ci_high"])


def _arm_runs(outs: list[Path], arm: str) -> list[dict]:
    runs: list[dict] = []
    for out in outs:
        db = out / arm / "tta.db"
        if not db.exists():
            continue
        try:
            runs += _rows(db)
        except sqlite3.Error as exc:
            print(f"\n== arm {arm}: {db} is not a run database ({exc}) ==")
    return sorted(runs, key=lambda r: r["created"])


def _arm_summary(runs: list[dict], widths: dict[str, list[float]]) -> None:
    for variant, hs in widths.items():
        pairs = [(a[variant], b[variant]) for a, b in itertools.combinations(runs, 2)
                 if repeat.pair_gap(a.get(variant) or {}, b.get(variant) or {}) is not None]
        ok = sum(1 for a, b in pairs if not repeat.apart(a, b))
        held = sum(_holds(a, b) for a, b in pairs)
        print(f"  {variant}: median half-width {100 * statistics.median(hs):.1f} %, "
              f"pairs that repeat {ok} of {len(pairs)}, intervals holding the other's "
              f"point {held} of {2 * len(pairs)}")


def report(outs: list[Path]) -> int:
    """Per arm, the runs of every folder in ``outs`` pooled, in the order they ran."""
    for arm in ARMS:
        runs = _arm_runs(outs, arm)
        if not runs:
            continue
        print(f"\n== arm {arm} {ARMS[arm] or '(defaults)'}: {len(runs)} runs ==")
        widths: dict[str, list[float]] = {}
        for r in runs:
            print(f"run {r['run']} {r['created'][:19]} eager "
                  f"{(r.get('eager') or {}).get('eager_median_ms') or float('nan'):.3f} ms")
            for variant, row in r.items():
                if not isinstance(row, dict) or variant == "eager":
                    continue
                print(f"  {variant:16s} {repeat.figure(row):>16s}  cpu:probe before/after "
                      f"{_where(row['processes'])}")
                if repeat.pair_gap(row, row) is not None:  # a usable speedup and interval
                    h = (row["speedup_ci_high"] - row["speedup_ci_low"]) / 2 / row["speedup"]
                    widths.setdefault(variant, []).append(h)
        _arm_summary(runs, widths)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--order", default="abab", help="arms in order, letters a and b")
    r.add_argument("--budget-s", type=float, default=560.0)
    r.add_argument("--model", default="bert")
    p = sub.add_parser("report")
    p.add_argument("--out", type=Path, required=True, nargs="+",
                   help="one or more fetched folders; each arm's runs are pooled")
    args = ap.parse_args()
    if args.cmd == "run":
        if set(args.order) - set(ARMS):
            ap.error("--order takes the letters a and b")
        args.out.mkdir(parents=True, exist_ok=True)
        return run(args.out, args.order, args.budget_s, args.model)
    return report(args.out)


if __name__ == "__main__":
    raise SystemExit(main())
