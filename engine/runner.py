"""Runs one RunSpec: a fresh child process per variant, each with its own empty inductor cache,
then a second child on the same cache for the warm-cache compile time.

Nothing here touches the database: the caller (CLI or worker, see ``engine.execute``) passes
callbacks for progress, cancellation and finished results. A child that crashes, runs out of
memory, fails to compile or passes its timeout becomes a failed result with its reason and stderr
tail; the other variants go on.
"""

from __future__ import annotations

import contextlib
import copy
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

from engine import forensics, forked, startup, stats
from engine.environment import PROJECT_ROOT
from engine.eta import Eta, describe

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
    index: int = 0,
) -> dict[str, Any]:
    """Start ``python -m engine.child`` in its own process group and wait for it, polling its
    progress file, the cancel flag and the timeout. Returns the child's JSON or a failed result."""
    tag = f"{variant}-{phase}-{index}"
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
    if phase == "warm_cache" and index >= 2:
        # No compile-worker pool in the processes after the first warm-cache one: with a warm
        # cache there is nothing to compile in parallel, and the pool's start-up (a process per
        # core, each importing torch) had to finish before timing could begin: 9-10 s of every
        # such process on the H200 host, measuring nothing. The cold process and the first
        # warm-cache one keep the default pool: their first calls are what a user's fresh
        # process pays (without the pool the warm first call read 24 % below the naive
        # harness's on the 2-core CPU).
        env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    timeout = float(spec.get("timeout_s", 1800))
    stdout_path = workdir / f"{tag}.stdout"
    with open(stderr_path, "wb") as err, open(stdout_path, "wb") as out:
        spawned_at = time.time()
        proc: Any
        if forked.usable():  # a fork of the preloaded server (engine/forked.py)
            proc = forked.ForkedChild([str(spec_path), str(out_path)], env, str(stdout_path),
                                      str(stderr_path), variant)
        else:
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
        if not ended:  # the child exited; whatever it started (compile workers) goes with it
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
    base: dict[str, Any] = {"variant": variant, "status": "failed", "stderr_tail": _tail(stderr_path)}
    if ended == "cancelled":
        return {**base, "status": "cancelled", "failure_kind": "cancelled",
                "error": "cancelled by the user"}
    if ended == "timeout":
        return {**base, "failure_kind": "timeout",
                "error": f"timed out after {timeout:g} s ({phase} phase) and was killed"}
    if out_path.exists():
        result = json.loads(out_path.read_text())
        result.update(process_spawned_at=spawned_at, process_ended_at=time.time())
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


def _merge_process(base: dict[str, Any], child: dict[str, Any]) -> None:
    """Fold a further measuring process's result into its variant's result (the cold process's,
    which carries the warm-up curve, compile, memory, profiler and graph-break figures)."""
    proc = dict(child["processes"][0])
    proc.update(first_call_s=child.get("first_call_warm_s"), phases=child.get("phases"),
                started_at=child.get("process_started_at"),
                spawned_at=child.get("process_spawned_at"), ended_at=child.get("process_ended_at"))
    base["processes"].append(proc)
    for key in ("samples_ms", "pipelined_ms", "eager_samples_ms", "eager_pipelined_ms"):
        base[key] = list(base.get(key) or []) + list(proc[key])
    loads = [p.get("host_other_busy_cores") for p in base["processes"]]
    loads = [x for x in loads if x is not None]
    base["host_other_busy_cores"] = max(loads) if loads else None
    # The first warm-cache process's first call: a fresh process on the filled cache with
    # inductor's defaults, as a user's restart (later ones run without the compile-worker pool).
    base["first_call_warm_s"] = base["processes"][1].get("first_call_s")
    base.setdefault("compile_phases_warm_s", child.get("compile_phases_warm_s"))
    forensics.merge_cache(base, child)


def _first_process(result: dict[str, Any]) -> None:
    """The cold process's own entry in ``processes``: when it ran and its phases."""
    for proc in result.get("processes") or []:
        proc.update(first_call_s=result.get("first_call_cold_s"), phases=result.pop("phases", None),
                    started_at=result.pop("process_started_at", None),
                    spawned_at=result.pop("process_spawned_at", None),
                    ended_at=result.pop("process_ended_at", None))


def time_breakdown(processes: list[dict[str, Any]]) -> dict[str, float]:
    """Where a variant's wall time went, summed over its processes (seconds): "process start"
    (spawn to the interpreter running our code), then the child's own phases (imports, setup,
    compile, warm-up, measure, profile), and "exit" (last phase to the process being reaped)."""
    out: dict[str, float] = {}

    def add(name: str, seconds: float | None) -> None:
        if seconds is not None and seconds >= 0:
            out[name] = out.get(name, 0.0) + seconds

    for p in processes:
        phases = [ph for ph in p.get("phases") or [] if isinstance(ph, dict)]
        if p.get("spawned_at") and p.get("started_at"):
            add("process start", p["started_at"] - p["spawned_at"])
        for ph in phases:
            add(str(ph.get("name")), float(ph["end"]) - float(ph["start"]))
        if phases and p.get("ended_at"):
            add("exit", p["ended_at"] - max(float(ph["end"]) for ph in phases))
    return {k: round(v, 3) for k, v in out.items()}


def _with_stats(result: dict[str, Any], eager_first_ms: float | None) -> dict[str, Any]:
    out = stats.add_stats(copy.deepcopy(result), eager_first_call_ms=eager_first_ms)
    if out.get("processes"):
        out["time_s"] = time_breakdown(out["processes"])
    return out


