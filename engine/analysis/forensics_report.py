"""Compile forensics in words, for ``engine show``: what the caches did per compile, where the
first call's time went, the ranked lost time per call, CUDA-graph coverage and the start-up
strategies. Reads the contract's variant rows (plain dicts), as ``engine.analysis.show`` does."""

from __future__ import annotations

import math
from typing import Any

from contract.results import DRAWS, ProcessResult
from engine import known_errors
from engine.measure import compile_load

# The counters shown in the one-line summary and the dashboard's table (torch's names, as
# engine/measure/forensics.py CORE and TRITON keep them); every counter is in --json.
SHOWN = ("fxgraph_cache_hit", "fxgraph_cache_miss", "fxgraph_cache_bypass",
         "autograd_cache_hit", "autograd_cache_miss", "autograd_cache_bypass",
         "triton_bundler_save_kernel", "triton_bundler_read_and_emit_kernel",
         "async_compile_cache_hit", "async_compile_cache_miss", "select_algorithm_autotune")
# torch's per-kernel autotune cache decisions (forensics.AUTOTUNE_STATE), in this order
AUTOTUNE_STATES = ("hit", "miss", "only 1 config", "force_disabled")
# Start-up strategies in the order a user would try them, with their labels.
STRATEGIES = (("cold", "cold"), ("warm_local", "warm local cache"),
              ("portable", "portable cache artifacts"), ("regional", "regional compilation"))


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return None if math.isnan(float(v)) else float(v)


def autotune_states(entry: dict[str, Any]) -> dict[str, int]:
    """Kernels per autotune cache decision of one compile (torch's words), only integers."""
    raw = entry.get("autotune_cache_state")
    if not isinstance(raw, dict):
        return {}
    return {str(k): int(v) for k, v in raw.items()
            if isinstance(v, int) and not isinstance(v, bool) and v > 0}


def _autotune_words(states: dict[str, int]) -> str | None:
    """``Triton autotune cache: 12 kernels' best configs found (hit), 2 tuned again (miss)``."""
    if not states:
        return None
    words = {"hit": "found their best config in the cache (hit)", "miss": "autotuned (miss)"}
    order = [s for s in AUTOTUNE_STATES if s in states] + sorted(
        s for s in states if s not in AUTOTUNE_STATES)
    return "Triton autotune cache: " + ", ".join(
        f"{states[s]} kernel{'s' if states[s] != 1 else ''} {words.get(s, s)}" for s in order)


def cache_line(row: dict[str, Any]) -> str | None:
    """``compile cache [v]: cold fxgraph_cache_miss=4 ... | warm_cache ...`` (non-zero counts),
    with the Triton kernels' autotune cache decisions."""
    entries = row.get("compile_cache") or []
    if not entries:
        return None
    parts: dict[str, int] = {}  # each warm process said the same: once, with a count
    for c in entries:
        n = c.get("counters") or {}
        shown = [f"{k}={n[k]}" for k in SHOWN if n.get(k)]
        tuned = _autotune_words(autotune_states(c))
        shown += [tuned] if tuned else []
        part = f"{c.get('phase')}: " + (", ".join(shown) or "no cache activity")
        parts[part] = parts.get(part, 0) + 1
    text = f"  compile cache [{row['variant']}]: " + " | ".join(
        part + (f" (×{k} processes)" if k > 1 else "") for part, k in parts.items())
    again = [c for c in entries if c.get("phase") == "warm_cache"
             and (c.get("counters") or {}).get("select_algorithm_autotune")]
    if again:
        text += (f"\n  algorithm choices benchmarked again [{row['variant']}]: the warm-cache "
                 "compile ran select_algorithm's benchmarks (select_algorithm_autotune > 0) "
                 "although its FX graph came from the cache; torch does the same outside "
                 "the engine (docs/METHOD.md, compile forensics)")
    if row.get("warm_cache_missed"):
        text += f"\n  WARM CACHE MISSED [{row['variant']}]: {row.get('warm_cache_miss_reason')}"
    return text


