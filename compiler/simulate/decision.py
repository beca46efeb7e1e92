"""The replay's state as ``migc recommend`` sees a cluster, so that ``migc simulate --decision
recommend`` runs recommend's own decision (:func:`compiler.recommend.engine.recommend`) at every
interval (issue 22 item 1: one decision, the replay only a harness around it).

What recommend is given, built from the replay (:class:`compiler.simulate.engine._Run`):

* **the policy** (:func:`replay_policy`): one cluster and pool ``sim`` of the replayed nodes
  (``node-0`` …), one Tenant ``sim`` (namespace ``sim``), and one Workload per MIG profile the trace
  asks for (``need.profiles: [p]``) plus ``gpu`` (``need.gpus: 1``, exclusive) for the pods of one
  whole GPU and, for the pods of ``k`` > 1 whole GPUs, Tenant ``sim-xk`` (namespace ``sim-xk``)
  with Workload ``gpu-xk`` (``need.gpus: k``: the ``k`` GPUs on one node, as the pod needs them) —
  the full profile's pods ask ``nvidia.com/gpu: k`` as they would on a real cluster. Its
  replicas are what the latest revision declares: at the start 0 (recommend never sizes down a
  profile it has not observed, so the start's all-balanced instances declared would be held for
  good), then each accepted proposal's replicas (what recommend writes back to Git);
* **the deployed layout** (:func:`current_state`): every GPU's layout of the latest revision (what
  ``output/`` says is deployed, ``--against``), a whole GPU as MIG disabled;
* **the observation** (:func:`observation`): each node's controller phase (Idle, Draining, Applying,
  Failed with its time), the running pods with their node, ``status.startTime`` and
  ``creationTimestamp`` (start − the wait of that attempt), the pending pods with the seconds since
  their creation (an evicted pod is re-created, so only the latest attempt's wait is seen) and
  ``migc.dev/max-wait-time``. Times are whole seconds, as the API server writes them;
* **the state file**: the ``State`` recommend returned at the previous interval.

The proposal's targets (:attr:`compiler.recommend.engine.Recommendation.targets`, what ``migc
compile`` renders from the proposed replicas) become the replay's new revision (:func:`layouts_of`).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compiler.catalog import Catalog, GpuModel
from compiler.catalog.layouts import place
from compiler.model import (
    IDLE_SURGE,
    Cluster,
    CurrentState,
    GpuLayout,
    Need,
    NodeLayout,
    NodePool,
    PartitionPolicy,
    Policy,
    Tenant,
    Workload,
)
from compiler.observe import Observation, ObservedPod
from compiler.observe.model import ObservedNode, Rollout, resource_of
from compiler.recommend.engine import Solver, exact
from compiler.solve.result import Solution

NAME = "sim"  # the cluster, pool, tenant and namespace of the replay
DRA_KUBERNETES = "1.34"  # resource.k8s.io/v1 is GA (docs/dra.md, MIGC161)
DRA_DRIVER = "gpu.nvidia.com"
PCI_BUS_ID = "resource.kubernetes.io/pciBusID"
WHOLE = "gpu"  # recommend's name for whole-GPU demand (``nvidia.com/gpu``)
Layout = dict[str, int]


def node_name(node: int) -> str:
    """The replayed node's name (the replay's own logs and minDwell keys use the same)."""
    return f"node-{node}"


def whole_gpus(key: str) -> int:
    """GPUs one pod of a demand class asks for: ``gpu`` 1, ``gpu-x<k>`` k, a MIG profile 0."""
    if key == WHOLE:
        return 1
    if key.startswith(WHOLE + "-x"):
        return int(key.removeprefix(WHOLE + "-x"))
    return 0


def namespace_of(key: str) -> str:
    """The tenant and namespace of a demand class: ``sim``, and ``sim-x<k>`` for the pods of ``k``
    whole GPUs — recommend counts whole-GPU demand per (tenant, ``gpu``) in GPUs, so pods of
    ``k`` GPUs, which need ``k`` GPUs of one node, are a tenant of their own with a Workload of
    ``need.gpus: k`` (one of ``need.gpus: 1`` would let the solver spread their GPUs over nodes)."""
    k = whole_gpus(key)
    return NAME if k <= 1 else f"{NAME}-x{k}"


def workload_name(profile: str) -> str:
    if whole_gpus(profile):
        return profile
    return "mig-" + profile.replace(".", "-").replace("+", "-")


def demand_name(profile: str, full: str, count: int = 1) -> str:
    """The replay's pod class as recommend counts it: the full profile's pods ask for whole GPUs
    (``gpu``; ``gpu-x<k>`` for pods of ``k`` of them), a MIG profile's for instances of it."""
    if profile != full:
        return profile
    return WHOLE if count <= 1 else f"{WHOLE}-x{count}"


