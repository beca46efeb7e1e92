"""Read what is deployed now from a previously rendered output tree → :class:`CurrentState`.

The source of truth is the NodeAssignment each cluster's ``migc-system/configmap-migc-assignment.yaml``
carries (``schema/assignment.schema.json``): per node its config, per config the layout of every
GPU. ``compile`` and ``plan`` pass the result to the solver so it keeps nodes as they are where it
can (minimum disruption), and ``plan`` diffs against it.

Selector pools list no node names, only how many matching nodes carry each config. Their nodes are
interchangeable, so the counts are spread over the pool's placeholder node names (``NodePool.node_names``)
in name order, configs in name order; only the multiset matters to the solver and the plan.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from compiler.diagnostics import Diagnostic, make
from compiler.model import CurrentState, GpuLayout, NodeLayout, Policy, frozen_counts

ASSIGNMENT_FILE = "migc-system/configmap-migc-assignment.yaml"
ASSIGNMENT_KEY = "assignment.json"


class _Unreadable(ValueError):
    pass


def _layout(config: Any) -> NodeLayout:
    if not isinstance(config, dict) or not isinstance(config.get("devices"), list):
        raise _Unreadable("config without a device list")
    gpus = []
    for device in config["devices"]:
        if not isinstance(device, dict) or not isinstance(device.get("profiles", {}), dict):
            raise _Unreadable("malformed device entry")
        profiles = {str(k): int(v) for k, v in device.get("profiles", {}).items()}
        gpus.append(GpuLayout(mig_enabled=bool(device.get("migEnabled")), profiles=frozen_counts(profiles)))
    return tuple(gpus)


def read_assignment(path: Path) -> dict[str, Any]:
    """The NodeAssignment document inside one rendered assignment ConfigMap file."""
    try:
        cm = yaml.safe_load(path.read_text(encoding="utf-8"))
        doc = json.loads(cm["data"][ASSIGNMENT_KEY])
    except (OSError, yaml.YAMLError, ValueError, KeyError, TypeError) as exc:
        raise _Unreadable(str(exc)) from exc
    if not isinstance(doc, dict) or doc.get("kind") != "NodeAssignment":
        raise _Unreadable("not a NodeAssignment")
    return doc


def _placeholders(policy: Policy | None, cluster: str, pool: str) -> tuple[str, ...]:
    if policy is None:
        return ()
    for c in policy.clusters:
        if c.name != cluster:
            continue
        for p in c.pools:
            if p.name == pool:
                return tuple(sorted(p.node_names))
    return ()


def state_from_assignment(
    doc: dict[str, Any], policy: Policy | None = None
) -> dict[tuple[str, str, str], NodeLayout]:
    cluster = str(doc["cluster"])
    configs = doc.get("configs", {})
    out: dict[tuple[str, str, str], NodeLayout] = {}
    for pool in doc.get("pools", []):
        name = str(pool["name"])
        for node in pool.get("nodes", []):
            out[(cluster, name, str(node["name"]))] = _layout(configs.get(node["config"]))
        counts = pool.get("configCounts") or {}
        if counts:
            slots = list(_placeholders(policy, cluster, name))
            for config_name in sorted(counts):
                layout = _layout(configs.get(config_name))
                for _ in range(int(counts[config_name])):
                    if not slots:
                        break  # the pool shrank: surplus deployed nodes are not part of the target
                    out[(cluster, name, slots.pop(0))] = layout
    return out


def read_current(out: Path | None, policy: Policy | None = None) -> tuple[CurrentState, list[Diagnostic]]:
    """Everything deployed according to ``out``; empty (every node new) when there is nothing there."""
    if out is None or not Path(out).is_dir():
        return CurrentState(), []
    nodes: dict[tuple[str, str, str], NodeLayout] = {}
    diagnostics: list[Diagnostic] = []
    for path in sorted(Path(out).glob(f"*/{ASSIGNMENT_FILE}")):
        try:
            nodes.update(state_from_assignment(read_assignment(path), policy))
        except (_Unreadable, KeyError, TypeError, ValueError) as exc:
            diagnostics.append(make("MIGC303", f"cannot read the previous assignment: {exc}", file=str(path)))
    return CurrentState(nodes=tuple(sorted(nodes.items()))), diagnostics
