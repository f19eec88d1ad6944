"""Errors torch raises that we understand, mapped to what they mean for the user's run.

One function (``describe``) turns a stored error into the text every view shows: the
explanation first, then torch's own message, unchanged, so nothing is hidden. The CLI (``engine
show`` through engine/analysis/forensics_report.py), the dashboard's start-up chart and the HTML report
all call it; new runs store the explanation with the error (engine/measure/startup.py), runs stored
before it get the same text at display time because the mapping reads the raw message.

Pure Python: no torch, so every side can import it.
"""

from __future__ import annotations

from typing import Any

# torch/_inductor/cudagraph_trees.py: a replay reused the memory of an output still alive.
CUDAGRAPH_OVERWRITTEN = "accessing tensor output of cudagraphs that has been overwritten"


def explain(error: Any, *, strategy: str | None = None, blocks: Any = None) -> str | None:
    """The explanation of a known ``error`` (None when it is not one we know). ``strategy``:
    the start-up strategy it came from ("regional"...); ``blocks``: how many blocks regional
    compilation compiled, where known."""
    text = "" if error is None else str(error)
    if CUDAGRAPH_OVERWRITTEN not in text.lower():
        return None
    if strategy == "regional":
        n = (f"each of the {blocks} blocks" if isinstance(blocks, int) and blocks > 1
             else "each of the model's repeated blocks")
        return ("regional compilation with CUDA graphs: " + n + " reuses one compiled graph, "
                "whose captured outputs the next block's replay overwrites while the residual "
                "stream still holds them (CUDA-graph trees take every call of the compiled "
                "block for a new step), so torch refuses the read. Measure regional "
                "compilation with mode 'default' (or 'max-autotune-no-cudagraphs'), or clone "
                "each block's output outside the compiled block")
    return ("CUDA graphs: an output of a captured graph was read after a later replay of the "
            "same graph overwrote it (its output is kept across calls). Clone the output "
            "outside torch.compile, call torch.compiler.cudagraph_mark_step_begin() once per "
            "step, or use a mode without CUDA graphs")


def describe(error: Any, *, strategy: str | None = None, blocks: Any = None,
             explanation: str | None = None) -> str:
    """What to show for ``error``: the explanation (given, or looked up) and then torch's own
    message; the message alone when the error is not a known one."""
    raw = "" if error is None else str(error)
    why = explanation or explain(raw, strategy=strategy, blocks=blocks)
    return f"{why}. torch said: {raw}" if why else raw


def startup_error(strategy: str, entry: dict[str, Any] | None) -> str | None:
    """The error text of one start-up strategy's stored entry (None: it has no error)."""
    entry = entry or {}
    if not entry.get("error"):
        return None
    return describe(entry["error"], strategy=strategy, blocks=entry.get("blocks"),
                    explanation=entry.get("explanation"))
