"""The fast schema check (jsonschema-rs) never accepts a document that ``jsonschema`` rejects.

``compiler.validate.schema_errors`` skips ``jsonschema``'s error walk for documents jsonschema-rs
accepts; a document it wrongly accepted would lose its diagnostics. These tests run both on every
policy document the repository holds (examples, valid and invalid cases, test data) and on random
mutations of the valid ones, and require: accepted by jsonschema-rs => no ``jsonschema`` error.
"""

from __future__ import annotations

import copy
import functools
import math
from pathlib import Path
from typing import Any

import docpaths
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.load import load_paths
from compiler.schemas import kind_schemas
from compiler.validate import schema_errors

REPO = Path(__file__).resolve().parents[4]
pytestmark = pytest.mark.skipif(not schema_errors._fast_validators(), reason="jsonschema-rs not installed")


# Built on first use, not at import: each of the default run's workers imports every test module
# to collect it, and only the one that runs these tests needs the corpus (issue 27).
@functools.cache
def _documents() -> list[tuple[str, Any]]:
    out = []
    kinds = kind_schemas()
    for root in ("examples", "tests/cases", "tests/data"):
        for path in sorted((REPO / root).rglob("*.yaml")):
            docs, _diags = load_paths([path])
            for doc in docs:
                kind = doc.data.get("kind") if isinstance(doc.data, dict) else None
                if kind in kinds:
                    out.append((str(kind), doc.data))
    return out


@functools.cache
def _valid() -> list[tuple[str, Any]]:
    return [(k, d) for k, d in _documents() if not list(schema_errors._validators()[k].iter_errors(d))]


def _python_errors(kind: str, data: Any) -> list[str]:
    return [e.message for e in schema_errors._validators()[kind].iter_errors(data)]


def _finite(data: Any) -> bool:
    """jsonschema-rs reads an infinite or NaN float as null (JSON has none), so it rejects what
    jsonschema accepts there: such a document takes the slow path, which is safe."""
    if isinstance(data, float):
        return math.isfinite(data)
    if isinstance(data, dict):
        return all(_finite(v) for v in data.values())
    if isinstance(data, list):
        return all(_finite(v) for v in data)
    return True


def test_the_corpus_has_both_outcomes_and_valid_documents_take_the_fast_path() -> None:
    assert len(_valid()) >= 50 and len(_documents()) - len(_valid()) >= 20
    slow = [d.get("metadata") for k, d in _valid() if _finite(d) and not schema_errors.fast_valid(k, d)]
    assert slow == [], "valid documents took the slow path"


def test_no_repository_document_with_errors_is_accepted_by_the_fast_path() -> None:
    wrongly = [
        (k, d.get("metadata"), errors)
        for k, d in _documents()
        if schema_errors.fast_valid(k, d) and (errors := _python_errors(k, d))
    ]
    assert wrongly == []


_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.sampled_from(
        ["1g.10gb", "3g.40gb+me", "25%", "0%", "101%", "12:00", "24:00", "1.31", "a/b", "-x", "x\n"]
    ),
    st.lists(st.integers(0, 9), max_size=3),
    st.dictionaries(st.sampled_from(["name", "count", "x", ""]), st.integers(0, 3), max_size=2),
)


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_mutated_documents_are_never_accepted_by_the_fast_path_alone(data: st.DataObject) -> None:
    kind, original = data.draw(st.sampled_from(_valid()))
    doc = copy.deepcopy(original)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [p for p in docpaths.paths(doc) if p]
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        action = data.draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "delete":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[data.draw(st.sampled_from(["extra", "nam", "spec", "replicas"]))] = data.draw(_leaf)
        else:
            parent[path[-1]] = data.draw(_leaf)
    if schema_errors.fast_valid(kind, doc):
        assert _python_errors(kind, doc) == [], doc
