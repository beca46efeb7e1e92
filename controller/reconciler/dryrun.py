"""--dry-run: log the steps a real run would take, once per distinct situation; write nothing."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping

from controller import pods as podlib
from controller import state as st
from controller.assignment import Assignment, ConfigSpec, Target
from controller.logs import log
from controller.reconciler.admission import candidates, idle_surge, max_unavailable
from controller.reconciler.context import Context, device_plugin_only, incompatible
from controller.reconciler.migparted import MigPartedError, config_names
from controller.state import NodeView, Phase


def dry_run(
    ctx: Context,
    nodes: Mapping[str, NodeView],
    targets: Mapping[str, Target],
    assignment: Assignment | None,
    paused: bool,
    now: dt.datetime,
) -> None:
    key = (
        "dry-run",
        assignment.revision if assignment else None,
        paused,
        tuple(sorted((n, v.phase.value, v.target, v.current_config) for n, v in nodes.items())),
    )
    if ctx.seen(key):
        return
    for name in sorted(nodes):
        n = nodes[name]
        if n.phase != Phase.IDLE:
            log(logging.INFO, "dry-run: would continue node", node=name, phase=n.phase.value, config=n.target)
    if assignment is None:
        log(logging.INFO, "dry-run: no valid assignment; nothing to do")
        return
    if paused:
        log(logging.INFO, "dry-run: rollout paused; would start nothing")
        return
    by_node: dict[str, list[str]] = {}
    busy: set[str] = set()  # as admission's ``gpu_pod_counts``: never admitted by the idle surge
    for p in ctx.kube.list_pods():
        nn = (p.get("spec") or {}).get("nodeName")
        if nn and podlib.blocking(p):
            by_node.setdefault(nn, []).append("/".join(podlib.ref(p)))
        if nn and podlib.blocking(p, dra=True):
            busy.add(nn)
    try:
        known: frozenset[str] | MigPartedError = config_names(ctx.kube, assignment.raw["migConfigMap"])
    except MigPartedError as exc:
        known = exc
    for pool in assignment.pools:
        cands = candidates(nodes, targets, assignment, pool.name)
        cands.sort(key=lambda c: (len(by_node.get(c, [])), c))
        if cands and not pool.in_window(now):
            log(logging.INFO, "dry-run: outside the maintenance windows; would wait", pool=pool.name)
        limit = max_unavailable(ctx, pool, targets, assignment)
        batch = batches(cands, busy, limit, idle_surge(ctx, pool, targets, assignment))
        for name in cands:
            cfg = assignment.configs[targets[name].config]
            number, beyond = batch[name]
            common = {"node": name, "pool": pool.name, "batch": number}
            surge = {"beyond_max_unavailable": "idleSurge: runs no GPU pod"} if beyond else {}
            log(
                logging.INFO,
                "dry-run: would reconfigure node",
                **common,
                **{"from": nodes[name].current_config, "to": cfg.name},
                **surge,
            )
            steps = _steps(ctx, nodes[name], cfg, sorted(by_node.get(name, [])), known)
            for j, step in enumerate(steps, 1):
                log(logging.INFO, f"dry-run: would {step}", **common, step=j)


def batches(order: list[str], busy: set[str], limit: int, surge: int) -> dict[str, tuple[int, bool]]:
    """Per candidate (in admission's order, fewest GPU pods first): its batch, counting from 1 with
    nothing out and each batch back before the next starts, and whether it goes beyond
    maxUnavailable by the idle surge. A batch takes the first ``limit`` nodes left and, after
    them, up to ``surge`` more that run no pod a drain waits for (not in ``busy``), as admission
    does. One walk of ``order`` (``i``) and one of its idle nodes beyond each batch (``j``)."""
    out: dict[str, tuple[int, bool]] = {}
    i = j = number = 0
    while i < len(order):
        number += 1
        taken = 0
        while i < len(order) and taken < limit:
            if order[i] not in out:
                out[order[i]] = (number, False)
                taken += 1
            i += 1
        j, extra = max(i, j), 0
        while j < len(order) and extra < surge:
            if order[j] not in out and order[j] not in busy:
                out[order[j]] = (number, True)
                extra += 1
            j += 1
        while i < len(order) and order[i] in out:
            i += 1
    return out


def _steps(
    ctx: Context, node: NodeView, cfg: ConfigSpec, busy: list[str], known: frozenset[str] | MigPartedError
) -> list[str]:
    reason = incompatible(node, cfg)
    if reason is not None:
        return [f"fail without touching the node (permanent, no retry): {reason}"]
    dp_only = device_plugin_only(node, cfg)
    if not dp_only and (isinstance(known, MigPartedError) or cfg.name not in known):
        why = known if isinstance(known, MigPartedError) else "not in the mig-parted ConfigMap"
        return [f"refuse config {cfg.name} without touching the node: {why}"]
    drain = [
        f"cordon: spec.unschedulable=true, annotation {st.CORDONED}=true (no taint)",
        f"wait up to {ctx.s.drain.grace_timeout:g}s for GPU pods to finish: {busy}",
        "evict the GPU pods still running via the Eviction API (PDB 429s are waited out)",
    ]
    verify = [f"verify allocatable {dict(sorted(cfg.resources.items()))}", "uncordon"]
    if dp_only:
        apply = [
            f"set label {st.DEVICE_PLUGIN_CONFIG}={cfg.device_plugin_config} only "
            f"(not MIG-capable: no MIG manager, no {st.MIG_CONFIG})",
        ]
    else:
        apply = [
            f"set labels {st.MIG_CONFIG}={cfg.name} {st.DEVICE_PLUGIN_CONFIG}={cfg.device_plugin_config}",
            f"wait up to {ctx.s.apply.apply_timeout:g}s for {st.MIG_STATE}=success",
        ]
    return drain + apply + verify
