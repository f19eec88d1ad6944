"""Compile-forensics acceptance (issues 14, 41) on a CUDA host: BERT-base and the GPT stack with
the four start-up strategies, cache hits and misses per compile (FX graph, AOTAutograd, Triton
bundles, the kernels' autotune cache), CUDA-graph coverage, the lost-time account and bytes per
call against the copy ceiling; the graph-break model for the account's three named breaks; the
seed MLP under max-autotune, whose warm-cache compile must find every autotuned kernel's best
config in the cache (``mlp``: exit 1 when it does not).

    python acceptance/forensics_acceptance.py --db sqlite:///$OUT/f.db --only bert_base
    python acceptance/forensics_acceptance.py --db sqlite:///$OUT/f.db --only gpt_decoder,graph_breaks \\
        --bundle $OUT/forensics_bundle.json
    python acceptance/forensics_acceptance.py --db sqlite:///$OUT/f.db --only mlp

Each model is one run through the engine's own path (validate, queue, claim, execute, store);
each command stays within 10 minutes on an H200 when given one or two models. ``show`` prints
each run (its forensics lines included), then one summary table. ``--table-only`` prints the
table again from a database that came back from the GPU host. ``--device cpu --tiny`` runs the
same on tiny shapes (how it is tested without a GPU).

``--keep-trace DIR`` also keeps each compiled variant's TORCH_TRACE log (spec ``keep_trace``),
writes each one back out of the database into DIR (as ``python -m engine trace`` does) and
checks it: a gzip of torch's structured log with a ``dynamo_start`` envelope. The script exits
1 when a compiled variant that measured has no such trace.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from acceptance.acceptance_common import common_parser, measure  # noqa: E402
from engine.analysis.show import format_run, run_json  # noqa: E402
from engine.known_errors import startup_error  # noqa: E402
from engine.spec import normalise  # noqa: E402
from storage import export_bundle, open_database, queries  # noqa: E402

TAG = "forensics"
CONFIGS = {  # model: (dims, dtype, variants)
    "bert_base": ({"batch": 8, "seq": 128}, "bfloat16", ["eager", "default", "reduce-overhead"]),
    "gpt_decoder": ({"batch": 8, "seq": 256, "layers": 4, "hidden": 512, "heads": 8,
                     "vocab": 8192}, "bfloat16", ["eager", "default", "reduce-overhead"]),
    "graph_breaks": ({"batch": 32, "hidden": 256}, "float32", ["eager", "default"]),
    # the seed MLP (1024-ReLU-1024, b32): max-autotune's cold compile autotunes, its warm one
    # must find every result in the cache (Triton counters and autotune_cache_state)
    "mlp": ({"batch": 32}, "float32", ["eager", "max-autotune"]),
}
TINY = {"bert_base": {"batch": 1, "seq": 8}, "graph_breaks": {"batch": 4, "hidden": 16},
        "gpt_decoder": {"batch": 1, "seq": 8, "layers": 2, "hidden": 32, "heads": 2,
                        "vocab": 64}, "mlp": {"batch": 4, "hidden": 16}}
# no start-up strategies for these (not what they are for)
NO_STARTUP = {"graph_breaks", "mlp"}
# Two measuring processes per compiled variant (cold + warm local cache) and short budgets: the
# point here is the forensics, not a tight speedup interval, and each command must end in 10 min.
BUDGET = {"processes": 2, "max_processes": 2, "min_samples": 30, "min_time_s": 0.5,
          "max_time_s": 4.0, "warmup_calls": 6}


def _f(x, nd: int = 2) -> str:
    return "-" if x is None or x != x else f"{x:.{nd}f}"


def summary(db, run_ids: list[int]) -> str:
    """Per compiled variant: the four start-up strategies, FX-graph-cache hits/misses of the cold
    and warm compiles, CUDA-graph coverage and the three largest lost-time items."""
    head = (f"{'model':13s} {'variant':16s} {'cold s':>7s} {'warm s':>7s} {'portab s':>8s} "
            f"{'region s':>8s} {'fx miss/hit cold':>16s} {'warm':>6s} {'missed':>6s} "
            f"{'cg capt/graphs':>14s} {'in cg':>6s}  lost time (share)")
    lines = ["== compile forensics ==", head, "-" * len(head)]
    for rid in run_ids:
        run = run_json(db, rid)
        for v in run["variants"]:
            if v["variant"] == "eager":
                continue
            if v["status"] != "ok":
                lines.append(f"{run['model']:13s} {v['variant']:16s} FAILED: {v.get('error')}")
                continue
            st = v.get("startup") or {}
            caches = v.get("compile_cache") or []
            cold = next((c["counters"] for c in caches if c["phase"] == "cold"), {})
            warm = next((c["counters"] for c in caches if c["phase"] == "warm_cache"), {})
            cov = v.get("cudagraph_coverage") or {}
            items = [i for i in (v.get("lost_time") or {}).get("items") or []
                     if i["kind"] != "in_graphs"][:3]
            lost = "; ".join(f"{i['share']:.0%} {i['what'][:60]}" for i in items)
            lines.append(
                f"{run['model']:13s} {v['variant']:16s} "
                f"{_f((st.get('cold') or {}).get('time_to_first_call_s', v.get('first_call_cold_s'))):>7s} "
                f"{_f(v.get('first_call_warm_s')):>7s} "
                f"{_f((st.get('portable') or {}).get('time_to_first_call_s')):>8s} "
                f"{_f((st.get('regional') or {}).get('time_to_first_call_s')):>8s} "
                f"{cold.get('fxgraph_cache_miss', '-')!s:>8s}/{cold.get('fxgraph_cache_hit', '-')!s:<7s} "
                f"{warm.get('fxgraph_cache_hit', '-')!s:>6s} {str(v.get('warm_cache_missed')):>6s} "
                f"{(str(cov.get('captured')) + '/' + str(cov.get('graphs'))) if cov else '-':>14s} "
                f"{_f(cov.get('share_in_captured')) if cov else '-':>6s}  {lost}")
            for key in ("portable", "regional"):
                text = startup_error(key, st.get(key))  # a known torch error explained
                if text:
                    lines.append(f"{'':31s}{key}: {text}")
            if v.get("warm_cache_missed"):
                lines.append(f"{'':31s}warm cache missed: {v.get('warm_cache_miss_reason')}")
    return "\n".join(lines)


def triton_lines(db, run_ids: list[int]) -> list[str]:
    """Per compile of each compiled variant: torch's Triton counters and the kernels' autotune
    cache decisions, as ``show`` says them."""
    from engine.analysis.forensics_report import cache_line

    out = ["== caches per compile (torch's counter names) =="]
    for rid in run_ids:
        for v in run_json(db, rid)["variants"]:
            line = cache_line(v) if v["variant"] != "eager" else None
            if line:
                out.append(f"run {rid}{line}")
    return out


def check_autotune(db, run_id: int) -> list[str]:
    """A max-autotune variant's warm-cache compiles: every Triton kernel with an autotune
    decision found its best config in the cache (``autotune_cache_state`` has no miss).
    Algorithm selections benchmarked again (``select_algorithm_autotune``) are printed, not
    failed: torch 2.11 does that in a fresh process after FX-graph and AOTAutograd cache hits
    with no engine involved (docs/METHOD.md, compile forensics). Problems, one line each."""
    problems = []
    for v in run_json(db, run_id)["variants"]:
        if not v["variant"].startswith("max-autotune") or v["status"] != "ok":
            continue
        warm = [c for c in v.get("compile_cache") or [] if c.get("phase") == "warm_cache"]
        if not warm:
            problems.append(f"run {run_id} {v['variant']}: no warm-cache compile")
        for c in warm:
            states = c.get("autotune_cache_state") or {}
            again = (c.get("counters") or {}).get("select_algorithm_autotune", 0)
            if states.get("miss"):
                problems.append(f"run {run_id} {v['variant']}: warm-cache compile autotune "
                                f"states {states}")
            elif not states.get("hit"):  # only single-config kernels: nothing to look up
                print(f"note: run {run_id} {v['variant']}: no kernel with an autotune decision "
                      f"in the warm-cache compile ({states}); nothing was tuned again")
            if again:
                print(f"note: run {run_id} {v['variant']}: the warm-cache compile benchmarked "
                      f"{again} algorithm selection(s) again (select_algorithm_autotune), as "
                      "torch does in a plain script")
    return problems


def check_traces(db, run_id: int, out_dir: Path) -> list[str]:
    """Write each kept TORCH_TRACE of the run into ``out_dir`` and check it; returns the
    problems (one line each; empty: every compiled variant that measured has its trace)."""
    from storage.artifacts import list_artifacts, read_artifact

    out_dir.mkdir(parents=True, exist_ok=True)
    kept = {a["variant"]: a for a in list_artifacts(db, run_id)}
    problems = []
    for v in run_json(db, run_id)["variants"]:
        if v["variant"] == "eager" or v["status"] != "ok":
            continue
        if v["variant"] not in kept:
            problems.append(f"run {run_id} {v['variant']}: no trace kept "
                            f"({(v.get('torch_trace') or {}).get('error')})")
            continue
        meta, data = read_artifact(db, run_id, v["variant"])
        path = out_dir / meta["name"]
        path.write_bytes(data)
        text = gzip.decompress(data).decode("utf-8", "replace")
        ok = '"dynamo_start"' in text
        print(f"trace run {run_id} {v['variant']}: {path} {len(data)} bytes gzip, "
              f"{len(text.splitlines())} lines, dynamo_start {'found' if ok else 'MISSING'}"
              + (f", {meta['note']}" if meta.get("note") else ""), flush=True)
        if not ok:
            problems.append(f"run {run_id} {v['variant']}: the trace has no dynamo_start")
    return problems


def main() -> int:
    ap = common_parser(CONFIGS, "forensics")
    ap.add_argument("--table-only", action="store_true")
    ap.add_argument("--keep-trace", default=None, metavar="DIR",
                    help="keep each compiled variant's TORCH_TRACE log, write it into DIR and "
                         "check it")
    args = ap.parse_args()
    db = open_database(args.db)
    if args.table_only:
        runs = queries.list_runs(db, tag=TAG).sort_values("run_id")
        print(summary(db, [int(r) for r in runs["run_id"]]))
        return 0
    run_ids = []
    problems: list[str] = []
    for model in [m for m in args.only.split(",") if m]:
        dims, dtype, variants = CONFIGS[model]
        budget = dict(BUDGET)
        if args.tiny:
            dims, dtype = TINY[model], "float32"
            budget.update(min_samples=5, min_time_s=0.0, max_time_s=0.5, warmup_calls=3,
                          pipeline_k=3)
        spec = normalise({"model": model, "dims": dims, "dtype": dtype, "device": args.device,
                          "variants": variants, "backend": args.backend,
                          "startup": model not in NO_STARTUP,
                          "keep_trace": bool(args.keep_trace), **budget}, check_device=True)
        rid = measure(db, spec, [TAG, args.device], "forensics-acceptance")
        run_ids.append(rid)
        print(format_run(db, rid), flush=True)
        if args.keep_trace:
            problems += check_traces(db, rid, Path(args.keep_trace))
        if model == "mlp" and args.device.startswith("cuda"):  # no Triton on a CPU
            problems += check_autotune(db, rid)
    print()
    print(summary(db, run_ids))
    print("\n".join(triton_lines(db, run_ids)))
    if args.bundle:
        done = queries.list_runs(db, tag=TAG)
        ids = [int(r) for r, s in zip(done["run_id"], done["status"], strict=True)
               if s in ("done", "failed", "cancelled")]
        Path(args.bundle).write_text(json.dumps(export_bundle(db, ids)))
        print(f"bundle of runs {ids} written to {args.bundle}")
    for p in problems:
        print(f"CHECK FAILED: {p}")
    if args.keep_trace and not problems:
        print("trace check: every compiled variant that measured kept its TORCH_TRACE log")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
