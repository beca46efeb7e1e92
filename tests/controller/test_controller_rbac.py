"""The deploy manifests: valid Kubernetes objects, and RBAC rules that cover exactly the API calls
the controller makes (recorded by the emulator), no more and no fewer.

Coverage is computed here from one recorded run that makes every kind of call, so it does not depend
on which other tests ran first; that no scenario steps outside the rules is checked by the ``cluster``
fixture after each scenario (conftest.py)."""

from __future__ import annotations

import json
from typing import Any

import kubernetes_validate
import pytest
from conftest import (
    DEPLOY,
    Cluster,
    assignment,
    authorized,
    bound_rules,
    deploy_objects,
    granted_rbac,
    rbac_tuples,
)
from emulation import CONFIGMAPS, Call, assignment_configmap
from kubernetes_validate.utils import latest_version


def _objects() -> list[dict[str, Any]]:
    return deploy_objects()


def test_deploy_manifests_are_valid_kubernetes_objects() -> None:
    version = latest_version()
    kinds = []
    for obj in _objects():
        kinds.append(obj["kind"])
        if obj["apiVersion"] == "monitoring.coreos.com/v1":
            continue  # ServiceMonitor is a Prometheus Operator CRD: no upstream schema to check against
        kubernetes_validate.validate(obj, version, strict=True)
    assert sorted(kinds) == sorted(
        [
            "Namespace",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Role",
            "RoleBinding",
            "Deployment",
            "Service",
            "ServiceMonitor",
        ]
    )


