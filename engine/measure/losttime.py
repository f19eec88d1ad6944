"""Why a compiled variant is not faster: a ranked account of the time lost per call, and the
CUDA-graph coverage of reduce-overhead variants.

Method. After timing, a separate ``torch.profiler`` pass runs a few calls, each wrapped in a
``compilelab::call`` marker (the profiler slows the host, so no latency comes from it: it
gives *shares* of a call, which are applied to the steady-state median measured without it).
torch marks what we need itself:

* ``TorchDynamo Cache Lookup``: dynamo checking the guards of a compiled frame;
* ``Torch-Compiled Region: F/A``: running compiled frame ``F/A`` (nested: a graph break ends a
  frame's graph, runs the unsupported code in Python, then enters the *resume* frame, named
  ``torch_dynamo_resume_in_<fn>_at_<line>`` after the line of the break);
* ``## Call CompiledFxGraph <key> ##``: inductor running one compiled graph;
* ``cudaGraphLaunch``: a CUDA graph replayed (reduce-overhead).

So, per call: time inside compiled graphs; guard checks; each frame's own time outside its
graph, which is the cost of the break that ends it (a ``print``, a ``.item()`` that waits for
the device, a Python ``if`` on a tensor), named with the break's file:line and reason from
``torch._dynamo.explain``; the Python around the outermost frame; and on a GPU the device's
idle time within the call (launch-bound).

Two accounts of the same call, each adding up to 100 % (``part`` of each item):

* ``host``: where the host's time of the call went (compiled graphs, guards, each break, the
  Python around them; with CUDA graphs, the graphs that were not replayed as CUDA graphs are
  split out of "inside compiled graphs"). These items partition the call.
* ``device`` (GPU only): the device busy and idle within the same call. Idle time overlaps the
  host items (the GPU waits while the host runs them), so a launch-bound 49 % beside 65 % in
  graphs is no contradiction: they answer different questions, and the two are never summed.

Recompiles are not a per-call cost: each is paid once, at the call whose inputs broke a guard.
``recompile_item`` gives their count, their compile seconds and their share of the variant's
compile time in this process (first compiles + recompiles, torch's per-frame compile times).

The analysis (``account``, ``cudagraph_coverage``) is pure Python over plain event dicts, so it
is tested without a profiler; ``record_timeline`` is the only part that needs torch.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from engine.measure import signals
from engine.measure.forensics import is_runtime_metric

CALL = "compilelab::call"
_RESUME = re.compile(r"torch_dynamo_resume_in_(\w+?)_at_(\d+)$")
_KINDS = (("Torch-Compiled Region", "region"), ("TorchDynamo Cache Lookup", "lookup"),
          ("## Call CompiledFxGraph", "graph"), ("cudaGraphLaunch", "cg_launch"),
          (CALL, "call"))


def _kind(name: str) -> str | None:
    for prefix, kind in _KINDS:
        if name.startswith(prefix):
            return kind
    return None


def record_timeline(fn: Callable[[], object], calls: int = 5, cuda: bool = False
                    ) -> dict[str, Any]:
    """Profile ``calls`` calls of ``fn``; return the host events that matter (microseconds)
    and, on a GPU, the device activity intervals."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile, record_function

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=acts) as prof:
        for _ in range(calls):
            with record_function(CALL):
                fn()
            if cuda:  # the call's window must hold its device work, not the next call's
                torch.cuda.synchronize()
    events, kernels = [], []
    for ev in prof.events():
        tr = ev.time_range
        if getattr(ev, "device_type", None) == DeviceType.CUDA:
            kernels.append([float(tr.start), float(tr.end)])
            continue
        kind = _kind(ev.name)
        if kind:
            events.append({"kind": kind, "name": ev.name[:200], "start": float(tr.start),
                           "end": float(tr.end), "thread": int(getattr(ev, "thread", 0))})
    return {"events": events, "kernels": kernels, "calls": calls}


