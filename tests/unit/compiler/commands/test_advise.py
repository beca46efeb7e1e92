"""compiler/commands/advise.py: the advice in each format on stdout, and an invalid policy or an
unreadable snapshot refused with nothing on stdout, on tests/cases/valid/minimal (pools a100 and
l40s, no pricing). The advice itself is compiler/advise's (tests/unit/compiler/advise/)."""

from __future__ import annotations

import json
from pathlib import Path

import click
from click.testing import CliRunner

from compiler.commands.advise import command

CASES = Path(__file__).resolve().parents[3] / "cases"
MINIMAL = str(CASES / "valid" / "minimal")


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(command, list(args), standalone_mode=False)
    if isinstance(result.exception, click.ClickException):
        return result.exception.exit_code, result.stdout, result.stderr + result.exception.format_message()
    assert result.exception is None, result.exception
    return int(result.return_value), result.stdout, result.stderr


def test_the_advice_in_json_text_and_markdown(tmp_path: Path) -> None:
    rc, stdout, _ = _run(MINIMAL, "-o", "json")
    advice = json.loads(stdout)
    assert rc == 0
    assert [(p["cluster"], p["pool"]) for p in advice["pools"]] == [("east", "a100"), ("east", "l40s")]
    # the Fleet prices no GPU model: no sizing rows, one note saying so
    assert [(s["rows"], [f["code"] for f in s["findings"]]) for s in advice["sizing"]] == [([], ["MIGC523"])]
    rc, text, _ = _run(MINIMAL)
    assert rc == 0 and text.startswith("pool east/a100 (16 x A100-SXM4-80GB): current mig, advised ")
    assert text.endswith("Each [MIGC5xx] cites a rule: `migc explain CODE` explains it.\n")
    rc, markdown, _ = _run(MINIMAL, "--output", "markdown")
    assert rc == 0 and markdown.startswith("# migc advise\n")
    assert _run(MINIMAL, "-o", "sarif")[0] == 2  # the advice has its own formats


def test_observed_pods_are_read_from_a_snapshot(tmp_path: Path) -> None:
    empty = tmp_path / "snap.json"
    empty.write_text('{"kind": "List", "items": []}')
    rc, stdout, _ = _run(MINIMAL, "--snapshot", str(empty), "-o", "json")
    assert rc == 0 and json.loads(stdout)["pools"]


def test_an_invalid_policy_or_an_unreadable_snapshot_prints_no_advice(tmp_path: Path) -> None:
    rc, stdout, err = _run(str(CASES / "invalid" / "duplicate-tenant"))
    assert rc == 1 and stdout == "" and "MIGC103" in err and err.strip().endswith("migc: 1 error")
    bad = tmp_path / "snap.json"
    bad.write_text("{not json")
    rc, stdout, err = _run(MINIMAL, "--snapshot", str(bad))
    assert rc == 1 and stdout == "" and "MIGC400" in err
