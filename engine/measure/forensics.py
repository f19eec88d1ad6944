"""Cache forensics: what torch's compile caches did on each compile of a variant.

Each measuring process compiles once (the cold process on an empty cache directory, the
warm-cache processes on the directory it filled). Around that compile we read torch's own
counters, ``torch._dynamo.utils.counters`` (groups ``inductor`` and ``aot_autograd``: the FX
graph cache, the AOTAutograd cache, inductor's in-process compile cache, the autotune and
Triton-bundle counters) before and after, and keep the difference under torch's own names as
integers. The per-frame cache counts of ``get_compilation_metrics()`` (``inductor_fx_local_
cache_hit_count`` ...) are kept beside them, so a compile that broke into several frames shows
which frame missed.

Why a warm-cache compile missed: torch logs every cache decision at INFO level ("fx graph cache
miss for key K", "Bypassing FX Graph Cache because 'R'", "Bypassing autograd cache due to: R").
A bypass carries torch's reason verbatim. A miss carries only its key, so we look the key up in
the cache directory: absent means the graph, its inputs or inductor's configuration hash
differently from the compile that filled the cache; present means the entry was found and
rejected (its shape guards did not hold for these inputs).

Triton and autotuning. torch counts what its FX graph cache did with the Triton kernels it
bundles (``triton_bundler_save_kernel`` on a miss, ``triton_bundler_read_and_emit_kernel`` on a
hit), its in-process kernel compile cache (``async_compile_cache_hit`` / ``_miss``) and each
max-autotune algorithm selection it had to benchmark (``select_algorithm_autotune``: a selection
found in select_algorithm's own cache is not benchmarked; torch may benchmark selections again
in a fresh process after FX-graph cache hits, with or without the engine: docs/METHOD.md §9.11).
The autotune cache of a Triton kernel (its best config,
``<kernel>.best_config`` beside the kernel) has no counter: torch records its decision on the
kernel itself, ``autotune_cache_info["autotune_cache_state"]`` ("hit", "miss", "only 1 config",
"force_disabled"). After the compile we read that state from every kernel of the modules the
compile loaded (``PyCodeCache.modules``), and count kernels per state under torch's words.
Triton's own on-disk compile cache is not counted by torch and not reported. On a CPU inductor
writes C++ kernels: the Triton and autotune figures stay 0 / empty.

Everything is guarded: private APIs move between torch releases (2.11 on the GPU host, 2.13
here), and forensics must never break a measurement.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
from typing import Any

# Counter groups and the substrings that select cache-related counters in them. Selecting by
# substring, not by a fixed list, keeps counters that a torch release adds or renames.
_GROUPS = {"inductor": ("cache", "autotune", "triton_bundler", "select_algorithm"),
           "aot_autograd": ("cache",)}
# Always present (0 when torch did not count them), so a reader sees "0 hits", not "unknown".
CORE = ("fxgraph_cache_hit", "fxgraph_cache_miss", "fxgraph_cache_bypass",
        "autograd_cache_hit", "autograd_cache_miss", "autograd_cache_bypass")
# The Triton kernels' caches, torch's counter names (torch/_inductor/triton_bundler.py,
# async_compile.py, select_algorithm.py; the same in torch 2.11 and 2.13).
TRITON = ("triton_bundler_save_kernel", "triton_bundler_read_and_emit_kernel",
          "async_compile_cache_hit", "async_compile_cache_miss", "select_algorithm_autotune")
# torch's per-kernel autotune cache decision (triton_heuristics.check_autotune_cache)
AUTOTUNE_STATE = "autotune_cache_state"
_METRIC_RE = re.compile(r"(cache_(hit|miss)_count)$")
# The loggers that state each cache decision, and what their messages look like.
_LOGGERS = ("torch._inductor.codecache", "torch._functorch._aot_autograd.autograd_cache")
_EVENTS = (
    (re.compile(r"fx graph cache (hit|miss) for key (\S+)"), "fxgraph"),
    (re.compile(r"AOTAutograd cache (hit|miss) for key (\S+)"), "autograd"),
)
_BYPASS = (
    (re.compile(r"Bypassing FX Graph Cache because '?(.*?)'?$", re.S), "fxgraph"),
    (re.compile(r"Bypassing autograd cache due to: (.*)$", re.S), "autograd"),
)


class CacheLog(logging.Handler):
    """Keeps torch's cache decisions (hit / miss / bypass, key, reason) while installed."""

    def __init__(self, cache_dir: str | None = None) -> None:
        super().__init__(level=logging.INFO)
        self.events: list[dict[str, Any]] = []
        self.cache_dir = cache_dir

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:
            return
        for pattern, cache in _EVENTS:
            m = pattern.search(msg)
            if m:
                ev = {"cache": cache, "state": m.group(1), "key": m.group(2)}
                if cache == "fxgraph" and ev["state"] == "miss":
                    # looked up now: after the compile, the entry it writes would be found
                    ev["on_disk"] = _key_on_disk(self.cache_dir, ev["key"])
                self.events.append(ev)
                return
        for pattern, cache in _BYPASS:
            m = pattern.search(msg)
            if m:
                self.events.append({"cache": cache, "state": "bypass",
                                    "reason": m.group(1).strip()[:1000]})
                return

    def install(self) -> None:
        """Attach to the cache loggers by name, without importing their modules: installed just
        before a timed first call, an import here took part of inductor's import (which a
        user's fresh process pays inside that call) out of the cold and warm compile times, which
        then read short against a hand-written script's
        (docs/measurements/2026-12-04-time-to-answer.md).  The module's own
        ``getLogger(__name__)`` later finds this logger."""
        for name in _LOGGERS:
            logger = logging.getLogger(name)
            if self not in logger.handlers:
                # torch would not print these at its default level; keep it that way
                # (propagation off) unless the user asked for INFO logs of the parent.
                if not logger.parent or logger.parent.getEffectiveLevel() > logging.INFO:
                    logger.propagate = False
                logger.setLevel(logging.INFO)
                logger.addHandler(self)


