"""Every path into a JSON-like document, for the property tests that mutate documents at a random
place (tests/test_assignment_fast_schema.py, tests/unit/compiler/validate/test_schema_errors.py)."""

from __future__ import annotations

from typing import Any


def paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """``prefix`` and the path of every value below it, depth first (keys and list indices)."""
    out = [prefix]
    if isinstance(data, dict):
        for k, v in data.items():
            out.extend(paths(v, (*prefix, k)))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out.extend(paths(v, (*prefix, i)))
    return out
