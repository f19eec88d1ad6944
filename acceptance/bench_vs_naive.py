"""Time to answer: Compile Lab's full run against the hand-written naive harness, same command.

    python acceptance/bench_vs_naive.py --device cuda --modes eager,default,reduce-overhead,max-autotune
    python acceptance/bench_vs_naive.py --device cuda --model bert --modes eager,default,reduce-overhead
    python acceptance/bench_vs_naive.py --device cpu --modes eager,default

Runs ``acceptance/naive_harness.py`` (one process per mode, cold then warm cache) and then
``python -m engine run`` at the shipped defaults on the same model, alternating the order over
``--repeats``, and prints each wall time, the ratio engine / naive, and the compile-time fidelity
check: the engine's cold and warm first calls against the harness's ``first_call_s`` of the same
mode (the issue allows 15 %; the harness takes one compile each, so run ``--repeats 3`` for its
median of three).  A benchmark script, not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The hand-written baseline, run as a user runs their own script (a separate interpreter).
NAIVE = ROOT / "acceptance" / "naive_harness.py"
MODELS = {
    "mlp": (["--model", "mlp", "--dim", "batch=32", "--dim", "hidden=1024"], ["--batch", "32"]),
    "bert": (["--model", "bert_base", "--dim", "batch=8", "--dim", "seq=128", "--dtype",
              "bfloat16"], ["--model", "bert", "--batch", "8", "--seq", "128"]),
}


def naive(args: argparse.Namespace) -> tuple[float, dict[tuple[str, str], float]]:
    """The harness's wall time and its first calls by (mode, cold|warm)."""
    cmd = [sys.executable, str(NAIVE), "--device", args.device, "--modes", args.modes,
           *MODELS[args.model][1]]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - t0
    first = {}
    for line in out.splitlines():
        m = re.match(r"(\S+)\s+(cold|warm): .*first_call_s=([0-9.e+-]+)", line)
        if m:
            first[(m.group(1), m.group(2))] = float(m.group(3))
    return wall, first


def engine(args: argparse.Namespace, db: str,
           tag: str | None = None) -> tuple[float, dict[tuple[str, str], float], str]:
    """One ``engine run`` at the shipped defaults (plus ``args.engine_arg``): its wall time,
    its first calls by (variant, cold|warm) and its run id; ``tag`` tags the stored run."""
    cmd = [sys.executable, "-m", "engine", "run", *MODELS[args.model][0], "--device",
           args.device, "--variants", args.modes, "--db", db, "--json", *args.engine_arg,
           *(["--tag", tag] if tag else [])]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode not in (0, 1):
        raise SystemExit(out.stderr[-3000:])
    run_id = out.stdout.strip().splitlines()[-1]
    for line in out.stderr.splitlines():  # the CLI's time before the run's first process
        if line.startswith("compilelab: before the run"):
            print(f"engine run {run_id}: {line.split(': ', 1)[1]}", flush=True)
    shown = subprocess.run([sys.executable, "-m", "engine", "show", run_id, "--json", "--db", db],
                           cwd=ROOT, capture_output=True, text=True, check=True)
    text = subprocess.run([sys.executable, "-m", "engine", "show", run_id, "--db", db], cwd=ROOT,
                          capture_output=True, text=True).stdout
    for line in text.splitlines():
        if ("where the time went" in line or "compile host [" in line
                or "speedup" in line.lower() and "x [" in line):
            print(f"engine run {run_id}:{line}", flush=True)
    first = {}
    for v in json.loads(shown.stdout)["variants"]:
        first[(v["variant"], "cold")] = v.get("first_call_cold_s")
        if v.get("first_call_warm_s") is not None:
            first[(v["variant"], "warm")] = v["first_call_warm_s"]
    return wall, first, run_id


def fidelity(naive_firsts: dict[tuple[str, str], list[float]],
             engine_firsts: dict[tuple[str, str], list[float]]) -> list[str]:
    """The compile-time fidelity check as lines: per compiled mode and cold/warm, the median of
    the engine's first calls against the median of the harness's (the issue allows 15 %)."""
    lines = []
    for key in sorted(naive_firsts):
        got = engine_firsts.get(key)
        if key[0] == "eager" or not got:
            continue
        ref, ours = statistics.median(naive_firsts[key]), statistics.median(got)
        lines.append(f"  {key[0]:>16s} {key[1]:4s} engine {ours:7.3f} (n={len(got)})  naive "
                     f"{ref:7.3f} (n={len(naive_firsts[key])})  {(ours / ref - 1):+6.1%}  "
                     f"{'ok' if abs(ours / ref - 1) <= 0.15 else 'OFF'}")
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--model", choices=sorted(MODELS), default="mlp")
    p.add_argument("--modes", default="eager,default,reduce-overhead,max-autotune")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--db", help="keep the engine's runs in this database (default: a temporary one)")
    p.add_argument("--engine-arg", action="append", default=[], metavar="ARG",
                   help="one more argument for `engine run` (repeatable; e.g. "
                        "--engine-arg=--concurrency=8 to try a scheduling lever); the summary "
                        "line says the run was not at the shipped defaults")
    p.add_argument("--json-out", help="also write every run's wall time and first calls here")
    args = p.parse_args()
    walls: dict[str, list[float]] = {"naive": [], "engine": []}
    runs: list[dict] = []
    firsts: dict[str, dict[tuple[str, str], list[float]]] = {"naive": {}, "engine": {}}
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or f"sqlite:///{Path(tmp) / 'bench.db'}"
        for i in range(args.repeats):
            order = ("naive", "engine") if i % 2 == 0 else ("engine", "naive")
            for who in order:
                wall, first = naive(args) if who == "naive" else engine(args, db)[:2]
                walls[who].append(wall)
                for key, value in first.items():
                    if value is not None:
                        firsts[who].setdefault(key, []).append(value)
                print(f"{who:6s} run {i + 1}: {wall:7.1f} s  first calls: " + ", ".join(
                    f"{m} {ph} {v:.3f}" for (m, ph), v in sorted(first.items())
                    if v is not None and m != "eager"), flush=True)
                runs.append({"who": who, "repeat": i + 1, "wall_s": wall,
                             "first_call_s": {f"{m} {ph}": v for (m, ph), v in first.items()}})
                if args.json_out:  # after every run: a cut-off command keeps what it had
                    Path(args.json_out).write_text(json.dumps(
                        {"model": args.model, "modes": args.modes, "device": args.device,
                         "engine_args": args.engine_arg, "runs": runs}, indent=1))
    n, e = statistics.median(walls["naive"]), statistics.median(walls["engine"])
    print(f"\nNAIVE_WALL_S={n:.1f} ENGINE_WALL_S={e:.1f} RATIO={e / n:.2f} "
          f"({args.model}, {args.modes}, {args.device}, median of {args.repeats}"
          + (f"; NOT the shipped defaults: engine run {' '.join(args.engine_arg)}"
             if args.engine_arg else "") + ")")
    print("\ncompile-time fidelity (first call, s; engine vs median of the harness's):")
    print("\n".join(fidelity(firsts["naive"], firsts["engine"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
