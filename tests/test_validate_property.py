"""Property: whatever the input (random YAML text, random JSON-like documents, mutated examples),
loading and validating never raises and returns either a Policy or at least one error, never both."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.catalog import load_catalog
from compiler.diagnostics import Severity, has_errors, registry
from compiler.load import LoadedDocument, load_paths, load_text
from compiler.model import Policy
from compiler.validate import validate

REPO = Path(__file__).resolve().parents[1]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_EXAMPLE_DOCS, _ = load_paths([REPO / "examples" / "prod"])
_CATALOG = load_catalog()

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    # values of the right shape for many fields, so mutations reach the semantic rules, not only the schema
    st.sampled_from(
        [
            "1g.10gb",
            "7g.80gb",
            "1g.10gb+me",
            "3g.71gb",
            "10%",
            "0%",
            "15m",
            "0s",
            "NVIDIA-H200",
            "NVIDIA-L40S",
            "search",
            "a100",
            "h200",
            "l40s",
            "prod-east",
            "critical",
            "mps",
            "time-slicing",
            "none",
            "mig",
            "exclusive",
            "shared",
            "Fleet",
            "../x",
            0,
            1,
            2,
            8,
            64,
            100,
        ]
    ),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=10), children, max_size=4),
    ),
    max_leaves=25,
)
KINDS = st.sampled_from(["Fleet", "Tenant", "Workload", "PartitionPolicy", "Node"])


def _check(policy: Policy | None, diags: list[Any]) -> None:
    known = registry()
    for d in diags:
        assert d.code in known
        assert d.line >= 0 and d.col >= 0
        assert d.severity in Severity
    if policy is not None:
        assert not has_errors(diags)
    else:
        assert has_errors(diags)


def _doc(data: Any, index: int = 0) -> LoadedDocument:
    return LoadedDocument(file="gen.yaml", index=index, data=data, positions={}, key_positions={})


@pytest.mark.slow
@SETTINGS
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(text: str) -> None:
    docs, diags = load_text(text, "t.yaml")
    policy, more = validate(docs, _CATALOG, incomplete=has_errors(diags))
    _check(None if has_errors(diags) else policy, diags + more)


@pytest.mark.slow
@SETTINGS
@given(
    st.lists(
        st.fixed_dictionaries(
            {"apiVersion": st.just("migc.dev/v1alpha1"), "kind": KINDS},
            optional={"metadata": json_values, "spec": json_values},
        ),
        max_size=4,
    )
)
def test_arbitrary_documents_never_raise(items: list[dict[str, Any]]) -> None:
    policy, diags = validate([_doc(d, i) for i, d in enumerate(items)], _CATALOG)
    _check(policy, diags)


@pytest.mark.slow
@SETTINGS
@given(json_values)
def test_arbitrary_yaml_round_trip_never_raises(value: Any) -> None:
    text = json.dumps(value)  # JSON is YAML 1.2
    docs, diags = load_text(text, "j.yaml")
    policy, more = validate(docs, _CATALOG, incomplete=has_errors(diags))
    _check(None if has_errors(diags) else policy, diags + more)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*prefix, i)))
    return out


@st.composite
def mutated_examples(draw: st.DrawFn) -> list[LoadedDocument]:
    docs = [copy.deepcopy(d.data) for d in _EXAMPLE_DOCS]
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        which = draw(st.integers(min_value=0, max_value=len(docs) - 1))
        paths = _paths(docs[which])
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "delete", "duplicate-doc", "drop-doc"]))
        if action == "drop-doc" and len(docs) > 1:
            docs.pop(which)
            continue
        if action == "duplicate-doc":
            docs.append(copy.deepcopy(docs[which]))
            continue
        if not path:
            docs[which] = draw(json_values)
            continue
        parent = docs[which]
        for part in path[:-1]:
            parent = parent[part]
        if action == "delete":
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(json_values)
    # positions are only approximate after mutation; validate must cope with missing ones
    return [
        LoadedDocument(
            file="m.yaml",
            index=i,
            data=data,
            positions=_EXAMPLE_DOCS[i].positions if i < len(_EXAMPLE_DOCS) else {},
            key_positions={},
        )
        for i, data in enumerate(docs)
    ]


@pytest.mark.slow
@SETTINGS
@given(mutated_examples())
def test_mutated_examples_never_raise(docs: list[LoadedDocument]) -> None:
    policy, diags = validate(docs, _CATALOG)
    _check(policy, diags)


def test_the_unmutated_example_is_valid() -> None:
    # the mutation test above would be vacuous if the starting point did not validate
    policy, diags = validate(_EXAMPLE_DOCS, _CATALOG)
    assert diags == [] and policy is not None