def test_deployment_is_locked_down() -> None:
    (dep,) = [o for o in _objects() if o["kind"] == "Deployment"]
    pod = dep["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert c["resources"]["limits"] and c["resources"]["requests"]
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"


def _kitchen_sink(cluster: Cluster) -> None:
    """One run that exercises every kind of call: lease create/renew/release, an invalid
    assignment (Event on the ConfigMap), evictions, a failed node (Event on the Node)."""
    nodes = ["n0", "n1", "n2"]
    cluster.add_nodes(nodes, "all-1g.10gb")
    cluster.add_pod("train-0", "n1", namespace="ml")
    cm = assignment_configmap(assignment(dict.fromkeys(nodes, "all-3g.40gb")))
    cm["data"]["assignment.json"] = "{broken"
    cluster.emu.upsert(CONFIGMAPS, "migc-system", "migc-assignment", cm)
    cluster.mig.per_node["n2"] = "failed"
    ctl = cluster.start(failures__max_attempts=1, leader__lease_duration=0.3)
    cluster.settle(ctl, 3)
    cluster.set_assignment(assignment(dict.fromkeys(nodes, "all-3g.40gb")))
    cluster.wait(
        lambda: (
            cluster.converged({"n0": "all-3g.40gb", "n1": "all-3g.40gb"})
            and cluster.phases()["n2"] == "Failed"
        )
    )
    cluster.stop_all()  # graceful: releases the Lease


def _dra_rollout(cluster: Cluster) -> None:
    """A static DRA node drained per GPU (get resource.k8s.io resourceclaims) and verified from its
    ResourceSlices (list resource.k8s.io resourceslices)."""
    from emulation import PODS, RESOURCECLAIMS, allocated_claim, claimed_pod
    from test_controller_dra import add_dra_nodes, dra_assignment, dra_setup, draplan, set_draplan

    dra_setup(cluster)
    add_dra_nodes(cluster, ["h100-0"], "dra-all-1g.10gb")
    # A pod holding a device through a ResourceClaim: read while the node drains (get resourceclaims).
    pod = claimed_pod("embedder-0", "h100-0", "embedder-0-gpu", namespace="search")
    claim = allocated_claim("embedder-0-gpu", "search", "h100-0", ["gpu-0-mig-1g10gb-19-0"], pod=pod)
    cluster.emu.upsert(RESOURCECLAIMS, "search", "embedder-0-gpu", claim)
    cluster.emu.upsert(PODS, "search", "embedder-0", pod)
    target = {"h100-0": "dra-6gpu-whole_2gpu-balanced"}
    set_draplan(cluster, draplan(target))
    # The mig-parted ConfigMap keeps the node's current config (dra_setup's), so the controller
    # can tell which GPUs change.
    cluster.set_assignment(dra_assignment(target), mig_parted=False)
    cluster.start()
    cluster.wait(lambda: cluster.converged(target))
    cluster.stop_all()


def test_rbac_rules_cover_exactly_the_calls_the_controller_makes(cluster: Cluster) -> None:
    _kitchen_sink(cluster)
    _dra_rollout(cluster)
    calls = cluster.controller_calls()
    assert calls, "the emulator recorded no controller request: nothing to check RBAC against"
    made = rbac_tuples(calls)
    granted = granted_rbac()
    assert made == granted, json.dumps({"missing": sorted(made - granted), "unused": sorted(granted - made)})

    # Role rules are namespaced and limited by name: every call fits those limits too.
    rules = bound_rules()
    assert [c for c in calls if not authorized(c, rules)] == []
    assert any(r.names for r in rules) and any(r.namespace for r in rules)  # the limits exist to check


@pytest.mark.parametrize("kind", ["ClusterRole", "Role"])
def test_every_rule_says_why(kind: str) -> None:
    checked = 0
    for path in sorted(DEPLOY.glob("*.yaml")):
        body = path.read_text()
        if f"kind: {kind}\n" in body:
            for line_no, line in enumerate(body.splitlines()):
                if line.strip().startswith("- apiGroups:"):
                    above = body.splitlines()[line_no - 1].strip()
                    assert above.startswith("#"), f"{path.name}:{line_no + 1}: rule without a comment"
                    checked += 1
    assert checked >= 3


def _call(
    verb: str,
    resource: str,
    *,
    group: str = "",
    sub: str | None = None,
    ns: str | None = None,
    name: str | None = None,
    params: dict[str, str] | None = None,
) -> Call:
    return Call(0, verb, group, resource, sub, ns, name, None, params or {}, "migc-controller", False)


def test_the_rbac_model_follows_the_documented_authorizer_rules() -> None:
    rules = bound_rules()
    coord = "coordination.k8s.io"
    by_name = {"fieldSelector": "metadata.name=migc-assignment"}
    allowed = [
        _call("patch", "nodes", name="n0"),  # ClusterRole: any node
        _call("create", "pods", sub="eviction", ns="ml", name="train-0"),  # any namespace
        _call("get", "configmaps", ns="migc-system", name="migc-assignment"),
        # a shard of a sharded assignment: names vary with the fleet, so get is not name-limited
        _call("get", "configmaps", ns="migc-system", name="migc-assignment-a100-0-of-4"),
        _call("watch", "configmaps", ns="migc-system", params=by_name),
        # create cannot be limited by name: the Role's unrestricted create rule allows it
        _call("create", "leases", group=coord, ns="migc-system", name="migc-controller"),
        _call("patch", "leases", group=coord, ns="migc-system", name="migc-controller"),
    ]
    refused = [
        _call("delete", "nodes", name="n0"),  # verb not granted
        _call("watch", "configmaps", ns="migc-system", name="other"),  # resourceNames
        _call("list", "configmaps", ns="migc-system"),  # verb not granted
        _call("get", "configmaps", ns="default", name="migc-assignment"),  # Role is namespaced
        _call("watch", "configmaps", ns="migc-system"),  # name-restricted watch needs the field selector
        _call("list", "configmaps", ns="migc-system", params={"fieldSelector": "metadata.name=other"}),
        _call("patch", "leases", group=coord, ns="migc-system", name="someone-else"),
        _call("patch", "leases", group=coord, ns="kube-system", name="migc-controller"),
        _call("create", "pods", ns="ml", name="p"),  # pods/eviction does not grant pods
        _call("create", "leases", group=coord, ns="default", name="migc-controller"),
    ]
    assert [c for c in allowed if not authorized(c, rules)] == []
    assert [c for c in refused if authorized(c, rules)] == []
