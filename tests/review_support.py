"""Runs for the review and baseline tests, fabricated from one shipped H200 run (bundle form)
and imported through storage.bundle: a week of a config, with a 40 % slowdown appearing at a
known run, a new commit and a new torch there."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from storage import bundle

BUNDLE = Path(__file__).resolve().parents[1] / "data" / "h200_bundle.json"
SERIES = ("warmup_ms", "samples_ms", "eager_samples_ms", "pipelined_ms", "eager_pipelined_ms")


def _template() -> dict[str, Any]:
    """The bundle's first 'repeat-mlp' run (eager + default, four processes), series cut short:
    the tests read figures, not samples."""
    runs = json.loads(BUNDLE.read_text())["runs"]
    run = copy.deepcopy(next(r for r in runs if "repeat-mlp" in r["tags"]))
    for v in run["variants"]:
        for key in SERIES:
            if isinstance(v.get(key), list):
                v[key] = v[key][:20]
    return run


def _scale(run: dict[str, Any], factor: float) -> None:
    """Make the compiled variant ``factor`` × as fast (speedup, interval, per-process ones)."""
    for v in run["variants"]:
        if v["variant"] == "eager":
            continue
        stats, inner = v["stats"], v["extra"]["stats"]
        for key in ("speedup", "speedup_ci_low", "speedup_ci_high"):
            stats[key] *= factor
        inner["process_speedups"] = [s * factor for s in inner["process_speedups"]]


def make_run(day: str, tags: list[str], *, factor: float = 1.0, commit: str = "aaaa1111",
             torch: str = "2.11.0+cu130", model: str | None = None) -> dict[str, Any]:
    run = _template()
    run["created_at"] = f"{day}T09:00:00+00:00"
    run["started_at"] = f"{day}T09:00:01+00:00"
    run["finished_at"] = f"{day}T09:02:00+00:00"
    run["tags"] = tags
    run["environment"] = {**run["environment"], "commit": commit, "torch": torch}
    if model is not None:
        run["model"] = run["spec"]["model"] = model
    _scale(run, factor)
    return run


def week_of_runs(tag: str = "nightly") -> list[dict[str, Any]]:
    """Three runs of one config; the third is 40 % slower, at commit bbbb2222 and torch 2.12."""
    return [make_run("2026-11-02", [tag]),
            make_run("2026-11-04", [tag], factor=1.01),
            make_run("2026-11-06", [tag], factor=0.6, commit="bbbb2222",
                     torch="2.12.0+cu130")]


def import_runs(db: Any, runs: list[dict[str, Any]]) -> list[int]:
    return bundle.import_bundle(db, {"format": bundle.BUNDLE_FORMAT,
                                     "version": bundle.BUNDLE_VERSION, "runs": runs})
