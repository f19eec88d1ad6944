"""The compare page's "Token generation" section, for runs that generate tokens (llama_decode,
and hf: models run with new_tokens > 0 through transformers generate()): per variant time to
first token, per-token latency, tokens/s, the speedup over the run's one eager and over eager in
the same process, compile cost and break-even in tokens, the generation's accuracy against
float64 and its memory, the CUDA graphs recorded while warming up and once warm, and a warning
when decoding recompiles per step or records graphs once warm.
``generation_table`` is a pure function of the variants DataFrame."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import safe
from dashboard.tables import DASH
from engine.analysis import decode_report

PATHS = (("decode", "static-cache decoder"), ("hf_generate", "transformers generate()"))
# The table's headers as people read them; the frame keeps its keys (the CSV's, the tests').
HEADERS = {
    "run_id": "Run", "variant": "Variant", "path": "Path", "batch": "Batch",
    "prompt": "Prompt tokens", "new_tokens": "New tokens", "ttft_ms": "First token (ms)",
    "ms_per_token": "Per token (ms)", "tokens_per_s": "Tokens/s",
    "run_eager_tokens_per_s": "Run's eager (tokens/s)",
    "tokens_per_s_vs_run_eager_x": "Tokens/s ÷ run's eager (×)",
    "decode_tokens_per_s": "Decoding alone (tokens/s)",
    "tokens_per_s_vs_eager_same_process_x": "Tokens/s ÷ eager, same process (×)",
    "ttft_vs_eager_x": "First token, eager ÷ this (×)", "compile_s": "Compile (s)",
    "break_even_tokens": "Break-even (tokens)", "fp64_ok": "Within the fp64 bound",
    "top1_vs_fp64": "Top-1 agreement with fp64", "weights_mib": "Weights (MiB)",
    "kv_cache_mib": "KV cache (MiB)", "peak_alloc_mib": "Peak allocated (MiB)",
    "graphs_recorded_warming_up": "CUDA graphs recorded, warming up",
    "graphs_recorded_once_warm": "CUDA graphs recorded, once warm",
    "recompiles_per_step": "Recompiles per step",
}


def generation_table(variants: pd.DataFrame) -> pd.DataFrame:
    """One row per (run, variant, path) with generation figures; empty when there are none."""
    rows = []
    runs = {rid: [{"variant": x["variant"], **{k: x.get(k) for k, _ in PATHS}}
                  for _, x in grp.iterrows()]
            for rid, grp in variants.groupby("run_id")} if "run_id" in variants.columns else {}
    eagers: dict[tuple[object, str], float | None] = {}  # the run's eager: formed once a path
    for _, r in variants.iterrows():
        for key, path in PATHS:
            d = r.get(key) if key in variants.columns else None
            if not isinstance(d, dict) or d.get("error"):
                continue
            compiled = isinstance(d.get("eager"), dict)
            same_run = runs.get(r.get("run_id"), [])
            if (r.get("run_id"), key) not in eagers:
                eagers[r.get("run_id"), key] = decode_report.run_eager(
                    same_run, key, "tokens_per_s")[0]
            eager = eagers[r.get("run_id"), key]
            acc = d.get("accuracy") if isinstance(d.get("accuracy"), dict) else {}
            mem = d.get("memory") if isinstance(d.get("memory"), dict) else {}
            rows.append({
                "run_id": r["run_id"], "variant": r["variant"], "path": path,
                "batch": d.get("batch"), "prompt": d.get("prompt"),
                "new_tokens": d.get("new_tokens"), "ttft_ms": d.get("ttft_ms"),
                "ms_per_token": d.get("per_token_ms"), "tokens_per_s": d.get("tokens_per_s"),
                "run_eager_tokens_per_s": eager,
                # Every row, eager's too, over the run's one eager: tokens_per_s divided by
                # run_eager_tokens_per_s, so the row's own figures give its speedup.
                "tokens_per_s_vs_run_eager_x": decode_report.speedup_vs_run_eager(
                    same_run, {"variant": r["variant"], key: d}, key, "tokens_per_s", eager),
                "decode_tokens_per_s": d.get("decode_tokens_per_s"),
                "tokens_per_s_vs_eager_same_process_x": d.get("tokens_per_s_speedup"),
                "ttft_vs_eager_x": d.get("ttft_speedup"), "compile_s": d.get("compile_s"),
                "break_even_tokens": (("never" if d.get("break_even_tokens") is None
                                       else f"{d['break_even_tokens']:,.0f}") if compiled
                                      else None),  # blank cell, not a quoted "-"
                "fp64_ok": acc.get("ok") if not acc.get("error") else None,
                "top1_vs_fp64": acc.get("top1_agreement"),
                "weights_mib": _mib(mem.get("weights_bytes")),
                "kv_cache_mib": _mib(mem.get("kv_cache_bytes")),
                "peak_alloc_mib": _mib(mem.get("peak_allocated_bytes")),
                # CUDA graphs set up or recorded: not compiles (docs/METHOD.md §9.13)
                "graphs_recorded_warming_up": decode_report.count(d.get("cudagraph_records")),
                "graphs_recorded_once_warm": decode_report.count(
                    d.get("later_cudagraph_records")),
                "recompiles_per_step": bool(d.get("recompiles_per_step"))})
    return pd.DataFrame(rows)


def _mib(v: object) -> float | None:
    return v / 2**20 if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def render(variants: pd.DataFrame) -> None:
    """Draw the section when any variant generated tokens."""
    table = generation_table(variants)
    if table.empty:
        return
    st.header("Token generation", anchor="generation")
    st.caption("Whole greedy generations after the timed call, in each variant's own process: "
               "time to first token (prefill), per-token latency (synchronised per step), "
               "tokens/s (batch × new tokens ÷ the generation, prefill included; decoding "
               "alone beside it). Speedups: tokens/s over the run's one eager (the run's eager: "
               "the geometric mean of eager's tokens/s over every process that generated with "
               "eager; eager's own row reads off it by its own process's share), and against the "
               "eager generations of the variant's own process (paired). Break-even counts "
               "generated tokens until the compile cost is repaid. fp64: the logits of each "
               "step, fed float64's greedy tokens, within 3 × eager's error + a floor "
               "(docs/METHOD.md §9.13). Graphs recorded: CUDA graphs set up or recorded for a new "
               "input shape, while warming up and in the timed generations; not compiles. "
               "Peak memory: GPU only.")
    st.dataframe(safe.frame(table), hide_index=True, placeholder=DASH, key="generation-table",
                 column_config={k: st.column_config.Column(v) for k, v in HEADERS.items()})
    for _, r in table[table["recompiles_per_step"]].iterrows():
        st.warning(safe.md(f"#{r['run_id']} {r['variant']}: decoding recompiled per step: the "
                           "compiled step is not one graph (a Python int position or a growing "
                           "cache?)", 500))
    for _, r in table[table["graphs_recorded_once_warm"].fillna(0) > 0].iterrows():
        st.warning(safe.md(f"#{r['run_id']} {r['variant']}: CUDA graphs were recorded during "
                           "the timed generations, so their figures include recordings and "
                           "read slower than a warm server's", 500))
