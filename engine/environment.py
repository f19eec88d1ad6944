"""The host half of a run's environment fingerprint. The device half (GPU, driver, CUDA, torch,
triton) comes from the measuring child, which is the process that actually used the device."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def project_commit() -> str | None:
    """The git commit of this checkout, with "+dirty" when tracked files differ from it (then the
    code that measured is not exactly that commit); COMPILELAB_COMMIT where the tree is a copy
    without .git."""
    if os.environ.get("COMPILELAB_COMMIT"):
        return os.environ["COMPILELAB_COMMIT"]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, capture_output=True,
                              text=True, timeout=5).stdout.strip()
        if not head:
            return None
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                 cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=10)
        return head + ("+dirty" if changed.returncode == 0 and changed.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def host_fingerprint() -> dict[str, Any]:
    return {
        "host": socket.gethostname(),
        "os": platform.platform(),
        "cpu": _cpu_name(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "commit": project_commit(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
