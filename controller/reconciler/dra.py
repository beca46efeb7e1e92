"""Static DRA pools: verify a node from its ResourceSlices; keep DynamicMIG pools' nodes out.

A static DRA node is rolled out like any other (cordon, drain, the MIG manager applies the
layout), but DRA does not fill node allocatable: after the MIG manager's ``success`` the driver's
kubelet plugin, restarted by the MIG manager's pause of ``nvidia.com/gpu.deploy.client`` DaemonSets,
discovers the new MIG devices and republishes the node's ResourceSlices
(kubernetes-sigs/dra-driver-nvidia-gpu@95932046 cmd/gpu-kubelet-plugin/nvlib.go:201-205: devices
are discovered once, at start). Verifying waits until those slices publish the expected devices;
until then the node stays cordoned, and after ``--verify-timeout`` it fails as any verification
does.
"""

from __future__ import annotations

from collections.abc import Mapping

from controller import state as st
from controller.dra import DraPlan, DraPool, config_devices, device_diff, published
from controller.reconciler.context import Context, Step
from controller.state import NodeView


def static_pool(plan: DraPlan | None, step: Step) -> DraPool | None:
    """The static DRA pool ``step``'s node belongs to: one the DraPlan lists it in, else the
    assignment's pool for it, else (a node that left the assignment) the pool migc recorded on
    it; None if that is no static DRA pool."""
    if plan is None:
        return None
    node = step.node
    pool = step.desired.pool if step.desired is not None else node.annotations.get(st.POOL)
    return plan.static_pool_of(node.name, (pool,))


def slices_mismatch(ctx: Context, step: Step, pool: DraPool) -> str | None:
    """Why the node's ResourceSlices do not (yet) publish its target layout, else None.

    Expected: the DraPlan's devices for the node where it lists it; else (a selector pool) the
    devices the target config's layout makes. Where both exist they must agree: a DraPlan and an
    assignment of different renders (a GitOps sync applies one before the other) wait.
    """
    node = step.node
    cfg = step.config
    if cfg is None:
        return None  # a rollback to a config no assignment describes: nothing to compare with
    derived = config_devices(cfg)
    # The DraPlan's devices describe the assignment's target for the node; a rollback (or a node
    # still on its way to an older target) is compared with its own config's layout.
    wanted = step.desired is not None and step.desired.config == node.target
    listed = pool.nodes.get(node.name) if wanted else None
    expected = listed if listed is not None else derived
    if listed is not None and dict(listed) != derived:
        return (
            f"the DraPlan expects {_fmt(listed)} on node {node.name} but config {node.target} makes "
            f"{_fmt(derived)}: DraPlan and assignment are of different renders (sync both)"
        )
    slices = ctx.kube.list_resource_slices(node.name, pool.driver)
    seen = published(slices, node.name, pool.driver)
    if seen.problems:
        why = "; ".join(seen.problems[:4])
        return f"ResourceSlices of {pool.driver} on {node.name} not usable yet: {why}"
    diff = device_diff(expected, seen.devices)
    if not diff:
        return None
    pretty = ", ".join(f"{k}: want {w} have {h}" for k, (w, h) in diff.items())
    return (
        f"ResourceSlices of {pool.driver} ({seen.slices} slices) do not match config {node.target}: {pretty}"
    )


def _fmt(devices: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(devices.items())) + "}"


def dynamic_conflict(plan: DraPlan | None, name: str, node: NodeView, pool: str) -> str | None:
    """Why a layout must not be rolled out on ``node``: a DynamicMIG pool covers it, else None.

    The driver's DynamicMIG destroys, when it starts, every MIG device it did not create
    (cmd/gpu-kubelet-plugin/driver.go:110 DestroyUnknownMIGDevices), and the MIG manager would
    undo the driver's devices: the compiler never puts such a node in the assignment, so one
    there means the two documents disagree.
    """
    if plan is None:
        return None
    dyn = plan.dynamic_pool_of(name, node.labels, pool)
    if dyn is None:
        return None
    return (
        f"node {name} is in DRA pool {dyn.name}, which uses the driver's DynamicMIG, but the assignment "
        f"gives it a layout (pool {pool}); the MIG manager and the driver would undo each other's "
        "MIG devices: the node is not touched (DraPlan and assignment are of different renders?)"
    )


def missing_node_labels(plan: DraPlan | None, name: str, node: NodeView, pool: str) -> dict[str, str]:
    """The DraPlan's ``nodeLabels`` a static DRA node lacks (label -> the value it needs).

    Without ``nvidia.com/gpu.deploy.device-plugin=false`` the GPU Operator's device plugin keeps
    running beside the DRA driver: after the layout change it advertises the MIG devices as
    allocatable, and verification fails only after the node was drained and reconfigured.
    """
    static = plan.static_pool_of(name, (pool,)) if plan is not None else None
    if static is None:
        return {}
    return {k: v for k, v in sorted(static.node_labels.items()) if node.labels.get(k) != v}
