"""Text report of a stored run for ``python -m engine show``: eager against each variant, then the
run's verdict (``engine.analysis.verdict``, the one the dashboard and the HTML report show).  Reads through
``storage.records`` (plain dicts, no pandas), so it works on a host with only the engine's
requirements; ``run_json`` is what ``show --json`` prints."""

from __future__ import annotations

import math
import textwrap
from typing import Any

from contract.fmt import positive
from contract.results import process_draws
from contract.text import terminal_text
from engine.analysis import decode_report, forensics_report, repeat, train_report
from engine.analysis.disagreement import device_ms, probe_pair
from engine.analysis.pareto import peak_bytes, peak_kind
from engine.analysis.verdict import decide, eager_per_row
from engine.measure import host_settle
from engine.measure.hostload import BUSY_HOST_CORES
from engine.measure.pipeline_k import describe as describe_k


def describe_step(spec: dict[str, Any]) -> str:
    """What one timed call is: inference, or a training step with its optimizer and precision."""
    if spec.get("step", "inference") != "train":
        return "step: inference (forward under no_grad); one call = one forward"
    ac = spec.get("autocast", "none")
    impl = spec.get("optimizer_impl", "default")
    return (f"step: train (forward, loss, backward, {spec.get('optimizer', 'adamw')}"
            + ("" if impl == "default" else f" {impl}") + f" lr {spec.get('lr', 1e-4):g}"
            + ("" if ac in (None, "none") else f", autocast {ac}"
               + (" + GradScaler" if ac == "float16" else ""))
            + f"); one call = one step; accuracy after {spec.get('accuracy_steps', 3)} steps")

# The table's columns, the time figures first: split to fit the width, each block repeats the
# variant column (``table_lines``); ``--wide`` prints them as one table.
ROW = [
    ("variant", "variant", "{}"),
    ("status", "status", "{}"),
    ("median ms/call", "median_ms", "{:.4f}"),
    ("eager ms", "eager_median_ms", "{:.4f}"),
    ("speedup (95% CI)", None, None),
    ("processes, spread", None, None),
    ("pipelined ms/call", "pipelined_median_ms", "{:.4f}"),
    ("1st call cold s", "first_call_cold_s", "{:.3f}"),
    ("1st call warm s", "first_call_warm_s", "{:.3f}"),
    ("break-even calls", None, None),
    ("peak reserved MiB", None, None),
    ("graphs/breaks/recomp", None, None),
    ("kernels/call", "kernels_per_call", "{:.1f}"),
    ("err vs fp64 (eager)", None, None),
]


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _cell(row: dict[str, Any], key: str | None, fmt: str | None, label: str) -> str:
    if label == "speedup (95% CI)":
        if row["variant"] == "eager" or _blank(row.get("speedup")):
            return "1 (baseline)" if row["variant"] == "eager" else "-"
        lo, hi = row.get("speedup_ci_low"), row.get("speedup_ci_high")
        if _blank(lo) or _blank(hi):  # a point estimate only (one round, unpaired series)
            return f"{row['speedup']:.2f}x (no interval)"
        return f"{row['speedup']:.2f}x [{lo:.2f}, {hi:.2f}]"
    if label == "processes, spread":
        k, spread = row.get("n_processes"), row.get("speedup_spread")
        if row["variant"] == "eager" or _blank(k):
            return "-"
        text = f"{int(k)}" + ("" if _blank(spread) else f", ±{spread:.1%}")
        return text + (" DISAGREE" if row.get("processes_disagree") else "")
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
    if label == "err vs fp64 (eager)":
        c, e = row.get("compiled_error"), row.get("eager_error")
        if _blank(e):  # a result from before the float64 reference: eager-relative error
            v = row.get("max_rel_err")
            return "-" if _blank(v) else f"rel {v:.1e} vs eager"
        mark = {True: " ok", False: " FAIL"}.get(row.get("accuracy_ok"), "")
        return ("-" if _blank(c) else f"{c:.1e}") + f" ({e:.1e}){mark}"
    if label == "peak reserved MiB":  # the grid views' and recommend's figure (pareto)
        v = peak_bytes(row)
        return "-" if v is None else f"{v / 2**20:.1f}" + (
            "" if peak_kind(row) == "reserved" else " (alloc)")
    if label == "kernels/call" and row["variant"] != "eager" and not _blank(row.get(key)):
        eager_k = row.get("eager_kernels_per_call")
        return f"{row[key]:.1f}" + ("" if _blank(eager_k) else f" (eager {eager_k:.1f})")
    v = row.get(key)
    return "-" if _blank(v) else fmt.format(v)


