"""The YAML emitter's fast path (libyaml) writes the same bytes as PyYAML's pure-Python emitter.

``compiler.render.emit.dump_yaml`` goes through libyaml for speed and falls back to the pure
emitter for the inputs where the two differ. These tests compare it with ``dump_yaml_pure`` (the
reference) on the shapes migc renders and on random documents, and pin each known difference so a
PyYAML or libyaml upgrade that changes one is seen here rather than as a changed ``output/``.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.render import emit

pytestmark = pytest.mark.skipif(emit._FastDumper is None, reason="PyYAML built without libyaml")

# Characters that exercise YAML's quoting, escaping and block-scalar rules.
_TRICKY = [*" \t\n\r-:#'\"|>ab1.\\{}[],&*!%@`_/+\u2028\u2029\ufeff\x00\x1f\x7f\x85\xa0é", "\U0001f600"]

_text = st.one_of(
    st.text(st.characters(exclude_categories=["Cs"]), max_size=30),
    st.text(alphabet=st.sampled_from(_TRICKY), max_size=20),
)
_scalar = st.one_of(_text, st.integers(), st.floats(allow_nan=False), st.booleans(), st.none())
_tree = st.recursive(
    _scalar,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(_scalar, max_size=4).map(emit.FlowList),
        st.dictionaries(_text, children, max_size=4),
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.dictionaries(_text, _tree, min_size=1, max_size=5))
def test_random_documents_are_written_as_the_pure_emitter_writes_them(doc: dict[str, Any]) -> None:
    assert emit.dump_yaml(doc) == emit.dump_yaml_pure(doc)


@pytest.mark.parametrize(
    "doc",
    [
        {"": None},  # PyYAML: "? ''" (complex key); libyaml: "'': null"
        {"\n": None},  # a multi-line key
        {"\r": []},
        {"k" * 128: 1},  # PyYAML writes keys of 128+ characters as complex keys
        {"k": "a\x85b"},  # NEL: PyYAML keeps it inside single quotes, libyaml writes "\N"
        {"k": "\U0001f600"},  # beyond the BMP: libyaml escapes it
        {"k": ["\n", ""]},  # "|+" block: libyaml ends the document with "..."
    ],
)
def test_each_known_difference_takes_the_pure_emitter(doc: dict[str, Any]) -> None:
    libyaml = yaml.dump(doc, Dumper=emit._FastDumper, **emit._OPTIONS).rstrip("\n") + "\n"
    assert libyaml != emit.dump_yaml_pure(doc), "libyaml now agrees: the fallback rule can shrink"
    assert emit.dump_yaml(doc) == emit.dump_yaml_pure(doc)


def test_the_shapes_migc_renders_take_the_fast_path() -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "migc-mig-parted", "labels": {"app.kubernetes.io/managed-by": "migc"}},
        "data": {"config.yaml": "version: v1\nmig-configs:\n  all-1g.10gb:\n  - devices: all\n"},
        "spec": {"devices": emit.FlowList([0, 1, 2]), "quota": {"requests.nvidia.com/mig-1g.10gb": "4"}},
    }
    assert emit._libyaml_safe(doc)
    assert emit.dump_yaml(doc) == emit.dump_yaml_pure(doc)
