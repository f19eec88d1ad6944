"""A training step split into its phases, in words, for ``engine show``: forward (zero_grad,
forward, loss), backward and the optimizer step of each variant, and of eager's twin in the same
process (engine/measure/train_step.py ``phase_times``). Reads the contract's variant rows."""

from __future__ import annotations

from typing import Any

from contract import fmt

PHASES = ("forward", "backward", "optimizer")


def _ms(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def split_text(phases: dict[str, Any]) -> str | None:
    """``forward 1.2 ms, backward 2.4 ms, optimizer 0.3 ms (step 3.9 ms)``; seconds past 1 s."""
    parts = [(p, _ms(phases.get(f"{p}_ms"))) for p in PHASES]
    if any(ms is None for _, ms in parts):
        return None
    step = _ms(phases.get("step_ms"))
    return ", ".join(f"{p} {fmt.seconds(ms / 1e3)}" for p, ms in parts) + (
        f" (step {fmt.seconds(step / 1e3)})" if step is not None else "")


def lines(rows: list[dict[str, Any]]) -> list[str]:
    """One line per variant that has the figure; nothing for inference runs."""
    out: list[str] = []
    for r in rows:
        fig = r.get("train_phases_ms")
        if not isinstance(fig, dict):
            continue
        if fig.get("error"):
            out.append(f"  training step split [{r['variant']}]: not measured: {fig['error']}")
            continue
        mine = split_text(fig.get("variant") or {})
        if mine is None:
            continue
        if not out:
            v = fig.get("variant") or {}
            how = (f"mean of the middle {v['kept']} of {v.get('steps')} steps after timing, "
                   "by step time, so the phases add up to the step" if v.get("kept") else
                   f"median of {v.get('steps')} steps after timing")  # results before 'kept'
            out.append(f"  training step split ({how}; marks between the phases, nothing "
                       "synchronised inside a step):")
        text = f"    {r['variant']}: {mine}"
        eager = split_text(fig.get("eager") or {}) if isinstance(fig.get("eager"), dict) else None
        if eager:
            text += f"; eager in the same process: {eager}"
        out.append(text)
    return out
