"""Number formatting shared by the CLI, verdicts, charts, tables and the report (pure Python)."""

from __future__ import annotations

import math
from typing import Any


def is_num(value: Any) -> bool:
    """True for a finite real number (None, NaN, inf and non-numbers are not)."""
    if value is None or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError, OverflowError):
        return False


def finite(value: Any) -> float | None:
    """The value as a float when it is a finite int or float, else None; strings and booleans
    are not numbers here, as they are in no stored figure, nor an int beyond a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def positive(value: Any) -> float | None:
    """``finite`` above 0: a time, a ratio."""
    value = finite(value)
    return value if value is not None and value > 0 else None


def num(value: Any) -> float | None:
    """The value as a float, or None when it is missing/NaN/not a number."""
    return float(value) if is_num(value) else None


def ms(value: Any) -> str:
    """A duration given in milliseconds, in the unit a reader takes in at a glance."""
    if not is_num(value):
        return "–"
    v = float(value)
    if abs(v) >= 1000:
        return f"{v / 1000:.3g} s"
    if abs(v) >= 1:
        return f"{v:.3g} ms"
    if abs(v) >= 0.001:
        return f"{v:.3g} ms"
    return f"{v * 1000:.3g} µs"


def seconds(value: Any) -> str:
    """A duration given in seconds."""
    if not is_num(value):
        return "–"
    return ms(float(value) * 1000.0)


def ratio(value: Any) -> str:
    """A speed-up factor such as ``1.80×``."""
    if not is_num(value):
        return "–"
    v = float(value)
    return f"{v:.2f}×" if v < 100 else f"{v:.0f}×"


def calls(value: Any) -> str:
    """A call count, rounded up (you cannot make 0.3 of a call)."""
    if not is_num(value):
        return "never"
    v = math.ceil(float(value))
    return f"{v:,} call" + ("" if v == 1 else "s")


def mib(value: Any) -> str:
    """Bytes as MiB."""
    if not is_num(value):
        return "–"
    return f"{float(value) / 2**20:,.1f} MiB"
