"""Imported by the compiler server (engine/compiler_server.py) after ``engine.child``: the
compiler's modules that a first compiled call would otherwise import (dynamo, AOTAutograd,
inductor's compile path and CUDA-graph trees), without initialising CUDA.  Only processes whose
first call nobody reports are forked from that server."""

from __future__ import annotations

import importlib
import os

import torch

MODULES = ("torch._dynamo", "torch._functorch.aot_autograd", "torch._inductor.compile_fx",
           "torch._inductor.codecache", "torch._inductor.cudagraph_trees")
LOADED: list[str] = []
for _name in MODULES:
    try:
        importlib.import_module(_name)
    except Exception:  # a release without it: the child imports what it needs itself
        continue
    LOADED.append(_name)

_ready = os.environ.get("COMPILELAB_COMPILER_SERVER_READY")  # compiler_server.READY_ENV
if _ready:  # a fork must create its own CUDA context: never ready with one initialised here
    _path = _ready if not torch.cuda.is_initialized() else _ready + ".failed"
    with open(_path + ".tmp", "w") as _f:
        _f.write(" ".join(LOADED))
    os.replace(_path + ".tmp", _path)
