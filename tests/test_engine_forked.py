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