def frames_from_metrics() -> dict[str, dict[str, Any]]:
    """compile id -> the frame's code name, file and first line, from dynamo's metrics (call it
    before ``explain``, which resets them)."""
    import sys

    utils = sys.modules.get("torch._dynamo.utils")
    out: dict[str, dict[str, Any]] = {}
    try:
        for m in utils.get_compilation_metrics() if utils else []:
            if is_runtime_metric(m):  # a CUDA-graph set-up or recording, not a frame
                continue
            seen = out.setdefault(str(m.compile_id), {})
            got = {"co_name": m.co_name, "file": m.co_filename, "line": m.co_firstlineno,
                   "compile_s": getattr(m, "entire_frame_compile_time_s", None)}
            # torch 2.11 records some compile ids twice (for the graph-break model "0/0" and the
            # resume frame after the data-dependent branch, "3/0"), the second time without a code
            # name: a later record fills gaps and never blanks what an earlier one named, or
            # that break's time would be counted as plain Python.
            for key, value in got.items():
                if seen.get(key) is None:
                    seen[key] = value
    except Exception:
        pass
    return out


def _tree(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Nest events by time containment per thread: each gets ``children`` and ``parent``."""
    nodes = [dict(e, children=[], parent=None) for e in events]
    nodes.sort(key=lambda e: (e.get("thread", 0), e["start"], -e["end"]))
    stack: list[dict[str, Any]] = []
    for n in nodes:
        while stack and (stack[-1].get("thread", 0) != n.get("thread", 0)
                         or stack[-1]["end"] < n["end"]):
            stack.pop()
        if stack:
            n["parent"] = stack[-1]
            stack[-1]["children"].append(n)
        stack.append(n)
    return nodes


def _dur(n: dict[str, Any]) -> float:
    return max(n["end"] - n["start"], 0.0)


def _within(node: dict[str, Any], kinds: tuple[str, ...], stop: tuple[str, ...] = ("region",)
            ) -> list[dict[str, Any]]:
    """Descendants of ``node`` of the given kinds, not looking inside nodes of kind ``stop``."""
    out = []
    for c in node["children"]:
        if c["kind"] in kinds:
            out.append(c)
        if c["kind"] not in stop:
            out += _within(c, kinds, stop)
    return out


def _compile_id(region: dict[str, Any]) -> str:
    return region["name"].split(":", 1)[-1].strip()


def _busy(intervals: list[list[float]], lo: float, hi: float) -> float:
    """Union length of the intervals clipped to [lo, hi]."""
    return signals.union_length([(max(s, lo), min(e, hi)) for s, e in intervals
                                 if e > lo and s < hi])


def action_for(reason: str, where: str) -> str:
    """The one change that would recover a break's time, from its reason."""
    r = reason.lower()
    if "print" in r:
        return f"remove the print at {where} (or run it only when not torch.compiler.is_compiling())"
    if ".item()" in r or "item" in r and "scalar" in r:
        return (f"remove the .item() at {where}: keep the value a tensor (or set "
                "torch._dynamo.config.capture_scalar_outputs = True)")
    if "jump" in r or "data-dependent" in r or "data dependent" in r:
        return f"replace the data-dependent branch at {where} with torch.where or torch.cond"
    return f"rewrite the code at {where} so dynamo can trace it"


def _short(path: str | None) -> str:
    if not path:
        return "?"
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-3:]) if "engine" in parts else parts[-1]


class _Sums(dict):
    """Lost time per item over the profiled calls: ``{key: {"us", "count", **info}}``."""

    def add(self, key: str, us: float, **info: Any) -> None:
        item = self.setdefault(key, {"us": 0.0, "count": 0, **info})
        item["us"] += us
        item["count"] += 1


def _region(sums: _Sums, r: dict[str, Any], frames: dict[str, dict[str, Any]],
            by_line: dict[tuple[str, Any], dict[str, Any]], marked: bool) -> None:
    """A compiled frame's time outside its graphs: a graph break's, or the last frame's glue."""
    own_graphs = _within(r, ("graph",))
    nested = _within(r, ("region", "lookup"), stop=("region", "lookup"))
    outside = _dur(r) - sum(_dur(g) for g in own_graphs) - sum(_dur(n) for n in nested)
    if not marked:
        outside = 0.0  # this backend does not mark its graphs: cannot split the frame
    child = next((n for n in nested if n["kind"] == "region"), None)
    frame = frames.get(_compile_id(child)) if child else None
    m = _RESUME.search((frame or {}).get("co_name") or "") if frame else None
    if not m:  # the last frame: returning its outputs, frame glue
        sums.add("python", max(outside, 0.0))
        return
    file, line = frame.get("file"), int(m.group(2))
    where = f"{_short(file)}:{line}"
    b = by_line.get((_short(file), line)) or {}
    reason = b.get("reason") or "graph break (reason not reported by explain)"
    sums.add(f"break {where}", max(outside, 0.0), kind="graph_break", file=file, line=line,
             reason=reason, where=where)


