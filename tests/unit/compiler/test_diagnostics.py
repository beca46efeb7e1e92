"""compiler.diagnostics: the Diagnostic type, the code registry, and the one Collector every run
reports through (merge, drop exact repeats, sort, ``--ignore`` once; errors always stay)."""

from __future__ import annotations

import pytest

from compiler.diagnostics import (
    Collector,
    Diagnostic,
    Severity,
    UnknownCodeError,
    at,
    has_errors,
    ignorable,
    lookup,
    make,
    registry,
    sort_key,
    suppress,
    unique_sorted,
)
from compiler.model import Span


def diag(file: str, line: int, code: str = "MIGC123", message: str = "m", path: str = "") -> Diagnostic:
    return make(code, message, file=file, line=line, col=1, path=path)


WARN_A = diag("a.yaml", 3)  # MIGC123: a warning
WARN_B = diag("b.yaml", 1, "MIGC180")  # a warning of another code
ERROR = diag("a.yaml", 9, "MIGC006")  # duplicate key: an error
NOTE = make("MIGC912", "no NVML", severity=Severity.NOTE)  # no file: sorts first


def test_make_takes_severity_and_hint_from_the_registry_and_refuses_unknown_codes() -> None:
    info = lookup("migc006")  # case-insensitive
    d = make("MIGC006", "duplicate key 'a'", file="f.yaml", line=2, col=1)
    assert d.severity == info.severity == Severity.ERROR
    assert d.hint == info.fix and info.fix
    assert make("MIGC006", "x", hint="do this").hint == "do this"
    with pytest.raises(UnknownCodeError):
        make("MIGC999", "no such code")
    assert all(code.startswith("MIGC") and len(code) == 7 for code in registry())


def test_at_places_a_finding_at_the_policy_objects_span() -> None:
    d = at("MIGC123", "burst below guarantee", Span("tenants.yaml", 13, 11, "$.spec.quota"))
    assert (d.file, d.line, d.col, d.path) == ("tenants.yaml", 13, 11, "$.spec.quota")
    assert at("MIGC123", "x", Span("t.yaml", 1, 1, ""), severity=Severity.NOTE).severity == Severity.NOTE


def test_severity_orders_so_the_worst_is_the_max() -> None:
    assert max([Severity.NOTE, Severity.ERROR, Severity.WARNING]) == Severity.ERROR
    assert str(Severity.WARNING) == "warning"
    assert has_errors([WARN_A, ERROR]) and not has_errors([WARN_A, NOTE]) and not has_errors([])


def test_unique_sorted_orders_by_file_line_col_code_and_drops_only_exact_repeats() -> None:
    """Equal (file, line, col, code) with another message or path is a second finding, not a repeat;
    the message breaks ties of place and code, and otherwise the order they came in stays."""
    other_message = diag("a.yaml", 3, message="another field missing")
    other_path = diag("a.yaml", 3, path="$.spec")
    got = unique_sorted([ERROR, WARN_B, WARN_A, other_message, WARN_A, NOTE, other_path])
    assert got == [NOTE, other_message, WARN_A, other_path, ERROR, WARN_B]
    assert [sort_key(d) for d in got] == sorted(sort_key(d) for d in got)
    assert len({(d.message, d.path) for d in got if d.line == 3}) == 3


def test_suppress_leaves_out_warnings_and_notes_of_the_codes_but_never_an_error() -> None:
    assert suppress([WARN_A, WARN_B, NOTE, ERROR], ["migc123", "MIGC912"]) == [WARN_B, ERROR]
    assert suppress([ERROR], ["MIGC006"]) == [ERROR]  # an error always stays
    assert suppress([WARN_A], []) == [WARN_A]


def test_only_known_warning_and_note_codes_are_ignorable() -> None:
    assert ignorable("MIGC123") is None and ignorable("migc912") is None
    assert "is an error; only warnings and notes can be ignored" in str(ignorable("MIGC006"))
    assert "is not a migc diagnostic code" in str(ignorable("MIGC999"))


def test_the_collector_merges_every_stage_and_finishes_sorted_unique_and_suppressed() -> None:
    """What a command does: add each stage's findings as they come, decide on has_errors, then
    finish once with --ignore's codes."""
    collector = Collector([WARN_B])
    collector.extend([WARN_A, WARN_A])  # a stage that repeats itself
    assert not collector.has_errors()
    collector.add(ERROR)
    collector.add(NOTE)
    assert collector.has_errors() and len(collector) == 5
    assert collector.collected() == (WARN_B, WARN_A, WARN_A, ERROR, NOTE)  # as added
    assert collector.finish() == [NOTE, WARN_A, ERROR, WARN_B]
    assert collector.finish(["MIGC123", "MIGC006"]) == [NOTE, ERROR, WARN_B]
    collector.add(diag("0.yaml", 1))  # finishing does not close it: a later stage may still add
    assert collector.finish(["MIGC912"])[0].file == "0.yaml"


def test_finishing_is_the_same_list_whatever_order_the_stages_added_in() -> None:
    items = [ERROR, WARN_B, NOTE, WARN_A, WARN_A]
    first = Collector(items).finish(["MIGC180"])
    assert Collector(reversed(items)).finish(["MIGC180"]) == first == [NOTE, WARN_A, ERROR]
