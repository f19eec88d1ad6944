"""One measuring child process, seen from the runner: start it, watch it, end it, read its result.

The child is ``python -m engine.measure.child`` (or a fork of the preloaded server, ``engine.orchestrate.forked``)
in its own process group, with its own inductor cache directory, behind two gates
(``engine.orchestrate.gates``) when the runner schedules several processes at once.  A child that crashes,
runs out of memory or passes its timeout becomes a failed result with its reason and stderr
tail; the runner decides what that means for its variant.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.environment import PROJECT_ROOT
from engine.measure import autotune_draw, torch_trace
from engine.orchestrate import compiler_server, forked, gates

TAIL_BYTES = 4000
PR_SET_PDEATHSIG = 1  # linux/prctl.h


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


def wants_compiler_server(variant: str, phase: str, index: int) -> bool:
    """May this process fork from the compiler-preloaded server (engine/orchestrate/compiler_server.py)?
    Eager (it compiles nothing; on the GPU its profiler imports inductor anyway) and the
    further processes, whose first call is a warm-cache compile nobody reports."""
    return variant == "eager" or (phase == "warm_cache" and index >= 2)


class ChildProcess:
    """A started measuring child. ``poll()`` says whether it has exited; ``result()`` turns its
    output (or its death) into a VariantResult dict.  Time spent waiting at a gate does not
    count toward the timeout: the runner holds it there, not the child."""

    def __init__(self, spec: dict[str, Any], variant: str, phase: str, cache_dir: Path,
                 workdir: Path, *, index: int = 0, gated: bool = False,
                 explain_ahead: bool = False) -> None:
        self.variant, self.phase = variant, phase
        tag = f"{variant}-{phase}-{index}"
        self.spec_path, self.out_path = workdir / f"{tag}.spec.json", workdir / f"{tag}.out.json"
        self.progress_path, self.stderr_path = workdir / f"{tag}.progress", workdir / f"{tag}.stderr"
        # From the second warm-cache process on, the autotuned kernels draw their configs
        # anew (engine/measure/autotune_draw.py); the first one replays the cold compile's, so
        # its first call stays what a user's restart pays.
        self.spec_path.write_text(json.dumps({"run": spec, "variant": variant, "phase": phase,
                                               "explain_ahead": explain_ahead,
                                               "redraw_autotune": autotune_draw.asked(
                                                   phase, index)}))
        self.gates = gates.Gates(workdir / f"{tag}.gates") if gated else None
        env = dict(os.environ)
        env.update(
            TORCHINDUCTOR_CACHE_DIR=str(cache_dir),
            TRITON_CACHE_DIR=str(cache_dir / "triton"),
            COMPILELAB_PROGRESS=str(self.progress_path),
            COMPILELAB_RUN_DIR=str(workdir),  # facts computed once per run (engine/run_share)
            PYTHONPATH=os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")])),
            PYTHONUNBUFFERED="1",
        )
        env.pop(gates.ENV, None)
        for name in torch_trace.INHERITED_ENV:  # only the spec's keep_trace logs (see there)
            env.pop(name, None)
        env.update(torch_trace.child_env(spec, variant, phase, workdir))  # spec keep_trace
        if self.gates:
            env.update(self.gates.env())
        if phase == "warm_cache" and index >= 2:
            # No compile-worker pool in the processes after the first warm-cache one: with a
            # warm cache there is nothing to compile in parallel, and the pool's start-up (a
            # process per core, each importing torch) had to finish before timing could begin:
            # seconds of every such process, measuring nothing. The cold process and the first
            # warm-cache one keep the default pool: their first calls are what a user's fresh
            # process pays, and without the pool the warm first call read short
            # (docs/measurements/2026-12-03-time-to-answer.md).
            env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
        self.timeout = float(spec.get("timeout_s", 1800))
        stdout_path = workdir / f"{tag}.stdout"
        self.spawned_at = time.time()
        self.proc: Any
        if forked.usable():  # a fork of the preloaded server (engine/orchestrate/forked.py)
            # a further process (its first call unreported) from the one with the compiler
            # imported, where the runner started it (engine/orchestrate/compiler_server.py)
            further = wants_compiler_server(variant, phase, index) and compiler_server.usable()
            self.proc = forked.ForkedChild([str(self.spec_path), str(self.out_path)], env,
                                           str(stdout_path), str(self.stderr_path), variant,
                                           compiler=further)
        else:
            with open(self.stderr_path, "wb") as err, open(stdout_path, "wb") as out:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "engine.measure.child", str(self.spec_path),
                     str(self.out_path)],
                    cwd=PROJECT_ROOT, env=env, stdout=out, stderr=err, start_new_session=True,
                    preexec_fn=_die_with_parent(),
                )
        self.pid = self.proc.pid
        self._t0 = time.monotonic()
        self._parked_s = 0.0
        self._parked_since: float | None = None
        self.ended: str | None = None  # "cancelled" | "timeout" when the runner ended it

    # -- watching ---------------------------------------------------------------------------
    def poll(self) -> bool:
        return self.proc.poll() is not None

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` s for the child to exit (a finished child is noticed at once)."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def progress(self) -> tuple[str, float] | None:
        try:
            p = json.loads(self.progress_path.read_text())
            return str(p["phase"]), float(p["fraction"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def parked(self, now_parked: bool) -> None:
        """Tell the handle whether the child is waiting at a closed gate (not its own time)."""
        now = time.monotonic()
        if now_parked and self._parked_since is None:
            self._parked_since = now
        elif not now_parked and self._parked_since is not None:
            self._parked_s += now - self._parked_since
            self._parked_since = None

    def timed_out(self) -> bool:
        now = time.monotonic()
        parked = self._parked_s + (now - self._parked_since if self._parked_since else 0.0)
        return now - self._t0 - parked > self.timeout

    # -- ending -----------------------------------------------------------------------------
    def kill(self, why: str) -> None:
        """SIGTERM the child's process group (compile workers included), SIGKILL after 3 s."""
        self.ended = self.ended or why
        for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(self.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def reap_group(self) -> None:
        """The child exited; whatever it started (compile workers) goes with it."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    def result(self) -> dict[str, Any]:
        """The child's VariantResult, or a failed one saying why there is none."""
        phase = self.phase
        base: dict[str, Any] = {"variant": self.variant, "status": "failed",
                                "stderr_tail": _tail(self.stderr_path)}
        if self.ended == "cancelled":
            return {**base, "status": "cancelled", "failure_kind": "cancelled",
                    "error": "cancelled by the user"}
        if self.ended == "timeout":
            return {**base, "failure_kind": "timeout",
                    "error": f"timed out after {self.timeout:g} s ({phase} phase) and was killed"}
        if self.out_path.exists():
            result = json.loads(self.out_path.read_text())
            result.update(process_spawned_at=self.spawned_at, process_ended_at=time.time())
            if result.get("status") != "ok" and not result.get("stderr_tail"):
                result["stderr_tail"] = base["stderr_tail"]
            return result
        tail = base["stderr_tail"]
        rc = self.proc.returncode
        if rc is not None and rc < 0:
            reason = f"child process died from {_signal_name(rc)} ({phase} phase)"
        elif rc == 0:
            # Exit code 0 without a result file: model code ended the process (sys.exit(0)
            # during build escapes the child's ``except Exception``; os._exit(0) skips
            # everything). That is a failure, never a success.
            reason = (f"child process exited with code 0 without writing a result ({phase} "
                      "phase): the model's code ended the process (sys.exit or os._exit?)")
        else:
            reason = f"child process exited with code {rc} and no result ({phase} phase)"
        kind = "crash"
        if "out of memory" in tail.lower():
            kind, reason = "oom", f"out of memory ({phase} phase): " + reason
        return {**base, "failure_kind": kind, "error": reason}


def run_child(spec: dict[str, Any], variant: str, phase: str, cache_dir: Path, workdir: Path, *,
              on_progress: Callable[[str, float], None], should_cancel: Callable[[], bool],
              index: int = 0) -> dict[str, Any]:
    """Start one child without gates and wait for it (polling progress, cancel and timeout)."""
    child = ChildProcess(spec, variant, phase, cache_dir, workdir, index=index)
    try:
        while not child.wait(0.2):
            p = child.progress()
            if p:
                on_progress(*p)
            if should_cancel():
                child.kill("cancelled")
            elif child.timed_out():
                child.kill("timeout")
            if child.ended:
                break
    except BaseException:  # Ctrl-C, or a signal handler raising: never leave the child
        child.kill("cancelled")
        raise
    if not child.ended:
        child.reap_group()
    return child.result()
