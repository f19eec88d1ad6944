"""What torch itself says about a compile: graphs, breaks, recompiles, cudagraph skips, compile
phase times, kernels per call. Only torch's own diagnostics APIs, each guarded because private
APIs move between releases (the GPU host runs torch 2.11, the dev machines 2.13)."""

from __future__ import annotations

import contextlib
import linecache
import logging
import os
import re
import sys
from collections.abc import Callable
from typing import Any

import torch

from engine.measure.forensics import is_runtime_metric

_TORCH_DIR = os.path.dirname(torch.__file__)


class LogCapture(logging.Handler):
    """Collects dynamo's recompile messages and inductor's cudagraph-skip messages.

    ``torch._logging.set_logs(recompiles=True, cudagraphs=True)`` turns those artifact loggers on;
    they propagate to the ``torch`` logger, where this handler keeps them. Each record is tagged
    with the caller's current context (call index, sweep value) so a recompile can be placed on
    the warm-up curve or the sweep.
    """

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.recompiles: list[dict[str, Any]] = []
        self.cudagraph_skips: list[dict[str, Any]] = []
        self.context: dict[str, Any] = {}

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:  # a malformed log call must never break a measurement
            return
        if "Recompiling function" in msg:
            self.recompiles.append({"reason": _recompile_reason(msg), **self.context})
        elif "skipping cudagraphs" in msg.lower():
            reason = msg.split("due to", 1)[-1].strip() if "due to" in msg else msg.strip()
            if not any(s["reason"] == reason for s in self.cudagraph_skips):
                self.cudagraph_skips.append({"reason": reason[:2000]})

    # The artifact loggers that carry recompile and cudagraph-skip messages (torch 2.11-2.13).
    # A logger can be made by name before the module that owns it is imported, so the handler
    # is in place without importing the compiler (see ``install``).
    KNOWN = ("torch._dynamo.guards.__recompiles",
             "torch._inductor.cudagraph_utils.__cudagraphs",
             "torch._inductor.cudagraph_utils.__perf_hints",
             "torch._inductor.cudagraph_trees.__cudagraphs",
             "torch._inductor.scheduler.__cudagraphs",
             "torch._inductor.compile_fx.__perf_hints")
    SUFFIXES = ("__recompiles", "__cudagraphs", "__perf_hints")

    def install(self) -> None:
        """Turn the artifacts on and attach to their loggers, *without* importing dynamo or
        inductor: a user's fresh process imports inductor inside its first compiled call, and
        so must ours, or the cold and warm first-call times read short by the import
        (docs/measurements/2026-12-03-time-to-answer.md).
        Attach to the artifact loggers themselves: torch's own handlers on intermediate loggers
        stop propagation, so a handler on "torch" would see nothing.  Call ``attach_existing``
        after the first compiled call to catch any artifact logger this list does not name."""
        try:
            torch._logging.set_logs(recompiles=True, cudagraphs=True)
        except Exception:
            # older releases name the cudagraph artifact differently
            with contextlib.suppress(Exception):
                torch._logging.set_logs(recompiles=True, perf_hints=True)
        for name in self.KNOWN:
            logging.getLogger(name).addHandler(self)

    def attach_existing(self) -> None:
        """Attach to every artifact logger with one of our suffixes that exists now (adding a
        handler twice is a no-op)."""
        for name in list(logging.root.manager.loggerDict):
            if name.startswith("torch") and name.endswith(self.SUFFIXES):
                logging.getLogger(name).addHandler(self)


def _recompile_reason(msg: str) -> str:
    """Keep the guard failures ("tensor 'x' size mismatch at index 1. expected 64, actual 128"),
    which say why; drop the header that repeats the function name."""
    _, _, tail = msg.partition("triggered by the following guard failure(s):")
    reason = " | ".join(line.strip(" -") for line in tail.strip().splitlines() if line.strip())
    return (reason or msg.strip())[:2000]


def _dynamo_utils() -> Any | None:
    """``torch._dynamo.utils`` if dynamo is loaded, else None. A process that never imported
    dynamo compiled nothing, and importing it only to read empty counters costs seconds: an
    eager child never compiles."""
    if "torch._dynamo" not in sys.modules:
        return None
    try:
        import torch._dynamo.utils as utils
    except Exception:
        return None
    return utils


