"""Phases Applying, Verifying and Done: relabel, wait for the MIG manager, check allocatable."""

from __future__ import annotations

import logging

from controller import state as st
from controller.dra import is_dra_config
from controller.errors import ControllerError
from controller.logs import log
from controller.reconciler.context import (
    Annotations,
    Context,
    Step,
    allocatable_diff,
    device_plugin_only,
    incompatible,
)
from controller.reconciler.dra import slices_mismatch, static_pool, unverifiable
from controller.reconciler.migparted import MigPartedError, device_plugin_names
from controller.state import NodeView, Phase

# A new apply starts with no reboot seen yet.
_NO_REBOOT: Annotations = {st.REBOOTED: None, st.REBOOTED_STAGE: None}


def start_apply(ctx: Context, step: Step) -> NodeView | None:
    """Drained: write the labels the GPU Operator acts on (Draining -> Applying or Verifying)."""
    node, now, t = step.node, step.now, step.t
    target = node.target
    assert target is not None
    cfg = step.config
    if cfg is None and not node.rolling_back:
        # The node left the assignment (or no valid one is left) before it was relabelled:
        # nothing describes its target any more, so hand it back unchanged rather than keep
        # it cordoned until someone notices.
        log(
            logging.WARNING,
            "target config is in no valid assignment; releasing the node unchanged",
            node=node.name,
            config=target,
        )
        return ctx.release(node, now)
    dp = cfg.device_plugin_config if cfg else node.annotations.get(st.PREVIOUS_DP)
    reason = incompatible(node, cfg)
    if reason is not None:
        return ctx.fail(node, reason, now, permanent=True)
    if step.assignment is not None:
        waiting = _mounted(ctx, step, target, dp, mig=not device_plugin_only(node, cfg))
        if waiting is not None:
            return waiting if isinstance(waiting, NodeView) else None
    if device_plugin_only(node, cfg):
        # No MIG manager runs here (and none would set a state): switch only the device
        # plugin's sharing config, record the config in migc's own annotation, and let
        # verification wait for the re-advertised allocatable. A stale mig.config label is
        # left alone: nothing acts on it on such a node.
        dp_labels: Annotations = {st.DEVICE_PLUGIN_CONFIG: dp} if dp else {}
        updated = ctx.patch(
            node,
            {st.PHASE: Phase.VERIFYING.value, st.PHASE_SINCE: t, st.APPLIED: target},
            labels=dp_labels,
        )
        log(
            logging.INFO,
            "node is not MIG-capable: applying the device plugin config only; verifying",
            node=node.name,
            config=target,
            device_plugin_config=dp,
        )
        return updated
    if node.current_config == target:
        state = node.labels.get(st.MIG_STATE)
        if state == "success":
            return ctx.patch(node, {st.PHASE: Phase.VERIFYING.value, st.PHASE_SINCE: t})
        # "failed" or "pending" (a stale state under the target label: the change never
        # finished -- a run that gave up at a shutdown wait leaves "pending"), or no state: the
        # manager acts only on a label change or its own start, so restart it.
        return _restart_mig_manager(ctx, step, dp)
    labels: Annotations = {st.MIG_CONFIG: target, st.MIG_STATE: None}
    if dp:
        labels[st.DEVICE_PLUGIN_CONFIG] = dp
    # Clearing the state label in the same write: a stale "success" from the previous config
    # must not be read as the answer to this change.
    updated = ctx.patch(
        node, {st.PHASE: Phase.APPLYING.value, st.PHASE_SINCE: t, **_NO_REBOOT}, labels=labels
    )
    log(logging.INFO, "applying", node=node.name, config=target, device_plugin_config=dp)
    return updated


