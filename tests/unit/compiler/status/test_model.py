"""compiler/status/model.py: the status records' derived facts and the JSON ``migc status -o json``
writes (FleetStatus.to_dict)."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace

import pytest

from compiler.diagnostics import make
from compiler.status.model import SCHEMA_VERSION, GpuView, Slot
from compiler.status.report import to_json
from unit.compiler.status.test_report import MIG, NODE, PENDING, STATUS


@pytest.mark.parametrize(
    ("phase", "mig_state", "rolling"),
    [
        ("", "success", False),
        ("Idle", "success", False),
        ("Draining", "success", True),
        ("Idle", "pending", True),
        ("Idle", "rebooting", True),
        ("Idle", "failed", True),
    ],
)
def test_a_node_is_rolling_out_while_the_controller_or_the_mig_manager_is_busy(
    phase: str, mig_state: str, rolling: bool
) -> None:
    assert replace(NODE, phase=phase, mig_state=mig_state).rolling_out is rolling


def test_free_and_max_wait() -> None:
    assert NODE.has_free
    assert not replace(NODE, free=((MIG, 0),)).has_free and not replace(NODE, free=()).has_free
    assert PENDING.over_max_wait  # 3h05m against 15m
    assert not replace(PENDING, pending_seconds=900).over_max_wait  # not past it yet
    assert not replace(PENDING, max_wait_seconds=None).over_max_wait
    assert not replace(PENDING, pending_seconds=None).over_max_wait


def test_json_names_every_field_with_counts_as_objects_and_utc_times() -> None:
    cet = dt.timezone(dt.timedelta(hours=1))
    status = replace(STATUS, taken_at=dt.datetime(2026, 12, 1, 7, 0, tzinfo=cet))
    doc = status.to_dict()
    assert (doc["apiVersion"], doc["kind"]) == (SCHEMA_VERSION, "FleetStatus")
    assert doc["taken_at"] == "2026-12-01T06:00:00Z"
    (node,) = doc["nodes"]
    assert node["capacity"] == {MIG: 14} and node["free"] == {MIG: 2}
    assert node["rolling_out"] is True and node["phase_since"] == "2026-12-01T05:55:00Z"
    assert node["drift"] == ["carries migc-a100-7x1g, assigned migc-a100-balanced"]
    (pod,) = doc["pending"]
    assert pod["over_max_wait"] is True and pod["requests"] == {MIG: 1}
    assert doc["missing_nodes"] == ["a100-02"] and doc["unmanaged_nodes"] == []


def test_json_of_gpu_slots() -> None:
    gpu = GpuView(0, True, (Slot(MIG, 0.0, 0.125, 1 / 7, tenant="search", pod="search/p"),))
    doc = replace(STATUS, nodes=(replace(NODE, gpus=(gpu,)),)).to_dict()
    (slot,) = doc["nodes"][0]["gpus"][0]["slots"]
    assert slot == {
        "resource": MIG,
        "start": 0.0,
        "width": 0.125,
        "share": 1 / 7,
        "tenant": "search",
        "pod": "search/p",
        "engine_active": None,
        "memory_used_mib": None,
    }
    assert doc["nodes"][0]["gpus"][0]["known"] is True


def test_warnings_are_written_as_every_other_diagnostic_json() -> None:
    """A warning of the observation (here MIGC401) reads as ``migc validate -o json`` writes one:
    its ``as_dict``, severity by name."""
    warning = make("MIGC401", "pod ml/p: annotation migc.dev/profile-preference is malformed", file="c.json")
    doc = replace(STATUS, warnings=(warning,)).to_dict()
    assert doc["warnings"] == [warning.as_dict()]
    (written,) = json.loads(to_json(replace(STATUS, warnings=(warning,))))["warnings"]
    assert written["severity"] == "warning" and written["code"] == "MIGC401"
