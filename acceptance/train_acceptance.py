"""GPU acceptance for the training step (issues 15, 41): BERT-base, the GPT stack, the seed MLP
and a torchvision ResNet-50, one training step, eager vs default vs reduce-overhead vs the
compiled optimizer, with peak memory, accuracy against float64 and the step split into forward,
backward and optimizer; AdamW or SGD, bfloat16 or float16 autocast (float16 adds a GradScaler).

Each command measures one model with one compiled variant (plus eager, which every run has), so
that every command fits in 10 minutes on an H200 (cold compiles of forward + backward + optimizer
take tens of seconds each, and every compiled variant runs in several processes):

    python acceptance/train_acceptance.py --db sqlite:///$OUT/train.db --model bert --variant default
    python acceptance/train_acceptance.py --db sqlite:///$OUT/train.db --model bert --variant reduce-overhead
    python acceptance/train_acceptance.py --db sqlite:///$OUT/train.db --model bert --variant default+opt
    python acceptance/train_acceptance.py --db sqlite:///$OUT/train.db --model gpt  --variant default
    python acceptance/train_acceptance.py --db sqlite:///$OUT/train.db --model mlp --optimizer sgd --variant default,reduce-overhead,default+opt
    python acceptance/train_acceptance.py --db sqlite:///$OUT/train.db --model resnet50 --autocast float16 --variant default
    python acceptance/train_acceptance.py --db sqlite:///$OUT/train.db --model resnet50 --optimizer sgd --variant default+opt
    ...  (or --variant all, for a host where 10 minutes is not a limit)

then, on any host with the databases (several --db are merged into the first):

    python acceptance/train_acceptance.py --db sqlite:///all.db --db sqlite:///a.db ... --table-only \
        --bundle data/train_bundle.json

Each run goes through ``python -m engine run`` (validate, queue, claim, execute), exactly as a
user's would. ``--tiny`` shrinks the shapes and budgets for a CPU check of the script itself.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "acceptance"))  # acceptance_db, also when imported by a test

from acceptance_db import engine_run, merge, write_bundle  # noqa: E402

TAG = "train-acceptance"
VARIANTS = ("default", "reduce-overhead", "default+opt")
# BERT-base bf16 b8 s128 as DESIGN §4 measures it for inference: bfloat16 autocast on float32
# parameters (the usual mixed-precision recipe; AdamW keeps float32 master weights).
MODELS: dict[str, list[str]] = {
    "bert": ["--model", "bert_base", "--dim", "batch=8", "--dim", "seq=128",
             "--dtype", "float32", "--autocast", "bfloat16"],
    "gpt": ["--model", "gpt_decoder", "--dim", "batch=8", "--dim", "seq=128", "--dim", "layers=4",
            "--dim", "hidden=512", "--dim", "heads=8", "--dim", "vocab=8192",
            "--dtype", "float32", "--autocast", "bfloat16"],
    # the seed's MLP (1024-ReLU-1024, batch 32, float32), as DESIGN §4 measures it for inference
    "mlp": ["--model", "mlp", "--dim", "batch=32", "--dtype", "float32"],
    "resnet50": ["--model", "torchvision:resnet50", "--dim", "batch=32", "--dim", "image=224",
                 "--dtype", "float32", "--autocast", "bfloat16"],
}
TINY: dict[str, list[str]] = {
    "bert": MODELS["bert"][:2] + ["--dim", "batch=1", "--dim", "seq=8", "--dtype", "float32"],
    "gpt": ["--model", "gpt_decoder", "--dim", "batch=2", "--dim", "seq=8", "--dim", "layers=1",
            "--dim", "hidden=32", "--dim", "heads=2", "--dim", "vocab=64", "--dtype", "float32"],
    "mlp": ["--model", "mlp", "--dim", "batch=4", "--dim", "hidden=16", "--dtype", "float32"],
    "resnet50": ["--model", "torchvision:resnet50", "--dim", "batch=2", "--dim", "image=32",
                 "--dtype", "float32"],
}
TINY_BUDGET = ["--warmup-calls", "3", "--min-samples", "3", "--min-time", "0", "--max-time",
               "0.5", "--pipeline-k", "2", "--processes", "1", "--max-processes", "1",
               "--no-warm-cache", "--accuracy-steps", "2"]


def run_once(model: str, variants: list[str], db: str, device: str, tiny: bool,
             backend: str, timeout: float, optimizer: str = "adamw",
             autocast: str | None = None) -> int:
    """One run of ``model``; ``autocast`` replaces the model's own (None: keep it)."""
    args = list((TINY if tiny else MODELS)[model])
    if autocast is not None:
        if "--autocast" in args:
            del args[args.index("--autocast"):args.index("--autocast") + 2]
        args += ["--autocast", autocast]
    return engine_run([*args, "--step", "train", "--optimizer", optimizer, "--variants",
                       ",".join(["eager", *variants]), "--device", device, "--backend", backend,
                       "--timeout", str(timeout), "--db", db, "--tag", TAG, "--tag",
                       f"{TAG}-{model}", *(TINY_BUDGET if tiny else [])],
                      f"{model} {','.join(variants)}")