def _mounted(ctx: Context, step: Step, target: str, dp: str | None, *, mig: bool) -> NodeView | bool | None:
    """Before the labels are written: a MIG config must be in the mig-parted ConfigMap, and long
    enough for the MIG manager's mounted copy to have it; the device-plugin config must be a key
    of the device-plugin ConfigMap (its config-manager exits on an unknown name). None: go
    ahead; False: wait; a NodeView: the node failed (still missing after --apply-timeout)."""
    assert step.assignment is not None
    ref = step.assignment.raw["migConfigMap"]
    where = f"mig-parted ConfigMap {ref.get('namespace')}/{ref.get('name')}"
    missing: str | None = None
    if mig:
        try:
            names = ctx.mounted.read(ctx.kube, ref)
        except MigPartedError as exc:
            missing = str(exc)
        else:
            if target not in names:
                missing = f"config {target} is not defined in {where}"
    dp_ref = ctx.s.api.device_plugin_configmap
    if missing is None and dp and dp_ref:
        try:
            if dp not in device_plugin_names(ctx.kube, dp_ref):
                missing = f"device-plugin config {dp} is not a key of device-plugin ConfigMap {dp_ref}"
        except MigPartedError as exc:
            missing = str(exc)
    if missing is not None:
        # An assignment and the mig-parted ConfigMap are separate objects that a GitOps sync
        # applies in either order: wait for the ConfigMap, as admission does, for at most
        # --apply-timeout, then fail (the node was drained, but not relabelled).
        waited = (step.now - (step.node.since() or step.now)).total_seconds()
        if waited >= ctx.s.apply.apply_timeout:
            return ctx.fail(
                step.node,
                f"{missing} after {ctx.s.apply.apply_timeout:g}s; the node was not relabelled: sync the "
                "rendered gpu-operator ConfigMaps, then annotate migc.dev/retry=true",
                step.now,
            )
        if not ctx.seen(("mig-parted-wait", step.node.name, target)):
            log(
                logging.WARNING,
                "waiting for the GPU Operator's ConfigMaps to define the target",
                node=step.node.name,
                config=target,
                error=missing,
            )
            ctx.assignment_event(
                "DevicePluginConfigMissing" if missing.startswith("device-plugin") else "MigConfigMissing",
                f"{missing}; node {step.node.name} is drained and waits for it"
                f" (up to {ctx.s.apply.apply_timeout:g}s)",
                step.now,
            )
        return False
    ctx.forget(("mig-parted-wait", step.node.name, target))
    if not mig:
        return None
    left = ctx.mounted.wait_left(ref, target)
    if left > 0:
        ctx.once(
            ("mount-wait", step.node.name, target),
            logging.INFO,
            "waiting for the kubelet to refresh the MIG manager's copy of the mig-parted ConfigMap",
            node=step.node.name,
            config=target,
            seconds=round(left, 1),
        )
        return False
    return None


def _restart_mig_manager(ctx: Context, step: Step, dp: str | None) -> NodeView | None:
    """A retry of the config the node is already labelled with, without ever removing the label.

    The MIG manager acts only on a *change* of ``nvidia.com/mig.config``, or when it starts
    (NVIDIA/mig-parted cmd/nvidia-mig-manager/main.go: the informer's UpdateFunc calls Set only
    when the label differs, AddFunc on start). Removing the label for a pass is not safe: the
    GPU Operator's node labeler gives a MIG-capable node without it ``all-disabled``, which the
    manager would apply first. So the manager pod is restarted instead, through the operator's
    own per-node switch: ``nvidia.com/gpu.deploy.mig-manager=false`` until its pod is gone, then
    ``true``; the new pod applies the label it finds.
    """
    node, t = step.node, step.t
    if node.labels.get(st.DEPLOY_MIG_MANAGER) != "false":
        log(
            logging.INFO,
            "restarting the MIG manager so that it applies the same config again",
            node=node.name,
        )
        labels: Annotations = {st.DEPLOY_MIG_MANAGER: "false", st.MIG_STATE: None}
        if dp and node.labels.get(st.DEVICE_PLUGIN_CONFIG) != dp:
            # The label may be missing or stale (the node got its MIG label elsewhere): the
            # device plugin that comes back after the apply must run the target's config.
            labels[st.DEVICE_PLUGIN_CONFIG] = dp
        return ctx.patch(node, {st.PHASE_SINCE: t}, labels=labels)
    running = [
        p
        for p in ctx.kube.list_pods(node.name)
        if ((p.get("metadata") or {}).get("labels") or {}).get("app") == st.MIG_MANAGER_APP
    ]
    if running:
        elapsed = (step.now - (node.since() or step.now)).total_seconds()
        if elapsed >= ctx.s.apply.apply_timeout:
            return ctx.fail(
                node, f"the MIG manager pod did not stop within {ctx.s.apply.apply_timeout:g}s", step.now
            )
        ctx.once(
            ("mig-manager-stop", node.name, node.since()),
            logging.INFO,
            "waiting for the MIG manager pod to stop",
            node=node.name,
        )
        return None
    log(
        logging.INFO,
        "MIG manager stopped; starting it again to apply the config",
        node=node.name,
        config=node.target,
    )
    return ctx.patch(
        node,
        {st.PHASE: Phase.APPLYING.value, st.PHASE_SINCE: t, **_NO_REBOOT},
        labels={st.DEPLOY_MIG_MANAGER: "true", st.MIG_STATE: None},
    )


