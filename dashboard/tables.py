"""Derived tables (pure pandas, no Streamlit): what the pages show and the CSV download holds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from contract import fmt
from contract.recompile import phase_words
from contract.schema import EXPORTED
from engine.analysis.forensics_report import phase_segments
from storage.queue_recovery import silent_for_s

MiB = 2**20

# (source column, display/CSV column): identity, then every exported figure of the one contract
# (contract/schema.py EXPORT), units in the names so a CSV stands on its own.
VARIANT_COLUMNS = [("run_id", "run_id"), ("variant", "variant"), ("status", "status")] + [
    (f.name, f.csv) for f in EXPORTED if f.csv]


def variants_table(variants: pd.DataFrame, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (run, variant) with the headline figures; the CSV download is this table.

    Adds model/dims/dtype/device/gpu from ``runs`` when given so the CSV is self-describing.
    Memory is converted to MiB; ``break_even_calls`` is empty when compiling never pays off.
    """
    if variants is None or variants.empty:
        return pd.DataFrame(columns=[dst for _, dst in VARIANT_COLUMNS])
    out = pd.DataFrame(index=variants.index)
    for src, dst in VARIANT_COLUMNS:
        out[dst] = variants[src] if src in variants.columns else None
    for c in ("peak_allocated_mib", "peak_reserved_mib"):
        out[c] = pd.to_numeric(out[c], errors="coerce") / MiB
    if runs is not None and not runs.empty:
        keep = [c for c in ("run_id", "model", "dims_label", "dtype", "device", "gpu",
                            "torch_version") if c in runs.columns]
        out = runs[keep].merge(out, on="run_id", how="right")
    return out.reset_index(drop=True)


def graph_breaks_table(graph_breaks: pd.DataFrame) -> pd.DataFrame:
    """Graph breaks per variant: reason, user ``file:line``, count (de-duplicated, summed)."""
    cols = ["run_id", "variant", "reason", "location", "count"]
    if graph_breaks is None or graph_breaks.empty:
        return pd.DataFrame(columns=cols)
    df = graph_breaks.copy()
    line = df["line"].map(lambda v: f":{int(v)}" if fmt.is_num(v) else "")
    df["location"] = df["file"].fillna("").astype(str) + line
    df["count"] = pd.to_numeric(df["count"], errors="coerce").fillna(1).astype(int)
    df["reason"] = df["reason"].fillna("").astype(str)
    out = (df.groupby(["run_id", "variant", "reason", "location"], as_index=False, sort=False)
           ["count"].sum())
    return out.sort_values(["run_id", "variant", "count"], ascending=[True, True, False])[cols]


def breaks_without_reason(variants: pd.DataFrame, graph_breaks: pd.DataFrame | None) -> str:
    """A sentence for variants whose break count is above the breaks stored with a reason (a
    run stored before the engine named breaks outside the model's trace, such as a compiled
    optimizer step's): never "no graph breaks" when some were counted. "" when none."""
    if variants is None or variants.empty or "graph_break_count" not in variants.columns:
        return ""
    named: dict[tuple[Any, Any], float] = {}
    if graph_breaks is not None and not graph_breaks.empty:
        counts = pd.to_numeric(graph_breaks.get("count"), errors="coerce").fillna(1)
        for (rid, var), n in counts.groupby([graph_breaks["run_id"],
                                             graph_breaks["variant"]]).sum().items():
            named[(rid, var)] = float(n)
    out = []
    for _, r in variants.iterrows():
        counted = pd.to_numeric(pd.Series([r.get("graph_break_count")]), errors="coerce")[0]
        if counted == counted and counted > named.get((r["run_id"], r["variant"]), 0):
            out.append(f"#{r['run_id']} {r['variant']}: {counted:.0f}")
    if not out:
        return ""
    return ("Graph breaks counted by dynamo without a recorded reason (stored before the "
            "engine named breaks outside the model's trace, e.g. in a compiled optimizer "
            "step): " + "; ".join(out) + ".")


