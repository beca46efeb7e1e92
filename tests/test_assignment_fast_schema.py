"""The controller's fast schema check (jsonschema-rs, controller/assignment.py ``_fast_valid``) never
accepts an assignment or shard that ``jsonschema`` rejects: accepted there, the error walk is
skipped, so a document it wrongly accepted would reach the controller unchecked. Both run on every
assignment of the golden trees, on a sharded one, and on random mutations of them."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import docpaths
import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_assignment_shards import _doc, _texts

from compiler.render import manifests
from controller import assignment
from controller.errors import InvalidAssignmentError

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(assignment._fast_validator("") is None, reason="jsonschema-rs not installed")


# Built on first use, not at import: each of the default run's workers imports every test module
# to collect it, and only the one that runs these tests needs the corpus (issue 27).
@functools.cache
def _golden() -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for path in sorted((REPO / "tests/golden").rglob("configmap-migc-assignment.yaml")):
        out.append(("", json.loads(yaml.safe_load(path.read_text())["data"]["assignment.json"])))
    index, shards = _texts(manifests.assignment_configmaps(_doc(600)))
    out.append(("", json.loads(index)))
    out.extend(("shard", json.loads(str(text))) for text in shards.values())
    return out


def _python_errors(part: str, doc: Any) -> list[str]:
    sub = assignment.schema() if not part else assignment.schema()["$defs"][part]
    return [e.message for e in jsonschema.Draft202012Validator(sub).iter_errors(doc)]


def test_every_golden_and_sharded_document_is_valid_and_takes_the_fast_path() -> None:
    assert len(_golden()) >= 10 and any(p == "shard" for p, _ in _golden())
    for part, doc in _golden():
        assert _python_errors(part, doc) == []
        assert assignment._fast_valid(doc, part)


def test_an_invalid_shard_is_still_refused_with_jsonschemas_message() -> None:
    index, shards = _texts(manifests.assignment_configmaps(_doc(600)))
    first = next(iter(shards))
    bad = json.loads(str(shards[first]))
    bad["nodes"]["gpu-x"] = 7
    assert not assignment._fast_valid(bad, "shard")
    with pytest.raises(InvalidAssignmentError, match="nodes/gpu-x: 7 is not of type 'string'"):
        assignment.assemble(index, {**shards, first: json.dumps(bad)})


_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.sampled_from(["mixed", "single", "12:00", "24:00", "Mon", "abc123def4567", "x\n", "a" * 70, "-a", ""]),
    st.lists(st.sampled_from(["a", "a", "b-1"]), max_size=3),
    st.dictionaries(st.sampled_from(["name", "config", "x", ""]), st.integers(0, 3), max_size=2),
)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_mutated_documents_are_never_accepted_by_the_fast_path_alone(data: st.DataObject) -> None:
    part, original = data.draw(st.sampled_from(_golden()))
    doc = copy.deepcopy(original)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [p for p in docpaths.paths(doc) if p]
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        action = data.draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "delete":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[data.draw(st.sampled_from(["extra", "nam", "nodes", "revision"]))] = data.draw(_leaf)
        elif action == "add" and isinstance(parent, list):
            twin: bool = data.draw(st.booleans())  # a duplicate entry (uniqueItems) or a stray value
            parent.append(copy.deepcopy(parent[0]) if parent and twin else data.draw(_leaf))
        else:
            parent[path[-1]] = data.draw(_leaf)
    if assignment._fast_valid(doc, part):
        assert _python_errors(part, doc) == [], doc
