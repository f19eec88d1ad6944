"""Text report of a stored run for ``python -m engine show``: eager against each variant, then a
plain one-line verdict. Reads through storage.queries only."""

from __future__ import annotations

import math
from typing import Any

from engine.hostload import BUSY_HOST_CORES

ROW = [
    ("variant", "variant", "{}"),
    ("status", "status", "{}"),
    ("1st call cold s", "first_call_cold_s", "{:.3f}"),
    ("1st call warm s", "first_call_warm_s", "{:.3f}"),
    ("median ms/call", "median_ms", "{:.4f}"),
    ("paired eager ms", "eager_median_ms", "{:.4f}"),
    ("pipelined ms/call", "pipelined_median_ms", "{:.4f}"),
    ("speedup (95% CI)", None, None),
    ("break-even calls", None, None),
    ("peak MiB", "peak_allocated_bytes", None),
    ("graphs/breaks/recomp", None, None),
    ("kernels/call", "kernels_per_call", "{:.1f}"),
    ("max rel err", "max_rel_err", "{:.1e}"),
]


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _cell(row: dict[str, Any], key: str | None, fmt: str | None, label: str) -> str:
    if label == "speedup (95% CI)":
        if row["variant"] == "eager" or _blank(row.get("speedup")):
            return "1 (baseline)" if row["variant"] == "eager" else "-"
        return f"{row['speedup']:.2f}x [{row['speedup_ci_low']:.2f}, {row['speedup_ci_high']:.2f}]"
    if label == "break-even calls":
        if row["variant"] == "eager" or row.get("status") != "ok":
            return "-"
        be = row.get("break_even_calls")
        return "never" if _blank(be) else f"{int(be):,}"
    if label == "graphs/breaks/recomp":
        if row["variant"] == "eager":
            return "-"
        return "/".join("-" if _blank(row.get(k)) else str(int(row[k]))
                        for k in ("graph_count", "graph_break_count", "recompile_count"))
    if label == "peak MiB":
        v = row.get(key)
        return "-" if _blank(v) else f"{v / 2**20:.1f}"
    if label == "kernels/call" and row["variant"] != "eager" and not _blank(row.get(key)):
        eager_k = row.get("eager_kernels_per_call")
        return f"{row[key]:.1f}" + ("" if _blank(eager_k) else f" (eager {eager_k:.1f})")
    v = row.get(key)
    return "-" if _blank(v) else fmt.format(v)


def verdict(rows: list[dict[str, Any]]) -> str:
    """One plain sentence: the best variant per call, or that compiling does not pay."""
    eager = next((r for r in rows if r["variant"] == "eager" and r["status"] == "ok"), None)
    compiled = [r for r in rows if r["variant"] != "eager" and r["status"] == "ok"
                and not _blank(r.get("speedup"))]
    failed = [r["variant"] for r in rows if r["status"] != "ok"]
    tail = f" Failed: {', '.join(failed)}." if failed else ""
    if not eager or not compiled:
        return "Verdict: no compiled variant finished; nothing to compare." + tail
    best = max(compiled, key=lambda r: r["speedup"])
    if all(r["speedup_ci_high"] < 1.0 for r in compiled):
        return (f"Verdict: every compiled mode is SLOWER than eager per call here "
                f"(best: {best['variant']} at {best['speedup']:.2f}x); keep eager.{tail}")
    if best["speedup_ci_low"] <= 1.0:
        return (f"Verdict: no compiled mode is clearly faster than eager (best {best['variant']} "
                f"{best['speedup']:.2f}x, CI includes 1.0).{tail}")
    be = best.get("break_even_calls")
    pays = "never" if _blank(be) else f"after {int(be):,} calls"
    return (f"Verdict: compile with mode={best['variant']}: {best['speedup']:.2f}x faster per "
            f"call (eager {best['eager_median_ms']:.4f} -> {best['median_ms']:.4f} ms, paired "
            f"rounds in one process); the compile cost "
            f"of {best['first_call_cold_s']:.1f} s cold is repaid {pays}.{tail}")


def format_run(db: Any, run_id: int) -> str:
    from storage import queries

    data = queries.load_runs(db, [run_id])
    runs = data["runs"]
    if runs.empty:
        raise LookupError(f"no run {run_id} in {getattr(db, 'url', 'the database')}")
    run = runs.iloc[0].to_dict()
    rows = data["variants"].to_dict("records")
    env = run.get("environment") or {}
    lines = [
        f"run {run_id}: {run['model']} ({run['dims_label']}) {run['dtype']} on {run['device']}"
        f" | status {run['status']}" + (f": {run['error']}" if run.get("error") else ""),
        f"  gpu {env.get('gpu') or 'none'} | driver {env.get('driver') or '-'} | "
        f"torch {env.get('torch') or '-'} | triton {env.get('triton') or '-'} | "
        f"host {env.get('host') or '-'} | commit {_short_commit(env.get('commit'))}",
    ]
    if rows:
        timer = next((r.get("timer") for r in rows if r.get("timer")), "?")
        table = [[label for label, _, _ in ROW]] + [
            [_cell(r, key, fmt, label) for label, key, fmt in ROW] for r in rows
        ]
        widths = [max(len(t[i]) for t in table) for i in range(len(ROW))]
        for i, t in enumerate(table):
            lines.append("  ".join(c.rjust(w) for c, w in zip(t, widths, strict=True)))
            if i == 0:
                lines.append("  ".join("-" * w for w in widths))
        lines.append(f"  median ms/call: steady-state per-call time ({timer}, synchronised); "
                     "pipelined: K calls back to back, one sync, / K.")
        for r in rows:
            busy = r.get("host_other_busy_cores")
            if not _blank(busy) and busy >= BUSY_HOST_CORES:
                lines.append(f"  host busy [{r['variant']}]: other processes kept {busy:.1f} CPU "
                             "cores busy while it was timed; its figures may read slow.")
        for r in rows:
            if r["status"] != "ok":
                lines.append(f"  {r['variant']} {r['status']}: {r.get('error')}")
        bks = data["graph_breaks"]
        for b in bks.to_dict("records"):
            lines.append(f"  graph break [{b['variant']}] {b['file']}:{b['line']} x{b['count']}: "
                         f"{b['reason']}")
        for rc in data["recompiles"].to_dict("records"):
            at = f" at {rc['dim_value']}" if not _blank(rc.get("dim_value")) else ""
            lines.append(f"  recompile [{rc['variant']}]{at}: {rc['reason']}")
        lines.append(verdict(rows))
    return "\n".join(lines)


def _short_commit(commit: str | None) -> str:
    """The first 10 hex digits, keeping the ``+dirty`` mark: it says the code that ran was not
    exactly that commit."""
    if not commit:
        return "-"
    sha, plus, rest = commit.partition("+")
    return sha[:10] + plus + rest
