"""The regression-catching commands of ``python -m engine``, wired into engine/cli/main.py with two
calls (``add_parsers`` and ``dispatch``) so that file stays small: gate (engine/cli/gate.py),
export, import, rerun and baseline (engine/cli/history.py), suite (engine/cli/suite.py),
trace (engine/cli/trace.py)."""

from __future__ import annotations

import argparse
from typing import Any

from engine.cli.gate import add_gate_parser, cmd_gate
from engine.cli.history import (
    add_history_parsers,
    cmd_baseline,
    cmd_export,
    cmd_import,
    cmd_rerun,
)
from engine.cli.recommend import add_recommend_parser, cmd_recommend
from engine.cli.suite import add_suite_parsers, cmd_suite
from engine.cli.trace import add_trace_parser, cmd_trace

COMMANDS = {"gate": cmd_gate, "export": cmd_export, "import": cmd_import, "rerun": cmd_rerun,
            "baseline": cmd_baseline, "suite": cmd_suite, "recommend": cmd_recommend, "trace": cmd_trace}


def add_parsers(sub: Any, run_id_type: Any) -> list[argparse.ArgumentParser]:
    """Add the commands; returns the parsers that take ``--db``."""
    return [add_gate_parser(sub), *add_history_parsers(sub, run_id_type),
            *add_suite_parsers(sub), add_recommend_parser(sub, run_id_type),
            add_trace_parser(sub, run_id_type)]


def dispatch(args: argparse.Namespace) -> int | None:
    """Run the command if it is one of these (None otherwise)."""
    command = COMMANDS.get(args.cmd)
    return None if command is None else command(args)
