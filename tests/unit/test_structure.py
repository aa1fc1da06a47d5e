"""The structure of loadlib/, checked rather than reviewed: sizes and the layer order of docs/architecture.md.

No function over 80 lines, no module over 500; each package (or top-level module) imports only those of lower
layers, never a sibling of its own layer or a higher one; and the mock LLM server, a test double, is started by the
Locust integration and imported by nothing else of the stack."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOADLIB = ROOT / "loadlib"
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 500

# Lowest first: the units of a layer import only units of lower layers (docs/architecture.md, "Layers").
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("logs", "redact", "pacing", "histogram", "mockapi", "option", "moved", "gcpause"),
    ("providers",),
    ("config",),
    ("transport",),
    ("records",),
    ("data", "metrics", "sinks"),
    ("mock", "verdicts"),
    ("outputs", "capacity"),
    ("failover",),
    ("options",),
    ("settings", "options_help", "reports"),
    ("locust",),
    ("scenarios",),
    ("__main__", "__init__", "user", "shapes", "tokens"),
)
RANK = {unit: rank for rank, layer in enumerate(LAYERS) for unit in layer}
# The modules that start the mock (the embedded one, a pool's mocks for drills): the only importers of loadlib.mock.
MOCK_STARTERS = frozenset({"loadlib/locust/embedded_mock.py", "loadlib/locust/drills.py"})
MODULES = sorted(LOADLIB.rglob("*.py"))


def unit_of(module: str) -> str:
    """`loadlib.metrics.stats` -> "metrics", `loadlib.config` -> "config", `loadlib` -> "__init__"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path) -> str:
    dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return dotted.removesuffix(".__init__")


def imported(path: Path) -> set[str]:
    """Every loadlib module `path` imports, at the top or inside a function (`from loadlib.x import y` gives
    loadlib.x: it names the unit)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out |= {_from_loadlib(a.name) for a in node.names} if node.module == "loadlib" else {node.module}
    return {name for name in out if name == "loadlib" or name.startswith("loadlib.")}


def _from_loadlib(name: str) -> str:
    """`from loadlib import x`: the module loadlib.x if there is one, else a name of the facade, loadlib itself."""
    is_module = (LOADLIB / name).is_dir() or (LOADLIB / f"{name}.py").exists()
    return f"loadlib.{name}" if is_module else "loadlib"


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_every_unit_has_a_layer() -> None:
    units = {unit_of(module_name(path)) for path in MODULES}
    assert units <= set(RANK), f"give these a layer in LAYERS and docs/architecture.md: {sorted(units - set(RANK))}"


@pytest.mark.parametrize("path", MODULES, ids=rel)
def test_no_import_reaches_a_sibling_or_a_higher_layer(path: Path) -> None:
    own = unit_of(module_name(path))
    wrong = []
    for name in sorted(imported(path)):
        unit = unit_of(name)
        if unit != own and RANK.get(unit, -1) >= RANK[own]:
            wrong.append(f"{name} ({unit}, layer {RANK.get(unit)})")
    assert not wrong, f"{rel(path)} ({own}, layer {RANK[own]}) imports {wrong}"


def test_only_the_starters_import_the_mock() -> None:
    importers = {rel(path) for path in MODULES if unit_of(module_name(path)) != "mock"}
    importers = {p for p in importers if any(unit_of(n) == "mock" for n in imported(ROOT / p))}
    assert importers <= MOCK_STARTERS, sorted(importers - MOCK_STARTERS)


@pytest.mark.parametrize("path", MODULES, ids=rel)
def test_no_module_over_500_lines(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{rel(path)} has {lines} lines: split it by concept"


def long_functions(path: Path) -> list[str]:
    nodes = ast.walk(ast.parse(path.read_text()))
    functions = [n for n in nodes if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    spans = [(f.name, (f.end_lineno or f.lineno) - f.lineno + 1) for f in functions]
    return [f"{name} ({n} lines)" for name, n in spans if n > MAX_FUNCTION_LINES]


@pytest.mark.parametrize("path", MODULES, ids=rel)
def test_no_function_over_80_lines(path: Path) -> None:
    assert not long_functions(path), f"{rel(path)}: {long_functions(path)}"


def test_the_checks_see_what_they_forbid(tmp_path: Path) -> None:
    """The checks cannot pass vacuously: a long function is found, and an upward import is read."""
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    long_one = tmp_path / "long.py"
    long_one.write_text(f"def f():\n{body}\n")
    assert long_functions(long_one) == [f"f ({MAX_FUNCTION_LINES + 1} lines)"]
    upward = tmp_path / "up.py"
    upward.write_text("def f():\n    from loadlib.locust.user import LLMUser\n")
    assert unit_of(next(iter(imported(upward)))) == "locust"
    assert len(MODULES) > 100