def _pipeline_k(run: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """The K of the run's pipelined samples as used (capped to ~75 ms a sample,
    engine/measure/pipeline_k.py); runs stored before it was recorded show the spec's K."""
    ks = [k for r in rows if isinstance(r.get("pipeline_k"), list) for k in r["pipeline_k"]]
    asked = (run.get("spec") or {}).get("pipeline_k")
    return describe_k(ks, asked if isinstance(asked, int) and not isinstance(asked, bool)
                      else None)


def run_json(db: Any, run_id: int) -> dict[str, Any]:
    """The stored run as the contract's dicts, with its verdict: ``show --json``."""
    from storage.records import load_run

    run = load_run(db, run_id)
    if run is None:
        raise LookupError(f"no run {run_id} in {getattr(db, 'url', 'the database')}")
    run["verdict"] = decide(run["variants"], run_id).as_dict()
    from storage.artifacts import list_artifacts

    run["artifacts"] = list_artifacts(db, run_id)  # kept files, without their bytes
    from storage.slurm_jobs import job_of

    run["slurm"] = job_of(db, run_id)  # its Slurm job (engine/slurm/), None for other runs
    run["slurm_job_id"] = run["slurm"]["job_id"] if run["slurm"] else None
    run["earlier_runs"] = earlier_runs(db, run_id, run.get("spec"), run["variants"])
    run["generation"] = decode_report.summary(run["variants"])  # tokens/s against the run's one eager
    return run


def _slurm_line(job: dict[str, Any] | None) -> list[str]:
    """``  slurm: job 12 PENDING (Priority), partition gpu, limit 30 min``: where a Slurm run's
    job is (what the reconciler last saw), or nothing for a run that is not Slurm's."""
    if not job:
        return []
    from engine.slurm.describe import job_parts

    first, state, *rest = job_parts(job)
    return [f"  slurm: {first} {state}" + "".join(f", {p}" for p in rest)]


WIDTH = 120  # a terminal's columns; ``show --wide`` (width None) prints every line whole


def table_lines(rows: list[dict[str, Any]], width: int | None = WIDTH) -> list[str]:
    """The variants table, split into blocks of columns that fit ``width`` (each block starts
    with the variant column); one table with ``width`` None."""
    table = [[label for label, _, _ in ROW]] + [
        [_cell(r, key, fmt, label) for label, key, fmt in ROW] for r in rows]
    widths = [max(len(t[i]) for t in table) for i in range(len(ROW))]
    blocks: list[list[int]] = [[0]]
    for i in range(1, len(ROW)):
        used = sum(widths[j] + 2 for j in blocks[-1])
        if width is not None and len(blocks[-1]) > 1 and used + widths[i] > width - 2:
            blocks.append([0])
        blocks[-1].append(i)
    out: list[str] = []
    for block in blocks:
        if out:
            out.append("")
        for n, t in enumerate(table):
            out.append("  " + "  ".join(t[i].ljust(widths[i]) if i == 0 else
                                        t[i].rjust(widths[i]) for i in block).rstrip())
            if n == 0:
                out.append("  " + "  ".join("-" * widths[i] for i in block))
    return out


def wrap_lines(lines: list[str], width: int | None = WIDTH) -> list[str]:
    """Each line longer than ``width`` wrapped at spaces, its continuation indented under it.
    Stored text in a line (an error, a GPU name) has its control characters escaped first, so
    that wrapping, which treats them as spaces, cannot lose or split them."""
    if width is None:
        return lines
    out: list[str] = []
    for line in (part for whole in lines for part in terminal_text(whole).split("\n")):
        if len(line) <= width:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip(" ")))
        out += textwrap.wrap(line, width, initial_indent="", subsequent_indent=indent + "    ",
                             break_on_hyphens=False) or [line[:width]]
    return out


