"""compiler/render/monitoring.py: the dashboard and alert rules of ``--with monitoring``.
tests/test_monitoring.py checks every query's metrics against the exporters and the controller."""

from __future__ import annotations

import json
from dataclasses import replace

from test_render_support import policy

from compiler.model import Cluster
from compiler.render.monitoring import (
    DASHBOARD_LABEL,
    dashboard,
    host,
    ksm_resource,
    monitoring_objects,
    rules,
)


def test_ksm_resource_is_the_name_kube_state_metrics_exports() -> None:
    assert ksm_resource("nvidia.com/mig-1g.10gb") == "nvidia_com_mig_1g_10gb"
    assert ksm_resource("nvidia.com/gpu") == "nvidia_com_gpu"


def test_host_reads_either_spelling_of_dcgm_exporters_host_label() -> None:
    expr = host("DCGM_FI_DEV_FB_USED")
    assert expr == (
        'label_replace(label_replace(DCGM_FI_DEV_FB_USED, "gpu_host", "$1", "Hostname", "(.+)"), '
        '"gpu_host", "$1", "hostname", "(.+)")'
    )


def test_dashboard_panels_have_unique_ids_on_a_two_column_grid() -> None:
    board = dashboard(Cluster("a-cluster-name-that-is-rather-long-for-a-uid", ()))
    assert len(board["uid"]) == 40 and board["uid"].startswith("migc-a-cluster")
    panels = board["panels"]
    assert [p["id"] for p in panels] == list(range(1, len(panels) + 1))
    assert {p["gridPos"]["x"] for p in panels} == {0, 12}
    assert len({(p["gridPos"]["x"], p["gridPos"]["y"]) for p in panels}) == len(panels)  # no overlap


def test_one_starvation_rule_per_tenant_and_guaranteed_resource_labelled_with_the_cluster() -> None:
    pol = policy()
    out = rules(pol, pol.clusters[0])
    starved = [r for r in out if r["alert"] == "MigcTenantStarvedWhileOthersBorrow"]
    # search guarantees 8 x 1g.10gb, research 2 whole GPUs: one rule each
    assert sorted((r["labels"]["tenant"], r["labels"]["resource"]) for r in starved) == [
        ("research", "nvidia.com/gpu"),
        ("search", "nvidia.com/mig-1g.10gb"),
    ]
    search = next(r for r in starved if r["labels"]["tenant"] == "search")
    assert "< 8)" in search["expr"]  # below its guarantee of 8
    assert 'namespace=~"search|search-dev"' in search["expr"]
    # research holds any running 1g.10gb: more than its own guarantee of it (none)
    borrower = (
        'sum(kube_pod_container_resource_requests{resource="nvidia_com_mig_1g_10gb", namespace=~"research"} '
        'and on(namespace, pod) (kube_pod_status_phase{phase="Running"} == 1)) > 0)'
    )
    assert borrower in search["expr"]
    assert all(r["labels"]["migc_cluster"] == "east" for r in out)
    assert len({(r["alert"], tuple(sorted(r["labels"].items()))) for r in out}) == len(out)  # distinct


def test_a_lone_tenant_has_no_one_to_borrow_from() -> None:
    pol = policy()
    lone = replace(pol, tenants=pol.tenants[:1])
    assert not [r for r in rules(lone, pol.clusters[0]) if r["alert"] == "MigcTenantStarvedWhileOthersBorrow"]


def test_objects_are_the_labelled_dashboard_configmap_and_the_rule() -> None:
    pol = policy()
    (cm_path, cm), (rule_path, rule) = monitoring_objects(pol, pol.clusters[0])
    assert cm_path == "monitoring/configmap-migc-grafana-dashboard.yaml"
    assert DASHBOARD_LABEL.items() <= cm["metadata"]["labels"].items()
    assert json.loads(cm["data"]["migc-east.json"]) == dashboard(pol.clusters[0])
    assert rule_path == "monitoring/prometheusrule-migc.yaml"
    assert rule["spec"]["groups"][0]["rules"] == rules(pol, pol.clusters[0])
