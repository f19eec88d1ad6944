"""The preloaded process server (engine/orchestrate/forked.py): what a forked measuring child starts with."""

from __future__ import annotations

import pytest

from engine.orchestrate import forked, preloads

pytestmark = pytest.mark.skipif(not preloads.enabled(), reason="fork server is Linux-only")


def test_a_fork_holds_nothing_compiled_and_no_cuda_context():
    assert forked.fork_is_clean()


COMPILER = ("torch._dynamo", "torch._inductor", "torch._functorch", "triton")
FORKED = """
import json, sys
from engine.orchestrate import forked
def dump(path):
    import os
    with open(path, "w") as f:
        json.dump(sorted(m for m in sys.modules if m.startswith({prefixes!r})), f)
    os._exit(0)
if __name__ == "__main__":
    p = forked.context(False).Process(target=dump, args=(sys.argv[1],))
    p.start(); p.join(120)
    if not forked.fork_is_clean():
        sys.exit("not clean: " + forked.PROBLEM)
    sys.exit(p.exitcode)
"""


def test_a_fork_holds_no_compiler_module(tmp_path):
    """The cold compile the product reports must pay every compiler import a user's fresh
    process makes: a fork of the server holds none (a preloaded process may hold torch, not
    the compiler)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    script, out = tmp_path / "fork_modules.py", tmp_path / "modules.json"
    script.write_text(FORKED.format(prefixes=COMPILER))
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    subprocess.run([sys.executable, str(script), str(out)], env=env, cwd=root, timeout=300,
                   check=True)
    held = set(json.loads(out.read_text()))
    assert not [m for m in held if m.startswith(("torch._dynamo", "torch._inductor"))]


STARTS = """
import json, multiprocessing, sys
from engine.orchestrate import forked
def dump(path):
    import os
    forked._default_start_method()
    lock = multiprocessing.RLock()
    with open(path, "w") as f:
        json.dump([multiprocessing.get_start_method(), lock._semlock.name], f)
    os._exit(0)
if __name__ == "__main__":
    p = forked.context(False).Process(target=dump, args=(sys.argv[1],))
    p.start(); p.join(120)
    sys.exit(p.exitcode)
"""


def test_a_fork_starts_processes_as_a_fresh_interpreter_does(tmp_path):
    """A fork of the server inherits the server's start method; the child puts back the one a
    user's fresh process has, so a library's lock is not a named semaphore left to the
    command's resource tracker (which warned "leaked semaphore objects" after every run)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    script, out = tmp_path / "fork_starts.py", tmp_path / "starts.json"
    script.write_text(STARTS)
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    fresh = subprocess.run([sys.executable, "-c", "import multiprocessing as m; "
                            "print(m.get_start_method())"], capture_output=True, text=True,
                           check=True).stdout.strip()
    subprocess.run([sys.executable, str(script), str(out)], env=env, cwd=root, timeout=300,
                   check=True)
    method, name = json.loads(out.read_text())
    assert method == fresh
    if fresh == "fork":  # a fork-context lock is unlinked at once: nothing to track
        assert name is None


def test_process_names_fit_the_kernel_limit():
    assert forked.process_name("reduce-overhead") == "cl:reduce-overh"
    assert len(forked.process_name("max-autotune-no-cudagraphs")) == 15


def _exit_hook_in_fork() -> None:
    import os

    from engine.orchestrate import preload

    os._exit(0 if preload.EXIT_HOOK else 7)


def test_only_the_server_skips_its_teardown():
    """The server ends with ``os._exit`` (its torch teardown held the runner's output pipes
    open for ~1.2 s after a run); a plain import, as here in pytest, must keep its exit code."""
    from engine.orchestrate import preload

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

    from engine.measure import hostload

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

    from engine.measure import hostload

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
