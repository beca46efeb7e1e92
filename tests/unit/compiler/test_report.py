"""Reporters: exact text/github shapes, JSON round-trip, SARIF valid against the official 2.1.0 schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from compiler.diagnostics import Diagnostic, make, registry
from compiler.report import format_github, format_json, format_sarif, format_text, render, summary

SARIF_SCHEMA = Path(__file__).resolve().parents[2] / "fixtures" / "sarif-2.1.0.schema.json"

DIAGS = [
    make(
        "MIGC031",
        "unknown field 'replica' in $.spec; did you mean 'replicas'?",
        file="w.yaml",
        line=8,
        col=3,
        path="$.spec.replica",
    ),
    make("MIGC006", "duplicate key 'a', first at line 1", file="a, b.yaml", line=3, col=1),
    make("MIGC115", "the policy set has no Fleet"),
    make("MIGC012", "file is empty", file="empty.yaml", line=1, col=1),
]


def test_text_is_sorted_with_hints() -> None:
    text = format_text(DIAGS)
    lines = text.splitlines()
    assert lines[0] == "migc: MIGC115 error: the policy set has no Fleet"
    assert lines[2] == "a, b.yaml:3:1: MIGC006 error: duplicate key 'a', first at line 1"
    assert lines[3] == "  hint: " + registry()["MIGC006"].fix
    assert "w.yaml:8:3: MIGC031 error: unknown field 'replica' in $.spec; did you mean 'replicas'?" in lines
    assert "empty.yaml:1:1: MIGC012 warning: file is empty" in lines


def test_text_without_diagnostics_is_empty() -> None:
    assert format_text([]) == ""


def test_json_round_trips() -> None:
    data = json.loads(format_json(DIAGS))
    assert data["summary"] == {"errors": 3, "warnings": 1, "notes": 0}
    first = data["diagnostics"][0]
    assert first["code"] == "MIGC115" and first["file"] == "" and first["line"] == 0
    assert {d["code"] for d in data["diagnostics"]} == {"MIGC031", "MIGC006", "MIGC115", "MIGC012"}


def test_github_annotations_escape_properties_and_newlines() -> None:
    lines = format_github(DIAGS).splitlines()
    assert lines[0].startswith("::error title=MIGC115::the policy set has no Fleet%0A")
    assert lines[1].startswith(
        "::error file=a%2C b.yaml,line=3,col=1,title=MIGC006::duplicate key 'a', first"
    )
    assert any(line.startswith("::warning file=empty.yaml,line=1,col=1,title=MIGC012::") for line in lines)
    assert all("\n" not in line for line in lines)


def test_sarif_validates_against_the_sarif_210_schema() -> None:
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    log = json.loads(format_sarif(DIAGS))
    jsonschema.Draft4Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft4Validator(schema).iter_errors(log), key=str)
    assert errors == []
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted(registry())
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    located = [r for r in run["results"] if "locations" in r]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in located}
    assert uris == {"w.yaml", "a, b.yaml", "empty.yaml"}  # relative, as given


def test_sarif_schema_is_not_vacuous() -> None:
    # the vendored schema must reject a broken log, or the test above proves nothing
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    log = json.loads(format_sarif(DIAGS))
    log["runs"][0]["results"][0]["level"] = "fatal"
    assert list(jsonschema.Draft4Validator(schema).iter_errors(log))


def test_output_is_deterministic_and_order_independent() -> None:
    for fmt in ("text", "json", "github", "sarif"):
        assert render(DIAGS, fmt) == render(list(reversed(DIAGS)), fmt)


@pytest.mark.parametrize(
    ("diags", "files", "expected"),
    [
        ([], 3, "migc: policy OK in 3 files"),
        (DIAGS, 1, "migc: 3 errors, 1 warning in 1 file"),
        (DIAGS[3:], None, "migc: 1 warning"),
    ],
)
def test_summary(diags: list[Diagnostic], files: int | None, expected: str) -> None:
    assert summary(diags, files=files) == expected