def applying(ctx: Context, step: Step) -> NodeView | None:
    node, now = step.node, step.now
    mig_state = node.labels.get(st.MIG_STATE)
    if mig_state == "success":
        if step.retarget is not None:
            # Finish the current step, then re-target; the node stays cordoned and in budget.
            record = ctx.retarget_record(step.retarget, step.assignment)
            return ctx.patch(node, {st.PHASE: Phase.DRAINING.value, st.PHASE_SINCE: step.t, **record})
        log(logging.INFO, "MIG manager reported success; verifying", node=node.name)
        return ctx.patch(node, {st.PHASE: Phase.VERIFYING.value, st.PHASE_SINCE: step.t})
    if mig_state == "failed":
        return ctx.fail(node, f"MIG manager reported failed for config {node.target}", now)
    # "pending" (or no state yet) while it drains its operands and applies; "rebooting" when a
    # MIG mode change needs a reboot (WITH_REBOOT). After the reboot a new manager pod starts
    # over and sets "pending" again before it applies (NVIDIA/mig-parted@bd7160f4
    # pkg/mig/reconfigure/reconfigure.go:158 and :184-203: pending, then rebooting, then after
    # the reboot pending again and success). So each stage gets its own clock: the reboot
    # ``--reboot-timeout`` from when migc first saw "rebooting", the apply after it
    # ``--apply-timeout`` from when the state left "rebooting".
    rebooted = node.since(st.REBOOTED)
    if mig_state == "rebooting":
        if rebooted is None or node.annotations.get(st.REBOOTED_STAGE) != "rebooting":
            log(logging.INFO, "MIG manager is rebooting the node", node=node.name)
            return ctx.patch(node, {st.REBOOTED: step.t, st.REBOOTED_STAGE: "rebooting"})
        reboot_timeout = ctx.s.apply.reboot_timeout
        if (now - rebooted).total_seconds() >= reboot_timeout:
            return ctx.fail(
                node,
                f"the node did not come back from the MIG manager's reboot within {reboot_timeout:g}s"
                " (state=rebooting): check the node's Ready condition and console",
                now,
            )
        return None
    if rebooted is not None and node.annotations.get(st.REBOOTED_STAGE) == "rebooting":
        # Back from the reboot: the manager starts over; restart the apply clock.
        log(logging.INFO, "node is back from the reboot; the MIG manager applies again", node=node.name)
        return ctx.patch(node, {st.REBOOTED: step.t, st.REBOOTED_STAGE: "applying"})
    since = rebooted if rebooted is not None else node.since() or now
    elapsed = (now - since).total_seconds()
    if elapsed >= ctx.s.apply.apply_timeout:
        why = (
            f"MIG manager did not finish within {ctx.s.apply.apply_timeout:g}s (state={mig_state or 'unset'})"
        )
        if rebooted is not None:
            why += " after the node's reboot"
        if mig_state == "pending":
            # The real manager returns without any final state when a paused GPU client's pod
            # does not go (reconfigure.go:170-172: waitForPodsToBeDeleted's error returns
            # before any setState; its five waits are at :388-428).
            why += (
                ": it stops at pending when a GPU client pod it waits for (device plugin, GFD, DCGM"
                " exporter, DCGM, or a DaemonSet with nodeSelector nvidia.com/gpu.deploy.client)"
                " does not shut down within 5m; see the node's nvidia-mig-manager pod log and its"
                " nvidia.com/gpu.deploy.* labels"
            )
        return ctx.fail(node, why, now)
    return None


