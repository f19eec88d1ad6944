"""The HTML report's "Against its baseline" block for one run: the same judgement the run page
shows (``engine.analysis.review.against_baseline``, the CI gate's verdicts), as static HTML.

Kept apart from dashboard/report.py so that the report builder stays a pure function of what it
is given: the page computes the checks (cached) and passes them in."""

from __future__ import annotations

from collections.abc import Callable

from dashboard import review_tables
from engine.analysis.review import BaselineCheck


def baseline_html(check: BaselineCheck | None, esc: Callable[[object], str],
                  table: Callable[..., str]) -> str:
    """``esc`` escapes text, ``table`` renders (frame, [(column, header)]) as in the report."""
    if check is None:
        return ""
    out = ["<p><b>Against its baseline</b></p>"]
    if check.is_baseline:
        out.append(f"<p class='muted'>This run is the pinned baseline of its config (config "
                   f"key {esc(check.config_key)}).</p>")
        return "".join(out)
    if check.baseline_id is None:
        out.append(f"<p class='muted'>No baseline run for this config ({esc(check.how)}; "
                   f"config key {esc(check.config_key)}).</p>")
        return "".join(out)
    out.append(f"<p class='muted'>Baseline: run #{esc(check.baseline_id)} ({esc(check.how)}). "
               "Verdicts are the CI gate's (python -m engine gate).</p>")
    report = check.report
    if report is None:
        out.append(f"<p class='muted'>{esc(check.not_judged or 'not judged')}</p>")
        return "".join(out)
    regs, imps = report.regressions, report.improvements
    line = (("Regressed: " + "; ".join(
        f"{c.variant} {c.figure} {review_tables.change_pct(c)}" for c in regs[:6]))
        if regs else "No regression")
    if imps:
        line += " · improved: " + "; ".join(
            f"{c.variant} {c.figure} {review_tables.change_pct(c)}" for c in imps[:6])
    out.append(f"<p>{esc(line)}</p>")
    if report.environment:
        out.append("<p><b>Environment differences</b> (usually the cause of a change)</p>")
        env = review_tables.environment_table(report)
        out.append(table(env, [(c, c) for c in env.columns]))
    else:
        out.append("<p class='muted'>Environment: no differences (GPU, driver, CUDA, torch, "
                   "triton, Python, commit, host).</p>")
    rows = review_tables.baseline_table(report)
    out.append(table(rows, [(c, c) for c in rows.columns]))
    return "".join(out)