def _call(sums: _Sums, call: dict[str, Any], nodes: list[dict[str, Any]], timeline: dict,
          frames: dict, by_line: dict, *, marked: bool, cuda: bool, cudagraphs: bool) -> float:
    """One profiled call's lost time into ``sums``; returns its wall time (us)."""
    wall = _dur(call)
    for lk in _within(call, ("lookup",), stop=()):
        sums.add("guards", _dur(lk))
    graphs = _within(call, ("graph",), stop=())
    for g in graphs:
        # with CUDA graphs, a graph that did not replay as one is its own host item
        uncaptured = cudagraphs and not _within(g, ("cg_launch",), stop=())
        sums.add("uncaptured" if uncaptured else "graphs", _dur(g))
    top = _within(call, ("region", "lookup"), stop=("region", "lookup"))
    sums.add("python", max(wall - sum(_dur(t) for t in top), 0.0))
    for r in (n for n in nodes if n["kind"] == "region" and _inside(n, call)):
        _region(sums, r, frames, by_line, marked)
    if cuda:
        kernels = timeline.get("kernels") or []
        busy = min(_busy(kernels, call["start"], call["end"]), wall)
        sums.add("idle", wall - busy)
        sums.add("busy", busy)
    return wall


_WORDS: dict[str, dict[str, Any]] = {
    "graphs": {"kind": "in_graphs", "what": "inside compiled graphs (the work itself)",
               "action": None},
    "guards": {"what": "guard checks (TorchDynamo cache lookup)", "action": (
        "fewer compiled frames: each graph break adds a frame whose guards run every call")},
    "uncaptured": {"kind": "uncaptured_cudagraph", "what": "compiled graphs not replayed as "
                   "CUDA graphs", "action": "fix the cudagraph skip reason (see CUDA-graph "
                   "coverage)"},
    "busy": {"kind": "device_busy", "part": "device", "what": "GPU busy within the call "
             "(kernels, copies)", "action": None},
}
# the accounts an item belongs to (module docstring); each adds up to 100 % of the call
PARTS = {"host": "host time of the call", "device": "the device during the same call"}


def _describe(key: str, s: dict[str, Any], cudagraphs: bool) -> dict[str, Any]:
    """What an item is and what would recover its time."""
    if key in _WORDS:
        return {"part": "host", **_WORDS[key]}
    if key == "python":
        return {"part": "host",
                "what": "Python outside compiled graphs (module call, frame entry/exit)",
                "action": None if cudagraphs else "mode='reduce-overhead' (CUDA graphs) or "
                "fewer Python layers around the model"}
    if key == "idle":
        return {"kind": "launch_bound", "part": "device", "what": "GPU idle within the call "
                "(launch-bound; the host items run meanwhile)", "action": None if cudagraphs else
                "mode='reduce-overhead' replays the kernels as one CUDA graph"}
    return {"part": "host", "what": f"graph break at {s['where']}: {s['reason']}",
            "file": s["file"],
            "line": s["line"], "reason": s["reason"],
            "action": action_for(s["reason"], s["where"])}


