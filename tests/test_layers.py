"""The product's packages import downward only, and no module imports itself round a loop.

Layers, bottom to top: ``contract`` (the torch-free contract: spec and result schema, formatting,
text rules), ``storage`` (SQL only), ``engine`` (torch: models, measuring, orchestration, CLI;
its ``analysis`` torch-free), ``dashboard``, ``scripts`` (the launchers users run) and, above
the product, ``acceptance`` (the scripts behind the published figures: nothing of the product
may depend on them).  Every import counts, also one inside a function; an import under
``if TYPE_CHECKING:`` does not (it never runs).  Read from the source with ``ast``: nothing is
imported to find out.  The acceptance scripts also import each other by bare name (their folder
on ``sys.path``): those imports count too.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ["contract", "storage", "engine", "dashboard", "scripts", "acceptance"]
# Folders whose scripts import each other by bare name (the folder put on sys.path).
BARE_NAMES = ("acceptance",)


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in LAYERS:
        for path in (ROOT / pkg).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


def _resolve(name: str, importer: str = "") -> str | None:
    """The product module an import names (the longest known prefix), or None."""
    folder = importer.split(".")[0]
    if folder in BARE_NAMES and f"{folder}.{name}" in MODULES:
        return f"{folder}.{name}"
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str) -> set[str]:
    tree = ast.parse(MODULES[module].read_text())
    skip = _type_checking_lines(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        for name in names:
            target = _resolve(name, module)
            if target and target != module:
                found.add(target)
    return found


GRAPH = {m: _imports(m) for m in MODULES}


def _layer(module: str) -> int:
    return LAYERS.index(module.split(".")[0])


def test_every_import_runs_down_the_layers():
    upward = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() for t in targets
                    if _layer(t) > _layer(m))
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(upward)


def test_storage_imports_nothing_from_the_engine():
    bad = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() if m.startswith("storage")
                 for t in targets if t.startswith(("engine", "dashboard")))
    assert not bad, bad


def test_no_import_cycles():
    """Tarjan's strongly connected components over every module of the layers."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in GRAPH:
        if v not in index:
            visit(v)
    assert not cycles, cycles


def test_at_most_twelve_modules_at_the_engines_top():
    top = sorted(p.name for p in (ROOT / "engine").glob("*.py"))
    assert len(top) <= 12, top


@pytest.mark.parametrize("package", ["contract", "engine.analysis"])
def test_the_torch_free_packages_import_without_torch(package):
    """What the dashboard imports for figures and verdicts never pulls torch in."""
    names = sorted(m for m in MODULES if m == package or m.startswith(package + "."))
    code = ("import importlib, json, sys\n"
            f"for name in {names!r}:\n    importlib.import_module(name)\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'torch')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_the_acceptance_scripts_bare_imports_are_in_the_graph():
    """``import bench_vs_naive`` from an acceptance script (its folder on sys.path) is an edge."""
    assert "acceptance.bench_vs_naive" in GRAPH["acceptance.time_to_answer_steps"]
    assert "acceptance.acceptance_db" in GRAPH["acceptance.models_acceptance"]
