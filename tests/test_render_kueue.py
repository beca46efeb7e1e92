"""Kueue objects (``--with kueue``) against Kueue v0.19.2's CRDs, CEL rules, webhook (tests/kueue_crds.py)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from kueue_crds import KINDS, kueue_errors, webhook_errors
from test_render_support import default_solution, policy

from compiler.catalog import load_catalog
from compiler.render import render


@pytest.fixture(scope="module")
def kueue_objects() -> dict[str, dict[str, Any]]:
    files = render(policy(extra_tenant=True), default_solution(), load_catalog(), with_kueue=True)
    out = {}
    for path, data in files.items():
        if path.endswith(".yaml"):
            obj = yaml.safe_load(data)
            if obj.get("kind") in KINDS:
                out[path] = obj
    return out


def test_every_object_passes_the_crds_and_the_webhook(kueue_objects: dict[str, dict[str, Any]]) -> None:
    assert {o["kind"] for o in kueue_objects.values()} == KINDS
    for path, obj in kueue_objects.items():
        assert obj["apiVersion"] == "kueue.x-k8s.io/v1beta2"
        assert kueue_errors(obj) == [], path


def test_cluster_queues_cover_cpu_and_memory(kueue_objects: dict[str, dict[str, Any]]) -> None:
    # pkg/scheduler/flavorassigner: every resource a workload requests must be covered
    # ("resource cpu unavailable in ClusterQueue" otherwise).
    flavors = {o["metadata"]["name"] for o in kueue_objects.values() if o["kind"] == "ResourceFlavor"}
    queues = [o for o in kueue_objects.values() if o["kind"] == "ClusterQueue"]
    assert queues
    for cq in queues:
        covered = [r for g in cq["spec"]["resourceGroups"] for r in g["coveredResources"]]
        assert {"cpu", "memory"} <= set(covered)
        for group in cq["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                assert flavor["name"] in flavors  # else the ClusterQueue stays inactive
    search = next(cq for cq in queues if cq["metadata"]["name"] == "migc-search")
    cpu_memory = next(g for g in search["spec"]["resourceGroups"] if "cpu" in g["coveredResources"])
    assert cpu_memory["flavors"] == [
        {
            "name": "migc-cpu-memory",
            "resources": [{"name": "cpu", "nominalQuota": "100k"}, {"name": "memory", "nominalQuota": "1Pi"}],
        }
    ]


def _cq(kueue_objects: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return copy.deepcopy(next(o for o in kueue_objects.values() if o["kind"] == "ClusterQueue"))


def test_the_checks_catch_what_kueue_rejects(kueue_objects: dict[str, dict[str, Any]]) -> None:
    # The validator is not vacuous: each mutation is one Kueue refuses.
    v1beta1_field = _cq(kueue_objects)
    v1beta1_field["spec"]["cohort"] = v1beta1_field["spec"].pop("cohortName")
    assert any("cohort" in e for e in kueue_errors(v1beta1_field))
    no_cohort = _cq(kueue_objects)
    del no_cohort["spec"]["cohortName"]
    # CRD CEL rule and webhook both refuse a borrowingLimit without a cohort
    assert "borrowingLimit must be nil when cohort is empty" in kueue_errors(no_cohort)
    wrong_order = _cq(kueue_objects)
    group = next(g for g in wrong_order["spec"]["resourceGroups"] if "cpu" in g["coveredResources"])
    group["flavors"][0]["resources"].reverse()
    assert any("must match the name in coveredResources" in e for e in webhook_errors(wrong_order))
    shared_flavor = _cq(kueue_objects)
    groups = shared_flavor["spec"]["resourceGroups"]
    groups[1]["flavors"][0]["name"] = groups[0]["flavors"][0]["name"]
    assert any("in two resource groups" in e for e in webhook_errors(shared_flavor))
    missing_flavor_resource = _cq(kueue_objects)
    missing_flavor_resource["spec"]["resourceGroups"][-1]["flavors"][0]["resources"].pop()
    assert "flavors must have the same number of resources as the coveredResources" in kueue_errors(
        missing_flavor_resource
    )
    negative = _cq(kueue_objects)
    negative["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = -1
    assert any("non-negative" in e for e in webhook_errors(negative))


def test_golden_kueue_example_passes() -> None:
    golden = Path(__file__).resolve().parent / "golden" / "lab-kueue"
    objs = [yaml.safe_load(p.read_bytes()) for p in sorted(golden.rglob("*.yaml"))]
    kueue = [o for o in objs if o.get("kind") in KINDS]
    assert {o["kind"] for o in kueue} == KINDS
    for obj in kueue:
        assert kueue_errors(obj) == [], obj["metadata"]["name"]