def account(timeline: dict[str, Any], frames: dict[str, dict[str, Any]],
            breaks: list[dict[str, Any]], *, wall_ms: float | None, cuda: bool = False,
            cudagraphs: bool = False) -> dict[str, Any]:
    """Ranked lost time per call (see the module docstring). ``frames``: compile id -> frame
    (``frames_from_metrics``); ``breaks``: the child's ``graph_breaks`` (explain); ``wall_ms``:
    the steady-state per-call median that the shares are applied to."""
    nodes = _tree(timeline.get("events") or [])
    calls = [n for n in nodes if n["kind"] == "call"]
    if not calls:
        return {"items": [], "note": "no profiled calls"}
    marked = any(n["kind"] == "graph" for n in nodes)
    by_line = {(_short(b.get("file")), b.get("line")): b for b in breaks or []}
    sums = _Sums()
    total_us = sum(_call(sums, call, nodes, timeline, frames, by_line, marked=marked,
                         cuda=cuda, cudagraphs=cudagraphs) for call in calls)
    n_calls = len(calls)
    items = []
    for key, s in sums.items():
        share = s["us"] / total_us if total_us else 0.0
        row = {"kind": s.get("kind", key), "share": round(share, 4),
               "profiled_ms_per_call": round(s["us"] / n_calls / 1e3, 6),
               "ms_per_call": None if wall_ms is None else round(share * wall_ms, 6),
               "per_call": round(s["count"] / n_calls, 2)}
        row.update(_describe(key, s, cudagraphs))
        items.append(row)
    items.sort(key=lambda r: (r["part"] != "host", r["kind"] in ("in_graphs", "device_busy"),
                              -r["share"]))
    out: dict[str, Any] = {"items": items, "parts": dict(PARTS),
                           "profiled_ms_per_call": round(total_us / n_calls / 1e3, 6),
                           "calls": n_calls, "method": "shares of the call from a torch.profiler "
                           "pass, applied to the steady-state median"}
    if not marked:
        out["note"] = ("this backend does not mark its compiled graphs in the profiler (inductor "
                       "does): time per graph break is not split from the graphs")
    return out



def _inside(node: dict[str, Any], ancestor: dict[str, Any]) -> bool:
    p = node.get("parent")
    while p is not None:
        if p is ancestor:
            return True
        p = p.get("parent")
    return False


_SHAPE_GUARD = ("size mismatch", "stride mismatch")
_DYNAMIC = "mark the changing dimension dynamic (dynamic=True or torch._dynamo.mark_dynamic)"
_SAME_CALL = ("make the guard that failed hold on every call (each recompile line names it: the "
              "same keyword arguments, types and Python values; a Python number that changes "
              "can be made dynamic with dynamic=True), or accept one compile per kind of call")


def recompile_action(reasons: list[str]) -> str:
    """What would avoid the recompiles, by their guard failures: a shape that changed is made
    dynamic; any other guard (a different set of keyword arguments, a Python value) is not a
    shape, and marking a dimension dynamic would not help it."""
    reasons = [r for r in reasons if r]  # a recompile stored without its reason says nothing
    shapes = [any(g in r for g in _SHAPE_GUARD) for r in reasons]
    if reasons and all(shapes):
        return _DYNAMIC
    if reasons and not any(shapes):
        return _SAME_CALL
    return f"where a shape changed, {_DYNAMIC}; otherwise {_SAME_CALL}"


def recompile_item(frames: dict[str, dict[str, Any]], first_call_s: float | None,
                   reasons: list[str] | None = None) -> dict[str, Any] | None:
    """Recompiles (compile ids ``F/A`` with ``A`` > 0): how many, their compile seconds, and
    their share of the compile time of this process (every frame's compile, first compiles
    and recompiles: ``share_of_compile``, in [0, 1]); ``share_of_first_call`` compares them
    with the cold first call (above 1 when recompiling cost more than the first compile).
    Not a per-call cost: each is paid once, at the call whose inputs broke a guard."""
    again = [f for cid, f in frames.items() if cid.rsplit("/", 1)[-1] not in ("0", "")]
    if not again:
        return None
    secs = sum(f.get("compile_s") or 0.0 for f in again)
    total = sum(f.get("compile_s") or 0.0 for f in frames.values())
    return {"kind": "recompiles", "part": "once", "count": len(again),
            "compile_s": round(secs, 6), "compile_total_s": round(total, 6),
            "share_of_compile": round(secs / total, 4) if total else None,
            "share_of_first_call": round(secs / first_call_s, 4) if first_call_s else None,
            "what": f"{len(again)} recompile(s)",
            "action": recompile_action(reasons or [])}


