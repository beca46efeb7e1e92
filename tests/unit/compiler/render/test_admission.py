"""Per-pod GPU limits: the rendered ValidatingAdmissionPolicies, evaluated as the API server would.

The CEL expressions are evaluated by a real CEL implementation (``common-expression-language``, the
Rust ``cel`` crate), not re-implemented here. Only what Kubernetes adds around CEL is reproduced,
each piece from its upstream source:

* ``sum()`` and ``max()`` on lists: kubernetes ``staging/src/k8s.io/apiserver/pkg/cel/library/lists.go``
  (``max`` of an empty list is an error there, so the policy must never call it on one);
* the admission flow: kubernetes ``staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/``
  (``validator.go``: variables are evaluated by name and may use earlier ones, every validation must
  be true, a false one denies with its ``messageExpression``; ``Deny`` in the binding's
  ``validationActions`` rejects the request);
* ``matchResources.namespaceSelector``: a standard label selector on the namespace's labels, where the
  API server always sets ``kubernetes.io/metadata.name`` (kubernetes ``pkg/registry/core/namespace``).

Pods are written the way the API server hands them to admission: quantities are strings (``"2"``),
and ``resources`` may be ``{}`` or absent in a hand-written manifest.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cel
import pytest
import yaml
from test_render_support import default_solution, policy

from compiler.catalog import load_catalog
from compiler.model import Quota, Tenant
from compiler.render import render
from compiler.render.admission import admission_objects, per_pod_limits, policy_name, variable_name


def _k8s_sum(items: list[int]) -> int:
    # lists.go: sum of a list of numbers, 0 for an empty list.
    return sum(items)


def _k8s_max(items: list[int]) -> int:
    # lists.go: max of an empty list is an error ("max of empty list").
    if not items:
        raise ValueError("max of empty list")
    return max(items)


def _context(values: Mapping[str, Any]) -> cel.Context:
    return cel.Context(variables=dict(values), functions={"sum": _k8s_sum, "max": _k8s_max})


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    messages: tuple[str, ...]
    policies: tuple[str, ...]  # the policies that applied


def _selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        op, key, values = expr["operator"], expr["key"], expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _matches_pod_create(policy_obj: Mapping[str, Any]) -> bool:
    for rule in policy_obj["spec"]["matchConstraints"]["resourceRules"]:
        api = "" in rule["apiGroups"] and "v1" in rule["apiVersions"] and "pods" in rule["resources"]
        if api and ("CREATE" in rule["operations"] or "*" in rule["operations"]):
            return True
    return False


@functools.cache
def _parsed(data: bytes) -> Any:
    """One YAML parse per rendered file, however many pods are admitted against it: ``admit`` only
    reads what it gets (issue 27: re-parsing the tree for every pod was most of this file's time)."""
    return yaml.safe_load(data)


def admit(files: Mapping[str, bytes], namespace: str, pod: Mapping[str, Any]) -> Verdict:
    """Run every rendered policy whose binding selects ``namespace`` on a pod CREATE."""
    docs = (_parsed(data) for path, data in files.items() if path.endswith(".yaml"))
    objs = [o for o in docs if isinstance(o, dict)]  # not the JSON 6902 patches (lists) beside them
    policies = {o["metadata"]["name"]: o for o in objs if o.get("kind") == "ValidatingAdmissionPolicy"}
    bindings = [o for o in objs if o.get("kind") == "ValidatingAdmissionPolicyBinding"]
    ns_labels = {"kubernetes.io/metadata.name": namespace}
    messages: list[str] = []
    applied: list[str] = []
    for binding in bindings:
        spec = binding["spec"]
        if not _selector_matches(spec["matchResources"]["namespaceSelector"], ns_labels):
            continue
        pol = policies[spec["policyName"]]
        if not _matches_pod_create(pol):
            continue
        applied.append(pol["metadata"]["name"])
        assert spec["validationActions"] == ["Deny"]
        try:
            variables: dict[str, Any] = {}
            for var in pol["spec"]["variables"]:
                variables[var["name"]] = cel.evaluate(
                    var["expression"], _context({"object": pod, "variables": variables})
                )
            for rule in pol["spec"]["validations"]:
                ctx = _context({"object": pod, "variables": variables})
                if cel.evaluate(rule["expression"], ctx) is not True:
                    messages.append(str(cel.evaluate(rule["messageExpression"], ctx)))
        except (RuntimeError, ValueError, TypeError) as err:
            # validator.go: an evaluation error is decided by failurePolicy (Fail: the request is denied).
            assert pol["spec"]["failurePolicy"] == "Fail"
            messages.append(f"expression error: {err}")
    return Verdict(not messages, tuple(messages), tuple(applied))


def container(name: str, limits: Mapping[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "image": "busybox", **extra}
    out["resources"] = {"limits": dict(limits)} if limits is not None else {}
    return out


def pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


MIG_1G = "nvidia.com/mig-1g.10gb"
MIG_2G = "nvidia.com/mig-2g.20gb"


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    # search: burst 1g.10gb=12, 2g.20gb=2 (namespaces search, search-dev); research: gpus=6.
    return render(policy(), default_solution(), load_catalog())


def test_no_limitrange_and_one_policy_per_tenant(files: dict[str, bytes]) -> None:
    kinds = [yaml.safe_load(d).get("kind") for p, d in files.items() if p.endswith(".yaml")]
    assert "LimitRange" not in kinds
    pol = yaml.safe_load(files["east/tenants/search/validatingadmissionpolicy-migc-gpu-search.yaml"])
    assert [v["expression"] for v in pol["spec"]["validations"]] == [
        "variables.nvidia_com_mig_1g_10gb <= 12",
        "variables.nvidia_com_mig_2g_20gb <= 2",
    ]
    binding = yaml.safe_load(
        files["east/tenants/search/validatingadmissionpolicybinding-migc-gpu-search.yaml"]
    )
    assert binding["spec"]["policyName"] == "migc-gpu-search"
    for variable in pol["spec"]["variables"]:
        cel.compile(variable["expression"])  # every expression parses as CEL


@pytest.mark.parametrize("namespace", ["search", "search-dev", "research"])
def test_cpu_only_pod_is_admitted(files: dict[str, bytes], namespace: str) -> None:
    cpu_only = pod(container("app", {"cpu": "2", "memory": "4Gi"}), container("log"))
    verdict = admit(files, namespace, cpu_only)
    assert verdict.policies, "a policy must apply in every tenant namespace"
    assert verdict.allowed, verdict.messages
    # resources missing altogether (a hand-written manifest) is no error either
    bare = pod({"name": "app", "image": "busybox"})
    assert admit(files, namespace, bare).allowed


def test_one_allowed_gpu_resource_is_admitted(files: dict[str, bytes]) -> None:
    assert admit(files, "search", pod(container("app", {MIG_1G: "1", "cpu": "1"}))).allowed
    assert admit(files, "search", pod(container("app", {MIG_1G: "12"}))).allowed
    assert admit(files, "search-dev", pod(container("app", {MIG_2G: "2"}))).allowed
    # An integer quantity (as written in YAML) reads the same as the API server's string.
    assert admit(files, "search", pod(container("app", {MIG_1G: 3}))).allowed
    # A request without a limit is counted too (the API server fills the limit for extended resources).
    requested = pod({"name": "a", "image": "x", "resources": {"requests": {MIG_1G: "13"}}})
    assert not admit(files, "search", requested).allowed


def test_over_the_limit_is_rejected_with_a_clear_message(files: dict[str, bytes]) -> None:
    verdict = admit(files, "search", pod(container("app", {MIG_1G: "13"})))
    assert not verdict.allowed
    assert verdict.messages == (
        "pod asks for 13 nvidia.com/mig-1g.10gb; tenant search allows at most 12 per pod "
        "(its quota, or the most one node offers)",
    )
    # research may burst to 6 whole GPUs (nodes offer 8): its quota is the per-pod bound.
    research = admit(files, "research", pod(container("app", {"nvidia.com/gpu": "7"})))
    assert not research.allowed and "allows at most 6 per pod" in research.messages[0]
    assert admit(files, "research", pod(container("app", {"nvidia.com/gpu": "6"}))).allowed


def test_multi_container_pod_is_summed(files: dict[str, bytes]) -> None:
    fits = pod(container("a", {MIG_1G: "6"}), container("b", {MIG_1G: "6"}), container("c", {"cpu": "1"}))
    assert admit(files, "search", fits).allowed
    over = pod(container("a", {MIG_1G: "7"}), container("b", {MIG_1G: "6"}))
    verdict = admit(files, "search", over)
    assert not verdict.allowed and verdict.messages[0].startswith("pod asks for 13 ")
    both = pod(container("a", {MIG_1G: "2", MIG_2G: "3"}))
    assert admit(files, "search", both).messages == (
        "pod asks for 3 nvidia.com/mig-2g.20gb; tenant search allows at most 2 per pod "
        "(its quota, or the most one node offers)",
    )


def test_init_containers_follow_the_effective_request_rule(files: dict[str, bytes]) -> None:
    # Plain init containers run one at a time before the app: max(init), not the sum.
    sequential = pod(container("app", {MIG_1G: "12"}), init=(container("i1", {MIG_1G: "12"}),))
    assert admit(files, "search", sequential).allowed
    too_big_init = pod(container("app", {"cpu": "1"}), init=(container("i1", {MIG_1G: "13"}),))
    assert not admit(files, "search", too_big_init).allowed
    # A sidecar (restartPolicy Always) keeps running beside the app: it adds up.
    sidecar = container("proxy", {MIG_1G: "1"}, restartPolicy="Always")
    with_sidecar = pod(container("app", {MIG_1G: "12"}), init=(sidecar,))
    verdict = admit(files, "search", with_sidecar)
    assert not verdict.allowed and verdict.messages[0].startswith("pod asks for 13 ")
    assert admit(files, "search", pod(container("app", {MIG_1G: "11"}), init=(sidecar,))).allowed


def test_a_quantity_int_cannot_read_is_denied_not_admitted(files: dict[str, bytes]) -> None:
    # The API server serialises 1000 as "1k", which int() cannot parse: the evaluation error is
    # decided by failurePolicy Fail, so the pod is refused (it is far over any limit anyway).
    verdict = admit(files, "search", pod(container("app", {MIG_1G: "1k"})))
    assert not verdict.allowed and verdict.messages[0].startswith("expression error")


def test_other_namespaces_and_unlisted_resources_are_left_alone(files: dict[str, bytes]) -> None:
    assert admit(files, "kube-system", pod(container("a", {MIG_1G: "99"}))).policies == ()
    # A GPU resource the tenant has no per-pod limit for is the ResourceQuota's business.
    assert admit(files, "search", pod(container("a", {"nvidia.com/mig-7g.80gb": "1"}))).allowed


GOLDEN = Path(__file__).resolve().parents[4] / "tests" / "golden"


def _golden_clusters() -> list[Path]:
    return sorted(p.parent for p in GOLDEN.glob("*/*/kustomization.yaml"))


@pytest.mark.parametrize("cluster", _golden_clusters(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_example_tenant_admits_legitimate_pods(cluster: Path) -> None:
    """The issue's probe: in every rendered example, every tenant namespace admits a CPU-only pod and one
    slice of each resource it may use, and refuses one more than its per-pod limit."""
    files = {p.relative_to(cluster).as_posix(): p.read_bytes() for p in cluster.rglob("*.yaml")}
    checked = 0
    for path, data in files.items():
        obj = yaml.safe_load(data)
        if not isinstance(obj, dict) or obj.get("kind") != "ValidatingAdmissionPolicyBinding":
            continue
        policy_obj = yaml.safe_load(files[path.replace("policybinding-", "policy-")])
        limits = {}
        for rule in policy_obj["spec"]["validations"]:
            var, most = rule["expression"].removeprefix("variables.").split(" <= ")
            resource = next(v for v in limits_of(policy_obj) if variable_name(v) == var)
            limits[resource] = int(most)
        for ns in obj["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"]:
            assert admit(files, ns, pod(container("app", {"cpu": "1", "memory": "1Gi"}))).allowed
            for resource, most in limits.items():
                assert admit(files, ns, pod(container("app", {resource: "1"}))).allowed, (ns, resource)
                over = admit(files, ns, pod(container("app", {resource: str(most + 1)})))
                assert not over.allowed and f"pod asks for {most + 1} {resource};" in over.messages[0]
                checked += 1
    quotas = [p for p in files if "/resourcequota-" in p]
    if quotas and all(p.endswith("resourcequota-migc-hami.yaml") for p in quotas):
        assert checked == 0  # HAMi-only tenants: quotas on HAMi's resource names, no per-pod MIG limits
    else:
        assert checked


def limits_of(policy_obj: dict[str, Any]) -> list[str]:
    """The resources a rendered policy names, read from its quoted map keys."""
    found: set[str] = set()
    for var in policy_obj["spec"]["variables"]:
        found.update(re.findall(r"'(nvidia\.com/[^']+)' in c\.resources\.limits", var["expression"]))
    return sorted(found)


def test_per_pod_limits_are_the_hard_limit_capped_by_what_one_node_offers() -> None:
    search = next(t for t in policy().tenants if t.name == "search")  # burst 12 x 1g.10gb, 2 x 2g.20gb
    assert per_pod_limits(search, {"1g.10gb": 56, "2g.20gb": 24}) == {
        "nvidia.com/mig-1g.10gb": 12,
        "nvidia.com/mig-2g.20gb": 2,
    }
    # one node offers at most 5: a pod asking more would stay Pending forever
    assert per_pod_limits(search, {"1g.10gb": 5, "2g.20gb": 0}) == {"nvidia.com/mig-1g.10gb": 5}
    none = Tenant("none", ("none",), "low", guaranteed=Quota(gpus=0))
    assert per_pod_limits(none, {"gpu": 8}) == {}
    assert admission_objects(none, {}) == []  # no limit: no policy, the ResourceQuota decides
    assert policy_name("search") == "migc-gpu-search"
    assert variable_name("nvidia.com/mig-1g.10gb+me") == "nvidia_com_mig_1g_10gb_me"
