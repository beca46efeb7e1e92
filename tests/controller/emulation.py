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
  ``nvidia.com/device-plugin.config`` label changes;
* ResourceSlices (``resource.k8s.io/v1``, cluster-scoped): the field selectors the real API server
  supports on them, and nothing else (400 otherwise), and chunked lists (``limit``/``continue``)
  served from one snapshot; and the NVIDIA DRA driver's kubelet plugin publishing them
  (``FakeDraDriver``).

Test-only (it lives under tests/, is not part of the installed package, and needs the test
extra ``pip install -e '.[test]'``): kmock is imported only by this module.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import functools
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
RESOURCESLICES = kmock.resource("resource.k8s.io", "v1", "resourceslices")
RESOURCECLAIMS = kmock.resource("resource.k8s.io", "v1", "resourceclaims")

MIG_CONFIG = "nvidia.com/mig.config"
MIG_STATE = "nvidia.com/mig.config.state"
MIG_CAPABLE = "nvidia.com/mig.capable"
DEVICE_PLUGIN_CONFIG = "nvidia.com/device-plugin.config"
GPU_COUNT = "nvidia.com/gpu.count"  # set by GPU Feature Discovery
DEPLOY_MIG_MANAGER = "nvidia.com/gpu.deploy.mig-manager"
PAUSED = "paused-for-mig-change"
GPU_CLIENT_KEY = "nvidia.com/gpu.deploy.client"
# Upstream at the commits this emulator follows (every behaviour below cites file:line there):
MIG_PARTED = "NVIDIA/mig-parted@bd7160f43f16462eeb21e1eda5e67b5b6b03fd7d"
GPU_OPERATOR = "NVIDIA/gpu-operator@a22dbf671f2e26f9a1e342f8eea28e196235e110"
DEVICE_PLUGIN = "NVIDIA/k8s-device-plugin@1b826acc6af3079d8923bac395c3124b8861a9a6"
# The GPU clients the MIG manager stops before it applies a config, by the nvidia.com/gpu.deploy.*
# label it sets to paused-for-mig-change (mig-parted pkg/mig/reconfigure/reconfigure.go:371-386:
# device-plugin, gpu-feature-discovery, dcgm-exporter, dcgm, nvsm; gpu.deploy.client only when
# the node has that label, :381-383).
PAUSED_BY_MANAGER = ("device-plugin", "gpu-feature-discovery", "dcgm-exporter", "dcgm", "nvsm")
# The pods it then waits for, one 5-minute wait each, in the GPU clients namespace (the
# operator's own, DEFAULT_GPU_CLIENTS_NAMESPACE in gpu-operator
# assets/state-mig-manager/0600_daemonset.yaml:60-63): reconfigure.go:389-411 (app=...
# labels), then every DaemonSet pod on the node whose nodeSelector has nvidia.com/gpu.deploy.
# client, in any namespace (:412-415, waitForPodsWithNodeSelector :648-673).
WAITED_APPS = (
    "nvidia-device-plugin-daemonset",
    "gpu-feature-discovery",
    "nvidia-dcgm-exporter",
    "nvidia-dcgm",
)
# The operand DaemonSets the operator deploys by default, deploy-label suffix -> their pods' app
# label (gpu-operator assets/state-device-plugin/0500_daemonset.yaml:17-20,
# assets/gpu-feature-discovery/0500_daemonset.yaml:17-21, assets/state-dcgm-exporter/
# 0800_daemonset.yaml:17-20; the standalone dcgm and nvsm are off by default,
# deployments/gpu-operator/values.yaml:287-289). These are the ones the manager pauses.
OPERANDS: dict[str, str] = {
    "device-plugin": "nvidia-device-plugin-daemonset",
    "gpu-feature-discovery": "gpu-feature-discovery",
    "dcgm-exporter": "nvidia-dcgm-exporter",
}
# The validator is not paused: the manager deletes its pod after applying so that it runs again
# (reconfigure.go:230-232, restartValidatorPod :534-537); its DaemonSet
# (assets/state-operator-validation/0500_daemonset.yaml:17-21) recreates it.
VALIDATOR = ("operator-validator", "nvidia-operator-validator")
DAEMONSETS: dict[str, str] = {**OPERANDS, VALIDATOR[0]: VALIDATOR[1]}
# The device-plugin ConfigMap the operator mounts into the plugin's config-manager (migc
# renders it; compiler/render/manifests.py DEVICE_PLUGIN_CONFIGMAP).
DEVICE_PLUGIN_CONFIGMAP = ("gpu-operator", "migc-device-plugin-config")
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
    # (namespace, name) -> (nodeSelector, GPU resource or None): third-party DaemonSets.
    client_daemonsets: dict[tuple[str, str], tuple[dict[str, str], str | None]] = attrs.field(factory=dict)
    plugin: DevicePluginState = attrs.field(factory=lambda: DevicePluginState())
    dra_driver: FakeDraDriver | None = attrs.field(default=None)
    _snapshots: dict[str, list[dict[str, Any]]] = attrs.field(factory=dict)
    _tokens: Any = attrs.field(factory=itertools.count)
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
            # The MIG manager DaemonSet runs only where nvidia.com/gpu.deploy.mig-manager=true
            # (gpu-operator assets/state-mig-manager/0600_daemonset.yaml:17-18; the operator
            # sets it only where the key is absent, controllers/state_manager.go:486-490).
            manager_here = labels.get(DEPLOY_MIG_MANAGER, "true") == "true"
            if self.mig_manager is not None and capable and changed and manager_here:
                self._spawn(self.mig_manager.react(self, str(request.name), str(new_label)))
            deploy, was = labels.get(DEPLOY_MIG_MANAGER), old_labels.get(DEPLOY_MIG_MANAGER)
            if self.mig_manager is not None and capable and deploy != was:
                self._spawn(self._mig_manager_pod(str(request.name), deploy != "false", new_label))
            if capable and self.mig_manager is not None:
                # The operand DaemonSets follow the node (its taints may have changed).
                self.sync_operands(str(request.name))
                self._spawn(self._sync_clients(str(request.name)))
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
        if self.mig_manager is not None:
            self.mig_manager.no_restart_on_exit[node] = False  # a new process
        if label and self.mig_manager is not None:
            await self.mig_manager.react(self, node, label)

    async def _label_default(self, node: str) -> None:
        """The GPU Operator's node labeler: a MIG-capable node without nvidia.com/mig.config gets
        the default config, all-disabled (gpu-operator controllers/nodelabeling_controller.go:
        306-316), and the MIG manager -- where it runs -- applies that change like any other."""
        await asyncio.sleep(0.005)
        key = (NODES, None, node)
        if key not in self.objects or self.objects[key].deleted:
            return
        if MIG_CONFIG in ((self.objects[key].raw.get("metadata") or {}).get("labels") or {}):
            return
        await self.patch_obj(NODES, None, node, {"metadata": {"labels": {MIG_CONFIG: "all-disabled"}}})
        self.labeled.append(node)
        labels = (self.objects[key].raw.get("metadata") or {}).get("labels") or {}
        if self.mig_manager is not None and labels.get(DEPLOY_MIG_MANAGER, "true") == "true":
            await self.mig_manager.react(self, node, "all-disabled")

    # --- the operand DaemonSets (device plugin, GFD, DCGM exporter, validator) -------------------
    def operand_pod(self, node: str, operand: str) -> str:
        return f"{DAEMONSETS[operand]}-{node}"

    def operand_running(self, node: str, operand: str) -> bool:
        key = (PODS, OPERATOR_NAMESPACE, self.operand_pod(node, operand))
        return key in self.objects and not self.objects[key].deleted

    def sync_operands(self, node: str) -> None:
        """The DaemonSet controller for the operator's operands on ``node``.

        Each operand DaemonSet selects nodes by ``nvidia.com/gpu.deploy.<operand>=true`` (its
        nodeSelector; the files cited at ``DAEMONSETS``): any other value
        (``paused-for-mig-change``, ``false``) deletes the node's pod; back to ``true`` a pod is
        created, but only once every NoSchedule/NoExecute taint is tolerated
        (``operands_schedulable``; kubernetes pkg/controller/daemon/daemon_controller.go). A pod
        listed in ``stuck_operands`` never finishes terminating (a finalizer, a hung container).
        """
        for operand in DAEMONSETS:
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
        pod["metadata"]["labels"] = {"app": DAEMONSETS[operand]}
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
        """The plugin's new pod registers what is on the GPUs now, under the strategy of the
        device-plugin config its config-manager selected (``DevicePluginState.publish``)."""
        mig = self.mig_manager
        if mig is None or node not in mig.applied:
            return
        published = self.plugin.publish(self, node, mig.applied[node])
        if published is None:
            return
        alloc: dict[str, Any] = dict.fromkeys(self._gpu_resources(node))
        alloc.update({k: str(v) for k, v in published.items()})
        await self.patch_obj(NODES, None, node, {"status": {"allocatable": alloc}})

    # --- third-party GPU client DaemonSets ------------------------------------------------------
    def add_client_daemonset(
        self, namespace: str, name: str, node_selector: Mapping[str, str], gpu: str | None
    ) -> None:
        """A DaemonSet of someone else's on every GPU node its nodeSelector matches; ``gpu``: the
        GPU resource its pods request (None: none)."""
        self.client_daemonsets[(namespace, name)] = (dict(node_selector), gpu)
        for key, obj in list(self.objects.items()):
            if key[0] == NODES and not obj.deleted:
                self._spawn(self._sync_clients(str(key[2])))

    async def _sync_clients(self, node: str) -> None:
        """The DaemonSet controller for ``client_daemonsets``: a pod where the nodeSelector
        matches the node's labels, none elsewhere."""
        key = (NODES, None, node)
        if key not in self.objects or self.objects[key].deleted:
            return
        labels = (self.objects[key].raw.get("metadata") or {}).get("labels") or {}
        for (ns, ds), (selector, gpu) in sorted(self.client_daemonsets.items()):
            pod_name = f"{ds}-{node}"
            pkey = (PODS, ns, pod_name)
            running = pkey in self.objects and not self.objects[pkey].deleted
            wanted = all(labels.get(k) == v for k, v in selector.items())
            dra = (
                self.dra_driver
                if self.dra_driver is not None and self.dra_driver.daemonset == (ns, ds)
                else None
            )
            if wanted and not running:
                pod = pod_object(pod_name, node, namespace=ns, gpu=gpu, daemonset=True)
                pod["spec"]["nodeSelector"] = dict(selector)
                pod["metadata"]["labels"] = {"app": ds}
                await self.upsert(PODS, ns, pod_name, pod)
                if dra is not None:
                    dra.started(self, node)
            elif running and not wanted:
                await self.remove(PODS, ns, pod_name)
                if dra is not None:
                    dra.stopped(self, node)

    def gpu_clients(self, node: str) -> list[str]:
        """Running pods on ``node`` that hold GPUs (request nvidia.com/gpu or nvidia.com/mig-*, or,
        on a DRA node, a device through a ResourceClaim: ``spec.resourceClaims``)."""
        return sorted(self.gpu_holders(node))

    def gpu_holders(self, node: str) -> dict[str, frozenset[int] | None]:
        """Each running pod on ``node`` that holds GPUs -> the minors of the GPUs it uses (None:
        some GPU, which one not known here).

        A pod with GPUs in its limits got them from the device plugin, which records the choice
        only in the kubelet (its pod-resources API): not known. A pod with ResourceClaims holds
        the devices their allocations name (``status.allocation.devices.results``, written by the
        scheduler); the GPU of a device is the minor in the DRA driver's device name
        (FakeDraDriver). A claim that is missing or unallocated, or a device of another name:
        not known (the pod could not have started without its claims allocated)."""
        out: dict[str, frozenset[int] | None] = {}
        for (res, ns, name), obj in self.objects.items():
            if res != PODS or obj.deleted:
                continue
            raw = obj.raw
            if (raw.get("spec") or {}).get("nodeName") != node:
                continue
            if (raw.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            if (raw.get("spec") or {}).get("resourceClaims"):
                out[f"{ns}/{name}"] = self._claimed_gpus(str(ns), raw)
                continue
            for c in (raw.get("spec") or {}).get("containers") or []:
                res_ = c.get("resources") or {}
                names = {*(res_.get("limits") or {}), *(res_.get("requests") or {})}
                if any(n == "nvidia.com/gpu" or n.startswith("nvidia.com/mig-") for n in names):
                    out[f"{ns}/{name}"] = None
                    break
        return out

    def _claimed_gpus(self, ns: str, pod: Mapping[str, Any]) -> frozenset[int] | None:
        statuses = {
            s.get("name"): s.get("resourceClaimName")
            for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
        }
        gpus: set[int] = set()
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            claim_name = entry.get("resourceClaimName") or statuses.get(entry.get("name"))
            if not isinstance(claim_name, str):
                return None
            key = (RESOURCECLAIMS, ns, claim_name)
            if key not in self.objects or self.objects[key].deleted:
                return None
            allocation = (self.objects[key].raw.get("status") or {}).get("allocation")
            if not allocation:
                return None
            for r in (allocation.get("devices") or {}).get("results") or []:
                if r.get("driver") != "gpu.nvidia.com":
                    continue
                m = re.fullmatch(r"gpu-(\d+)(-mig-.+-\d+-\d+)?", str(r.get("device")))
                if m is None:
                    return None
                gpus.add(int(m.group(1)))
        return frozenset(gpus)

    def pods_on(
        self, node: str, *, namespace: str | None = None, app: str | None = None
    ) -> list[dict[str, Any]]:
        return [
            obj.raw
            for (res, ns, _n), obj in self.objects.items()
            if res == PODS
            and not obj.deleted
            and (obj.raw.get("spec") or {}).get("nodeName") == node
            and (namespace is None or ns == namespace)
            and (app is None or ((obj.raw.get("metadata") or {}).get("labels") or {}).get("app") == app)
        ]

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
        if request.resource == RESOURCESLICES:
            return await self._serve_slices(request)
        payload: Any = await super()._serve_list(request)
        # Real API-server behaviour: field and label selectors (equality only).
        payload["items"] = [o for o in payload["items"] if _selected(o, request.params)]
        return payload

    async def _serve_slices(self, request: kmock.Request) -> Any:
        """List ResourceSlices as the real API server does.

        Field selectors: only ``metadata.name``, ``spec.nodeName`` and ``spec.driver``
        (kubernetes/kubernetes@02d4c8c3 pkg/registry/resource/resourceslice/strategy.go,
        toSelectableFields :178-193); any other field is a 400 ("field label not supported"). A ``limit``
        chunks the list in name order (etcd's key order for a cluster-scoped resource) with a
        ``continue`` token, and continued pages come from the snapshot of the first page (the
        API's consistency promise for chunked lists; api-concepts "Retrieving large results sets
        in chunks"), so slices republished between two pages are not mixed into one answer.
        """
        params = request.params
        for term in filter(None, (params.get("fieldSelector") or "").split(",")):
            label = term.partition("=")[0].rstrip("!=")
            if label not in SLICE_FIELDS:
                raise kmock.KubernetesError(
                    status=400, reason="BadRequest", message=f"field label not supported: {label}"
                )
        token = params.get("continue") or ""
        if token:
            if token not in self._snapshots:
                raise kmock.KubernetesError(
                    status=410, reason="Expired", message="The provided continue parameter is too old"
                )
            items = self._snapshots.pop(token)
        else:
            payload: Any = await super()._serve_list(request)
            items = sorted(
                (copy.deepcopy(o) for o in payload["items"] if _selected(o, params)),
                key=lambda o: str(_get(o, "metadata.name")),
            )
        limit = int(params.get("limit") or 0)
        meta: dict[str, Any] = {"resourceVersion": self._next_rv()}
        if limit > 0 and len(items) > limit:
            token = f"c{next(self._tokens)}"
            self._snapshots[token] = items[limit:]
            items = items[:limit]
            meta["continue"] = token
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSliceList",
            "metadata": meta,
            "items": items,
        }

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
        if res == NODES and mig is not None:
            _check_joining_node(mig, name, body)
        if res == CONFIGMAPS and mig is not None and mig.configmap == (ns, name):
            mig.configmap_written(body)
        if res == CONFIGMAPS and (ns, name) == DEVICE_PLUGIN_CONFIGMAP:
            self.plugin.configmap_written(body)
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
            for operand in DAEMONSETS:
                if labels.get(f"nvidia.com/gpu.deploy.{operand}", "true") == "true":
                    await self._create_operand_pod(name, operand)
            if mig is not None and name not in mig.applied:
                # A node joins with the layout of its label already on its GPUs.
                fresh = ((False, ()),) * _gpus(labels)
                mig.applied[name] = mig.layout_by_minor(self, name, labels.get(MIG_CONFIG, ""), fresh)
        if gpu_node:
            await self._sync_clients(name)

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


