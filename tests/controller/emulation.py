"""A local Kubernetes API for tests and the demo: KMock's emulator plus what the controller needs.

KMock's ``KubernetesEmulator`` serves an in-memory API over real HTTP, so the official client
talks to it unmodified. It is simple by design; this module adds, in one subclass, the pieces of
real API-server behaviour the controller depends on (each marked where it is done):

* the Eviction subresource (the emulator answers 404): deletes the pod, or answers 429 while a
  test-controlled "PodDisruptionBudget" gate says no;
* ``metadata.resourceVersion``: stamped on every write, and a PATCH that carries a stale one is
  refused with 409, like the real optimistic-concurrency check;
* equality field/label selectors on list and watch (the emulator ignores them);
* fault injection: a hook that answers a request with an error *instead of* applying it (KMock's
  own reactions run after the object was already changed);
* a fake GPU Operator MIG manager that reacts to ``nvidia.com/mig.config`` label changes on
  nodes labelled ``nvidia.com/mig.capable=true`` (the only nodes the operator deploys it to) and
  pauses the operand DaemonSets (device plugin, GFD, DCGM exporter, validator) through their
  ``nvidia.com/gpu.deploy.*`` labels while it applies; a DaemonSet controller for those
  operands, and a device plugin that publishes allocatable only while its pod runs; and
  a fake device plugin that re-advertises ``nvidia.com/gpu`` on the other nodes when their
  ``nvidia.com/device-plugin.config`` label changes.

Test-only (it lives under tests/, is not part of the installed package, and needs the test
extra ``pip install -e '.[test]'``): kmock is imported only by this module.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import itertools
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp.web
import attrs
import kmock

NODES = kmock.resource("", "v1", "nodes")
PODS = kmock.resource("", "v1", "pods")
CONFIGMAPS = kmock.resource("", "v1", "configmaps")
EVENTS = kmock.resource("", "v1", "events")
LEASES = kmock.resource("coordination.k8s.io", "v1", "leases")

MIG_CONFIG = "nvidia.com/mig.config"
MIG_STATE = "nvidia.com/mig.config.state"
MIG_CAPABLE = "nvidia.com/mig.capable"
DEVICE_PLUGIN_CONFIG = "nvidia.com/device-plugin.config"
GPU_COUNT = "nvidia.com/gpu.count"  # set by GPU Feature Discovery
DEPLOY_MIG_MANAGER = "nvidia.com/gpu.deploy.mig-manager"
PAUSED = "paused-for-mig-change"
# The GPU operands the MIG manager stops before it applies a config: deploy-label suffix -> the
# ``app`` label of their DaemonSet pods (NVIDIA/mig-parted deployments/gpu-operator/
# reconfigure-mig.sh: the nvidia.com/gpu.deploy.* labels it pauses and the ``kubectl wait
# --for=delete pod -l app=...`` it runs for each; the Go port in pkg/mig/reconfigure does the same).
OPERANDS: dict[str, str] = {
    "device-plugin": "nvidia-device-plugin-daemonset",
    "gpu-feature-discovery": "gpu-feature-discovery",
    "dcgm-exporter": "nvidia-dcgm-exporter",
    "operator-validator": "nvidia-operator-validator",
}
OPERATOR_NAMESPACE = "gpu-operator"
_DROP = "MIGC-TEST-DROP"

# Tolerations of the GPU Operator's operand DaemonSets (device plugin, GFD, DCGM exporter,
# validator): the chart's default daemonsets.tolerations (NVIDIA/gpu-operator
# deployments/gpu-operator/values.yaml: nvidia.com/gpu, Exists, NoSchedule), plus those the
# DaemonSet controller adds to every daemon pod (kubernetes/kubernetes
# pkg/controller/daemon/util/daemonset_util.go, AddOrUpdateDaemonPodTolerations).
OPERAND_TOLERATIONS: tuple[tuple[str, str], ...] = (
    ("nvidia.com/gpu", "NoSchedule"),
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ("node.kubernetes.io/network-unavailable", "NoSchedule"),
)

Fault = Callable[[kmock.Request], Exception | None]


@dataclass(frozen=True)
class Call:
    """One recorded HTTP request, reduced to what invariants and the RBAC check need."""

    id: int
    verb: str  # Kubernetes RBAC verb: get list watch create patch update delete
    group: str
    resource: str
    subresource: str | None
    namespace: str | None
    name: str | None
    body: Any
    params: Mapping[str, str]
    user_agent: str
    refused: bool  # answered with an error (injected fault, 409, 429, 404): nothing changed


def _verb(req: kmock.Request) -> str:
    method = str(req.method.value).upper()
    if method == "GET":
        if req.params.get("watch") in ("true", "1"):
            return "watch"
        return "get" if req.name else "list"
    return {"POST": "create", "PATCH": "patch", "PUT": "update", "DELETE": "delete"}.get(
        method, method.lower()
    )


def _get(obj: Mapping[str, Any], dotted: str) -> Any:
    cur: Any = obj
    for part in dotted.split("."):
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(part)
    return cur


def _selected(obj: Mapping[str, Any], params: Mapping[str, str]) -> bool:
    for term in filter(None, (params.get("fieldSelector") or "").split(",")):
        key, _, value = term.partition("=")
        if str(_get(obj, key.rstrip("="))) != value.lstrip("="):
            return False
    labels = _get(obj, "metadata.labels") or {}
    for term in filter(None, (params.get("labelSelector") or "").split(",")):
        key, sep, value = term.partition("=")
        if sep and labels.get(key) != value.lstrip("="):
            return False
        if not sep and key not in labels:
            return False
    return True


@attrs.define(kw_only=True)
class ApiServer(kmock.KubernetesEmulator):
    faults: list[Fault] = attrs.field(factory=list)
    # (namespace, name) -> whether an eviction is allowed now; stands in for PodDisruptionBudgets.
    eviction_gate: Callable[[str, str], bool] = attrs.field(default=lambda ns, name: True)
    mig_manager: FakeMigManager | None = attrs.field(default=None)
    device_plugin: FakeDevicePlugin | None = attrs.field(default=None)
    labeler: bool = attrs.field(default=True)  # the GPU Operator's node labeler (see _label_default)
    labeled: list[str] = attrs.field(factory=list)
    # (node, operand) whose pod never finishes terminating: the MIG manager's wait for it fails.
    stuck_operands: set[tuple[str, str]] = attrs.field(factory=set)
    _syncing: set[tuple[str, str]] = attrs.field(factory=set)
    history: list[Call] = attrs.field(factory=list)
    _seq: Any = attrs.field(factory=itertools.count)
    _rv: Any = attrs.field(factory=lambda: itertools.count(1000))
    _tasks: set[asyncio.Task[None]] = attrs.field(factory=set)
    _watched: dict[Any, set[str | None]] = attrs.field(factory=dict)

    def _next_rv(self) -> str:
        return str(next(self._rv))

    def _record(self, request: kmock.Request) -> int:
        res = request.resource
        self.history.append(
            Call(
                id=next(self._seq),
                verb=_verb(request),
                group=str(res.group or "") if res else "",
                resource=str(res.plural or "") if res else "",
                subresource=request.subresource,
                namespace=request.namespace,
                name=request.name,
                body=copy.deepcopy(request.data),
                params=dict(request.params),
                user_agent=str(request.headers.get("User-Agent", "")),
                refused=False,
            )
        )
        return len(self.history) - 1

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        # KMock matches every request against its whole request log (quadratic over a long
        # scenario); we keep our own log in ``history`` and only a short tail in KMock's.
        if len(self._requests) > 64:
            del self._requests[:-64]
        index = self._record(request)
        try:
            return await self._serve(request)
        except Exception:
            self.history[index] = dataclasses.replace(self.history[index], refused=True)
            raise

    def _conflict(self, request: kmock.Request, current: Mapping[str, Any]) -> Exception | None:
        # Real API-server behaviour: a PATCH carrying a resourceVersion is a precondition.
        sent = ((request.data or {}).get("metadata") or {}).get("resourceVersion")
        if sent is not None and sent != current.get("resourceVersion"):
            return kmock.KubernetesError(
                status=409,
                reason="Conflict",
                message="the object has been modified; please apply your changes to the latest version "
                "and try again",
            )
        return None

    async def _serve(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        for fault in self.faults:
            exc = fault(request)
            if exc is not None:
                raise exc
        if (
            request.resource == PODS
            and request.subresource == "eviction"
            and str(request.method.value) == "POST"
        ):
            return await self._evict(request)

        old_labels: Mapping[str, str] = {}
        key: Any = (request.resource, request.namespace, request.name)
        writing = request.action in (kmock.action.UPDATE, kmock.action.CREATE)
        if request.resource is not None and writing and isinstance(request.data, dict):
            if (
                request.action == kmock.action.UPDATE
                and key in self.objects
                and not self.objects[key].deleted
            ):
                current = self.objects[key].raw.get("metadata") or {}
                conflict = self._conflict(request, current)
                if conflict is not None:
                    raise conflict
                old_labels = dict(current.get("labels") or {})
            request.data.setdefault("metadata", {})["resourceVersion"] = self._next_rv()
        response = await super()._handle(request)
        if (
            request.resource == NODES
            and request.action == kmock.action.UPDATE
            and key in self.objects
            and not self.objects[key].deleted
        ):
            labels = (self.objects[key].raw.get("metadata") or {}).get("labels") or {}
            # Like the GPU Operator: the MIG manager runs only on MIG-capable nodes, so a
            # mig.config label anywhere else is never answered.
            capable = labels.get(MIG_CAPABLE) == "true"
            new_label = labels.get(MIG_CONFIG)
            changed = new_label and new_label != old_labels.get(MIG_CONFIG)
            if self.mig_manager is not None and capable and changed:
                self._spawn(self.mig_manager.react(self, str(request.name), str(new_label)))
            deploy, was = labels.get(DEPLOY_MIG_MANAGER), old_labels.get(DEPLOY_MIG_MANAGER)
            if self.mig_manager is not None and capable and deploy != was:
                self._spawn(self._mig_manager_pod(str(request.name), deploy != "false", new_label))
            if capable and self.mig_manager is not None:
                # The operand DaemonSets follow the node (its taints may have changed).
                self.sync_operands(str(request.name))
            if self.labeler and capable and MIG_CONFIG not in labels:
                self._spawn(self._label_default(str(request.name)))
            new_dp = labels.get(DEVICE_PLUGIN_CONFIG)
            if (
                self.device_plugin is not None
                and not capable
                and new_dp
                and new_dp != old_labels.get(DEVICE_PLUGIN_CONFIG)
            ):
                self._spawn(self.device_plugin.react(self, str(request.name), str(new_dp)))
        return response

    async def _mig_manager_pod(self, node: str, run: bool, label: str | None) -> None:
        """The MIG manager DaemonSet follows nvidia.com/gpu.deploy.mig-manager (its nodeSelector
        in NVIDIA/gpu-operator assets/state-mig-manager): "false" deletes the node's pod, back to
        "true" creates one, which applies the label it finds on start (the informer's AddFunc in
        NVIDIA/mig-parted cmd/nvidia-mig-manager/main.go)."""
        name = f"nvidia-mig-manager-{node}"
        await asyncio.sleep(0.02)
        if not run:
            await self.remove(PODS, OPERATOR_NAMESPACE, name)
            return
        pod = pod_object(name, node, namespace=OPERATOR_NAMESPACE, gpu=None, daemonset=True)
        pod["metadata"]["labels"] = {"app": "nvidia-mig-manager"}
        await self.upsert(PODS, OPERATOR_NAMESPACE, name, pod)
        if label and self.mig_manager is not None:
            await self.mig_manager.react(self, node, label)

    async def _label_default(self, node: str) -> None:
        """The GPU Operator's node labeler: a MIG-capable node without nvidia.com/mig.config gets
        the default config, all-disabled (NVIDIA/gpu-operator controllers/state_manager.go), and
        the MIG manager applies that change like any other."""
        await asyncio.sleep(0.005)
        key = (NODES, None, node)
        if key not in self.objects or self.objects[key].deleted:
            return
        if MIG_CONFIG in ((self.objects[key].raw.get("metadata") or {}).get("labels") or {}):
            return
        await self.patch_obj(NODES, None, node, {"metadata": {"labels": {MIG_CONFIG: "all-disabled"}}})
        self.labeled.append(node)
        if self.mig_manager is not None:
            await self.mig_manager.react(self, node, "all-disabled")

    # --- the operand DaemonSets (device plugin, GFD, DCGM exporter, validator) -------------------
    def operand_pod(self, node: str, operand: str) -> str:
        return f"{OPERANDS[operand]}-{node}"

    def operand_running(self, node: str, operand: str) -> bool:
        key = (PODS, OPERATOR_NAMESPACE, self.operand_pod(node, operand))
        return key in self.objects and not self.objects[key].deleted

    def sync_operands(self, node: str) -> None:
        """The DaemonSet controller for the operator's operands on ``node``.

        Each operand DaemonSet selects nodes by ``nvidia.com/gpu.deploy.<operand>=true`` (its
        nodeSelector in NVIDIA/gpu-operator assets/state-device-plugin, state-gpu-feature-
        discovery, state-dcgm-exporter, state-operator-validation): any other value
        (``paused-for-mig-change``, ``false``) deletes the node's pod; back to ``true`` a pod is
        created, but only once every NoSchedule/NoExecute taint is tolerated
        (``operands_schedulable``; kubernetes pkg/controller/daemon/daemon_controller.go). A pod
        listed in ``stuck_operands`` never finishes terminating (a finalizer, a hung container).
        """
        for operand in OPERANDS:
            if (node, operand) not in self._syncing:
                self._syncing.add((node, operand))
                self._spawn(self._sync_operand(node, operand))

    async def _sync_operand(self, node: str, operand: str) -> None:
        try:
            await self._sync_operand_once(node, operand)
        finally:
            self._syncing.discard((node, operand))

    async def _sync_operand_once(self, node: str, operand: str) -> None:
        key = (NODES, None, node)
        await asyncio.sleep(0.005)
        while key in self.objects and not self.objects[key].deleted:
            labels = (self.objects[key].raw.get("metadata") or {}).get("labels") or {}
            wanted = labels.get(f"nvidia.com/gpu.deploy.{operand}", "true") == "true"
            if not wanted:
                if self.operand_running(node, operand) and (node, operand) not in self.stuck_operands:
                    await self.remove(PODS, OPERATOR_NAMESPACE, self.operand_pod(node, operand))
                    if operand == "device-plugin":
                        await self._device_plugin_stopped(node)
                return
            if self.operand_running(node, operand):
                return
            if operands_schedulable(self.objects[key].raw):
                await self._create_operand_pod(node, operand)
                return
            await asyncio.sleep(0.01)

    async def _create_operand_pod(self, node: str, operand: str) -> None:
        name = self.operand_pod(node, operand)
        pod = pod_object(name, node, namespace=OPERATOR_NAMESPACE, gpu=None, daemonset=True)
        pod["metadata"]["labels"] = {"app": OPERANDS[operand]}
        await self.upsert(PODS, OPERATOR_NAMESPACE, name, pod)
        if operand == "device-plugin":
            await self._device_plugin_started(node)

    def _gpu_resources(self, node: str) -> list[str]:
        alloc = (self.objects[(NODES, None, node)].raw.get("status") or {}).get("allocatable") or {}
        return [k for k in alloc if k.startswith("nvidia.com/mig-") or k == "nvidia.com/gpu"]

    async def _device_plugin_stopped(self, node: str) -> None:
        # The kubelet keeps a stopped plugin's resources listed with nothing allocatable
        # (kubernetes pkg/kubelet/cm/devicemanager: unhealthy/absent devices are not counted).
        gpu = self._gpu_resources(node)
        await self.patch_obj(NODES, None, node, {"status": {"allocatable": dict.fromkeys(gpu, "0")}})

    async def _device_plugin_started(self, node: str) -> None:
        # A running plugin registers the MIG devices of the layout applied on the node
        # (NVIDIA/k8s-device-plugin, mig.strategy=mixed: one resource per MIG profile).
        mig = self.mig_manager
        if mig is None or node not in mig.applied:
            return
        published: dict[str, Any] = dict.fromkeys(self._gpu_resources(node))
        published.update({k: str(v) for k, v in mig.resources[mig.applied[node]].items()})
        await self.patch_obj(NODES, None, node, {"status": {"allocatable": published}})

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _evict(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        # Real API-server behaviour (policy/v1 Eviction): 429 while a PodDisruptionBudget forbids
        # the disruption, else the pod is deleted. Here without a grace period, for speed.
        ns, name = str(request.namespace), str(request.name)
        key = (PODS, ns, name)
        if key not in self.objects or self.objects[key].deleted:
            raise kmock.KubernetesObjectNotFoundError()
        if not self.eviction_gate(ns, name):
            raise kmock.KubernetesError(
                status=429,
                reason="TooManyRequests",
                message="Cannot evict pod as it would violate the pod's disruption budget.",
            )
        await self.remove(PODS, ns, name)
        return aiohttp.web.json_response(
            {"apiVersion": "v1", "kind": "Status", "status": "Success", "code": 201, "metadata": {}},
            status=201,
        )

    async def _serve_list(self, request: kmock.Request) -> Any:
        payload: Any = await super()._serve_list(request)
        # Real API-server behaviour: field and label selectors (equality only).
        payload["items"] = [o for o in payload["items"] if _selected(o, request.params)]
        return payload

    async def _serve_watch(self, request: kmock.Request) -> Any:
        self._watched.setdefault(request.resource, set()).add(request.namespace)
        async for event in super()._serve_watch(request):
            if isinstance(event, dict) and event.get("type") == _DROP:
                return  # ends the HTTP response: the client sees its watch stream close
            if not isinstance(event, dict) or _selected(event.get("object") or {}, request.params):
                yield event

    async def drop_watches(self, res: Any) -> None:
        """Close every open watch stream of a resource, as an API server restart or an LB would."""
        # KMock delivers an event only to watchers of its namespace: send one per namespace.
        namespaces = self._watched.get(res, set()) | {None}
        for ns in sorted(namespaces, key=str):
            await self._buses[res].put({"type": _DROP, "object": {"metadata": {"namespace": ns}}})

    # --- direct state changes (not HTTP requests: they stay out of the request history) --------
    async def upsert(self, res: Any, ns: str | None, name: str, obj: Mapping[str, Any]) -> None:
        body = copy.deepcopy(dict(obj))
        body.setdefault("metadata", {}).update({"name": name, "resourceVersion": self._next_rv()})
        if ns is not None:
            body["metadata"]["namespace"] = ns
        mig = self.mig_manager
        if res == CONFIGMAPS and mig is not None and mig.configmap == (ns, name):
            mig.configmap_written(body)
        async with self._lock:
            key = (res, ns, name)
            exists = key in self.objects and not self.objects[key].deleted
            if key in self.objects:
                self.objects[key].create(body)
            else:
                self.objects[key] = body
            await self._buses[res].put(
                {"type": "MODIFIED" if exists else "ADDED", "object": self.objects[key].raw}
            )
        labels = (body.get("metadata") or {}).get("labels") or {}
        gpu_node = res == NODES and mig is not None and labels.get(MIG_CAPABLE) == "true"
        if gpu_node and operands_schedulable(body):
            # A GPU node starts with its operand pods running (where they may run).
            for operand in OPERANDS:
                if labels.get(f"nvidia.com/gpu.deploy.{operand}", "true") == "true":
                    await self._create_operand_pod(name, operand)

    async def patch_obj(self, res: Any, ns: str | None, name: str, patch: Mapping[str, Any]) -> None:
        body = copy.deepcopy(dict(patch))
        body.setdefault("metadata", {})["resourceVersion"] = self._next_rv()
        async with self._lock:
            key = (res, ns, name)
            if key not in self.objects or self.objects[key].deleted:
                return
            self.objects[key].patch(body)
            await self._buses[res].put({"type": "MODIFIED", "object": self.objects[key].raw})

    async def remove(self, res: Any, ns: str | None, name: str) -> None:
        async with self._lock:
            key = (res, ns, name)
            if key not in self.objects or self.objects[key].deleted:
                return
            raw = self.objects[key].raw
            self.objects[key].delete()
            await self._buses[res].put({"type": "DELETED", "object": raw})


def operands_schedulable(node: Mapping[str, Any]) -> bool:
    """Whether the DaemonSet controller places the operator's operand pods on ``node``.

    Every NoSchedule/NoExecute taint must be tolerated (kubernetes pkg/scheduler/framework/
    plugins/tainttoleration: a pod is not placed on a node with an untolerated taint of those
    effects). A cordon (spec.unschedulable) does not stop daemon pods: they tolerate
    node.kubernetes.io/unschedulable.
    """
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if (taint.get("key"), taint.get("effect")) not in OPERAND_TOLERATIONS:
            return False
    return True


async def operands_back(api: ApiServer, node: str) -> bool:
    """Wait until the operand pods can run on ``node`` again; False if the node is gone."""
    key = (NODES, None, node)
    while key in api.objects and not api.objects[key].deleted:
        if operands_schedulable(api.objects[key].raw):
            return True
        await asyncio.sleep(0.01)
    return False


@dataclass
class FakeMigManager:
    """Plays the GPU Operator's MIG manager: reacts to a *change* of ``nvidia.com/mig.config``.

    Every mode first sets state ``pending``. ``success``: pauses the GPU operands through their
    ``nvidia.com/gpu.deploy.<operand>`` labels (``paused-for-mig-change``), waits for their pods
    to leave the node, applies, restores the labels to ``true`` and sets ``success``; the device
    plugin's new DaemonSet pod then publishes the applied layout as allocatable, and only if no
    taint keeps it off the node (``ApiServer.sync_operands``). ``failed``: the same, ending in
    ``failed``. ``reboot``: ``rebooting`` for ``reboot_delay`` before applying (a MIG mode
    change under WITH_REBOOT). ``hang``: ``pending`` forever. An operand pod that does not go
    within ``shutdown_timeout`` (``ApiServer.stuck_operands``) leaves the state at ``pending``
    with the operands paused, as the real manager does. A config its mounted file does not
    define fails at once, like ``nvidia-mig-parted assert --valid-config``. (NVIDIA/mig-parted
    deployments/gpu-operator/reconfigure-mig.sh, set_state / maybe_set_paused.)
    """

    resources: Mapping[str, Mapping[str, int]]
    mode: str = "success"
    per_node: dict[str, str] = field(default_factory=dict)
    # Called as decide(node, config, attempt) -> mode; overrides mode/per_node when set.
    decide: Callable[[str, str, int], str] | None = None
    delay: float = 0.005
    reboot_delay: float = 0.5
    # The manager reads the mig-parted ConfigMap from a volume that the kubelet refreshes only
    # after its sync period plus cache delay: a config name becomes visible to it this long
    # after it appeared in the API (kubernetes docs, "Mounted ConfigMaps are updated
    # automatically"; kubelet pkg/volume/configmap). 0: no lag.
    mount_delay: float = 0.0
    appeared: dict[str, float] = field(default_factory=dict)
    # While cleared, successful applies stay ``pending`` (tests freeze nodes mid-Applying).
    gate: threading.Event = field(default_factory=threading.Event)
    # (namespace, name) of the mig-parted ConfigMap the manager mounts; None: not modelled.
    configmap: tuple[str, str] | None = None
    handled: list[tuple[str, str, str]] = field(default_factory=list)
    # How long it waits for each paused operand's pods to go (reconfigure-mig.sh: 5m).
    shutdown_timeout: float = 5.0
    # node -> the config last applied there (what a restarted device plugin publishes).
    applied: dict[str, str] = field(default_factory=dict)
    # Nodes where the operand shutdown wait failed (the state label was left at "pending").
    stuck: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.gate.set()

    def _mode(self, node: str, config: str) -> str:
        attempt = sum(1 for n, c, _ in self.handled if n == node and c == config) + 1
        if self.decide is not None:
            return self.decide(node, config, attempt)
        return self.per_node.get(node, self.mode)

    def configmap_written(self, body: Mapping[str, Any]) -> None:
        """Record when each config name first appeared in the mig-parted ConfigMap."""
        import yaml

        doc = yaml.safe_load(((body.get("data") or {}).get("config.yaml")) or "") or {}
        names = set((doc.get("mig-configs") or {}) if isinstance(doc, dict) else ())
        for gone in set(self.appeared) - names:
            del self.appeared[gone]
        now = time.monotonic()
        for n in names:
            self.appeared.setdefault(n, now)

    def mounted(self, config: str) -> bool:
        """Whether the manager's mounted copy of the ConfigMap has ``config`` by now."""
        first = self.appeared.get(config)
        return first is not None and time.monotonic() - first >= self.mount_delay

    async def react(self, api: ApiServer, node: str, config: str) -> None:
        """One reconfiguration, step by step as NVIDIA/mig-parted deployments/gpu-operator/
        reconfigure-mig.sh (and its Go port, pkg/mig/reconfigure/reconfigure.go) does it."""
        known = config in self.resources and (self.configmap is None or self.mounted(config))
        # mig-parted refuses a config its file does not define ("selected mig-config not present").
        mode = self._mode(node, config) if known else "not-present"
        self.handled.append((node, config, mode))
        await asyncio.sleep(self.delay)
        await api.patch_obj(NODES, None, node, {"metadata": {"labels": {MIG_STATE: "pending"}}})
        if mode == "hang":
            return
        if mode == "not-present":
            # The config is asserted before any operand is touched: failed at once.
            await api.patch_obj(NODES, None, node, {"metadata": {"labels": {MIG_STATE: "failed"}}})
            return
        # Pause the GPU clients: every operand label that says "true" (or is unset, which the
        # operator treats as deployed) becomes paused-for-mig-change (maybe_set_paused), then
        # wait for each operand's pods on this node to be deleted (kubectl wait --for=delete
        # --timeout=5m, here ``shutdown_timeout``).
        labels = (api.objects[(NODES, None, node)].raw.get("metadata") or {}).get("labels") or {}
        paused = [o for o in OPERANDS if labels.get(f"nvidia.com/gpu.deploy.{o}", "true") != "false"]
        await api.patch_obj(
            NODES,
            None,
            node,
            {"metadata": {"labels": {f"nvidia.com/gpu.deploy.{o}": PAUSED for o in paused}}},
        )
        api.sync_operands(node)
        deadline = time.monotonic() + self.shutdown_timeout
        while any(api.operand_running(node, o) for o in paused):
            if time.monotonic() >= deadline:
                # The shutdown wait failed: the manager returns with an error and sets no final
                # state, so the node's state label stays "pending" (the Go reconfigure returns
                # before its deferred state update; the operands stay paused).
                self.stuck.append(node)
                return
            await asyncio.sleep(0.005)
        while not self.gate.is_set():
            await asyncio.sleep(0.005)
        if mode == "reboot":
            await api.patch_obj(NODES, None, node, {"metadata": {"labels": {MIG_STATE: "rebooting"}}})
            await asyncio.sleep(self.reboot_delay)
        if mode != "failed":
            self.applied[node] = config
        # Re-enable the operands it paused (on failure too: exit_failed restores them), then
        # report. The device plugin's new pod publishes the applied layout once it runs.
        await api.patch_obj(
            NODES,
            None,
            node,
            {"metadata": {"labels": {f"nvidia.com/gpu.deploy.{o}": "true" for o in paused}}},
        )
        api.sync_operands(node)
        state = "failed" if mode == "failed" else "success"
        await api.patch_obj(NODES, None, node, {"metadata": {"labels": {MIG_STATE: state}}})


