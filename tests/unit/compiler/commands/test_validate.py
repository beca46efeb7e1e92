"""compiler/commands/validate.py: policy sets per directory, and the exit status from the worst
finding (``--strict`` counts warnings, ``--ignore`` leaves them out). Cases are tests/cases/."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from compiler.commands.validate import command, policy_sets

CASES = Path(__file__).resolve().parents[3] / "cases"
VALID = CASES / "valid" / "minimal"
WARNS = CASES / "invalid" / "default-mode-ignores-rules"  # one warning, MIGC180, no error
BROKEN = CASES / "invalid" / "duplicate-tenant"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(command, list(args), standalone_mode=False)
    assert result.exception is None, result.exception
    return int(result.return_value), result.stdout, result.stderr


def test_each_directory_is_its_own_set_and_files_form_one_together(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    f1, f2 = str(tmp_path / "fleet.yaml"), str(tmp_path / "tenants.yaml")
    assert policy_sets((a, f1, b, a, f2)) == [[a], [b], [f1, f2]]  # a named twice is one set
    assert policy_sets((f1,)) == [[f1]]
    assert policy_sets((a,)) == [[a]]


def test_a_valid_set_exits_0_with_the_summary_on_stderr() -> None:
    rc, out, err = _run(str(VALID))
    assert rc == 0 and out == ""
    assert err == "migc: policy OK in 4 files\n"


def test_a_warning_fails_only_under_strict_unless_it_is_ignored() -> None:
    rc, out, _ = _run(str(WARNS))
    assert rc == 0 and "MIGC180" in out
    assert _run(str(WARNS), "--strict")[0] == 1
    rc, out, _ = _run(str(WARNS), "--strict", "--ignore", "MIGC180")
    assert rc == 0 and "MIGC180" not in out


def test_an_error_exits_1_and_json_lists_it_with_its_position() -> None:
    rc, out, err = _run(str(BROKEN), "-o", "json")
    assert rc == 1 and "error" in err
    found = json.loads(out)
    diagnostics = found["diagnostics"] if isinstance(found, dict) else found
    expected = json.loads((BROKEN / "expected.json").read_text(encoding="utf-8"))["diagnostics"]
    assert [(d["code"], d["file"].rsplit("/", 1)[-1], d["line"]) for d in diagnostics] == [
        (d["code"], d["file"], d["line"]) for d in expected
    ]


def test_two_sets_are_checked_independently() -> None:
    rc, out, _ = _run(str(VALID), str(WARNS))
    assert (
        rc == 0 and out.count(": MIGC180 warning:") == 1
    )  # the valid set adds nothing, the other its warning
