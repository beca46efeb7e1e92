"""Optional monitoring objects (``migc compile --with monitoring``): a Grafana dashboard and alert rules.

Per cluster, under ``monitoring/``:

* a ConfigMap ``migc-grafana-dashboard`` labelled ``grafana_dashboard: "1"`` — the label the Grafana
  sidecar of the kube-prometheus-stack / grafana Helm charts watches by default
  (``sidecar.dashboards.label``) — holding the dashboard JSON model;
* a ``PrometheusRule`` (prometheus-operator ``monitoring.coreos.com/v1``) ``migc``: a node whose
  reconfiguration failed, a rollout that has not finished for an hour, drift that persists, GPU pods
  pending past :data:`PENDING_ALERT_SECONDS`, and a tenant below its guarantee with pending pods
  while another tenant holds more than its own guarantee of the same resource.

Every query uses only the metric names in :data:`METRICS`, each with the exporter and version that
exports it (tests/test_monitoring.py checks every query against this list and the migc controller's
names against its real registry). kube-state-metrics writes a resource name with every character
outside ``[a-zA-Z0-9_]`` replaced by ``_`` (``nvidia.com/mig-1g.10gb`` → ``nvidia_com_mig_1g_10gb``).
"""

from __future__ import annotations

import re
from typing import Any

from compiler.model import WHOLE_GPU, Cluster, Policy
from compiler.render.emit import dump_json
from compiler.render.manifests import SYSTEM_NAMESPACE, Obj, metadata

# name → (source, version, where it is defined)
METRICS: dict[str, tuple[str, str, str]] = {
    # NVIDIA dcgm-exporter 3.3/4.x, default counters etc/default-counters.csv; labels Hostname (hostname
    # since d5e5f510, #655; see HOST), gpu, GPU_I_ID, GPU_I_PROFILE (MIG instances), namespace/pod/container
    # with Kubernetes mapping.
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": ("dcgm-exporter", "3.3+", "etc/default-counters.csv"),
    "DCGM_FI_DEV_FB_USED": ("dcgm-exporter", "3.3+", "etc/default-counters.csv"),
    "DCGM_FI_DEV_FB_FREE": ("dcgm-exporter", "3.3+", "etc/default-counters.csv"),
    # kube-state-metrics v2.x (docs/metrics/workload/pod-metrics.md, docs/metrics/cluster/node-metrics.md)
    "kube_pod_container_resource_requests": ("kube-state-metrics", "2.0+", "internal/store/pod.go"),
    "kube_pod_status_phase": ("kube-state-metrics", "2.0+", "internal/store/pod.go"),
    "kube_pod_created": ("kube-state-metrics", "2.0+", "internal/store/pod.go"),
    "kube_pod_status_scheduled_time": ("kube-state-metrics", "2.0+", "internal/store/pod.go"),
    "kube_node_status_allocatable": ("kube-state-metrics", "2.0+", "internal/store/node.go"),
    # the migc controller (controller/metrics.py)
    "migc_reconfigurations_total": ("migc-controller", "0.1", "controller/metrics.py"),
    "migc_reconfiguration_duration_seconds_bucket": ("migc-controller", "0.1", "controller/metrics.py"),
    "migc_nodes": ("migc-controller", "0.1", "controller/metrics.py"),
    "migc_layout_drift_nodes": ("migc-controller", "0.1", "controller/metrics.py"),
    "migc_evictions_total": ("migc-controller", "0.1", "controller/metrics.py"),
    "migc_leader": ("migc-controller", "0.1", "controller/metrics.py"),
    "migc_gpu_pod_pending_seconds_bucket": ("migc-controller", "0.1", "controller/metrics.py"),
}