def dynamo_counters() -> dict[str, Any]:
    """graph count, break count and break reasons (``counter_break_reasons``) from dynamo's
    counters. ``graph_break`` alone undercounts when a break happens inside a resumed frame, so
    unique_graphs is reported beside it."""
    utils = _dynamo_utils()
    if utils is None:
        return {}
    counters = utils.counters
    stats = counters.get("stats", {})
    return {
        "graph_count": int(stats.get("unique_graphs", 0)),
        "graph_break_total": int(sum(counters.get("graph_break", {}).values())),
        "graph_break_reasons": counter_break_reasons(),
        "cudagraph_skip_count": int(counters.get("inductor", {}).get("cudagraph_skips", 0)),
    }


def _without_addresses(reason: str) -> str:
    """Reasons can embed object addresses that differ per occurrence; they say nothing."""
    return re.sub(r" at 0x[0-9a-f]+", "", reason)


def counter_break_reasons() -> dict[str, int]:
    """Dynamo's own record of graph breaks, ``{reason: count}``, read before ``explain`` resets
    it. It sees breaks that ``explain`` of the model cannot: a compiled optimizer step's
    (``torch.optim`` calls ``torch._dynamo.graph_break()`` on purpose). The reason is its first
    line and, when present, the "Explanation:" line."""
    utils = _dynamo_utils()
    if utils is None:
        return {}
    out: dict[str, int] = {}
    for key, n in utils.counters.get("graph_break", {}).items():
        lines = [ln.strip() for ln in str(key).splitlines() if ln.strip()]
        if not lines:
            continue
        why = next((ln for ln in lines[1:] if ln.startswith("Explanation:")), "")
        reason = f"{lines[0]} ({why})" if why else lines[0]
        reason = _without_addresses(reason)[:1000]
        out[reason] = out.get(reason, 0) + int(n)
    return out


def unexplained_breaks(counted: dict[str, int], explained: list[dict[str, Any]],
                       where: str) -> list[dict[str, Any]]:
    """Breaks dynamo counted whose reason none of ``explained`` starts with, as graph-break
    rows without a user file:line; ``where`` says what was compiled that explain did not trace
    (so a reader is not sent looking for it in the model)."""
    seen = [str(b.get("reason") or "") for b in explained]
    seen = [r for r in seen if r]  # an empty reason would match every counted one
    rows = []
    for reason, n in counted.items():
        first = reason.split(" (Explanation:")[0]
        if any(r.startswith(first) or first.startswith(r) for r in seen):
            continue
        rows.append({"reason": f"{reason} [{where}]", "file": None, "line": None, "count": n})
    return rows


# torch keeps only its last 64 compilation-metrics records (a bounded deque): a decoder that
# sets up a CUDA graph per decode position fills that within one generation, and counts taken
# as differences then read short, or go down as frames drop out. A measuring process keeps
# them all (a record is a few hundred bytes).
METRICS_LIMIT = 100_000


def keep_compilation_metrics() -> None:
    """Widen dynamo's record window to ``METRICS_LIMIT`` once dynamo is loaded (never imports
    it: a fresh process imports the compiler inside its first compiled call)."""
    utils = _dynamo_utils()
    kept = getattr(utils, "_compilation_metrics", None)
    widen = getattr(utils, "set_compilation_metrics_limit", None)
    if widen is not None and (getattr(kept, "maxlen", None) or METRICS_LIMIT) < METRICS_LIMIT:
        with contextlib.suppress(Exception):
            widen(METRICS_LIMIT)


def _metrics() -> list[Any]:
    utils = _dynamo_utils()
    if utils is None:
        return []
    keep_compilation_metrics()
    try:
        return utils.get_compilation_metrics()  # a list copy of torch's deque
    except Exception:
        return []


# records seen, the last of them (held, so that a new record cannot pass for it), frames
# compiled, CUDA-graph records among them
_COUNTED: list[Any] = [-1, None, 0, 0]


def compile_counts() -> tuple[int, int]:
    """(frames dynamo has compiled, CUDA-graph set-ups and recordings) so far. Run-time records
    are not compiles: a Mistral decoder under reduce-overhead logs one per decode position of its
    first generation, and counting them read as 58 recompiles. Classified again only when the
    records moved (dynamo's reset empties them), since decoding asks per step."""
    ms = _metrics()
    last = ms[-1] if ms else None
    if len(ms) != _COUNTED[0] or last is not _COUNTED[1]:
        runtime = [m for m in ms if is_runtime_metric(m)]
        graphs = sum(1 for m in runtime
                     if getattr(m, "runtime_cudagraphify_time_us", None) is not None)
        _COUNTED[:] = [len(ms), last, len(ms) - len(runtime), graphs]
    return _COUNTED[2], _COUNTED[3]