def cudagraph_coverage(timeline: dict[str, Any], skips: list[dict[str, Any]],
                       counters: dict[str, Any] | None = None) -> dict[str, Any]:
    """Which compiled graphs replayed as CUDA graphs (a ``cudaGraphLaunch`` inside the graph's
    call) and which did not, with inductor's skip reasons, and the share of the call's host time
    spent inside replayed graphs."""
    nodes = _tree(timeline.get("events") or [])
    calls = [n for n in nodes if n["kind"] == "call"]
    graphs: dict[str, dict[str, Any]] = {}
    in_captured, total = 0.0, sum(_dur(c) for c in calls)
    for g in (n for n in nodes if n["kind"] == "graph"):
        key = g["name"].replace("## Call CompiledFxGraph", "").strip(" #")[:24] or "?"
        captured = bool(_within(g, ("cg_launch",), stop=()))
        entry = graphs.setdefault(key, {"graph": key, "captured": captured, "calls": 0})
        entry["captured"] = entry["captured"] and captured
        entry["calls"] += 1
        if captured:
            in_captured += _dur(g)
    launches = sum(1 for n in nodes if n["kind"] == "cg_launch")
    return {
        "graphs": len(graphs), "captured": sum(1 for g in graphs.values() if g["captured"]),
        "skipped": sum(1 for g in graphs.values() if not g["captured"]),
        "per_graph": list(graphs.values()),
        "skip_reasons": [s.get("reason") for s in skips or []],
        "cudagraph_skips": int((counters or {}).get("cudagraph_skip_count") or 0),
        "graph_launches_per_call": round(launches / len(calls), 2) if calls else None,
        "share_in_captured": round(in_captured / total, 4) if total else None,
    }


CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")


class LostTime:
    """The child's hook: ``LostTime(fn, cuda)`` profiles before ``explain`` resets dynamo (the
    frame table comes from dynamo's metrics); ``result(res, variant)`` builds the account once
    the breaks are known. Never raises: a failure becomes the account's ``error``."""

    def __init__(self, fn: Callable[[], object], cuda: bool, calls: int = 5) -> None:
        self.error: str | None = None
        self.timeline: dict[str, Any] = {}
        self.frames: dict[str, dict[str, Any]] = {}
        self.cuda = cuda
        try:
            self.frames = frames_from_metrics()
            self.timeline = record_timeline(fn, calls, cuda)
        except Exception as e:  # forensics must never cost a measurement
            self.error = f"{type(e).__name__}: {str(e)[:300]}"

    def kernel_figures(self) -> dict[str, float | None] | None:
        """Kernels and device-busy time per call from this pass, as
        ``signals.profile_calls`` measures them (device activity intervals, overlaps counted
        once), so the variant needs no second profiler pass; None where the pass failed."""
        if self.error or not self.timeline:
            return None
        if not self.cuda:
            return {"kernels_per_call": None, "device_busy_ms_per_call": None}
        from engine.measure.signals import union_length

        kernels, calls = self.timeline["kernels"], max(int(self.timeline["calls"]), 1)
        return {"kernels_per_call": len(kernels) / calls,
                "device_busy_ms_per_call": union_length(kernels) / 1e3 / calls}

    def result(self, res: dict[str, Any], run: dict[str, Any], variant: str) -> dict[str, Any]:
        if self.error:
            return {"lost_time": {"items": [], "error": self.error}}
        from engine.grid import mode_of

        # CUDA graphs only on a GPU: on a CPU these modes run without them, nothing to capture
        cudagraphs = (self.cuda and mode_of(variant) in CUDAGRAPH_MODES
                      and run.get("backend", "inductor") == "inductor")
        try:
            lost = account(self.timeline, self.frames, res.get("graph_breaks") or [],
                           wall_ms=res.get("wall_ms_per_call"), cuda=self.cuda,
                           cudagraphs=cudagraphs)
            rec = recompile_item(self.frames, res.get("first_call_cold_s"),
                                 [str(r.get("reason") or "") for r in res.get("recompiles") or []
                                  if isinstance(r, dict)])
            if rec:
                lost["recompiles"] = rec
            out: dict[str, Any] = {"lost_time": lost}
            if cudagraphs:
                from engine.measure import signals

                out["cudagraph_coverage"] = cudagraph_coverage(
                    self.timeline, res.get("cudagraph_skips") or [], signals.dynamo_counters())
            return out
        except Exception as e:
            return {"lost_time": {"items": [], "error": f"{type(e).__name__}: {str(e)[:300]}"}}
