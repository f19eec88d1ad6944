"""Big runs stay cheap to draw: at most a few thousand points per trace (pure, no Streamlit).

A bundle may hold millions of samples (the import limit is 1 000 000 per series and 20 million
per bundle). Drawn as they are, 3 million samples made a 40 MB Plotly figure that took 7 s to
build and serialise and ~1 GB of memory in the browser. The charts draw:

- **distributions** (box plots): ``MAX_POINTS`` evenly spaced quantiles of each box's values,
  minimum and maximum included, so the box, whiskers and extremes are those of all the samples
  (to within one quantile step);
- **curves** (calls in order): every k-th point, the first and last kept.

Each figure says so in its subtitle (``note``), e.g. "1 in 600 of up to 3,000,000 calls per line
shown".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

MAX_POINTS = 5000  # per trace


@dataclass(frozen=True)
class Thinned:
    """A frame cut down for drawing, and how: ``total`` rows were in, ``shown`` are drawn."""

    frame: pd.DataFrame
    total: int
    shown: int
    largest_group: int = 0
    step: int = 1  # stride of the thinned curves (1 for quantiles or nothing thinned)

    @property
    def thinned(self) -> bool:
        return self.shown < self.total


def _group_codes(df: pd.DataFrame, by: list[str]) -> np.ndarray:
    """One integer per row naming its group (factorising each key: far cheaper than a
    ``groupby`` over millions of rows of string keys)."""
    codes = np.zeros(len(df), dtype=np.int64)
    for column in by:
        c, uniques = pd.factorize(df[column], use_na_sentinel=False)
        codes = codes * max(len(uniques), 1) + c
    return codes


def quantiles(df: pd.DataFrame, by: list[str], value: str, per_group: int = MAX_POINTS
              ) -> Thinned:
    """Each group of ``by`` reduced to ``per_group`` evenly spaced quantiles of ``value``
    (sorted ascending within the group; the other columns taken from the group's first row)."""
    total = len(df)
    if total <= per_group:
        return Thinned(df, total, total)
    codes = _group_codes(df, by)
    values = pd.to_numeric(df[value], errors="coerce").to_numpy(dtype=float)
    order = np.argsort(codes, kind="stable")  # rows grouped (integer sort: fast)
    codes_sorted = codes[order]
    starts = np.flatnonzero(np.r_[True, codes_sorted[1:] != codes_sorted[:-1]])
    ends = np.r_[starts[1:], len(order)]
    keep, largest = [], 0
    for start, end in zip(starts, ends, strict=True):
        rows = order[start:end]
        largest = max(largest, len(rows))
        group_values = values[rows]
        rows = rows[np.isfinite(group_values)]
        if len(rows) <= per_group:
            keep.append(rows)
            continue
        by_value = rows[np.argsort(values[rows])]
        picks = np.unique(np.round(np.linspace(0, len(by_value) - 1, per_group)).astype(np.int64))
        keep.append(by_value[picks])
    rows = np.concatenate(keep) if keep else np.array([], dtype=np.int64)
    out = df.iloc[rows].reset_index(drop=True)
    return Thinned(out, total, len(out), largest)


def stride(df: pd.DataFrame, by: list[str], max_points: int = MAX_POINTS) -> Thinned:
    """Every k-th row of each group of ``by`` (in the frame's order), first and last kept, so
    no group has more than about ``max_points`` rows."""
    total = len(df)
    if total <= max_points:
        return Thinned(df, total, total)
    codes = _group_codes(df, by)
    counts = np.bincount(pd.factorize(codes)[0])
    largest = int(counts.max())
    step = max(1, math.ceil(largest / max_points))
    if step == 1:
        return Thinned(df, total, total, largest)
    position = pd.Series(codes).groupby(codes, sort=False).cumcount().to_numpy()
    size = counts[pd.factorize(codes)[0]]
    mask = (position % step == 0) | (position == size - 1)
    out = df[mask].reset_index(drop=True)
    return Thinned(out, total, len(out), largest, step)


def note(t: Thinned, unit: str = "samples") -> str:
    """What the chart's subtitle says about thinning ('' when everything is drawn)."""
    if not t.thinned:
        return ""
    if t.step > 1:
        return f"1 in {t.step:,} of up to {t.largest_group:,} {unit} per line shown"
    return (f"each box drawn from {MAX_POINTS:,} evenly spaced quantiles of its up to "
            f"{t.largest_group:,} {unit}")