_REPLICAS = re.compile(r"(?:time-slicing|mps)-(\d+)$")


@dataclass
class FakeDevicePlugin:
    """Plays the NVIDIA device plugin on a node without MIG: on a change of
    ``nvidia.com/device-plugin.config`` it restarts and advertises ``nvidia.com/gpu`` = the node's
    ``nvidia.com/gpu.count`` x the config's sharing replicas.

    The replica count is read from the config's name (``...time-slicing-N``, ``...mps-N``, else
    1), which is how migc names the configs it renders; it is derived independently of the
    assignment's ``resources`` so that verification compares against something it did not write.
    """

    delay: float = 0.005
    handled: list[tuple[str, str]] = field(default_factory=list)

    async def react(self, api: ApiServer, node: str, config: str) -> None:
        self.handled.append((node, config))
        await asyncio.sleep(self.delay)
        key = (NODES, None, node)
        # The plugin restarts as a DaemonSet pod: it comes back only where the pod may run.
        if not await operands_back(api, node):
            return
        raw = api.objects[key].raw
        try:
            gpus = int(((raw.get("metadata") or {}).get("labels") or {}).get(GPU_COUNT, "0"))
        except ValueError:
            gpus = 0
        m = _REPLICAS.search(config)
        replicas = int(m.group(1)) if m else 1
        alloc = {"nvidia.com/gpu": str(gpus * replicas)}
        await api.patch_obj(NODES, None, node, {"status": {"allocatable": alloc}})


