"""Where in its measuring process a stored recompile happened, in words, for ``show``, the
dashboard's tables and the report. The child records the phase (engine/measure/child.py) where
neither a warm-up call index nor a sweep value places the recompile; a stored row is outside
input, so only the known phases are said and anything else is nothing."""

from __future__ import annotations

from typing import Any

PHASES = {
    "steady": "during the timed rounds: a timed call held this compile",
    "decode": "while generating tokens, after timing",
    "generate": "in transformers' generate(), after timing",
    "mix": "in the shape-mix replay, after timing",
    "profile": "in the profiling pass, after timing",
}


def phase_words(value: Any) -> str | None:
    """The stored phase in words, or None where it is not one the engine writes."""
    return PHASES.get(value) if isinstance(value, str) else None