def _check_joining_node(mig: FakeMigManager, name: str, node: Mapping[str, Any]) -> None:
    """Refuse a MIG-capable node that joins claiming ``nvidia.com/mig.config.state=success`` for
    a config the manager's mig-parted file does not define: upstream cannot get there (the
    manager asserts the selected config is in its file before anything else and sets
    ``failed`` when it is not, NVIDIA/mig-parted@bd7160f4 pkg/mig/reconfigure/reconfigure.go:
    137-140, :278-290), and the emulator could not know what is on the node's GPUs -- the
    layout a joining node starts with is read from that file (``FakeMigManager.layout``), so
    without it every GPU would silently start with MIG disabled while the node advertises
    MIG devices. Create the mig-parted ConfigMap before such nodes."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    if labels.get(MIG_CAPABLE) != "true" or labels.get(MIG_STATE) != "success" or name in mig.applied:
        return
    config = labels.get(MIG_CONFIG, "")
    if config not in mig.specs:
        where = "/".join(mig.configmap) if mig.configmap else "(none mounted)"
        raise ValueError(
            f"node {name} joins with {MIG_CONFIG}={config} and {MIG_STATE}=success, but the "
            f"mig-parted ConfigMap {where} does not define {config}: upsert the ConfigMap first"
        )


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


Layout = tuple[tuple[bool, tuple[tuple[str, int], ...]], ...]  # per GPU: MIG on?, (profile, count)


def _gpus(labels: Mapping[str, str]) -> int:
    try:
        return max(0, min(64, int(labels.get(GPU_COUNT, "8"))))
    except ValueError:
        return 8


@dataclass
class FakeMigManager:
    """Plays the GPU Operator's MIG manager, one ``Run`` of mig-parted's Go reconfigure per
    change of ``nvidia.com/mig.config`` (NVIDIA/mig-parted@bd7160f4 cmd/nvidia-mig-manager/
    main.go:436-446 calls pkg/mig/reconfigure/reconfigure.go Run, :127-240), step by step:

    1. read the node's labels (:132-135, :250-275): the operand deploy labels it will restore;
    2. assert the config is in its mounted file (:137-140, :278-290), else ``failed`` at once;
    3. already applied (:142-146, :293-305) -> ``success`` at once, nothing is stopped;
    4. after a reboot (state ``rebooting``) the MIG mode must have changed, else ``failed``
       (:153-156, :353-355);
    5. ``pending`` (:158-162); pause the GPU clients (:164-168, :371-386); wait for their pods,
       5 minutes each (here ``shutdown_timeout``; :170-172, :389-428): a wait that times out
       returns with **no** final state, so the node stays ``pending``, operands paused;
    6. the MIG mode change (:184-204): where this node needs a reboot for it (mode
       ``reboot``), with WITH_REBOOT (``with_reboot``) set ``rebooting`` and reboot; the new
       manager pod then starts over at step 1 (the informer's AddFunc, main.go:569-571);
    7. apply (:206-209): mig-parted counts GPUs in PCI address order among the GPUs NVML sees
       (util/device.go:79-101; here ``FakeDraDriver.nvml_order``: its bus ids and hidden GPUs),
       so its index is not the minor the driver names devices by; a GPU no entry selects is
       never walked and keeps its layout (assert/assert.go:215-248); it skips GPUs already in
       their layout (cmd/nvidia-mig-parted/apply/config.go:92-95), unless a MIG mode changes
       anywhere, which clears every GPU (apply/apply.go:258-272, apply/mode.go:88-94, the reset
       of all GPUs :119-129); for a GPU it changes it
       destroys the GPU instances first (pkg/mig/config/config.go:142-147, ClearMigConfig
       :220-252), which NVML refuses while a process uses them ("In use by another client"): a
       running pod holding that GPU fails the apply (``failed``), the GPUs before it already
       set. Which GPU a pod holds: its ResourceClaims' allocated devices on a DRA node
       (``ApiServer.gpu_holders``); with the device plugin not known, so any GPU. A layout the
       GPU cannot carry (geometry from compiler/catalog) fails likewise (config.go:214);
    8. restart the validator (:230-232), re-enable the GPU clients (:234-237, :514-531) and
       set ``success`` (:239).

    Every ``failed`` goes through setState (:540-579), which re-enables the GPU clients it
    paused -- unless ``NoRestartK8sDaemonsetsOnExit`` is set, which the first success of the
    manager's process sets for good (:517, a package variable, :53-56): after that a failure
    leaves the operands paused (``restore_skipped``). The flag is per manager pod: a restart
    (``nvidia.com/gpu.deploy.mig-manager``) or a reboot clears it.

    ``mode`` (or ``per_node``/``decide``) injects faults: ``success``; ``failed`` (the apply
    itself fails); ``hang`` (``pending`` forever); ``reboot`` (the MIG mode change needs a
    reboot on this node). A config its mounted file does not define is ``not-present``.
    """

    resources: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # unused; kept for callers
    mode: str = "success"
    per_node: dict[str, str] = field(default_factory=dict)
    # Called as decide(node, config, attempt) -> mode; overrides mode/per_node when set.
    decide: Callable[[str, str, int], str] | None = None
    delay: float = 0.005
    reboot_delay: float = 0.5
    # How long the apply takes after a reboot (the second run's apply).
    post_reboot_delay: float = 0.0
    with_reboot: bool = True  # WITH_REBOOT (the chart's migManager.env)
    # The manager reads the mig-parted ConfigMap from a volume that the kubelet refreshes only
    # after its sync period plus cache delay: a config name becomes visible to it this long
    # after it appeared in the API (kubernetes docs, "Mounted ConfigMaps are updated
    # automatically"; kubelet pkg/volume/configmap). 0: no lag.
    mount_delay: float = 0.0
    appeared: dict[str, float] = field(default_factory=dict)
    # mig-configs of the mounted file: config -> its entries, as mig-parted reads them.
    specs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # While cleared, successful applies stay ``pending`` (tests freeze nodes mid-Applying).
    gate: threading.Event = field(default_factory=threading.Event)
    # (namespace, name) of the mig-parted ConfigMap the manager mounts.
    configmap: tuple[str, str] | None = None
    handled: list[tuple[str, str, str]] = field(default_factory=list)
    # How long it waits for each paused GPU client's pods to go (reconfigure.go:390: 5m).
    shutdown_timeout: float = 5.0
    # node -> the layout on its GPUs now (what a restarted device plugin publishes).
    applied: dict[str, Layout] = field(default_factory=dict)
    # Nodes where a shutdown wait failed (the state label was left at "pending").
    stuck: list[str] = field(default_factory=list)
    # node -> why its last run failed (the manager's log line).
    errors: dict[str, str] = field(default_factory=dict)
    # NoRestartK8sDaemonsetsOnExit of each node's manager process.
    no_restart_on_exit: dict[str, bool] = field(default_factory=dict)
    # Failures after which the operands were left paused (the flag was set).
    restore_skipped: list[str] = field(default_factory=list)
    rebooted: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.gate.set()

    def _mode(self, node: str, config: str) -> str:
        attempt = sum(1 for n, c, _ in self.handled if n == node and c == config) + 1
        if self.decide is not None:
            return self.decide(node, config, attempt)
        return self.per_node.get(node, self.mode)

    def configmap_written(self, body: Mapping[str, Any]) -> None:
        """Record when each config name first appeared in the mig-parted ConfigMap, and its entries."""
        import yaml

        doc = yaml.safe_load(((body.get("data") or {}).get("config.yaml")) or "") or {}
        configs = (doc.get("mig-configs") or {}) if isinstance(doc, dict) else {}
        for gone in set(self.appeared) - set(configs):
            del self.appeared[gone]
        now = time.monotonic()
        for n in configs:
            self.appeared.setdefault(n, now)
        self.specs = {str(k): list(v or []) for k, v in configs.items()}

    def mounted(self, config: str) -> bool:
        """Whether the manager's mounted copy of the ConfigMap has ``config`` by now."""
        first = self.appeared.get(config)
        return first is not None and time.monotonic() - first >= self.mount_delay

    def layout(self, config: str, gpus: int, base: Layout | None = None) -> Layout:
        """What mig-parted puts on a node's ``gpus`` GPUs (by mig-parted's index) for ``config``
        of the mounted file (each entry's ``devices``: ``all`` or a list of indices; api/spec/v1
        of mig-parted), over ``base``, what is on them now: a GPU no entry selects is never
        walked (assert/assert.go:215-248), so it keeps what it has (MIG off on a fresh node)."""
        per: list[tuple[bool, tuple[tuple[str, int], ...]]] = (
            list(base) if base is not None and len(base) == gpus else [(False, ())] * gpus
        )
        for entry in self.specs.get(config, []):
            devices = entry.get("devices", "all")
            indices = range(gpus) if devices == "all" else [int(i) for i in devices if 0 <= int(i) < gpus]
            profiles = tuple(sorted((str(k), int(v)) for k, v in (entry.get("mig-devices") or {}).items()))
            for i in indices:
                per[i] = (bool(entry.get("mig-enabled")), profiles)
        return tuple(per)

    def layout_by_minor(self, api: ApiServer, node: str, config: str, current: Layout) -> Layout:
        """:meth:`layout` of ``config`` over ``current``, both by minor: mig-parted's index i is
        the i-th GPU NVML sees in PCI address order (``FakeDraDriver.nvml_order``)."""
        dra = api.dra_driver
        order = dra.nvml_order(node, len(current)) if dra is not None else list(range(len(current)))
        walked = self.layout(config, len(order), tuple(current[m] for m in order))
        by_minor = list(current)
        for i, m in enumerate(order):
            by_minor[m] = walked[i]
        return tuple(by_minor)

    # --- one Run --------------------------------------------------------------------------------
    async def react(self, api: ApiServer, node: str, config: str) -> None:
        mode = self._mode(node, config) if (config in self.specs and self.mounted(config)) else "not-present"
        self.handled.append((node, config, mode))
        await asyncio.sleep(self.delay)
        key = (NODES, None, node)
        if key not in api.objects or api.objects[key].deleted:
            return
        labels = dict((api.objects[key].raw.get("metadata") or {}).get("labels") or {})
        deployed = {o: labels.get(f"nvidia.com/gpu.deploy.{o}", "") for o in PAUSED_BY_MANAGER}
        client = labels.get(GPU_CLIENT_KEY, "")
        state_before = labels.get(MIG_STATE, "")
        gpus = _gpus(labels)

        async def set_state(state: str, why: str = "") -> None:
            # setState: re-enable the GPU clients unless the flag is set, then the state label.
            if why:
                self.errors[node] = why
            if not self.no_restart_on_exit.get(node, False):
                await api.patch_obj(NODES, None, node, {"metadata": {"labels": _restore(deployed, client)}})
                api.sync_operands(node)
                await api._sync_clients(node)
            elif state == "failed":
                self.restore_skipped.append(node)
            await api.patch_obj(NODES, None, node, {"metadata": {"labels": {MIG_STATE: state}}})

        if mode == "hang":
            await api.patch_obj(NODES, None, node, {"metadata": {"labels": {MIG_STATE: "pending"}}})
            return
        if mode == "not-present":
            await set_state("failed", f"selected mig-config {config} not present")
            return
        current = self.applied.get(node, ((False, ()),) * gpus)  # by minor
        # mig-parted's GPU index i is the i-th GPU NVML sees in PCI address order (util/device.go
        # :79-101; go-nvlib nvpci.go:235-237), not the minor: ``order[i]`` is that GPU's minor.
        dra = api.dra_driver
        order = dra.nvml_order(node, len(current)) if dra is not None else list(range(len(current)))
        new = self.layout_by_minor(api, node, config, current)
        if new == current:
            await set_state("success")  # already applied: nothing is stopped
            return
        mode_change = tuple(g[0] for g in new) != tuple(g[0] for g in current)
        if state_before == "rebooting" and mode_change:
            await set_state("failed", "MIG mode change did not take effect after rebooting")
            return
        await api.patch_obj(NODES, None, node, {"metadata": {"labels": {MIG_STATE: "pending"}}})
        paused = {
            f"nvidia.com/gpu.deploy.{o}": ("false" if v == "false" else PAUSED) for o, v in deployed.items()
        }
        if client:
            paused[GPU_CLIENT_KEY] = "false" if client == "false" else PAUSED
        await api.patch_obj(NODES, None, node, {"metadata": {"labels": paused}})
        api.sync_operands(node)
        await api._sync_clients(node)
        for app in WAITED_APPS:
            if not await self._wait_gone(
                functools.partial(api.pods_on, node, namespace=OPERATOR_NAMESPACE, app=app)
            ):
                self.stuck.append(node)
                return  # no final state: "pending" stays, the clients stay paused
        if not await self._wait_gone(lambda: [p for p in api.pods_on(node) if _client_daemon_pod(p)]):
            self.stuck.append(node)
            return
        while not self.gate.is_set():
            await asyncio.sleep(0.005)
        if mode_change and mode == "reboot":
            if not self.with_reboot:
                await set_state("failed", "unable to apply MIG config with MIG mode disabled")
                return
            await api.patch_obj(NODES, None, node, {"metadata": {"labels": {MIG_STATE: "rebooting"}}})
            self._spawn_reboot(api, node, config, new)
            return
        # Which GPUs the apply touches: a MIG mode change anywhere makes ApplyMigMode walk every
        # GPU and clear the MIG configuration of each one in MIG mode (apply/apply.go:258-272,
        # apply/mode.go:56-94); otherwise ApplyMigConfig goes GPU by GPU and skips a GPU whose
        # devices already equal the config (apply/config.go:46-103, the skip :92-95). A GPU in
        # use by a pod that must change fails the apply there; the GPUs walked before it are
        # already set (GPU by GPU, in index order here: mig-parted walks its entries in order,
        # assert/assert.go:221-245).
        # A pending mode change resets every GPU NVML sees (apply/mode.go:119-129). The GPU a pod
        # holds is by minor (the emulated driver names its devices after the minor it gave them);
        # the message names mig-parted's index, as mig-parted's does.
        changed = [i for i, m in enumerate(order) if mode_change or new[m] != current[m]]
        holders = api.gpu_holders(node)
        for at, i in enumerate(changed):
            busy = sorted(p for p, held in holders.items() if held is None or order[i] in held)
            if busy:
                if not mode_change:
                    done = {order[j] for j in changed[:at]}
                    self.applied[node] = tuple(new[m] if m in done else current[m] for m in range(gpus))
                await set_state(
                    "failed",
                    f"GPU {i}: error destroying GPU instance: In use by another client ("
                    + ", ".join(busy)
                    + ")",
                )
                return
        why = _infeasible(labels, new)
        if why is not None:
            await set_state("failed", f"error attempting multiple config orderings: {why}")
            return
        if mode == "failed":
            await set_state("failed", "error setting MIGConfig (injected)")
            return
        if node in self.rebooted and self.post_reboot_delay:
            await asyncio.sleep(self.post_reboot_delay)
        self.applied[node] = new
        for pod in api.pods_on(node, namespace=OPERATOR_NAMESPACE, app=VALIDATOR[1]):
            await api.remove(PODS, OPERATOR_NAMESPACE, str(pod["metadata"]["name"]))
        api.sync_operands(node)  # its DaemonSet brings the validator back
        self.no_restart_on_exit[node] = True
        await api.patch_obj(NODES, None, node, {"metadata": {"labels": _restore(deployed, client)}})
        api.sync_operands(node)
        await api._sync_clients(node)
        await api.patch_obj(NODES, None, node, {"metadata": {"labels": {MIG_STATE: "success"}}})

    def _spawn_reboot(self, api: ApiServer, node: str, config: str, new: Layout) -> None:
        async def reboot() -> None:
            await asyncio.sleep(self.reboot_delay)
            # The pending MIG mode takes effect; a new manager process starts (flag cleared)
            # and applies the label it finds (main.go:569-571).
            self.applied[node] = tuple((g[0], ()) for g in new)
            self.no_restart_on_exit[node] = False
            self.rebooted.append(node)
            key = (NODES, None, node)
            if key in api.objects and not api.objects[key].deleted:
                label = ((api.objects[key].raw.get("metadata") or {}).get("labels") or {}).get(MIG_CONFIG)
                if label:
                    await self.react(api, node, str(label))

        api._spawn(reboot())

    async def _wait_gone(self, running: Callable[[], list[Any]]) -> bool:
        deadline = time.monotonic() + self.shutdown_timeout
        while running():
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.005)
        return True