def _status_text(run: dict[str, Any]) -> str:
    """``done``, ``failed: <error>``, or ``running (no heartbeat for 14 min: ...)`` for a run
    whose process stopped without ending it (storage.queue.silent_for_s says when)."""
    from datetime import datetime

    from storage.queue import silence_note, silent_for_s

    text = str(run["status"]) + (f": {run['error']}" if run.get("error") else "")
    try:
        beat = datetime.fromisoformat(run["heartbeat_at"]) if run.get("heartbeat_at") else None
    except (TypeError, ValueError):
        beat = None
    silent = silent_for_s(run["status"], beat)
    if silent is not None:
        text += f" ({silence_note(silent, slurm=bool(run.get('slurm')))})"
    return text


def format_run(db: Any, run_id: int, width: int | None = WIDTH) -> str:
    """The run as text: at most ``width`` columns (None: each line whole, ``show --wide``);
    every figure is in ``show --json``."""
    run = run_json(db, run_id)
    rows = run["variants"]
    env = run.get("environment") or {}
    lines = [
        f"run {run_id}: {run['model']} ({run['dims_label']}) {run['dtype']} on {run['device']}"
        f" | status {_status_text(run)}",
        f"  {describe_step(run.get('spec') or {})}",
        *_slurm_line(run.get("slurm")),
        f"  gpu {env.get('gpu') or 'none'} | driver {env.get('driver') or '-'} | "
        f"torch {env.get('torch') or '-'} | triton {env.get('triton') or '-'} | "
        f"host {env.get('host') or '-'} | commit {_short_commit(env.get('commit'))}",
    ]
    lines = wrap_lines(lines, width)
    if rows:
        timer = next((r.get("timer") for r in rows if r.get("timer")), "?")
        table = table_lines(rows, width)
        lines += [*table, ""]
        rest: list[str] = method_lines(timer, _pipeline_k(run, rows),
                                       one_eager=eager_per_row(rows) is None)
        rest += process_lines(rows)
        rest += judged_lines(rows)
        for r in rows:
            busy = r.get("host_other_busy_cores")
            if not _blank(busy) and busy >= BUSY_HOST_CORES:
                rest.append(f"  host busy [{r['variant']}]: other processes kept {busy:.1f} CPU "
                            "cores busy while it was timed; its figures may read slow.")
        for r in rows:
            if r["status"] != "ok":
                rest.append(f"  {r['variant']} {r['status']}: {r.get('error')}")
        for r in rows:
            for b in r.get("graph_breaks") or []:
                where = (f"{b['file']}:{b['line']}" if b.get("file")
                         else "(no user file:line)")
                rest.append(f"  graph break [{r['variant']}] {where} x{b['count']}: "
                            f"{b['reason']}")
            for rc in r.get("recompiles") or []:
                rest.append(f"  recompile [{r['variant']}]{_recompile_where(rc)}: {rc['reason']}")
        rest += forensics_report.lines(rows)
        rest += forensics_report.trace_lines(run_id, rows, run.get("artifacts") or [])
        rest += decode_report.lines(rows)
        rest += train_report.lines(rows)
        rest.append(where_time_went(run))
        rest += earlier_lines(run.get("earlier_runs"))
        rest.append("Verdict:")
        rest += [f"  {label}: {text}" for label, text in decide(rows, run_id).lines()]
        lines += wrap_lines(rest, width)
    return "\n".join(lines)


def _recompile_where(rc: dict[str, Any]) -> str:
    """Where a recompile happened: its sweep value, else its phase in words, else nothing."""
    from contract.recompile import phase_words

    if not _blank(rc.get("dim_value")):
        return f" at {rc['dim_value']:g}"
    words = phase_words(rc.get("phase"))
    return f" ({words})" if words else ""


def _tensor_name(row: dict[str, Any]) -> str | None:
    """The row's judged tensor as one line of at most 200 characters: its name is the model's
    own (a user's file may name a parameter anything)."""
    from contract.accuracy import judged_tensor
    from contract.text import one_line

    name = row.get("accuracy_tensor") or judged_tensor(row)
    return one_line(name, 200) if isinstance(name, str) else None