DASHBOARD_CONFIGMAP = "migc-grafana-dashboard"
DASHBOARD_LABEL = {"grafana_dashboard": "1"}
RULE_NAME = "migc"
PENDING_ALERT_SECONDS = 900  # the 15 minutes issue 11 quotes as a typical maximum wait
ROLLOUT_STUCK_FOR = "1h"
GPU_RESOURCES = 'resource=~"nvidia_com_gpu|nvidia_com_mig_.+"'
RUNNING = 'kube_pod_status_phase{phase="Running"} == 1'
PENDING = 'kube_pod_status_phase{phase="Pending"} == 1'


def host(metric: str) -> str:
    """``metric`` with its node in the label ``gpu_host``, whichever of dcgm-exporter's spellings it has:
    ``Hostname`` (3.x/4.x releases) or ``hostname`` (main since NVIDIA/dcgm-exporter d5e5f510, #655).
    ``label_replace`` copies a label only where the regex matches, so an absent one changes nothing."""
    inner = f'label_replace({metric}, "gpu_host", "$1", "Hostname", "(.+)")'
    return f'label_replace({inner}, "gpu_host", "$1", "hostname", "(.+)")'


def ksm_resource(resource: str) -> str:
    """The ``resource`` label value kube-state-metrics exports for an extended resource name."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", resource)


def _resource(profile: str) -> str:
    return "nvidia.com/gpu" if profile == WHOLE_GPU else "nvidia.com/mig-" + profile.replace("+", ".")


def _ns_regex(namespaces: tuple[str, ...]) -> str:
    # namespace names are DNS-1123 labels ([a-z0-9-]): nothing to escape in an RE2 alternation
    return "|".join(sorted(namespaces))


def _held(resource: str, namespaces: tuple[str, ...], phase: str = RUNNING) -> str:
    return (
        f'sum(kube_pod_container_resource_requests{{resource="{ksm_resource(resource)}", '
        f'namespace=~"{_ns_regex(namespaces)}"}} and on(namespace, pod) ({phase}))'
    )


def _panel(pid: int, title: str, kind: str, expr: str, legend: str, x: int, y: int, **extra: Any) -> Obj:
    panel: Obj = {
        "id": pid,
        "type": kind,
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "targets": [{"refId": "A", "expr": expr, "legendFormat": legend}],
    }
    panel.update(extra)
    return panel


PANELS: tuple[tuple[str, str, str, str, dict[str, Any]], ...] = (
    (
        "MIG profile distribution (allocatable instances)",
        "bargauge",
        'sum by (resource) (kube_node_status_allocatable{resource=~"nvidia_com_mig_.+"})',
        "{{resource}}",
        {},
    ),
    (
        "GPU resources allocated to running pods",
        "timeseries",
        f"sum by (resource) (kube_pod_container_resource_requests{{{GPU_RESOURCES}}} "
        f"and on(namespace, pod) ({RUNNING}))",
        "{{resource}}",
        {},
    ),
    (
        "Utilisation per MIG instance (graphics engine active)",
        "heatmap",
        f"avg by (gpu_host, gpu, GPU_I_ID, GPU_I_PROFILE) ({host('DCGM_FI_PROF_GR_ENGINE_ACTIVE')})",
        "{{gpu_host}} GPU {{gpu}} / {{GPU_I_PROFILE}} #{{GPU_I_ID}}",
        {},
    ),
    (
        "Instance utilisation by profile",
        "timeseries",
        "avg by (GPU_I_PROFILE) (DCGM_FI_PROF_GR_ENGINE_ACTIVE)",
        "{{GPU_I_PROFILE}}",
        {"fieldConfig": {"defaults": {"unit": "percentunit"}, "overrides": []}},
    ),
    (
        "Frame-buffer memory used by profile (MiB)",
        "timeseries",
        "sum by (GPU_I_PROFILE) (DCGM_FI_DEV_FB_USED)",
        "{{GPU_I_PROFILE}}",
        {},
    ),
    (
        "Reconfigurations per hour (timeline)",
        "timeseries",
        "sum by (pool, result) (rate(migc_reconfigurations_total[1h])) * 3600",
        "{{pool}} {{result}}",
        {},
    ),
    (
        "Reconfiguration duration p95",
        "timeseries",
        "histogram_quantile(0.95, sum by (le) (rate(migc_reconfiguration_duration_seconds_bucket[6h])))",
        "p95",
        {"fieldConfig": {"defaults": {"unit": "s"}, "overrides": []}},
    ),
    ("Nodes by rollout phase", "timeseries", "sum by (phase) (migc_nodes)", "{{phase}}", {}),
    ("Nodes whose layout drifts from the assignment", "stat", "max(migc_layout_drift_nodes)", "drift", {}),
    (
        "GPU pods pending",
        "stat",
        f"count(max by (namespace, pod) (kube_pod_container_resource_requests{{{GPU_RESOURCES}}} "
        f"and on(namespace, pod) ({PENDING})))",
        "pending",
        {},
    ),
    (
        "Pod scheduling latency p95 by requested GPU resource",
        "timeseries",
        "quantile by (resource) (0.95, (kube_pod_status_scheduled_time - kube_pod_created) "
        "* on(namespace, pod) group_left(resource) "
        "(max by (namespace, pod, resource) "
        f"(kube_pod_container_resource_requests{{{GPU_RESOURCES}}}) > bool 0))",
        "{{resource}}",
        {"fieldConfig": {"defaults": {"unit": "s"}, "overrides": []}},
    ),
    (
        "Time GPU pods spent pending p95 by profile (migc controller)",
        "timeseries",
        "histogram_quantile(0.95, sum by (profile, le) (rate(migc_gpu_pod_pending_seconds_bucket[1h])))",
        "{{profile}}",
        {"fieldConfig": {"defaults": {"unit": "s"}, "overrides": []}},
    ),
    (
        "Longest wait of a pending GPU pod",
        "timeseries",
        "max((time() - kube_pod_created) and on(namespace, pod) "
        f"(kube_pod_container_resource_requests{{{GPU_RESOURCES}}} > 0) and on(namespace, pod) ({PENDING}))",
        "longest wait",
        {"fieldConfig": {"defaults": {"unit": "s"}, "overrides": []}},
    ),
)


def dashboard(cluster: Cluster) -> Obj:
    """The Grafana dashboard JSON model (schemaVersion 39, Grafana 10/11)."""
    panels = [
        _panel(i + 1, title, kind, expr, legend, (i % 2) * 12, (i // 2) * 8, **extra)
        for i, (title, kind, expr, legend, extra) in enumerate(PANELS)
    ]
    return {
        "uid": f"migc-{cluster.name}"[:40],
        "title": f"migc GPU fleet — {cluster.name}",
        "tags": ["migc", "gpu", "mig"],
        "timezone": "utc",
        "schemaVersion": 39,
        "version": 1,
        "editable": False,
        "refresh": "1m",
        "time": {"from": "now-24h", "to": "now"},
        "templating": {
            "list": [
                {
                    "name": "datasource",
                    "label": "Prometheus",
                    "type": "datasource",
                    "query": "prometheus",
                    "current": {},
                    "hide": 0,
                }
            ]
        },
        "annotations": {"list": []},
        "links": [],
        "panels": panels,
    }


def _rule(
    alert: str,
    expr: str,
    duration: str,
    severity: str,
    summary: str,
    description: str,
    labels: dict[str, str] | None = None,
) -> Obj:
    return {
        "alert": alert,
        "expr": expr,
        "for": duration,
        "labels": {"severity": severity, **(labels or {})},
        "annotations": {"summary": summary, "description": description},
    }


def rules(policy: Policy, cluster: Cluster) -> list[Obj]:
    out = [
        _rule(
            "MigcNodeReconfigurationFailed",
            'max(migc_nodes{phase="Failed"}) > 0',
            "5m",
            "critical",
            "A node's MIG reconfiguration failed",
            "{{ $value }} node(s) are in phase Failed; `migc status` shows which and the last error "
            "(annotation migc.dev/last-error). Set migc.dev/retry=true on the node after fixing it.",
        ),
        _rule(
            "MigcRolloutNotFinishing",
            'sum(migc_nodes{phase=~"Cordoned|Draining|Applying|Verifying"}) > 0',
            ROLLOUT_STUCK_FOR,
            "warning",
            "A MIG rollout has not finished for an hour",
            "Nodes have been cordoned, draining, applying or verifying continuously for "
            f"{ROLLOUT_STUCK_FOR}; a drain blocked by a PodDisruptionBudget or a MIG manager stuck in "
            "pending are the usual causes.",
        ),
        _rule(
            "MigcLayoutDriftPersisting",
            "max(migc_layout_drift_nodes) > 0",
            "30m",
            "warning",
            "Nodes do not carry the layout migc assigned",
            "{{ $value }} node(s) have differed from the NodeAssignment for 30 minutes.",
        ),
        _rule(
            "MigcGpuPodPendingTooLong",
            "max by (namespace, pod) ((time() - kube_pod_created) and on(namespace, pod) "
            f"(kube_pod_container_resource_requests{{{GPU_RESOURCES}}} > 0) and on(namespace, pod) "
            f"({PENDING})) > {PENDING_ALERT_SECONDS}",
            "0m",
            "warning",
            "A GPU pod has been pending for more than 15 minutes",
            "Pod {{ $labels.namespace }}/{{ $labels.pod }} has waited {{ $value | humanizeDuration }} "
            "for a GPU resource.",
        ),
    ]
    tenants = [t for t in policy.tenants if t.namespaces]
    for tenant in tenants:
        guaranteed = dict(tenant.guaranteed.profiles)
        if tenant.guaranteed.gpus:
            guaranteed[WHOLE_GPU] = tenant.guaranteed.gpus
        for profile, amount in sorted(guaranteed.items()):
            resource = _resource(profile)
            borrowers = []
            for other in tenants:
                if other.name == tenant.name:
                    continue
                own = dict(other.guaranteed.profiles).get(profile, 0)
                if profile == WHOLE_GPU:
                    own = other.guaranteed.gpus
                borrowers.append(f"({_held(resource, other.namespaces)} > {own})")
            if not borrowers:
                continue
            starved = (
                f"({_held(resource, tenant.namespaces, PENDING)} > 0) "
                f"and on() (({_held(resource, tenant.namespaces)} or vector(0)) < {amount})"
            )
            out.append(
                _rule(
                    "MigcTenantStarvedWhileOthersBorrow",
                    f"{starved} and on() ({' or on() '.join(borrowers)})",
                    "10m",
                    "warning",
                    f"Tenant {tenant.name} waits for {profile} below its guarantee while others borrow",
                    f"{tenant.name} holds fewer than its guaranteed {amount} {resource} and has pods "
                    "pending for it, while another tenant holds more than its own guarantee of it.",
                    # One rule per (tenant, resource): the labels keep them distinct, so Alertmanager
                    # does not merge two starving tenants into one alert (promtool --lint duplicates).
                    {"tenant": tenant.name, "resource": resource},
                )
            )
    for r in out:
        r["labels"] = {**r["labels"], "migc_cluster": cluster.name}
    return out


def monitoring_objects(policy: Policy, cluster: Cluster) -> list[tuple[str, Obj]]:
    board = dashboard(cluster)
    configmap: Obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(DASHBOARD_CONFIGMAP, SYSTEM_NAMESPACE, extra_labels=DASHBOARD_LABEL),
        "data": {f"migc-{cluster.name}.json": dump_json(board)},
    }
    rule: Obj = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": metadata(RULE_NAME, SYSTEM_NAMESPACE),
        "spec": {"groups": [{"name": "migc.rules", "rules": rules(policy, cluster)}]},
    }
    return [
        (f"monitoring/configmap-{DASHBOARD_CONFIGMAP}.yaml", configmap),
        (f"monitoring/prometheusrule-{RULE_NAME}.yaml", rule),
    ]
