"""Hand-built inputs for the controller's unit tests: plain Node/pod/ConfigMap dicts, a tiny
in-memory stand-in for ``controller.kube.Kube`` (no HTTP, no emulator), and a ``Context`` on it.

The stand-in applies a Node PATCH as a JSON merge patch (RFC 7386: ``None`` deletes a key,
lists are replaced as a whole), which is what ``Kube.patch_node`` asks the API server for, and
records every write so that a test asserts what the controller wrote, not what it remembers.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from controller import state as st
from controller.assignment import Assignment, parse
from controller.errors import ControllerError, NotFoundError, TemporaryError
from controller.kube import Kube
from controller.logs import get_logger
from controller.metrics import Metrics
from controller.reconciler.context import Context
from controller.settings import (
    ApiSettings,
    ApplySettings,
    DrainSettings,
    FailureSettings,
    LeaderSettings,
    LoopSettings,
    Settings,
)

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
MIG_PARTED = ("gpu-operator", "migc-mig-parted-config")
DEVICE_PLUGIN = "gpu-operator/migc-device-plugin-config"

# Settings with round numbers, so that expected deadlines are easy to compute by hand.
SETTINGS = Settings(
    api=ApiSettings(retry_backoff=1.0, retry_backoff_max=8.0, cluster="test"),
    drain=DrainSettings(grace_timeout=100.0, eviction_timeout=200.0, eviction_backoff=1.0),
    apply=ApplySettings(
        configmap_sync_delay=0.0, apply_timeout=600.0, reboot_timeout=900.0, verify_timeout=60.0
    ),
    failures=FailureSettings(backoff=300.0, max_attempts=2, max_failures=3),
    loop=LoopSettings(),
    leader=LeaderSettings(identity="ctl-test"),
)

CONFIGS: dict[str, dict[str, Any]] = {
    "all-1g.10gb": {
        "devices": [{"migEnabled": True, "profiles": {"1g.10gb": 7}}] * 2,
        "migStrategy": "mixed",
        "devicePluginConfig": "mixed",
        "resources": {"nvidia.com/mig-1g.10gb": 14},
    },
    "all-3g.40gb": {
        "devices": [{"migEnabled": True, "profiles": {"3g.40gb": 2}}] * 2,
        "migStrategy": "mixed",
        "devicePluginConfig": "mixed",
        "resources": {"nvidia.com/mig-3g.40gb": 4},
    },
    "whole": {
        "devices": [{"migEnabled": False, "profiles": {}}] * 2,
        "migStrategy": "none",
        "devicePluginConfig": "migc-whole-gpus",
        "resources": {"nvidia.com/gpu": 2},
    },
}


def revision(doc: Mapping[str, Any]) -> str:
    rest = {k: v for k, v in doc.items() if k != "revision"}
    return hashlib.sha256(json.dumps(rest, sort_keys=True).encode()).hexdigest()[:16]


def assignment_doc(
    nodes: Mapping[str, str],
    *,
    max_unavailable: int = 1,
    pool: str = "a100",
    cluster: str = "test",
    idle_surge: int | None = None,
) -> dict[str, Any]:
    """A valid single-ConfigMap assignment: one named pool, the configs its nodes use; the pool's
    ``idleSurge`` only where ``idle_surge`` is given (absent, as compiled before the field)."""
    doc: dict[str, Any] = {
        "apiVersion": "migc.dev/v1alpha1",
        "kind": "NodeAssignment",
        "cluster": cluster,
        "revision": "",
        "migConfigMap": {"namespace": MIG_PARTED[0], "name": MIG_PARTED[1]},
        "configs": {k: v for k, v in CONFIGS.items() if k in set(nodes.values())},
        "pools": [
            {
                "name": pool,
                "gpuModel": "A100-SXM4-80GB",
                "maxUnavailable": max_unavailable,
                "maintenanceWindows": [],
                "nodes": [{"name": n, "config": c} for n, c in sorted(nodes.items())],
            }
        ],
    }
    if idle_surge is not None:
        doc["pools"][0]["idleSurge"] = idle_surge
    doc["revision"] = revision(doc)
    return doc


def parsed(nodes: Mapping[str, str], **kw: Any) -> Assignment:
    """``assignment_doc`` as the controller holds it after parsing."""
    return parse(json.dumps(assignment_doc(nodes, **kw)))


def assignment_configmap(doc: Mapping[str, Any], **annotations: str) -> dict[str, Any]:
    """The assignment ConfigMap (migc-system/migc-assignment) holding ``doc``."""
    return configmap("migc-system", "migc-assignment", {"assignment.json": json.dumps(doc)}, **annotations)


def configmap(namespace: str, name: str, data: Mapping[str, str], **annotations: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": dict(data)}


def gpu_operator_configmaps(configs: Iterable[str] = CONFIGS) -> list[dict[str, Any]]:
    """The mig-parted ConfigMap defining ``configs`` and the device-plugin ConfigMap with the
    device-plugin config names they use (only the names matter to the controller)."""
    names = sorted(configs)
    mig = {"version": "v1", "mig-configs": {n: [{"devices": "all", "mig-enabled": True}] for n in names}}
    dp_ns, dp_name = DEVICE_PLUGIN.split("/")
    dps = sorted({CONFIGS[n]["devicePluginConfig"] for n in names})
    return [
        configmap(*MIG_PARTED, {"config.yaml": json.dumps(mig)}),
        configmap(dp_ns, dp_name, dict.fromkeys(dps, "version: v1\n")),
    ]


def node(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    unschedulable: bool = False,
    taints: list[dict[str, Any]] | None = None,
    allocatable: Mapping[str, str] | None = None,
    mig_capable: bool = True,
) -> dict[str, Any]:
    """A Node object as the API serves it (camelCase JSON)."""
    lab = {st.MIG_CAPABLE: "true"} if mig_capable else {}
    lab.update(labels or {})
    spec: dict[str, Any] = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": lab,
            "annotations": dict(annotations or {}),
            "resourceVersion": "1",
        },
        "spec": spec,
        "status": {"allocatable": {"cpu": "64", **(allocatable or {})}},
    }


def in_flight(
    name: str,
    phase: st.Phase,
    target: str,
    *,
    since: dt.datetime = NOW,
    labels: Mapping[str, str] | None = None,
    allocatable: Mapping[str, str] | None = None,
    mig_capable: bool = True,
    extra: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A node migc cordoned and moved to ``phase`` on its way to ``target`` (pool a100);
    ``extra``: more annotations."""
    ann = {
        st.PHASE: phase.value,
        st.PHASE_SINCE: st.fmt_time(since),
        st.STARTED_AT: st.fmt_time(since),
        st.TARGET: target,
        st.POOL: "a100",
        st.ATTEMPTS: "0",
        st.CORDONED: "true",
        **(extra or {}),
    }
    return node(
        name,
        labels=labels,
        annotations=ann,
        unschedulable=True,
        allocatable=allocatable,
        mig_capable=mig_capable,
    )


