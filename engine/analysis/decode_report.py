"""Token generation in words, for ``engine show``: per variant, time to first token, per-token
latency, tokens/s, and for compiled variants the speedups, the compile cost and the break-even in
tokens; a warning when decoding recompiles per step; the generation's accuracy against float64
with its tolerance, and its memory. Reads the contract's variant rows (plain dicts) like
``engine.analysis.show``.

One eager, as everywhere in the product (engine/analysis/variant_stats.py): eager's tokens/s is
read in eager's own process and, alternating with the variant, in each compiled variant's
process; the run's eager is the geometric mean of all of them, and a variant's tokens/s speedup
divides by it. The paired speedup (the variant against the eager of its own process) is kept
beside it: the host's state in that process cancels there."""

from __future__ import annotations

import math
from typing import Any

from contract.fmt import positive


def _f(v: Any, fmt: str, none: str = "-") -> str:
    return none if not isinstance(v, (int, float)) or isinstance(v, bool) else fmt.format(v)


PATHS = (("decode", "generation"),
         ("hf_generate", "generation through transformers generate(), static cache"))


def run_eager(rows: list[dict[str, Any]], key: str, figure: str) -> tuple[float | None, int]:
    """The run's eager ``figure`` (``tokens_per_s``, ``decode_tokens_per_s``) of path ``key``:
    the geometric mean over every process that generated with eager (eager's own, and the
    eager generations of each compiled variant's process), and how many there were."""
    values = []
    for r in rows:
        d = r.get(key)
        if not isinstance(d, dict) or d.get("error"):
            continue
        side = d if r.get("variant") == "eager" else d.get("eager")
        v = positive(side.get(figure)) if isinstance(side, dict) else None
        if v is not None:
            values.append(v)
    if not values:
        return None, 0
    return math.exp(sum(math.log(v) for v in values) / len(values)), len(values)


def speedup_vs_run_eager(rows: list[dict[str, Any]], row: dict[str, Any], key: str,
                         figure: str, eager: float | None = None) -> float | None:
    """A variant's ``figure`` over the run's eager one (None where either is missing);
    ``eager``: that run's eager when the caller has already formed it from ``rows``."""
    if eager is None:
        eager, _ = run_eager(rows, key, figure)
    d = row.get(key)
    mine = positive(d.get(figure)) if isinstance(d, dict) else None
    return mine / eager if mine is not None and eager else None


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``show --json``'s generation figures per path: the run's eager tokens/s (and over how
    many processes) and every generating variant's tokens/s over it, eager's row included, so
    each speedup is its row's tokens/s over the one eager shown. Empty without generation."""
    out: dict[str, Any] = {}
    for key, _ in PATHS:
        eager, n = run_eager(rows, key, "tokens_per_s")
        per = {r["variant"]: {"tokens_per_s": positive(r[key].get("tokens_per_s")),
                              "vs_run_eager_x": speedup_vs_run_eager(rows, r, key,
                                                                     "tokens_per_s", eager)}
               for r in rows if isinstance(r.get(key), dict) and not r[key].get("error")}
        if per:
            out[key] = {"run_eager_tokens_per_s": eager, "eager_processes": n, "variants": per}
    return out


def _mib(v: Any) -> str:
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return "-"
    return f"{v / 2**20:.0f} MiB" if v >= 2**20 else f"{v / 1024:.0f} KiB"


def accuracy_line(variant: str, acc: Any) -> str | None:
    """``accuracy vs float64 [v]: ok: worst step 3, error 0.02 <= allowed 0.031 (...)``."""
    if not isinstance(acc, dict):
        return None
    if acc.get("error"):
        return f"    accuracy vs float64 [{variant}]: not judged: {acc['error']}"
    w = acc.get("worst") if isinstance(acc.get("worst"), dict) else {}
    mine = w.get("compiled_error") if w.get("compiled_error") is not None else w.get(
        "eager_error")
    text = (f"    accuracy vs float64 [{variant}]: {'ok' if acc.get('ok') else 'FAILED'}: worst "
            f"{w.get('tensor')}, error {_f(mine, '{:.3g}')}")
    if w.get("compiled_error") is not None:
        text += (f" <= allowed {_f(w.get('allowed'), '{:.3g}')}" if w.get("ok") else
                 f" > allowed {_f(w.get('allowed'), '{:.3g}')}")
        text += (f" ({_f(acc.get('multiplier'), '{:g}')} x eager's "
                 f"{_f(w.get('eager_error'), '{:.3g}')} + {_f(acc.get('floor'), '{:g}')} x the "
                 "float64 logits' RMS)")
    agree = _f(acc.get("top1_agreement"), "{:.0%}")
    text += (f"; top token as float64's on {agree} of {acc.get('steps')} steps"
             + (f" (eager {_f(acc.get('eager_top1_agreement'), '{:.0%}')})"
                if acc.get("eager_top1_agreement") is not None else ""))
    return text


