"""torch's structured compile log (``TORCH_TRACE``) of each compiled variant's cold compile, kept
with the run (spec option ``keep_trace``) so a user can open it in tlparse or attach it to an
upstream report.

How, in three places:

* the runner (``engine.orchestrate.process``) gives the cold process of a compiled variant
  ``TORCH_TRACE=<workdir>/trace-<variant>``, a directory of its own;
* the child (``enable_in_child``) makes torch log there. torch reads ``TORCH_TRACE`` when it is
  imported (``torch._logging._internal._init_logs``), but a child forked from the preloaded
  server (``engine.orchestrate.forked``) imported torch before it had the variable, with a trace handler
  that has no directory. So the child re-runs torch's own log set-up once the variable is in
  its environment, after dropping that handler; a child started cold gets the same result from
  its import, and the set-up is then idempotent;
* after the process ends, ``collect`` gzips the log torch wrote (one file per process that
  logged; the largest is the compiling process's) to at most ``MAX_STORED_BYTES``, cut at a
  line boundary and saying so when it had to cut, and the runner hands the bytes to storage
  (``storage.artifacts``) as the run's artifact of kind ``torch_trace``.

The logging runs during the cold compile, so that compile's time includes it (tlparse's own
advice: the overhead is small next to a compile, but it is not zero).
"""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path
from typing import Any

ENV = "TORCH_TRACE"
# Variables of the runner's own environment that would make torch log every measured process
# (``TORCH_DTRACE`` is a wordier TORCH_TRACE): the runner removes them from each child's
# environment, so an operator's shell setting neither slows the measured compiles (logging is
# part of a cold compile's time) nor sends their logs to a directory the run never names; the
# spec option ``keep_trace`` is the one way to a trace.
INHERITED_ENV = (ENV, "TORCH_DTRACE")
KIND = "torch_trace"
MAX_STORED_BYTES = 20 * 2**20  # gzip bytes kept per variant
MAX_READ_BYTES = 2 * 2**30  # raw log bytes read at most (a runaway log is cut, not loaded)


