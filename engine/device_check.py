"""The CLI's device check (``normalise(check_device=True)``) without importing torch in the CLI.

The check asks torch whether the backend is registered and whether the device can run the dtype.
Done in the CLI process itself it imported torch (~4 s on the 2-core CPU host) and, for the
backend, ``torch._dynamo`` (~3 s more), one after the other, before the run's first measuring
process could start (issue "time to answer": 8 s of a 12 s eager-only run there).  Two changes:

* The backends torch registers itself (``TORCH_BACKENDS``) need no lookup: they are there in
  every torch this project supports (tests/test_device_check.py asks this torch's own list).
  Any other name is still looked up in torch's list (which imports ``torch._dynamo``).
* Where the CLI has already started the preloaded process server (``forked.STARTED_EARLY``),
  the checks run in a throwaway fork of it, which holds torch already; its verdict comes back
  in a file.  The server itself stays clean (no compiler, no CUDA context): only the fork
  imports dynamo or creates a context, and it exits.  Anywhere else (scripts, no fork server,
  a fork that does not answer) the checks run here as before.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
import time

from engine import device_probe
from engine.catalogue import ALL_DTYPES
from engine.device_probe import TORCH_BACKENDS  # noqa: F401  (tests ask this torch's list)
from engine.spec import DEVICES, SpecError

PROBE_TIMEOUT_S = 120.0
TIMES: dict[str, float] = {}
"""Where the last check's time went (the CLI prints it before a run): waiting for the
process server (its torch import) and its clean-fork probe, then the check's own fork."""


def check_device_dtype(device: str, dtype: str) -> None:
    """Raise SpecError if there is no such device here or it cannot run ``dtype``."""
    if found := device_probe.device_problem(device, dtype):
        raise SpecError(*found)


def _checks(backend: str, device: str, dtype: str) -> None:
    if found := device_probe.problem(backend, device, dtype):
        raise SpecError(*found)


def _in_fork(backend: str, device: str, dtype: str,
             abandon: threading.Event | None = None) -> dict[str, str | None] | None:
    """The verdict of a fork of the server, or None when it gave none (then check here).
    ``abandon`` set: end the fork and give no verdict (the command failed meanwhile)."""
    from engine import forked

    t0 = time.perf_counter()
    if not (forked.STARTED_EARLY and forked.usable()):
        return None
    t1 = time.perf_counter()
    TIMES["process server ready"] = t1 - t0
    with tempfile.TemporaryDirectory(prefix="compilelab-check-") as tmp:
        out = os.path.join(tmp, "verdict.json")
        proc = forked.context().Process(target=device_probe.probe,
                                         args=(backend, device, dtype, out))
        proc.start()
        # the verdict, not the fork's end: its exit (a CUDA context's teardown) is not waited for
        while (proc.exitcode is None and not os.path.exists(out)
               and time.perf_counter() - t1 < PROBE_TIMEOUT_S):
            if abandon is not None and abandon.is_set():
                break
            proc.join(0.01)
        if proc.exitcode is None and not os.path.exists(out):
            proc.kill()
            proc.join(5)
        TIMES["device check"] = time.perf_counter() - t1
        try:
            with open(out) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None


class _Early:
    """A check started before the spec is validated, in a thread (it waits for the process
    server, then for the fork's verdict), so that the CUDA context the fork creates overlaps
    the CLI's own imports instead of following them (issue "time to answer")."""

    def __init__(self, backend: str, device: str, dtype: str) -> None:
        self.key = (backend, device, dtype)
        self.stop = threading.Event()
        self.verdict: dict[str, str | None] | None = None
        self.thread = threading.Thread(target=self._work, daemon=True,
                                       name="compilelab-device-check")
        self.thread.start()

    def _work(self) -> None:
        with contextlib.suppress(Exception):  # no verdict: the check runs again in check()
            self.verdict = _in_fork(*self.key, abandon=self.stop)


_EARLY: _Early | None = None


def start_early(backend: str, device: str, dtype: str) -> None:
    """Begin the check of the arguments as typed; ``check`` uses its verdict when the spec's
    normalised backend, device and dtype are the same (otherwise it checks those).  Only
    values the spec could accept are sent ahead (the spec validates them all anyway)."""
    global _EARLY
    abandon_early()
    if not (device in DEVICES and dtype in ALL_DTYPES and isinstance(backend, str)
            and backend.isidentifier() and len(backend) <= 64):
        return
    _EARLY = _Early(backend, device, dtype)


def abandon_early() -> None:
    """End an early check nobody will ask for (the command failed first)."""
    global _EARLY
    early, _EARLY = _EARLY, None
    if early is not None:
        early.stop.set()
        early.thread.join(10)


def check(backend: str, device: str, dtype: str) -> None:
    """Raise SpecError if ``backend`` is not registered or ``device`` cannot run ``dtype``."""
    global _EARLY
    early, _EARLY = _EARLY, None
    verdict = None
    if early is not None and early.key == (backend, device, dtype):
        early.thread.join(PROBE_TIMEOUT_S + 60)
        verdict = early.verdict
    else:
        if early is not None:
            early.stop.set()
        verdict = _in_fork(backend, device, dtype)
    if verdict is None:
        _checks(backend, device, dtype)
    elif verdict.get("error"):
        raise SpecError(str(verdict["error"]), verdict.get("field"))