class EmulatorThread:
    """Runs an ``ApiServer`` on 127.0.0.1 in a background event loop; sync helpers for callers."""

    def __init__(
        self, mig_manager: FakeMigManager | None = None, device_plugin: FakeDevicePlugin | None = None
    ) -> None:
        self.mig_manager = mig_manager
        self.device_plugin = device_plugin
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._server: ApiServer | None = None
        self.url = ""
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._main()), name="emulator", daemon=True
        )
        self._error: BaseException | None = None

    async def _main(self) -> None:
        try:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            api_server = ApiServer(mig_manager=self.mig_manager, device_plugin=self.device_plugin)
            async with api_server as api, kmock.Server(api) as http:
                for res in (
                    "v1/nodes",
                    "v1/pods",
                    "v1/configmaps",
                    "v1/events",
                    "coordination.k8s.io/v1/leases",
                ):
                    api.resources[res] = kmock.ResourceInfo()
                self._server = api
                self.url = str(http.url).rstrip("/")
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            raise

    def start(self) -> EmulatorThread:
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None or self._server is None:
            raise RuntimeError(f"the API emulator did not start: {self._error!r}")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            # Open watch streams never end on their own; the server's shutdown would wait for them.
            for res in (NODES, PODS, CONFIGMAPS, EVENTS, LEASES):
                self.drop_watches(res)
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    @property
    def api(self) -> ApiServer:
        assert self._server is not None
        return self._server

    def run(self, fn: Callable[[ApiServer], Any], timeout: float = 10) -> Any:
        """Run ``fn(api)`` in the server's loop (await it if it returns a coroutine)."""
        assert self._loop is not None

        async def call() -> Any:
            result = fn(self.api)
            if asyncio.iscoroutine(result):
                result = await result
            return result

        return asyncio.run_coroutine_threadsafe(call(), self._loop).result(timeout)

    # --- sync helpers ----------------------------------------------------------------------------
    def upsert(self, res: Any, ns: str | None, name: str, obj: Mapping[str, Any]) -> None:
        self.run(lambda api: api.upsert(res, ns, name, obj))

    def patch(self, res: Any, ns: str | None, name: str, patch: Mapping[str, Any]) -> None:
        self.run(lambda api: api.patch_obj(res, ns, name, patch))

    def remove(self, res: Any, ns: str | None, name: str) -> None:
        self.run(lambda api: api.remove(res, ns, name))

    def drop_watches(self, res: Any) -> None:
        self.run(lambda api: api.drop_watches(res))

    def get(self, res: Any, ns: str | None, name: str) -> dict[str, Any] | None:
        def read(api: ApiServer) -> dict[str, Any] | None:
            key = (res, ns, name)
            if key not in api.objects or api.objects[key].deleted:
                return None
            return copy.deepcopy(api.objects[key].raw)

        out: dict[str, Any] | None = self.run(read)
        return out

    def nodes(self) -> dict[str, dict[str, Any]]:
        def read(api: ApiServer) -> dict[str, dict[str, Any]]:
            return {
                name: copy.deepcopy(obj.raw)
                for (res, _ns, name), obj in api.objects.items()
                if res == NODES and not obj.deleted
            }

        out: dict[str, dict[str, Any]] = self.run(read)
        return out

    def pods(self) -> list[dict[str, Any]]:
        def read(api: ApiServer) -> list[dict[str, Any]]:
            return [
                copy.deepcopy(obj.raw)
                for (res, _ns, _n), obj in api.objects.items()
                if res == PODS and not obj.deleted
            ]

        out: list[dict[str, Any]] = self.run(read)
        return out

    def calls(self) -> list[Call]:
        calls: list[Call] = self.run(lambda api: list(api.history))
        return calls