def trace_dir(workdir: Path, variant: str) -> Path:
    """The variant's own trace directory under the runner's work directory."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in variant)
    return workdir / f"trace-{safe}"


def child_env(spec: dict[str, Any], variant: str, phase: str, workdir: Path) -> dict[str, str]:
    """``{TORCH_TRACE: dir}`` for the cold process of a compiled variant of a ``keep_trace``
    run; nothing otherwise (eager compiles nothing; warm-cache processes would log a second,
    different compile)."""
    if not spec.get("keep_trace") or variant == "eager" or phase != "cold":
        return {}
    d = trace_dir(workdir, variant)
    d.mkdir(parents=True, exist_ok=True)
    return {ENV: str(d)}


def enable_in_child() -> str | None:
    """In the measuring child, before anything compiles: make torch's trace log write to
    ``$TORCH_TRACE``. Returns None when it does (or when no trace is asked), else why not."""
    d = os.environ.get(ENV)
    if not d:
        _detach_inherited()
        return None
    try:
        from torch._logging import _internal as tl

        def logs_here() -> bool:
            return any(getattr(h, "root_dir", None) == d for h in tl.trace_log.handlers)

        if logs_here():  # started cold: torch's import already set it up from the variable
            return None
        # Forked from the server: its handler was made without a directory. torch 2.11 and
        # 2.13 keep it in LOG_TRACE_HANDLER and reuse it; dropping it makes _init_logs build
        # one from the environment (older releases build a fresh one on every call).
        if hasattr(tl, "LOG_TRACE_HANDLER"):
            tl.LOG_TRACE_HANDLER = None
        tl._init_logs()
        if logs_here():
            return None
        return "torch's log set-up did not attach a trace handler to the directory"
    except Exception as e:  # a torch without these internals: the run goes on, without a trace
        return f"{type(e).__name__}: {str(e)[:300]}"


def _detach_inherited() -> None:
    """A child without a trace asked for: drop a trace handler that has a directory. A fork of
    the preloaded server inherits the one torch's import made from the server's environment,
    which was the runner's, before the runner removed ``INHERITED_ENV`` from the child's."""
    import sys

    tl = sys.modules.get("torch._logging._internal")
    if tl is None:  # torch not imported yet: its import reads the child's own environment
        return
    try:
        for h in list(tl.trace_log.handlers):
            if getattr(h, "root_dir", None):
                tl.trace_log.removeHandler(h)
                if getattr(tl, "LOG_TRACE_HANDLER", None) is h:
                    tl.LOG_TRACE_HANDLER = None
    except Exception:  # a torch without these internals: nothing was inherited from them
        pass


def collect(directory: Path, variant: str, cap: int = MAX_STORED_BYTES
            ) -> tuple[dict[str, Any], bytes | None]:
    """``(meta, gzip bytes)`` of the trace torch wrote into ``directory`` (``None`` bytes and
    ``meta["error"]`` when there is none). ``meta``: name, size (stored bytes), log_bytes,
    truncated, and the other log files not kept (compile workers that logged), if any."""
    try:
        logs = sorted((p for p in directory.glob("*.log") if p.is_file()),
                      key=lambda p: p.stat().st_size, reverse=True)
    except OSError as e:
        return {"error": f"the trace directory could not be read: {e}"}, None
    if not logs or logs[0].stat().st_size == 0:
        return {"error": "torch wrote no trace log (nothing compiled in the cold process?)"}, None
    main = logs[0]
    buf = io.BytesIO()
    read = pending = 0
    truncated = False
    flush_every = max(min(2**20, cap // 4), 1024)
    # mtime=0 and no file name in the header: the same log gives the same bytes.
    with open(main, "rb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=buf,
                                               mtime=0) as gz:
        for line in f:
            # buf holds what zlib has emitted; ``pending`` bytes since the last flush are
            # still inside zlib and compress to at most about themselves, so the stored size
            # stays under the cap (the 64 bytes cover the flush markers and gzip's trailer).
            if (buf.tell() + pending + len(line) + 64 > cap
                    or read + len(line) > MAX_READ_BYTES):
                truncated = True
                break
            gz.write(line)
            read += len(line)
            pending += len(line)
            if pending >= flush_every:
                gz.flush()  # zlib sync flush: buf.tell() now counts everything written
                pending = 0
    data = buf.getvalue()
    meta: dict[str, Any] = {"name": f"torch_trace-{trace_dir(Path('.'), variant).name[6:]}.log.gz",
                            "size": len(data), "log_bytes": main.stat().st_size,
                            "kept_log_bytes": read, "truncated": truncated}
    if truncated:
        meta["note"] = (f"truncated: the first {read} of {main.stat().st_size} log bytes kept "
                        f"(stored gzip capped at {cap} bytes)")
    if len(logs) > 1:
        meta["other_logs"] = [{"name": p.name, "bytes": p.stat().st_size} for p in logs[1:10]]
    return meta, data


def flush() -> None:
    """Before the child's ``os._exit``: write out what torch's trace handler still buffers
    (the exit skips the interpreter's teardown, which would have flushed it)."""
    if not os.environ.get(ENV):
        return
    try:
        from torch._logging import _internal as tl

        for h in tl.trace_log.handlers:
            h.flush()
    except Exception:  # nothing to flush, or a torch without these internals
        pass


def keep(spec: dict[str, Any], workdir: Path, variant: str, result: dict[str, Any],
         on_artifact: Any) -> None:
    """The runner's hook after a compiled variant's cold process (ok or failed: a failed
    compile's log is the one an upstream report wants): gzip the trace, hand the bytes to
    ``on_artifact(variant, kind, meta, data)`` and say in ``result["torch_trace"]`` what was
    kept, or why nothing was."""
    if (not spec.get("keep_trace") or variant == "eager"
            or result.get("status") == "cancelled"):
        return
    meta, data = collect(trace_dir(workdir, variant), variant)
    child_problem = (result.get("torch_trace") or {}).get("error")
    if child_problem and data is None:
        meta["error"] = f"{meta['error']}; the child said: {child_problem}"
    if data is not None:
        try:
            on_artifact(variant, KIND, meta, data)
        except Exception as e:  # storing it failed: the measurements still count
            meta = {**meta, "error": f"the trace could not be stored: {str(e)[:300]}"}
    result["torch_trace"] = meta
