"""The compiler -> controller contract: parse, validate and resolve the node assignment.

The document is key ``assignment.json`` of ConfigMap ``migc-system/migc-assignment``; its format
is ``assignment.schema.json`` in this package (an exact copy of the repository's schema).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from controller.errors import IncompleteAssignmentError, InvalidAssignmentError, WrongClusterError

ASSIGNMENT_KEY = "assignment.json"
SHARD_KEY = "nodes.json"
# A sharded assignment names at most this many shards (each checked like the index: at most 1 MiB);
# at the compiler's 128 KiB a shard that is room for well over 500,000 typical nodes.
MAX_SHARDS = 1024
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")

# Limits checked before the document is parsed at all. A ConfigMap holds at most 1 MiB, and the
# deepest legitimate path (root/configs/<name>/devices/<i>/profiles/<p>) is 6 levels; json.loads
# and the schema validator recurse per level, so an absurdly nested document would otherwise end
# in a RecursionError instead of a refusal.
MAX_BYTES = 1 << 20
MAX_DEPTH = 32
# The longest IANA zone name is 32 characters ("America/Argentina/ComodRivadavia").
_ZONE = re.compile(r"[A-Za-z0-9_+-]{1,32}(/[A-Za-z0-9_+-]{1,32}){0,2}")
_ZONE_MAX = 64
# Schema patterns are ECMA regexes, but Python's jsonschema runs them with re.search, where "$"
# also matches before a trailing newline; the controller re-checks each value with fullmatch.
_TIME = re.compile(r"([01][0-9]|2[0-3]):[0-5][0-9]")
# A Kubernetes label value (apimachinery validation.IsValidLabelValue): the controller writes
# config names into nvidia.com/mig.config and nvidia.com/device-plugin.config.
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_LABEL_VALUE_MAX = 63
_OBJECT_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKETS = re.compile(r"[\[\]{}]")


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
    # idleSurge: nodes running no GPU pod that may go out of Idle beyond max_unavailable (their
    # re-carve evicts nothing); 0 in an assignment compiled before the field
    idle_surge: int = 0

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


def _short(value: str, limit: int = 80) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")


def zone(name: str, where: str) -> dt.tzinfo:
    """The time zone called ``name``, or an ``InvalidAssignmentError`` (never another exception).

    ``ZoneInfo`` opens a file under the tzdata directory: a directory name (``America``) raises
    IsADirectoryError, and an absurdly long name OSError, so the name is checked first.
    """
    if name in ("UTC", "Etc/UTC"):
        return dt.UTC
    if len(name) > _ZONE_MAX or not _ZONE.fullmatch(name):
        raise InvalidAssignmentError(f"{where}: not a time zone name: {_short(name)}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError, UnicodeError) as exc:
        raise InvalidAssignmentError(f"{where}: unknown time zone {_short(name)}") from exc


def clock_time(value: str, where: str) -> dt.time:
    if not _TIME.fullmatch(value):
        raise InvalidAssignmentError(f"{where}: not a time HH:MM: {_short(value)}")
    return dt.time(int(value[:2]), int(value[3:]))


def is_label_value(value: str) -> bool:
    return len(value) <= _LABEL_VALUE_MAX and _LABEL_VALUE.fullmatch(value) is not None


def _window(doc: Mapping[str, Any], where: str) -> Window:
    # No "days" (absent, or an empty list) means every day: that is what the policy's schema
    # promises for an unset field, and a window that never opens would block the pool forever.
    days = frozenset(_DAYS.index(d) for d in doc.get("days") or _DAYS)
    return Window(
        days,
        clock_time(doc["start"], f"{where}/start"),
        clock_time(doc["end"], f"{where}/end"),
        zone(doc["timezone"], f"{where}/timezone"),
    )


def check_shape(text: str, key: str = ASSIGNMENT_KEY, limit: int = MAX_BYTES) -> None:
    """Size and nesting limits, checked on the raw text before any parser recurses into it."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise InvalidAssignmentError(f"{key}: {size} bytes, more than the limit of {limit}")
    depth = deepest = 0
    for m in _BRACKETS.finditer(_STRINGS.sub("", text)):
        depth += 1 if m.group() in "[{" else -1
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            raise InvalidAssignmentError(
                f"{key}: nested deeper than {MAX_DEPTH} levels (an assignment needs 6)"
            )


