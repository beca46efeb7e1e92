"""Read what is deployed now from a previously rendered output tree → :class:`CurrentState`.

The source of truth is the NodeAssignment each cluster's ``migc-system/configmap-migc-assignment.yaml``
carries (``schema/assignment.schema.json``): per node its config, per config the layout of every
GPU. A large assignment is sharded (``pools[].nodeShards``): its named nodes lie in shard ConfigMap
files beside it, which are put back with the controller's own ``assemble``, so ``plan`` and the
controller read one assignment the same way.
``compile`` and ``plan`` pass the result to the solver so it keeps nodes as they are where it
can (minimum disruption), and ``plan`` diffs against it.

Selector pools list no node names, only how many matching nodes carry each config. Their nodes are
interchangeable, so the counts are spread over the pool's placeholder node names (``NodePool.node_names``)
in name order, configs in name order; only the multiset matters to the solver and the plan.

Next to the assignment lies the CapacityReport (``migc-system/configmap-migc-capacity.yaml``,
``schema/capacity.schema.json``): what each workload requested and was served per pool when that
assignment was rendered. :func:`read_capacity` returns it so ``plan`` can show the exact "before";
a report that is missing, malformed or rendered for another assignment revision is not used (the
plan estimates instead), the latter two with MIGC307.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from compiler.diagnostics import Diagnostic, make
from compiler.fsio import ASSIGNMENT_LIMIT, CAPACITY_LIMIT, ReadRefused, read_bounded
from compiler.model import CurrentState, GpuLayout, NodeLayout, Policy, frozen_counts
from controller.assignment import SHARD_KEY, assemble, shard_names
from controller.errors import ControllerError

# libyaml's safe loader where PyYAML was built with it: the rendered ConfigMaps carry one large
# block scalar (the JSON document), which the pure-Python scanner reads ~10x slower (0.25 s of an
# 80k-GPU plan). Both resolve the same YAML 1.1 safe types.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _safe_load(text: str) -> Any:
    return yaml.load(text, Loader=_SafeLoader)  # a safe loader, C or Python


ASSIGNMENT_FILE = "migc-system/configmap-migc-assignment.yaml"
ASSIGNMENT_KEY = "assignment.json"
CAPACITY_FILE = "migc-system/configmap-migc-capacity.yaml"
CAPACITY_KEY = "capacity.json"


class _Unreadable(ValueError):
    pass


def _layout(config: Any, interned: dict[GpuLayout, GpuLayout] | None = None) -> NodeLayout:
    """The GPUs of one config. ``interned``: equal layouts come back as one object, so the solver's
    counts of 80,000 deployed GPUs find each key by identity instead of comparing field by field."""
    if not isinstance(config, dict) or not isinstance(config.get("devices"), list):
        raise _Unreadable("config without a device list")
    gpus = []
    for device in config["devices"]:
        if not isinstance(device, dict) or not isinstance(device.get("profiles", {}), dict):
            raise _Unreadable("malformed device entry")
        profiles = {str(k): int(v) for k, v in device.get("profiles", {}).items()}
        gpu = GpuLayout(mig_enabled=bool(device.get("migEnabled")), profiles=frozen_counts(profiles))
        gpus.append(gpu if interned is None else interned.setdefault(gpu, gpu))
    return tuple(gpus)


# One parse per assignment per process: ``plan`` reads the deployed assignment for the nodes, the
# backends and the capacity report's revision (0.25 s per read at 10,000 nodes: YAML, JSON and the
# schema check of the index and every shard). An entry is used only while every file it was read
# from still has the (device, inode, size, mtime) it had then; anything rewritten is read again.
_Signature = tuple[tuple[str, int, int, int, int], ...]
_ASSIGNMENTS: dict[str, tuple[_Signature, dict[str, Any]]] = {}
_MEMO_ENTRIES = 64


def _identity(path: Path) -> tuple[str, int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _unchanged(signature: _Signature) -> bool:
    return all(_identity(Path(entry[0])) == entry for entry in signature)


def read_assignment(path: Path) -> dict[str, Any]:
    """The NodeAssignment document inside one rendered assignment ConfigMap file.

    Raises :class:`ReadRefused` (a coded error) when the path is not a regular file or is larger
    than ``ASSIGNMENT_LIMIT``; ``_Unreadable`` when its content is not an assignment. A second call
    for files that did not change returns the same document object: callers do not modify it.
    """
    key = str(path)
    hit = _ASSIGNMENTS.get(key)
    if hit is not None and _unchanged(hit[0]):
        return hit[1]
    before = _identity(path)
    text = _configmap_value(path, ASSIGNMENT_KEY, "an assignment ConfigMap")
    read = [before]
    try:
        shards: dict[str, str | None] = {}
        for name in shard_names(text):
            shard_path = path.parent / f"configmap-{name}.yaml"
            read.append(_identity(shard_path))
            shards[name] = _shard(shard_path)
        doc = assemble(text, shards)
    except ControllerError as exc:
        raise _Unreadable(str(exc)) from exc
    if not isinstance(doc, dict) or doc.get("kind") != "NodeAssignment":
        raise _Unreadable("not a NodeAssignment")
    signature = tuple(entry for entry in read if entry is not None)
    if len(signature) == len(read) and _unchanged(signature):  # nothing was rewritten while it was read
        if len(_ASSIGNMENTS) >= _MEMO_ENTRIES:
            _ASSIGNMENTS.clear()
        _ASSIGNMENTS[key] = (signature, doc)
    return doc


def _shard(path: Path) -> str:
    try:
        return _configmap_value(path, SHARD_KEY, "an assignment shard")
    except _Unreadable as exc:
        raise _Unreadable(f"shard {path.name}: {exc}") from exc


def _configmap_value(path: Path, key: str, what: str) -> str:
    """Key ``key`` of the rendered ConfigMap file ``path`` (bounded read, safe YAML)."""
    raw = _read(path, ASSIGNMENT_LIMIT, what)
    try:
        value = _safe_load(raw.decode("utf-8"))["data"][key]
    except (yaml.YAMLError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise _Unreadable(f"{path.name}: {exc}") from exc
    if not isinstance(value, str):
        raise _Unreadable(f"{path.name}: data.{key} is not a string")
    return value


def _read(path: Path, limit: int, what: str) -> bytes:
    try:
        return read_bounded(path, limit, what=what)
    except OSError as exc:
        raise _Unreadable(exc.strerror or str(exc)) from exc


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
    layouts: dict[str, NodeLayout] = {}  # thousands of nodes share a handful of configs
    interned: dict[GpuLayout, GpuLayout] = {}

    def layout_of(config_name: Any) -> NodeLayout:
        if not isinstance(config_name, str):
            return _layout(configs.get(config_name), interned)  # refused there, as before
        found = layouts.get(config_name)
        if found is None:
            found = layouts[config_name] = _layout(configs.get(config_name), interned)
        return found

    out: dict[tuple[str, str, str], NodeLayout] = {}
    for pool in doc.get("pools", []):
        name = str(pool["name"])
        for node in pool.get("nodes", []):
            out[(cluster, name, str(node["name"]))] = layout_of(node["config"])
        counts = pool.get("configCounts") or {}
        if counts:
            slots = list(_placeholders(policy, cluster, name))
            for config_name in sorted(counts):
                layout = layout_of(config_name)
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
        except ReadRefused as exc:
            diagnostics.append(exc.diagnostic)
        except (_Unreadable, KeyError, TypeError, ValueError, AttributeError) as exc:
            diagnostics.append(make("MIGC303", f"cannot read the previous assignment: {exc}", file=str(path)))
    hami: dict[tuple[str, str, str, int, str], int] = {}
    for path in sorted(Path(out).glob(f"*/{HAMI_PLAN_FILE}")):
        try:
            hami.update(hami_shares(_read(path, ASSIGNMENT_LIMIT, "a HAMi plan ConfigMap")))
        except ReadRefused as exc:
            diagnostics.append(exc.diagnostic)
        except (_Unreadable, KeyError, TypeError, ValueError, AttributeError, yaml.YAMLError) as exc:
            diagnostics.append(make("MIGC303", f"cannot read the previous HAMi plan: {exc}", file=str(path)))
    backends = deployed_backends(Path(out), diagnostics)
    state = CurrentState(
        nodes=tuple(sorted(nodes.items())), hami=tuple(sorted(hami.items())), backends=backends
    )
    return state, diagnostics


DRA_PLAN_FILE = "migc-system/configmap-migc-dra.yaml"


def deployed_backends(out: Path, diagnostics: list[Diagnostic]) -> tuple[tuple[tuple[str, str], str], ...]:
    """(cluster, pool) → backend of the previous output: a pool in its cluster's DraPlan
    (compiler/render/dra.py) was DRA static or dynamic; one only in the assignment, the device plugin."""
    found: dict[tuple[str, str], str] = {}
    for path in sorted(out.glob(f"*/{ASSIGNMENT_FILE}")):
        try:
            doc = read_assignment(path)
            cluster = str(doc["cluster"])
            found.update(((cluster, str(p["name"])), "device-plugin") for p in doc.get("pools", []))
        except (ReadRefused, _Unreadable, KeyError, TypeError, ValueError, AttributeError):
            continue  # reported by read_current already
    for path in sorted(out.glob(f"*/{DRA_PLAN_FILE}")):
        try:
            cm = _safe_load(_read(path, ASSIGNMENT_LIMIT, "a DRA plan ConfigMap").decode("utf-8"))
            doc = json.loads(cm["data"]["dra.json"])
            for pool in doc["pools"]:
                mode = str(pool["mig"])
                if mode not in ("static", "dynamic"):
                    raise ValueError(f"pool {pool['name']}: mig {mode!r}")
                found[(str(doc["cluster"]), str(pool["name"]))] = f"dra-{mode}"
        except ReadRefused as exc:
            diagnostics.append(exc.diagnostic)
        except (_Unreadable, KeyError, TypeError, ValueError, AttributeError, yaml.YAMLError) as exc:
            diagnostics.append(make("MIGC303", f"cannot read the previous DRA plan: {exc}", file=str(path)))
    return tuple(sorted(found.items()))


HAMI_PLAN_FILE = "migc-system/configmap-migc-hami.yaml"


def hami_shares(raw: bytes) -> dict[tuple[str, str, str, int, str], int]:
    """Deployed HAMi shares from a rendered HamiPlan ConfigMap (compiler/render/hami.py)."""
    cm = _safe_load(raw.decode("utf-8"))
    doc = json.loads(cm["data"]["plan.json"])
    if not isinstance(doc, dict) or doc.get("kind") != "HamiPlan":
        raise _Unreadable("not a HamiPlan")
    cluster = str(doc["cluster"])
    out: dict[tuple[str, str, str, int, str], int] = {}
    for pool in doc["pools"]:
        for gpu in pool["gpus"]:
            for share in gpu["shares"]:
                where = (str(pool["name"]), str(gpu["node"]), int(gpu["index"]))
                out[(cluster, *where, str(share["workload"]))] = int(share["replicas"])
    return out


# (cluster, pool, tenant, workload, resource)
DemandKey = tuple[str, str, str, str, str]


@dataclass(frozen=True)
class RecordedCapacity:
    """Requested and served units per pool, tenant, workload and resource, as last rendered.

    ``clusters`` lists the clusters whose report was read and belongs to the deployed assignment;
    for any other cluster nothing is known and the plan estimates.
    """

    clusters: tuple[str, ...] = ()
    demand: tuple[tuple[DemandKey, tuple[int, int]], ...] = ()  # key → (requested, served), sorted

    def covers(self, cluster: str) -> bool:
        return cluster in self.clusters

    def by_pool(self, cluster: str) -> dict[tuple[str, str, str], tuple[int, int]]:
        """``(tenant, pool, resource)`` → (requested, served) in ``cluster``, workloads summed."""
        out: dict[tuple[str, str, str], tuple[int, int]] = {}
        for (c, pool, tenant, _workload, resource), (requested, served) in self.demand:
            if c == cluster:
                r, s = out.get((tenant, pool, resource), (0, 0))
                out[(tenant, pool, resource)] = (r + requested, s + served)
        return out


def _count(value: Any, what: str) -> int:
    # bool is an int subclass; a report with true/false counts was not written by migc
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _Unreadable(f"{what} is not a non-negative integer")
    return value


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise _Unreadable(f"{what} is not a non-empty string")
    return value


def capacity_rows(doc: Any, cluster: str, revision: str) -> list[tuple[DemandKey, tuple[int, int]]]:
    """The demand rows of one CapacityReport document, checked against the assignment it sits next to."""
    if not isinstance(doc, dict) or doc.get("kind") != "CapacityReport":
        raise _Unreadable("not a CapacityReport")
    if doc.get("cluster") != cluster:
        raise _Unreadable(f"it describes cluster {doc.get('cluster')!r}, the assignment {cluster!r}")
    if doc.get("assignmentRevision") != revision:
        raise _Unreadable(
            f"it was rendered for assignment revision {str(doc.get('assignmentRevision'))[:12]!r}, "
            f"the deployed assignment is {revision[:12]!r}"
        )
    pools = doc.get("pools")
    if not isinstance(pools, list):
        raise _Unreadable("'pools' is not a list")
    rows: dict[DemandKey, tuple[int, int]] = {}
    for pool in pools:
        if not isinstance(pool, dict) or not isinstance(pool.get("demand"), list):
            raise _Unreadable("a pool without a 'demand' list")
        name = _text(pool.get("name"), "pool name")
        for row in pool["demand"]:
            if not isinstance(row, dict):
                raise _Unreadable(f"pool {name}: a demand entry is not an object")
            key = (
                cluster,
                name,
                _text(row.get("tenant"), "tenant"),
                _text(row.get("workload"), "workload"),
                _text(row.get("resource"), "resource"),
            )
            requested = _count(row.get("requested"), f"pool {name}: requested")
            served = _count(row.get("served"), f"pool {name}: served")
            if served > requested:
                raise _Unreadable(f"pool {name}: {key[2]}/{key[3]} served more than requested")
            if key in rows:
                raise _Unreadable(f"pool {name}: {key[2]}/{key[3]} {key[4]} listed twice")
            rows[key] = (requested, served)
    return sorted(rows.items())


def read_capacity(out: Path | None) -> tuple[RecordedCapacity, list[Diagnostic]]:
    """The CapacityReports under ``out`` that describe the assignment deployed next to them.

    A cluster without a report (output from before reports existed) is silently left out; one whose
    report cannot be used gets MIGC307. Either way the plan falls back to its estimate there. An
    unreadable assignment already got MIGC303 from :func:`read_current`, so it is skipped quietly.
    """
    if out is None or not Path(out).is_dir():
        return RecordedCapacity(), []
    clusters: list[str] = []
    demand: list[tuple[DemandKey, tuple[int, int]]] = []
    diagnostics: list[Diagnostic] = []
    for path in sorted(Path(out).glob(f"*/{CAPACITY_FILE}")):
        assignment_path = path.parents[1] / ASSIGNMENT_FILE
        try:
            assignment = read_assignment(assignment_path)
            cluster, revision = str(assignment["cluster"]), str(assignment["revision"])
        except (_Unreadable, ReadRefused, KeyError):
            continue  # read_current reported it
        try:
            raw = read_bounded(path, CAPACITY_LIMIT, what="a capacity ConfigMap")
        except ReadRefused as exc:
            diagnostics.append(exc.diagnostic)
            continue
        except OSError as exc:
            diagnostics.append(_capacity_unusable(cluster, path, exc.strerror or str(exc)))
            continue
        try:
            cm = _safe_load(raw.decode("utf-8"))
            rows = capacity_rows(json.loads(cm["data"][CAPACITY_KEY]), cluster, revision)
        except (yaml.YAMLError, ValueError, KeyError, TypeError, RecursionError) as exc:
            diagnostics.append(_capacity_unusable(cluster, path, str(exc)))
            continue
        clusters.append(cluster)
        demand.extend(rows)
    return RecordedCapacity(tuple(sorted(clusters)), tuple(sorted(demand))), diagnostics


def _capacity_unusable(cluster: str, path: Path, why: str) -> Diagnostic:
    return make(
        "MIGC307",
        f"cannot use the recorded capacity of cluster {cluster}: {why}; tenant capacity before is estimated",
        file=str(path),
    )
