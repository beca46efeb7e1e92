"""Data-driven cases: every invalid case yields exactly its expected diagnostics; valid ones yield none.

Refresh expected files after an intended change with ``python tests/refresh_cases.py`` and review the diff.
"""

from __future__ import annotations

import pytest
from refresh_cases import ROOT, case_names, read_expected, run_case

from compiler.diagnostics import registry
from compiler.pipeline import load_and_validate
from compiler.validate.common import time_zones as _time_zones

INVALID = case_names("invalid")
VALID = case_names("valid")
EXAMPLES = sorted(p.name for p in (ROOT.parents[1] / "examples").iterdir() if (p / "fleet.yaml").exists())

# Codes that need inputs a case folder cannot hold (a missing path, a 4 MiB file, 1001 documents,
# an empty directory, an internal bug); tests/unit/compiler/test_load.py covers each of them directly.
# MIGC144 and MIGC146 (over 1,000 tenants, over 3,000 workloads) would need thousands of documents
# here; tests/test_validate_names_limits.py builds them in memory at the real limits. FIFOs,
# devices, oversized outputs and link loops (MIGC015-017): tests/test_fs_safety.py.
COVERED_ELSEWHERE = {"MIGC000", "MIGC001", "MIGC002", "MIGC010", "MIGC013", "MIGC144", "MIGC146"}
COVERED_ELSEWHERE |= {"MIGC015", "MIGC016", "MIGC017"}


def test_there_are_enough_cases() -> None:
    assert len(INVALID) >= 40
    assert len(VALID) >= 5


@pytest.mark.parametrize("name", INVALID)
def test_invalid_case(name: str) -> None:
    if name == "timezone-unknown" and not _time_zones():
        pytest.skip("no IANA time-zone database on this machine: time zones are not checked")
    policy, rows = run_case("invalid", name)
    expected = read_expected(name)
    assert rows == expected
    assert rows, "an invalid case must produce at least one diagnostic"
    if any(r["severity"] == "error" for r in rows):
        assert policy is None


@pytest.mark.parametrize("name", VALID)
def test_valid_case(name: str) -> None:
    policy, rows = run_case("valid", name)
    assert rows == []
    assert policy is not None


@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_validate_cleanly(name: str) -> None:
    policy, diags = load_and_validate([ROOT.parents[1] / "examples" / name])
    assert [d.as_dict() for d in diags] == []
    assert policy is not None and policy.workloads


def test_every_load_schema_and_semantic_code_has_a_case() -> None:
    mine = {c for c in registry() if c[4] in "01"}
    seen = {row["code"] for name in INVALID for row in read_expected(name)}
    assert mine - seen - COVERED_ELSEWHERE == set()
