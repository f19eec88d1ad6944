"""Imported by both process servers (engine/forked.py, engine/compiler_server.py) after the
model libraries: what ``torch.compile(model)`` imports, and nothing that the first compiled
call imports.

What the product reports as a variant's cold compile is its first compiled call, as in the
naive harness (``first_call_s``): ``compiled = torch.compile(model)`` comes before it, untimed,
in a user's script as in the measuring child.  That line imports dynamo and most of inductor
(1416 modules, 2-2.5 s on the 2-core CPU host, torch 2.13); the first call then imports the
rest (the compile path's remaining modules, Triton, CUDA-graph trees) and compiles.  A user's
fresh process has paid the first part before its first compiled call, so a fork of a server
that paid it starts that call exactly where the user's process does: the cold compile still
includes every import the first call makes.

Each measuring process used to pay that import itself, side by side with the others: six at
once took 6.2-6.6 s each on the H200 host (gVisor, where every file an import opens is a slow
system call), and the first cold compile could start only after the last of them (issue "time
to answer").  With this module on, it is paid once per run, by the server, while the CLI
validates the spec.

The server gets it by calling ``torch.compile`` on a throwaway module, the same code path a
user's script takes, never calling the result: nothing is traced or compiled, and
``forked.fork_is_clean`` checks that no compile ran and no CUDA context exists in a fork.

**Off unless ``COMPILELAB_PRELOAD_COMPILE=1``.**  Measured on the H200 (2026-12-04, full
seed-MLP runs of four variants): the preparation shrank from 7.7 s to 2.3 s, but the server,
which every run's first process waits for, became ready 4-5 s later, so the run took as long
(ratio to the naive harness 0.31 on two hosts, 0.33 before).  And the cold compiles it reports
read +41 % (default) and +36 % (reduce-overhead) against the harness on one host, -4 % and
+23 % on another, while an eager+default run on a third host read the same with and without
it (3.29 s and 3.37 s; harness 3.0-4.1 s).  Until a run shows that a fork's first call costs
what a fresh process's does, the reported processes pay the import themselves.  On the 2-core
CPU host it cut a run from 30.6 s to 22.4 s (eager and default, median of three).
"""

from __future__ import annotations

import os

ENV = "COMPILELAB_PRELOAD_COMPILE"
DONE = False
"""Whether this process (the server, and so its forks) holds ``torch.compile``'s imports."""


def wanted() -> bool:
    return os.environ.get(ENV, "0").strip().lower() in ("1", "true", "yes")


if wanted():
    # Inductor's import may ask whether CUDA is there; through NVML that initialises no CUDA
    # context (a fork of a process with one cannot use CUDA).  The forks get the runner's
    # environment back (forked._child_main).
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    try:
        import torch

        torch.compile(torch.nn.Identity())  # imports, builds the wrapper, compiles nothing
        DONE = True
    except Exception:  # noqa: BLE001 - a torch whose compile is unsupported here: the child
        pass  # reports it when it compiles
