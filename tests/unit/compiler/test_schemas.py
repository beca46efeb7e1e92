"""compiler/schemas.py: the patterns the policy language uses, the schemas' shape, and the
``python -m compiler.schemas --write`` generator.

That the files under schema/ equal this module's output, that every field is described and that the
editor schema accepts the examples is checked in tests/test_validate_rules.py and
tests/test_packaging.py; these check the module's own rules.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from compiler import schemas
from compiler.schemas import (
    DNS_LABEL_PATTERN,
    DURATION_PATTERN,
    HAMI_MEMORY_PATTERN,
    KINDS,
    LABEL_KEY_PATTERN,
    PROFILE_PATTERN,
    TIME_OF_DAY_PATTERN,
    all_schema_files,
    dumps,
    kind_schemas,
    policy_schema,
)


def _ecma(pattern: str, text: str) -> bool:
    """ECMA-262 ``$`` is the true end of the string: Python's ``\\Z``."""
    return re.search(pattern[:-1] + r"\Z" if pattern.endswith("$") else pattern, text) is not None


@pytest.mark.parametrize(
    ("pattern", "good", "bad"),
    [
        (DNS_LABEL_PATTERN, ["a", "team-1", "0a"], ["", "-a", "a-", "A", "a_b", "a.b", "c1\n"]),
        (DURATION_PATTERN, ["15m", "1h30m", "2d", "90s", ""], ["15", "1.5h", "30m1h", "-5m"]),
        (
            PROFILE_PATTERN,
            ["1g.10gb", "7g.80gb", "1g.10gb+me"],
            ["0g.10gb", "9g.1gb", "1g.10GB", "1g.10gb+gfx"],
        ),
        (TIME_OF_DAY_PATTERN, ["00:00", "23:59", "09:05"], ["24:00", "9:05", "12:60"]),
        (HAMI_MEMORY_PATTERN, ["1Mi", "80Gi", "50%", "1234567Mi"], ["0Mi", "12345678Mi", "1G", "1.5Gi"]),
        (LABEL_KEY_PATTERN, ["zone", "topology.kubernetes.io/zone", "a_b.c"], ["/zone", "-a", "a/-b"]),
    ],
)
def test_patterns_accept_and_refuse(pattern: str, good: list[str], bad: list[str]) -> None:
    assert [t for t in good if not _ecma(pattern, t)] == []
    assert [t for t in bad if _ecma(pattern, t)] == []


def test_every_kind_has_a_valid_schema_that_pins_its_kind_and_api_version() -> None:
    kinds = kind_schemas()
    assert tuple(kinds) == KINDS
    for kind, schema in kinds.items():
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["properties"]["kind"]["const"] == kind
        assert schema["properties"]["apiVersion"]["const"] == "migc.dev/v1alpha1"
        assert schema["additionalProperties"] is False
        assert schema["required"] == ["apiVersion", "kind", "metadata", "spec"]


def test_a_tenant_is_checked_by_its_own_schema() -> None:
    validator = jsonschema.Draft202012Validator(kind_schemas()["Tenant"])
    doc: dict[str, Any] = {
        "apiVersion": "migc.dev/v1alpha1",
        "kind": "Tenant",
        "metadata": {"name": "search"},
        "spec": {"namespaces": ["search"]},
    }
    assert list(validator.iter_errors(doc)) == []
    for bad_spec in ({}, {"namespaces": ["Search"]}, {"namespaces": ["a"], "color": "blue"}):
        assert list(validator.iter_errors({**doc, "spec": bad_spec})) != [], bad_spec
    assert list(validator.iter_errors({**doc, "kind": "Fleet"})) != []


def test_the_editor_schema_dispatches_on_kind_to_each_kind_file() -> None:
    schema = policy_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    refs = {rule["if"]["properties"]["kind"]["const"]: rule["then"]["$ref"] for rule in schema["allOf"]}
    assert refs == {k: schemas.SCHEMA_FILES[k] for k in KINDS}
    assert schema["properties"]["kind"]["enum"] == list(KINDS)
    assert sorted(all_schema_files()) == sorted([*schemas.SCHEMA_FILES.values(), schemas.POLICY_FILE])


def test_kind_schemas_are_fresh_copies() -> None:
    first = kind_schemas()
    first["Tenant"]["properties"]["spec"]["required"].append("mutated")
    assert kind_schemas()["Tenant"]["properties"]["spec"]["required"] == ["namespaces"]


def test_dumps_is_stable_keeps_unicode_and_refuses_nan() -> None:
    schema = {"description": "GPU — grafikkort", "b": 1, "a": [1, 2]}
    text = dumps(schema)
    assert text.endswith("}\n") and "—" in text  # not \u2014
    assert json.loads(text) == schema
    assert text.index('"b"') < text.index('"a"')  # insertion order: a schema reads in its own order
    with pytest.raises(ValueError):
        dumps({"x": math.nan})


def test_main_writes_every_file_into_the_given_directory(tmp_path: Path) -> None:
    assert schemas.main([]) == 2
    assert schemas.main(["--check"]) == 2
    assert schemas.main(["--write", str(tmp_path)]) == 0
    files = all_schema_files()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(files)
    for name, schema in files.items():
        assert (tmp_path / name).read_text(encoding="utf-8") == dumps(schema)