def _configs(doc: Mapping[str, Any]) -> dict[str, ConfigSpec]:
    configs = {}
    for name, c in doc["configs"].items():
        # Both names become node label values; a value the API server refuses would fail the
        # node only after it was cordoned and drained.
        for what, value in (("config name", name), ("devicePluginConfig", c["devicePluginConfig"])):
            if not is_label_value(value):
                raise InvalidAssignmentError(
                    f"configs/{_short(name)}: {what} {_short(value)} is not a valid label value "
                    f"(at most {_LABEL_VALUE_MAX} characters, alphanumerics and -_. inside)"
                )
        configs[name] = ConfigSpec(
            name=name,
            mig_strategy=c["migStrategy"],
            device_plugin_config=c["devicePluginConfig"],
            # JSON Schema's "integer" admits 2.0 and 1e18: make every count a Python int.
            resources={k: int(v) for k, v in c["resources"].items()},
            devices=tuple(c["devices"]),
        )
    return configs


def _load(text: str, key: str) -> Any:
    check_shape(text, key)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InvalidAssignmentError(f"{key}: not JSON: {exc}") from exc


@functools.cache
def _fast_validator(part: str) -> Any:
    """jsonschema-rs's validator of the whole schema (``part`` "") or of ``$defs/<part>``; None where
    the package is not installed (then every document takes ``jsonschema``'s error walk)."""
    try:
        import jsonschema_rs
    except ImportError:
        return None
    whole = schema()
    return jsonschema_rs.Draft202012Validator(whole if not part else whole["$defs"][part])


def _fast_valid(doc: Any, part: str) -> bool:
    """Whether jsonschema-rs accepts ``doc``: it answers "valid?" ~100x faster than ``jsonschema``
    walks the errors (0.2 s for an index and 12 shards of 10,000 nodes) and is never more lenient
    on this schema (tests/test_assignment_fast_schema.py); False when it cannot say."""
    validator = _fast_validator(part)
    if validator is None:
        return False
    try:
        return bool(validator.is_valid(doc))
    except (ValueError, TypeError, OverflowError, RecursionError):
        return False