def run_variants(
    spec: dict[str, Any],
    *,
    on_progress: ProgressFn = lambda v, p, f: None,
    should_cancel: CancelFn = lambda: False,
    on_result: ResultFn = lambda r: None,
) -> list[dict[str, Any]]:
    """Measure every variant of ``spec`` and return the results with statistics added.

    Eager runs once, in its own process.  Each compiled variant runs in at least
    ``processes`` fresh processes (engine/stats.py: the process is the unit of replication):
    the first on an empty inductor cache (the cold compile, warm-up curve, memory, profiler and
    graph-break report), the others on that cache (their first call is the warm-cache compile),
    each timing eager and the variant in paired rounds.  Processes of different variants take
    turns (A, B, A, B, ...), so drift over minutes reaches every variant alike.  After the
    minimum, a variant gets more processes while its interval is wider than
    ``target_halfwidth``, up to ``max_processes`` or ``process_budget_s`` seconds of extra
    processes; why it stopped is stored.  With ``warm_cache`` a compiled variant gets at least
    two processes.  ``on_result`` is called after every process with the variant's result so
    far, so that nothing measured is lost if a later process crashes."""
    variants = list(spec["variants"])
    compiled = [v for v in variants if v != "eager"]
    k_min = max(int(spec.get("processes", 1)), 2 if spec.get("warm_cache", True) else 1)
    k_max = max(int(spec.get("max_processes", k_min)), k_min)
    results: dict[str, dict[str, Any]] = {}
    eager_first_ms: float | None = None
    slots = {"done": 0, "planned": int("eager" in variants) + k_min * len(compiled)}
    eta = Eta(eager=int("eager" in variants), cold=len(compiled),
              warm=(k_min - 1) * len(compiled))

    def progress_for(variant: str, kind: str) -> Callable[[str, float], None]:
        eta.start(kind)

        def report(phase: str, frac: float) -> None:
            # By time once an estimate exists (processes differ tenfold in length: a slot count
            # read "92 %" and then sat through a cold compile), by processes before that.
            by_time = eta.fraction()
            overall = by_time if by_time is not None else (slots["done"] + frac) / slots["planned"]
            left = describe(eta.seconds_left())
            on_progress(variant, f"{phase} · {left}" if left else phase, min(overall, 1.0))
        return report

    def finish_slot() -> None:
        slots["done"] += 1
        eta.finish()

    with tempfile.TemporaryDirectory(prefix="compilelab-") as tmp:
        root = Path(tmp)
        if "eager" in variants and not should_cancel():
            cache = root / "cache-eager"
            cache.mkdir()
            result = run_child(spec, "eager", "cold", cache, root, on_progress=progress_for("eager", "eager"),
                               should_cancel=should_cancel)
            finish_slot()
            _first_process(result)
            if result.get("status") == "ok":
                # Call 2 of the eager child: like the compiled first call (which follows the
                # eager reference), it comes after CUDA/cuBLAS start-up, which both would pay.
                curve = result.get("warmup_ms") or []
                eager_first_ms = curve[1] if len(curve) > 1 else (curve or [None])[0]
                result["stop_reason"] = "one process asked"
            results["eager"] = _with_stats(result, eager_first_ms)
            on_result(results["eager"])
            if result.get("status") == "cancelled":
                return list(results.values())

        active = list(compiled)
        extra_since: float | None = None
        index = 0
        while active and not should_cancel():
            for variant in list(active):
                if should_cancel():
                    break
                cache = root / f"cache-{variant}"
                cache.mkdir(exist_ok=True)
                phase = "cold" if index == 0 else "warm_cache"
                child = run_child(spec, variant, phase, cache, root, index=index,
                                  on_progress=progress_for(variant, "cold" if index == 0 else "warm"),
                                  should_cancel=should_cancel)
                finish_slot()
                if index == 0:
                    _first_process(child)
                    results[variant] = child
                    if child.get("status") != "ok":
                        active.remove(variant)
                        results[variant] = _with_stats(child, eager_first_ms)
                        on_result(results[variant])
                        continue
                elif child.get("status") == "ok":
                    _merge_process(results[variant], child)
                elif child.get("status") == "cancelled":
                    break
                else:  # a further process failed: the variant keeps what it has, with the reason
                    results[variant].setdefault("process_errors", []).append(
                        {"index": index, "failure_kind": child.get("failure_kind"),
                         "error": child.get("error")})
                    active.remove(variant)
                    results[variant]["stop_reason"] = "a measuring process failed"
                on_result(_with_stats(results[variant], eager_first_ms))
            index += 1
            if index >= k_min and extra_since is None:
                extra_since = time.monotonic()
            for variant in list(active):
                done = _with_stats(results[variant], eager_first_ms)["stats"]
                half = stats.rel_halfwidth(done.get("speedup_ci_low"), done.get("speedup_ci_high"))
                reason = stats.stop_reason(half, index, min_processes=k_min, max_processes=k_max,
                                           target_halfwidth=float(spec.get("target_halfwidth", 0)))
                if (reason is None and extra_since is not None and time.monotonic() - extra_since
                        >= float(spec.get("process_budget_s", 0))):
                    reason = "time budget"
                if reason:
                    results[variant]["stop_reason"] = reason
                    active.remove(variant)
                    on_result(_with_stats(results[variant], eager_first_ms))  # with the reason
            slots["planned"] = slots["done"] + len(active)
            eta.set_left("cold", 0)
            eta.set_left("warm", max(k_min - index, 1) * len(active) if active else 0)
        if spec.get("startup") and not should_cancel():  # engine/startup.py
            startup.run_strategies(spec, compiled, results, root, run_child, progress_for,
                                   should_cancel, lambda r: on_result(_with_stats(r, eager_first_ms)))

    return [_with_stats(results[v], eager_first_ms) for v in variants if v in results]
