"""MIGC134: the plan never provisions pods the rendered ResourceQuota refuses (issue 25, item 1).

A tenant's ResourceQuota ``hard`` is its burst, else its guarantee (compiler/render/quota.py
``hard_limits``); the API server's quota admission refuses a pod that would take a namespace past it.
So demand above that limit is refused up front: by ``migc validate`` where the resource is known before
solving, by ``migc compile`` after solving where the solver picks it (a ``gpuMemoryGB`` need).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from compiler.cli import main

CASE = Path(__file__).resolve().parent / "cases" / "valid" / "minimal"

TENANT = """\
apiVersion: migc.dev/v1alpha1
kind: Tenant
metadata:
  name: search
spec:
  namespaces: [search]
  priorityClass: high
  guaranteed:
    profiles: {{1g.10gb: 20}}
{burst}"""

WORKLOAD = """\
apiVersion: migc.dev/v1alpha1
kind: Workload
metadata:
  name: bert
spec:
  tenant: search
  pools: [a100]
  replicas: 24
  need:
    {need}
"""


def write(root: Path, need: str, burst: str = "") -> Path:
    root.mkdir()
    (root / "fleet.yaml").write_text((CASE / "fleet.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    (root / "tenants.yaml").write_text(TENANT.format(burst=burst), encoding="utf-8")
    (root / "workloads.yaml").write_text(WORKLOAD.format(need=need), encoding="utf-8")
    return root


def test_validate_refuses_an_exact_profile_demand_above_the_guarantee(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = write(tmp_path / "p", "profile: 1g.10gb")
    assert main(["validate", str(policy), "--strict"]) == 1
    out = capsys.readouterr().out
    assert "tenants.yaml:9:" in out  # at the 1g.10gb guarantee, the limit the fix raises
    assert "MIGC134 error" in out
    assert "in namespace search ask for 24 nvidia.com/mig-1g.10gb (bert 24" in out
    assert "its quota admits 20 per namespace (guaranteed.profiles)" in out
    assert "raise the burst to at least 24" in out


def test_compile_refuses_a_solver_picked_profile_above_the_quota(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 10 GB need is resolved to 1g.10gb by the solver; validate cannot know, compile must refuse."""
    policy = write(tmp_path / "p", "gpuMemoryGB: 10")
    out_dir = tmp_path / "out"
    assert main(["validate", str(policy), "--strict"]) == 0
    capsys.readouterr()
    assert main(["compile", str(policy), "--out", str(out_dir)]) == 1
    out = capsys.readouterr().out
    assert "MIGC134 error" in out
    assert "in namespace search ask for 24 nvidia.com/mig-1g.10gb (bert 24)" in out
    assert not out_dir.exists()  # no partial output


def test_with_a_burst_the_plan_and_the_resource_quota_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = write(tmp_path / "p", "gpuMemoryGB: 10", burst="  burst:\n    profiles: {1g.10gb: 24}\n")
    out_dir = tmp_path / "out"
    assert main(["compile", str(policy), "--out", str(out_dir)]) == 0
    capsys.readouterr()
    quota = yaml.safe_load(
        (out_dir / "east" / "tenants" / "search" / "search" / "resourcequota-migc-gpu.yaml").read_text()
    )
    hard = quota["spec"]["hard"]["requests.nvidia.com/mig-1g.10gb"]
    assert main(["plan", str(policy), "--from-scratch", "-o", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    served = sum(
        d["served"]
        for cluster in plan["solution"]["clusters"]
        for pool in cluster["pools"]
        for d in pool["demand"]
        if d["tenant"] == "search" and d["resource"] == "1g.10gb"
    )
    assert int(hard) == served == 24