def phase_segments(phases: dict[str, Any] | None, first_call_s: float | None
                   ) -> dict[str, float]:
    """Exclusive seconds per compile phase from torch's nested totals (dynamo's frame time holds
    the backend's, which holds inductor's, which holds code generation), plus the rest of the
    first call. Negative remainders (rounding, fields missing in a release) become 0."""
    p = {k: _num(v) or 0.0 for k, v in (phases or {}).items()}
    total, backend = p.get("dynamo_total", 0.0), p.get("backend", 0.0)
    inductor, codegen = p.get("inductor", 0.0), p.get("codegen", 0.0)
    out = {"dynamo (trace, guards)": total - backend,
           "AOTAutograd": backend - inductor if inductor else backend,
           "inductor (lowering)": inductor - codegen if codegen else inductor,
           "code generation": codegen}  # Triton kernels on a GPU, C++ on a CPU
    if first_call_s is not None and total:
        out["rest of first call"] = first_call_s - total
    return {k: round(max(v, 0.0), 6) for k, v in out.items()}


def lost_parts(lost: dict[str, Any] | None) -> dict[str, list[dict[str, Any]]]:
    """A lost-time account's items in its two accounts of the call, each adding up to 100 %
    (engine/measure/losttime.py): ``host`` and ``device``. Results stored before the items
    carried their ``part`` are read the same way: GPU idle is the device's, a busy share is its
    complement, and graphs not replayed as CUDA graphs come out of "inside compiled graphs"
    (which then held them too)."""
    items = [i for i in (lost or {}).get("items") or [] if isinstance(i, dict)]
    host = [dict(i) for i in items if _part(i) == "host"]
    device = [dict(i) for i in items if _part(i) == "device"]
    if not (lost or {}).get("parts"):  # an account from before the parts: make it disjoint
        uncaptured = sum(_num(i.get("share")) or 0.0 for i in host
                         if i.get("kind") == "uncaptured_cudagraph")
        for i in host:
            if i.get("kind") == "in_graphs" and uncaptured:
                i["share"] = max((_num(i.get("share")) or 0.0) - uncaptured, 0.0)
        idle = next((i for i in device if i.get("kind") == "launch_bound"), None)
        if idle is not None and not any(i.get("kind") == "device_busy" for i in device):
            share = 1.0 - (_num(idle.get("share")) or 0.0)
            ms = _num(idle.get("ms_per_call"))
            wall = ms / idle["share"] if ms is not None and _num(idle.get("share")) else None
            device.append({"kind": "device_busy", "part": "device", "share": share,
                           "ms_per_call": None if wall is None else wall * share,
                           "what": "GPU busy within the call (kernels, copies)"})
    return {"host": host, "device": device}


def _part(item: dict[str, Any]) -> str:
    part = item.get("part")
    if part in ("host", "device"):
        return part
    return "device" if item.get("kind") in ("launch_bound", "device_busy") else "host"


def recompile_text(rec: dict[str, Any]) -> str:
    """``2 recompile(s): 7.33 s of compile, 38% of this process's compile time (paid once ...)``."""
    text = f"{rec.get('what')}: {_num(rec.get('compile_s')) or 0.0:.2f} s of compile"
    share = _num(rec.get("share_of_compile"))
    if share is not None:
        text += f", {share:.0%} of this process's compile time"
    return text + " (each paid once, at the call whose inputs failed a guard; not per call)"


def lost_time_lines(row: dict[str, Any], top: int = 6) -> list[str]:
    lost = row.get("lost_time") or {}
    if lost.get("error"):
        return [f"  lost time [{row['variant']}]: not measured ({lost['error']})"]
    parts = lost_parts(lost)
    items = [i for i in parts["host"] if i.get("kind") != "in_graphs"]
    rec = lost.get("recompiles")
    if not items and not parts["device"] and not rec:
        return []
    out = [f"  why not faster [{row['variant']}] (host time of a profiled call: these items "
           "and the time inside compiled graphs add up to 100 %; ms of the steady-state "
           "median):"]
    for i in items[:top]:
        ms = _num(i.get("ms_per_call"))
        act = f" -> {i['action']}" if i.get("action") else ""
        out.append(f"    {i['share']:6.1%} {'' if ms is None else f'{ms:.4f} ms '}"
                   f"{i['what'][:160]}{act}")
    in_graphs = next((i for i in parts["host"] if i.get("kind") == "in_graphs"), None)
    if in_graphs is not None:
        out.append(f"    {in_graphs['share']:6.1%} inside compiled graphs (the work itself)")
    if parts["device"]:
        words = {"device_busy": "busy", "launch_bound": "idle (launch-bound)"}
        out.append("    the device during the same call (adds up to 100 % on its own; idle "
                   "time overlaps the host items above): " + ", ".join(
                       f"{words.get(i.get('kind'), i.get('kind'))} {i['share']:.0%}"
                       for i in sorted(parts["device"],
                                       key=lambda i: i.get("kind") != "device_busy")))
    if rec:
        out.append(f"    {recompile_text(rec)} -> {rec.get('action')}")
    if lost.get("note"):
        out.append(f"    note: {lost['note']}")
    return out


