"""GPU acceptance for issues 19 and 41: LLM decoding and registry models by name.

1. ``llama_decode`` at a ~1B-parameter Llama shape (16 layers, hidden 2048, 32 heads, vocab
   32000: 0.95 B parameters), bfloat16, batch 1, prompt 128, 128 new tokens: per variant time to
   first token, per-token latency, tokens/s, the speedup over eager measured in the same process,
   compile cost and break-even in tokens, and whether decoding recompiles.
   Also the generation's accuracy against float64 (teacher-forced logits per step, the tolerance
   stated), its memory (weights, KV cache, peak while generating) and tokens/s against the run's
   one eager.
2. ``timm:vit_base_patch16_224`` (bf16, batch 32), ``hf:gpt2`` (bf16, batch 8, seq 128) and
   ``hf:t5`` (T5's default config, t5-small's shape; bf16, batch 8, seq 128) inference, eager vs
   default vs reduce-overhead; Llama- and Mistral-style ``hf:`` decoders by name with random
   weights through transformers' ``generate()`` and its static cache (``hf_decode``,
   ``hf_mistral``).

Each command measures one group so that it fits in 10 minutes on an H200 (cold compiles of the
decode step and of the prefill take tens of seconds each, and every compiled variant runs in
``--processes`` processes):

    python acceptance/models_acceptance.py --db sqlite:///$OUT/m.db --only decode --variant default
    python acceptance/models_acceptance.py --db sqlite:///$OUT/m.db --only decode --variant reduce-overhead
    python acceptance/models_acceptance.py --db sqlite:///$OUT/m.db --only decode --variant max-autotune   # optional
    python acceptance/models_acceptance.py --db sqlite:///$OUT/m.db --only vit
    python acceptance/models_acceptance.py --db sqlite:///$OUT/m.db --only gpt2
    python acceptance/models_acceptance.py --db sqlite:///$OUT/m.db --only t5
    python acceptance/models_acceptance.py --db sqlite:///$OUT/m.db --only hf_decode --variant reduce-overhead
    python acceptance/models_acceptance.py --db sqlite:///$OUT/m.db --only hf_mistral --variant reduce-overhead

then, on any host with the databases (several --db are merged into the first):

    python acceptance/models_acceptance.py --db sqlite:///all.db --db sqlite:///a.db ... --table-only \
        --bundle data/models_bundle.json

Every run goes through ``python -m engine run`` (validate, queue, claim, execute), exactly as a
user's would; every run also has its eager variant. ``--tiny`` shrinks shapes and budgets and uses
the aot_eager backend on the CPU, to check the script itself.
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

TAG = "models-acceptance"
DECODE_DIMS = ["batch=1", "prompt=128", "new_tokens=128", "layers=16", "hidden=2048", "heads=32"]
GROUPS: dict[str, dict[str, list[str]]] = {
    # variants: the compiled ones measured by default (eager is in every run)
    "decode": {"args": ["--model", "llama_decode", "--dtype", "bfloat16",
                        *[a for d in DECODE_DIMS for a in ("--dim", d)]],
               "variants": ["default", "reduce-overhead"]},
    "vit": {"args": ["--model", "timm:vit_base_patch16_224", "--dim", "batch=32",
                     "--dtype", "bfloat16"], "variants": ["default", "reduce-overhead"]},
    "gpt2": {"args": ["--model", "hf:gpt2", "--dim", "batch=8", "--dim", "seq=128",
                      "--dtype", "bfloat16"], "variants": ["default", "reduce-overhead"]},
    # optional: the same ~1B shape through transformers' own generate() and static cache
    "hf_decode": {"args": ["--model", "hf:llama", "--dtype", "bfloat16",
                           *[a for d in ("batch=1", "seq=128", "new_tokens=128", "layers=16",
                                         "hidden=2048", "heads=32") for a in ("--dim", d)]],
                  "variants": ["reduce-overhead"]},
    # the same shape as a Mistral-style decoder (grouped-query attention: 8 key/value heads of
    # 32, as Mistral's config has them), through generate()
    "hf_mistral": {"args": ["--model", "hf:mistral", "--dtype", "bfloat16",
                            *[a for d in ("batch=1", "seq=128", "new_tokens=128", "layers=16",
                                          "hidden=2048", "heads=32") for a in ("--dim", d)]],
                   "variants": ["reduce-overhead"]},
    # an encoder-decoder by name: T5's default config, teacher-forced LM head
    "t5": {"args": ["--model", "hf:t5", "--dim", "batch=8", "--dim", "seq=128",
                    "--dtype", "bfloat16"], "variants": ["default", "reduce-overhead"]},
}
TINY: dict[str, list[str]] = {
    "decode": ["--model", "llama_decode", "--dtype", "float32",
               *[a for d in ("batch=1", "prompt=8", "new_tokens=6", "layers=2", "hidden=32",
                             "heads=4") for a in ("--dim", d)]],
    "vit": ["--model", "timm:test_vit", "--dim", "batch=2", "--dtype", "float32"],
    "gpt2": ["--model", "hf:gpt2", "--dim", "batch=2", "--dim", "seq=8", "--dim", "layers=1",
             "--dim", "hidden=32", "--dim", "heads=2", "--dtype", "float32"],
    "hf_decode": ["--model", "hf:llama", "--dim", "batch=1", "--dim", "seq=8", "--dim",
                  "new_tokens=4", "--dim", "layers=1", "--dim", "hidden=32", "--dim", "heads=4",
                  "--dtype", "float32"],
    "hf_mistral": ["--model", "hf:mistral", "--dim", "batch=1", "--dim", "seq=8", "--dim",
                   "new_tokens=4", "--dim", "layers=1", "--dim", "hidden=32", "--dim", "heads=4",
                   "--dtype", "float32"],
    "t5": ["--model", "hf:t5", "--dim", "batch=2", "--dim", "seq=8", "--dim", "layers=1",
           "--dim", "hidden=32", "--dim", "heads=4", "--dtype", "float32"],
}
TINY_BUDGET = ["--warmup-calls", "3", "--min-samples", "3", "--min-time", "0", "--max-time",
               "0.5", "--pipeline-k", "2", "--processes", "1", "--max-processes", "1",
               "--no-warm-cache", "--backend", "aot_eager", "--device", "cpu"]
# Two processes per compiled variant (cold + one warm-cache) keep a decode command under 10
# minutes: the cold one compiles the step and the prefill, then runs 3 + 2 x 3 generations of
# each side; ViT-B and GPT-2 keep the default three.
GPU_BUDGET = {"decode": ["--processes", "2", "--max-processes", "2"], "vit": [], "gpt2": [],
              "hf_decode": ["--processes", "2", "--max-processes", "2"],
              "hf_mistral": ["--processes", "2", "--max-processes", "2"], "t5": []}
# the groups a bare command runs: those that need more than 10 minutes are asked for by name
OPTIONAL = {"hf_decode", "hf_mistral"}


def run_once(group: str, variants: list[str], db: str, tiny: bool, timeout: float) -> int:
    args = TINY[group] if tiny else GROUPS[group]["args"]
    if tiny:  # aot_eager has only the default mode
        variants = ["default"]
    return engine_run([*args, "--variants", ",".join(["eager", *variants]), "--timeout",
                       str(timeout), "--db", db, "--tag", TAG, "--tag", f"{TAG}-{group}",
                       *(TINY_BUDGET if tiny else ["--device", "cuda", *GPU_BUDGET[group]])],
                      f"{group} {','.join(variants)}")


def _f(x: object, fmt: str) -> str:
    if x is None or isinstance(x, bool) or not isinstance(x, (int, float)) or (
            isinstance(x, float) and math.isnan(x)):
        return "-"
    return format(x, fmt)


def _align(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]


def _runs(db: object) -> list[dict]:
    from engine.analysis.show import run_json
    from storage import queries

    runs = queries.list_runs(db, tag=TAG)
    return [run_json(db, int(r)) for r in sorted(runs["run_id"])] if not runs.empty else []


def decode_table(runs: list[dict]) -> str:
    """Per decode variant: generation figures (engine/measure/decode.py) and the decode step's own."""
    from engine.analysis.decode_report import speedup_vs_run_eager

    head = ["run", "variant", "TTFT ms", "ms/token", "tokens/s", "decode tok/s",
            "x run eager tok/s", "x paired tok/s", "x TTFT", "compile s", "break-even tokens",
            "recompiles", "graphs rec (warm-up/later)", "step ms", "step x [CI]", "params", "acc", "gen fp64 (worst/allowed)",
            "top1", "weights MiB", "KV MiB", "peak MiB"]
    rows = [head]
    for run in runs:
        generating = run["model"] == "llama_decode" or any(
            isinstance(r.get("hf_generate"), dict) for r in run["variants"])
        for r in run["variants"]:
            d = r.get("decode") or r.get("hf_generate")
            if not generating:
                continue
            if not isinstance(d, dict) or d.get("error"):
                why = (f"FAILED {r.get('failure_kind')}: {str(r.get('error'))[:70]}"
                       if r.get("status") != "ok" else f"no generation: {(d or {}).get('error')}")
                rows.append([str(run["run_id"]), r["variant"], why, *["-"] * (len(head) - 3)])
                continue
            ci = ("1 (baseline)" if r["variant"] == "eager" else
                  f"{_f(r.get('speedup'), '.2f')}x [{_f(r.get('speedup_ci_low'), '.2f')},"
                  f"{_f(r.get('speedup_ci_high'), '.2f')}]")
            be = d.get("break_even_tokens")
            key = "decode" if isinstance(r.get("decode"), dict) else "hf_generate"
            vs_run = (1.0 if r["variant"] == "eager" else
                      speedup_vs_run_eager(run["variants"], r, key, "tokens_per_s"))
            rows.append([
                str(run["run_id"]) + ("" if isinstance(r.get("decode"), dict) else " hf"), r["variant"],
                _f(d.get("ttft_ms"), ".2f"),
                _f(d.get("per_token_ms"), ".3f"), _f(d.get("tokens_per_s"), ".1f"),
                _f(d.get("decode_tokens_per_s"), ".1f"), _f(vs_run, ".2f"),
                _f(d.get("tokens_per_s_speedup"), ".2f"), _f(d.get("ttft_speedup"), ".2f"),
                _f(d.get("compile_s"), ".1f"),
                "-" if r["variant"] == "eager" else ("never" if be is None else f"{be:,.0f}"),
                f"{d.get('decode_recompiles')}" + (" PER STEP" if d.get("recompiles_per_step")
                                                   else ""),
                f"{_f(d.get('cudagraph_records'), 'd')}/{_f(d.get('later_cudagraph_records'), 'd')}",
                _f(r.get("median_ms"), ".3f"), ci,
                _f((r.get("arch") or {}).get("parameters"), ",.0f"), str(r.get("accuracy_ok")),
                *_generation_cells(d)])
    lines = ["== generation per variant: llama_decode, and runs marked hf through transformers "
             "generate() (tokens/s include the prefill; x run eager: vs the geometric mean of "
             "every process's eager generations; x paired: vs eager's generations in the same "
             "process; step: the timed call; gen fp64: the generation's logits against float64, "
             "teacher-forced; peak: while generating) =="]
    return "\n".join(lines + _align(rows))