def _f(x: object, fmt: str) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return format(x, fmt)


def phase_cells(fig: object) -> list[str]:
    """``1.2/2.4/0.3`` for the variant's step split and eager's in the same process."""
    out = []
    for side in ("variant", "eager"):
        p = fig.get(side) if isinstance(fig, dict) else None
        out.append("/".join(_f(p.get(f"{k}_ms"), ".3g") for k in ("forward", "backward",
                                                                   "optimizer"))
                   if isinstance(p, dict) else "-")
    return out


def table(db: object) -> str:
    """One line per (run, variant): step times, speedup, compile, memory, float64 accuracy."""
    from storage import queries

    runs = queries.list_runs(db, tag=TAG)
    if runs.empty:
        return "no train-acceptance runs in this database"
    d = queries.load_runs(db, [int(r) for r in runs["run_id"]])
    head = ["run", "model", "variant", "ms/step", "eager ms", "speedup [95% CI]", "cold s",
            "warm s", "break-even", "peak MiB", "kern/step", "brk/recomp", "err fp64",
            "eager err", "x", "acc", "eager det", "fwd/bwd/opt ms", "eager fwd/bwd/opt ms"]
    rows = [head]
    v = d["variants"]
    names = dict(zip(d["runs"]["run_id"], d["runs"]["model"], strict=True))
    for _, r in v.sort_values(["run_id"]).iterrows():
        ci = ("-" if r.get("speedup") is None or r.get("speedup") != r.get("speedup") else
              f"{r['speedup']:.2f}x [{r['speedup_ci_low']:.2f},{r['speedup_ci_high']:.2f}]")
        mib = r.get("peak_allocated_bytes")
        rows.append([
            str(r["run_id"]), names.get(r["run_id"], "?"), r["variant"],
            _f(r.get("median_ms"), ".3f"), _f(r.get("eager_median_ms"), ".3f"),
            ci if r["variant"] != "eager" else "1 (baseline)",
            _f(r.get("first_call_cold_s"), ".1f"), _f(r.get("first_call_warm_s"), ".1f"),
            _f(r.get("break_even_calls"), ".0f"),
            "-" if mib is None or mib != mib else f"{mib / 2**20:.0f}",
            _f(r.get("kernels_per_call"), ".0f"),
            f"{_f(r.get('graph_break_count'), '.0f')}/{_f(r.get('recompile_count'), '.0f')}",
            _f(r.get("compiled_error"), ".2e"), _f(r.get("eager_error"), ".2e"),
            _f(r.get("accuracy_multiplier"), "g"), str(r.get("accuracy_ok")),
            str(r.get("eager_deterministic")), *phase_cells(r.get("train_phases_ms"))])
        if r.get("status") != "ok":
            rows[-1][3] = f"FAILED {r.get('failure_kind')}: {str(r.get('error'))[:80]}"
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(head))]
    lines = ["== training step, per variant (ms per step; memory less the eager twin) =="]
    lines += ["  ".join(str(c).rjust(w) for c, w in zip(row, widths, strict=True))
              for row in rows]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", action="append", required=True,
                    help="database URL; with --table-only, further --db are merged into the "
                         "first")
    ap.add_argument("--model", choices=sorted(MODELS), action="append")
    ap.add_argument("--variant", default="all",
                    help=f"one of {', '.join(VARIANTS)}, a comma list, or all")
    ap.add_argument("--optimizer", choices=("adamw", "sgd"), default="adamw")
    ap.add_argument("--autocast", choices=("none", "bfloat16", "float16"), default=None,
                    help="replaces the model's own (bert, gpt, resnet50: bfloat16; mlp: none)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--backend", default="inductor")
    ap.add_argument("--timeout", type=float, default=540.0, help="seconds per variant child")
    ap.add_argument("--tiny", action="store_true", help="tiny shapes and budgets (CPU check)")
    ap.add_argument("--table-only", action="store_true")
    ap.add_argument("--bundle", default=None, help="also write the runs as a bundle (JSON)")
    args = ap.parse_args()
    from engine.analysis.show import format_run
    from storage import open_database

    db = open_database(args.db[0])
    if args.table_only:
        merge(db, args.db[1:], TAG)
    else:
        variants = list(VARIANTS) if args.variant == "all" else args.variant.split(",")
        for model in args.model or sorted(MODELS):
            run_id = run_once(model, variants, args.db[0], args.device, args.tiny,
                              args.backend, args.timeout, args.optimizer, args.autocast)
            print(format_run(db, run_id), flush=True)
    print(table(db))
    if args.bundle:
        write_bundle(db, TAG, args.bundle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