def replay_policy(
    model: GpuModel,
    nodes: int,
    gpus_per_node: int,
    max_unavailable: int,
    partition: PartitionPolicy,
    declared: Mapping[str, int],
    dra: bool = False,
    idle_surge: int = IDLE_SURGE,
) -> Policy:
    """The policy set recommend reads (module docstring); ``declared``: replicas per demand class
    (:func:`demand_name`: a MIG profile, ``gpu``, ``gpu-x<k>``), one Workload each, sorted by name.
    ``dra``: the pool is a static DRA pool (``--drain-scope gpu``: the controller drains only the pods
    on GPUs that change, and recommend prices it so), on the first Kubernetes with ``resource.k8s.io/v1``."""
    pool = NodePool(
        name=NAME,
        cluster=NAME,
        gpu_product=model.gpu_products[0] if model.gpu_products else model.model,
        gpu_model=model.model,
        gpus_per_node=gpus_per_node,
        node_names=tuple(sorted(node_name(n) for n in range(nodes))),
        max_unavailable=max_unavailable,
        idle_surge=idle_surge,
        # the Fleet's pricing of the model, as the loader resolves a pool's price (validate/build.py)
        price_per_gpu_hour=dict(partition.pricing).get(model.model),
        allocation="dra" if dra else "device-plugin",
    )
    tier = partition.tiers[-1].name
    workloads = tuple(
        Workload(
            name=workload_name(p),
            tenant=namespace_of(p),
            replicas=n,
            need=Need(gpus=whole_gpus(p)) if whole_gpus(p) else Need(profiles=(p,)),
            isolation="exclusive" if whole_gpus(p) else "hardware",
            priority_tier=tier,
            cluster=NAME,
        )
        for p, n in sorted(declared.items(), key=lambda x: workload_name(x[0]))
    )
    spaces = sorted({NAME, *(namespace_of(p) for p in declared)})
    return Policy(
        clusters=(Cluster(NAME, (pool,), kubernetes_version=DRA_KUBERNETES if dra else "1.31"),),
        tenants=tuple(Tenant(ns, (ns,), tier) for ns in spaces),
        workloads=workloads,
        partition=partition,
        fleet_name="replay",
    )


def gpu_layout(lay: Mapping[str, int], full: str) -> GpuLayout:
    """One replayed GPU as the solver knows it: one full-profile instance is a whole GPU."""
    if dict(lay) == {full: 1}:
        return GpuLayout.whole()
    return GpuLayout.of({p: c for p, c in lay.items() if c > 0})


def layout_of(gpu: GpuLayout, full: str) -> Layout:
    """Inverse of :func:`gpu_layout`: a whole GPU serves what one full-profile instance serves; MIG
    on with no instance (mig-parted's all-enabled) serves nothing."""
    return {full: 1} if not gpu.mig_enabled else dict(gpu.profiles)


def current_state(target: Sequence[Mapping[str, int]], gpus_per_node: int, full: str) -> CurrentState:
    """The latest revision's layout of every GPU (GPU ``g`` is GPU ``g % gpus_per_node`` of node
    ``g // gpus_per_node``), keyed as ``output/``'s assignment is read back."""
    nodes = len(target) // gpus_per_node
    return CurrentState(
        nodes=tuple(
            sorted(
                (
                    (NAME, NAME, node_name(n)),
                    tuple(
                        gpu_layout(target[g], full) for g in range(n * gpus_per_node, (n + 1) * gpus_per_node)
                    ),
                )
                for n in range(nodes)
            )
        )
    )