def coverage_line(row: dict[str, Any]) -> str | None:
    cov = row.get("cudagraph_coverage")
    if not cov:
        return None
    share = _num(cov.get("share_in_captured"))
    text = (f"  CUDA graphs [{row['variant']}]: {cov.get('captured', 0)} of "
            f"{cov.get('graphs', 0)} graphs captured, {cov.get('skipped', 0)} skipped")
    if share is not None:
        text += f"; {share:.0%} of the call inside captured graphs"
    reasons = [r for r in cov.get("skip_reasons") or [] if r]
    if reasons:
        text += "; skipped because: " + "; ".join(reasons)[:400]
    return text


def startup_line(row: dict[str, Any]) -> str | None:
    s = row.get("startup")
    if not s:
        return None
    parts: list[str] = []
    problems: list[str] = []
    for key, label in STRATEGIES:
        entry = s.get(key) or {}
        v = _num(entry.get("time_to_first_call_s"))
        error = known_errors.startup_error(key, entry)
        # explained failures (and failures after a first call) get a line of their own
        apart = error is not None and (v is not None or error != entry.get("error"))
        if v is not None:
            parts.append(f"{label} {v:.2f} s" + (" (then failed, below)" if error else ""))
        else:
            parts.append(f"{label} {'failed, below' if apart else error or 'not measured'}")
        if apart:
            problems.append(f"  start-up [{row['variant']}] {label}: {error[:1500]}")
    return "\n".join([f"  start-up [{row['variant']}] (time to first call): " + " | ".join(parts),
                      *problems])


def roofline_line(row: dict[str, Any]) -> str | None:
    """``hardware [v]: 174 GFLOP/call, bytes 210 MiB (floor) to 943 MiB (op by op) -> ...``:
    FLOPs and the two byte counts of engine/measure/roofline.py, achieved TFLOP/s and GB/s, and
    their shares of the GPU's measured ceilings."""
    r = row.get("roofline")
    if not r or r.get("error") or not r.get("flops_per_call") and not r.get(
            "bytes_per_call_estimate"):
        return None
    floor, ops = _num(r.get("bytes_per_call_estimate")) or 0.0, _num(r.get("bytes_per_call_ops"))
    text = (f"  hardware [{row['variant']}]: {r['flops_per_call'] / 1e9:.3g} GFLOP/call, "
            + (f"{floor / 2**20:.3g} MiB/call (floor: parameters, inputs, outputs once) to "
               f"{ops / 2**20:.3g} MiB (eager op by op)" if ops is not None else
               f"~{floor / 2**20:.3g} MiB/call (estimate)"))
    tf, gb = _num(r.get("achieved_tflops")), _num(r.get("achieved_gbps_estimate"))
    gb_ops = _num(r.get("achieved_gbps_ops"))
    if tf is not None and gb is not None:
        text += f" -> {tf:.3g} TFLOP/s, {gb:.3g}" + (
            f" to {gb_ops:.3g} GB/s" if gb_ops is not None else " GB/s")
    if _num(r.get("peak_tflops_bf16")):
        ops_share = _num(r.get("share_of_peak_gbps_ops"))
        text += (f" of measured peaks {r['peak_tflops_bf16']:.0f} TFLOP/s (bf16 matmul), "
                 f"{r['peak_copy_gbps']:.0f} GB/s (copy): {r.get('share_of_peak_tflops', 0):.1%}"
                 f" / {r.get('share_of_peak_gbps', 0):.1%}"
                 + (f" to {ops_share:.1%}" if ops_share is not None else ""))
    return text


