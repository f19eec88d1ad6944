"""Runs one RunSpec: a fresh child process per variant, each with its own empty inductor cache,
then a second child on the same cache for the warm-cache compile time.

Nothing here touches the database: the caller (CLI or worker, see ``engine.execute``) passes
callbacks for progress, cancellation and finished results. A child that crashes, runs out of
memory, fails to compile or passes its timeout becomes a failed result with its reason and stderr
tail; the other variants go on.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine import stats
from engine.environment import PROJECT_ROOT

ProgressFn = Callable[[str, str, float], None]  # (variant, phase, overall fraction 0..1)
CancelFn = Callable[[], bool]
ResultFn = Callable[[dict[str, Any]], None]
TAIL_BYTES = 4000


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - TAIL_BYTES))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the kernel SIGKILL the child when the process that started it
    dies (Linux). The child leads its own session, so a worker killed with -9 (OOM killer, crash)
    would otherwise leave it running: still holding the GPU, and skewing the measurements of the
    worker that recovers the run on the same device. Not needed for clean exits (the worker ends
    its child itself). The signal follows the *thread* that started the child: call from a thread
    that outlives the child (the worker and CLI use their main thread)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before fork, not after
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


def run_child(
    spec: dict[str, Any],
    variant: str,
    phase: str,
    cache_dir: Path,
    workdir: Path,
    *,
    on_progress: Callable[[str, float], None],
    should_cancel: CancelFn,
) -> dict[str, Any]:
    """Start ``python -m engine.child`` in its own process group and wait for it, polling its
    progress file, the cancel flag and the timeout. Returns the child's JSON or a failed result."""
    tag = f"{variant}-{phase}"
    spec_path, out_path = workdir / f"{tag}.spec.json", workdir / f"{tag}.out.json"
    progress_path, stderr_path = workdir / f"{tag}.progress", workdir / f"{tag}.stderr"
    spec_path.write_text(json.dumps({"run": spec, "variant": variant, "phase": phase}))
    env = dict(os.environ)
    env.update(
        TORCHINDUCTOR_CACHE_DIR=str(cache_dir),
        TRITON_CACHE_DIR=str(cache_dir / "triton"),
        COMPILELAB_PROGRESS=str(progress_path),
        PYTHONPATH=os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")])),
        PYTHONUNBUFFERED="1",
    )
    timeout = float(spec.get("timeout_s", 1800))
    with open(stderr_path, "wb") as err, open(workdir / f"{tag}.stdout", "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "engine.child", str(spec_path), str(out_path)],
            cwd=PROJECT_ROOT, env=env, stdout=out, stderr=err, start_new_session=True,
            preexec_fn=_die_with_parent(),
        )
        t0 = time.monotonic()
        ended: str | None = None
        try:
            while proc.poll() is None:
                try:  # wait, not sleep: a child that has finished is noticed at once
                    proc.wait(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:
                    pass
                try:
                    p = json.loads(progress_path.read_text())
                    on_progress(p["phase"], float(p["fraction"]))
                except (OSError, ValueError, KeyError):
                    pass
                if should_cancel():
                    ended = "cancelled"
                elif time.monotonic() - t0 > timeout:
                    ended = "timeout"
                if ended:
                    _kill_group(proc)
                    break
        except BaseException:  # Ctrl-C, or a signal handler raising: never leave the child
            _kill_group(proc)
            raise
    base: dict[str, Any] = {"variant": variant, "status": "failed", "stderr_tail": _tail(stderr_path)}
    if ended == "cancelled":
        return {**base, "status": "cancelled", "failure_kind": "cancelled",
                "error": "cancelled by the user"}
    if ended == "timeout":
        return {**base, "failure_kind": "timeout",
                "error": f"timed out after {timeout:g} s ({phase} phase) and was killed"}
    if out_path.exists():
        result = json.loads(out_path.read_text())
        if result.get("status") != "ok" and not result.get("stderr_tail"):
            result["stderr_tail"] = base["stderr_tail"]
        return result
    tail = base["stderr_tail"]
    if proc.returncode < 0:
        reason = f"child process died from {_signal_name(proc.returncode)} ({phase} phase)"
        kind = "crash"
    elif proc.returncode == 0:
        # Exit code 0 without a result file: model code ended the process (sys.exit(0) during
        # build escapes the child's ``except Exception``; os._exit(0) skips everything). That is
        # a failure, never a success.
        reason = (f"child process exited with code 0 without writing a result ({phase} phase): "
                  "the model's code ended the process (sys.exit or os._exit?)")
        kind = "crash"
    else:
        reason = f"child process exited with code {proc.returncode} and no result ({phase} phase)"
        kind = "crash"
    if "out of memory" in tail.lower():
        kind, reason = "oom", f"out of memory ({phase} phase): " + reason
    return {**base, "failure_kind": kind, "error": reason}


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGTERM the child's process group (compile workers included), SIGKILL after 3 s."""
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_variants(
    spec: dict[str, Any],
    *,
    on_progress: ProgressFn = lambda v, p, f: None,
    should_cancel: CancelFn = lambda: False,
    on_result: ResultFn = lambda r: None,
) -> list[dict[str, Any]]:
    """Measure every variant of ``spec`` (eager first), each in fresh children, and return the
    results with statistics added. ``on_result`` is called as each variant finishes so that the
    caller can store it at once: nothing measured is lost if a later variant crashes."""
    variants = list(spec["variants"])
    results: list[dict[str, Any]] = []
    eager_first_ms: float | None = None
    with tempfile.TemporaryDirectory(prefix="compilelab-") as tmp:
        root = Path(tmp)
        for i, variant in enumerate(variants):
            if should_cancel():
                break
            cache = root / f"cache-{variant}"
            cache.mkdir()
            warm_share = 0.15 if (variant != "eager" and spec.get("warm_cache", True)) else 0.0

            def progress(phase: str, frac: float, *, i=i, v=variant, share=1 - warm_share):
                on_progress(v, phase, (i + share * frac) / len(variants))

            result = run_child(spec, variant, "cold", cache, root, on_progress=progress,
                               should_cancel=should_cancel)
            if result.get("status") == "ok" and warm_share:
                warm = run_child(
                    spec, variant, "warm_cache", cache, root, should_cancel=should_cancel,
                    on_progress=lambda ph, f, i=i, v=variant, s=warm_share: on_progress(
                        v, "warm-cache compile", (i + 1 - s + s * f) / len(variants)),
                )
                if warm.get("status") == "ok":
                    result["first_call_warm_s"] = warm.get("first_call_warm_s")
                    result["compile_phases_warm_s"] = warm.get("compile_phases_warm_s")
                else:
                    result["warm_cache_error"] = warm.get("error")
            if variant == "eager" and result.get("status") == "ok":
                # Call 2 of the eager child: like the compiled first call (which follows the eager
                # reference), it comes after CUDA/cuBLAS start-up, which both would pay.
                curve = result.get("warmup_ms") or []
                eager_first_ms = curve[1] if len(curve) > 1 else (curve or [None])[0]
            result = stats.add_stats(result, eager_first_call_ms=eager_first_ms)
            results.append(result)
            on_result(result)
            if result.get("status") == "cancelled":
                break
    return results
