"""The GPU acceptance set (issue 2): run it on a CUDA host after every engine change.

    python scripts/gpu_acceptance.py --db sqlite:///$OUT/acceptance.db

Measures, through the same path as ``python -m engine run`` (validate, queue, claim, execute):
- seed MLP b32 fp32: eager, default, reduce-overhead, max-autotune;
- pointwise chain b64x4096 fp32: eager, default, reduce-overhead;
- the graph-break model (breaks with reason and file:line);
- a sweep of the varying-length model over seq (recompiles);
then times the MLP and the chain again with torch.utils.benchmark and triton's do_bench in a
separate process, prints every run with ``show`` and ends with one comparison table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.execute import execute_run  # noqa: E402
from engine.report import format_run  # noqa: E402
from engine.spec import normalise  # noqa: E402
from storage import export_bundle, open_database, queries, queue  # noqa: E402

CONFIGS = [
    ("mlp", {"batch": 32, "hidden": 1024}, None,
     ["eager", "default", "reduce-overhead", "max-autotune"]),
    ("pointwise_chain", {"batch": 64, "width": 4096, "depth": 8}, None,
     ["eager", "default", "reduce-overhead"]),
    ("graph_breaks", {"batch": 32, "hidden": 256}, None, ["eager", "default"]),
    ("varying_seq", {"batch": 8, "hidden": 256, "heads": 4},
     {"dim": "seq", "values": [64, 128, 256, 512]}, ["eager", "default"]),
]
# Real architectures for the dashboard's shipped H200 bundle (--extra), bf16 as in DESIGN §4.
EXTRA = [
    ("bert_base", {"batch": 8, "seq": 128}, None, ["eager", "default", "reduce-overhead"]),
    ("resnet50", {"batch": 32, "image": 224}, None, ["eager", "default"]),
    ("gpt_decoder", {"batch": 8, "layers": 4, "hidden": 512, "heads": 8, "vocab": 8192},
     {"dim": "seq", "values": [128, 256, 512, 1024]}, ["eager", "default", "reduce-overhead"]),
]
# DESIGN §4 (H200, torch 2.11): eager / default / reduce-overhead / max-autotune ms per call.
# Keep whatever PYTHONPATH brought the carried wheels (sqlalchemy, alembic) on the GPU host.
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                                 os.environ.get("PYTHONPATH")]))}
DESIGN = {"mlp": {"eager": 0.064, "default": 0.177, "reduce-overhead": 0.097,
                  "max-autotune": 0.146},
          "pointwise_chain": {"eager": 0.363, "default": 0.084, "reduce-overhead": 0.213}}


def _pct(a: float | None, b: float | None) -> str:
    return f"{(a / b - 1) * 100:+.1f}" if a and b else "-"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", default=os.environ.get("COMPILELAB_DB"))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--only", default=None, help="comma list of model names")
    ap.add_argument("--extra", action="store_true", help="also the real architectures (bf16)")
    ap.add_argument("--no-worker", action="store_true",
                    help="execute in this process instead of queueing for a worker")
    args = ap.parse_args()
    db = open_database(args.db)
    run_ids: dict[str, int] = {}
    configs = [(c, "float32") for c in CONFIGS] + [(c, "bfloat16") for c in EXTRA] * args.extra
    for (model, dims, sweep, variants), dtype in configs:
        if args.only and model not in args.only.split(","):
            continue
        spec = normalise({"model": model, "dims": dims, "sweep": sweep, "dtype": dtype,
                          "device": args.device, "variants": variants,
                          "cross_check": model in ("mlp", "pointwise_chain")}, check_device=True)
        run_ids[model] = queue.enqueue_run(db, spec, tags=["acceptance", "h200"])
        if args.no_worker:
            queue.claim_run(db, run_ids[model], "acceptance")
            execute_run(db, run_ids[model], spec, "acceptance", log=print)
    if not args.no_worker:
        # The same path as production: the queued runs are served by a real worker process.
        t0 = time.time()
        subprocess.run([sys.executable, "-m", "engine", "worker", "--once", "--db",
                        db.engine.url.render_as_string(hide_password=False)],
                       cwd=ROOT, env=ENV, check=False)
        print(f"== worker served {len(run_ids)} runs in {time.time() - t0:.0f} s", flush=True)

    refs = {}
    for model, dims, _, _ in CONFIGS[:2]:
        if model not in run_ids or args.device != "cuda":
            continue
        p = subprocess.run([sys.executable, str(ROOT / "scripts/reference_timing.py"), model,
                            json.dumps(dims), "float32", args.device], capture_output=True,
                           text=True, cwd=ROOT, env=ENV)
        if p.returncode == 0:
            refs[model] = json.loads(p.stdout.strip().splitlines()[-1])
        else:
            print(f"reference timing for {model} failed:\n{p.stderr[-2000:]}")

    for run_id in run_ids.values():
        print()
        print(format_run(db, run_id))

    print("\n== in-process cross-check (same child, right after the engine's rounds) ==")
    print(f"{'model':16s} {'variant':16s} {'fn':8s} {'engine per-call':>15s} {'do_bench+sync':>13s}"
          f" {'d%':>6s} {'timeit(1)':>9s} {'d%':>6s} {'engine pipelined':>16s} {'Timer blocked':>13s}"
          f" {'d%':>6s} {'do_bench raw':>12s}")
    for model, run_id in run_ids.items():
        for v in export_bundle(db, [run_id])["runs"][0]["variants"]:
            cc = (v.get("extra") or {}).get("cross_check")
            if not cc:
                continue
            engine = {"variant": (v["samples_ms"], v["pipelined_ms"]),
                      "eager": (v["eager_samples_ms"], v["eager_pipelined_ms"])}
            for fn, row in cc.items():
                pc, pl = (statistics.median(x) for x in engine[fn])
                name = v["variant"] if fn == "variant" else "eager"
                print(f"{model:16s} {v['variant']:16s} {name[:8]:8s} {pc:15.4f} "
                      f"{row.get('do_bench_sync_ms', float('nan')):13.4f} "
                      f"{_pct(pc, row.get('do_bench_sync_ms')):>6s} {row['timer_per_call_ms']:9.4f} "
                      f"{_pct(pc, row['timer_per_call_ms']):>6s} {pl:16.4f} "
                      f"{row['timer_blocked_ms']:13.4f} {_pct(pl, row['timer_blocked_ms']):>6s} "
                      f"{row.get('do_bench_ms', float('nan')):12.4f}")

    print("\n== engine vs references (ms per call, medians; d% = engine vs reference) ==")
    print("per-call: engine CUDA events, idle device before each call | refs: Timer.timeit(1), "
          "do_bench(sync+call)\npipelined: engine K back-to-back calls / K | ref: "
          "Timer.blocked_autorange; raw do_bench shown for information")
    cols = ["model", "variant", "per-call", "timeit1", "d%", "db_sync", "d%", "pipelined",
            "blocked", "d%", "do_bench", "naive", "DESIGN", "cold s", "warm s", "kern/call"]
    print(" ".join(f"{c:>9s}" if i > 1 else f"{c:16s}" for i, c in enumerate(cols)))

    def pct(a, b):
        return f"{(a / b - 1) * 100:+.1f}" if a and b else "-"

    def f(x, nd=4):
        return "-" if x is None or x != x else f"{x:.{nd}f}"

    for model, run_id in run_ids.items():
        v = queries.load_runs(db, [run_id])["variants"]
        for r in v.to_dict("records"):
            ref = refs.get(model, {}).get(r["variant"], {})
            cells = [model, r["variant"], f(r["median_ms"]), f(ref.get("timer_per_call_ms")),
                     pct(r["median_ms"], ref.get("timer_per_call_ms")),
                     f(ref.get("do_bench_sync_ms")),
                     pct(r["median_ms"], ref.get("do_bench_sync_ms")),
                     f(r["pipelined_median_ms"]), f(ref.get("timer_blocked_ms")),
                     pct(r["pipelined_median_ms"], ref.get("timer_blocked_ms")),
                     f(ref.get("do_bench_ms")), f(ref.get("naive_no_sync_ms")),
                     f(DESIGN.get(model, {}).get(r["variant"]), 3), f(r["first_call_cold_s"], 2),
                     f(r["first_call_warm_s"], 2), f(r["kernels_per_call"], 1)]
            print(" ".join(f"{c:>9s}" if i > 1 else f"{c:16s}" for i, c in enumerate(cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