def recompiles_table(recompiles: pd.DataFrame) -> pd.DataFrame:
    """Recompiles per variant with their guard-failure reason and when they happened."""
    cols = ["run_id", "variant", "reason", "call_index", "dim_value"]
    if recompiles is None or recompiles.empty:
        return pd.DataFrame(columns=cols)
    df = recompiles.copy()
    for c in cols:
        if c not in df.columns:
            df[c] = None
    df = df[cols].reset_index(drop=True)
    # no call number: the recompile came outside the numbered warm-up calls, in the phase
    # the engine stored (the timed rounds, token generation, profiling); no swept value: not a
    # sweep. Say so rather than print "None".
    calls = pd.to_numeric(df["call_index"], errors="coerce")
    phases = list(recompiles["phase"]) if "phase" in recompiles.columns else [None] * len(df)
    df["call_index"] = [f"{int(v)}" if pd.notna(v) else
                        (phase_words(ph) or "outside the numbered warm-up calls")
                        for v, ph in zip(calls, phases, strict=True)]
    values = pd.to_numeric(df["dim_value"], errors="coerce")
    if values.isna().all():
        return df.drop(columns=["dim_value"])
    df["dim_value"] = [f"{v:g}" if pd.notna(v) else "–" for v in values]
    return df


def runs_without_compiled_results(runs: pd.DataFrame, variants: pd.DataFrame) -> list[int]:
    """Ids of runs where no compiled variant finished ok: graph breaks and recompiles are
    unknown there (not zero)."""
    if runs is None or runs.empty:
        return []
    ok = set()
    if variants is not None and not variants.empty:
        done = variants[(variants["status"] == "ok") & (variants["variant"] != "eager")]
        ok = {int(r) for r in done["run_id"]}
    return [int(r) for r in runs["run_id"] if int(r) not in ok]


def failed_variants(variants: pd.DataFrame) -> pd.DataFrame:
    """Variants that did not finish ok, with kind, reason and stderr tail."""
    cols = ["run_id", "variant", "status", "failure_kind", "error", "stderr_tail"]
    if variants is None or variants.empty or "status" not in variants.columns:
        return pd.DataFrame(columns=cols)
    df = variants[variants["status"] != "ok"].copy()
    for c in cols:
        if c not in df.columns:
            df[c] = None
    return df[cols].reset_index(drop=True)


# torch's nested totals, shown as the exclusive phases of the chart and of show (a table of
# "dynamo_total 16.9, backend 14.5, inductor 8.6, codegen 4.0" read as 44 s of a 17.6 s call).
NESTED_PHASES = ("dynamo_total", "backend", "inductor", "codegen")
# Further times torch reports, inside the phases above or after them, in plain words.
OTHER_PHASES = {"triton_compile": "of which Triton kernel compile",
                "autotune": "of which autotuning", "cudagraphify": "CUDA graph recording"}


def compile_phases_table(variants: pd.DataFrame) -> pd.DataFrame:
    """Compile-phase times (s) per compile variant: the exclusive phases of the cold first call
    (``phase_segments``, as the chart and ``show`` name them), then the other times torch
    reported."""
    if variants is None or variants.empty or "compile_phases_s" not in variants.columns:
        return pd.DataFrame(columns=["run_id", "variant"])
    rows = []
    for _, r in variants.iterrows():
        phases = r["compile_phases_s"] if isinstance(r["compile_phases_s"], dict) else {}
        numeric = {k: float(v) for k, v in phases.items() if fmt.is_num(v)}
        if not numeric:
            continue
        row: dict[str, Any] = {"run_id": r["run_id"], "variant": r["variant"]}
        if any(k in numeric for k in NESTED_PHASES):
            first = r.get("first_call_cold_s")
            row |= {f"{k} (s)": v for k, v in phase_segments(
                numeric, float(first) if fmt.is_num(first) else None).items()}
        row |= {f"{OTHER_PHASES.get(k, k)} (s)": v for k, v in numeric.items()
                if k not in NESTED_PHASES}
        rows.append(row)
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=["run_id", "variant"])


