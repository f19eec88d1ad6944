"""The CLI's device check (``normalise(check_device=True)``) without importing torch in the CLI.

The check asks torch whether the backend is registered and whether the device can run the dtype.
Done in the CLI process itself it imported torch and, for the backend, ``torch._dynamo``, one
after the other, before the run's first measuring process could start: most of a short run's
wall time on a small host (docs/measurements/2026-12-03-time-to-answer.md).  Two changes:

* The backends torch registers itself (``TORCH_BACKENDS``) need no lookup: they are there in
  every torch this project supports (tests/test_device_check.py asks this torch's own list).
  Any other name is still looked up in torch's list (which imports ``torch._dynamo``).
* Where the CLI has already started the preloaded process server (``forked.STARTED_EARLY``),
  the checks run in a throwaway fork of it, which holds torch already; its verdict comes back
  in a file.  The server itself stays clean (no compiler, no CUDA context): only the fork
  imports dynamo (for a backend torch does not register itself), and it exits.  Anywhere else (scripts, no fork server,
  a fork that does not answer) the checks run here as before.  The fork's code is
  ``engine.measure.device_probe``, which imports only torch (importing this module, and through it
  ``engine.spec``, ``storage`` and SQLAlchemy, was most of the fork's time:
  docs/measurements/2026-12-04-time-to-answer.md).
"""

from __future__ import annotations

import json
import os
import tempfile
import time

from contract.spec_check import SpecError
from engine.measure import device_probe

PROBE_TIMEOUT_S = 120.0
TIMES: dict[str, float] = {}
"""Where the last check's time went (the CLI prints it before a run): waiting for the
process server (its torch import) and its clean-fork probe, then the check's own fork."""


def _checks(backend: str, device: str, dtype: str) -> None:
    if found := device_probe.problem(backend, device, dtype):
        raise SpecError(*found)


def _in_fork(backend: str, device: str, dtype: str) -> dict[str, str | None] | None:
    """The verdict of a fork of the server, or None when it gave none (then check here)."""
    from engine.orchestrate import forked

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
        # the verdict, not the fork's end: its exit is not waited for
        while (proc.exitcode is None and not os.path.exists(out)
               and time.perf_counter() - t1 < PROBE_TIMEOUT_S):
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


def check(backend: str, device: str, dtype: str) -> None:
    """Raise SpecError if ``backend`` is not registered or ``device`` cannot run ``dtype``."""
    verdict = _in_fork(backend, device, dtype)
    if verdict is None:
        _checks(backend, device, dtype)
    elif verdict.get("error"):
        raise SpecError(str(verdict["error"]), verdict.get("field"))
