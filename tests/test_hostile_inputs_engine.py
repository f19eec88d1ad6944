"""A hostile-input corpus for the engine side: CLI arguments and queue rows rewritten in the
database, as someone who can type commands or write one row would try them (issue 12).

Each CLI case asserts exit code 2, one clear line on stderr (argparse's usage + error for its own
checks), no traceback, nothing on stdout and no database file created where none should be. Each
queue-row case rewrites a queued run's spec in the database, lets a worker (in this process, no
user models allowed) claim it, and asserts the run ends ``failed`` with a one-line reason, the
worker survives, and nothing named by the spec was imported (marker files stay absent).
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, run_cli
from sqlalchemy import text

from engine.orchestrate.worker import Worker
from storage import open_database, queue
from storage.models import Run

USER = str(FIXTURES / "user_models.py")
SECRET = "s3cr3t-pw"


def _assert_one_clear_line(proc, *, expect: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stdout == "", proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "error:" in line]
    assert len(errors) == 1, proc.stderr
    if not errors[0].startswith("python -m engine"):  # argparse prints its usage lines first
        assert len(lines) == 1, proc.stderr
    assert expect.lower() in errors[0].lower(), errors[0]


LONG = "x" * 300
# (case id, CLI args with {tmp} for the test's folder, expected text in the error line)
CLI_CASES = [
    ("show-huge-id", ["show", "99999999999999999999"], "no run can have id"),
    ("show-negative-id", ["show", "-1"], "no run can have id"),
    ("show-zero-id", ["show", "0"], "no run can have id"),
    ("show-not-a-number", ["show", "seven"], "positive whole number"),
    ("show-5000-digits", ["show", "9" * 5000], "positive whole number"),
    ("show-superscript-two", ["show", "²"], "positive whole number"),
    ("show-typo-db", ["show", "1", "--db", "sqlite:///{tmp}/typo.db"], "does not exist"),
    ("cancel-typo-db", ["cancel", "1", "--db", "sqlite:///{tmp}/typo.db"], "does not exist"),
    ("show-corrupt-db", ["show", "1", "--db", "sqlite:///{tmp}/corrupt.db"], "not a database"),
    ("run-corrupt-db", ["run", "--model", "mlp", "--dim", "hidden=8", "--queue",
                        "--db", "sqlite:///{tmp}/corrupt.db"], "not a database"),
    # /proc refuses new files even to root: the read-only directory case on any CI machine.
    ("run-readonly-dir", ["run", "--model", "mlp", "--dim", "hidden=8", "--queue",
                          "--db", "sqlite:////proc/compilelab.db"], "unable to open"),
    ("run-unwritable-parent", ["run", "--model", "mlp", "--dim", "hidden=8", "--queue",
                               "--db", "sqlite:////proc/sys/none/compilelab.db"],
     "does not exist"),
    ("show-missing-run", ["show", "424242", "--db", "sqlite:///{tmp}/real.db"], "424242"),
    ("db-nonsense", ["show", "1", "--db", "nonsense"], "not a database URL"),
    ("db-unreachable-pg", ["show", "1", "--db", f"postgresql://u:{SECRET}@127.0.0.1:1/x"],
     "cannot open database"),
    ("db-mysql", ["show", "1", "--db", f"mysql://u:{SECRET}@127.0.0.1/x"], "unsupported"),
    ("db-http", ["run", "--model", "mlp", "--db", f"http://u:{SECRET}@example.com/"],
     "unsupported"),
    ("db-broken-url", ["show", "1", "--db", f"postgresql://u:{SECRET}@[::1/x"],
     "not a database URL"),
    ("dynamic-maybe", ["run", "--model", "mlp", "--dynamic", "maybe"], "--dynamic"),
    ("tag-300-chars", ["run", "--model", "mlp", "--tag", LONG], "longer than 100"),
    ("tag-newline", ["run", "--model", "mlp", "--tag", "a\nb"], "control character"),
    ("tag-bidi-override", ["run", "--model", "mlp", "--tag", "abc\u202edef"],
     "control character"),
    ("note-20001-chars", ["run", "--model", "mlp", "--note", "n" * 20001], "20000"),
    ("model-unknown", ["run", "--model", "nosuch"], "unknown model"),
    ("model-plugin-traversal", ["run", "--model", "plugin:../../etc/passwd"], "no plugin"),
    ("model-empty-ref", ["run", "--model", ":factory"], "cannot be imported"),
    ("model-missing-file", ["run", "--model", "{tmp}/nope.py:factory"], "does not exist"),
    ("dim-huge", ["run", "--model", "mlp", "--dim", "batch=99999999999999999999"],
     "out of range"),
    ("dim-5000-digits", ["run", "--model", "mlp", "--dim", "batch=" + "9" * 5000],
     "whole numbers"),
    ("dim-zero", ["run", "--model", "mlp", "--dim", "batch=0"], "must be > 0"),
    ("dim-nan", ["run", "--model", "mlp", "--dim", "batch=nan"], "whole numbers"),
    ("dim-unknown", ["run", "--model", "mlp", "--dim", "command=1"], "has no dim"),
    ("dim-no-equals", ["run", "--model", "mlp", "--dim", "batch"], "name=value"),
    ("variant-unknown", ["run", "--model", "mlp", "--variants", "eager,evil"], "unknown variant"),
    ("dtype-float64", ["run", "--model", "mlp", "--dtype", "float64"], "not supported"),
    ("device-tpu", ["run", "--model", "mlp", "--device", "tpu"], "device must be"),
    ("min-time-nan", ["run", "--model", "mlp", "--min-time", "nan"], "min_time_s"),
    ("timeout-inf", ["run", "--model", "mlp", "--timeout", "inf"], "timeout_s"),
    ("warmup-text", ["run", "--model", "mlp", "--warmup-calls", "ten"], "--warmup-calls"),
    ("backend-unknown", ["run", "--model", "mlp", "--dim", "hidden=8", "--backend",
                         "nosuchbackend"], "unknown backend"),
    ("factory-sys-exit-0", ["run", "--model", f"{USER}:exits_during_build"], "sys.exit(0)"),
    ("factory-os-exit-0", ["run", "--model", f"{USER}:os_exits_during_build"], "exit code 0"),
    ("factory-not-a-model", ["run", "--model", f"{USER}:not_a_model"], "must return"),
]


# These reach a measuring child (10-20 s each here): the slow tier runs them.
SLOW_CASES = {"backend-unknown", "factory-sys-exit-0", "factory-os-exit-0", "factory-not-a-model"}


@pytest.mark.parametrize("args,expect", [
    pytest.param(*c[1:], id=c[0], marks=[pytest.mark.slow] if c[0] in SLOW_CASES else [])
    for c in CLI_CASES])
def test_cli_bad_input_gets_one_line_and_exit_2(args, expect, tmp_path):
    (tmp_path / "corrupt.db").write_bytes(b"this is not SQLite " * 300)
    if any("real.db" in a for a in args):
        open_database(f"sqlite:///{tmp_path / 'real.db'}").dispose()
    before = set(tmp_path.iterdir())
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    # --db where the case names none: a file that must not appear.
    extra = [] if "--db" in args or args[0] in ("models",) else ["--db",
                                                                  f"sqlite:///{tmp_path}/new.db"]
    p = run_cli(*args, *extra, timeout=120)
    _assert_one_clear_line(p, expect=expect)
    assert SECRET not in p.stderr
    assert set(tmp_path.iterdir()) == before  # no database (or anything else) created


def test_tag_with_markup_characters_is_allowed_and_queue_json_prints_only_the_id(tmp_path):
    """``<`` and ``=`` are allowed in tags (escaped where shown, never refused)."""
    url = f"sqlite:///{tmp_path / 'q.db'}"
    p = run_cli("run", "--model", "mlp", "--dim", "hidden=8", "--tag", "<b>=1&x", "--note",
                "=cmd|' /C calc'!A0", "--queue", "--json", db_url=url)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "1\n"
    from storage import queries

    run = queries.load_runs(open_database(url), [1])["runs"].iloc[0]
    assert run["tags"] == ["<b>=1&x"] and run["note"].startswith("=cmd")


# ------------------------------------------------------------------ queue rows rewritten in the DB


def _evil_module(folder: Path, marker: Path) -> Path:
    """A module file that leaves ``marker`` behind if anything ever imports it."""
    path = folder / "evil.py"
    path.write_text(f"open({str(marker)!r}, 'w').write('imported')\n"
                    "def factory(**dims):\n    return None\n")
    return path


def _evil_package(folder: Path, marker: Path) -> str:
    pkg = folder / "evilpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n")
    (pkg / "mod.py").write_text("def factory(**dims):\n    return None\n")
    return "evilpkg.mod:factory"


DEEP = "[" * 100_000 + "]" * 100_000
# (case id, the spec as JSON text written into runs.spec, expected text in runs.error)
ROW_CASES = [
    ("os-system", json.dumps({"model": "os:system", "dims": {"command": "touch {marker}"}}),
     "file or module reference"),
    ("subprocess-ref", json.dumps({"model": "subprocess:getoutput"}), "file or module reference"),
    ("builtins-exec", json.dumps({"model": "builtins:exec"}), "file or module reference"),
    ("evil-file", json.dumps({"model": "{evil_file}:factory"}), "file or module reference"),
    ("evil-package", json.dumps({"model": "{evil_pkg}"}), "file or module reference"),
    ("path-traversal-file", json.dumps({"model": "../../../../tmp/x.py:factory"}),
     "file or module reference"),
    ("plugin-traversal", json.dumps({"model": "plugin:../../evil"}), "no plugin model"),
    ("plugin-absolute", json.dumps({"model": "plugin:/tmp/evil"}), "no plugin model"),
    ("model-number", json.dumps({"model": 42}), "model must be"),
    ("model-null", json.dumps({"model": None}), "a model is required"),
    ("model-object", json.dumps({"model": {"__class__": "os"}}), "model must be"),
    ("model-lone-surrogate", '{"model": "\\ud800"}', "invalid Unicode"),
    ("model-newline", json.dumps({"model": "mlp\nrm -rf /"}), "control characters"),
    ("model-10k-chars", json.dumps({"model": "m" * 10_000}), "model must be"),
    ("unknown-key", json.dumps({"model": "mlp", "__import__": "os"}), "unknown option"),
    ("spec-list", "[1, 2, 3]", "must be a JSON object"),
    ("spec-string", json.dumps("mlp"), "must be a JSON object"),
    ("spec-number", "42", "must be a JSON object"),
    ("spec-not-json", "{not json", "must be a JSON object"),
    ("spec-deeply-nested", DEEP, "must be a JSON object"),
    ("spec-5000-digit-int", '{"model": "mlp", "seed": ' + "9" * 5000 + "}",
     "must be a JSON object"),
    ("dims-string", json.dumps({"model": "mlp", "dims": "rm -rf /"}), "dims must be"),
    ("dims-list", json.dumps({"model": "mlp", "dims": [1, 2]}), "dims must be"),
    ("dims-unknown-name", json.dumps({"model": "mlp", "dims": {"command": "ls"}}), "has no dim"),
    ("dim-huge-int", json.dumps({"model": "mlp", "dims": {"batch": 10**30}}), "out of range"),
    ("dim-nan", '{"model": "mlp", "dims": {"batch": NaN}}', "whole number"),
    ("dim-float", json.dumps({"model": "mlp", "dims": {"batch": 1.5}}), "whole number"),
    ("dim-bool", json.dumps({"model": "mlp", "dims": {"batch": True}}), "whole number"),
    ("dim-negative", json.dumps({"model": "mlp", "dims": {"batch": -1}}), "must be > 0"),
    ("dim-nested-junk", json.dumps({"model": "mlp", "dims": {"batch": {"a": [{"b": 1}]}}}),
     "whole number"),
    ("sweep-string", json.dumps({"model": "mlp", "sweep": "batch=1,2"}), "sweep must be"),
    ("sweep-values-string", json.dumps({"model": "mlp", "sweep": {"dim": "batch",
                                                                  "values": "1,2"}}), "sweep"),
    ("sweep-extra-key", json.dumps({"model": "mlp", "sweep": {"dim": "batch", "values": [1, 2],
                                                              "exec": "x"}}), "sweep must be"),
    ("dtype-list", json.dumps({"model": "mlp", "dtype": ["float32"]}), "dtype"),
    ("dtype-float64", json.dumps({"model": "mlp", "dtype": "float64"}), "not supported"),
    ("device-injection", json.dumps({"model": "mlp", "device": "cuda:0; rm -rf /"}),
     "device must be"),
    ("variants-string", json.dumps({"model": "mlp", "variants": "eager"}), "variants must be"),
    ("variants-numbers", json.dumps({"model": "mlp", "variants": [1, 2]}), "variants must be"),
    ("variants-unknown", json.dumps({"model": "mlp", "variants": ["eager", "rm"]}),
     "unknown variant"),
    ("backend-module", json.dumps({"model": "mlp", "backend": "os.system"}), "unknown backend"),
    ("backend-number", json.dumps({"model": "mlp", "backend": 123}), "backend must be"),
    ("dynamic-string", json.dumps({"model": "mlp", "dynamic": "yes"}), "dynamic must be"),
    ("dynamic-one", json.dumps({"model": "mlp", "dynamic": 1}), "dynamic must be"),
    ("fullgraph-string", json.dumps({"model": "mlp", "fullgraph": "false"}), "fullgraph must"),
    ("profile-null", json.dumps({"model": "mlp", "profile": None}), "profile must"),
    ("warmup-infinity", '{"model": "mlp", "warmup_calls": Infinity}', "warmup_calls"),
    ("warmup-1e309", '{"model": "mlp", "warmup_calls": 1e309}', "warmup_calls"),
    ("warmup-fraction", json.dumps({"model": "mlp", "warmup_calls": 10.5}), "warmup_calls"),
    ("timeout-negative", json.dumps({"model": "mlp", "timeout_s": -1}), "timeout_s"),
    ("seed-huge", json.dumps({"model": "mlp", "seed": 2**70}), "seed"),
    ("min-samples-string", json.dumps({"model": "mlp", "min_samples": "30"}), "min_samples"),
]


@pytest.fixture
def row_lab(tmp_path, monkeypatch):
    """A database with one valid queued run whose spec each case rewrites."""
    monkeypatch.delenv("COMPILELAB_ALLOW_USER_MODELS", raising=False)
    db = open_database(f"sqlite:///{tmp_path / 'rows.db'}")
    yield db
    db.dispose()


@pytest.mark.parametrize("raw,expect", [c[1:] for c in ROW_CASES], ids=[c[0] for c in ROW_CASES])
def test_queue_row_rewritten_in_the_database_fails_the_run_and_imports_nothing(
        raw, expect, row_lab, tmp_path, monkeypatch, caplog):
    marker = tmp_path / "MARKER"
    evil_file = _evil_module(tmp_path, marker)
    evil_pkg = _evil_package(tmp_path, marker)
    monkeypatch.syspath_prepend(str(tmp_path))  # even importable, the package is not imported
    raw = (raw.replace("{marker}", str(marker)).replace("{evil_file}", str(evil_file))
           .replace("{evil_pkg}", evil_pkg))
    run_id = queue.enqueue_run(row_lab, {"model": "mlp", "dims": {"batch": 2, "hidden": 8}})
    with row_lab.session(write=True) as s:
        s.execute(text("UPDATE runs SET spec = :raw WHERE id = :id"), {"raw": raw, "id": run_id})
    modules_before = set(sys.modules)
    caplog.set_level(logging.INFO, "compilelab.worker")
    assert Worker(row_lab, queue.worker_identity(), poll_s=0.01).serve(once=True) == 0
    with row_lab.session() as s:  # plain SQL: the ORM would decode the (hostile) spec column
        status, error = s.execute(text("SELECT status, error FROM runs WHERE id = :id"),
                                  {"id": run_id}).one()
    assert status == "failed", (status, error)
    assert expect.lower() in error.lower(), error
    assert "\n" not in error and len(error) < 1200
    error.encode("utf-8")  # storable and printable: no lone surrogates
    assert not marker.exists()
    assert not {"evil", "evilpkg", "compilelab_user_evil"} & (set(sys.modules) - modules_before)
    assert f"run {run_id} failed: refused by worker" in caplog.text


def test_an_allowed_worker_does_import_file_references(row_lab, tmp_path):
    """The control for the marker: with --allow-user-models the same row reaches the child,
    which imports the file (and then fails: its factory returns no model)."""
    marker = tmp_path / "MARKER"
    evil = _evil_module(tmp_path, marker)
    run_id = queue.enqueue_run(row_lab, {"model": "mlp"})
    with row_lab.session(write=True) as s:
        s.execute(text("UPDATE runs SET spec = :raw WHERE id = :id"),
                  {"raw": json.dumps({"model": f"{evil}:factory", "variants": ["eager"],
                                      "backend": "eager", "warm_cache": False,
                                      "profile": False}), "id": run_id})
    Worker(row_lab, queue.worker_identity(), allow_user_models=True).serve(once=True)
    with row_lab.session() as s:
        run = s.get(Run, run_id)
        assert run.status == "failed", run.error
    assert marker.exists()


def test_cli_worker_flag_and_env_switch_allow_user_models(tmp_path):
    from engine.cli.main import build_parser
    from engine.spec import user_models_allowed_by_env

    args = build_parser().parse_args(["worker", "--allow-user-models"])
    assert args.allow_user_models is True
    assert build_parser().parse_args(["worker"]).allow_user_models is False
    import os

    os.environ["COMPILELAB_ALLOW_USER_MODELS"] = "1"
    try:
        assert user_models_allowed_by_env()
    finally:
        del os.environ["COMPILELAB_ALLOW_USER_MODELS"]
    assert not user_models_allowed_by_env()


# A measuring process reads facts an earlier process of its run left in the runner's private
# folder (engine/measure/run_share.py).  Whatever is found there that is not exactly what the engine
# writes is computed again, never passed on to the result.
GOOD_BREAK = {"reason": "print", "file": "m.py", "line": 3, "count": 1}
SHARED_CASES = [
    ("explain", "not-json", "{"),
    ("explain", "list", "[]"),
    ("explain", "extra-key", json.dumps({"graph_count": 1, "graph_break_count": 0,
                                         "graph_breaks": [], "html": "<script>"})),
    ("explain", "bool-count", json.dumps({"graph_count": True, "graph_break_count": 0,
                                          "graph_breaks": []})),
    ("explain", "negative-count", json.dumps({"graph_count": 1, "graph_break_count": -5,
                                              "graph_breaks": []})),
    ("explain", "break-line-text", json.dumps({"graph_count": 2, "graph_break_count": 1,
                                               "graph_breaks": [{**GOOD_BREAK, "line": "3"}]})),
    ("explain", "break-extra-key", json.dumps({"graph_count": 2, "graph_break_count": 1,
                                               "graph_breaks": [{**GOOD_BREAK, "x": 1}]})),
    ("explain", "huge-reason", json.dumps({"graph_count": 2, "graph_break_count": 1,
                                           "graph_breaks": [{**GOOD_BREAK,
                                                             "reason": "A" * 10**6}]})),
    ("eager_profile", "nan", '{"kernels_per_call": NaN, "device_busy_ms_per_call": 1}'),
    ("eager_profile", "negative", json.dumps({"kernels_per_call": -1,
                                              "device_busy_ms_per_call": 1})),
    ("eager_profile", "text", json.dumps({"kernels_per_call": "9",
                                          "device_busy_ms_per_call": None})),
    ("eager_profile", "extra-key", json.dumps({"kernels_per_call": 1,
                                               "device_busy_ms_per_call": 1, "x": 0})),
]


@pytest.mark.parametrize("name,content", [c[::2] for c in SHARED_CASES],
                         ids=[c[1] for c in SHARED_CASES])
def test_a_crafted_shared_fact_is_computed_again(name, content, tmp_path, monkeypatch):
    from engine.measure import run_share

    monkeypatch.setenv(run_share.ENV, str(tmp_path))
    (tmp_path / f"{name}.json").write_text(content)
    real = ({"graph_count": 1, "graph_break_count": 0, "graph_breaks": []} if name == "explain"
            else {"kernels_per_call": 2.0, "device_busy_ms_per_call": 0.5})
    valid = run_share.explained_ok if name == "explain" else run_share.eager_profile_ok
    assert valid(real)
    assert run_share.once(name, lambda: real, valid) == real
    assert json.loads((tmp_path / f"{name}.json").read_text()) == real  # replaced