def _restore(deployed: Mapping[str, str], client: str) -> dict[str, str]:
    """maybeSetTrue of every label it read (reconfigure.go:588-593): "false" stays, anything
    else -- unset included -- becomes "true"."""
    out = {f"nvidia.com/gpu.deploy.{o}": ("false" if v == "false" else "true") for o, v in deployed.items()}
    if client:
        out[GPU_CLIENT_KEY] = "false" if client == "false" else "true"
    return out


def _client_daemon_pod(pod: Mapping[str, Any]) -> bool:
    """A DaemonSet pod whose nodeSelector has nvidia.com/gpu.deploy.client (reconfigure.go:658-665)."""
    refs = (pod.get("metadata") or {}).get("ownerReferences") or []
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    return any(r.get("kind") == "DaemonSet" for r in refs) and GPU_CLIENT_KEY in selector


def _infeasible(labels: Mapping[str, str], layout: Layout) -> str | None:
    """Why a GPU of the node's model cannot carry its layout (compiler/catalog geometry), else None."""
    from compiler.catalog import load_catalog
    from compiler.catalog.layouts import place

    model = load_catalog().by_product(labels.get("nvidia.com/gpu.product", ""))
    if model is None:
        return None  # an unknown product: nothing to check against
    for i, (enabled, profiles) in enumerate(layout):
        if enabled and place(model, dict(profiles)) is None:
            return f"GPU {i}: {dict(profiles)} does not fit a {model.model}"
    return None