def _check_schema(doc: Any, sub: Mapping[str, Any], key: str, part: str | None = None) -> None:
    """``InvalidAssignmentError`` with the first error of ``doc`` against ``sub``; ``part`` names
    ``sub`` for the fast pre-check ("" the whole schema, else a ``$defs`` entry; None: none)."""
    if part is not None and _fast_valid(doc, part):
        return
    import jsonschema  # only for a document the fast check did not accept: its first error

    validator = jsonschema.Draft202012Validator(sub)
    errors = sorted(validator.iter_errors(doc), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    if errors:
        first = errors[0]
        where = "/".join(map(str, first.absolute_path)) or "(root)"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise InvalidAssignmentError(f"{key}: {where}: {first.message[:512]}{more}")


def shard_names(text: str) -> tuple[str, ...]:
    """The shard ConfigMaps a (possibly sharded) assignment document names, in document order;
    empty for the single-ConfigMap form. Only the names are looked at here: the whole document is
    checked against the schema once its shards are back (``assemble``, ``parse_document``)."""
    doc = _load(text, ASSIGNMENT_KEY)
    pools = doc.get("pools") if isinstance(doc, dict) else None
    names: list[str] = []
    for pool in pools if isinstance(pools, list) else ():
        listed = pool.get("nodeShards") if isinstance(pool, dict) else None
        if listed is None:
            continue
        if not isinstance(listed, list) or not all(isinstance(n, str) and is_object_name(n) for n in listed):
            raise InvalidAssignmentError(f"{ASSIGNMENT_KEY}: nodeShards: not a list of ConfigMap names")
        names.extend(listed)
    if len(names) > MAX_SHARDS:
        raise InvalidAssignmentError(
            f"{ASSIGNMENT_KEY}: {len(names)} shards, more than the limit of {MAX_SHARDS}"
        )
    if len(set(names)) != len(names):
        raise InvalidAssignmentError(f"{ASSIGNMENT_KEY}: nodeShards: a shard is named twice")
    return tuple(names)


def is_object_name(value: str) -> bool:
    """A DNS-1123 subdomain (apimachinery validation.IsDNS1123Subdomain): a ConfigMap name."""
    return len(value) <= 253 and _OBJECT_NAME.fullmatch(value) is not None


def content_revision(doc: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of everything but ``revision`` (how ``migc compile`` makes it)."""
    rest = {k: v for k, v in doc.items() if k != "revision"}
    canonical = json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def assemble(text: str, shards: Mapping[str, str | None]) -> dict[str, Any]:
    """A sharded assignment put back into the single-document form (for ``parse_document``).

    ``shards``: the ``nodes.json`` text of every shard ConfigMap the index names (None: not there
    yet). A missing shard, or shards of another revision than the index (a GitOps sync applies
    objects one by one), is an ``IncompleteAssignmentError``: transient, wait for the sync. A shard
    that is malformed or belongs to another pool or cluster is an ``InvalidAssignmentError``.
    The single-ConfigMap form comes back as it is.
    """
    names = shard_names(text)
    doc: dict[str, Any] = _load(text, ASSIGNMENT_KEY)
    if not names:
        return doc
    _check_schema(doc, schema(), ASSIGNMENT_KEY, "")
    missing = [n for n in names if shards.get(n) is None]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise IncompleteAssignmentError(f"shard ConfigMap {missing[0]} is not there yet{more}")
    shard_schema = schema()["$defs"]["shard"]
    for pool in doc["pools"]:
        if not pool.get("nodeShards"):
            continue
        if pool["nodes"]:
            raise InvalidAssignmentError(f"pool {_short(pool['name'])}: both nodes and nodeShards")
        nodes: dict[str, str] = {}
        for name in pool.pop("nodeShards"):
            key = f"{name}/{SHARD_KEY}"
            shard = _load(str(shards[name]), key)
            _check_schema(shard, shard_schema, key, "shard")
            if shard["cluster"] != doc["cluster"] or shard["pool"] != pool["name"]:
                raise InvalidAssignmentError(
                    f"{key}: belongs to cluster {_short(shard['cluster'])} pool {_short(shard['pool'])}, "
                    f"the index names it for cluster {_short(doc['cluster'])} pool {_short(pool['name'])}"
                )
            for node, config in shard["nodes"].items():
                if node in nodes:
                    raise InvalidAssignmentError(f"{key}: node {_short(node)} is in two shards")
                nodes[node] = config
        pool["nodes"] = [{"name": n, "config": nodes[n]} for n in sorted(nodes)]
    if content_revision(doc) != doc["revision"]:
        raise IncompleteAssignmentError(
            f"the shards do not add up to revision {str(doc['revision'])[:12]} "
            "(index and shards from different revisions: a sync in progress)"
        )
    return doc


def parse(text: str, *, cluster: str | None = None) -> Assignment:
    """Parse and validate; every problem is an ``InvalidAssignmentError`` (permanent, not retried).

    ``text``: the single-ConfigMap form (a sharded one goes through ``assemble`` and
    ``parse_document``). ``cluster``: this controller's cluster identity; a document addressed to
    another cluster is refused. None accepts any cluster name.
    """
    return parse_document(_load(text, ASSIGNMENT_KEY), cluster=cluster)


def parse_document(doc: Any, *, cluster: str | None = None) -> Assignment:
    """``parse`` of a loaded (or assembled) document."""
    _check_schema(doc, schema(), ASSIGNMENT_KEY, "")
    if any(p.get("nodeShards") for p in doc["pools"]):
        raise InvalidAssignmentError(f"{ASSIGNMENT_KEY}: sharded, and its shards were not put back")
    if cluster is not None and doc["cluster"] != cluster:
        raise WrongClusterError(
            f"{ASSIGNMENT_KEY}: addressed to cluster {_short(doc['cluster'])}, "
            f"but this controller serves cluster {cluster!r}"
        )

    if not re.fullmatch(r"[0-9a-f]{12,64}", doc["revision"]):
        raise InvalidAssignmentError(
            f"{ASSIGNMENT_KEY}: revision: not a content hash: {_short(doc['revision'])}"
        )
    configs = _configs(doc)
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
        counts = {k: int(v) for k, v in (p.get("configCounts") or {}).items()}
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
                max_unavailable=int(p["maxUnavailable"]),
                windows=tuple(
                    _window(w, f"{where}/maintenanceWindows/{j}")
                    for j, w in enumerate(p["maintenanceWindows"])
                ),
                named=named,
                selector=dict(selector) if selector is not None else None,
                config_counts=counts,
                idle_surge=int(p.get("idleSurge", 0)),
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