def pod(
    name: str,
    node_name: str,
    *,
    resource: str | None = "nvidia.com/gpu",
    daemonset: bool = False,
    phase: str = "Running",
    namespace: str = "default",
    **meta: Any,
) -> dict[str, Any]:
    limits = {resource: "1"} if resource else {}
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, **meta}
    if daemonset:
        metadata["ownerReferences"] = [{"kind": "DaemonSet", "name": "ds"}]
    return {
        "metadata": metadata,
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "resources": {"limits": limits}}]},
        "status": {"phase": phase},
    }


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, Mapping) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


class FakeKube(Kube):
    """The ``Kube`` interface over dicts in memory; every write is recorded in ``writes``."""

    def __init__(
        self,
        nodes: Iterable[Mapping[str, Any]] = (),
        pods: Iterable[Mapping[str, Any]] = (),
        configmaps: Iterable[Mapping[str, Any]] = (),
    ) -> None:
        self.dry_run = False
        self.nodes: dict[str, dict[str, Any]] = {n["metadata"]["name"]: copy.deepcopy(dict(n)) for n in nodes}
        self.pods: list[dict[str, Any]] = [copy.deepcopy(dict(p)) for p in pods]
        self.configmaps: dict[tuple[str, str], dict[str, Any]] = {
            (c["metadata"]["namespace"], c["metadata"]["name"]): copy.deepcopy(dict(c)) for c in configmaps
        }
        self.slices: list[Any] = []
        self.leases: dict[tuple[str, str], dict[str, Any]] = {}
        self.writes: list[tuple[str, str, dict[str, Any]]] = []  # (verb, object, body)
        self.events: list[dict[str, Any]] = []
        self.evictions: list[tuple[str, str]] = []
        self.evict_errors: dict[tuple[str, str], ControllerError] = {}
        self.patch_errors: dict[str, ControllerError] = {}
        self.event_error: ControllerError | None = None
        self.lease_error: ControllerError | None = None
        self.reads = 0

    # --- reads -------------------------------------------------------------------------------
    def get_configmap(self, namespace: str, name: str) -> dict[str, Any]:
        self.reads += 1
        try:
            return copy.deepcopy(self.configmaps[(namespace, name)])
        except KeyError:
            raise NotFoundError(f"get configmap {namespace}/{name}: HTTP 404", status=404) from None

    def list_nodes(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(n) for _, n in sorted(self.nodes.items())]

    def list_pods(self, node: str | None = None) -> list[dict[str, Any]]:
        return [copy.deepcopy(p) for p in self.pods if node is None or p["spec"].get("nodeName") == node]

    def list_resource_slices(
        self, node: str, driver: str, *, page: int = 100, max_pages: int = 16
    ) -> list[dict[str, Any]]:
        return copy.deepcopy(self.slices)

    def get_lease(self, namespace: str, name: str) -> dict[str, Any]:
        if self.lease_error is not None:
            raise self.lease_error
        try:
            return copy.deepcopy(self.leases[(namespace, name)])
        except KeyError:
            raise NotFoundError("get lease: HTTP 404", status=404) from None

    # --- writes ------------------------------------------------------------------------------
    def patch_node(self, name: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        self.writes.append(("patch", name, copy.deepcopy(dict(patch))))
        if name in self.patch_errors:
            raise self.patch_errors[name]
        if name not in self.nodes:
            raise NotFoundError(f"patch node {name}: HTTP 404", status=404)
        body = copy.deepcopy(dict(patch))
        body.get("metadata", {}).pop("resourceVersion", None)
        updated = merge_patch(self.nodes[name], body)
        updated["metadata"]["resourceVersion"] = str(int(updated["metadata"].get("resourceVersion", "0")) + 1)
        self.nodes[name] = updated
        return copy.deepcopy(updated)

    def evict(self, namespace: str, name: str) -> dict[str, Any]:
        self.writes.append(("evict", f"{namespace}/{name}", {}))
        if (namespace, name) in self.evict_errors:
            raise self.evict_errors[(namespace, name)]
        self.evictions.append((namespace, name))
        return {}

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> None:
        self.writes.append(("event", namespace, copy.deepcopy(dict(body))))
        if self.event_error is not None:
            raise self.event_error
        self.events.append(copy.deepcopy(dict(body)))

    def create_lease(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        self.writes.append(("create-lease", namespace, copy.deepcopy(dict(body))))
        key = (namespace, body["metadata"]["name"])
        if key in self.leases:
            raise TemporaryError("create lease: HTTP 409", status=409)
        lease = merge_patch({}, body)
        lease["metadata"]["resourceVersion"] = "1"
        self.leases[key] = lease
        return copy.deepcopy(lease)

    def patch_lease(self, namespace: str, name: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        self.writes.append(("patch-lease", name, copy.deepcopy(dict(patch))))
        if self.lease_error is not None:
            raise self.lease_error
        lease = merge_patch(self.leases.get((namespace, name), {}), patch)
        lease.setdefault("metadata", {})["resourceVersion"] = str(
            int(lease["metadata"].get("resourceVersion", "0")) + 1
        )
        self.leases[(namespace, name)] = lease
        return copy.deepcopy(lease)

    # --- what tests read ---------------------------------------------------------------------
    def node_writes(self, name: str | None = None) -> list[dict[str, Any]]:
        return [b for verb, obj, b in self.writes if verb == "patch" and (name is None or obj == name)]

    def annotations(self, name: str) -> dict[str, str]:
        out: dict[str, str] = self.nodes[name]["metadata"].get("annotations") or {}
        return out

    def phase(self, name: str) -> str:
        return self.annotations(name).get(st.PHASE, st.Phase.IDLE.value)


def context(kube: FakeKube, settings: Settings = SETTINGS, now: dt.datetime = NOW) -> Context:
    return Context(kube, settings, Metrics(), lambda: now)


def sample(ctx: Context, name: str, **labels: str) -> float:
    """A metric's value from the context's own registry (0 when never set)."""
    value = ctx.metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


class Records(logging.Handler):
    """The controller's log records (its logger does not propagate once ``logs.setup`` ran)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def messages(self) -> list[str]:
        return [r.getMessage() for r in self.records]

    def fields(self) -> list[dict[str, Any]]:
        return [dict(getattr(r, "migc", {})) for r in self.records]


def capture() -> Iterator[Records]:
    """Generator body of a fixture: the records logged while the test runs."""
    handler = Records()
    logger = get_logger()
    old = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
