"""Pools allocated through Kubernetes DRA: the DraPlan the compiler renders, and what a node's
ResourceSlices publish.

The DraPlan is key ``dra.json`` of ConfigMap ``migc-system/migc-dra``; its format is
``draplan.schema.json`` in this package (an exact copy of the repository's
``schema/draplan.schema.json``, kept equal by a test). It says which pools are on DRA, whether
migc's layouts are rolled out there (``mig: static``) or the driver creates MIG devices itself
(``mig: dynamic``, nothing to roll out), and for the named nodes of static pools the devices their
ResourceSlices must publish. It is read like the assignment: bounded and checked before use, and
any problem is an ``InvalidDraPlanError`` (never another exception).

DRA does not fill node allocatable, so a static DRA node is verified from the ResourceSlices of
the NVIDIA DRA driver (``gpu.nvidia.com``) for that node, counted the way the scheduler reads
them: per pool only the slices of the highest ``spec.pool.generation`` count, and a pool whose
newest generation has fewer slices than its ``resourceSliceCount`` is incomplete (kubernetes/
kubernetes@030880a5 staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/
pools_stable.go:99-105 in GatherPools, incomplete at :102; addSlice :128-136 drops older
generations); a device name twice in one pool makes it invalid (poolIsInvalid :143-153). The
driver names each device by its ``type`` attribute, ``gpu`` for a full GPU (types.go:27) and
``mig`` for a MIG device, whose ``profile`` attribute is the profile name
(kubernetes-sigs/dra-driver-nvidia-gpu@95932046 cmd/gpu-kubelet-plugin/deviceinfo.go:170-174,
mig.go:139-149).
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import jsonschema

from controller.assignment import MAX_BYTES, ConfigSpec, is_label_value, is_object_name
from controller.errors import InvalidAssignmentError, WrongClusterError

DRA_KEY = "dra.json"
DRA_CONFIGMAP = "migc-dra"
# The device-plugin config names the compiler gives every node config of a DRA pool (the plugin is
# kept off there; compiler/render/manifests.py DRA_DEVICE_PLUGIN_CONFIG, _MIXED): such a config is
# verified from ResourceSlices only, so it needs a static DRA pool of a DraPlan to be verified at all
# (tests/controller/test_controller_dra.py checks these names against the rendered examples/dra).
DRA_DEVICE_PLUGIN_CONFIGS = frozenset({"migc-dra", "migc-dra-mixed"})
DRIVER = "gpu.nvidia.com"
WHOLE_GPU = "gpu"
STATIC = "static"
DYNAMIC = "dynamic"
# The deepest legitimate path is root/pools/<i>/nodes/<j>/devices/<profile>: 5 levels.
MAX_DEPTH = 16
# A device count per node: 64 GPUs of 7 instances at most (the assignment's bound on GPUs).
MAX_DEVICES = 64 * 7
# What one node may publish before the controller stops reading (a hostile or broken driver):
# the API server caps a slice at 128 devices (resource/v1 ResourceSliceMaxDevices).
MAX_SLICES = 256
MAX_SLICE_DEVICES = 128
_QUALIFIED_KEY = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
)
_PROFILE = re.compile(r"[1-8]g\.[0-9]{1,4}gb(\+me)?")
_HEX64 = re.compile(r"[0-9a-f]{64}")


class InvalidDraPlanError(InvalidAssignmentError):
    """The DraPlan document is malformed, out of bounds or self-contradictory."""


class WrongClusterDraPlanError(WrongClusterError):
    """The DraPlan is addressed to another cluster than this controller's."""