def compile_host_line(row: dict[str, Any]) -> str | None:
    """``compile host [default]: cold: other processes 0.0 cores, steal 0.0 %; warm: ...``:
    the host beside each reported compile (engine/measure/compile_load.py), flagged or not."""
    load = row.get("compile_load")
    if not isinstance(load, dict):
        return None
    parts = []
    for which in ("cold", "warm"):
        fig = load.get(which)
        if not isinstance(fig, dict):
            continue
        busy = compile_load.as_figure(fig.get("other_busy_cores"))
        steal = compile_load.as_share(fig.get("steal_share"))
        if busy is None and steal is None:
            continue
        parts.append(f"{which}: other processes "
                     + (f"{busy:.1f} cores" if busy is not None else "unknown")
                     + ", steal " + (f"{steal:.1%}" if steal is not None else "unknown"))
    return f"  compile host [{row['variant']}]: " + "; ".join(parts) if parts else None


def draw_line(row: dict[str, Any]) -> str | None:
    """``autotuned kernels [default]: the cold compile's draw, replayed by 1 process, drawn
    anew by 2``: which processes measured which draw of the autotuned kernel choices
    (engine/measure/autotune_draw.py), with why a redraw was not made."""
    procs = [ProcessResult.from_json(p) for p in row.get("processes") or []
             if isinstance(p, dict)]
    n = {d: sum(p.autotune_draw == d for p in procs) for d in DRAWS}
    if not any(n.values()):
        return None
    said = ["the cold compile's draw"] if n["drawn"] else []
    said += [f"replayed by {n['replayed']} process{'es' if n['replayed'] != 1 else ''}"] if n[
        "replayed"] else []
    said += [f"drawn anew by {n['redrawn']}"] if n["redrawn"] else []
    notes = sorted({p.autotune_draw_note for p in procs if p.autotune_draw_note})
    return (f"  autotuned kernels [{row['variant']}]: " + ", ".join(said)
            + "".join(f"; not drawn anew: {note}" for note in notes))


def lines(rows: list[dict[str, Any]]) -> list[str]:
    """Every forensics line of a run's compiled variants, in table order."""
    out: list[str] = []
    for row in rows:
        if row.get("variant") == "eager":
            piece = roofline_line(row)
            out += [piece] if piece else []
            continue
        for piece in (cache_line(row), draw_line(row), startup_line(row), coverage_line(row),
                      roofline_line(row)):
            if piece:
                out.append(piece)
        seg = phase_segments(row.get("compile_phases_s"), _num(row.get("first_call_cold_s")))
        if any(seg.values()):
            out.append(f"  compile phases [{row['variant']}] (cold, s): " + ", ".join(
                f"{k} {v:.2f}" for k, v in seg.items()))
        piece = compile_host_line(row)
        if piece:
            out.append(piece)
        out += lost_time_lines(row)
    return out


def trace_lines(run_id: int, rows: list[dict[str, Any]], artifacts: list[dict[str, Any]]
                ) -> list[str]:
    """What spec ``keep_trace`` kept per compiled variant (name, size, how to get it) or why
    it kept nothing. ``artifacts``: storage.artifacts.list_artifacts of the run."""
    out: list[str] = []
    kept = {a["variant"]: a for a in artifacts if a.get("kind") == "torch_trace"}
    for row in rows:
        v = row.get("variant")
        a = kept.get(v)
        if a is not None:
            note = f"; {a['note']}" if a.get("note") else ""
            out.append(f"  TORCH_TRACE [{v}]: kept as {a['name']} ({a['size'] / 1024:.1f} KiB "
                       f"gzip{note}): python -m engine trace {run_id} {v} -o t.log.gz; "
                       "gunzip t.log.gz; tlparse t.log")
        elif (row.get("torch_trace") or {}).get("error"):
            out.append(f"  TORCH_TRACE [{v}]: not kept: {row['torch_trace']['error']}")
    return out
