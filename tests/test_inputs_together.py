"""Inputs valid one by one but not together, and odd inputs, refused alike by every entry point
(issue 40, item 10): the CLI (``run``, ``run --queue``), a suite file, the dashboard's form, a
worker claiming a queued row, ``rerun`` of a stored run, and a bundle import.  Each member of each
class gets the same clear line from each entry point that can express it, and nothing is stored.

Classes: repeated or conflicting values for one setting; operating-system limits and special
files (a FIFO or a device named ``*.py``, names longer than the file system allows); model
outputs that are not tensors; database URLs that cannot hold a queue or belong to another
application; worker settings that make no sense; bundles with out-of-range timestamps or figures
that other figures are divided by.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import sqlite3
from pathlib import Path

import pytest
from conftest import FIXTURES, run_cli
from sqlalchemy import text

from engine.cli.main import main
from engine.orchestrate.worker import Worker
from storage import import_bundle_result, open_database, queries, queue
from storage.bundle import BundleError

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = json.loads((ROOT / "data" / "h200_bundle.json").read_text())
BASE = {"model": "mlp", "dims": {"hidden": 8}}


def _cli(capsys, *argv: str) -> str:
    """``python -m engine ARGV`` in this process: exit code 2 and its one line (asserted)."""
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse's own checks
        code = e.code
    assert code == 2
    out = capsys.readouterr()
    lines = [line for line in out.err.splitlines() if line.strip()]
    assert out.out == "" and len(lines) == 1 and lines[0].startswith("error: "), out
    return lines[0]


def _worker_refuses(db, raw: dict) -> str:
    """A queued row whose spec someone rewrote to ``raw``: the worker claims it, fails it with
    one line, and lives on."""
    run_id = queue.enqueue_run(db, {**BASE, "dims": {"batch": 2, "hidden": 8}})
    with db.session(write=True) as s:
        s.execute(text("UPDATE runs SET spec = :raw WHERE id = :id"),
                  {"raw": json.dumps(raw), "id": run_id})
    assert Worker(db, queue.worker_identity(), poll_s=0.01).serve(once=True) == 0
    with db.session() as s:
        status, error = s.execute(text("SELECT status, error FROM runs WHERE id = :id"),
                                  {"id": run_id}).one()
    assert status == "failed" and "\n" not in error, (status, error)
    return error


def _bundle_refuses(db, change) -> str:
    bundle = {**BUNDLE, "runs": copy.deepcopy([BUNDLE["runs"][0], BUNDLE["runs"][4]])}
    change(bundle["runs"][1])
    with pytest.raises(BundleError) as e:
        import_bundle_result(db, bundle)
    assert queries.list_runs(db).empty
    return str(e.value)


def _spec_change(raw: dict):
    def change(run):
        run["spec"].update(raw)
        run["dims"] = {}
    return change


@pytest.fixture
def lab(tmp_path, monkeypatch):
    monkeypatch.delenv("COMPILELAB_ALLOW_USER_MODELS", raising=False)
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    db = open_database(url)
    yield db, url
    db.dispose()


# ------------------------------------------------------------ repeated or conflicting values

# (id, raw spec over BASE, CLI arguments over `run --model mlp --dim hidden=8`, suite TOML
# lines, form request fields or None where the form cannot express it, expected words)
REPEATED = [
    ("sweep-value-twice", {"sweep": {"dim": "batch", "values": [8, 8]}},
     ["--dim", "batch=8,8"], 'sweep = { dim = "batch", values = [8, 8] }',
     {"sweep_dim": "batch", "sweep_values": "8, 8"}, "batch=8 is given twice"),
    ("dim-beside-its-sweep", {"dims": {"hidden": 8, "batch": 4},
                              "sweep": {"dim": "batch", "values": [8, 16]}},
     ["--dim", "batch=4", "--dim", "batch=8,16"],
     'dims = { hidden = 8, batch = 4 }\nsweep = { dim = "batch", values = [8, 16] }',
     None, "batch is given both as a dim (4) and as a sweep"),
    ("no-variant", {"variants": []}, ["--variants", ",,"], "variants = []",
     {"variants": []}, "no variant given"),
    ("variant-twice", {"variants": ["eager", "default", "default"]},
     ["--variants", "eager,default,default"], 'variants = ["eager", "default", "default"]',
     None, "'default' is given twice"),
]


@pytest.mark.parametrize(("raw", "argv", "toml", "form", "words"),
                         [c[1:] for c in REPEATED], ids=[c[0] for c in REPEATED])
def test_repeated_or_conflicting_values_are_refused_everywhere(raw, argv, toml, form, words,
                                                              lab, tmp_path, capsys):
    db, url = lab
    from engine.cli.suite_file import SuiteError, parse_suite

    line = _cli(capsys, "run", "--model", "mlp", "--dim", "hidden=8", *argv, "--queue",
                "--db", url)
    assert words in line, line
    with pytest.raises(SuiteError, match=words.replace("(", r"\(").replace(")", r"\)")):
        parse_suite(f'name = "s"\n[[configs]]\nmodel = "mlp"\n{toml}\n')
    if form is not None:
        from dashboard.catalogue import load_catalogue
        from dashboard.spec import RunRequest, build_spec

        mlp = next(m for m in load_catalogue() if m.name == "mlp")
        request = {"model": "mlp", "dims": {"hidden": 8}, "dtype": "float32", "device": "cpu",
                   "variants": ["default"], **form}
        errors = build_spec(RunRequest(**request), mlp, ["cpu"]).errors
        assert any(words in e for e in errors.values()), errors
    assert queries.list_runs(db).empty
    assert words in _worker_refuses(db, {**BASE, **raw})
    # rerun of a stored run whose spec was rewritten: the validator again
    rid = int(queries.list_runs(db).iloc[0]["run_id"])
    assert words in _cli(capsys, "rerun", str(rid), "--db", url)


def test_repeated_values_in_a_bundle_spec_are_refused(lab):
    db, _ = lab
    for _id, raw, *_rest, words in REPEATED:
        assert words in _bundle_refuses(db, _spec_change({**BASE, **raw})), _id


@pytest.mark.parametrize(("argv", "words"), [
    (["--dim", "batch=8", "--dim", "batch=16"], "--dim batch is given twice"),
    (["--option", "dynamic=true,1"], "repeats a value"),
    (["--option", "fullgraph=true", "--option", "fullgraph=false"], "given twice"),
    (["--variants", ""], "no variant given"),
])
def test_cli_only_spellings_of_one_setting_twice(argv, words, lab, capsys):
    db, url = lab
    assert words in _cli(capsys, "run", "--model", "mlp", "--dim", "hidden=8", *argv,
                         "--queue", "--db", url)
    assert queries.list_runs(db).empty


@pytest.mark.slow  # a fresh CLI process per case (2-3 s each)
def test_a_local_run_refuses_them_too(tmp_path):
    """``run`` without ``--queue`` (measured here) goes through the same validator first."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    for argv, words in ((["--dim", "batch=8,8"], "given twice"),
                        (["--variants", ",,"], "no variant given")):
        p = run_cli("run", "--model", "mlp", "--dim", "hidden=8", *argv, db_url=url,
                    timeout=120)
        assert p.returncode == 2 and words in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert not (tmp_path / "lab.db").exists() or queries.list_runs(open_database(url)).empty


