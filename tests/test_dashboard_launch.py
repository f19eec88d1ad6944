"""Every way the dashboard starts binds 127.0.0.1 unless the user names another address, with
usage statistics and the Deploy button off (scripts/run_all.py, Makefile, .streamlit/config.toml).
The browser side (no request leaves loopback) is tests/test_dashboard_offline.py."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def run_all():
    spec = importlib.util.spec_from_file_location("run_all", ROOT / "scripts" / "run_all.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _flags(cmd: list[str]) -> dict[str, str]:
    return {cmd[i]: cmd[i + 1] for i in range(len(cmd) - 1) if cmd[i].startswith("--")}


def test_launcher_defaults_to_loopback(run_all, monkeypatch):
    monkeypatch.delenv("COMPILELAB_ADDRESS", raising=False)
    args = run_all.argparse.Namespace(no_worker=True, address=run_all.DEFAULT_ADDRESS, port=8501)
    flags = _flags(run_all._commands(args)["dashboard"])
    assert flags["--server.address"] == "127.0.0.1"
    assert flags["--browser.gatherUsageStats"] == "false"
    assert flags["--client.toolbarMode"] == "minimal"
    assert flags["--client.showErrorDetails"] == "type"


def test_loopback_accepts_loopback_host_names_only(run_all):
    """DNS rebinding (issue 39): a page whose name resolves to 127.0.0.1 reached the websocket
    of a dashboard without a password and queued a run."""
    def hosts(address: str) -> list[str]:
        cmd = run_all.dashboard_command(address, 8501)
        return [cmd[i + 1] for i, flag in enumerate(cmd) if flag == "--server.allowedHosts"]

    assert sorted(hosts("127.0.0.1")) == ["127.0.0.1", "::1", "localhost"]
    assert hosts("0.0.0.0") == ["*"]
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert sorted(config["server"]["allowedHosts"]) == sorted(hosts("localhost"))


@pytest.mark.parametrize("address", ["127.0.0.1", "localhost", "::1"])
def test_no_warning_on_loopback(run_all, address):
    assert run_all.exposure_warning(address) is None


def test_wider_address_warns_that_there_is_no_login(run_all, monkeypatch):
    monkeypatch.delenv("COMPILELAB_DASHBOARD_PASSWORD", raising=False)
    warning = run_all.exposure_warning("0.0.0.0")
    assert "WARNING" in warning and "NO login" in warning
    assert "COMPILELAB_DASHBOARD_PASSWORD" in warning
    monkeypatch.setenv("COMPILELAB_DASHBOARD_PASSWORD", "s3cret")
    warning = run_all.exposure_warning("10.0.0.5")
    assert "password page is on" in warning and "s3cret" not in warning
    assert "make shared" in warning


@pytest.mark.skipif(not shutil.which("make"), reason="no make")
@pytest.mark.parametrize("target", ["run", "dashboard"])
def test_make_targets_bind_loopback_unless_told(target):
    def dry(*extra: str) -> str:
        return subprocess.run(["make", "-n", target, *extra], cwd=ROOT, capture_output=True,
                              text=True, env={"PATH": "/usr/bin:/bin"}, check=True).stdout
    assert '--address "127.0.0.1"' in dry()
    assert '--address "0.0.0.0"' in dry("ADDRESS=0.0.0.0")


def test_streamlit_config_in_the_repository_root_matches():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "127.0.0.1"
    assert config["browser"]["gatherUsageStats"] is False
    assert config["client"]["toolbarMode"] == "minimal"


def test_upload_limit_is_the_bundle_limit():
    """Every bundle storage accepts gets through (Streamlit's default 200 MB once refused valid
    ones), and nothing larger: an upload is held in the server's memory (issue 39: 512 MiB a
    file let four uploads take the server from 253 to 2 257 MiB)."""
    from scripts.run_all import STREAMLIT_FLAGS
    from storage.bundle import MAX_BUNDLE_BYTES

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] * 2**20 == MAX_BUNDLE_BYTES
    flag = STREAMLIT_FLAGS[STREAMLIT_FLAGS.index("--server.maxUploadSize") + 1]
    assert int(flag) == config["server"]["maxUploadSize"]
