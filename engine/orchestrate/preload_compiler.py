"""Imported by the compiler server (engine/orchestrate/compiler_server.py) after ``engine.measure.child``: the
compiler's modules that ``torch.compile`` and a first compiled call would otherwise import
(dynamo, AOTAutograd, inductor's compile path and CUDA-graph trees), without initialising CUDA.  Only processes whose first call nobody reports are forked from that server.

A fork of a process that asked the CUDA runtime for its device count cannot use CUDA ("Cannot
re-initialize CUDA in forked subprocess": torch marks such forks bad), and importing inductor
asks ``torch.cuda.is_available()`` (on a GPU host every fork then fails).  So the server asks
NVML instead (``PYTORCH_NVML_BASED_CUDA_CHECK``, read at each call; its forks get the runner's
environment back), and before saying it is ready it forks once to check that the fork is
clean: if not, it says "failed" and the runner keeps forking from the plain server.
"""

from __future__ import annotations

import importlib
import os

os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"

import torch  # noqa: E402

MODULES = ("torch._dynamo", "torch._functorch.aot_autograd", "torch._inductor.compile_fx",
           "torch._inductor.codecache", "torch._inductor.cudagraph_trees")
LOADED: list[str] = []
for _name in MODULES:
    try:
        importlib.import_module(_name)
    except Exception:  # a release without it: the child imports what it needs itself
        continue
    LOADED.append(_name)


def fork_problem() -> str:
    """Why a fork of this process could not use CUDA ("" when it can)."""
    if torch.cuda.is_initialized():
        return "CUDA is initialised"
    pid = os.fork()
    if pid == 0:  # the test fork: only look, then leave without any teardown
        try:
            bad = torch.cuda._is_in_bad_fork() or torch.cuda.is_initialized()
        except Exception:
            bad = True
        os._exit(1 if bad else 0)
    _, status = os.waitpid(pid, 0)
    return "" if os.waitstatus_to_exitcode(status) == 0 else "a fork cannot initialise CUDA"


_ready = os.environ.get("COMPILELAB_COMPILER_SERVER_READY")  # compiler_server.READY_ENV
if _ready:
    _problem = fork_problem()
    _path = _ready + ".failed" if _problem else _ready
    with open(_path + ".tmp", "w") as _f:
        _f.write(_problem or " ".join(LOADED))
    os.replace(_path + ".tmp", _path)
