"""The project commit in each run's fingerprint says when the measuring code was not exactly
that commit."""

from __future__ import annotations

import subprocess

from engine import environment


def _git(cwd, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_commit_is_marked_dirty_when_tracked_files_changed(tmp_path, monkeypatch):
    monkeypatch.delenv("COMPILELAB_COMMIT", raising=False)
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    _git(tmp_path, "add", "a.py")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
    head = _git(tmp_path, "rev-parse", "HEAD")
    monkeypatch.setattr(environment, "PROJECT_ROOT", tmp_path)
    assert environment.project_commit() == head
    (tmp_path / "untracked.txt").write_text("not code\n")  # untracked files do not count
    assert environment.project_commit() == head
    (tmp_path / "a.py").write_text("x = 2\n")
    assert environment.project_commit() == head + "+dirty"
    monkeypatch.setenv("COMPILELAB_COMMIT", "abc123")
    assert environment.project_commit() == "abc123"


def test_no_git_checkout_gives_none(tmp_path, monkeypatch):
    monkeypatch.delenv("COMPILELAB_COMMIT", raising=False)
    monkeypatch.setattr(environment, "PROJECT_ROOT", tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert environment.project_commit() is None
