"""The compiler -> controller contract: parse, validate and resolve the node assignment.

The document is key ``assignment.json`` of ConfigMap ``migc-system/migc-assignment``; its format
is ``assignment.schema.json`` in this package (an exact copy of the repository's schema).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import jsonschema

from controller.errors import InvalidAssignmentError

ASSIGNMENT_KEY = "assignment.json"
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@functools.cache
def schema() -> dict[str, Any]:
    # Package data of this very package: anchored on __package__ (the module object already being
    # imported), so a namespace directory of the same name elsewhere on sys.path cannot stand in.
    text = resources.files(__package__).joinpath("assignment.schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@dataclass(frozen=True)
class ConfigSpec:
    name: str
    mig_strategy: str
    device_plugin_config: str
    resources: Mapping[str, int]
    devices: tuple[Mapping[str, Any], ...]

    @property
    def mig_enabled(self) -> bool:
        """Whether any GPU of the config is partitioned, i.e. it needs the MIG manager."""
        return any(bool(d.get("migEnabled")) for d in self.devices)


@dataclass(frozen=True)
class Window:
    days: frozenset[int]  # 0 = Monday, like datetime.weekday()
    start: dt.time
    end: dt.time
    zone: dt.tzinfo

    def contains(self, now: dt.datetime) -> bool:
        local = now.astimezone(self.zone)
        t = local.time().replace(tzinfo=None)
        if self.start < self.end:
            return local.weekday() in self.days and self.start <= t < self.end
        # The window crosses midnight (or spans the whole day when start == end): the listed day
        # is the day it opens, so the early-morning part belongs to the previous weekday.
        if t >= self.start:
            return local.weekday() in self.days
        return (local.weekday() - 1) % 7 in self.days and t < self.end


@dataclass(frozen=True)
class Pool:
    name: str
    gpu_model: str
    max_unavailable: int
    windows: tuple[Window, ...]
    named: Mapping[str, str]  # node name -> config (named pools)
    selector: Mapping[str, str] | None
    config_counts: Mapping[str, int]

    def in_window(self, now: dt.datetime) -> bool:
        return not self.windows or any(w.contains(now) for w in self.windows)


@dataclass(frozen=True)
class Assignment:
    cluster: str
    revision: str
    configs: Mapping[str, ConfigSpec]
    pools: tuple[Pool, ...]
    raw: Mapping[str, Any] = field(repr=False, compare=False)


@dataclass(frozen=True)
class Target:
    pool: str
    config: str


def _window(doc: Mapping[str, Any], where: str) -> Window:
    try:
        zone: dt.tzinfo = dt.UTC if doc["timezone"] in ("UTC", "Etc/UTC") else ZoneInfo(doc["timezone"])
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidAssignmentError(f"{where}: unknown timezone {doc['timezone']!r}") from exc
    start = dt.time.fromisoformat(doc["start"])
    end = dt.time.fromisoformat(doc["end"])
    return Window(frozenset(_DAYS.index(d) for d in doc["days"]), start, end, zone)


def parse(text: str) -> Assignment:
    """Parse and validate; every problem is an ``InvalidAssignmentError`` (permanent, not retried)."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise InvalidAssignmentError(f"{ASSIGNMENT_KEY}: not JSON: {exc}") from exc
    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(doc), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    if errors:
        first = errors[0]
        where = "/".join(map(str, first.absolute_path)) or "(root)"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise InvalidAssignmentError(f"{ASSIGNMENT_KEY}: {where}: {first.message}{more}")

    configs = {
        name: ConfigSpec(
            name=name,
            mig_strategy=c["migStrategy"],
            device_plugin_config=c["devicePluginConfig"],
            resources=dict(c["resources"]),
            devices=tuple(c["devices"]),
        )
        for name, c in doc["configs"].items()
    }
    pools: list[Pool] = []
    seen_nodes: set[str] = set()
    for i, p in enumerate(doc["pools"]):
        where = f"pools/{i}"
        named: dict[str, str] = {}
        for n in p["nodes"]:
            if n["config"] not in configs:
                raise InvalidAssignmentError(f"{where}: node {n['name']}: unknown config {n['config']!r}")
            if n["name"] in seen_nodes:
                raise InvalidAssignmentError(f"{where}: node {n['name']} is assigned twice")
            seen_nodes.add(n["name"])
            named[n["name"]] = n["config"]
        counts = dict(p.get("configCounts", {}))
        for cfg in counts:
            if cfg not in configs:
                raise InvalidAssignmentError(f"{where}: configCounts: unknown config {cfg!r}")
        selector = p.get("selector")
        if named and selector is not None:
            raise InvalidAssignmentError(f"{where}: a pool has either named nodes or a selector, not both")
        if selector is not None and not selector:
            raise InvalidAssignmentError(f"{where}: an empty selector would match every node")
        pools.append(
            Pool(
                name=p["name"],
                gpu_model=p["gpuModel"],
                max_unavailable=p["maxUnavailable"],
                windows=tuple(
                    _window(w, f"{where}/maintenanceWindows/{j}")
                    for j, w in enumerate(p["maintenanceWindows"])
                ),
                named=named,
                selector=dict(selector) if selector is not None else None,
                config_counts=counts,
            )
        )
    return Assignment(doc["cluster"], doc["revision"], configs, tuple(pools), doc)


def resolve(
    assignment: Assignment,
    node_labels: Mapping[str, Mapping[str, str]],
    carried: Mapping[str, str],
) -> dict[str, Target]:
    """Node name -> target, for every node the assignment covers.

    ``carried`` is the config each node carries now (its in-flight migc target, else its
    ``nvidia.com/mig.config`` label). Selector pools keep nodes that already carry a wanted config
    (in name order, up to the count) and fill the rest in node-name order, so a re-render with the
    same counts moves no node.
    """
    out: dict[str, Target] = {}
    for pool in assignment.pools:
        if pool.selector is None:
            for name, cfg in pool.named.items():
                out[name] = Target(pool.name, cfg)
            continue
        members = sorted(
            n
            for n, labels in node_labels.items()
            if n not in out and all(labels.get(k) == v for k, v in pool.selector.items())
        )
        left = dict(pool.config_counts)
        unplaced: list[str] = []
        for n in members:
            have = carried.get(n)
            if have is not None and left.get(have, 0) > 0:
                out[n] = Target(pool.name, have)
                left[have] -= 1
            else:
                unplaced.append(n)
        fill: Iterable[str] = (cfg for cfg in sorted(left) for _ in range(left[cfg]))
        for n, cfg in zip(unplaced, fill, strict=False):
            out[n] = Target(pool.name, cfg)
    return out
