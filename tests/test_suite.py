"""Suite files: validated completely before anything is queued; summaries per mode."""

from __future__ import annotations

import json

import pytest
from gate_support import finished_run, spread

from engine.cli.main import main
from engine.cli.suite_file import SuiteError, parse_override, parse_suite
from storage import list_runs, open_database

GOOD = """
name = "nightly"
[defaults]
device = "cpu"
variants = ["eager", "default"]
[[configs]]
model = "mlp"
dims = { batch = 8 }
[[configs]]
model = "pointwise_chain"
dtype = "float32"
"""


def test_a_good_suite_fills_defaults_and_overrides():
    suite = parse_suite(GOOD, overrides={"backend": "aot_eager"})
    assert suite.tag == "suite:nightly" and len(suite.specs) == 2
    assert all(s["backend"] == "aot_eager" and s["device"] == "cpu" for s in suite.specs)
    assert suite.specs[0]["dims"]["batch"] == 8 and "hidden" in suite.specs[0]["dims"]


@pytest.mark.parametrize("text, message", [
    ("name = [", "not valid TOML"),
    ("name = 'x'\nfoo = 1\n[[configs]]\nmodel='mlp'", "unknown key(s) foo"),
    ("[[configs]]\nmodel='mlp'", "'name' is required"),
    ("name = 'x'", "at least one [[configs]]"),
    ("name = 'x'\nconfigs = [1]", "config 1: must be a table"),
    ("name = 'x'\n[[configs]]\nmodel='nope'", "config 1 (nope)"),
    ("name = 'x'\n[[configs]]\nmodel='mlp'\ndims={batch=-1}", "config 1 (mlp)"),
    ("name = 'x'\n[[configs]]\nmodel='mlp'\nwarmup=3", "unknown option"),
    ("name = 'x'\n[[configs]]\nmodel='mlp'\n[[configs]]\nmodel='mlp'\ndtype='int3'",
     "config 2"),
    ("name = '" + "x" * 200 + "'\n[[configs]]\nmodel='mlp'", "tag"),
    ("name = 'x'\ndefaults = 3\n[[configs]]\nmodel='mlp'", "[defaults] must be a table"),
    ('name = "x"\ntags = ["a\\u0007"]\n[[configs]]\nmodel="mlp"', "tag"),
])
def test_bad_suites_are_refused_with_where_and_why(text, message):
    with pytest.raises(SuiteError) as info:
        parse_suite(text, "s.toml")
    assert message in str(info.value) and str(info.value).startswith("s.toml")


def test_too_many_configs():
    text = "name='x'\n" + "[[configs]]\nmodel='mlp'\n" * 501
    with pytest.raises(SuiteError, match="the limit is 500"):
        parse_suite(text)


def test_set_values_are_toml_or_text():
    assert parse_override("processes=2") == ("processes", 2)
    assert parse_override("backend=aot_eager") == ("backend", "aot_eager")
    assert parse_override('variants=["eager","default"]') == ("variants", ["eager", "default"])
    with pytest.raises(SuiteError):
        parse_override("novalue")


def test_bad_suite_file_queues_nothing_and_exits_2(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    bad = tmp_path / "s.toml"
    bad.write_text(GOOD + "[[configs]]\nmodel = 'mlp'\ndims = { batch = 0 }\n")
    assert main(["suite", "run", str(bad), "--queue", "--db", url]) == 2
    err = capsys.readouterr().err
    assert "config 3 (mlp)" in err and err.count("\n") == 1
    assert main(["suite", "run", str(tmp_path / "none.toml"), "--db", url]) == 2
    assert "none.toml' does not exist" in capsys.readouterr().err
    assert main(["suite", "run", str(bad), "--set", "=3", "--db", url]) == 2
    assert len(list_runs(open_database(url))) == 0


def test_suite_queue_then_summary_against_pinned_baseline(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    path = tmp_path / "s.toml"
    path.write_text(GOOD)
    assert main(["suite", "run", str(path), "--queue", "--json", "--db", url]) == 0
    queued = [int(x) for x in capsys.readouterr().out.split()]
    db = open_database(url)
    assert len(queued) == 2
    assert set(list_runs(db)["status"]) == {"queued"}
    base = finished_run(db, spread(2.0, 0.02), tags=("suite:nightly",))
    finished_run(db, spread(1.0, 0.02), tags=("suite:nightly",))
    main(["baseline", "pin", str(base), "--db", url])
    capsys.readouterr()
    assert main(["suite", "summary", "nightly", "--json", "--db", url]) == 0
    doc = json.loads(capsys.readouterr().out)
    (mode,) = doc["modes"]
    assert mode["mode"] == "default"
    assert mode["candidate"]["geomean_speedup"] == pytest.approx(1.0)
    assert mode["baseline"]["geomean_speedup"] == pytest.approx(2.0)
    assert main(["suite", "summary", str(path), "--db", url]) == 0
    text = capsys.readouterr().out
    assert "default" in text and "(2.00×)" in text
