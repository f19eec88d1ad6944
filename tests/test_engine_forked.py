"""The preloaded process server (engine/forked.py): what a forked measuring child starts with."""

from __future__ import annotations

import pytest

from engine import forked

pytestmark = pytest.mark.skipif(not forked.enabled(), reason="fork server is Linux-only")


def test_a_fork_holds_torch_but_not_the_compiler_and_no_cuda_context():
    """A cold compile must include what a user's fresh process pays: importing dynamo and
    inductor. The server may hold torch, never the compiler or a CUDA context."""
    assert forked.fork_is_clean()


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
