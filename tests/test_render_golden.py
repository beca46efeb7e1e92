"""Golden trees: every example's rendered output, byte for byte, under ``tests/golden/<case>/``.

A change to rendering, solving or an example shows up here as a reviewable diff. After an intended
change, refresh with::

    MIGC_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_render_golden.py

and review ``git diff tests/golden``. ``output/`` (the committed render of examples/prod) must keep
``migc compile examples/prod --check`` clean; refresh it with ``migc compile examples/prod --out output``.
"""

from __future__ import annotations

import difflib
import os
import shutil
from pathlib import Path

import pytest
import yaml

from compiler.cli import main
from controller import assignment as controller_assignment

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
CASES = {
    "lab": ("examples/lab",),
    "prod": ("examples/prod",),
    "multi-cluster": ("examples/multi-cluster",),
    "lab-kueue": ("examples/lab", "--with", "kueue"),
    "ci-cd": ("examples/ci-cd/policy",),
    "inference-autoscaling": ("examples/inference-autoscaling/policy",),
    "hami": ("examples/hami",),
    "dra": ("examples/dra",),
}


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def first_difference(expected: dict[str, bytes], actual: dict[str, bytes]) -> str:
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    if missing or extra:
        return f"missing: {missing[:5]} extra: {extra[:5]}"
    for path in sorted(expected):
        if expected[path] != actual[path]:
            diff = difflib.unified_diff(
                expected[path].decode().splitlines(),
                actual[path].decode().splitlines(),
                f"golden/{path}",
                f"rendered/{path}",
                lineterm="",
            )
            return "\n".join(list(diff)[:40])
    return ""


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_tree(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # headers name policy paths relative to the working directory
    path, *extra = CASES[case]
    out = tmp_path / "out"
    assert main(["compile", path, "--out", str(out), *extra]) == 0
    rendered = tree(out)
    golden = GOLDEN / case
    if os.environ.get("MIGC_UPDATE_GOLDEN"):
        shutil.rmtree(golden, ignore_errors=True)
        shutil.copytree(out, golden)
    expected = tree(golden)
    assert expected, f"no golden tree for {case}; run with MIGC_UPDATE_GOLDEN=1"
    assert rendered == expected, first_difference(expected, rendered)


def test_committed_output_is_up_to_date(monkeypatch: pytest.MonkeyPatch) -> None:
    """CI's gate: ``migc compile examples/prod --check`` against the committed output/.

    Not compared with the ``prod`` golden tree: output/ is rendered against its own previous state
    (minimum disruption), the golden tree from nothing, and the two may legitimately differ.
    """
    monkeypatch.chdir(ROOT)
    assert main(["compile", "examples/prod", "--out", "output", "--check"]) == 0


@pytest.mark.parametrize("case", sorted(CASES))
def test_controller_parses_every_rendered_assignment(case: str) -> None:
    """The contract end to end: what the compiler renders, the controller accepts."""
    for path in sorted((GOLDEN / case).glob("*/migc-system/configmap-migc-assignment.yaml")):
        text = yaml.safe_load(path.read_text(encoding="utf-8"))["data"]["assignment.json"]
        parsed = controller_assignment.parse(text)
        assert parsed.revision and parsed.cluster == path.parts[-3]