# --- fleet builders (tests and the demo) ---------------------------------------------------------
def revision_of(doc: Mapping[str, Any]) -> str:
    """Content hash of everything but ``revision`` (how the compiler defines it)."""
    import hashlib
    import json

    rest = {k: v for k, v in doc.items() if k != "revision"}
    return hashlib.sha256(json.dumps(rest, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def assignment_configmap(
    doc: Mapping[str, Any],
    *,
    namespace: str = "migc-system",
    name: str = "migc-assignment",
    paused: bool = False,
) -> dict[str, Any]:
    import json

    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if paused:
        meta["annotations"] = {"migc.dev/paused": "true"}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta,
        "data": {"assignment.json": json.dumps(doc, indent=2, sort_keys=True)},
    }


def mig_parted_configmap(
    configs: Mapping[str, Mapping[str, Any]], namespace: str, name: str
) -> dict[str, Any]:
    """The GPU Operator's mig-parted ConfigMap (key ``config.yaml``) defining ``configs``.

    Format of NVIDIA mig-parted's config file (``version: v1``, ``mig-configs: {name: [...]}``,
    one entry per device with ``devices``, ``mig-enabled`` and ``mig-devices``), as in
    NVIDIA/mig-parted ``examples/config.yaml`` and ``api/spec/v1/spec.go``.
    """
    import yaml

    mig_configs = {
        cfg: [
            {"devices": [i], "mig-enabled": bool(d["migEnabled"]), "mig-devices": dict(d["profiles"])}
            for i, d in enumerate(spec["devices"])
        ]
        for cfg, spec in sorted(configs.items())
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"config.yaml": yaml.safe_dump({"version": "v1", "mig-configs": mig_configs})},
    }


