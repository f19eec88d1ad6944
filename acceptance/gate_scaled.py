"""The regression gate on real runs: identical code must pass, compiled latencies scaled must fail.

    python acceptance/gate_scaled.py --db sqlite:///OUT/tta.db --tag tta-bert [--factor 1.10]

For every ordered pair (baseline A, candidate B) of the tag's runs (the same config measured
again and again, e.g. by ``time_to_answer_steps.py``), the gate (engine/analysis/gate.py, as
``python -m engine gate`` calls it) judges B against A twice: as measured, where it must pass
(exit 0), and with every compiled variant's steady-state latency multiplied by ``--factor``
(speedups, their intervals and per-process speedups divided by it), where it must call the
regression (exit 1). Prints one line per pair and the counts; exits 1 when any pair is judged
wrongly. Issue 36: two 4-process BERT-base runs with latencies x1.10 are called a regression,
identical ones pass.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.analysis.gate import Thresholds, gate  # noqa: E402
from storage import open_database, queries  # noqa: E402
from storage.records import load_run  # noqa: E402

SPEEDUPS = ("speedup", "speedup_ci_low", "speedup_ci_high", "pipelined_speedup",
            "pipelined_ci_low", "pipelined_ci_high")
LATENCIES = ("median_ms", "measured_median_ms", "pipelined_median_ms")


def scaled(run: dict[str, Any], factor: float) -> dict[str, Any]:
    """``run`` with every compiled variant's steady-state latency multiplied by ``factor``."""
    out = copy.deepcopy(run)
    for v in out["variants"]:
        if v["variant"] == "eager":
            continue
        for key in LATENCIES:
            if isinstance(v.get(key), (int, float)):
                v[key] *= factor
        for key in SPEEDUPS:
            if isinstance(v.get(key), (int, float)):
                v[key] /= factor
        if isinstance(v.get("process_speedups"), list):
            v["process_speedups"] = [x / factor for x in v["process_speedups"]]
    return out


def speedup_verdicts(report: Any) -> str:
    """Each speedup's verdict with the shown ratio and, where the gate judged at one host speed
    (engine/analysis/host_adjust.py), that ratio too."""
    def one(c: Any) -> str:
        if c.ratio is None or c.p_value is None:
            return f"{c.variant} {c.verdict}"
        adj = (f", {c.host_adjusted_ratio:.3f}x at one host speed"
               if c.host_adjusted_ratio is not None else "")
        return f"{c.variant} {c.verdict} ({c.ratio:.3f}x{adj}, p={c.p_value:.3g})"

    return ", ".join(one(c) for c in report.changes if c.figure == "speedup")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", required=True)
    p.add_argument("--tag", required=True)
    p.add_argument("--factor", type=float, default=1.10)
    args = p.parse_args(argv)
    db = open_database(args.db, create=False)
    ids = sorted(int(i) for i in queries.list_runs(db, tag=args.tag)["run_id"])
    runs = {i: load_run(db, i) for i in ids}
    runs = {i: r for i, r in runs.items() if r and r.get("status") == "done"}
    if len(runs) < 2:
        print(f"{args.tag}: {len(runs)} finished run(s); the gate needs two")
        return 1
    right = {"identical": 0, f"x{args.factor:g}": 0}
    total = 0
    for a, b in itertools.permutations(sorted(runs), 2):
        total += 1
        for name, cand, want in (("identical", runs[b], 0),
                                 (f"x{args.factor:g}", scaled(runs[b], args.factor), 1)):
            report = gate([(runs[a], cand)], Thresholds())
            ok = report.exit_code == want
            right[name] += ok
            print(f"baseline {a} candidate {b} {name:>9}: exit {report.exit_code} "
                  f"({'right' if ok else 'WRONG'}): {speedup_verdicts(report)}")
    for name, n in right.items():
        print(f"{name}: judged right in {n} of {total} ordered pairs")
    return 0 if all(n == total for n in right.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