@functools.cache
def schema() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("draplan.schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _short(value: object, limit: int = 80) -> str:
    text = str(value)
    return repr(text if len(text) <= limit else text[:limit] + "...")


@dataclass(frozen=True)
class DraPool:
    name: str
    gpu_model: str
    mig: str  # STATIC or DYNAMIC
    driver: str
    node_labels: Mapping[str, str]
    selector: Mapping[str, str] | None
    nodes: Mapping[str, Mapping[str, int]]  # static named pools: node -> devices per profile

    @property
    def static(self) -> bool:
        return self.mig == STATIC

    def selects(self, labels: Mapping[str, str]) -> bool:
        return self.selector is not None and all(labels.get(k) == v for k, v in self.selector.items())


@dataclass(frozen=True)
class DraPlan:
    cluster: str
    revision: str
    pools: tuple[DraPool, ...]
    _by_name: Mapping[str, DraPool] = field(default_factory=dict, repr=False, compare=False)

    def pool(self, name: str | None) -> DraPool | None:
        return self._by_name.get(name or "")

    def static_pool_of(self, node: str, pool_names: Iterable[str | None]) -> DraPool | None:
        """The static DRA pool ``node`` belongs to: one that lists it, or one of ``pool_names``
        (the pool the assignment puts it in, the pool migc recorded on it). Any of them counts:
        a forged pool annotation can only add a check, never take one away."""
        for p in self.pools:
            if p.static and node in p.nodes:
                return p
        for name in pool_names:
            named = self.pool(name)
            if named is not None and named.static:
                return named
        return None

    def dynamic_pool_of(self, node: str, labels: Mapping[str, str], pool: str | None) -> DraPool | None:
        """The DynamicMIG pool that covers ``node`` (by the assignment pool's name, or its selector)."""
        for p in self.pools:
            if not p.static and (p.name == pool or p.selects(labels) or node in p.nodes):
                return p
        return None


def parse(text: str, *, cluster: str | None = None) -> DraPlan:
    """Parse and check a ``dra.json`` text; every problem is an ``InvalidDraPlanError``."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        raise InvalidDraPlanError(f"{DRA_KEY}: {size} bytes, more than the limit of {MAX_BYTES}")
    if _depth(text) > MAX_DEPTH:
        raise InvalidDraPlanError(f"{DRA_KEY}: nested deeper than {MAX_DEPTH} levels (a DraPlan needs 5)")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InvalidDraPlanError(f"{DRA_KEY}: not JSON: {exc}") from exc
    return parse_document(doc, cluster=cluster)


def _depth(text: str) -> int:
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def parse_document(doc: Any, *, cluster: str | None = None) -> DraPlan:
    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(doc), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    if errors:
        first = errors[0]
        where = "/".join(map(str, first.absolute_path)) or "(root)"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise InvalidDraPlanError(f"{DRA_KEY}: {where}: {first.message[:512]}{more}")
    if cluster is not None and doc["cluster"] != cluster:
        raise WrongClusterDraPlanError(
            f"{DRA_KEY}: addressed to cluster {_short(doc['cluster'])}, but this controller serves "
            f"cluster {cluster!r}"
        )
    # The schema's patterns run with re.search, where "$" also matches before a newline.
    if not _HEX64.fullmatch(doc["revision"]):
        raise InvalidDraPlanError(f"{DRA_KEY}: revision: not a content hash: {_short(doc['revision'])}")
    by_name: dict[str, DraPool] = {}
    owner: dict[str, str] = {}  # node -> the pool that lists it
    for i, p in enumerate(doc["pools"]):
        pool = _pool(p, f"{DRA_KEY}: pools/{i}", owner)
        if pool.name in by_name:
            raise InvalidDraPlanError(f"{DRA_KEY}: pools/{i}: pool {_short(pool.name)} is listed twice")
        by_name[pool.name] = pool
    return DraPlan(doc["cluster"], doc["revision"], tuple(by_name.values()), by_name)


def _pool(p: Mapping[str, Any], where: str, owner: dict[str, str]) -> DraPool:
    name = p["name"]
    if not is_label_value(name) or not name:
        raise InvalidDraPlanError(f"{where}: name {_short(name)} is not a pool name")
    labels = _labels(p["nodeLabels"], f"{where}/nodeLabels")
    selector = _labels(p["selector"], f"{where}/selector") if "selector" in p else None
    if selector is not None and not selector:
        raise InvalidDraPlanError(f"{where}/selector: an empty selector would match every node")
    nodes: dict[str, dict[str, int]] = {}
    for j, n in enumerate(p["nodes"]):
        node = n["name"]
        if not is_object_name(node):
            raise InvalidDraPlanError(f"{where}/nodes/{j}: {_short(node)} is not a node name")
        if node in owner:
            raise InvalidDraPlanError(
                f"{where}/nodes/{j}: node {_short(node)} is also in pool {_short(owner[node])}"
            )
        owner[node] = name
        nodes[node] = _devices(n["devices"], f"{where}/nodes/{j}/devices")
    if p["mig"] == DYNAMIC and nodes:
        raise InvalidDraPlanError(
            f"{where}: a DynamicMIG pool has no layouts, so no expected devices per node"
        )
    if selector is not None and nodes:
        raise InvalidDraPlanError(f"{where}: a pool has either named nodes or a selector, not both")
    return DraPool(name, p["gpuModel"], p["mig"], p["driver"], labels, selector, nodes)


def _devices(value: Mapping[str, Any], where: str) -> dict[str, int]:
    devices: dict[str, int] = {}
    for profile, count in value.items():
        # JSON Schema's "integer" admits 2.0 and 1e18; the pattern lets "1g.10gb\n" through.
        if profile != WHOLE_GPU and not _PROFILE.fullmatch(profile):
            raise InvalidDraPlanError(f"{where}: {_short(profile)} is not a profile")
        if int(count) != count or not 1 <= int(count) <= MAX_DEVICES:
            raise InvalidDraPlanError(
                f"{where}/{profile}: {_short(count)} is not a count of 1 to {MAX_DEVICES}"
            )
        devices[profile] = int(count)
    return dict(sorted(devices.items()))


def _labels(value: Mapping[str, str], where: str) -> dict[str, str]:
    out = {}
    for k, v in value.items():
        if len(k) > 316 or not _QUALIFIED_KEY.fullmatch(k) or not is_label_value(v):
            raise InvalidDraPlanError(f"{where}: {_short(k)}={_short(v)} is not a node label")
        out[k] = v
    return dict(sorted(out.items()))


def is_dra_config(cfg: ConfigSpec) -> bool:
    """Whether the compiler rendered ``cfg`` for a DRA pool (its device plugin config is a DRA one)."""
    return cfg.device_plugin_config in DRA_DEVICE_PLUGIN_CONFIGS


def config_devices(cfg: ConfigSpec) -> dict[str, int]:
    """The DRA devices a config's layout makes: ``gpu`` per GPU with MIG off, one per MIG instance."""
    out: dict[str, int] = {}
    for d in cfg.devices:
        if not d.get("migEnabled"):
            out[WHOLE_GPU] = out.get(WHOLE_GPU, 0) + 1
            continue
        for profile, count in (d.get("profiles") or {}).items():
            out[str(profile)] = out.get(str(profile), 0) + int(count)
    return dict(sorted(out.items()))


# ------------------------------------------------------------------------------------ slices


@dataclass(frozen=True)
class Published:
    """What a node's ResourceSlices of one driver publish, read the way the scheduler reads them."""

    devices: Mapping[str, int]  # profile (or "gpu"; other device types as "<type>") -> count
    problems: tuple[str, ...]  # incomplete or invalid pools, unreadable slices: not usable yet
    slices: int
    generations: Mapping[str, int]  # pool -> the generation that counted


def _string_attribute(attrs: Mapping[str, Any], name: str, driver: str) -> str | None:
    # Unqualified attribute names are in the driver's domain (resource/v1 types.go, Attributes).
    for key in (name, f"{driver}/{name}"):
        value = attrs.get(key)
        if isinstance(value, Mapping) and isinstance(value.get("string"), str):
            return str(value["string"])[:64]
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 62 else None


def published(slices: Iterable[Any], node: str, driver: str = DRIVER) -> Published:
    """Count the devices ``node``'s ResourceSlices of ``driver`` publish (see the module doc).

    Slices of another node or driver are ignored (a server may ignore field selectors). Every
    value is checked before use: a slice that is not shaped like ``resource.k8s.io/v1`` is a
    problem, never an exception.
    """
    problems: list[str] = []
    pools: dict[str, list[Mapping[str, Any]]] = {}
    count = 0
    for raw in slices:
        pool_name, problem = _pool_of(raw, node, driver)
        if problem is not None:
            problems.append(problem)
        if pool_name is None:
            continue
        count += 1
        if problem is None:
            pools.setdefault(pool_name, []).append(raw)
    devices: dict[str, int] = {}
    generations: dict[str, int] = {}
    for pool_name in sorted(pools):
        members = pools[pool_name]
        newest = max(int(s["spec"]["pool"]["generation"]) for s in members)
        current = [s for s in members if s["spec"]["pool"]["generation"] == newest]
        generations[pool_name] = newest
        # All slices of one generation carry the same count; the scheduler reads the first one.
        want = int(current[0]["spec"]["pool"]["resourceSliceCount"])
        if len(current) != want:
            problems.append(
                f"pool {pool_name!r}: generation {newest} has {len(current)} of {want} slices "
                "(being republished)"
            )
            continue
        counted, bad = _count_devices(current, driver)
        if bad is not None:
            problems.append(f"pool {pool_name!r}: {bad}")
            continue
        for k, v in counted.items():
            devices[k] = devices.get(k, 0) + v
    return Published(dict(sorted(devices.items())), tuple(problems), count, generations)


def _pool_of(raw: Any, node: str, driver: str) -> tuple[str | None, str | None]:
    """(pool name, problem) of one listed object: name None for a slice of another node or
    driver (or one too broken to tell); a problem for a slice that cannot be read."""
    if not isinstance(raw, Mapping):
        return None, "a ResourceSlice that is not an object"
    spec = raw.get("spec")
    meta = raw.get("metadata")
    name = str(meta.get("name", "?"))[:253] if isinstance(meta, Mapping) else "?"
    if not isinstance(spec, Mapping):
        return None, f"ResourceSlice {name!r} has no spec"
    if spec.get("driver") != driver or spec.get("nodeName") != node:
        return None, None
    pool = spec.get("pool")
    if not isinstance(pool, Mapping) or not isinstance(pool.get("name"), str):
        return "", f"ResourceSlice {name!r} has no spec.pool.name"
    if _int(pool.get("generation")) is None or _int(pool.get("resourceSliceCount")) in (None, 0):
        return "", f"ResourceSlice {name!r}: spec.pool generation or resourceSliceCount unreadable"
    return str(pool["name"])[:253], None


def _count_devices(current: list[Mapping[str, Any]], driver: str) -> tuple[dict[str, int], str | None]:
    """Devices per profile (``gpu`` and other types by their type) of one complete pool, or why
    the pool is unusable: a malformed device list, or a device name twice (the scheduler's
    poolIsInvalid)."""
    names: set[str] = set()
    counted: dict[str, int] = {}
    for s in current:
        listed = s["spec"].get("devices") or []
        if not isinstance(listed, list) or len(listed) > MAX_SLICE_DEVICES:
            return counted, f"a slice's devices is not a list of at most {MAX_SLICE_DEVICES}"
        for d in listed:
            dev_name = d.get("name") if isinstance(d, Mapping) else None
            attrs = d.get("attributes") if isinstance(d, Mapping) else None
            if not isinstance(dev_name, str) or not isinstance(attrs, Mapping):
                return counted, "a device without a name or attributes"
            if dev_name in names:
                return counted, f"duplicate device name {dev_name[:64]!r}"
            names.add(dev_name)
            kind = _string_attribute(attrs, "type", driver)
            key = _string_attribute(attrs, "profile", driver) if kind == "mig" else kind
            key = key if key is not None else "<no type>"
            counted[key] = counted.get(key, 0) + 1
    return counted, None


def device_diff(expected: Mapping[str, int], have: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """Profile -> (expected, published) for every difference (anything unexpected must be 0)."""
    keys = sorted(set(expected) | set(have))
    return {k: (expected.get(k, 0), have.get(k, 0)) for k in keys if expected.get(k, 0) != have.get(k, 0)}


# ------------------------------------------------------------------- which GPU holds a device

PCI_BUS_ID = "resource.kubernetes.io/pciBusID"
# The driver's canonical device names: ``gpu-<minor>`` for a full GPU (deviceinfo.go:124-126),
# ``gpu-<parent minor>-mig-<profile>-<GI profile id>-<placement start>`` for a MIG device
# (mig.go:111-114; the driver parses them back with this pattern, mig.go:244).
_GPU_NAME = re.compile(r"gpu-(\d{1,3})")
_MIG_NAME = re.compile(r"gpu-(\d{1,3})-mig-(.+)-(\d+)-(\d+)")


@dataclass(frozen=True)
class DeviceGpus:
    """Which GPU (its index, as mig-parted counts them) each published device of a node sits on."""

    gpus: Mapping[tuple[str, str], int]  # (pool, device name) -> GPU index
    problem: str | None  # why nothing can be said (then ``gpus`` is empty)
    # GPU index -> (MIG mode on, profile -> count of its MIG devices): what the driver saw on
    # each GPU it publishes (a whole GPU: MIG off; a GPU with MIG on and no device: absent).
    layouts: Mapping[int, tuple[bool, tuple[tuple[str, int], ...]]] = field(default_factory=dict)


@dataclass
class _Placed:
    """What :func:`_place` has read so far: each device's GPU (its minor), each minor's one PCI
    bus id and parent UUID, each MIG device's profile."""

    out: dict[tuple[str, str], int] = field(default_factory=dict)  # (pool, device) -> minor
    bus: dict[int, str] = field(default_factory=dict)
    parent: dict[int, str] = field(default_factory=dict)
    profiles: dict[tuple[str, str], str] = field(default_factory=dict)


def device_gpus(slices: Iterable[Any], node: str, gpus: int, driver: str = DRIVER) -> DeviceGpus:
    """Map each device ``node``'s ResourceSlices of ``driver`` publish to the GPU it is on.

    Read from the newest complete generation of each pool, as :func:`published` counts them; a
    pool being republished, or any device that does not read right, and nothing is mapped.

    The driver at kubernetes-sigs/dra-driver-nvidia-gpu@95932046 publishes no GPU index: a
    full GPU carries ``type: gpu``, ``uuid`` and its PCI bus id (deviceinfo.go:170-205), a MIG
    device ``type: mig``, ``parentUUID``, ``profile``, ``uuid`` and its parent's PCI bus id
    (mig.go:139-185, deviceinfo.go:258-263), the bus id as ``resource.kubernetes.io/pciBusID``
    (nvlib.go:546-551). Each name carries the GPU's minor number. mig-parted's GPU index is the
    rank of the GPU's PCI address among the GPUs NVML opens (NVIDIA/mig-parted@bd7160f4
    cmd/nvidia-mig-parted/util/device.go:79-101; go-nvlib nvpci.go:235-237 sorts them by
    address); the minor is taken as that index only where it fits: every GPU of the node's GPU
    count published (a GPU left out, MIG on with no device, nvlib.go:330-333, or fallen off the
    bus, may sit anywhere in the PCI order and shift every index), every minor below that count,
    one bus id and one parent UUID per minor, and bus ids rising with the minor. Anything else
    and the mapping is refused (the caller then treats every device as on a changing GPU).
    """
    pools: dict[str, list[Mapping[str, Any]]] = {}
    for raw in slices:
        pool_name, problem = _pool_of(raw, node, driver)
        if problem is not None:
            return DeviceGpus({}, problem)
        if pool_name is not None:
            pools.setdefault(pool_name, []).append(raw)
    seen = _Placed()
    for pool_name in sorted(pools):
        why = _place_pool(pool_name, pools[pool_name], gpus, driver, seen)
        if why is not None:
            return DeviceGpus({}, f"pool {pool_name!r}: {why}")
    out, profiles, bus = seen.out, seen.profiles, seen.bus
    ordered = [bus[m] for m in sorted(bus)]
    if any(_bus_key(a) >= _bus_key(b) for a, b in itertools.pairwise(ordered)):
        return DeviceGpus({}, "PCI bus ids do not rise with the GPUs' minor numbers")
    kinds: dict[int, dict[str, int]] = {}
    pool_of: dict[int, str] = {}
    for (pool_name, name), minor in out.items():
        # The driver publishes a node's devices in one pool named after the node (driver.go
        # :489-493): a GPU in two pools (one left over, or forged) would be counted twice.
        if pool_of.setdefault(minor, pool_name) != pool_name:
            return DeviceGpus({}, f"GPU {minor}'s devices are published in two pools")
        match = _MIG_NAME.fullmatch(name)
        profile = profiles[(pool_name, name)] if match is not None else WHOLE_GPU
        counts = kinds.setdefault(minor, {})
        counts[profile] = counts.get(profile, 0) + 1
    layouts: dict[int, tuple[bool, tuple[tuple[str, int], ...]]] = {}
    for minor, counts in sorted(kinds.items()):
        if WHOLE_GPU in counts:
            if counts != {WHOLE_GPU: 1}:
                return DeviceGpus({}, f"GPU {minor} is published both whole and with MIG devices")
            layouts[minor] = (False, ())
        else:
            layouts[minor] = (True, tuple(sorted(counts.items())))
    missing = [m for m in range(gpus) if m not in layouts]
    if missing:
        why = f"GPU {missing[0]} is not published: no GPU's index in mig-parted's order is known"
        return DeviceGpus({}, why)
    return DeviceGpus(out, None, layouts)


def _place_pool(
    pool_name: str,
    members: list[Mapping[str, Any]],
    gpus: int,
    driver: str,
    seen: _Placed,
) -> str | None:
    """Place every device of the pool's newest generation (:func:`_place`), or say why not."""
    newest = max(int(s["spec"]["pool"]["generation"]) for s in members)
    current = [s for s in members if s["spec"]["pool"]["generation"] == newest]
    if len(current) != int(current[0]["spec"]["pool"]["resourceSliceCount"]):
        return f"generation {newest} is being republished"
    for s in current:
        listed = s["spec"].get("devices") or []
        if not isinstance(listed, list) or len(listed) > MAX_SLICE_DEVICES:
            return "a slice's devices is not a short list"
        for d in listed:
            why = _place(d, pool_name, gpus, driver, seen)
            if why is not None:
                return why
    return None


def _bus_key(bus_id: str) -> tuple[int, ...]:
    # "0000:3b:00.0": domain, bus, device, function
    return tuple(int(p, 16) for p in re.split(r"[:.]", bus_id))


_BUS_ID = re.compile(r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")


def _place(d: Any, pool: str, gpus: int, driver: str, seen: _Placed) -> str | None:
    out, bus, parent, profiles = seen.out, seen.bus, seen.parent, seen.profiles
    name = d.get("name") if isinstance(d, Mapping) else None
    attrs = d.get("attributes") if isinstance(d, Mapping) else None
    if not isinstance(name, str) or not isinstance(attrs, Mapping):
        return "a device without a name or attributes"
    shown = name[:64]
    kind = _string_attribute(attrs, "type", driver)
    match = _GPU_NAME.fullmatch(name) if kind == WHOLE_GPU else _MIG_NAME.fullmatch(name)
    if kind not in (WHOLE_GPU, "mig") or match is None:
        return f"device {shown!r} is not named as the driver names a GPU or MIG device"
    minor = int(match.group(1))
    if minor >= gpus:
        return f"device {shown!r} is on GPU {minor}, but the node has {gpus} GPUs"
    pci = attrs.get(PCI_BUS_ID)
    pci_id = pci.get("string") if isinstance(pci, Mapping) else None
    if not isinstance(pci_id, str) or not _BUS_ID.fullmatch(pci_id.lower()):
        return f"device {shown!r} has no {PCI_BUS_ID}"
    owner = _string_attribute(attrs, "uuid" if kind == WHOLE_GPU else "parentUUID", driver)
    if owner is None:
        return f"device {shown!r} names no GPU UUID"
    if bus.setdefault(minor, pci_id.lower()) != pci_id.lower() or parent.setdefault(minor, owner) != owner:
        return f"GPU {minor}'s devices name different PCI bus ids or UUIDs"
    if (pool, name) in out:
        return f"duplicate device name {shown!r}"
    if kind == "mig":
        profile = _string_attribute(attrs, "profile", driver)
        if profile is None:
            return f"MIG device {shown!r} has no profile"
        profiles[(pool, name)] = profile
    out[(pool, name)] = minor
    return None
