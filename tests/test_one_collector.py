"""Every run reports through one :class:`compiler.diagnostics.Collector` (issue 27 item 1): in the
shipped packages ``suppress(...)`` and ``unique_sorted(...)`` are called inside the Collector and
nowhere else, so no command or stage merges, sorts or applies ``--ignore`` on its own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ONCE = {"suppress", "unique_sorted"}
HOME = ("compiler/diagnostics.py", "Collector")


def _calls(source: str) -> list[tuple[str, str, int]]:
    """(enclosing class, function called, line) for each call of a name in ONCE; ``contextlib.suppress``
    (a different function) is not one."""
    out: list[tuple[str, str, int]] = []

    def walk(node: ast.AST, cls: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.ClassDef) else cls
            if isinstance(child, ast.Call):
                func = child.func
                if isinstance(func, ast.Name) and func.id in ONCE:
                    out.append((cls, func.id, child.lineno))
                elif (
                    isinstance(func, ast.Attribute)
                    and func.attr in ONCE
                    and not (isinstance(func.value, ast.Name) and func.value.id == "contextlib")
                ):
                    out.append((cls, func.attr, child.lineno))
            walk(child, inner)

    walk(ast.parse(source), "")
    return out


@pytest.mark.parametrize("package", ["compiler", "controller"])
def test_suppress_and_unique_sorted_are_called_only_inside_the_collector(package: str) -> None:
    stray = []
    seen_home = 0
    for path in sorted((ROOT / package).rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for cls, name, line in _calls(path.read_text(encoding="utf-8")):
            if (rel, cls) == HOME:
                seen_home += 1
            else:
                stray.append(f"{rel}:{line}: {name}(...)")
    assert not stray, "merge/sort/--ignore through compiler.diagnostics.Collector: " + ", ".join(stray)
    if package == "compiler":
        assert seen_home >= 2  # the walk sees the Collector's own calls


def test_the_check_sees_a_stray_call() -> None:
    source = (
        "import contextlib\n"
        "from compiler.validate.suppress import suppress\n"
        "with contextlib.suppress(OSError):\n    pass\n"
        "def report(d, codes):\n    return validate.unique_sorted(suppress(d, codes))\n"
    )
    assert _calls(source) == [("", "unique_sorted", 6), ("", "suppress", 6)]