def layouts_of(targets: Iterable[tuple[str, NodeLayout]], gpus_per_node: int, full: str) -> dict[int, Layout]:
    """The proposal's node layouts as the replay's per-GPU layouts, by global GPU index."""
    out: dict[int, Layout] = {}
    for name, gpus in targets:
        node = int(name.removeprefix("node-"))
        for k, gpu in enumerate(gpus):
            out[node * gpus_per_node + k] = layout_of(gpu, full)
    return out


@dataclass(frozen=True)
class Running:
    name: str
    node: int
    profile: str  # the demand class (:func:`demand_name`: a MIG profile, ``gpu``, ``gpu-x<k>``)
    count: int  # instances (GPUs for whole-GPU pods)
    started: int  # whole seconds since the replay's epoch
    waited: int  # seconds this attempt waited before it started
    # on a static DRA pool: the driver's devices it holds, (driver, pool, device); None: not known
    devices: tuple[tuple[str, str, str], ...] | None = None


def driver_slice(
    model: GpuModel, node: int, layouts: Sequence[Mapping[str, int]], full: str
) -> tuple[dict[str, Any], list[dict[str, list[str]]]]:
    """The ResourceSlice the NVIDIA DRA driver publishes for replayed node ``node`` whose GPUs carry
    ``layouts`` (static MIG), and per GPU the names of its devices per profile (sorted).

    As kubernetes-sigs/dra-driver-nvidia-gpu@95932046 publishes them (and tests/controller/emulation.py
    ``FakeDraDriver`` plays them): one pool named after the node, one slice; a GPU with MIG off is the
    device ``gpu-<minor>`` of type ``gpu`` (nvlib.go:311-318, deviceinfo.go:170-196); a GPU with MIG on
    announces only its MIG devices, ``gpu-<minor>-mig-<profile without dots>-<GI profile id>-<placement
    start>`` (mig.go:111-114), type ``mig`` with ``parentUUID`` and ``profile`` (mig.go:139-167), and
    none when it has no instance (nvlib.go:321-327); every device carries its GPU's PCI bus id
    (nvlib.go:546-551), rising with the minor. Placements are the catalog's witness (``place``)."""
    name = node_name(node)
    devices: list[dict[str, Any]] = []
    names: list[dict[str, list[str]]] = []
    for minor, lay in enumerate(layouts):
        bus = {PCI_BUS_ID: {"string": f"0000:{minor + 1:02x}:00.0"}}
        uuid = f"GPU-{name}-{minor}"
        mine: dict[str, list[str]] = {}
        names.append(mine)
        if dict(lay) == {full: 1}:
            attrs = {"type": {"string": "gpu"}, "uuid": {"string": uuid}, **bus}
            devices.append({"name": f"gpu-{minor}", "attributes": attrs})
            mine[full] = [f"gpu-{minor}"]
            continue
        for profile, start, _ in place(model, {p: c for p, c in lay.items() if c > 0}) or ():
            prof = model.profile(profile)
            pid = prof.id if prof is not None and prof.id is not None else 0
            device = f"gpu-{minor}-mig-{profile.replace('.', '').replace('+', '-')}-{pid}-{start}"
            attrs = {
                "type": {"string": "mig"},
                "parentUUID": {"string": uuid},
                "profile": {"string": profile},
                "uuid": {"string": f"MIG-{name}-{minor}-{start}"},
                **bus,
            }
            devices.append({"name": device, "attributes": attrs})
            mine.setdefault(profile, []).append(device)
    for listed in names:
        for v in listed.values():
            v.sort()
    pool = {"name": name, "generation": 1, "resourceSliceCount": 1}
    devices.sort(key=lambda d: str(d["name"]))
    spec = {"driver": DRA_DRIVER, "nodeName": name, "pool": pool, "devices": devices}
    meta = {"name": f"{name}-{DRA_DRIVER}"}
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": meta, "spec": spec}
    return obj, names


