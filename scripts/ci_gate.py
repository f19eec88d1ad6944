"""A CI job in one script: measure a suite, export, import into a fresh database, gate.

What a CI job on a GPU host does with Compile Lab, using only ``python -m engine`` (no
dashboard), each step a command a CI log shows:

1. **baseline** — unless the measuring database already holds one (or ``--baseline-bundle``
   gives one from an earlier job): ``suite run`` with the tag ``ci-baseline``;
2. **candidate** — ``suite run`` again, tagged ``ci-candidate`` and ``ci-<stamp>`` (this job);
3. **export** the baseline and candidate runs to ``OUT/bundle.json``;
4. **import** the bundle into a fresh SQLite database ``OUT/fresh.db`` (stdout: the run ids);
5. **gate** there: ``--baseline ci-baseline --candidate ci-<stamp>``, Markdown to
   ``OUT/gate.md`` and stdout, JSON to ``OUT/gate.json``.

Exit code: the gate's (0 nothing regressed, 1 something did, 2 bad input); 3 when a step
before the gate failed.  On the H200::

    python scripts/ci_gate.py --db sqlite:///$OUT/ci.db --out $OUT

On a CPU (plumbing only)::

    python scripts/ci_gate.py --db sqlite:///tmp/ci.db --out /tmp/ci \\
        --suite tests/fixtures/suite_tiny.toml --set backend=aot_eager
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE_TAG = "ci-baseline"


def engine(*args: str, capture: bool = True) -> subprocess.CompletedProcess:
    """``python -m engine ARGS`` from the repository root, echoed like a CI log line."""
    cmd = [sys.executable, "-m", "engine", *args]
    print("$ " + shlex.join(["python", "-m", "engine", *args]), file=sys.stderr, flush=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(cmd, cwd=ROOT, env=env, text=True,
                          stdout=subprocess.PIPE if capture else None)


def step(proc: subprocess.CompletedProcess, what: str, ok: tuple[int, ...] = (0,)) -> str:
    if proc.returncode not in ok:
        print(f"ci_gate: {what} failed (exit {proc.returncode})", file=sys.stderr)
        sys.exit(3)
    return proc.stdout or ""


def has_baseline(db: str, suite: str) -> bool:
    """True when ``db`` holds finished runs of the suite tagged ``ci-baseline``."""
    p = engine("suite", "summary", suite, "--tag", BASELINE_TAG, "--db", db)
    return p.returncode == 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", required=True, help="database the suite is measured into")
    p.add_argument("--out", required=True, help="folder for bundle.json, fresh.db, gate.md/json")
    p.add_argument("--suite", default=str(ROOT / "acceptance/suites/ci_small.toml"))
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="RunSpec override for every config (suite run --set)")
    p.add_argument("--baseline-bundle", default=None,
                   help="a bundle of baseline runs tagged ci-baseline from an earlier job")
    p.add_argument("--new-baseline", action="store_true",
                   help="measure a baseline even if the database has one")
    p.add_argument("--gate-arg", action="append", default=[],
                   help="extra argument for gate, e.g. --gate-arg=--speedup=0.9")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sets = [x for item in args.set for x in ("--set", item)]
    stamp = time.strftime("ci-%Y%m%d-%H%M%S")
    db = ["--db", args.db]

    if args.baseline_bundle is None and (args.new_baseline or not has_baseline(args.db, args.suite)):
        print("== measuring the baseline", file=sys.stderr)
        step(engine("suite", "run", args.suite, *sets, "--tag", BASELINE_TAG, "--json", *db),
             "baseline suite run", ok=(0, 1))
    print("== measuring the candidate", file=sys.stderr)
    cand = step(engine("suite", "run", args.suite, *sets, "--tag", "ci-candidate", "--tag",
                       stamp, "--json", *db), "candidate suite run", ok=(0, 1)).split()
    base = step(engine("suite", "summary", args.suite, "--tag", BASELINE_TAG, "--json", *db),
                "finding the baseline runs") if args.baseline_bundle is None else ""
    import json

    base_ids = [str(i) for i in json.loads(base)["runs"]] if base else []
    bundle = out / "bundle.json"
    step(engine("export", *base_ids, *cand, "-o", str(bundle), *db), "export")

    fresh = ["--db", f"sqlite:///{(out / 'fresh.db').resolve()}"]
    if args.baseline_bundle is not None:
        step(engine("import", args.baseline_bundle, *fresh), "import of the baseline bundle")
    ids = step(engine("import", str(bundle), *fresh), "import").split()
    print(f"== imported into a fresh database: runs {' '.join(ids)}", file=sys.stderr)

    gate = ["gate", "--baseline", BASELINE_TAG, "--candidate", stamp, *args.gate_arg, *fresh]
    md = engine(*gate)
    js = engine(*gate, "--json")
    (out / "gate.md").write_text(md.stdout or "")
    (out / "gate.json").write_text(js.stdout or "")
    sys.stdout.write(md.stdout or "")
    print(f"== gate exit {md.returncode} (files in {out})", file=sys.stderr)
    return md.returncode


if __name__ == "__main__":
    sys.exit(main())