def judged_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Which tensor each row's ``err vs fp64`` figure is of, said where rows differ (a training
    run compares many tensors, and eager's row has no allowance to be judged against)."""
    named = [(r["variant"], _tensor_name(r)) for r in rows
             if r.get("status") == "ok" and not _blank(r.get("eager_error"))]
    if len({t for _, t in named if t}) < 2:
        return []
    return ["  err vs fp64: each row's figure is of its own judged tensor, so the rows' eager "
            "figures are of different tensors: " + "; ".join(
                f"{v} {t or '?'}" + (" (its largest error)" if v == "eager" else
                                     " (nearest its allowance)") for v, t in named)]


def earlier_runs(db: Any, run_id: int, spec: Any, rows: list[dict[str, Any]]
                 ) -> dict[str, Any] | None:
    """This run's compiled speedups against the latest earlier runs of its configuration in the
    same database (``show --json``'s ``earlier_runs``): their ids and every pair further apart
    than both intervals allow (engine/analysis/repeat.py), since a run's interval covers only its
    own processes, and how many pairs had a speedup on both sides (``compared``); None without
    an earlier run."""
    from storage.history import earlier_same_config
    from storage.records import load_run

    ids = earlier_same_config(db, spec, run_id)
    if not ids:
        return None
    apart: list[dict[str, Any]] = []
    compared = 0
    for rid in ids:
        before = {v["variant"]: v for v in (load_run(db, rid) or {}).get("variants") or []
                  if v.get("status") == "ok"}
        for r in rows:
            old = before.get(r["variant"])
            gap = (repeat.pair_gap(r, old) if r["variant"] != "eager" and r["status"] == "ok"
                   and old else None)
            compared += gap is not None
            if gap is not None and gap[0] > gap[1]:
                apart.append({"variant": r["variant"], "run_id": rid,
                              "speedup": r["speedup"], "earlier_speedup": old["speedup"],
                              "here": repeat.figure(r), "earlier": repeat.figure(old),
                              "difference": gap[0], "allowed": gap[1],
                              "cause": repeat.cause(r, old)})
    return {"runs": ids, "apart": apart, "compared": compared}


def earlier_lines(found: dict[str, Any] | None) -> list[str]:
    """``earlier_runs`` as one line of ``show``: the runs compared and the pairs that do not
    repeat, or that every speedup repeats."""
    if not found or not found.get("compared", 1):
        return []  # no compiled speedup in both runs: nothing was compared, nothing to say
    runs = ", ".join(map(str, found["runs"]))
    if not found["apart"]:
        return [f"  earlier runs of this configuration ({runs}): every compiled speedup here "
                "repeats theirs within both runs' intervals"]
    return [f"  earlier runs of this configuration ({runs}), further apart than both intervals "
            "allow (an interval covers one run's processes, not what differs between runs): "
            + "; ".join(f"{a['variant']} {a['here']} here against {a['earlier']} in run "
                        f"{a['run_id']}" + (f" ({a['cause']})" if a["cause"] else "")
                        for a in found["apart"])]


def method_lines(timer: str, k: str, one_eager: bool = True) -> list[str]:
    """How the table's figures were formed, said once (docs/METHOD.md).  ``one_eager`` False:
    a run measured before one eager per run (``verdict.eager_per_row``), whose rows each keep
    the eager of their own processes."""
    eager = ("eager: one figure for the run, the geometric mean of every measuring process's "
             "eager median (eager's own and each compiled variant's paired rounds); a compiled "
             "variant: that eager / its speedup." if one_eager else
             "eager ms: the eager each row is compared with; this run was measured before one "
             "eager per run, so it differs between rows (each compiled variant's from its own "
             "processes).")
    return [
        f"  median ms/call: steady-state per-call time ({timer}, synchronised). {eager} So "
        "speedup = eager ms / median ms on every row.",
        f"  pipelined: {k} calls back to back, one sync, / K, formed the same way.",
        "  speedup: eager / compiled in each process's paired rounds, geometric mean over "
        "processes (over kernel draws where some processes drew their autotuned kernels anew: "
        "the processes of one draw count once); 95% interval: t over those log speedups, with "
        "a variance shared with the run's other variants or this host's history where it "
        "agrees; spread: sd of the per-process log speedups."]