@dataclass(frozen=True)
class Waiting:
    name: str
    profile: str  # the demand class, as Running's
    count: int
    pending: int  # whole seconds since this attempt's pod was created
    max_wait: int | None


def _resource(key: str) -> str:
    return resource_of(WHOLE if whole_gpus(key) else key)


PHASES = ("Idle", "Draining", "Applying", "Failed")  # by the replay's node state (IDLE …)
MIG_STATES = ("success", "success", "pending", "failed")  # nvidia.com/mig.config.state, by the same
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
MIG_STATE_LABEL = "nvidia.com/mig.config.state"


def observation(
    epoch: dt.datetime,
    now: int,
    phases: Sequence[tuple[int, float | None]],
    running: Iterable[Running],
    waiting: Iterable[Waiting],
    slices: Sequence[dict[str, Any]] | None = None,
    gpus_per_node: int = 0,
) -> Observation:
    """What ``kubectl get pods,nodes`` shows at ``now`` (whole seconds since ``epoch``): per node its
    (replay state, time it failed), the running and the pending GPU pods (module docstring). With
    ``slices`` (one per node, :func:`driver_slice`) the pool is a static DRA pool: every pod asks
    through a ResourceClaim and a running one holds ``Running.devices``."""
    claimed = slices is not None

    def at(seconds: float) -> dt.datetime:
        return epoch + dt.timedelta(seconds=int(seconds))

    def labels(state: int) -> tuple[tuple[str, str], ...]:
        """On a static DRA node, what the controller's per-GPU drain reads of it (drain.py ``_where``,
        ``_changing``): GPU Feature Discovery's ``nvidia.com/gpu.count`` and the MIG manager's state,
        ``pending`` while it applies, ``failed`` after a failed apply, else ``success``."""
        if not claimed:
            return ()
        mig = MIG_STATES[state]
        return tuple(sorted({GPU_COUNT_LABEL: str(gpus_per_node), MIG_STATE_LABEL: mig}.items()))

    nodes = tuple(
        sorted(
            (
                ObservedNode(
                    name=node_name(n),
                    labels=labels(state),
                    allocatable=(),
                    mig_config=None,
                    mig_state=MIG_STATES[state] if claimed else None,
                    applied_config=None,
                    gpu_product=None,
                    gpu_count=gpus_per_node if claimed else None,
                    rollout=Rollout(PHASES[state], since=None if failed is None else at(failed)),
                )
                for n, (state, failed) in enumerate(phases)
            ),
            key=lambda x: x.name,
        )
    )
    pods = [
        ObservedPod(
            namespace_of(r.profile),
            r.name,
            "Running",
            node_name(r.node),
            ((_resource(r.profile), r.count),),
            at(r.started - r.waited),
            None,
            started=at(r.started),
            claimed=claimed,
            devices=r.devices if claimed else None,
        )
        for r in running
    ]
    pods += [
        ObservedPod(
            namespace_of(w.profile),
            w.name,
            "Pending",
            None,
            ((_resource(w.profile), w.count),),
            at(now - w.pending),
            float(w.pending),
            max_wait_seconds=w.max_wait,
            claimed=claimed,
        )
        for w in waiting
    ]
    pods.sort(key=lambda p: (p.namespace, p.name))  # as the reader orders them (namespace, name)
    published = tuple((str(x["spec"]["nodeName"]), (x,)) for x in sorted(slices or (), key=_slice_node))
    return Observation(at(now), "replay", nodes, tuple(pods), resource_slices=published)


def _slice_node(x: Mapping[str, Any]) -> str:
    return str(x["spec"]["nodeName"])


def memo_solver(size: int = 4096) -> Solver:
    """:func:`compiler.recommend.engine.exact` memoised on its inputs (policy, catalog, deployed
    layout, time limit: all frozen values). The solve is pure, so a hit returns what a solve would;
    between two changes the replay asks the same proposal again and again."""

    @functools.lru_cache(maxsize=size)
    def solve(policy: Policy, catalog: Catalog, current: CurrentState, time_limit_s: float) -> Solution:
        return exact(policy, catalog, current, time_limit_s)

    return solve
