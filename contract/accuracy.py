"""Which tensor an accuracy verdict was decided on: the worst group's worst tensor.

A measuring process judges one or more groups of tensors against float64 (``output``; or
``loss``, ``gradients`` and ``parameters`` for a training step); each group names its worst
tensor, and the result's ``eager_error`` / ``compiled_error`` are that of the worst group's
(engine/measure/accuracy.figures). A compiled variant's worst is the tensor nearest its
allowance, eager's (nothing to allow) the one with its largest error, so two rows of one run can
be judged on different tensors; the surfaces name them (``judged_tensor``). Pure Python: stored
rows are read through it, so a malformed detail yields None, never an error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def badness(group: Mapping[str, Any]) -> float:
    """How near a group's worst tensor is to failing: compiled error over its allowance (inf for
    a compiled error that is not a number or no allowance), or eager's own error without a
    compiled one."""
    w = group.get("worst") or {}
    c, allowed = w.get("compiled_error"), w.get("allowed")
    if c is None:
        e = w.get("eager_error")
        return float(e) if isinstance(e, (int, float)) and math.isfinite(e) else 0.0
    return math.inf if c != c or not allowed else c / allowed


def worst_group(groups: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any]:
    """The group that decides the result's accuracy figures."""
    return max(groups.values(), key=badness)


def judged_tensor(row: Mapping[str, Any]) -> str | None:
    """The tensor a stored variant row's accuracy figures are of, or None when its detail does
    not say (a result from before the float64 reference, or a hand-edited row)."""
    detail = row.get("accuracy")
    groups = detail.get("groups") if isinstance(detail, Mapping) else None
    if not isinstance(groups, Mapping) or not groups:
        return None
    if not all(isinstance(g, Mapping) and isinstance(g.get("worst") or {}, Mapping)
               for g in groups.values()):
        return None
    try:
        tensor = (worst_group(groups).get("worst") or {}).get("tensor")
    except TypeError:  # errors stored as text: no ordering
        return None
    return tensor if isinstance(tensor, str) else None
