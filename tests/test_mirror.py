"""Every module of the shipped packages over 40 lines has a unit-test file named after it that
imports it (issue 27 item 4; cfn-lint's ``test/unit/rules/`` mirrors ``rules/``): module
``compiler/a/b.py`` → ``tests/unit/compiler/a/test_b.py``; a package's ``compiler/a/__init__.py`` →
``tests/unit/compiler/test_a.py``. Acceptance, golden and controller scenario tests live apart
(``tests/*.py``, ``tests/controller/``). So the next engineer finds a module's tests by its path."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MIN_LINES = 40


def mirror_of(module: Path) -> tuple[Path, str]:
    """The mirror test file of ``module`` (relative to the repo root) and its dotted name."""
    parts = list(module.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return Path("tests", "unit", *parts[:-1], f"test_{parts[-1]}.py"), ".".join(parts)


def imports(source: str, module: str) -> bool:
    """Whether ``source`` imports ``module`` itself (or a name from it) at absolute level."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import) and any(
            a.name == module or a.name.startswith(module + ".") for a in node.names
        ):
            return True
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and (node.module == module or any(f"{node.module}.{a.name}" == module for a in node.names))
        ):
            return True
    return False


def _modules(package: str) -> list[Path]:
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        with path.open(encoding="utf-8") as f:
            if sum(1 for _ in f) > MIN_LINES:
                out.append(path.relative_to(ROOT))
    return out


@pytest.mark.parametrize("package", ["compiler", "controller"])
def test_every_module_over_40_lines_has_its_mirror_test_file(package: str) -> None:
    modules = _modules(package)
    assert len(modules) > 20  # the walk found the package
    missing, silent = [], []
    for module in modules:
        test, dotted = mirror_of(module)
        if not (ROOT / test).is_file():
            missing.append(f"{test} (for {module})")
        elif not imports((ROOT / test).read_text(encoding="utf-8"), dotted):
            silent.append(f"{test} does not import {dotted}")
    assert not missing, "no mirror test file: " + ", ".join(missing)
    assert not silent, "; ".join(silent)


def test_every_mirror_directory_is_a_package() -> None:
    """``tests/unit`` holds equal basenames (``test_engine.py`` thrice): each directory needs an
    ``__init__.py`` or pytest's default import mode and mypy both refuse the second one."""
    unit = ROOT / "tests" / "unit"
    dirs = {d for p in unit.rglob("test_*.py") for d in p.parents if d == unit or unit in d.parents}
    lacking = sorted(str(d.relative_to(ROOT)) for d in dirs if not (d / "__init__.py").is_file())
    assert dirs, "no tests under tests/unit"
    assert not lacking, "no __init__.py in " + ", ".join(lacking)


def test_the_mapping_and_the_import_check() -> None:
    assert mirror_of(Path("compiler/recommend/engine.py")) == (
        Path("tests/unit/compiler/recommend/test_engine.py"),
        "compiler.recommend.engine",
    )
    assert mirror_of(Path("compiler/render/__init__.py")) == (
        Path("tests/unit/compiler/test_render.py"),
        "compiler.render",
    )
    assert imports("from compiler.recommend import engine\n", "compiler.recommend.engine")
    assert imports("from compiler.recommend.engine import recommend\n", "compiler.recommend.engine")
    assert imports("import compiler.recommend.engine as e\n", "compiler.recommend.engine")
    assert not imports("from compiler.recommend import gates\n", "compiler.recommend.engine")
    assert not imports("from compiler.recommend.engine_extra import x\n", "compiler.recommend.engine")