@dataclass
class DevicePluginState:
    """The NVIDIA device plugin's config-manager and resource naming.

    The config-manager picks the device-plugin config named by ``nvidia.com/device-plugin.config``
    among the keys of the device-plugin ConfigMap; a name that is not there is an error
    ("specified config %v does not exist", NVIDIA/k8s-device-plugin@1b826acc
    cmd/config-manager/main.go:351-356) that ends the process (:250-252, :207-211), so the plugin
    never comes up with it: nothing is published (``failed``). With a config, the plugin
    publishes what is on the GPUs (``FakeMigManager.applied``, never the assignment): under
    ``migStrategy: mixed`` one ``nvidia.com/mig-<profile>`` per MIG device ("+" becomes ".",
    internal/rm/rm.go:140-147) and ``nvidia.com/gpu`` for GPUs with MIG off (rm.go:111); under
    ``single`` every MIG device as ``nvidia.com/gpu`` (rm.go:116-117); under ``none`` the GPUs
    with MIG off; a ``sharing`` (timeSlicing or mps) entry for ``nvidia.com/gpu`` multiplies it
    by its ``replicas``. ``configs`` None: no ConfigMap modelled, every name is mixed.
    """

    configs: dict[str, dict[str, Any]] | None = None
    failed: list[tuple[str, str]] = field(default_factory=list)
    default: str = "migc-whole-gpus"  # devicePlugin.config.default as migc renders it

    def configmap_written(self, body: Mapping[str, Any]) -> None:
        import yaml

        self.configs = {str(k): yaml.safe_load(v) or {} for k, v in (body.get("data") or {}).items()}

    def publish(self, api: ApiServer, node: str, layout: Layout) -> dict[str, int] | None:
        raw = api.objects[(NODES, None, node)].raw
        # No label: the config-manager's --default-config (main.go:359-365), which the operator
        # sets from devicePlugin.config.default.
        name = ((raw.get("metadata") or {}).get("labels") or {}).get(DEVICE_PLUGIN_CONFIG) or self.default
        if self.configs is None:
            body: dict[str, Any] = {"flags": {"migStrategy": "mixed"}}
        elif name not in self.configs:
            self.failed.append((node, name))
            return None
        else:
            body = self.configs[name]
        strategy = ((body.get("flags") or {}).get("migStrategy")) or "none"
        replicas = 1
        for kind in ("timeSlicing", "mps"):
            for r in ((body.get("sharing") or {}).get(kind) or {}).get("resources") or []:
                if r.get("name") == "nvidia.com/gpu":
                    replicas = int(r.get("replicas", 1))
        whole = sum(1 for enabled, _ in layout if not enabled)
        out: dict[str, int] = {"nvidia.com/gpu": whole * replicas}
        for enabled, profiles in layout:
            if not enabled:
                continue
            for profile, count in profiles:
                if strategy == "mixed":
                    key = "nvidia.com/mig-" + profile.replace("+", ".")
                    out[key] = out.get(key, 0) + count
                elif strategy == "single":
                    out["nvidia.com/gpu"] += count
        return out


