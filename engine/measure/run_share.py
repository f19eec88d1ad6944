"""Facts that every measuring process of a run would compute alike, computed once per run.

Each compiled variant's cold process used to trace the model with ``torch._dynamo.explain``
for its graph-break report, and to profile eager for its kernels and device time per call,
inside its timing slot, when nothing else may run: seconds of every cold process's slot for a
model like BERT-base (docs/measurements/2026-12-04-time-to-answer.md).  Neither depends on the
variant: ``explain`` takes the model and inputs only (no
mode, no options), and eager is the same model on the same inputs in every process.  So the
first process that needs one computes it and leaves it in the run's work folder
(``COMPILELAB_RUN_DIR``, the runner's private temporary folder), and a later process reads it
instead of computing it again.  Processes time one after another in plan order (eager first),
so the later ones find it; a process that finds nothing usable (the first one failed, or a
child started by hand) computes it itself, as before.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENV = "COMPILELAB_RUN_DIR"
NAMES = ("explain", "eager_profile")


def _path(name: str) -> Path | None:
    if name not in NAMES:
        raise ValueError(f"unknown shared fact {name!r}")
    folder = os.environ.get(ENV)
    return Path(folder) / f"{name}.json" if folder else None


def once(name: str, compute: Callable[[], dict[str, Any]],
         valid: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The run's ``name``: read if an earlier process left one that ``valid`` accepts, else
    ``compute()``-d here and left for the later ones (written whole, renamed into place)."""
    path = _path(name)
    if path is not None:
        try:
            found = json.loads(path.read_text())
            if isinstance(found, dict) and valid(found):
                return found
        except (OSError, ValueError):
            pass
    value = compute()
    if path is not None:
        try:
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(value, default=str))
            os.replace(tmp, path)
        except OSError:  # the next process computes it again
            pass
    return value


def _count(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _break_ok(b: Any) -> bool:
    return (isinstance(b, dict) and set(b) == {"reason", "file", "line", "count"}
            and isinstance(b["reason"], str) and len(b["reason"]) <= MAX_REASON
            and (b["file"] is None or isinstance(b["file"], str) and len(b["file"]) <= 4096)
            and (b["line"] is None or _count(b["line"])) and _count(b["count"]))


MAX_REASON = 2000
"""``explain_breaks`` cuts a reason to 1000 characters and adds at most 200 of code."""


def explained_ok(found: dict[str, Any]) -> bool:
    """Exactly the shape ``engine.measure.signals.explain_breaks`` returns: counts, and breaks of a
    reason, a file and line (or None), and a count each."""
    breaks = found.get("graph_breaks")
    return (set(found) == {"graph_count", "graph_break_count", "graph_breaks"}
            and _count(found["graph_count"]) and _count(found["graph_break_count"])
            and isinstance(breaks, list) and len(breaks) <= 10_000
            and all(_break_ok(b) for b in breaks))


def eager_profile_ok(found: dict[str, Any]) -> bool:
    """Exactly the two figures of ``engine.measure.signals.profile_calls``: finite numbers >= 0, or
    None (no GPU)."""
    return set(found) == {"kernels_per_call", "device_busy_ms_per_call"} and all(
        v is None or isinstance(v, int | float) and not isinstance(v, bool)
        and math.isfinite(v) and v >= 0 for v in found.values())
