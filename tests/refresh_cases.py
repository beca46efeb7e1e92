"""Data-driven validation cases: run them, and rewrite their expected diagnostics.

Each ``tests/cases/invalid/<case>/`` holds policy files plus ``expected.json``: every diagnostic
the case must produce (code, severity, file, line, col, message), in report order. Each
``tests/cases/valid/<case>/`` must validate into a Policy with no diagnostic at all.

After an intended change to messages or rules, refresh and then *review the diff*:

    .venv/bin/python tests/refresh_cases.py            # rewrite every invalid case's expected.json
    .venv/bin/python tests/refresh_cases.py CASE ...   # only these cases
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent / "cases"
REPO = ROOT.parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from compiler.model import Policy  # noqa: E402
from compiler.pipeline import load_and_validate  # noqa: E402


@contextmanager
def _cwd(path: Path) -> Iterator[None]:
    # Diagnostics show paths relative to the working directory, so cases run from inside their folder
    # and expected files stay independent of where the repository is checked out.
    old = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def case_names(kind: str) -> list[str]:
    return sorted(p.name for p in (ROOT / kind).iterdir() if p.is_dir())


def run_case(kind: str, name: str) -> tuple[Policy | None, list[dict[str, Any]]]:
    with _cwd(ROOT / kind / name):
        policy, diags = load_and_validate(["."])
    rows = [
        {
            "code": d.code,
            "severity": str(d.severity),
            "file": d.file,
            "line": d.line,
            "col": d.col,
            "message": d.message,
        }
        for d in diags
    ]
    return policy, rows


def expected_path(name: str) -> Path:
    return ROOT / "invalid" / name / "expected.json"


def read_expected(name: str) -> list[dict[str, Any]]:
    data: dict[str, Any] = json.loads(expected_path(name).read_text(encoding="utf-8"))
    rows: list[dict[str, Any]] = data["diagnostics"]
    return rows


def refresh(names: list[str]) -> None:
    for name in names:
        _, rows = run_case("invalid", name)
        text = json.dumps({"diagnostics": rows}, indent=2, ensure_ascii=False) + "\n"
        expected_path(name).write_text(text, encoding="utf-8")
        print(f"{name}: {len(rows)} diagnostic(s): {', '.join(r['code'] for r in rows)}")


if __name__ == "__main__":
    refresh(sys.argv[1:] or case_names("invalid"))
