"""``python -m engine export | import | rerun``: history without the dashboard."""

from __future__ import annotations

import json

from conftest import run_cli
from gate_support import finished_run, spread

from engine.cli.main import main
from storage import open_database
from storage.records import load_run


def test_export_import_twice_prints_ids_in_bundle_order(tmp_path, capsys):
    src = f"sqlite:///{tmp_path / 'src.db'}"
    db = open_database(src)
    first = finished_run(db, spread(2.0, 0.02), tags=("nightly",))
    second = finished_run(db, spread(1.5, 0.02), model="gpt_decoder")
    bundle = tmp_path / "b.json"
    # bundle order is the order asked for
    assert main(["export", str(second), str(first), "-o", str(bundle), "--db", src]) == 0
    assert json.loads(bundle.read_text())["runs"][0]["source_id"] == second
    capsys.readouterr()
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    p = run_cli("import", str(bundle), "--db", fresh)
    assert p.returncode == 0, p.stderr
    ids = [int(x) for x in p.stdout.split()]
    target = open_database(fresh)
    assert [load_run(target, i)["model"] for i in ids] == ["gpt_decoder", "mlp"]
    assert "already" not in p.stderr
    again = run_cli("import", str(bundle), "--db", fresh)
    assert again.returncode == 0 and [int(x) for x in again.stdout.split()] == ids
    assert "already in this database" in again.stderr
    # the imported runs gate like the originals
    gate = run_cli("gate", "--baseline", str(ids[1]), "--candidate", str(ids[1]), "--db", fresh)
    assert gate.returncode == 2  # a run is not its own baseline


def test_retagged_run_is_still_the_same_run(tmp_path, capsys):
    src = open_database(f"sqlite:///{tmp_path / 'src.db'}")
    run_id = finished_run(src, tags=("a",))
    from storage import export_bundle, import_bundle_result, set_note, set_tags

    bundle = export_bundle(src, [run_id])
    target = open_database(f"sqlite:///{tmp_path / 't.db'}")
    (new,) = import_bundle_result(target, bundle).new_ids
    set_tags(target, new, ["b"])
    set_note(target, new, "looked at it")
    again = import_bundle_result(target, bundle)
    assert again.new_ids == [] and again.ids == [new]
    # a different measurement with the same model and time is a different run
    other = json.loads(json.dumps(bundle))
    other["runs"][0]["variants"][1]["stats"]["median_ms"] *= 1.5
    assert len(import_bundle_result(target, other).new_ids) == 1


def test_export_and_import_bad_input_exit_2(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    db = open_database(url)
    finished_run(db)
    assert main(["export", "7", "-o", str(tmp_path / "x.json"), "--db", url]) == 2
    assert "no runs with ids [7]" in capsys.readouterr().err
    assert main(["import", str(tmp_path / "missing.json"), "--db", url]) == 2
    assert "cannot read" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "compilelab-bundle", "version": 99, "runs": []}')
    assert main(["import", str(bad), "--db", url]) == 2
    err = capsys.readouterr()
    assert err.out == "" and "version" in err.err
    assert main(["export", "1", "-o", str(tmp_path / "no" / "dir.json"), "--db", url]) == 2


def test_rerun_queues_the_same_spec(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    db = open_database(url)
    old = finished_run(db, tags=("nightly",))
    assert main(["rerun", str(old), "--json", "--same-tags", "--db", url]) == 0
    new = int(capsys.readouterr().out)
    a, b = load_run(db, old), load_run(db, new)
    assert b["status"] == "queued" and b["tags"] == ["nightly"]
    assert b["note"] == f"rerun of run {old}"
    from contract.config_key import config_key

    assert config_key(a["spec"]) == config_key(b["spec"])
    assert main(["rerun", "99", "--db", url]) == 2
    assert "no run with id 99" in capsys.readouterr().err
