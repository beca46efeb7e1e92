"""``dump_json`` (compiler/render/emit.py) writes exactly what ``json.dumps(sort_keys=True, indent=2,
ensure_ascii=False, allow_nan=False)`` writes, plus one newline: on every JSON document of the golden
trees and on random values, including the ones it hands back to ``json`` (other keys, NaN, objects
json refuses), where it must fail or succeed as json does."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.render.emit import dump_json

REPO = Path(__file__).resolve().parents[1]


def _reference(data: Any) -> str:
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


# Built on first use, not at import: each of the default run's workers imports every test module
# to collect it, and only the one that runs these tests needs the corpus (issue 27).
@functools.cache
def _golden_json() -> list[str]:
    out = []
    for path in sorted((REPO / "tests/golden").rglob("configmap-*.yaml")):
        doc = yaml.safe_load(path.read_text())
        for key, value in (doc.get("data") or {}).items():
            if key.endswith(".json"):
                out.append(value)
    return out


def test_every_golden_json_document_is_written_byte_for_byte() -> None:
    assert len(_golden_json()) >= 10
    for text in _golden_json():
        data = json.loads(text)
        assert dump_json(data) == text == _reference(data)


_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
)
_json = st.recursive(
    _scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=6), inner, max_size=4),
    ),
    max_leaves=30,
)


@settings(max_examples=500, deadline=None)
@given(_json)
def test_random_documents_match_json_dumps(data: Any) -> None:
    assert dump_json(data) == _reference(data)


@pytest.mark.parametrize(
    "data",
    [
        {1: "int key", "a": 1},
        {None: 1},
        {"x": [1.0, math.inf]},
        {"x": math.nan},
        {"x": object()},
        {"x": {2.5: True}},
    ],
    ids=["int-key", "none-key", "inf", "nan", "object", "float-key"],
)
def test_what_json_converts_or_refuses_is_left_to_json(data: Any) -> None:
    try:
        expected = _reference(data)
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            dump_json(data)
        return
    assert dump_json(data) == expected


def test_a_circular_document_fails_as_json_fails() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with pytest.raises(ValueError, match="Circular reference"):
        dump_json(loop)