@dataclass
class FakeDevicePlugin:
    """Plays the NVIDIA device plugin on a node without MIG: on a change of
    ``nvidia.com/device-plugin.config`` its config-manager switches to that config and the plugin
    restarts (cmd/config-manager/main.go:246-254) and advertises the node's GPUs
    (``nvidia.com/gpu.count``, set by GFD) under the config's sharing (``DevicePluginState``),
    read from the device-plugin ConfigMap -- not from the assignment's ``resources``."""

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
        gpus = _gpus((raw.get("metadata") or {}).get("labels") or {})
        published = api.plugin.publish(api, node, ((False, ()),) * gpus)
        if published is None:
            return
        await api.patch_obj(
            NODES, None, node, {"status": {"allocatable": {k: str(v) for k, v in published.items()}}}
        )


# --- the NVIDIA DRA driver's kubelet plugin ---------------------------------------------------------
DRA_DRIVER = "kubernetes-sigs/dra-driver-nvidia-gpu@95932046683719c43b6a0dd9613c2e5aad5d6703"
# ResourceSlice fields the API server can select on (strategy.go toSelectableFields, cited above).
SLICE_FIELDS = ("metadata.name", "spec.nodeName", "spec.driver")
PCI_BUS_ID = "resource.kubernetes.io/pciBusID"
_ARCH = {
    "A": ("Ampere", "8.0.0"),
    "H": ("Hopper", "9.0.0"),
    "G": ("Hopper", "9.0.0"),
    "B": ("Blackwell", "10.0.0"),
}


