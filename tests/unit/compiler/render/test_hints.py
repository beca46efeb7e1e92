"""compiler/render/hints.py: which profiles a hinted ``nvidia.com/gpu: 1`` pod may be rewritten to,
and the MutatingAdmissionPolicy per opted-in tenant. tests/test_dra_hints.py runs the CEL."""

from __future__ import annotations

from dataclasses import replace

from test_render_support import policy

from compiler.catalog import load_catalog
from compiler.model import Cluster, Policy
from compiler.render.hints import (
    MEMORY_HINT,
    PREFERENCE,
    api_version,
    hint_objects,
    policy_spec,
    profiles_for,
)

CATALOG = load_catalog()


def _policy(rewrite: bool = True, dra: bool = False) -> Policy:
    base = policy()
    (cluster,) = base.clusters
    pools = tuple(replace(p, allocation="dra") if dra and p.name == "a100" else p for p in cluster.pools)
    tenants = tuple(replace(t, rewrite_gpu_requests=rewrite) for t in base.tenants)
    return replace(base, clusters=(Cluster("east", pools),), tenants=tenants)


def test_the_api_version_follows_the_clusters_kubernetes() -> None:
    assert api_version(Cluster("c", (), kubernetes_version="1.35")) == "admissionregistration.k8s.io/v1beta1"
    assert api_version(Cluster("c", (), kubernetes_version="1.36.2")) == "admissionregistration.k8s.io/v1"
    assert api_version(Cluster("c", (), kubernetes_version="2.0")) == "admissionregistration.k8s.io/v1"


def test_profiles_are_the_quotas_on_device_plugin_mig_pools_smallest_first() -> None:
    pol = _policy()
    search = next(t for t in pol.tenants if t.name == "search")
    a100 = CATALOG.get("A100-SXM4-80GB")
    assert a100 is not None
    gb = {p.name: p.memory_gb for p in a100.profiles}
    # search's quota names 1g.10gb and 2g.20gb, both on the a100 pool
    expected = [("1g.10gb", gb["1g.10gb"]), ("2g.20gb", gb["2g.20gb"])]
    assert profiles_for(search, pol.clusters[0], CATALOG) == expected
    research = next(t for t in pol.tenants if t.name == "research")
    assert profiles_for(research, pol.clusters[0], CATALOG) == []  # whole GPUs only
    dra = _policy(dra=True)
    assert profiles_for(search, dra.clusters[0], CATALOG) == []  # the a100 pool is DRA: no device plugin


def test_one_policy_and_binding_per_opted_in_tenant_on_its_namespaces() -> None:
    pol = _policy()
    objs = dict(hint_objects(pol, pol.clusters[0], CATALOG))
    assert sorted(objs) == [
        "tenants/search/mutatingadmissionpolicy-migc-gpu-hints-search.yaml",
        "tenants/search/mutatingadmissionpolicybinding-migc-gpu-hints-search.yaml",
    ]
    binding = objs["tenants/search/mutatingadmissionpolicybinding-migc-gpu-hints-search.yaml"]
    assert binding["spec"]["policyName"] == "migc-gpu-hints-search"
    expr = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]
    assert expr["values"] == ["search", "search-dev"]
    assert hint_objects(_policy(rewrite=False), pol.clusters[0], CATALOG) == []  # not opted in


def test_the_policy_matches_hinted_pod_creates_and_names_each_profiles_resource() -> None:
    spec = policy_spec([("1g.10gb", 9.8), ("1g.10gb+me", 9.8)])
    rule = spec["matchConstraints"]["resourceRules"][0]
    assert rule["operations"] == ["CREATE"] and rule["resources"] == ["pods"]
    (condition,) = spec["matchConditions"]
    assert PREFERENCE in condition["expression"] and MEMORY_HINT in condition["expression"]
    variables = {v["name"]: v["expression"] for v in spec["variables"]}
    assert variables["allowed"] == "['1g.10gb', '1g.10gb+me']"
    assert variables["memory"] == "{'1g.10gb': 9.8, '1g.10gb+me': 9.8}"
    # JSON Pointer escapes "/" as "~1"; "+" is no resource-name character, so it becomes "."
    assert variables["resource"] == (
        "{'1g.10gb': 'nvidia.com~1mig-1g.10gb', '1g.10gb+me': 'nvidia.com~1mig-1g.10gb.me'}"
    )
    assert spec["failurePolicy"] == "Fail"
