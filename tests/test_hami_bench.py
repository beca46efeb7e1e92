"""bench.hami on a tiny openb sample: the table row is produced, every pod is served, and migc uses
no more GPUs than first-fit-decreasing nor fewer than the lower bound."""

from __future__ import annotations

import os

import pytest

from bench import hami, openb


@pytest.mark.parametrize("trace", hami.TRACES)
def test_row_on_a_tiny_sample(trace: str) -> None:
    if not openb.available(trace):
        # as tests/test_bench_smoke.py: CI has the data beside the clone, so there a missing trace fails
        missing = f"openb trace {trace} not found under {openb.shared_dir()}"
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    cells = [c.strip() for c in hami.row(trace, 12, time_limit=30).strip("|").split("|")]
    pods, whole, ffd = int(cells[1]), int(cells[3]), int(cells[4])
    migc = int(cells[5].split()[0])
    lower = int(cells[6])
    assert cells[7] == f"{pods}/{pods}"
    assert lower <= migc <= ffd <= whole == pods
