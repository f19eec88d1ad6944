"""An attacker's pass over the kept TORCH_TRACE logs: where ``engine trace -o FILE`` writes (a
link planted beside FILE, FILE a directory or a link), stored text printed on a terminal (escape
sequences in variant names and notes), and an operator's own ``TORCH_TRACE`` in the runner's
environment (never handed to the measured processes)."""

from __future__ import annotations

import gzip
import logging
import os
import sys
from pathlib import Path

import pytest

from contract.text import one_line
from engine.cli.main import main
from engine.measure import torch_trace
from engine.orchestrate import process
from storage import artifacts, open_database
from tests.test_torch_trace import LINE, _finished_run

DATA = gzip.compress(LINE.encode())


@pytest.fixture
def kept(tmp_path: Path) -> tuple[str, int]:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    db = open_database(url)
    run_id = _finished_run(db)
    artifacts.save_artifact(db, run_id, "default", "torch_trace", "t", DATA,
                            note="truncated:\x1b]0;owned\x07 kept")
    db.dispose()
    return url, run_id


def _trace(url: str, run_id: int, out: Path, *extra: str) -> int:
    return main(["trace", str(run_id), "default", "-o", str(out), "--db", url, *extra])


def test_a_link_planted_beside_the_output_is_never_followed(kept, tmp_path, capsys):
    url, run_id = kept
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    out = tmp_path / "shared" / "t.log.gz"
    out.parent.mkdir()
    # someone who can write the shared directory guesses the temporary name
    (out.parent / "t.log.gz.part").symlink_to(victim)
    assert _trace(url, run_id, out) == 0, capsys.readouterr().err
    assert victim.read_bytes() == b"precious"
    assert out.read_bytes() == DATA and not out.is_symlink()
    assert oct(out.stat().st_mode & 0o777) != oct(0o600)  # a plain file's mode (umask)
    assert sorted(p.name for p in out.parent.iterdir()) == ["t.log.gz", "t.log.gz.part"]


def test_a_link_or_directory_at_the_output(kept, tmp_path, capsys):
    url, run_id = kept
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    link = tmp_path / "link.gz"
    link.symlink_to(victim)
    assert _trace(url, run_id, link) == 2  # a link is there: it exists, even without --force
    assert "--force" in capsys.readouterr().err
    dangling = tmp_path / "dangling.gz"
    dangling.symlink_to(tmp_path / "nowhere")
    assert _trace(url, run_id, dangling) == 2
    assert not (tmp_path / "nowhere").exists()
    # --force replaces the link itself, never the file it points to
    assert _trace(url, run_id, link, "--force") == 0
    assert victim.read_bytes() == b"precious" and not link.is_symlink()
    assert link.read_bytes() == DATA
    capsys.readouterr()
    directory = tmp_path / "dir"
    directory.mkdir()
    assert _trace(url, run_id, directory, "--force") == 2
    err = capsys.readouterr().err
    assert "is a directory" in err and "Traceback" not in err
    assert list(directory.iterdir()) == [] and [p.name for p in tmp_path.glob("*.part")] == []


def test_stored_text_reaches_the_terminal_without_its_escape_sequences(kept, tmp_path, capsys):
    url, run_id = kept
    assert _trace(url, run_id, tmp_path / "ok.gz") == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\\x1b]0;owned" in err
    db = open_database(url)
    artifacts.save_artifact(db, run_id, "x\x1b[2J\u202eevil", "torch_trace", "t", DATA)
    db.dispose()
    assert main(["trace", str(run_id), "eager", "-o", str(tmp_path / "e"), "--db", url]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\u202e" not in err and "\\x1b[2J\\u202eevil" in err


def test_one_line_escapes_control_and_bidi_characters():
    assert one_line("a\x1b[31mb\x9bc\x7f\u2066d\x00 \n e") == "a\\x1b[31mb\\x9bc\\x7f\\u2066d\\x00 e"
    assert one_line("max-autotune: oom <b>é</b>") == "max-autotune: oom <b>é</b>"


class _Popen:
    env: dict[str, str] = {}

    def __init__(self, *args, env, **kwargs) -> None:
        _Popen.env = env
        self.pid = os.getpid()


def test_an_operators_torch_trace_never_reaches_a_measured_process(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_TRACE", str(tmp_path / "operator"))
    monkeypatch.setenv("TORCH_DTRACE", str(tmp_path / "operator"))
    monkeypatch.setattr(process.forked, "usable", lambda: False)
    monkeypatch.setattr(process.subprocess, "Popen", _Popen)
    for keep, phase, expect in ((False, "cold", None), (True, "warm_cache", None),
                                (True, "cold", str(tmp_path / "trace-default"))):
        process.ChildProcess({"keep_trace": keep}, "default", phase, tmp_path / "cache",
                             tmp_path)
        assert _Popen.env.get("TORCH_TRACE") == expect, (keep, phase)
        assert "TORCH_DTRACE" not in _Popen.env


def test_a_fork_drops_the_trace_handler_its_server_made_from_the_runners_environment(
        monkeypatch, tmp_path):
    pytest.importorskip("torch")
    from torch._logging import _internal as tl

    inherited = tl.LazyTraceHandler(str(tmp_path / "operator"))
    other = logging.NullHandler()
    monkeypatch.setattr(tl, "LOG_TRACE_HANDLER", inherited)
    monkeypatch.setattr(tl.trace_log, "handlers", [inherited, other])
    monkeypatch.delenv("TORCH_TRACE", raising=False)
    assert "torch._logging._internal" in sys.modules
    assert torch_trace.enable_in_child() is None
    assert tl.trace_log.handlers == [other] and tl.LOG_TRACE_HANDLER is None


def test_show_prints_stored_text_without_its_escape_sequences(tmp_path, capsys):
    """A bundle's free-form ``environment`` strings reach ``engine show``: OSC 52 sets the
    terminal's clipboard, CR rewrites the line already printed."""
    sys.path.insert(0, str(Path(__file__).parent))
    from review_support import import_runs, make_run

    url = f"sqlite:///{tmp_path / 's.db'}"
    db = open_database(url)
    run = make_run("2026-11-02", ["n"], commit="\x1b]52;c;ZXZpbA==\x07")
    run["environment"]["gpu"] = "H200\rFAKE\u202e"
    run["error"] = "boom\x1b[2J"
    (run_id,) = import_runs(db, [run])
    db.dispose()
    assert main(["show", str(run_id), "--db", url]) == 0
    out = capsys.readouterr().out
    assert not {"\x1b", "\x07", "\r", "\u202e"} & set(out)
    assert "H200\\x0dFAKE\\u202e" in out and "\n" in out


def test_the_stored_bytes_never_go_raw_to_a_terminal(kept, monkeypatch, capsys):
    """``-o -`` on a terminal would print whatever the row holds (escape sequences included)."""
    url, run_id = kept
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert _trace(url, run_id, Path("-")) == 2
    captured = capsys.readouterr()
    assert "pipe them" in captured.err and captured.out == ""
