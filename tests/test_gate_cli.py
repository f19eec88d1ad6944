"""``python -m engine gate``: exit 0 when nothing regressed, 1 when something did, 2 on bad input;
Markdown and --json; pairing by tag and by pinned baseline."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli
from gate_support import ENV, finished_run, spread

from engine.cli.main import main
from storage import open_database


@pytest.fixture
def lab(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    db = open_database(url)
    yield url, db
    db.dispose()


def gate(url: str, *args: str, capsys) -> tuple[int, str, str]:
    code = main(["gate", *args, "--db", url])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_exit_codes_through_the_real_command_line(lab):
    url, db = lab
    base = finished_run(db, spread(2.0, 0.02), tags=("nightly",))
    slow = finished_run(db, spread(1.4, 0.02, seed=1), tags=("pr",))
    same = finished_run(db, spread(1.99, 0.02, seed=2), tags=("pr2",))
    p = run_cli("gate", "--baseline", str(base), "--candidate", str(slow), "--db", url)
    assert p.returncode == 1, p.stderr
    assert "REGRESSED" in p.stdout and "| speedup |" in p.stdout
    p = run_cli("gate", "--baseline", "nightly", "--candidate", "pr2", "--json", "--db", url)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["verdict"] == "passed" and doc["regressions"] == []
    assert doc["test"].startswith("one-sided Welch") and doc["alpha"] == 0.05
    p = run_cli("gate", "--baseline", "999", "--candidate", str(same), "--db", url)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("error: ") and "Traceback" not in p.stderr


def test_thirty_percent_slowdown_by_tag_names_variant_figure_values_and_interval(lab, capsys):
    url, db = lab
    finished_run(db, spread(2.0, 0.02), tags=("nightly",))
    finished_run(db, spread(1.0, 0.02), tags=("nightly",), model="pointwise_chain")
    finished_run(db, spread(1.4, 0.02, seed=3), tags=("pr",))
    finished_run(db, spread(1.0, 0.02, seed=4), tags=("pr",), model="pointwise_chain")
    code, out, _ = gate(url, "--baseline", "nightly", "--candidate", "pr", "--json",
                        capsys=capsys)
    assert code == 1
    doc = json.loads(out)
    (reg,) = doc["regressions"]
    assert (reg["variant"], reg["figure"]) == ("default", "speedup")
    assert reg["config"].startswith("mlp batch=8")
    assert reg["baseline"] == pytest.approx(2.0) and reg["candidate"] == pytest.approx(1.4)
    assert reg["baseline_interval"][0] < 2.0 < reg["baseline_interval"][1]
    assert reg["p_value"] < 0.05


def test_threshold_is_configurable(lab, capsys):
    url, db = lab
    a = finished_run(db, spread(2.0, 0.005, k=6))
    b = finished_run(db, spread(1.8, 0.005, k=6, seed=1))  # -10 %, clearly real
    assert gate(url, "--baseline", str(a), "--candidate", str(b), capsys=capsys)[0] == 1
    assert gate(url, "--baseline", str(a), "--candidate", str(b), "--speedup", "0.85",
                capsys=capsys)[0] == 0


def test_environment_differences_are_printed_first(lab, capsys):
    url, db = lab
    a = finished_run(db, spread(2.0, 0.02))
    b = finished_run(db, spread(1.4, 0.02, seed=1), env={**ENV, "driver": "580"})
    code, out, _ = gate(url, "--baseline", str(a), "--candidate", str(b), capsys=capsys)
    assert code == 1
    assert out.startswith("### Environment differences")
    assert out.index("| driver | 570 | 580 |") < out.index("REGRESSED")


def test_a_failing_variant_and_a_missing_config_regress(lab, capsys):
    url, db = lab
    finished_run(db, spread(2.0, 0.02), tags=("nightly",))
    finished_run(db, spread(2.0, 0.02), tags=("nightly",), model="gpt_decoder")
    finished_run(db, tags=("pr",), failed_variant=True)
    code, out, _ = gate(url, "--baseline", "nightly", "--candidate", "pr", capsys=capsys)
    assert code == 1
    assert "| passes | passed | failed (compile\\_error) |" in out
    assert "| config | measured | missing |" in out


def test_pinned_baselines_are_used_without_baseline_argument(lab, capsys):
    url, db = lab
    old = finished_run(db, spread(2.0, 0.02))
    newer = finished_run(db, spread(1.98, 0.02, seed=1), tags=("nightly",))
    cand = finished_run(db, spread(1.4, 0.02, seed=2))
    code, _, err = gate(url, "--candidate", str(cand), capsys=capsys)
    assert code == 2 and "no baseline is pinned" in err
    assert main(["baseline", "pin", str(old), "--db", url]) == 0
    assert "is the baseline of config" in capsys.readouterr().out
    code, out, _ = gate(url, "--candidate", str(cand), "--json", capsys=capsys)
    assert code == 1 and json.loads(out)["regressions"][0]["baseline_run"] == old
    # a tag pin for every config: its latest run (not the candidate) is the baseline
    assert main(["baseline", "unpin", str(old), "--db", url]) == 0
    assert main(["baseline", "pin", "--tag", "nightly", "--db", url]) == 0
    capsys.readouterr()
    code, out, _ = gate(url, "--candidate", str(cand), "--json", capsys=capsys)
    assert json.loads(out)["regressions"][0]["baseline_run"] == newer
    main(["baseline", "list", "--db", url])
    assert "tag 'nightly'" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["--baseline", "999", "--candidate", "1"], "no run with id 999"),
    (["--baseline", "nosuchtag", "--candidate", "1"], "no finished run is tagged"),
    (["--baseline", "run:abc", "--candidate", "1"], "positive whole number"),
    (["--baseline", "1", "--candidate", "1"], "its own baseline"),
    (["--baseline", "1", "--candidate", "2", "--speedup", "1.5"], "--speedup"),
    (["--baseline", "1", "--candidate", "2", "--alpha", "0"], "--alpha"),
    (["--baseline", "1", "--candidate", "3"], "is queued"),
    (["--baseline", "tag:other", "--candidate", "tag:nightly"], "no config in common"),
    (["--baseline", "tag:" + "x" * 200, "--candidate", "1"], "tag"),
])
def test_bad_input_exits_2_with_one_line(lab, capsys, args, message):
    url, db = lab
    finished_run(db, tags=("nightly",))
    finished_run(db)
    from storage import enqueue_run

    enqueue_run(db, {"model": "mlp", "dims": {}, "variants": ["eager"]})
    finished_run(db, model="resnet_small", tags=("other",))
    code, out, err = gate(url, *args, capsys=capsys)
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1


def test_missing_database_is_bad_input(tmp_path, capsys):
    code, _, err = gate(f"sqlite:///{tmp_path / 'none.db'}", "--baseline", "1",
                        "--candidate", "2", capsys=capsys)
    assert code == 2 and "does not exist" in err
    assert not (tmp_path / "none.db").exists()
