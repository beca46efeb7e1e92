"""compiler/observe/quantity.py: a Kubernetes quantity read from a cluster as a bounded whole count.

Suffixes from apimachinery's grammar (kubernetes/apimachinery pkg/api/resource/quantity.go at
eed236ceee2c19c2753a3d93ac0631dc20750454, lines 40-58): binary Ki..Ei are powers of 1024, decimal
k..E powers of 1000, e<n>/E<n> powers of ten.
"""

from __future__ import annotations

from typing import Any

import pytest

from compiler.observe.quantity import MAX_QUANTITY_CHARS, parse_count

LIMIT = 10**12


@pytest.mark.parametrize(
    ("value", "count"),
    [
        ("7", 7),  # what the API serves for nvidia.com/mig-1g.10gb
        (" 3 ", 3),
        (7, 7),  # a hand-made snapshot's JSON integer
        (2.0, 2),  # ... or an integral float
        ("2k", 2000),
        ("1e3", 1000),
        ("1E3", 1000),
        ("2Ki", 2048),
        ("1Mi", 1024**2),
        ("1.5k", 1500),
        ("+4", 4),
        ("1000m", 1),  # milli-units that add up to a whole one
        ("0", 0),
        ("-0", 0),
        (".5Ki", 512),
    ],
)
def test_whole_quantities_in_every_suffix(value: Any, count: int) -> None:
    assert parse_count(value, LIMIT) == (count, "")


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("500m", "is not a whole number"),
        (1.5, "is not a whole number"),
        ("-1", "is negative"),
        (-1, "is negative"),
        ("abc", "is not a Kubernetes quantity (such as 1, 2k or 1e3)"),
        ("1 k", "is not a Kubernetes quantity (such as 1, 2k or 1e3)"),
        ("1KiB", "is not a Kubernetes quantity (such as 1, 2k or 1e3)"),
        ("", "is not a Kubernetes quantity (such as 1, 2k or 1e3)"),
        (True, "is not a quantity"),  # a JSON boolean is not the integer 1
        (None, "is not a quantity"),
        ([1], "is not a quantity"),
        (float("inf"), "is not a finite number"),
        (float("nan"), "is not a finite number"),
    ],
)
def test_anything_else_is_refused_with_a_reason(value: Any, why: str) -> None:
    assert parse_count(value, LIMIT) == (None, why)


def test_the_limit_is_inclusive_in_every_form() -> None:
    assert parse_count(8, 8) == (8, "")
    assert parse_count("8", 8) == (8, "")
    assert parse_count(9, 8) == (None, "is more than 8")
    assert parse_count("9", 8) == (None, "is more than 8")
    assert parse_count("1k", 1000) == (1000, "")
    assert parse_count("1001", 1000) == (None, "is more than 1,000")
    assert parse_count("1Ki", 1000) == (None, "is more than 1,000")


def test_huge_values_are_refused_by_their_form_before_any_big_power_is_built() -> None:
    assert parse_count("9" * 22, LIMIT) == (None, "is more than 1,000,000,000,000")
    assert parse_count("1e999", LIMIT) == (None, "is more than 1,000,000,000,000")
    assert parse_count("1E", LIMIT) == (None, "is more than 1,000,000,000,000")  # exa
    assert parse_count("1E", 10**18) == (10**18, "")
    assert parse_count("1" * (MAX_QUANTITY_CHARS + 1), LIMIT) == (
        None,
        f"is not a quantity (longer than {MAX_QUANTITY_CHARS} characters)",
    )
    assert parse_count(1e300, LIMIT) == (None, "is more than 1,000,000,000,000")