def _share_text(comp: dict[str, Any]) -> str:
    names = (("between_process_share", "between processes"),
             ("between_round_share", "between rounds"), ("within_round_share", "within rounds"))
    return ", ".join(f"{label} {comp[k]:.0%}" for k, label in names
                     if isinstance(comp.get(k), (int, float)))


def _draw_marks(row: dict[str, Any]) -> list[str]:
    """" (drawn anew)" for each process whose autotuned kernels drew anew
    (engine/measure/autotune_draw.py), in the order of ``process_speedups``; blanks where the
    processes cannot be matched to them."""
    speeds, draws = row.get("process_speedups") or [], process_draws(row.get("processes"))
    if len(draws) != len(speeds):
        return [""] * len(speeds)
    return [" (drawn anew)" if d == "redrawn" else "" for d in draws]


def process_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Per compiled variant: its processes' speedups, why sampling stopped, what its own
    processes read, where the uncertainty comes from; per variant, the host probe."""
    out: list[str] = []
    for r in rows:
        if r["variant"] != "eager" and r.get("process_speedups"):
            per = ", ".join(f"{x:.2f}x" + mark for x, mark in zip(
                r["process_speedups"], _draw_marks(r), strict=True))
            state = "provisional" if r.get("provisional") else f"stopped: {r.get('stop_reason') or '-'}"
            out.append(f"  processes [{r['variant']}]: {per} ({state})")
            eager = r.get("process_eager_ms")
            if isinstance(eager, list) and eager and all(positive(x) for x in eager):
                out.append("    eager in each: " + ", ".join(f"{x:.4f}" for x in eager) + " ms")
            if (dev := _device_line(r)) is not None:
                out.append(dev)
            measured, paired = r.get("measured_median_ms"), r.get("paired_eager_median_ms")
            if not _blank(measured) and not _blank(paired):
                out.append(f"    read in its own processes: {measured:.4f} ms/call against "
                           f"eager {paired:.4f} ms" + (
                               f"; interval variance shared with {r['variance_prior']}"
                               if r.get("variance_prior") else ""))
            comp = r.get("variance_components")
            if isinstance(comp, dict) and _share_text(comp):
                out.append(f"    uncertainty from: {_share_text(comp)}")
        busy, dev = r.get("eager_device_busy_ms_per_call"), r.get("paired_eager_median_ms")
        if r["variant"] != "eager" and not _blank(busy) and not _blank(dev):
            out.append(f"  eager in [{r['variant']}]: GPU busy {busy:.4f} of "
                       f"{dev:.4f} ms wall per call")
    startup = next((r.get("device_startup_ms") for r in rows if r["variant"] == "eager"), None)
    if not _blank(startup):
        out.append(f"  device start-up: eager's first call in its process took {startup:.1f} ms "
                   "(context, library handles); no warm-up curve includes it")
    probes = [(r["variant"], r["host_probe"]) for r in rows if isinstance(r.get("host_probe"), dict)]
    if probes:
        out.append("  host probe (median over each variant's processes, µs): " + "; ".join(
            f"{v} launch {p.get('launch_us', float('nan')):.1f}, module call "
            f"{p.get('module_call_us', float('nan')):.2f}" for v, p in probes))
    out += [line for line in (settle_line(rows), moved_line(rows)) if line]
    return out


def _device_line(row: dict[str, Any]) -> str | None:
    """The compiled call's device time in each process with the host queued ahead
    (engine/measure/device_time.py); "-" where a process took none."""
    procs = row.get("processes")
    if not isinstance(procs, list):
        return None
    dev = [device_ms(p) for p in procs]
    if not any(d is not None for d in dev):
        return None
    return ("    device time in each (host queued ahead): "
            + ", ".join("-" if d is None else f"{d:.4f}" for d in dev) + " ms")


MOVED = 1.25  # a module call this much slower after a process's window than before it


def moved_line(rows: list[dict[str, Any]]) -> str | None:
    """The processes whose host probe read slower after their window than before it: the host
    slowed while they timed (engine/measure/child.py probes on both sides)."""
    pairs = [(str(r["variant"]), *pair) for r in rows for p in r.get("processes") or []
             if (pair := probe_pair(p)) is not None]
    moved = [(v, a, b) for v, a, b in pairs if b > MOVED * a]
    if not moved:
        return None
    return (f"  host slowed while timing: in {len(moved)} of {len(pairs)} processes a module call "
            f"read over {MOVED:g}x slower after the window than before ("
            + "; ".join(f"{v} {a:.2f} -> {b:.2f} µs" for v, a, b in moved[:4]) + ")")


def settle_line(rows: list[dict[str, Any]]) -> str | None:
    """What waiting for the host's usual speed did (engine/measure/host_settle.py), when it did
    anything: how many processes waited and how long, how many timed on a host still slow."""
    records = [p["host_settle"] for r in rows for p in r.get("processes") or []
               if isinstance(p, dict) and isinstance(p.get("host_settle"), dict)]
    waited = [float(s["waited_s"]) for s in records
              if isinstance(s.get("waited_s"), (int, float)) and s["waited_s"] >= 0.2]
    slow = sum(1 for s in records if s.get("slow") is True)
    if not waited and not slow:
        return None
    text = (f"  host settle: {len(waited)} of {len(records)} processes waited "
            f"{sum(waited):.1f} s in all for the host to launch at its usual speed")
    if slow:
        text += (f"; {slow} timed while it still read slow (a module call over "
                 f"{host_settle.SLOW:g}x the run's fastest), after the wait ran out")
    return text


TIME_ORDER = ("process start", "imports", "setup", "compiler import", "model build",
              "environment", "eager reference", "compile", "warm-up", "host settle", "measure",
              "profile", "roofline", "lost time", "explain", "exit")


def where_time_went(run: dict[str, Any]) -> str:
    """The run's wall time, said so that it adds up: the time some measuring process was alive
    and the time the parent was alone (database, scheduling); then what the processes spent
    their time on, in process-seconds, which add up to more than the wall time when processes
    ran side by side (as they do: engine/orchestrate/schedule.py)."""
    from datetime import datetime

    total: dict[str, float] = {}
    spans: list[tuple[float, float]] = []
    for r in run["variants"]:
        for name, sec in (r.get("time_s") or {}).items():
            total[name] = total.get(name, 0.0) + float(sec)
        for p in r.get("processes") or []:
            a, b = (p.get("spawned_at") or p.get("started_at")), p.get("ended_at")
            if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b >= a:
                spans.append((float(a), float(b)))
    if not total:
        return "  where the time went: not recorded for this run"
    parts = [f"{name} {total[name]:.1f} s" for name in TIME_ORDER if name in total]
    parts += [f"{name} {sec:.1f} s" for name, sec in total.items() if name not in TIME_ORDER]
    summed = f"{sum(total.values()):.1f} process-seconds: " + ", ".join(parts)
    wall = None
    if run.get("started_at") and run.get("finished_at"):
        wall = (datetime.fromisoformat(run["finished_at"])
                - datetime.fromisoformat(run["started_at"])).total_seconds()
    if wall is None or not spans:
        return "  where the time went: " + summed
    alive, most = _union_and_peak(spans)
    alive = min(alive, wall)
    rest = f"the parent alone {wall - alive:.1f} s (database, scheduling)"
    if run.get("status") in ("cancelled", "failed"):
        # a process the stop killed stored no record, so its time falls in the rest too
        rest = (f"the rest {wall - alive:.1f} s (the parent, and any process the run's end "
                f"stopped before it recorded its time: the run {run['status']})")
    return (f"  where the time went ({wall:.1f} s wall) = measuring processes alive "
            f"{alive:.1f} s (up to {most} at once) + {rest}; inside the {len(spans)} "
            "recorded processes, side by side, " + summed)


def _union_and_peak(spans: list[tuple[float, float]]) -> tuple[float, int]:
    """Seconds covered by at least one span, and the most spans open at once."""
    events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    covered, open_, most, since = 0.0, 0, 0, 0.0
    for t, step in events:
        if open_ > 0:
            covered += t - since
        open_ += step
        most = max(most, open_)
        since = t
    return covered, most


def _short_commit(commit: str | None) -> str:
    """The first 10 hex digits, keeping the ``+dirty`` mark: it says the code that ran was not
    exactly that commit."""
    if not commit:
        return "-"
    sha, plus, rest = commit.partition("+")
    return sha[:10] + plus + rest
