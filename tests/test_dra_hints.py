"""Pods that keep asking ``nvidia.com/gpu: 1`` with hints: the rendered MutatingAdmissionPolicy, evaluated.

The CEL is evaluated by a real CEL implementation (``common-expression-language``) the way the API
server runs a MutatingAdmissionPolicy (k8s.io/apiserver pkg/admission/plugin/policy/mutating: match
conditions, then variables by name, then each mutation's JSON Patch applied in order). Added to the
library, as in tests/unit/compiler/render/test_admission.py, only what Kubernetes' CEL environment
provides and it lacks: the strings extension's ``split`` and ``trim`` (cel-go ext/strings.go, in the
base environment of k8s.io/apiserver pkg/cel/environment/base.go). ``JSONPatch{op: …}`` values (the
Kubernetes-typed object the mutation returns) are read as maps with the same fields; the patch is then
applied to the pod and the result validated against the Kubernetes schema.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import cel
import kubernetes_validate
import pytest
import yaml

from compiler.catalog import load_catalog
from compiler.model import Policy
from compiler.pipeline import load_and_validate
from compiler.render import render
from compiler.solve.pipeline import solve

ROOT = Path(__file__).resolve().parents[1]
MAP_PATH = "east/tenants/search/mutatingadmissionpolicy-migc-gpu-hints-search.yaml"
Obj = dict[str, Any]


def _render(policy: Policy) -> dict[str, bytes]:
    catalog = load_catalog()
    return render(policy, solve(policy, catalog), catalog, source_label="x")


def _policy(root: Path) -> Policy:
    policy, diags = load_and_validate([root])
    assert policy is not None, [d.as_dict() for d in diags]
    return policy


@pytest.fixture(scope="module")
def mutating() -> Obj:
    doc: Obj = yaml.safe_load(_render(_policy(ROOT / "examples" / "dra"))[MAP_PATH])
    return doc


def _context(values: dict[str, Any]) -> cel.Context:
    return cel.Context(
        variables=values, functions={"split": lambda s, sep: s.split(sep), "trim": lambda s: s.strip()}
    )


def _typed(expression: str) -> str:
    return (
        expression.replace("JSONPatch{op: ", "{'op': ")
        .replace(", path: ", ", 'path': ")
        .replace(", value: ", ", 'value': ")
    )


def _pointer(path: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in path.lstrip("/").split("/")]


def _apply(pod: Obj, ops: list[Obj]) -> Obj:
    """RFC 6902 add/remove on object members and list indices (what the policy emits)."""
    out = copy.deepcopy(pod)
    for op in ops:
        *parents, last = _pointer(op["path"])
        node: Any = out
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if op["op"] == "remove":
            del node[last]  # a missing member is an error, as in RFC 6902
        else:
            node[last] = op["value"]
    return out


def admit(policy: Obj, pod: Obj) -> Obj:
    """The pod after the policy: unchanged when a match condition is false."""
    spec = policy["spec"]
    values: dict[str, Any] = {"object": pod}
    for cond in spec["matchConditions"]:
        if cel.evaluate(cond["expression"], _context(values)) is not True:
            return pod
    variables: dict[str, Any] = {}
    for var in spec["variables"]:
        variables[var["name"]] = cel.evaluate(var["expression"], _context({**values, "variables": variables}))
    for mutation in spec["mutations"]:
        ops = cel.evaluate(
            _typed(mutation["jsonPatch"]["expression"]), _context({**values, "variables": variables})
        )
        pod = _apply(pod, list(ops))
        values["object"] = pod
    return pod


def pod(annotations: dict[str, str] | None = None, gpus: Any = "1", requests: bool = False) -> Obj:
    resources: Obj = {"limits": {"nvidia.com/gpu": gpus, "cpu": "2"}}
    if requests:
        resources["requests"] = {"nvidia.com/gpu": gpus}
    meta: Obj = {"name": "nb", "namespace": "search"}
    if annotations is not None:
        meta["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "containers": [
                {"name": "sidecar", "image": "proxy"},
                {"name": "notebook", "image": "jupyter", "resources": resources},
            ]
        },
    }


def limits(p: Obj) -> Obj:
    out: Obj = p["spec"]["containers"][1]["resources"]["limits"]
    return out


PREF = "migc.dev/profile-preference"
MEM = "migc.dev/gpu-memory-gb"


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({PREF: "1g.10gb,2g.20gb"}, "nvidia.com/mig-1g.10gb"),
        ({PREF: " 2g.20gb , 1g.10gb"}, "nvidia.com/mig-2g.20gb"),  # the order is the user's; spaces trimmed
        ({PREF: "3g.40gb,2g.20gb"}, "nvidia.com/mig-2g.20gb"),  # 3g.40gb: not in the tenant's quota
        ({MEM: "12"}, "nvidia.com/mig-2g.20gb"),  # smallest profile with at least 12 GB
        ({MEM: "9.5"}, "nvidia.com/mig-1g.10gb"),
        ({PREF: "7g.80gb", MEM: "20"}, "nvidia.com/mig-2g.20gb"),  # unusable preference: the memory hint
    ],
)
def test_a_hinted_pod_asking_one_gpu_gets_the_mig_profile(
    mutating: Obj, annotations: dict[str, str], expected: str
) -> None:
    after = admit(mutating, pod(annotations))
    assert limits(after) == {"cpu": "2", expected: "1"}
    assert after["spec"]["containers"][0] == {"name": "sidecar", "image": "proxy"}  # no GPU: untouched
    kubernetes_validate.validate(after, "1.36.0", strict=True)


@pytest.mark.parametrize(
    ("annotations", "gpus"),
    [
        (None, "1"),  # no hint: the match condition is false
        ({}, "1"),
        ({PREF: "3g.40gb"}, "1"),  # nothing usable and no memory hint: unchanged (a whole GPU, as written)
        ({MEM: "40"}, "1"),  # larger than any profile the tenant may use
        ({MEM: "twelve"}, "1"),  # not a number
        ({PREF: "1g.10gb"}, "2"),  # two GPUs are not one slice
    ],
)
def test_pods_the_policy_leaves_as_written(
    mutating: Obj, annotations: dict[str, str] | None, gpus: str
) -> None:
    before = pod(annotations, gpus)
    assert admit(mutating, before) == before


def test_requests_are_rewritten_with_the_limits(mutating: Obj) -> None:
    after = admit(mutating, pod({PREF: "2g.20gb"}, requests=True))
    resources = after["spec"]["containers"][1]["resources"]
    assert resources["requests"] == {"nvidia.com/mig-2g.20gb": "1"}  # extended resources: requests == limits
    assert (
        resources["limits"]["nvidia.com/mig-2g.20gb"] == "1" and "nvidia.com/gpu" not in resources["limits"]
    )
    kubernetes_validate.validate(after, "1.36.0", strict=True)


def test_an_integer_quantity_is_matched_too(mutating: Obj) -> None:
    assert limits(admit(mutating, pod({PREF: "1g.10gb"}, gpus=1))) == {
        "cpu": "2",
        "nvidia.com/mig-1g.10gb": "1",
    }


def test_the_binding_covers_the_tenants_namespaces_only() -> None:
    files = _render(_policy(ROOT / "examples" / "dra"))
    binding = yaml.safe_load(
        files[MAP_PATH.replace("mutatingadmissionpolicy-", "mutatingadmissionpolicybinding-")]
    )
    expr = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
    assert expr == [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["search"]}]
    assert binding["spec"]["policyName"] == "migc-gpu-hints-search"
    assert not [p for p in files if "mutatingadmissionpolicy-migc-gpu-hints-research" in p]  # not opted in


def test_kubernetes_1_34_gets_the_v1beta1_api_and_it_validates(tmp_path: Path) -> None:
    src = tmp_path / "policy"
    shutil.copytree(ROOT / "examples" / "dra", src)
    fleet = (src / "fleet.yaml").read_text()
    (src / "fleet.yaml").write_text(
        fleet.replace('kubernetesVersion: "1.36"', 'kubernetesVersion: "1.34"', 1)
    )
    policy, diags = load_and_validate([src])
    assert policy is not None
    assert [d.code for d in diags] == ["MIGC192"]  # beta: the gate and the v1beta1 API must be on
    files = _render(policy)
    for path in (MAP_PATH, MAP_PATH.replace("mutatingadmissionpolicy-", "mutatingadmissionpolicybinding-")):
        doc = yaml.safe_load(files[path])
        assert doc["apiVersion"] == "admissionregistration.k8s.io/v1beta1"
        kubernetes_validate.validate(doc, "1.34.0", strict=True)
