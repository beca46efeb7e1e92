"""Declared against observed demand: GPU pods per tenant in a snapshot (``--snapshot``)."""

from __future__ import annotations

from compiler.advise.model import Finding
from compiler.model import Policy
from compiler.observe import Observation


def observed_findings(policy: Policy, observation: Observation) -> tuple[Finding, ...]:
    """MIGC515 for every tenant with more GPU pods in the snapshot than its workloads declare replicas."""
    owner = {ns: t.name for t in policy.tenants for ns in t.namespaces}
    pods: dict[str, int] = {}
    for pod in observation.pods:
        tenant = owner.get(pod.namespace)
        if tenant is not None and pod.requests:
            pods[tenant] = pods.get(tenant, 0) + 1
    declared: dict[str, int] = {}
    for w in policy.workloads:
        declared[w.tenant] = declared.get(w.tenant, 0) + w.replicas
    out = []
    for tenant in sorted(pods):
        if pods[tenant] > declared.get(tenant, 0):
            out.append(
                Finding(
                    "MIGC515",
                    "warning",
                    f"tenant {tenant}: {pods[tenant]} GPU pod(s) observed, {declared.get(tenant, 0)} "
                    "replica(s) declared; the sizing counts the declared ones",
                )
            )
    return tuple(out)
