"""The rule registry (compiler/validate/registry.py) and suppression by code (--ignore)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compiler.catalog import load_catalog
from compiler.cli import main
from compiler.diagnostics import Severity, make, registry
from compiler.validate.context import Context
from compiler.validate.registry import Rule, rule, rules, rules_for, run_rules
from compiler.validate.rules import FAMILIES
from compiler.validate.suppress import ignorable, suppress

REPO = Path(__file__).resolve().parents[4]
CASES = REPO / "tests" / "cases"


def test_every_rule_declares_known_semantic_codes() -> None:
    assert rules(), "no rule registered"
    names = [r.name for r in rules()]
    assert len(names) == len(set(names))
    for r in rules():
        assert r.codes, r.name
        for code in r.codes:
            assert code in registry(), (r.name, code)
            assert code.startswith("MIGC1"), (r.name, code)


def test_every_family_module_registers_rules() -> None:
    families = {r.family for r in rules()}
    assert families == {module.__name__.rsplit(".", 1)[-1] for module in FAMILIES}
    assert families >= {"limits", "partition", "fleet", "tenants", "workloads", "policy_rules"}


def test_rules_for_a_code() -> None:
    assert [r.name for r in rules_for("MIGC123")] == ["tenant-burst"]
    assert {r.name for r in rules_for("MIGC103")} >= {"tenant-unique-names", "fleet-unique-names"}


def test_a_rule_cannot_report_an_undeclared_code() -> None:
    ctx = Context(catalog=load_catalog())
    ctx.allowed_codes = frozenset({"MIGC103"})
    ctx.running = "example"
    with pytest.raises(ValueError, match="example reported MIGC104"):
        ctx.add(make("MIGC104", "x"))
    ctx.add(make("MIGC103", "x"))
    assert [d.code for d in ctx.diags] == ["MIGC103"]


def test_registering_a_name_twice_is_refused() -> None:
    existing: Rule = rules()[0]
    with pytest.raises(ValueError, match="registered twice"):
        rule(existing.name, codes=("MIGC103",))(lambda ctx: None)


def test_run_rules_skips_rules_that_do_not_apply() -> None:
    ctx = Context(catalog=load_catalog())  # no Fleet: pool rules must not run (they would assert)
    run_rules(ctx)
    assert ctx.diags == []
    assert ctx.allowed_codes is None


def test_only_warnings_and_notes_are_ignorable() -> None:
    assert ignorable("MIGC123") is None  # warning
    assert ignorable("migc123") is None
    problem = ignorable("MIGC104")
    assert problem is not None and "is an error" in problem
    problem = ignorable("MIGC999")
    assert problem is not None and "not a migc diagnostic code" in problem
    warning = make("MIGC123", "w")
    error = make("MIGC104", "e")
    assert warning.severity == Severity.WARNING and error.severity == Severity.ERROR
    assert suppress([warning, error], ["MIGC123", "MIGC104"]) == [error]


def _run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_validate_ignore_drops_the_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    case = CASES / "invalid" / "burst-below-guarantee"
    rc, out, _ = _run(capsys, "validate", case, "--strict", "-o", "json")
    assert rc == 1
    assert {d["code"] for d in json.loads(out)["diagnostics"]} == {"MIGC123"}
    rc, out, _ = _run(capsys, "validate", case, "--strict", "-o", "json", "--ignore", "MIGC123")
    assert rc == 0
    assert json.loads(out)["diagnostics"] == []
    rc, out, _ = _run(capsys, "validate", case, "--strict", "-o", "json", "--ignore", "MIGC012,migc123")
    assert rc == 0


def test_validate_ignore_refuses_an_error_code(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, "validate", CASES / "invalid" / "unknown-tenant", "--ignore", "MIGC104")
    assert rc == 2
    assert out == ""
    assert "only warnings and notes can be ignored" in err


def test_validate_ignore_refuses_an_unknown_code(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _run(capsys, "validate", CASES / "valid", "--ignore", "MIGC998")
    assert rc == 2
    assert "MIGC998" in err


def test_compile_and_plan_take_ignore(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = CASES / "invalid" / "burst-below-guarantee"  # warnings only: it compiles
    rc, out, err = _run(capsys, "compile", case, "--out", tmp_path / "a")
    assert rc == 0
    assert "MIGC123" in out + err
    rc, out, err = _run(capsys, "compile", case, "--out", tmp_path / "b", "--ignore", "MIGC123")
    assert rc == 0
    assert "MIGC123" not in out + err
    rc, out, err = _run(capsys, "plan", case, "--against", tmp_path / "b")
    assert rc == 0
    assert "MIGC123" in err
    rc, out, err = _run(capsys, "plan", case, "--against", tmp_path / "b", "--ignore", "MIGC123")
    assert rc == 0
    assert "MIGC123" not in out + err
    rc, _, err = _run(capsys, "compile", case, "--out", tmp_path / "c", "--ignore", "MIGC104")
    assert rc == 2
    assert "only warnings and notes can be ignored" in err
    assert not (tmp_path / "c").exists()