def verifying(ctx: Context, step: Step) -> NodeView | None:
    node, now = step.node, step.now
    if step.retarget is not None:
        record = ctx.retarget_record(step.retarget, step.assignment)
        return ctx.patch(node, {st.PHASE: Phase.DRAINING.value, st.PHASE_SINCE: step.t, **record})
    cfg = step.config
    if cfg is None:
        # A rollback to a config no longer described, or a node that left the assignment while
        # its config was applied: the MIG manager's success is all there is to check, and
        # keeping the node cordoned would wait for something that cannot come.
        if not node.rolling_back:
            log(
                logging.WARNING,
                "target config is in no valid assignment; cannot verify allocatable, releasing",
                node=node.name,
                config=node.target,
            )
        diff: dict[str, tuple[int, int]] = {}
    else:
        diff = allocatable_diff(node.allocatable, cfg.resources)
    problem = None
    if diff:
        pretty = ", ".join(f"{k}: want {w} have {h}" for k, (w, h) in diff.items())
        problem = f"allocatable does not match config {node.target}: {pretty}"
    pool = static_pool(ctx.dra, step)
    if problem is None and pool is None:
        # a DRA config on a node in flight whose DraPlan went away (or never came): nothing proves
        # its layout, so it waits for one (then fails at --verify-timeout) rather than being released
        desired_pool = step.desired.pool if step.desired is not None else node.annotations.get(st.POOL)
        problem = unverifiable(ctx.dra, node.name, desired_pool, cfg)
    if problem is None and pool is not None:
        # DRA does not fill allocatable (the device plugin is off there, which the check above
        # verified): the layout is verified from the driver's ResourceSlices (reconciler/dra.py).
        try:
            problem = slices_mismatch(ctx, step, pool)
        except ControllerError as exc:
            problem = f"cannot read the node's ResourceSlices: {exc}"
    if problem is None:
        log(
            logging.INFO,
            "verified; uncordoning",
            node=node.name,
            config=node.target,
            **({"verified_from": "ResourceSlices", "dra_pool": pool.name} if pool is not None else {}),
        )
        ctx.forget(("verify-wait", node.name, node.target))
        return ctx.uncordon(node, {st.PHASE: Phase.DONE.value, st.PHASE_SINCE: step.t})
    if (now - (node.since() or now)).total_seconds() >= ctx.s.apply.verify_timeout:
        ctx.forget(("verify-wait", node.name, node.target))
        return ctx.fail(node, problem, now)
    if pool is not None:
        ctx.once(
            ("verify-wait", node.name, node.target),
            logging.INFO,
            "waiting for the DRA driver to publish the layout in ResourceSlices",
            node=node.name,
            dra_pool=pool.name,
            why=problem[:512],
        )
    elif cfg is not None and is_dra_config(cfg):
        ctx.once(
            ("verify-wait", node.name, node.target),
            logging.WARNING,
            "waiting for a DraPlan: a DRA layout is verified only from the ResourceSlices it names",
            node=node.name,
            why=problem[:512],
        )
    return None


def done(ctx: Context, step: Step) -> NodeView | None:
    """Done -> Idle: clear the transient record and count the result."""
    node, now = step.node, step.now
    pool = node.annotations.get(st.POOL, "")
    started = node.since(st.STARTED_AT)
    ann: Annotations = dict.fromkeys(st.TRANSIENT)
    ann.update({st.PHASE: Phase.IDLE.value, st.PHASE_SINCE: step.t})
    updated = ctx.patch(node, ann)
    if node.rolling_back:
        result = "rolled-back"
    else:
        result = "success" if node.current_config == node.target else "abandoned"
    ctx.metrics.reconfigurations.labels(pool=pool, result=result).inc()
    if started is not None and result == "success":
        ctx.metrics.duration.observe(max(0.0, (now - started).total_seconds()))
    log(logging.INFO, "done", node=node.name, pool=pool, config=node.current_config, result=result)
    return updated