def node_object(name: str, labels: Mapping[str, str], resources: Mapping[str, int]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels)},
        "spec": {},
        "status": {
            "allocatable": {
                "cpu": "64",
                "memory": "512Gi",
                "pods": "110",
                **{k: str(v) for k, v in resources.items()},
            }
        },
    }


def pod_object(
    name: str,
    node: str,
    *,
    namespace: str = "default",
    gpu: str | None = "nvidia.com/gpu",
    daemonset: bool = False,
    phase: str = "Running",
) -> dict[str, Any]:
    res = {"limits": {gpu: "1"}} if gpu else {"requests": {"cpu": "1"}}
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if daemonset:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "u"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x", "resources": res}]},
        "status": {"phase": phase},
    }


# GPU models with MIG (NVIDIA's MIG user guide); L40S, L4, T4, A10, RTX cards and older have none.
_MIG_MODEL_PREFIXES = (
    "A100",
    "A800",
    "A30",
    "H100",
    "H800",
    "H200",
    "H20",
    "GH200",
    "B200",
    "B300",
    "GB200",
    "GB300",
)


def mig_capable_model(gpu_model: str) -> bool:
    return gpu_model.upper().startswith(_MIG_MODEL_PREFIXES)


def fleet_nodes(doc: Mapping[str, Any]) -> dict[str, tuple[dict[str, str], str]]:
    """Node name -> (labels, config) for the nodes an assignment document describes.

    The labels include what GPU Feature Discovery would set: ``nvidia.com/gpu.count`` and
    ``nvidia.com/mig.capable`` ("true" when the config enables MIG or the pool's GPU model has
    MIG, else "false").
    """
    out: dict[str, tuple[dict[str, str], str]] = {}

    def gfd(pool: Mapping[str, Any], cfg: str) -> dict[str, str]:
        devices = doc["configs"][cfg]["devices"]
        capable = any(d.get("migEnabled") for d in devices) or mig_capable_model(str(pool["gpuModel"]))
        return {GPU_COUNT: str(len(devices)), MIG_CAPABLE: "true" if capable else "false"}

    for pool in doc["pools"]:
        for n in pool["nodes"]:
            out[n["name"]] = (gfd(pool, n["config"]), n["config"])
        if pool.get("selector"):
            i = 0
            for cfg, count in sorted((pool.get("configCounts") or {}).items()):
                for _ in range(count):
                    out[f"{pool['name']}-{i:02d}"] = ({**pool["selector"], **gfd(pool, cfg)}, cfg)
                    i += 1
    return out
