"""The run verdict for the dashboard: ``engine.analysis.verdict.decide`` on a run's DataFrame rows.

The verdict itself lives in ``engine/analysis/verdict.py`` (one verdict for CLI, dashboard, report and
charts); this module only turns the ``variants`` DataFrame into the rows it reads.
"""

from __future__ import annotations

import pandas as pd

from contract import fmt
from engine.analysis.verdict import Verdict, busy_host_warning, decide

__all__ = ["Verdict", "busy_host_warning", "records", "verdict_for_run"]


def records(variants: pd.DataFrame) -> list[dict]:
    """The frame's rows as dicts, NaN read as None (the verdict's notion of "not measured")."""
    out = []
    for row in variants.to_dict("records"):
        out.append({k: (None if isinstance(v, float) and not fmt.is_num(v) else v)
                    for k, v in row.items()})
    return out


def verdict_for_run(variants: pd.DataFrame, run_id: int | None = None) -> Verdict:
    """The verdict for one run from its ``variants`` rows (other runs' rows are ignored)."""
    df = variants
    if run_id is not None and "run_id" in df.columns:
        df = df[df["run_id"] == run_id]
    return decide(records(df), run_id)
