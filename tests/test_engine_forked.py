"""The preloaded process server (engine/forked.py): what a forked measuring child starts with."""

from __future__ import annotations

import pytest

from engine import forked

pytestmark = pytest.mark.skipif(not forked.enabled(), reason="fork server is Linux-only")


def test_a_fork_holds_nothing_compiled_and_no_cuda_context():
    assert forked.fork_is_clean()


COMPILER = ("torch._dynamo", "torch._inductor", "torch._functorch", "triton")
FORKED = """
import json, sys
from engine import forked
def dump(path):
    import os
    with open(path, "w") as f:
        json.dump(sorted(m for m in sys.modules if m.startswith({prefixes!r})), f)
    os._exit(0)
if __name__ == "__main__":
    p = forked.context(False).Process(target=dump, args=(sys.argv[1],))
    p.start(); p.join(120)
    if not forked.fork_is_clean():  # the server's check passes with or without the preload
        sys.exit("not clean: " + forked.PROBLEM)
    sys.exit(p.exitcode)
"""
FRESH = ("import json, sys, torch; torch.compile(torch.nn.Identity()); "
         "print(json.dumps(sorted(m for m in sys.modules if m.startswith({prefixes!r}))))")


def _held_by_a_fork(tmp_path, preload: str) -> set[str]:
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    script, out = tmp_path / "fork_modules.py", tmp_path / f"modules-{preload}.json"
    script.write_text(FORKED.format(prefixes=COMPILER))
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "COMPILELAB_PRELOAD_COMPILE": preload,
           "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    subprocess.run([sys.executable, str(script), str(out)], env=env, cwd=root, timeout=300,
                   check=True)
    return set(json.loads(out.read_text()))


def test_by_default_a_fork_holds_no_compiler_module(tmp_path):
    held = _held_by_a_fork(tmp_path, "0")
    assert not [m for m in held if m.startswith(("torch._dynamo", "torch._inductor"))]


def test_the_opt_in_preload_holds_only_what_torch_compile_imports(tmp_path):
    """The cold compile the product reports is the first compiled call, which must pay every
    import it makes in a user's fresh process.  With ``COMPILELAB_PRELOAD_COMPILE=1`` the
    server holds what the line before it, ``torch.compile(model)``, imports (a user's process
    has paid that, untimed, as in the naive harness), and not one compiler module more."""
    import json
    import subprocess
    import sys

    held = _held_by_a_fork(tmp_path, "1")
    fresh = subprocess.run([sys.executable, "-c", FRESH.format(prefixes=COMPILER)],
                           capture_output=True, text=True, timeout=300, check=True)
    user = set(json.loads(fresh.stdout.strip().splitlines()[-1]))
    assert "torch._dynamo" in held  # the preload is there (engine/preload_compile.py)
    assert held <= user, sorted(held - user)[:20]


def test_process_names_fit_the_kernel_limit():
    assert forked.process_name("reduce-overhead") == "cl:reduce-overh"
    assert len(forked.process_name("max-autotune-no-cudagraphs")) == 15


def _exit_hook_in_fork() -> None:
    import os

    from engine import preload

    os._exit(0 if preload.EXIT_HOOK else 7)


def test_only_the_server_skips_its_teardown():
    """The server ends with ``os._exit`` (its torch teardown held the runner's output pipes
    open for ~1.2 s after a run); a plain import, as here in pytest, must keep its exit code."""
    from engine import preload

    assert not preload.EXIT_HOOK
    proc = forked.context().Process(target=_exit_hook_in_fork)
    proc.start()
    proc.join(120)
    assert proc.exitcode == 0  # the fork inherited the server's hook


def test_the_server_can_be_started_before_the_run_needs_it():
    from multiprocessing import forkserver

    forked.start_early()
    assert forkserver._forkserver._forkserver_pid is not None  # started, not waited for
    assert forked.fork_is_clean()


def test_stopping_unused_servers_ends_them(monkeypatch):
    """The CLI ends its servers as it exits: one still importing would keep a caller that reads
    the command's output waiting for its imports."""
    import time
    from multiprocessing import forkserver

    from engine import hostload

    forked.start_early()
    pid = forkserver._forkserver._forkserver_pid
    assert pid is not None
    monkeypatch.setattr(forked, "USED", True)
    forked.stop_unused_servers()  # children came from it: left alone
    assert not hostload._gone(pid)
    monkeypatch.setattr(forked, "USED", False)
    forked.stop_unused_servers()
    deadline = time.monotonic() + 30
    while not hostload._gone(pid) and time.monotonic() < deadline:  # a zombie until reaped
        time.sleep(0.05)
    assert hostload._gone(pid)
    assert forked.fork_is_clean()  # a later fork starts a new server


def test_a_live_process_is_not_gone_and_a_killed_one_is():
    import signal
    import subprocess
    import sys

    from engine import hostload

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert not hostload._gone(proc.pid)
        proc.send_signal(signal.SIGKILL)
        hostload._wait_gone([proc.pid], limit_s=30)
        assert hostload._gone(proc.pid)  # a zombie: not reaped yet, its memory released
    finally:
        proc.kill()
        proc.wait()
    assert hostload._gone(proc.pid)
