"""Kubernetes resource quantities, parsed without trusting their size.

The grammar is apimachinery's (kubernetes/apimachinery ``pkg/api/resource/quantity.go`` at
eed236ceee2c19c2753a3d93ac0631dc20750454, lines 40-58 and ``splitREString`` at line 150)::

    <quantity> ::= <signedNumber><suffix>
    <suffix>   ::= <binarySI> (Ki Mi Gi Ti Pi Ei) | <decimalExponent> (e<n>, E<n>) | <decimalSI>
                   (n u m "" k M G T P E)

so ``"1"``, ``"1k"``, ``"1e3"`` and ``"2Ki"`` are all quantities. Extended resources such as
``nvidia.com/*`` only admit whole numbers. :func:`parse_count` turns any JSON value into a whole
number no larger than a stated bound, or a reason it is not one — never an exception and never
work proportional to the value (a 5,000-digit string, ``"9" * 22`` or ``1e300`` are refused by
their length and exponent before any arithmetic).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

MAX_QUANTITY_CHARS = 64  # longer strings are not a quantity any cluster needs
_QUANTITY = re.compile(
    r"^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]{1,3})?$"
)
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}


def parse_count(value: Any, limit: int) -> tuple[int | None, str]:
    """``(n, "")`` for a whole quantity ``0 <= n <= limit``; ``(None, why)`` for anything else.

    Accepts what the API serves (a quantity string) and what hand-made snapshots hold (a JSON
    integer, or a float with an integral value).
    """
    if isinstance(value, bool):
        return None, "is not a quantity"
    if isinstance(value, int):
        return (
            (value, "")
            if 0 <= value <= limit
            else (None, "is negative" if value < 0 else f"is more than {limit:,}")
        )
    elif isinstance(value, float):
        if not math.isfinite(value):
            return None, "is not a finite number"
        exact = Fraction(value)
    elif isinstance(value, str):
        text = value.strip()
        if 0 < len(text) <= 18 and text.isascii() and text.isdigit():  # what the API serves: "1"
            n = int(text)
            return (n, "") if n <= limit else (None, f"is more than {limit:,}")
        if len(text) > MAX_QUANTITY_CHARS:
            return None, f"is not a quantity (longer than {MAX_QUANTITY_CHARS} characters)"
        m = _QUANTITY.match(text)
        if m is None:
            return None, "is not a Kubernetes quantity (such as 1, 2k or 1e3)"
        sign, number, suffix = m.group(1), m.group(2), m.group(3) or ""
        if suffix in _BINARY:
            exact = Fraction(number) * (1 << _BINARY[suffix])
        else:
            # a lone "E" is the decimal SI suffix exa, not an exponent without digits
            exponent = int(suffix[1:]) if len(suffix) > 1 and suffix[0] in "eE" else _DECIMAL[suffix]
            digits = len(number.split(".")[0].lstrip("0"))
            if digits + exponent > len(str(limit)) + 1:  # certainly above the limit: no big power
                return None, f"is more than {limit:,}"
            exact = Fraction(number) * Fraction(10) ** exponent
        if sign == "-":
            exact = -exact
    else:
        return None, "is not a quantity"
    if exact.denominator != 1:
        return None, "is not a whole number"
    if exact < 0:
        return None, "is negative"
    if exact > limit:
        return None, f"is more than {limit:,}"
    return int(exact), ""
