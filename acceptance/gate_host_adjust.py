"""The gate at one host speed (engine/analysis/host_adjust.py) against the speedup's Welch test,
in simulation and on a bundle's repeated configurations: identical pairs must pass, pairs with
every compiled latency x1.10 must be called regressions.

    python acceptance/gate_host_adjust.py sim [--pairs 400]
    python acceptance/gate_host_adjust.py bundle data/h200_bundle.json

``sim``: runs of four processes whose host speed (log) moves by ``host`` sd between runs and by
``within`` sd between a run's processes; eager follows it fully, the compiled call by ``theta``;
1 % noise on each. ``bundle``: every ordered pair of the bundle's runs of one configuration (one
config key, the same variants), judged by ``engine.analysis.gate.gate`` as stored and with
``process_eager_ms`` left out (the Welch test), each as measured and x1.10
(acceptance/gate_scaled.py's scaling). Runs stored before ``process_eager_ms`` existed get it from
the bundle's per-process samples. A benchmark script: it prints figures.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "acceptance"))

from gate_scaled import scaled  # noqa: E402

from engine.analysis.gate import Thresholds, compare_speedup, gate  # noqa: E402

THR = Thresholds()
CASES = [(theta, within, host) for theta, within in ((0.1, 0.05), (0.4, 0.05), (0.9, 0.05),
                                                     (0.4, 0.005), (0.4, 0.02), (0.9, 0.005),
                                                     (1.0, 0.005), (1.0, 0.02))
         for host in (0.0, 0.07)]


def _row(e: np.ndarray, c: np.ndarray, with_eager: bool) -> dict[str, Any]:
    return {"speedup": float(np.exp(np.mean(e - c))), "process_speedups": list(np.exp(e - c)),
            "process_eager_ms": list(np.exp(e)) if with_eager else None,
            "within_process_spread": 0.01, "n_processes": len(e)}


def _run(rng: np.random.Generator, theta: float, within: float, host: float,
         factor: float = 1.0, k: int = 4) -> tuple[np.ndarray, np.ndarray]:
    h = rng.normal(0, host) + rng.normal(0, within, k)
    e = math.log(4.5) + h + rng.normal(0, 0.01, k)
    return e, math.log(1.25) + theta * h + rng.normal(0, 0.01, k) + math.log(factor)


def simulate(pairs: int, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    print(f"{pairs} simulated pairs per case; 'false': identical code called a regression, "
          "'caught': compiled x1.10 called one")
    print(f"{'theta':>5} {'within sd':>9} {'between sd':>10} | {'Welch false':>11} "
          f"{'caught':>6} | {'one host speed false':>20} {'caught':>6}")
    for theta, within, host in CASES:
        n = {True: [0, 0], False: [0, 0]}
        for _ in range(pairs):
            base, same, slow = (_run(rng, theta, within, host, f) for f in (1.0, 1.0, 1.10))
            for with_eager in (True, False):
                for i, cand in enumerate((same, slow)):
                    n[with_eager][i] += compare_speedup(
                        _row(*base, with_eager), _row(*cand, with_eager), THR, config="c",
                        variant="v").is_regression
        print(f"{theta:5.1f} {within:9.3f} {host:10.2f} | {n[False][0] / pairs:11.1%} "
              f"{n[False][1] / pairs:6.1%} | {n[True][0] / pairs:20.1%} "
              f"{n[True][1] / pairs:6.1%}")


def _with_process_eager(run: dict[str, Any], raw: dict[str, Any]) -> None:
    """``process_eager_ms`` from the bundle's per-process samples where the run predates it."""
    for v in run["variants"]:
        if v.get("process_eager_ms") is not None:
            continue
        src = next((x for x in raw.get("variants") or [] if x.get("variant") == v["variant"]),
                   {})
        procs = (src.get("extra") or {}).get("processes") or []
        eager = [statistics.median(p["eager_samples_ms"]) for p in procs
                 if p.get("eager_samples_ms")]
        if len(eager) == len(v.get("process_speedups") or []):
            v["process_eager_ms"] = eager


def _without_process_eager(run: dict[str, Any]) -> dict[str, Any]:
    return {**run, "variants": [{**v, "process_eager_ms": None} for v in run["variants"]]}


def bundle(path: str) -> None:
    import engine.spec  # noqa: F401  (installs the one spec validator the import checks with)
    from contract.config_key import stored_config_key
    from storage import import_bundle, open_database
    from storage.records import load_run

    raw = json.loads(Path(path).read_text())["runs"]
    with tempfile.TemporaryDirectory() as tmp:
        db = open_database(f"sqlite:///{tmp}/b.db")
        ids = import_bundle(db, json.loads(Path(path).read_text()))
        runs = {n: load_run(db, rid) for n, rid in enumerate(ids, 1)}
    groups: dict[tuple, list[int]] = {}
    for n, run in runs.items():
        if run and run.get("status") == "done":
            _with_process_eager(run, raw[n - 1])
            key = (stored_config_key(run.get("spec")),
                   tuple(sorted(v["variant"] for v in run["variants"])))
            groups.setdefault(key, []).append(n)
    for members in (m for m in groups.values() if len(m) > 1):
        counts = {"Welch": [0, 0], "one host speed": [0, 0]}
        for a, b in itertools.permutations(members, 2):
            for name, prep in (("Welch", _without_process_eager), ("one host speed", dict)):
                base, cand = prep(runs[a]), prep(runs[b])
                counts[name][0] += gate([(base, cand)], THR).exit_code == 0
                counts[name][1] += gate([(base, scaled(cand, 1.10))], THR).exit_code == 1
        pairs = len(members) * (len(members) - 1)
        model = (runs[members[0]].get("spec") or {}).get("model")
        print(f"{model} positions {','.join(map(str, members))} ({pairs} ordered pairs): "
              + "; ".join(f"{k}: identical passed {v[0]}, x1.10 failed {v[1]}"
                          for k, v in counts.items()))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sim")
    s.add_argument("--pairs", type=int, default=400)
    b = sub.add_parser("bundle")
    b.add_argument("path")
    args = p.parse_args(argv)
    if args.cmd == "sim":
        simulate(args.pairs)
    else:
        bundle(args.path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