# ------------------------------------------------------------ OS limits and special files


@pytest.fixture
def odd_plugins(tmp_path, monkeypatch):
    """A plugin folder with a good plugin, a FIFO and a device named *.py, a 200-character
    name, and a plugin whose DIMS are not numbers."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    good = "DIMS = {'batch': (4, 1, 64, True)}\ndef factory(batch):\n    raise NotImplementedError\n"
    (folder / "good.py").write_text(good)
    os.mkfifo(folder / "fifo.py")
    (folder / "zero.py").symlink_to("/dev/zero")
    (folder / ("n" * 200 + ".py")).write_text(good)
    (folder / "baddims.py").write_text("DIMS = {'batch': ('x', 1, 2)}\ndef factory(batch):\n"
                                       "    pass\n")
    monkeypatch.setenv("COMPILELAB_PLUGIN_DIR", str(folder))
    return folder


def test_special_files_in_the_plugin_folder_never_hang_or_crash(odd_plugins, lab, capsys):
    db, url = lab
    from engine.models.catalogue import list_models

    names = [m.name for m in list_models()]
    assert "plugin:good" in names and not {"plugin:fifo", "plugin:zero",
                                           "plugin:baddims"} & set(names)
    assert main(["models"]) == 0  # lists the rest and returns
    capsys.readouterr()
    from dashboard.catalogue import load_catalogue

    assert "plugin:good" in [m.name for m in load_catalogue()]  # the New run page's list
    for name, words in (("fifo", "is a FIFO"), ("zero", "is a device"),
                        ("baddims", "invalid literal")):
        line = _cli(capsys, "run", "--model", f"plugin:{name}", "--queue", "--db", url)
        assert words in line, line
        assert words in _worker_refuses(db, {"model": f"plugin:{name}"})


def test_special_files_and_long_names_named_on_the_command_line(tmp_path, lab, capsys):
    db, url = lab
    long = tmp_path / ("x" * 300 + ".py")
    fifo, device = tmp_path / "f.py", tmp_path / "null.py"
    os.mkfifo(fifo)
    device.symlink_to("/dev/null")
    for model, words in ((f"{long}:factory", "name is too long"),
                         (f"{fifo}:factory", "is a FIFO"), (f"{device}:factory", "is a device")):
        assert words in _cli(capsys, "run", "--model", model, "--queue", "--db", url), model
    for path, words in ((tmp_path / "b.json", "is a FIFO"), (long, "name is too long")):
        if not path.name.startswith("x"):
            os.mkfifo(path)
        assert words in _cli(capsys, "import", str(path), "--db", url)
        assert words in _cli(capsys, "suite", "run", str(path), "--queue", "--db", url)
    assert "too long" in _cli(capsys, "run", "--model", "mlp", "--queue", "--db",
                              f"sqlite:///{tmp_path / ('d' * 300)}.db")
    assert queries.list_runs(db).empty


# ------------------------------------------------------------ model outputs that are not tensors


def test_a_forward_that_returns_no_tensor_is_never_judged_correct():
    import torch

    from engine.measure import accuracy

    for out in ("text", None, (1, "a"), {"k": "v"}):
        verdict = accuracy.judge(accuracy.named_leaves(out), accuracy.named_leaves(out),
                                 accuracy.named_leaves(out), multiplier=3.0, floor=1e-3)
        assert verdict["ok"] is False and verdict["tensors"] == 0, out

    class Text(torch.nn.Module):
        def forward(self, x):
            return "not a tensor"

    x = torch.randn(2, 3)
    result = accuracy.check_inference(Text(), (x,), "not a tensor", "not a tensor",
                                      {"dtype": "float32", "step": "inference"})
    assert result["correct"] is False and result["accuracy_ok"] is False


@pytest.mark.slow  # builds the model in a checking process (torch import: ~5 s)
def test_the_cli_refuses_a_user_model_whose_forward_returns_text(tmp_path):
    p = run_cli("run", "--model", f"{FIXTURES / 'user_models.py'}:returns_text", "--queue",
                db_url=f"sqlite:///{tmp_path / 'lab.db'}", timeout=120)
    assert p.returncode == 2 and "returned str with no tensor" in p.stderr, p.stderr
    assert not (tmp_path / "lab.db").exists()


# ------------------------------------------------------------ database URLs


@pytest.mark.parametrize("memory", ["sqlite://", "sqlite:///:memory:",
                                    "sqlite:///file:x?mode=memory&uri=true"])
def test_an_in_memory_database_cannot_hold_a_queue(memory, tmp_path, capsys, monkeypatch):
    bundle = tmp_path / "b.json"
    bundle.write_text(json.dumps({**BUNDLE, "runs": BUNDLE["runs"][:1]}))
    suite = tmp_path / "s.toml"
    suite.write_text('name = "s"\n[[configs]]\nmodel = "mlp"\n')
    for argv in (["run", "--model", "mlp", "--queue"], ["import", str(bundle)],
                 ["suite", "run", str(suite), "--queue"]):
        assert "memory" in _cli(capsys, *argv, "--db", memory), argv
    from storage.db import DatabaseOpenError

    with pytest.raises(DatabaseOpenError, match="memory"):  # the worker's and dashboard's open
        open_database(memory, lasting=True)
    monkeypatch.setenv("COMPILELAB_DB", memory)
    from dashboard import data

    data._database.clear()
    with pytest.raises(DatabaseOpenError, match="memory"):
        data.database()


def test_another_applications_file_is_refused_unchanged(tmp_path, capsys):
    path = tmp_path / "theirs.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('theirs')")
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    url = f"sqlite:///{path}"
    for argv in (["run", "--model", "mlp", "--queue"], ["show", "1"], ["cancel", "1"],
                 ["import", str(tmp_path / "none.json")]):
        line = _cli(capsys, *argv, "--db", url)
        assert "another application's tables (notes)" in line or "does not exist" in line, line
    from storage.db import SchemaError

    with pytest.raises(SchemaError, match="another application"):
        open_database(url, lasting=True)  # the worker's and the dashboard's open
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["theirs.db"]  # no -wal, no -shm
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_a_missing_folder_is_not_created(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'typo' / 'lab.db'}"
    assert "does not exist" in _cli(capsys, "run", "--model", "mlp", "--queue", "--db", url)
    assert not (tmp_path / "typo").exists()


# ------------------------------------------------------------ worker settings


@pytest.mark.parametrize(("argv", "words"), [
    (["--stale-after", "-5"], "--stale-after: expected seconds between 2"),
    (["--stale-after", "0"], "--stale-after"),
    (["--stale-after", "nan"], "--stale-after"),
    (["--poll", "0"], "--poll"),
    (["--poll", "inf"], "--poll"),
    (["--gpus", "0,0"], "GPU 0 is given twice"),
    (["--gpus", "x"], "GPU indexes"),
    (["--gpus", ""], "GPU indexes"),
    (["--gpus", "-1"], "GPU indexes"),
    (["--db-wait", "-1"], "--db-wait"),
])
def test_worker_settings_that_make_no_sense(argv, words, tmp_path, capsys):
    line = _cli(capsys, "worker", *argv, "--once", "--db", f"sqlite:///{tmp_path / 'w.db'}")
    assert words in line, line
    assert not (tmp_path / "w.db").exists()


def test_gpus_that_this_host_does_not_have(monkeypatch):
    import torch

    from engine.orchestrate.worker import _gpu_list

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert _gpu_list("all") == ["0", "1"] and _gpu_list("1,0") == ["1", "0"]
    with pytest.raises(ValueError, match="has 2 CUDA GPU"):
        _gpu_list("0,7")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    with pytest.raises(ValueError, match="no CUDA GPU"):
        _gpu_list("0")


def test_a_worker_refuses_a_stale_limit_that_would_take_live_runs_over(lab):
    db, _ = lab
    for bad in (-1.0, 0.0, 1.0, float("nan")):
        with pytest.raises(ValueError, match="stale_after_s"):
            Worker(db, "w", stale_after_s=bad)


# ------------------------------------------------------------ bundles


def _set_time(key, value):
    def change(run):
        run[key] = value
    return change


def _stats(**values):
    def change(run):
        variant = next(v for v in run["variants"] if v["variant"] != "eager")
        variant["stats"].update(values)
    return change


BAD_BUNDLES = [
    ("before-year-1-in-utc", _set_time("created_at", "0001-01-01T00:00:00+14:00"), "outside"),
    ("after-9999-in-utc", _set_time("finished_at", "9999-12-31T23:59:59-14:00"), "outside"),
    ("beyond-2261", _set_time("created_at", "3000-01-01T00:00:00+00:00"), "outside"),
    ("before-1970", _set_time("created_at", "1969-12-31T23:59:59+00:00"), "outside"),
    ("zero-speedup", _stats(speedup=0.0, speedup_ci_low=0.0), "not above zero"),
    ("zero-median", _stats(median_ms=0.0), "not above zero"),
    ("zero-eager", _stats(eager_median_ms=0.0), "not above zero"),
    ("speedup-outside-its-interval", _stats(speedup=9.0), "outside its own interval"),
    ("interval-upside-down", _stats(speedup_ci_low=2.0, speedup_ci_high=1.0), "is above"),
]


@pytest.mark.parametrize("change,words", [c[1:] for c in BAD_BUNDLES],
                         ids=[c[0] for c in BAD_BUNDLES])
def test_bundles_with_figures_no_page_can_show(change, words, lab, tmp_path, capsys):
    """Refused by storage (the dashboard's upload and the CLI's import both go through it)
    with a BundleError naming the field, never an OverflowError or a division by zero."""
    db, url = lab
    assert words in _bundle_refuses(db, change)
    bundle = {**BUNDLE, "runs": copy.deepcopy([BUNDLE["runs"][0], BUNDLE["runs"][4]])}
    change(bundle["runs"][1])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bundle))
    line = _cli(capsys, "import", str(path), "--db", url)
    assert "bundle.runs[1]" in line and words in line and "nothing was imported" in line