@dataclass
class FakeDraDriver:
    """Plays the NVIDIA DRA driver's GPU kubelet plugin in static-MIG mode (``DynamicMIG`` off) on
    the nodes its DaemonSet runs on, and the kubelet's clean-up of its ResourceSlices
    (kubernetes-sigs/dra-driver-nvidia-gpu@95932046, vendored k8s.io/dynamic-resource-allocation).

    * Its DaemonSet (``daemonset``, registered with ``ApiServer.add_client_daemonset``) selects
      ``nvidia.com/gpu.deploy.client=true`` (the affinity migc renders in the driver's values,
      docs/dra.md), so the MIG manager pauses it while it changes a layout (mig-parted
      reconfigure.go:381-383, :412-415) and re-enables it afterwards: the pod is deleted and
      created again.
    * Devices are discovered once, when the plugin starts (cmd/gpu-kubelet-plugin/nvlib.go:201-205
      GetPerGpuAllocatableDevices "is called once upon startup"; docs: "Partitions added after the
      driver starts are not discovered until the GPU kubelet plugin restarts"), from what is on the
      GPUs -- ``FakeMigManager.applied``, the layout the MIG manager really applied, never the
      assignment or the DraPlan -- after ``start_delay`` (discovery, kubelet registration). A GPU
      with MIG off is one device ``gpu-<minor>`` of type ``gpu`` (nvlib.go:311-318,
      deviceinfo.go:124-126, :170-196); a GPU with MIG on announces only its MIG devices, not
      itself (nvlib.go:321-327), each named ``gpu-<minor>-mig-<profile without dots>-<GI profile
      id>-<placement start>`` (mig.go:111-114) with attributes ``type: mig``, ``parentUUID``,
      ``profile``, ``productName``, ... and ``uuid`` (mig.go:139-167, deviceinfo.go:258-281) and a
      ``memorySlice<i>`` capacity per memory slice it holds. Both carry the GPU's PCI bus id as
      ``resource.kubernetes.io/pciBusID`` (nvlib.go:546-551; deviceinfo.go:198-200, mig.go:176-178),
      rising with the minor unless ``bus_ids`` says other. Profile ids and placements come from
      compiler/catalog (the placement is the catalog's witness ``place``; NVML's own choice may
      differ, which only changes device names). ``hidden_gpus`` injects GPUs NVML does not see
      (fallen off the bus): their devices are not announced.
    * Publishing: one pool named after the node; static mode hands all devices to the
      ResourceSlice controller as one Slice (driver.go:480-492). ``slices_per_pool`` > 1 splits
      them by GPU, as a driver handing several Slices does (its DynamicMIG mode: one per GPU,
      driver.go:201-250), to exercise the controller's generation handling. The ResourceSlice
      controller's ``syncPool`` (resourceslice/resourceslicecontroller.go:668-935) is followed
      call by call, ``api_delay`` apart: the newest existing generation is kept when at most one
      slice must change and none is new (:803-804), else bumped (:805-808); obsolete slices (an
      older generation, or no matching index, :733-761) are deleted first (:812-816), then matched
      slices updated (:818-843), then missing ones created with ``generateName``
      ``<index, 5 hex digits>-gpu.nvidia.com-<node>-`` (:845-909, the name :864-870): while that
      runs the API shows a newest generation with fewer slices than its ``resourceSliceCount``,
      beside the older one's slices not updated yet.
    * When the plugin's pod goes away its slices stay (nobody deletes them on stop) until the
      kubelet wipes the node's slices of the driver ``wipe_delay`` later, unless the plugin
      registers again first (kubernetes/kubernetes@00623539 pkg/kubelet/cm/dra/plugin/
      dra_plugin_manager.go: pendingWipes, wipeResourceSlices's DeleteCollection by
      spec.nodeName and spec.driver): so right after a layout change the old layout's slices are
      still there until the new plugin has published.
    """

    daemonset: tuple[str, str] = ("nvidia-dra-driver-gpu", "nvidia-dra-driver-gpu-kubelet-plugin")
    driver: str = "gpu.nvidia.com"
    start_delay: float = 0.05
    api_delay: float = 0.0
    wipe_delay: float = 30.0
    slices_per_pool: int = 1
    hidden_gpus: dict[str, set[int]] = field(default_factory=dict)
    # node -> the PCI bus id of each GPU by minor (default: rising with the minor).
    bus_ids: dict[str, list[str]] = field(default_factory=dict)
    # node -> the plugin process generation (bumped at every start and stop).
    epoch: dict[str, int] = field(default_factory=dict)
    # (node, pool generation, slices) after each finished sync; (node, "wiped") for kubelet wipes.
    published: list[tuple[str, Any, int]] = field(default_factory=list)
    # node -> len(api.history) when its last sync wrote its first and its last object.
    sync_window: dict[str, tuple[int, int]] = field(default_factory=dict)

    def nvml_order(self, node: str, gpus: int) -> list[int]:
        """The minors of the node's GPUs NVML sees (not ``hidden_gpus``), in PCI address order:
        position i is the GPU mig-parted calls index i (util/device.go:79-101)."""
        hidden = self.hidden_gpus.get(node, set())
        visible = [m for m in range(gpus) if m not in hidden]
        return sorted(
            visible, key=lambda m: tuple(int(p, 16) for p in re.split(r"[:.]", self.bus_id(node, m)))
        )

    def bus_id(self, node: str, minor: int) -> str:
        """The PCI bus id of GPU ``minor`` (rising with the minor unless ``bus_ids`` says other)."""
        listed = self.bus_ids.get(node)
        if listed is not None and minor < len(listed):
            return listed[minor]
        return f"0000:{0x18 + 0x10 * minor:02x}:00.0"

    def started(self, api: ApiServer, node: str) -> None:
        self.epoch[node] = self.epoch.get(node, 0) + 1
        api._spawn(self._start(api, node, self.epoch[node]))

    def stopped(self, api: ApiServer, node: str) -> None:
        self.epoch[node] = self.epoch.get(node, 0) + 1
        api._spawn(self._wipe_later(api, node, self.epoch[node]))

    async def _wipe_later(self, api: ApiServer, node: str, epoch: int) -> None:
        await asyncio.sleep(self.wipe_delay)
        if self.epoch.get(node) != epoch:
            return  # the plugin registered again: the kubelet's pending wipe is cancelled
        for name, _obj in self.slices(api, node):
            await api.remove(RESOURCESLICES, None, name)
        self.published.append((node, "wiped", 0))

    def slices(self, api: ApiServer, node: str) -> list[tuple[str, dict[str, Any]]]:
        out = []
        for (res, _ns, name), obj in api.objects.items():
            if res != RESOURCESLICES or obj.deleted:
                continue
            spec = obj.raw.get("spec") or {}
            if spec.get("nodeName") == node and spec.get("driver") == self.driver:
                out.append((str(name), copy.deepcopy(obj.raw)))
        return sorted(out)

    async def _start(self, api: ApiServer, node: str, epoch: int) -> None:
        await asyncio.sleep(self.start_delay)
        if self.epoch.get(node) != epoch:
            return
        await self._sync(api, node, epoch, self.discover(api, node))

    # --- discovery ------------------------------------------------------------------------------
    def discover(self, api: ApiServer, node: str) -> list[list[dict[str, Any]]]:
        """The devices of each GPU (by minor) as the plugin announces them now."""
        from compiler.catalog import load_catalog
        from compiler.catalog.layouts import place

        raw = api.objects[(NODES, None, node)].raw
        labels = (raw.get("metadata") or {}).get("labels") or {}
        product = str(labels.get("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"))
        model = load_catalog().by_product(product)
        mig = api.mig_manager
        layout = mig.applied.get(node) if mig is not None else None
        if layout is None:
            layout = ((False, ()),) * _gpus(labels)
        arch, cc = _ARCH.get(product.removeprefix("NVIDIA-")[:1], ("Hopper", "9.0.0"))
        common = {
            "productName": {"string": product.replace("-", " ")},
            "brand": {"string": "Nvidia"},
            "architecture": {"string": arch},
            "cudaComputeCapability": {"version": cc},
            "driverVersion": {"version": "580.95.5"},
            "cudaDriverVersion": {"version": "13.0.0"},
        }
        gpus: list[list[dict[str, Any]]] = []
        for minor, (enabled, profiles) in enumerate(layout):
            if minor in self.hidden_gpus.get(node, set()):
                gpus.append([])
                continue
            uuid = f"GPU-{_uid(node, minor)}"
            # Every device carries its GPU's PCI bus id, a MIG device its parent's (nvlib.go:546-551,
            # deviceinfo.go:198-200, mig.go:176-178; the name, vendored deviceattribute/attribute.go:39).
            bus = {PCI_BUS_ID: {"string": self.bus_id(node, minor)}}
            if not enabled:
                memory = f"{int((model.memory_gb if model else 80) * 1024)}Mi"
                gpus.append(
                    [
                        {
                            "name": f"gpu-{minor}",
                            "attributes": {
                                "type": {"string": "gpu"},
                                "uuid": {"string": uuid},
                                **common,
                                **bus,
                            },
                            "capacity": {"memory": {"value": memory}},
                        }
                    ]
                )
                continue
            placed = place(model, dict(profiles)) if model is not None else None
            if placed is None:  # an unknown product: placements in listing order
                placed = tuple((p, i, 1) for i, p in enumerate(p for p, c in profiles for _ in range(c)))
            devices = []
            for profile_name, start, size in placed:
                prof = model.profile(profile_name) if model is not None else None
                pid = prof.id if prof is not None and prof.id is not None else 0
                short = re.sub(r"[^a-z0-9-.]", "-", profile_name.replace(".", "").lower()).strip("-")
                capacity: dict[str, Any] = {
                    "memory": {"value": f"{int((prof.memory_gb if prof else 10) * 1024)}Mi"},
                    **{f"memorySlice{i}": {"value": "1"} for i in range(start, start + size)},
                }
                devices.append(
                    {
                        "name": f"gpu-{minor}-mig-{short}-{pid}-{start}",
                        "attributes": {
                            "type": {"string": "mig"},
                            "parentUUID": {"string": uuid},
                            "profile": {"string": profile_name},
                            "uuid": {"string": f"MIG-{_uid(node, minor, start, profile_name)}"},
                            **common,
                            **bus,
                        },
                        "capacity": capacity,
                    }
                )
            gpus.append(sorted(devices, key=lambda d: str(d["name"])))
        return gpus

    def _desired(self, gpus: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
        k = max(1, self.slices_per_pool)
        if k == 1:
            return [[d for g in gpus for d in g]]
        chunks: list[list[dict[str, Any]]] = [[] for _ in range(k)]
        for minor, devices in enumerate(gpus):
            chunks[minor * k // max(1, len(gpus))].extend(devices)
        return chunks

    # --- the ResourceSlice controller's syncPool ------------------------------------------------
    async def _sync(self, api: ApiServer, node: str, epoch: int, gpus: list[list[dict[str, Any]]]) -> None:
        desired = self._desired(gpus)
        existing = self.slices(api, node)
        generation = max((int(o["spec"]["pool"]["generation"]) for _n, o in existing), default=0)
        width = max(5, len(format(len(desired) - 1, "x")))
        matched: dict[int, tuple[str, dict[str, Any]]] = {}
        obsolete: list[str] = []
        for name, obj in existing:
            if int(obj["spec"]["pool"]["generation"]) < generation:
                obsolete.append(name)
                continue
            head = name[:width]
            index = int(head, 16) if len(name) > width and name[width] == "-" and _hex(head) else -1
            if 0 <= index < len(desired) and index not in matched:
                matched[index] = (name, obj)
            else:
                obsolete.append(name)
        pool = {"name": node, "generation": generation, "resourceSliceCount": len(desired)}
        changed = {
            i
            for i, (_n, o) in matched.items()
            if o["spec"]["pool"] != pool or o["spec"].get("devices") != desired[i]
        }
        new = len(desired) - len(matched)
        bumped = not (new == 0 and len(changed) <= 1)
        if bumped:
            generation += 1
        pool = {**pool, "generation": generation}
        first: int | None = None

        async def step() -> bool:
            """Before each API call but the first: ``api_delay``; whether the plugin still runs
            (a stopped plugin writes nothing more)."""
            nonlocal first
            if first is None:
                first = len(api.history)
                return self.epoch.get(node) == epoch
            await asyncio.sleep(self.api_delay)
            return self.epoch.get(node) == epoch

        for name in obsolete:
            if not await step():
                return
            await api.remove(RESOURCESLICES, None, name)
        for i, (name, obj) in sorted(matched.items()):
            if i not in changed and not bumped:
                continue
            body = copy.deepcopy(obj)
            body["spec"]["pool"] = dict(pool)
            body["spec"]["devices"] = copy.deepcopy(desired[i])
            # PrepareForUpdate: a spec change bumps metadata.generation (strategy.go).
            body["metadata"]["generation"] = int(body["metadata"].get("generation", 1)) + 1
            if not await step():
                return
            await api.upsert(RESOURCESLICES, None, name, body)
        for i in range(len(desired)):
            if i in matched:
                continue
            name = f"{i:0{width}x}-{self.driver}-{node}-{_uid(node, generation, i)[:5]}"
            body = {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {
                    "generateName": f"{i:0{width}x}-{self.driver}-{node}-",
                    "generation": 1,
                    "ownerReferences": [
                        {
                            "apiVersion": "v1",
                            "kind": "Node",
                            "name": node,
                            "uid": _uid(node),
                            "controller": True,
                        }
                    ],
                },
                "spec": {
                    "driver": self.driver,
                    "pool": dict(pool),
                    "nodeName": node,
                    "devices": copy.deepcopy(desired[i]),
                },
            }
            if not await step():
                return
            await api.upsert(RESOURCESLICES, None, name, body)
        self.sync_window[node] = (first if first is not None else len(api.history), len(api.history))
        self.published.append((node, generation, len(desired)))


def _hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def _uid(*parts: object) -> str:
    import hashlib

    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:32]


class EmulatorThread:
    """Runs an ``ApiServer`` on 127.0.0.1 in a background event loop; sync helpers for callers."""

    def __init__(
        self,
        mig_manager: FakeMigManager | None = None,
        device_plugin: FakeDevicePlugin | None = None,
        dra_driver: FakeDraDriver | None = None,
    ) -> None:
        self.mig_manager = mig_manager
        self.device_plugin = device_plugin
        self.dra_driver = dra_driver
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
            api_server = ApiServer(
                mig_manager=self.mig_manager, device_plugin=self.device_plugin, dra_driver=self.dra_driver
            )
            async with api_server as api, kmock.Server(api) as http:
                for res in (
                    "v1/nodes",
                    "v1/pods",
                    "v1/configmaps",
                    "v1/events",
                    "coordination.k8s.io/v1/leases",
                    "resource.k8s.io/v1/resourceslices",
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
            for res in (NODES, PODS, CONFIGMAPS, EVENTS, LEASES, RESOURCESLICES):
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


def device_plugin_configmap(
    configs: Mapping[str, Mapping[str, Any]], namespace: str, name: str
) -> dict[str, Any]:
    """The device-plugin ConfigMap: one key per config name, its body as YAML (the format the
    plugin's config-manager reads, NVIDIA/k8s-device-plugin api/config/v1)."""
    import yaml

    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {k: yaml.safe_dump(dict(v)) for k, v in sorted(configs.items())},
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


def claimed_pod(
    name: str, node: str, claim: str, *, namespace: str = "default", template: bool = True
) -> dict[str, Any]:
    """A running pod that holds its devices through one ResourceClaim ``claim``: made from a
    ResourceClaimTemplate (the claim's name is then in ``status.resourceClaimStatuses``, as the
    kubelet's resourceclaim controller records it, core/v1 types.go:4564-4583) or named directly
    (``spec.resourceClaims[].resourceClaimName``, types.go:4531). Nothing in its limits."""
    pod = pod_object(name, node, namespace=namespace, gpu=None)
    pod["metadata"]["uid"] = _uid("pod", namespace, name)
    entry: dict[str, Any] = {"name": "gpu"}
    if template:
        entry["resourceClaimTemplateName"] = f"{name}-gpu"
        pod["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": claim}]
    else:
        entry["resourceClaimName"] = claim
    pod["spec"]["resourceClaims"] = [entry]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return pod


def allocated_claim(
    name: str,
    namespace: str,
    node: str,
    devices: list[str],
    *,
    pod: Mapping[str, Any] | None = None,
    driver: str = "gpu.nvidia.com",
) -> dict[str, Any]:
    """A ResourceClaim as the kube-scheduler leaves it for a pod on ``node``: one request, one
    allocation result per device ``{request, driver, pool, device}`` (k8s.io/api resource/v1
    types.go:1730-1792, vendored at kubernetes-sigs/dra-driver-nvidia-gpu@95932046; the DRA
    driver's pool is named after the node, FakeDraDriver), a node selector on the node, and the
    pod in ``reservedFor`` (types.go:1642)."""
    status: dict[str, Any] = {
        "allocation": {
            "devices": {
                "results": [{"request": "gpu", "driver": driver, "pool": node, "device": d} for d in devices]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            },
        }
    }
    if pod is not None:
        meta = pod["metadata"]
        status["reservedFor"] = [{"resource": "pods", "name": meta["name"], "uid": meta.get("uid", "")}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, "uid": _uid("claim", namespace, name)},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "gpu", "exactly": {"deviceClassName": "mig.nvidia.com", "count": len(devices)}}
                ]
            }
        },
        "status": status,
    }