def cudagraph_skips_table(variants: pd.DataFrame) -> pd.DataFrame:
    """Why CUDA graphs were skipped (reduce-overhead runs without them: no launch savings)."""
    cols = ["run_id", "variant", "reason"]
    if variants is None or variants.empty or "cudagraph_skips" not in variants.columns:
        return pd.DataFrame(columns=cols)
    rows = []
    for _, r in variants.iterrows():
        for skip in r["cudagraph_skips"] if isinstance(r["cudagraph_skips"], list) else []:
            reason = skip.get("reason") if isinstance(skip, dict) else skip
            rows.append({"run_id": r["run_id"], "variant": r["variant"], "reason": str(reason)})
    return pd.DataFrame(rows, columns=cols)


# What a reader scans for first (which model, did compiling pay) before where it ran: at
# 1024-1440 px the grid shows about eight columns before it scrolls sideways.
# What decides a run first (its speedup and whether its own verdict trusts it), then where and
# when it ran; the table scrolls sideways to the rest.
RUN_COLUMNS = ["run_id", "model", "status", "best_speedup", "cautions", "dims_label", "gpu",
               "dtype", "created_at", "variants", "device", "torch_version", "tags", "note"]
CAUTION_SEP = " · "
DASH = "–"
NOTE_CHARS = 120  # the table shows the note's first line, cut; the run page shows all of it


def _first_line(text) -> str:
    line = next((x.strip() for x in str(text).splitlines() if x.strip()), "")
    return line if len(line) <= NOTE_CHARS else line[: NOTE_CHARS - 1] + "…"


def runs_table(runs: pd.DataFrame, cautions: Mapping[int, list[str]] | None = None
               ) -> pd.DataFrame:
    """The run-history table's columns, in display order: tags joined, the planned variants
    (from the spec), the note's first line, and the run's cautions about its own figures
    (``cautions``: run id -> ``engine.analysis.verdict.distrust``; "none" when its verdict has
    none, "–" for a run without results); empty text cells read "–" (the column's tooltip
    says why), never ``None``."""
    if runs is None or runs.empty:
        return pd.DataFrame(columns=RUN_COLUMNS)
    out = pd.DataFrame(index=runs.index)
    for c in RUN_COLUMNS:
        out[c] = runs[c] if c in runs.columns else None
    out["tags"] = out["tags"].map(lambda t: ", ".join(t) if isinstance(t, list | tuple) else
                                  ("" if t is None or t != t else str(t)))
    specs = runs["spec"] if "spec" in runs.columns else pd.Series(None, index=runs.index)
    out["variants"] = specs.map(lambda s: ", ".join(map(str, s.get("variants") or []))
                                if isinstance(s, dict) and isinstance(s.get("variants"), list)
                                else "")
    out["note"] = out["note"].map(lambda n: "" if n is None or n != n else _first_line(n))
    said = cautions or {}
    out["cautions"] = [(CAUTION_SEP.join(said[int(r)]) or "none") if int(r) in said else ""
                       for r in out["run_id"]]
    if "heartbeat_at" in runs.columns:  # a process that died without ending its run
        out["status"] = [f"{s} · no heartbeat" if silent_for_s(s, beat) is not None else s
                         for s, beat in zip(out["status"], runs["heartbeat_at"], strict=True)]
    for c in ("model", "dims_label", "dtype", "device", "gpu", "torch_version", "status",
              "variants", "tags", "note", "cautions"):
        out[c] = out[c].map(lambda v: DASH if v is None or v != v or v == "" else v)
    return out.reset_index(drop=True)


ENV_ORDER = ["host", "os", "cpu", "gpu_name", "gpu", "gpu_count", "driver", "cuda", "torch",
             "triton", "python", "commit"]


def environment_rows(env: dict | None) -> pd.DataFrame:
    """A run's environment fingerprint as (key, value) rows, the usual keys first."""
    env = env if isinstance(env, dict) else {}
    keys = [k for k in ENV_ORDER if k in env] + sorted(k for k in env if k not in ENV_ORDER)
    return pd.DataFrame({"key": keys, "value": [_flat(env[k]) for k in keys]})


def _flat(v) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k}={_flat(x)}" for k, x in v.items())
    if isinstance(v, list | tuple):
        return ", ".join(_flat(x) for x in v)
    return "" if v is None else str(v)
