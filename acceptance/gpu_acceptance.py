"""The GPU acceptance set (issue 2): run it on a CUDA host after every engine change.

    python acceptance/gpu_acceptance.py --db sqlite:///$OUT/acceptance.db

Measures, through the same path as ``python -m engine run`` (validate, queue, claim, execute):
- seed MLP b32 fp32: eager, default, reduce-overhead, max-autotune;
- pointwise chain b64x4096 fp32: eager, default, reduce-overhead;
- the graph-break model (breaks with reason and file:line);
- a sweep of the varying-length model over seq (recompiles);
with the cross-check on for the MLP and the chain (torch.utils.benchmark and triton's do_bench
timed in the same child, in the same time window as the engine's own timers), prints every run
with ``show`` and ends with one table of engine figures against the library timers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.analysis.show import format_run  # noqa: E402
from engine.orchestrate.execute import execute_run  # noqa: E402
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


def _f(x: float | None, nd: int = 4) -> str:
    return "-" if x is None or x != x else f"{x:.{nd}f}"


def acceptance_table(db, run_ids: dict[str, int]) -> str:
    """One table: per variant (and the paired eager of each compiled child), the engine's stored
    figures, the same engine timers re-run in the cross-check window, and the library references
    from that window, with the gaps that the ±5 % acceptance is about."""
    cols = ["model", "variant", "fn", "per-call", "alone", "timeit1", "net", "d%", "db_sync",
            "d%", "pipelined", "alone", "blocked", "d%", "do_bench", "busy", "naive", "DESIGN",
            "cold s", "warm s", "kern", "busy cores"]
    lines = [
        "== engine vs library timers, ms per call (medians) ==",
        "per-call: stored engine figure (CUDA events, idle device, interleaved rounds); alone: the "
        "same timer on this function alone in the cross-check window;",
        "  timeit1: Timer.timeit(1) taking turns with it, sample by sample; net: timeit1 less the "
        "Timer's own cost (Timer on 'pass'); d%: median of paired engine/net - 1",
        "  db_sync: do_bench(sync; fn) (cold L2; the sync's return inside its events); d%: paired "
        "engine/db_sync - 1",
        "pipelined: stored engine figure (K calls, one sync); alone: same, bracketing each "
        "Timer.blocked_autorange (blocked); d%: paired",
        "do_bench: raw do_bench (device time, cold L2); busy: profiler device-busy time; naive: "
        "loop without synchronise (times the launches only); busy cores: cores other processes "
        "kept busy during the rounds / during the cross-check",
        " ".join(f"{c:>9s}" if i > 2 else f"{c:16s}" for i, c in enumerate(cols)),
    ]

    def gap(x: float | None) -> str:
        return "-" if x is None else f"{x * 100:+.1f}"

    for model, run_id in run_ids.items():
        for v in export_bundle(db, [run_id])["runs"][0]["variants"]:
            if v.get("status") != "ok":
                lines.append(f"{model:16s} {v['variant']:16s} FAILED: {v.get('error')}")
                continue
            extra = v.get("extra") or {}
            cc = extra.get("cross_check") or {}
            stored = {"variant": (v["samples_ms"], v["pipelined_ms"]),
                      "eager": (v["eager_samples_ms"], v["eager_pipelined_ms"])}
            for fn in ("variant", "eager") if v["variant"] != "eager" else ("variant",):
                ref = cc.get(fn, {})
                pc, pl = (statistics.median(x) if x else None for x in stored[fn])
                own = fn == "variant"
                cells = [model, v["variant"], v["variant"][:8] if own else "(eager)", _f(pc),
                         _f(ref.get("engine_per_call_ms")), _f(ref.get("timer_per_call_ms")),
                         _f(ref.get("timer_net_ms")), gap(ref.get("per_call_vs_timer_net")),
                         _f(ref.get("do_bench_sync_ms")), gap(ref.get("per_call_vs_do_bench_sync")),
                         _f(pl), _f(ref.get("engine_pipelined_ms")),
                         _f(ref.get("timer_blocked_ms")), gap(ref.get("pipelined_vs_blocked")),
                         _f(ref.get("do_bench_ms")),
                         _f(v.get("device_busy_ms_per_call")) if own else "",
                         _f(ref.get("naive_no_sync_ms")),
                         _f(DESIGN.get(model, {}).get(v["variant"]), 3) if own else "",
                         _f(v.get("first_call_cold_s"), 2) if own else "",
                         _f(v.get("first_call_warm_s"), 2) if own else "",
                         _f(v.get("kernels_per_call"), 1) if own else "",
                         f"{_f(extra.get('host_other_busy_cores'), 1)}/"
                         f"{_f(cc.get('host_other_busy_cores'), 1)}" if own else ""]
                lines.append(" ".join(f"{c:>9s}" if i > 2 else f"{c:16s}"
                                      for i, c in enumerate(cells)))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", default=os.environ.get("COMPILELAB_DB"))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--only", default=None, help="comma list of model names")
    ap.add_argument("--extra", action="store_true", help="also the real architectures (bf16)")
    ap.add_argument("--table-only", action="store_true",
                    help="only print the table for the acceptance runs already in --db")
    ap.add_argument("--no-worker", action="store_true",
                    help="execute in this process instead of queueing for a worker")
    args = ap.parse_args()
    db = open_database(args.db)
    if args.table_only:  # print the table of runs already in this database (e.g. fetched back)
        runs = queries.list_runs(db, tag="acceptance").sort_values("run_id")
        print(acceptance_table(db, dict(zip(runs["model"], runs["run_id"].astype(int), strict=True))))
        return 0
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

    for run_id in run_ids.values():
        print()
        print(format_run(db, run_id))
    print()
    print(acceptance_table(db, run_ids))
    return 0


if __name__ == "__main__":
    sys.exit(main())
