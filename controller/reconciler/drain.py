"""Phases Cordoned and Draining: wait for GPU pods to finish, then evict them (never delete)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from controller import pods as podlib
from controller import state as st
from controller.dra import DraPool, device_gpus
from controller.errors import NotFoundError, PermanentError, TemporaryError
from controller.logs import log
from controller.reconciler.apply import start_apply
from controller.reconciler.context import Annotations, Context, Step
from controller.reconciler.dra import static_pool
from controller.reconciler.migparted import GpuLayout, changing_gpus, mig_configs
from controller.state import NodeView, Phase

Pod = dict[str, Any]
GPU_COUNT = "nvidia.com/gpu.count"  # GPU Feature Discovery's label
MAX_LISTED = 20  # pods named in one log line


def cordoned(ctx: Context, step: Step) -> NodeView | None:
    """Cordoned -> Draining (taking a new target along, if the assignment changed)."""
    ann: Annotations = {st.PHASE: Phase.DRAINING.value, st.PHASE_SINCE: step.t}
    if step.retarget is not None:
        ann.update(ctx.retarget_record(step.retarget, step.assignment))
    log(logging.INFO, "draining", node=step.node.name)
    return ctx.patch(step.node, ann)


def draining(ctx: Context, step: Step) -> NodeView | None:
    if step.retarget is not None:
        return ctx.patch(step.node, ctx.retarget_record(step.retarget, step.assignment))
    node, now = step.node, step.now
    if node.converged_to(node.target):
        # Nothing to change on this node (its GPU Operator labels say it carries the target
        # already): never drain it, whatever the record claims; verify and give it back.
        log(logging.INFO, "node already carries its target; not draining", node=node.name, config=node.target)
        ctx.evict.reset(node.name)
        return start_apply(ctx, step)
    pods = ctx.kube.list_pods(node.name)
    # On a static DRA node pods hold MIG devices through ResourceClaims, not limits.
    pool = static_pool(ctx.dra, step)
    remaining = [p for p in pods if podlib.blocking(p, dra=pool is not None)]
    if pool is not None and remaining:
        remaining = per_gpu(ctx, step, pool, remaining)
    daemons = sorted("/".join(podlib.ref(p)) for p in pods if podlib.unmanaged_gpu_daemon(p))
    since = node.since() or now
    elapsed = (now - since).total_seconds()
    if not remaining and daemons:
        # Came after admission: nothing stops them and the MIG manager would fail on them.
        if elapsed >= ctx.s.drain.grace_timeout + ctx.s.drain.eviction_timeout:
            return ctx.fail(
                node,
                f"DaemonSet pods hold GPUs: {', '.join(daemons[:10])}; add nodeSelector "
                f'{podlib.GPU_CLIENT_KEY}: "true" to their DaemonSet so that the MIG manager stops them',
                now,
            )
        ctx.once(
            ("wait-daemons", node.name, since),
            logging.WARNING,
            "waiting: GPU DaemonSet pods on the node",
            node=node.name,
            pods=daemons,
        )
        return None
    if not remaining:
        ctx.evict.reset(node.name)
        return start_apply(ctx, step)
    names = sorted("/".join(podlib.ref(p)) for p in remaining)
    if elapsed < ctx.s.drain.grace_timeout:
        ctx.once(
            ("wait-pods", node.name, since),
            logging.INFO,
            "waiting for GPU pods to finish",
            node=node.name,
            pods=names,
            grace_seconds=ctx.s.drain.grace_timeout,
        )
        return None
    if elapsed >= ctx.s.drain.grace_timeout + ctx.s.drain.eviction_timeout:
        return ctx.fail(node, f"drain timed out; GPU pods still running: {', '.join(names)}", now)
    if not ctx.evict.active(node.name):
        _evict(ctx, node, remaining)
    return None


def _evict(ctx: Context, node: NodeView, remaining: list[Pod]) -> None:
    blocked = []
    for pod in remaining:
        if podlib.terminating(pod):
            continue  # evicted already; waiting for its grace period
        ns, name = podlib.ref(pod)
        try:
            ctx.kube.evict(ns, name)
        except NotFoundError:
            ctx.metrics.evictions.labels(result="gone").inc()
            continue
        except TemporaryError as exc:
            if exc.status != 429:
                raise
            # 429 = a PodDisruptionBudget does not allow it now. Never forced: wait it out.
            ctx.metrics.evictions.labels(result="blocked").inc()
            blocked.append(f"{ns}/{name}")
            continue
        ctx.metrics.evictions.labels(result="evicted").inc()
        log(logging.INFO, "evicted", node=node.name, pod=f"{ns}/{name}")
    if blocked:
        delay = ctx.evict.bump(node.name)
        log(
            logging.INFO,
            "eviction blocked by a disruption budget; backing off",
            node=node.name,
            pods=blocked,
            retry_in=round(delay, 3),
        )


def per_gpu(ctx: Context, step: Step, pool: DraPool, pods: list[Pod]) -> list[Pod]:
    """The pods of ``pods`` that must go before the MIG manager applies the node's target, on a
    static DRA node: the others hold devices only on GPUs the apply leaves alone.

    mig-parted applies GPU by GPU and skips a GPU whose MIG devices already equal the target
    (NVIDIA/mig-parted@bd7160f4 cmd/nvidia-mig-parted/apply/config.go:92-95; which GPUs change:
    ``migparted.changing_gpus``), and its apply fails only on a GPU it must change that a
    process still uses. On a DRA node the API says which devices a pod holds (its
    ResourceClaims' allocation) and the driver's ResourceSlices on which GPU each device is
    (``dra.device_gpus``). A pod is kept only if every device of ``pool.driver`` its claims hold
    is known to be on a GPU that does not change; anything unknown drains it, as before.
    A pod with GPUs in its resource limits (the device plugin's way) is drained: nothing says
    which GPU it has. The cordon stays node-wide.
    """
    node = step.node
    since = node.since() or step.now
    known = _where(ctx, step, pool)
    if isinstance(known, str):
        key = ("drain-all", node.name, since)
        ctx.once(key, logging.INFO, "draining every GPU pod", node=node.name, why=known)
        return pods
    located, changing = known
    out: list[Pod] = []
    kept: list[str] = []
    why_drained: list[str] = []
    for pod in pods:
        reason = _blocks(ctx, pod, pool.driver, located, changing)
        if reason is None:
            kept.append("/".join(podlib.ref(pod)))
        else:
            out.append(pod)
            why_drained.append(f"{'/'.join(podlib.ref(pod))}: {reason}")
    _say(ctx, step, "drained", DRAINED, why_drained, changing)
    _say(ctx, step, "kept", KEPT, kept, changing)
    return out


def _where(
    ctx: Context, step: Step, pool: DraPool
) -> tuple[Mapping[tuple[str, str], int], frozenset[int]] | str:
    """Each device's GPU and the GPUs the apply changes, or why they are not known (then every GPU
    pod is drained)."""
    node = step.node
    gpus = _gpu_count(node)
    if gpus is None:
        return f"no {GPU_COUNT} label"
    try:
        slices = ctx.kube.list_resource_slices(node.name, pool.driver)
    except PermanentError as exc:
        # Forbidden, too many slices, ...: retrying would keep the node cordoned in Draining
        # with its timeouts never looked at. A TemporaryError is raised: the step is retried.
        return str(exc)[:300]
    located = device_gpus(slices, node.name, gpus, pool.driver)
    if located.problem is not None:
        return f"which GPU holds which device is not known: {located.problem}"
    changing, why = _changing(ctx, step, gpus, located.layouts)
    if changing is None:
        return why
    return located.gpus, changing


DRAINED = "draining pods that hold devices on GPUs that change, or whose devices are not known"
KEPT = "not draining pods whose devices are on GPUs the new layout leaves alone"


def _say(
    ctx: Context, step: Step, what: str, message: str, pods: list[str], changing: frozenset[int]
) -> None:
    """One log line per distinct set of ``what`` ("drained" or "kept") pods of this drain."""
    if not pods:
        return
    listed = sorted(pods)
    ctx.once(
        (f"{what}-pods", step.node.name, step.node.since() or step.now, tuple(listed)),
        logging.INFO,
        message,
        node=step.node.name,
        pods=listed[:MAX_LISTED],
        **{what: len(pods)},
        changing_gpus=sorted(changing),
    )


def _gpu_count(node: st.NodeView) -> int | None:
    raw = node.labels.get(GPU_COUNT, "")
    return int(raw) if raw.isdigit() and len(raw) <= 3 else None


def _changing(
    ctx: Context, step: Step, gpus: int, seen: Mapping[int, GpuLayout]
) -> tuple[frozenset[int] | None, str]:
    """Which GPU indices the apply changes (None: all), and why all where it is None. What is
    on the GPUs now: the driver's ResourceSlices (``seen``) and the config the MIG manager last
    applied, where the mig-parted ConfigMap still has it."""
    node, target = step.node, step.node.target
    if step.assignment is None or target is None:
        return None, "no assignment"
    current = node.labels.get(st.MIG_CONFIG)
    if node.labels.get(st.MIG_STATE) != "success":
        return None, f"the node's {st.MIG_STATE} is not success: what is on its GPUs is not known"
    try:
        configs = mig_configs(ctx.kube, step.assignment.raw["migConfigMap"])
    except PermanentError as exc:  # MigPartedError included (not found, not mig-parted YAML)
        return None, str(exc)[:300]
    changing = changing_gpus(configs, current, target, gpus, seen)
    if changing is None:
        return None, (
            f"which GPUs change from config {current} to {target} on {gpus} GPUs is not known from the "
            "mig-parted ConfigMap and the ResourceSlices"
        )
    return changing, ""


def _blocks(
    ctx: Context, pod: Pod, driver: str, located: Mapping[tuple[str, str], int], changing: frozenset[int]
) -> str | None:
    """Why ``pod`` must be drained, or None if all its GPU devices are on GPUs that stay."""
    if podlib.uses_gpu(pod):
        return "GPUs in its resource limits (the device plugin does not say which)"
    held = ctx.claims.held(ctx.kube, pod)
    if held.unknown is not None:
        return held.unknown
    for d in held.devices:
        if d.driver != driver:
            continue
        gpu = located.get((d.pool, d.device))
        if gpu is None:
            return f"device {d.pool}/{d.device} is not in the node's ResourceSlices"
        if gpu in changing:
            return f"device {d.device} is on GPU {gpu}, which changes"
    return None