def counter_snapshot() -> dict[str, int]:
    """The cache-related counters of ``torch._dynamo.utils.counters`` now (torch's names)."""
    utils = sys.modules.get("torch._dynamo.utils")
    if utils is None:
        return {}
    out: dict[str, int] = {}
    with contextlib.suppress(Exception):
        counters = utils.counters
        for group, keys in _GROUPS.items():
            for name, value in dict(counters.get(group, {})).items():
                if any(k in name for k in keys) and isinstance(value, int):
                    out[name] = out.get(name, 0) + int(value)
    return out


def is_runtime_metric(m: Any) -> bool:
    """Whether a compilation-metrics record is work done at run time, not a frame compiled:
    CUDA-graph trees log each graph they set up for a new input shape or record there
    (``is_runtime``), under the frame's compile id and without a code name."""
    return getattr(m, "is_runtime", False) is True


def frame_metrics(skip: int = 0) -> list[dict[str, Any]]:
    """Per compiled frame (after the first ``skip`` records; run-time records left out): compile
    id, code name and the cache counts of ``get_compilation_metrics()`` (fields that exist in
    this release)."""
    utils = sys.modules.get("torch._dynamo.utils")
    out: list[dict[str, Any]] = []
    if utils is None:
        return out
    try:
        metrics = list(utils.get_compilation_metrics())[skip:]
    except Exception:
        return out
    for m in metrics:
        if is_runtime_metric(m):
            continue
        row: dict[str, Any] = {"compile_id": str(getattr(m, "compile_id", None)),
                               "co_name": getattr(m, "co_name", None)}
        for name, value in vars(m).items() if hasattr(m, "__dict__") else []:
            if _METRIC_RE.search(name) and isinstance(value, int):
                row[name] = value
        out.append(row)
    return out


def _loaded_modules() -> list[Any]:
    """The generated modules inductor has loaded in this process (none before it is imported)."""
    codecache = sys.modules.get("torch._inductor.codecache")
    cache = getattr(codecache, "PyCodeCache", None)
    mods = getattr(cache, "modules", None)
    return list(mods) if isinstance(mods, list) else []


def autotune_states(modules: list[Any]) -> dict[str, int]:
    """Kernels per autotune cache decision, over the Triton kernels of ``modules``: each
    kernel (a ``CachingAutotuner`` once its module has waited for its compiles) carries
    ``autotune_cache_info``; a kernel whose info holds no decision is not counted."""
    out: dict[str, int] = {}
    seen: set[int] = set()
    for mod in modules:
        for value in list(getattr(mod, "__dict__", {}).values()):
            info = getattr(value, "autotune_cache_info", None)
            if id(value) in seen or not isinstance(info, dict):
                continue
            seen.add(id(value))
            state = info.get(AUTOTUNE_STATE)
            if isinstance(state, str):
                out[state] = out.get(state, 0) + 1
    return out


def _n_metrics() -> int:
    utils = sys.modules.get("torch._dynamo.utils")
    try:
        return len(utils.get_compilation_metrics()) if utils is not None else 0
    except Exception:
        return 0