def compile_count() -> int:
    """How many frames dynamo has compiled so far (a recompile adds one)."""
    return compile_counts()[0]


def compile_phases() -> dict[str, float]:
    """Seconds spent per compile phase, summed over every frame compiled, from
    ``torch._dynamo.utils.get_compilation_metrics()`` (fields differ by release: take those
    present)."""
    utils = _dynamo_utils()
    try:
        metrics = utils.get_compilation_metrics() if utils is not None else []
    except Exception:
        return {}
    fields = {
        "dynamo_total": "entire_frame_compile_time_s",
        "backend": "backend_compile_time_s",
        "inductor": "inductor_compile_time_s",
        "codegen": "code_gen_time_s",
    }
    us_fields = {
        "triton_compile": "triton_compile_time_us",
        "autotune": "compile_time_autotune_time_us",
        "cudagraphify": "runtime_cudagraphify_time_us",
    }
    out: dict[str, float] = {}
    for m in metrics:
        for name, attr in fields.items():
            v = getattr(m, attr, None)
            if isinstance(v, (int, float)):
                out[name] = out.get(name, 0.0) + float(v)
        for name, attr in us_fields.items():
            v = getattr(m, attr, None)
            if isinstance(v, (int, float)):
                out[name] = out.get(name, 0.0) + float(v) / 1e6
    return {k: round(v, 6) for k, v in out.items()}


def _user_frame(stack: Any) -> tuple[str | None, int | None]:
    """The innermost frame outside torch itself: the user's line that caused the break."""
    frames = list(stack or [])
    for fr in reversed(frames):
        filename = getattr(fr, "filename", None)
        if filename and not filename.startswith(_TORCH_DIR):
            return filename, getattr(fr, "lineno", None)
    if frames:
        return getattr(frames[-1], "filename", None), getattr(frames[-1], "lineno", None)
    return None, None


def explain_breaks(model: torch.nn.Module, inputs: tuple[Any, ...]) -> dict[str, Any]:
    """Graph breaks with reason and user file:line via ``torch._dynamo.explain``.

    explain resets dynamo's state, so the child calls this last, after every timing. Breaks are
    de-duplicated by (reason, file, line) and counted.
    """
    import torch._dynamo as dynamo

    out = dynamo.explain(model)(*inputs)
    merged: dict[tuple[str, str | None, int | None], int] = {}
    for br in getattr(out, "break_reasons", []) or []:
        reason = str(getattr(br, "reason", br)).strip().splitlines()[0][:1000]
        reason = _without_addresses(reason)
        file, line = _user_frame(getattr(br, "user_stack", None))
        code = linecache.getline(file, line).strip() if file and line else ""
        if code and code not in reason:
            reason = f"{reason}: `{code[:200]}`"  # the line itself says more than the reason
        key = (reason, file, line)
        merged[key] = merged.get(key, 0) + 1
    breaks = [
        {"reason": r, "file": f, "line": ln, "count": c} for (r, f, ln), c in merged.items()
    ]
    return {
        "graph_count": int(getattr(out, "graph_count", 0)),
        "graph_break_count": int(getattr(out, "graph_break_count", len(breaks))),
        "graph_breaks": breaks,
    }


def profile_calls(fn: Callable[[], object], calls: int, cuda: bool) -> dict[str, float | None]:
    """Kernels per call and device-busy time per call from a separate ``torch.profiler`` pass.

    The profiler slows the host 2-5x, so nothing here is used as a latency; kernel durations on
    the device are unaffected. Busy time is the union of device activity intervals (overlapping
    kernels on several streams count once).
    """
    if not cuda:
        return {"kernels_per_call": None, "device_busy_ms_per_call": None}
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    intervals = []
    for ev in prof.events():
        if getattr(ev, "device_type", None) == DeviceType.CUDA:
            tr = ev.time_range
            intervals.append((tr.start, tr.end))
    busy_us = union_length(intervals)
    return {
        "kernels_per_call": len(intervals) / calls,
        "device_busy_ms_per_call": busy_us / 1e3 / calls,
    }


def union_length(intervals: list[tuple[float, float]] | list[list[float]]) -> float:
    """Total length covered by the (start, end) intervals, overlaps counted once."""
    total, cur_s, cur_e = 0.0, 0.0, None
    for s, e in sorted((float(a), float(b)) for a, b in intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (cur_e - cur_s if cur_e is not None else 0.0)
