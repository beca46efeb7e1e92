"""compiler/validate/common.py: the helpers every validation message leans on."""

from __future__ import annotations

import pytest

from compiler.diagnostics import make
from compiler.validate.common import (
    article,
    ecma_anchors,
    listing,
    parse_duration,
    pattern_matches,
    resolve_max_unavailable,
    short,
    suggest,
    type_name,
    unique_sorted,
    value_at,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1h30m", 5400),
        ("2d", 172800),
        ("1d1h1m1s", 90061),
        ("45s", 45),
        ("", None),
        ("1x", None),
        ("m1", None),
    ],
)
def test_parse_duration(text: str, seconds: int | None) -> None:
    assert parse_duration(text) == seconds


def test_dollar_is_the_end_of_the_string_as_in_ecma_262() -> None:
    assert ecma_anchors("^[a-z]+$") == "^[a-z]+\\Z"
    assert ecma_anchors("^[$]x\\$$") == "^[$]x\\$\\Z"  # a class member and an escaped $ stay literal
    assert pattern_matches("^[a-z]+$", "c1") is False and pattern_matches("^[a-z0-9]+$", "c1")
    assert not pattern_matches("^[a-z0-9]+$", "c1\n")  # Python's $ alone would accept the newline
    assert pattern_matches("b", "abc")  # unanchored search, as JSON Schema's pattern


def test_unique_sorted_drops_exact_repeats_only() -> None:
    a = make("MIGC100", "x", file="f.yaml", line=2, col=1)
    b = make("MIGC100", "y", file="f.yaml", line=2, col=1)  # same spot, other text
    first = make("MIGC100", "z", file="f.yaml", line=1, col=1)
    assert [d.message for d in unique_sorted([a, b, a, first])] == ["z", "x", "y"]


def test_suggest_and_listing_word_the_hint() -> None:
    assert suggest("A100-SXM4-80G", ["A100-SXM4-80GB", "H100-80GB"]) == "; did you mean 'A100-SXM4-80GB'?"
    assert suggest("zzz", ["A100-SXM4-80GB"]) == ""
    assert listing(["b", "a", "b"]) == "a, b" and listing([]) == "(none)"


def test_value_at_and_type_names() -> None:
    doc = {"spec": {"pools": [{"name": "a"}]}}
    assert value_at(doc, ("spec", "pools", 0, "name")) == "a"
    assert value_at(doc, ("spec", "pools", 3)) is None and value_at(doc, ("spec", "x", "y")) is None
    values: tuple[object, ...] = (None, True, 1, 1.5, "s", [], {})
    assert [type_name(v) for v in values] == [
        "null", "boolean", "integer", "number", "string", "list", "mapping",
    ]  # fmt: skip
    assert article("integer") == "an integer" and article("list") == "a list"
    assert short("x" * 100) == repr("x" * 100)[:57] + "..." and short(3) == "3"


@pytest.mark.parametrize(
    ("raw", "nodes", "count"), [(None, 10, 1), (3, 10, 3), ("25%", 10, 2), ("5%", 10, 1)]
)
def test_max_unavailable_is_a_node_count_at_least_one_for_a_percentage(
    raw: object, nodes: int, count: int
) -> None:
    assert resolve_max_unavailable(raw, nodes) == count
