"""compiler/commands/explain.py: a code in any spelling explained from the registry, every code
listed, and an unknown code a usage error naming the ranges."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from compiler.commands.explain import RANGES, command
from compiler.diagnostics import lookup, registry


@pytest.mark.parametrize("spelling", ["MIGC006", "migc006", " 006 ", "6"])
def test_every_spelling_of_a_code_explains_it(spelling: str) -> None:
    result = CliRunner().invoke(command, [spelling], standalone_mode=False)
    assert result.exception is None and result.return_value == 0
    info = lookup("MIGC006")
    lines = result.stdout.splitlines()
    assert lines[0] == f"MIGC006 ({info.severity}): {info.title}"
    assert info.explanation.splitlines()[0] in result.stdout
    assert (f"Fix: {info.fix}" in result.stdout) == bool(info.fix)


def test_without_a_code_every_registered_code_is_listed_once_in_order() -> None:
    result = CliRunner().invoke(command, [], standalone_mode=False)
    assert result.return_value == 0
    codes = [line.split()[0] for line in result.stdout.splitlines()]
    assert codes == list(registry()) and len(codes) == len(set(codes))


@pytest.mark.parametrize("code", ["MIGC999999", "E501", "1234"])
def test_an_unknown_code_is_a_usage_error_that_names_the_ranges(code: str) -> None:
    result = CliRunner().invoke(command, [code], standalone_mode=False)
    assert isinstance(result.exception, click.UsageError)
    message = str(result.exception)
    assert f"unknown diagnostic code '{code}'" in message
    assert all(r in message for r, _ in RANGES)
    assert CliRunner().invoke(command, [code]).exit_code == 2
