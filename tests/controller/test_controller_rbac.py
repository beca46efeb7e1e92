"""The deploy manifests: valid Kubernetes objects, and RBAC rules that cover exactly the API calls
the controller makes (recorded by the emulator), no more and no fewer."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from conftest import OBSERVED, Cluster, assignment, rbac_tuples
from emulation import CONFIGMAPS, assignment_configmap
from kubernetes_validate.utils import latest_version

DEPLOY = Path(__file__).resolve().parents[2] / "controller" / "deploy"


def _objects() -> list[dict[str, Any]]:
    docs = []
    for path in sorted(DEPLOY.glob("*.yaml")):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def _rules(kind: str) -> set[tuple[str, str, str, str]]:
    out = set()
    for obj in _objects():
        if obj["kind"] != kind:
            continue
        for rule in obj["rules"]:
            for group, res, verb in itertools.product(rule["apiGroups"], rule["resources"], rule["verbs"]):
                resource, _, sub = res.partition("/")
                out.add((group, resource, sub, verb))
    return out


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
    ctl = cluster.start(max_attempts=1, lease_duration=0.3)
    cluster.settle(ctl, 3)
    cluster.set_assignment(assignment(dict.fromkeys(nodes, "all-3g.40gb")))
    cluster.wait(
        lambda: (
            cluster.converged({"n0": "all-3g.40gb", "n1": "all-3g.40gb"})
            and cluster.phases()["n2"] == "Failed"
        )
    )
    cluster.stop_all()  # graceful: releases the Lease


def test_rbac_rules_cover_exactly_the_calls_the_controller_makes(cluster: Cluster) -> None:
    _kitchen_sink(cluster)
    calls = cluster.controller_calls()
    made = rbac_tuples(calls)
    granted = _rules("ClusterRole") | _rules("Role")
    assert made == granted, json.dumps({"missing": sorted(made - granted), "unused": sorted(granted - made)})
    # Every scenario of this session stayed within the rules too.
    assert granted >= OBSERVED, sorted(OBSERVED - granted)

    # Role rules are namespaced and limited by name: every call to a Role's resource is granted
    # by a rule of a Role in the call's namespace, and by name where the rule names objects.
    roles = [o for o in _objects() if o["kind"] == "Role"]
    role_resources = {r for role in roles for rule in role["rules"] for r in rule["resources"]}
    for c in calls:
        if c.resource not in role_resources:
            continue
        rules = [
            rule
            for role in roles
            if role["metadata"]["namespace"] == c.namespace
            for rule in role["rules"]
            if c.resource in rule["resources"] and c.verb in rule["verbs"]
        ]
        assert rules, f"no Role in namespace {c.namespace} grants {c}"
        if any("resourceNames" not in rule for rule in rules):
            continue
        allowed = {n for rule in rules for n in rule["resourceNames"]}
        if c.verb == "watch":  # a name-restricted watch must select the object by name
            assert c.params.get("fieldSelector") in {f"metadata.name={n}" for n in allowed}, c
        else:
            assert c.name in allowed, c


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
