"""Validate Kueue objects as a Kueue API server would: CRD schema, CRD CEL rules, webhook rules.

* Schema: the ``openAPIV3Schema`` of the served version from the vendored CRDs (tests/kueue/, see its
  README), checked with jsonschema. Unknown fields are errors, as with ``kubectl apply``'s strict field
  validation (objects without ``x-kubernetes-preserve-unknown-fields`` get ``additionalProperties:
  false``).
* CRD CEL rules (``x-kubernetes-validations``): evaluated with a real CEL library on the node they
  sit on (``self``); transition rules (``oldSelf``) only apply to updates and are skipped.
* Webhook rules: kubernetes-sigs/kueue ``pkg/webhooks/clusterqueue_webhook.go`` (v0.19.2)
  ``validateClusterQueueSpec``: resource names unique across groups, each flavor in one group only,
  each flavor's resources named like ``coveredResources`` in the same order, quantities non-negative,
  borrowing and lending limits only with a cohort, lending ≤ nominal, ≤ 256 flavors and covered
  resources, ≤ 512 flavor-resource combinations per group.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cel
import jsonschema
import yaml

KUEUE_VERSION = "v0.19.2"
CRD_DIR = Path(__file__).resolve().parent / "kueue"
PLURAL = {"ClusterQueue": "clusterqueues", "LocalQueue": "localqueues", "ResourceFlavor": "resourceflavors"}
KINDS = frozenset(PLURAL)

# k8s.io/apimachinery resource.Quantity, the grammar Kueue's CRDs also state as a pattern.
_QUANTITY = re.compile(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_SUFFIX = {
    "": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18, "m": 10**-3,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}  # fmt: skip


def quantity(value: int | str) -> float:
    """A Kubernetes quantity's value (enough precision for the comparisons the webhook makes)."""
    text = str(value)
    assert _QUANTITY.match(text), text
    m = re.match(r"^([+-]?[0-9.]+)([a-zA-Z]*)$", text)
    assert m is not None and m.group(2) in _SUFFIX, text
    return float(m.group(1)) * _SUFFIX[m.group(2)]


def _strict(schema: Any) -> Any:
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        open_object = "additionalProperties" in out or out.get("x-kubernetes-preserve-unknown-fields")
        if "properties" in out and not open_object:
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@functools.cache
def _served(kind: str, version: str) -> dict[str, Any]:
    path = CRD_DIR / f"kueue-{KUEUE_VERSION}-{PLURAL[kind]}.yaml"
    crd = yaml.safe_load(path.read_text(encoding="utf-8"))
    for v in crd["spec"]["versions"]:
        if v["name"] == version:
            assert v["served"], f"{kind} {version} is not served by Kueue {KUEUE_VERSION}"
            schema: dict[str, Any] = v["schema"]["openAPIV3Schema"]
            return schema
    raise AssertionError(f"Kueue {KUEUE_VERSION} has no {kind} {version}")


def _cel_rules(schema: Any, value: Any) -> Iterator[tuple[str, str, Any]]:
    """(rule, message, self) for every x-kubernetes-validations rule that applies to ``value``."""
    if not isinstance(schema, dict):
        return
    for rule in schema.get("x-kubernetes-validations", []):
        yield rule["rule"], rule.get("message", rule["rule"]), value
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key in value:
                yield from _cel_rules(sub, value[key])
    elif isinstance(value, list) and "items" in schema:
        for item in value:
            yield from _cel_rules(schema["items"], item)


def _size(value: Any) -> int:
    return len(value)


def schema_errors(obj: dict[str, Any]) -> list[str]:
    """Errors of the CRD schema and its CEL rules (create, not update)."""
    group, version = obj["apiVersion"].split("/")
    assert group == "kueue.x-k8s.io"
    schema = _served(obj["kind"], version)
    validator = jsonschema.Draft7Validator(_strict(schema))
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)]
    for rule, message, value in _cel_rules(schema, obj):
        if "oldSelf" in rule:
            continue
        # x.size() is the receiver form of size(x) in Kubernetes' CEL environment.
        ctx = cel.Context(variables={"self": value}, functions={"size": _size})
        if cel.evaluate(rule, ctx) is not True:
            errors.append(message)
    return errors


def webhook_errors(cq: dict[str, Any]) -> list[str]:
    """kueue pkg/webhooks/clusterqueue_webhook.go validateClusterQueueSpec, for what migc renders."""
    errors: list[str] = []
    spec = cq["spec"]
    has_cohort = bool(spec.get("cohortName"))
    groups = spec.get("resourceGroups", [])
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    for i, group in enumerate(groups):
        for name in group["coveredResources"]:
            if name in seen_resources:
                errors.append(f"resourceGroups[{i}]: duplicate covered resource {name}")
            seen_resources.add(name)
        combos = 0
        for flavor in group["flavors"]:
            if flavor["name"] in seen_flavors:
                errors.append(f"resourceGroups[{i}]: flavor {flavor['name']} in two resource groups")
            seen_flavors.add(flavor["name"])
            combos += len(flavor["resources"])
            for j, res in enumerate(flavor["resources"]):
                where = f"{flavor['name']}/{res['name']}"
                if j < len(group["coveredResources"]) and res["name"] != group["coveredResources"][j]:
                    errors.append(f"{flavor['name']}: {res['name']} must match the name in coveredResources")
                nominal = quantity(res["nominalQuota"])
                if nominal < 0:
                    errors.append(f"{where}: nominalQuota must be non-negative")
                for limit in ("borrowingLimit", "lendingLimit"):
                    if limit not in res:
                        continue
                    if quantity(res[limit]) < 0:
                        errors.append(f"{where}: {limit} must be non-negative")
                    if not has_cohort:
                        errors.append(f"{where}: {limit} must be nil when cohort is empty")
                if "lendingLimit" in res and quantity(res["lendingLimit"]) > nominal:
                    errors.append(f"{where}: lendingLimit must be <= nominalQuota")
        if combos > 512:
            errors.append(f"resourceGroups[{i}]: more than 512 flavor-resource combinations")
    if sum(len(g["flavors"]) for g in groups) > 256:
        errors.append("more than 256 flavors")
    if sum(len(g["coveredResources"]) for g in groups) > 256:
        errors.append("more than 256 covered resources")
    return errors


def kueue_errors(obj: dict[str, Any]) -> list[str]:
    errors = schema_errors(obj)
    if obj["kind"] == "ClusterQueue":
        errors += webhook_errors(obj)
    return errors
