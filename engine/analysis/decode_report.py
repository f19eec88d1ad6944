"""Token generation in words, for ``engine show``: per variant, time to first token, per-token
latency, tokens/s, and for compiled variants the speedups over eager in the same process, the
compile cost and the break-even in tokens; a warning when decoding recompiles per step. Reads
the contract's variant rows (plain dicts) like ``engine.analysis.show``."""

from __future__ import annotations

from typing import Any


def _f(v: Any, fmt: str, none: str = "-") -> str:
    return none if not isinstance(v, (int, float)) or isinstance(v, bool) else fmt.format(v)


PATHS = (("decode", "generation"),
         ("hf_generate", "generation through transformers generate(), static cache"))


def lines(rows: list[dict[str, Any]]) -> list[str]:
    """Nothing for runs without generation figures."""
    return [line for key, title in PATHS for line in _lines(rows, key, title)]


def _lines(rows: list[dict[str, Any]], key: str, title: str) -> list[str]:
    out: list[str] = []
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
                       f"{d.get('warmup_generations')} warm-up ones):")
        text = (f"    {r['variant']}: TTFT {_f(d.get('ttft_ms'), '{:.2f}')} ms, "
                f"{_f(d.get('per_token_ms'), '{:.3f}')} ms/token "
                f"(p90 {_f(d.get('per_token_p90_ms'), '{:.3f}')}), "
                f"{_f(d.get('tokens_per_s'), '{:.1f}')} tokens/s "
                f"({_f(d.get('decode_tokens_per_s'), '{:.1f}')} decoding alone)")
        if isinstance(d.get("eager"), dict):
            be = d.get("break_even_tokens")
            text += (f"; vs eager in the same process: tokens/s "
                     f"{_f(d.get('tokens_per_s_speedup'), '{:.2f}x')}, TTFT "
                     f"{_f(d.get('ttft_speedup'), '{:.2f}x')}; compile cost "
                     f"{_f(d.get('compile_s'), '{:.1f}')} s, break-even "
                     + ("never" if be is None else f"{be:,.0f} tokens"))
        out.append(text)
        if d.get("recompiles_per_step"):
            out.append(f"    RECOMPILES WHILE DECODING [{r['variant']}]: "
                       f"{d.get('decode_recompiles')} decode steps compiled during warm-up "
                       f"(steps {d.get('recompiled_steps')}), {d.get('later_recompiles')} "
                       "compiles after warm-up: the step is not one graph (a Python int "
                       "position or a growing cache?)")
    return out
