"""Rules between options of one spec that would otherwise be silently ignored.

Each rule is a pure function of a spec that ``engine.spec.normalise`` (the one validator: CLI,
dashboard and worker alike) has already type-checked; it returns the problem as ``(message,
field)`` for ``normalise`` to raise as a ``SpecError``, or None.  Kept apart from engine/spec.py
so that file stays small; the rules themselves import nothing.

* A grid over an option (``--option dynamic=none,true``, or variant names such as
  ``default@dyn=1``) decides that option for every compiled variant, so a top-level setting of
  the same option (``--dynamic true``) would be measured nowhere: both set is an error.
* Training-only options (optimizer, its implementation, learning rate, autocast, accuracy steps)
  change nothing in an inference run: set away from their defaults there, they are an error too,
  rather than a setting the user believes was measured.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from contract.schema import RunSpec

_DEFAULTS = RunSpec.defaults()
# Grid options (engine/grid.py OPTIONS) that also exist as a top-level spec option, with how the
# CLI spells the top-level one.  coordinate_descent_tuning and freezing have no top-level
# option: a grid over them cannot contradict anything.
TOP_LEVEL_GRID_OPTIONS: dict[str, str] = {"dynamic": "--dynamic", "fullgraph": "--fullgraph"}
# Options that only engine/measure/train_step.py reads (step "train").
TRAIN_ONLY: dict[str, str] = {
    "optimizer": "--optimizer",
    "optimizer_impl": "--optimizer-impl",
    "lr": "--lr",
    "autocast": "--autocast",
    "accuracy_steps": "--accuracy-steps",
}

Problem = tuple[str, str]


def grid_conflict(spec: Mapping[str, Any],
                  configs: Iterable[tuple[str, Mapping[str, Any]]]) -> Problem | None:
    """A top-level option set away from its default while a grid (variant configs) also sets it.

    ``configs``: ``(base variant, grid config)`` per variant, as ``engine.grid.parse_variant``
    returns them.  Set away from the default only: at its default the top-level option says
    nothing, and the grid's values are what the user asked for."""
    gridded = {option for _base, config in configs for option in config}
    for option, flag in TOP_LEVEL_GRID_OPTIONS.items():
        if option in gridded and spec[option] != _DEFAULTS[option]:
            return (f"{flag} ({option}={spec[option]!r}) and a grid over {option} "
                    f"(--option {option}=..., variant names with "
                    f"{'dyn' if option == 'dynamic' else 'fg'}=...) are both set: drop one "
                    f"(the grid's values would override {flag} in every compiled variant)",
                    option)
    return None


def train_only_on_inference(spec: Mapping[str, Any]) -> Problem | None:
    """A training-only option away from its default on a run that is not a training run."""
    if spec["step"] == "train":
        return None
    for option, flag in TRAIN_ONLY.items():
        if spec[option] != _DEFAULTS[option]:
            return (f"{flag} ({option}={spec[option]!r}) applies to training steps only, and "
                    f"this run's step is {spec['step']!r}: drop it, or use step 'train' "
                    "(--step train)", option)
    return None