def _key_on_disk(cache_dir: str | None, key: str) -> bool | None:
    """Whether an FX graph cache entry with this key exists in ``cache_dir`` (None: unknown).
    Inductor keeps entries at ``<cache dir>/fxgraph/<key[1:3]>/<key>/``."""
    if not cache_dir:
        return None
    with contextlib.suppress(Exception):
        from torch._inductor.codecache import FxGraphCache

        return os.path.isdir(FxGraphCache._get_tmp_dir_for_key(key))
    return os.path.isdir(os.path.join(cache_dir, "fxgraph", key[1:3], key))


def miss_reasons(events: list[dict[str, Any]]) -> list[str]:
    """One sentence per cache that missed or was bypassed in this compile, torch's reason first.
    An AOTAutograd miss that only follows an FX graph miss says nothing of its own (torch counts
    a missing inner FX graph as an AOTAutograd miss), so it is named after it."""
    out: list[str] = []
    for ev in events:
        if ev["state"] == "bypass":
            out.append(f"{ev['cache']} cache bypassed: {ev.get('reason') or 'no reason given'}")
        elif ev["state"] == "miss" and ev["cache"] == "fxgraph":
            if ev.get("on_disk"):
                out.append(f"fxgraph cache miss: an entry with key {ev['key'][:16]}… exists "
                           "but its guards rejected these inputs (shapes or dynamic sizes)")
            else:
                out.append(f"fxgraph cache miss: key {ev['key'][:16]}… is not in the cache: "
                           "the graph, its inputs or inductor's configuration hash differently "
                           "from the compile that filled it")
        elif ev["state"] == "miss":
            out.append(f"autograd cache miss: key {ev['key'][:16]}… not in the cache")
    return list(dict.fromkeys(out))  # de-duplicated, in order


class CompileWatch:
    """Around one compile (a process's first calls): counter differences, per-frame counts and
    torch's logged cache decisions. ``result()`` is one entry of a variant's ``compile_cache``."""

    def __init__(self, phase: str, cache_dir: str | None = None) -> None:
        self.phase = phase
        self.cache_dir = cache_dir if cache_dir is not None else os.environ.get(
            "TORCHINDUCTOR_CACHE_DIR")
        self.log = CacheLog(self.cache_dir)
        self.before: dict[str, int] = {}
        self.frames_before = 0
        self.modules_before: set[int] = set()
        self.states: dict[str, int] = {}

    def __enter__(self) -> CompileWatch:
        with contextlib.suppress(Exception):
            self.log.install()
        self.before = counter_snapshot()
        self.frames_before = _n_metrics()
        self.modules_before = {id(m) for m in _loaded_modules()}
        return self

    def __exit__(self, *exc: object) -> None:
        for name in _LOGGERS:
            with contextlib.suppress(Exception):
                logging.getLogger(name).removeHandler(self.log)
        self.after = counter_snapshot()
        with contextlib.suppress(Exception):
            self.states = autotune_states([m for m in _loaded_modules()
                                           if id(m) not in self.modules_before])

    def result(self) -> dict[str, Any]:
        counts = dict.fromkeys(CORE + TRITON, 0)
        after = getattr(self, "after", counter_snapshot())
        for name in sorted(set(after) | set(self.before)):
            counts[name] = max(after.get(name, 0) - self.before.get(name, 0), 0)
        return {"phase": self.phase, "counters": counts, AUTOTUNE_STATE: dict(self.states),
                "frames": frame_metrics(self.frames_before),
                "reasons": miss_reasons(self.log.events)}


def merge_cache(base: dict[str, Any], child: dict[str, Any]) -> None:
    """Fold a further process's ``compile_cache`` entry into its variant's result and (re)judge
    the warm-cache compiles: one that missed any cache is flagged with torch's reasons."""
    base["compile_cache"] = list(base.get("compile_cache") or []) + list(
        child.get("compile_cache") or [])
    judge(base)


def judge(result: dict[str, Any]) -> None:
    """``warm_cache_missed`` / ``warm_cache_miss_reason`` from the warm-cache entries."""
    warm = [c for c in result.get("compile_cache") or [] if c.get("phase") == "warm_cache"]
    if not warm:
        return
    missed, reasons = False, []
    for c in warm:
        n = c.get("counters") or {}
        if any(n.get(k, 0) for k in ("fxgraph_cache_miss", "fxgraph_cache_bypass",
                                     "autograd_cache_miss", "autograd_cache_bypass")):
            missed = True
            reasons += c.get("reasons") or ["torch gave no reason (no cache decision logged)"]
    result["warm_cache_missed"] = missed
    result["warm_cache_miss_reason"] = "; ".join(dict.fromkeys(reasons)) if missed else None