def _generation_cells(d: dict) -> list[str]:
    """The generation's float64 verdict (worst error / its allowance), top-1 agreement and
    memory (engine/measure/decode.py; hf_generate has neither: dashes)."""
    acc = d.get("accuracy") if isinstance(d.get("accuracy"), dict) else {}
    w = acc.get("worst") if isinstance(acc.get("worst"), dict) else {}
    err = w.get("compiled_error") if w.get("compiled_error") is not None else w.get(
        "eager_error")
    verdict = ("-" if not acc else f"error: {str(acc['error'])[:40]}" if acc.get("error") else
               f"{'ok' if acc.get('ok') else 'FAILED'} {_f(err, '.2g')}/"
               f"{_f(w.get('allowed'), '.2g')}")
    mem = d.get("memory") if isinstance(d.get("memory"), dict) else {}

    def mib(k: str) -> str:
        v = mem.get(k)
        return _f(v / 2**20 if isinstance(v, (int, float)) else None, ".3g")

    return [verdict, _f(acc.get("top1_agreement"), ".0%"), mib("weights_bytes"),
            mib("kv_cache_bytes"), mib("peak_allocated_bytes")]


def inference_table(runs: list[dict]) -> str:
    head = ["run", "model", "variant", "ms/call", "eager ms", "speedup [95% CI]", "cold s",
            "warm s", "break-even", "peak MiB", "kern/call", "params", "acc"]
    rows = [head]
    for run in runs:
        if run["model"] == "llama_decode":
            continue
        for r in run["variants"]:
            ci = ("1 (baseline)" if r["variant"] == "eager" else
                  f"{_f(r.get('speedup'), '.2f')}x [{_f(r.get('speedup_ci_low'), '.2f')},"
                  f"{_f(r.get('speedup_ci_high'), '.2f')}]")
            mib = r.get("peak_allocated_bytes")
            row = [str(run["run_id"]), run["model"], r["variant"], _f(r.get("median_ms"), ".3f"),
                   _f(r.get("eager_median_ms"), ".3f"), ci, _f(r.get("first_call_cold_s"), ".1f"),
                   _f(r.get("first_call_warm_s"), ".1f"), _f(r.get("break_even_calls"), ".0f"),
                   _f(mib / 2**20 if isinstance(mib, (int, float)) else None, ".0f"),
                   _f(r.get("kernels_per_call"), ".0f"),
                   _f((r.get("arch") or {}).get("parameters"), ",.0f"), str(r.get("accuracy_ok"))]
            if r.get("status") != "ok":
                row[3] = f"FAILED {r.get('failure_kind')}: {str(r.get('error'))[:70]}"
            rows.append(row)
    return "\n".join(["== registry models, inference (ms per call) =="] + _align(rows))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", action="append", required=True,
                    help="database URL; with --table-only, further --db are merged into the "
                         "first")
    ap.add_argument("--only", choices=sorted(GROUPS), action="append",
                    help="group(s) to measure (default: all but hf_decode and hf_mistral, "
                         "which need more than 10 minutes with the others)")
    ap.add_argument("--variant", default=None,
                    help="compiled variant(s), comma separated (default: default,reduce-overhead)")
    ap.add_argument("--timeout", type=float, default=540.0, help="seconds per variant child")
    ap.add_argument("--tiny", action="store_true", help="tiny shapes, aot_eager on the CPU")
    ap.add_argument("--table-only", action="store_true")
    ap.add_argument("--bundle", default=None, help="also write the runs as a bundle (JSON)")
    args = ap.parse_args(argv)
    from engine.analysis.show import format_run
    from storage import open_database

    db = open_database(args.db[0])
    if args.table_only:
        merge(db, args.db[1:], TAG)
    else:
        for group in args.only or sorted(set(GROUPS) - OPTIONAL):
            variants = args.variant.split(",") if args.variant else GROUPS[group]["variants"]
            run_id = run_once(group, variants, args.db[0], args.tiny, args.timeout)
            print(format_run(db, run_id), flush=True)
    runs = _runs(db)
    print(decode_table(runs))
    print(inference_table(runs))
    if args.bundle:
        write_bundle(db, TAG, args.bundle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
