"""Runs measured on different machines or software, named before they are compared (pure).

pyperf's ``Benchmark.add_run`` refuses a run whose host, CPU or Python differs; a comparison page
cannot refuse (comparing a CPU laptop with an H200 is a fair question), but it must not put the
two side by side without a word. ``differences`` lists what differs among the runs shown: the
device, the GPU model, the host, the torch release; the page, the sweep view and the HTML report
print it above the figures.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from contract.config_key import stored_config_key
from engine.analysis import repeat


def _env(key: str) -> Callable[[pd.Series], Any]:
    return lambda r: (r.get("environment") or {}).get(key) if isinstance(
        r.get("environment"), dict) else None


def _gpu(r: pd.Series) -> Any:
    gpu = r.get("gpu")
    return None if gpu in (None, "", "cpu") or gpu != gpu else gpu


# (label, how to read it from a runs-frame row)
ASPECTS: list[tuple[str, Callable[[pd.Series], Any]]] = [
    ("device", lambda r: r.get("device")),
    ("GPU", _gpu),
    ("host", _env("host")),
    ("torch", lambda r: r.get("torch_version") or _env("torch")(r)),
]


def differences(runs: pd.DataFrame) -> list[str]:
    """``["GPU: NVIDIA H200 (#1, #2) vs none (#5)", "torch: 2.11.0 (#1, #2) vs 2.13.0 (#5)"]``:
    one entry per aspect on which the runs differ (runs that do not record it are left out of
    that aspect; a run without a GPU reads "none" once another run has one)."""
    if runs is None or len(runs) < 2:
        return []
    out: list[str] = []
    for label, read in ASPECTS:
        groups: dict[str, list[int]] = {}
        for _, r in runs.iterrows():
            value = read(r)
            if value is None or value != value or value == "":
                if label != "GPU":
                    continue
                value = "none"
            groups.setdefault(str(value), []).append(int(r["run_id"]))
        if len(groups) > 1:
            out.append(f"{label}: " + " vs ".join(
                f"{value} ({', '.join(f'#{i}' for i in ids[:6])}{'…' if len(ids) > 6 else ''})"
                for value, ids in groups.items()))
    return out


def notice(runs: pd.DataFrame) -> str | None:
    """One sentence for the top of a comparison, or None when the runs agree on all aspects."""
    diffs = differences(runs)
    if not diffs:
        return None
    return ("These runs were measured on different machines or software, so their figures are "
            "not directly comparable — " + "; ".join(diffs) + ".")


PROBE_DIFFERENCE = 0.10  # host probes more than 10 % apart: the hosts launch work at other speeds
PROBE_FIGURES = (("launch_us", "a kernel launch"), ("module_call_us", "a module call"))


def host_probes(variants: pd.DataFrame) -> dict[int, dict[str, float]]:
    """Per run, each host-probe figure (engine/measure/host_probe.py) as the median over its variants'
    (each already the median over that variant's processes); runs without one are left out."""
    out: dict[int, dict[str, float]] = {}
    if variants is None or variants.empty or "host_probe" not in variants.columns:
        return out
    for run_id, group in variants.groupby("run_id"):
        probes = [p for p in group["host_probe"] if isinstance(p, dict)]
        figures = {}
        for key, _ in PROBE_FIGURES:
            values = sorted(float(p[key]) for p in probes
                            if isinstance(p.get(key), (int, float)) and p[key] > 0)
            if values:
                figures[key] = values[len(values) // 2]
        if figures:
            out[int(run_id)] = figures
    return out


def probe_notice(variants: pd.DataFrame) -> str | None:
    """One sentence when the runs' hosts differ by more than 10 % in a host-probe figure: a
    launch-bound speedup can differ between them for that reason alone (DESIGN §7)."""
    probes = host_probes(variants)
    said = []
    for key, what in PROBE_FIGURES:
        have = {rid: f[key] for rid, f in probes.items() if key in f}
        if len(have) < 2:
            continue
        fast, slow = min(have, key=have.get), max(have, key=have.get)
        if have[slow] > (1 + PROBE_DIFFERENCE) * have[fast]:
            said.append(f"{what} cost {have[fast]:.2f} µs on #{fast}'s host and "
                        f"{have[slow]:.2f} µs on #{slow}'s ({have[slow] / have[fast] - 1:.0%} "
                        "more)")
    if not said:
        return None
    return ("The hosts of these runs launch work at different speeds — " + "; ".join(said)
            + ". A launch-bound eager (and so its speedup) can differ between them for that "
            "reason alone.")


MAX_PAIRS_SAID = 4


def _config_groups(runs: pd.DataFrame) -> list[list[int]]:
    """Run ids grouped by configuration (contract/config_key.py); runs whose stored spec is not
    a readable mapping are left out."""
    groups: dict[str, list[int]] = {}
    if runs is None or runs.empty or "spec" not in runs.columns:
        return []
    for _, r in runs.iterrows():
        key = stored_config_key(r.get("spec"))
        if key is not None:
            groups.setdefault(key, []).append(int(r["run_id"]))
    return [ids for ids in groups.values() if len(ids) > 1]


def repeat_notice(runs: pd.DataFrame, variants: pd.DataFrame) -> str | None:
    """One sentence when runs of one configuration read a variant's speedup further apart than
    their intervals allow (engine/analysis/repeat.py), naming the pairs; None otherwise."""
    if variants is None or variants.empty or not {"run_id", "variant"} <= set(variants.columns):
        return None
    status = (variants["status"] if "status" in variants.columns
              else pd.Series("ok", index=variants.index))
    ok = variants[(variants["variant"] != "eager") & (status == "ok")]
    said: list[str] = []
    for ids in _config_groups(runs):
        rows = ok[ok["run_id"].isin(ids)]
        for variant, g in rows.groupby("variant", sort=False):
            recs = g.sort_values("run_id").to_dict("records")
            for a, b in itertools.combinations(recs, 2):
                if repeat.apart(a, b):
                    why = repeat.cause(a, b)
                    said.append(f"{variant} {repeat.figure(a)} in #{a['run_id']} against "
                                f"{repeat.figure(b)} in "
                                f"#{b['run_id']} ({_rel(a, b)} apart"
                                + (f"; {why}" if why else "") + ")")
    if not said:
        return None
    more = len(said) - MAX_PAIRS_SAID
    return ("Runs of one configuration read further apart than their intervals allow — "
            + "; ".join(said[:MAX_PAIRS_SAID]) + (f"; and {more} more pair(s)" if more > 0 else "")
            + ". Each run's interval covers the spread among its own measuring processes, not "
            "what differs between runs (another compile, the device's or host's state), so "
            "decide on these runs together rather than on one run's interval.")


def _rel(a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    lo, hi = sorted((float(a["speedup"]), float(b["speedup"])))
    return f"{100 * (hi / lo - 1):.1f} %"


def notices(runs: pd.DataFrame, variants: pd.DataFrame) -> list[tuple[str, str]]:
    """Every notice above a comparison, as (kind, sentence): ``software`` (other machines or
    software), ``host speed`` (host probes apart), ``repeat`` (speedups that do not repeat).
    The compare page and the HTML report both read this list, so neither leaves one out."""
    found = [("software", notice(runs)), ("host speed", probe_notice(variants)),
             ("repeat", repeat_notice(runs, variants))]
    return [(kind, text) for kind, text in found if text]
