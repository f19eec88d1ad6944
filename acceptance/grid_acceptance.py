"""Configuration-grid acceptance (issue 17) on a CUDA host: a grid of at least eight configs for
BERT-base and for the catalogue's varying-sequence model, each ONE run, then the recommendation
for 1 000 and 1 000 000 calls (cold and warm compile cache) and the non-dominated configs; the
varying-sequence model also replays a mix of sequence lengths (60 % 64, 30 % 96, 10 % 128
tokens) and reports per ``dynamic`` setting the expected per-request time with recompiles.

    python acceptance/grid_acceptance.py --db sqlite:///$OUT/g.db --only bert_base --bundle $OUT/grid_bert.json
    python acceptance/grid_acceptance.py --db sqlite:///$OUT/g.db --only varying_seq --bundle $OUT/grid_varying.json

One model per command: each stays within the GPU host's 10-minute limit (two measuring processes
per config, short timing budgets, no profiler pass; max-autotune is left out of the BERT grid).
Each run goes through the engine's own path (validate, queue, claim, execute, store), so
``python -m engine recommend RUN --calls N`` and the dashboard's compare page (Pareto view) read
it as any other run; import the bundle (``python -m engine import FILE``) to look at it locally.
``--recommend-only`` prints the recommendations again from a database that came back.
``--device cpu --tiny --backend aot_eager --variants default --option dynamic=none,true`` runs a
small grid on tiny shapes (how it is tested without a GPU).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from acceptance.acceptance_common import common_parser, measure  # noqa: E402
from engine import grid  # noqa: E402
from engine.analysis.grid_plan import plan  # noqa: E402
from engine.analysis.pareto import mark  # noqa: E402
from engine.analysis.recommend import recommend  # noqa: E402
from engine.analysis.show import format_run  # noqa: E402
from engine.measure import shape_mix  # noqa: E402
from engine.spec import normalise  # noqa: E402
from storage import export_bundle, open_database  # noqa: E402
from storage.history import process_seconds  # noqa: E402
from storage.records import load_run  # noqa: E402
from storage.selection import tagged_runs  # noqa: E402

TAG = "grid"
CALLS = (1000, 1_000_000)
# model: (dims, dtype, modes, options, sweep); 2 modes x 2 x 2 option values = 8 configs each
CONFIGS = {
    "bert_base": ({"batch": 8, "seq": 128}, "bfloat16", ["default", "reduce-overhead"],
                  ["fullgraph=false,true", "freezing=false,true"], None),
    # dynamic matters only when the sequence length changes: the sweep feeds three lengths to
    # the same compiled model (recompiles or one dynamic graph), coordinate descent tunes kernels
    "varying_seq": ({"batch": 8, "seq": 64, "hidden": 256, "heads": 4}, "bfloat16",
                    ["default", "reduce-overhead"],
                    ["dynamic=none,true", "coordinate_descent_tuning=false,true"],
                    {"dim": "seq", "values": [64, 96, 128]}),
}
# The sizes' mix a service sees (engine/measure/shape_mix.py): each config replays requests in it.
WEIGHTS = {"varying_seq": [0.6, 0.3, 0.1]}
TINY = {"bert_base": {"batch": 1, "seq": 8},
        "varying_seq": {"batch": 2, "seq": 8, "hidden": 16, "heads": 2}}
# Two measuring processes per config (cold + warm local cache) and short budgets: the grid must
# end inside 10 minutes; the recommendation carries the intervals these give.
BUDGET = {"processes": 2, "max_processes": 2, "min_samples": 20, "min_time_s": 0.3,
          "max_time_s": 2.0, "warmup_calls": 5, "pipeline_k": 20, "profile": False,
          "timeout_s": 300.0}


def pareto_lines(rows: list[dict]) -> list[str]:
    """The non-dominated configs on both Pareto views, as text (the dashboard draws them)."""
    out = []
    for axis, label in (("first_call_cold_s", "cold compile s"), ("peak_memory", "peak reserved MiB")):
        pts = sorted(mark(rows, axis), key=lambda p: p["x"])
        front = [f"{p['row']['variant']} ({p['x']:.3g} {label.split()[-1]}, {p['y']:.3g} ms)"
                 for p in pts if p["front"]]
        out.append(f"  non-dominated, per-call ms vs {label}: " + (", ".join(front) or "none"))
        wrong = [p["row"]["variant"] for p in pts if not p["correct"]]
        if wrong:
            out.append(f"    failed the accuracy check (not candidates): {', '.join(wrong)}")
    return out


def report(db, run_id: int) -> str:
    run = load_run(db, run_id)
    if run is None:
        return f"no run {run_id}"
    rows = run["variants"]
    lines = [f"== run {run_id}: {run['model']} {run['dims']} ({len(rows)} variants) =="]
    lines += pareto_lines(rows)
    for calls in CALLS:
        for warm in (False, True):
            rec = recommend(rows, calls, warm_cache=warm)
            lines.append(f"-- python -m engine recommend {run_id} --calls {calls}"
                         + (" --warm-cache" if warm else ""))
            lines += ["  " + line for line in rec.lines()]
        lines += shape_mix.lines(rows, calls)
    return "\n".join(lines)


def main() -> int:
    ap = common_parser(CONFIGS, "grid")
    ap.add_argument("--variants", default=None, help="override the grid's modes (comma list)")
    ap.add_argument("--option", action="append", default=None,
                    help="override the grid's options (repeatable NAME=v1,v2)")
    ap.add_argument("--grid-limit", type=int, default=grid.DEFAULT_GRID_LIMIT)
    ap.add_argument("--recommend-only", action="store_true")
    args = ap.parse_args()
    db = open_database(args.db)
    if args.recommend_only:
        for head in tagged_runs(db, TAG):
            print(report(db, head.run_id))
        return 0
    run_ids = []
    for model in [m for m in args.only.split(",") if m]:
        dims, dtype, modes, options, sweep = CONFIGS[model]
        budget = dict(BUDGET)
        if args.tiny:
            dims, dtype = TINY[model], "float32"
            sweep = sweep and {"dim": sweep["dim"], "values": [8, 12, 16]}
            budget.update(min_samples=5, min_time_s=0.0, max_time_s=0.5, warmup_calls=3,
                          pipeline_k=3, processes=1, max_processes=1, warm_cache=False)
        modes = args.variants.split(",") if args.variants else modes
        options = args.option if args.option is not None else options
        variants = grid.expand(["eager", *modes], grid.parse_options(options))
        spec = normalise({"model": model, "dims": dims, "dtype": dtype, "device": args.device,
                          "variants": variants, "backend": args.backend, "sweep": sweep,
                          "shape_weights": WEIGHTS.get(model) if sweep else None,
                          "grid_limit": args.grid_limit, **budget}, check_device=True)
        print("grid: " + plan(spec, process_seconds(db, model, args.device)).text(), flush=True)
        rid = measure(db, spec, [TAG, args.device], "grid-acceptance")
        run_ids.append(rid)
        print(format_run(db, rid), flush=True)
    print()
    for rid in run_ids:
        print(report(db, rid), flush=True)
    if args.bundle:
        Path(args.bundle).write_text(json.dumps(export_bundle(db, run_ids)))
        print(f"bundle of runs {run_ids} written to {args.bundle}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
