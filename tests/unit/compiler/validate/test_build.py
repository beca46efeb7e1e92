"""compiler/validate/build.py: the Policy a valid policy set becomes: names resolved, defaults
filled in (tier, isolation, cluster, namespace, maxUnavailable, windows), everything sorted."""

from __future__ import annotations

import pytest
from validate_support import fleet, partition, run, tenant, workload

from compiler.model import PartitionPolicy, Policy
from compiler.validate.build import hami_need, mib

POOLS = """\
- name: zz
  gpuProduct: NVIDIA-A100-SXM4-80GB
  gpusPerNode: 8
  nodes: {selector: {matchLabels: {pool: zz}}, count: 3}
  maxUnavailable: 50%
  maintenanceWindows:
    - {start: "01:00", end: "02:00"}
- name: aa
  gpuProduct: NVIDIA-L40S
  gpusPerNode: 4
  nodes: {names: [n2, n1]}
  sharing: {mode: time-slicing, replicas: 4}
"""


def _policy(*texts: str) -> Policy:
    policy, diags = run(*texts)
    assert policy is not None, diags
    return policy


def test_mib_and_hami_needs() -> None:
    assert (mib("12Gi"), mib("500Mi")) == (12 * 1024, 500)
    need = hami_need({"memory": "25%", "cores": 30})
    assert (need.memory_mib, need.memory_percent, need.cores, need.distinct_gpus) == (0, 25, 30, False)
    assert hami_need({"memory": "2Gi", "distinctGpus": True}).memory_mib == 2048


def test_pools_sorted_and_their_defaults_filled_in() -> None:
    policy = _policy(
        fleet(POOLS, extra="pricing: {NVIDIA-L40S: 1.5}\n"),
        tenant(),
        workload("w", "tenant: t\nreplicas: 1\nneed: {gpus: 1}"),
    )
    (cluster,) = policy.clusters
    assert [p.name for p in cluster.pools] == ["aa", "zz"] and cluster.kubernetes_version == "1.31"
    aa, zz = cluster.pools
    assert aa.node_names == ("n1", "n2") and aa.sharing.replicas == 4 and not aa.mig
    assert aa.gpu_model == "L40S" and aa.price_per_gpu_hour == 1.5 and zz.price_per_gpu_hour is None
    assert zz.node_names == ("zz-0", "zz-1", "zz-2") and zz.node_selector == (("pool", "zz"),)
    assert zz.max_unavailable == 1  # floor(50% of 3)
    (window,) = zz.maintenance_windows
    assert (len(window.days), window.timezone) == (7, "UTC")  # no days: every day; no zone: UTC


def test_workload_defaults_come_from_its_tenant_and_need() -> None:
    t = tenant("t", "namespaces: [team-t]\npriorityClass: high")
    s = tenant("s", "namespaces: [b, a]")
    ws = [
        workload("m", "tenant: t\nreplicas: 2\nneed: {profile: 1g.10gb}"),
        workload("g", "tenant: t\nreplicas: 1\npriorityClass: low\nneed: {gpus: 2}"),
        workload(
            "x",
            "tenant: t\nreplicas: 1\nneed: {profile: 1g.10gb}\n"
            "target: {apiVersion: apps/v1, kind: Deployment, name: d}",
        ),
    ]
    policy = _policy(fleet(), t, s, *ws)
    assert [w.name for w in policy.workloads] == ["g", "m", "x"]
    g, m, x = policy.workloads
    assert (m.isolation, m.priority_tier, m.cluster, m.need.profiles) == (
        "hardware",
        "high",
        "c",
        ("1g.10gb",),
    )
    assert (g.isolation, g.priority_tier, g.need.gpus) == ("exclusive", "low", 2)
    assert x.target is not None and x.target.namespace == "team-t"  # the tenant's one namespace
    assert [(t.name, t.namespaces) for t in policy.tenants] == [("s", ("a", "b")), ("t", ("team-t",))]


def test_a_tenant_without_a_class_gets_the_lowest_tier() -> None:
    policy = _policy(fleet(), tenant(), workload())
    lowest = min(PartitionPolicy().tiers, key=lambda t: (t.value, t.name)).name
    assert policy.tenants[0].priority_tier == lowest


@pytest.mark.parametrize(("text", "seconds"), [("15m", 900), ("1h30m", 5400)])
def test_partition_durations_become_seconds(text: str, seconds: int) -> None:
    spec = f"mode: dynamic\ninterval: {text}\nbackoff: {{initial: 1m, max: {text}, factor: 3}}"
    p = _policy(fleet(), tenant(), workload(), partition(spec)).partition
    assert (p.mode, p.interval_seconds, p.backoff_initial_seconds, p.backoff_max_seconds) == (
        "dynamic",
        seconds,
        60,
        seconds,
    )
    assert p.backoff_factor == 3.0
    assert p.stabilization_seconds == PartitionPolicy().stabilization_seconds  # unset: the default