def memory_line(variant: str, mem: Any) -> str | None:
    if not isinstance(mem, dict):
        return None
    peak = mem.get("peak_allocated_bytes")
    return (f"    memory [{variant}]: weights {_mib(mem.get('weights_bytes'))}, KV cache "
            f"{_mib(mem.get('kv_cache_bytes'))}, "
            + (f"peak {_mib(peak)} allocated ({_mib(mem.get('peak_reserved_bytes'))} reserved) "
               "while generating" if peak is not None else "peak: GPU only"))


def count(v: Any) -> int | None:
    """A stored count as an int, or None where it is not one (hostile rows: text, booleans,
    negative numbers)."""
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


KEPT = 20  # decode steps shown by number (the engine stores one more: engine/measure/decode.py)


def graphs_line(variant: str, d: dict[str, Any]) -> str | None:
    """CUDA graphs set up or recorded while generating: not compiles (they were counted as such
    before), but work paid per new input shape; any once warm are inside the timed figures."""
    warm, later = count(d.get("cudagraph_records")), count(d.get("later_cudagraph_records"))
    if not warm and not later:
        return None
    steps = d.get("recorded_steps")
    steps = [s for s in steps if count(s) is not None] if isinstance(steps, list) else []
    shown = ", ".join(map(str, steps[:KEPT])) + (", ..." if len(steps) > KEPT else "")
    text = (f"    CUDA graphs [{variant}]: {warm or 0} set-ups or recordings while warming up"
            + (f" (first generation's decode steps {shown})" if steps else "")
            + f", {later or 0} once warm")
    if later:
        text += ": the timed generations include recordings, so their figures are slower than a " \
                "warm server's"
    else:
        text += " (CUDA-graph trees set up and record a graph for each new input shape: paid " \
                "while warming up, not per token once warm)"
    return text


def lines(rows: list[dict[str, Any]]) -> list[str]:
    """Nothing for runs without generation figures."""
    return [line for key, title in PATHS for line in _lines(rows, key, title)]


def _lines(rows: list[dict[str, Any]], key: str, title: str) -> list[str]:
    out: list[str] = []
    eager, n = run_eager(rows, key, "tokens_per_s")
    for r in rows:
        d = r.get(key)
        if not isinstance(d, dict):
            continue
        if d.get("error"):
            out.append(f"  {title} [{r['variant']}]: not measured: {d['error']}")
            continue
        if not out or not out[0].startswith(f"  {title} ("):
            out.insert(0, f"  {title} (batch {d.get('batch')}, prompt {d.get('prompt')}, "
                       f"{d.get('new_tokens')} new tokens, greedy; median of "
                       f"{d.get('repeats')} timed generations after "
                       f"{d.get('warmup_generations')} warm-up ones; the run's eager "
                       f"{_f(eager, '{:.1f}')} tokens/s (geometric mean of {n} processes' "
                       "eager generations)):")
        vs_run = speedup_vs_run_eager(rows, r, key, "tokens_per_s", eager)
        text = (f"    {r['variant']}: TTFT {_f(d.get('ttft_ms'), '{:.2f}')} ms, "
                f"{_f(d.get('per_token_ms'), '{:.3f}')} ms/token "
                f"(p90 {_f(d.get('per_token_p90_ms'), '{:.3f}')}), "
                f"{_f(d.get('tokens_per_s'), '{:.1f}')} tokens/s "
                f"({_f(d.get('decode_tokens_per_s'), '{:.1f}')} decoding alone)")
        if r.get("variant") == "eager":
            # Eager's own process is one of the processes the run's eager is formed from, so it
            # reads off that figure; said, so nobody divides a compiled row by this one.
            text += (f"; {_f(vs_run, '{:.2f}x')} the run's eager in its own process")
        if isinstance(d.get("eager"), dict):
            be = d.get("break_even_tokens")
            text += (f"; tokens/s {_f(vs_run, '{:.2f}x')} vs the run's eager, "
                     f"{_f(d.get('tokens_per_s_speedup'), '{:.2f}x')} paired in its own "
                     f"process; TTFT {_f(d.get('ttft_speedup'), '{:.2f}x')} (paired); compile "
                     f"cost {_f(d.get('compile_s'), '{:.1f}')} s, break-even "
                     + ("never" if be is None else f"{be:,.0f} tokens"))
        out.append(text)
        out += [x for x in (accuracy_line(r["variant"], d.get("accuracy")),
                            memory_line(r["variant"], d.get("memory")),
                            graphs_line(r["variant"], d)) if x]
        if d.get("recompiles_per_step"):
            out.append(f"    RECOMPILES WHILE DECODING [{r['variant']}]: "
                       f"{d.get('decode_recompiles')} decode steps compiled during warm-up "
                       f"(steps {d.get('recompiled_steps')}), {d.get('later_recompiles')} "
                       "compiles after warm-up: the step is not one graph (a Python int "
                       "position or a growing cache?)")
    return out
