"""Why eager reads differently in its own process and inside a compiled variant's processes.

    python acceptance/eager_drift_probe.py --device cuda --model bert_base --dim batch=8 --dim seq=128 \
        --dtype bfloat16 --reps 3 --conds base,gc,pin,threads,ro [--json OUT.json]

Each condition runs in a fresh interpreter (``python acceptance/eager_drift_probe.py --child``), the
conditions taking turns ``--reps`` times (A B C, A B C, ...), so drift over minutes reaches each
alike.  Inside one process, in order, with the engine's own timer and rounds
(``engine.measure.timing``, ``engine.measure.rounds``):

1. ``alone``: eager timed alone, as the eager variant's own process does;
2. the variant is compiled (``--mode``), warmed up, its compile workers stopped;
3. ``after``: eager timed alone again, in the same process;
4. ``paired``: eager and compiled in interleaved rounds, as a compiled variant's process does;
5. ``again``: eager alone once more.

So the same process, on the same cores, reads eager before and after compiling, and alone and
paired: a process-to-process difference and a compile-state difference are told apart.  The
conditions change one thing at a time:

- ``base``: the engine's protocol as it stood;
- ``gc``: ``gc.freeze()`` after the compile and the collector off inside every timing window;
- ``pin``: the process pinned to one core (the last of its allowed set) for all of it;
- ``threads``: torch's intra-op threads set back to their value before the compile;
- ``ro``: as ``base``, with ``mode="reduce-overhead"``;
- ``noop``: as ``base`` but nothing is compiled (step 2 is skipped): the process-to-process
  spread of eager alone, and what the paired protocol does without a compiled function.

Prints, per condition, each process's eager medians (alone / after / paired / again) and the
compiled median, then geometric means and the ratio of ``paired`` to ``alone``.  ``--json``
keeps every process's figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONDITIONS = {
    "base": {},
    "gc": {"gc": True},
    "pin": {"pin": True},
    "threads": {"threads": True},
    "ro": {"mode": "reduce-overhead"},
    "noop": {"mode": None},
}
STEPS = ("alone", "after", "paired", "again")


def _child(args: argparse.Namespace) -> dict[str, Any]:
    """One probe process: the five steps of the module notes under one condition."""
    cond = dict(CONDITIONS[args.cond])
    if cond.get("pin"):
        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    import torch

    from engine import spec as spec_mod
    from engine.measure.hostload import stop_compile_workers
    from engine.measure.rounds import steady_rounds, timing_budget
    from engine.measure.setup import build
    from engine.measure.timing import Timer

    run = spec_mod.normalise({"model": args.model, "dims": dict(args.dim), "dtype": args.dtype,
                              "device": args.device})
    model, inputs, _ = build(run, run["dims"], args.device)
    timer = Timer(args.device)
    budget = timing_budget(run)
    threads_before = torch.get_num_threads()
    out: dict[str, Any] = {"cond": args.cond, "pid": os.getpid(),
                           "cpus": sorted(os.sched_getaffinity(0)),
                           "threads_before": threads_before}

    def eager() -> object:
        return model(*inputs)

    def timed(fns: dict[str, Any]) -> dict[str, float]:
        off = cond.get("gc")
        if off:
            gc.disable()
        try:
            rounds = steady_rounds(timer, fns, **budget)
        finally:
            if off:
                gc.enable()
        return {n: statistics.median(r["per_call"]) for n, r in rounds.items()}

    with torch.no_grad():
        for _ in range(10):
            timer.wall_ms(eager)
        out["alone"] = timed({"eager": eager})["eager"]
        mode = cond.get("mode", "default")
        if mode is None:
            compiled = eager
        else:
            cfn = torch.compile(model, mode=mode)
            t0 = time.perf_counter()
            timer.wall_ms(lambda: cfn(*inputs))
            out["compile_s"] = time.perf_counter() - t0
            for _ in range(10):
                timer.wall_ms(lambda: cfn(*inputs))
            stop_compile_workers()

            def compiled() -> object:
                return cfn(*inputs)
        out["threads_after_compile"] = torch.get_num_threads()
        if cond.get("threads"):
            torch.set_num_threads(threads_before)
        if cond.get("gc"):
            gc.collect()
            gc.freeze()
        out["gc_objects"] = len(gc.get_objects())
        out["after"] = timed({"eager": eager})["eager"]
        paired = timed({"eager": eager, "variant": compiled})
        out["paired"], out["compiled"] = paired["eager"], paired["variant"]
        out["again"] = timed({"eager": eager})["eager"]
    return out


def _geomean(xs: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(x) for x in xs))


def _print(rows: list[dict[str, Any]], conds: list[str]) -> None:
    print(f"{'cond':8} {'proc':>4} " + " ".join(f"{s:>9}" for s in STEPS)
          + f" {'compiled':>9} {'thr':>5} {'gc objs':>8}  (eager per-call medians, ms)")
    for cond in conds:
        mine = [r for r in rows if r["cond"] == cond and "error" not in r]
        for i, r in enumerate(mine):
            print(f"{cond:8} {i:>4} " + " ".join(f"{r[s]:9.4f}" for s in STEPS)
                  + f" {r['compiled']:9.4f} {r['threads_before']}>{r['threads_after_compile']}"
                  f" {r['gc_objects']:>8}")
        if mine:
            g = {s: _geomean([r[s] for r in mine]) for s in STEPS}
            spread = max(r["alone"] for r in mine) / min(r["alone"] for r in mine) - 1
            print(f"{cond:8} {'geo':>4} " + " ".join(f"{g[s]:9.4f}" for s in STEPS)
                  + f"   paired/alone {g['paired'] / g['alone']:.3f}"
                  f"  after/alone {g['after'] / g['alone']:.3f}"
                  f"  alone spread across processes {spread:.1%}")
    for r in rows:
        if "error" in r:
            print(f"{r['cond']}: failed: {r['error']}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--cond", default="base", choices=sorted(CONDITIONS))
    p.add_argument("--conds", default="base,gc,pin,threads,ro")
    p.add_argument("--device", default="cpu")
    p.add_argument("--model", default="mlp")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--dim", action="append", default=[],
                   type=lambda s: (s.split("=")[0], int(s.split("=")[1])))
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args)))
        return 0
    conds = [c.strip() for c in args.conds.split(",") if c.strip()]
    bad = [c for c in conds if c not in CONDITIONS]
    if bad:
        p.error(f"unknown condition(s) {bad}; known: {sorted(CONDITIONS)}")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="eager-drift-") as cache:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache,
               "TRITON_CACHE_DIR": os.path.join(cache, "triton")}
        for rep in range(args.reps):
            for cond in conds:
                cmd = [sys.executable, __file__, "--child", "--cond", cond, "--device",
                       args.device, "--model", args.model, "--dtype", args.dtype]
                for name, value in args.dim:
                    cmd += ["--dim", f"{name}={value}"]
                t0 = time.time()
                done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
                try:
                    row = json.loads(done.stdout.strip().splitlines()[-1])
                except (IndexError, json.JSONDecodeError):
                    row = {"cond": cond, "error": done.stderr.strip()[-800:]}
                row.update(rep=rep, wall_s=round(time.time() - t0, 1))
                rows.append(row)
                print(f"rep {rep} {cond}: {row.get('alone', '-')} / {row.get('paired', '-')} "
                      f"({row['wall_s']} s)", flush=True)
    _print(rows, conds)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
