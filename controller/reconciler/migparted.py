"""Which configs the GPU Operator's MIG manager can apply: the mig-parted ConfigMap's config names.

The MIG manager reads ``nvidia.com/mig.config`` and looks the value up under ``mig-configs`` in
the ``config.yaml`` key of the ConfigMap it mounts (NVIDIA mig-parted, ``api/spec/v1``). A label
naming a config that is not there leaves the node failed *after* it was cordoned and drained, so
the controller checks before it touches a node.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from controller.errors import NotFoundError, PermanentError
from controller.kube import Kube

CONFIG_KEY = "config.yaml"
MAX_BYTES = 1 << 20  # a ConfigMap holds at most 1 MiB


class MigPartedError(PermanentError):
    """The mig-parted ConfigMap is missing or not a mig-parted config."""


def config_names(kube: Kube, ref: Mapping[str, Any]) -> frozenset[str]:
    """The config names defined in the mig-parted ConfigMap ``ref`` (``namespace``, ``name``)."""
    return frozenset(mig_configs(kube, ref))


def mig_configs(kube: Kube, ref: Mapping[str, Any]) -> dict[str, Any]:
    """The ``mig-configs`` mapping of the mig-parted ConfigMap ``ref`` (names as strings; each
    value as parsed, unchecked: :func:`changing_gpus` checks what it reads)."""
    where = f"ConfigMap {ref.get('namespace')}/{ref.get('name')}"
    try:
        cm = kube.get_configmap(str(ref.get("namespace")), str(ref.get("name")))
    except NotFoundError as exc:
        raise MigPartedError(f"mig-parted {where} not found") from exc
    text = (cm.get("data") or {}).get(CONFIG_KEY)
    if not isinstance(text, str):
        raise MigPartedError(f"mig-parted {where} has no key {CONFIG_KEY}")
    if len(text) > MAX_BYTES:
        raise MigPartedError(f"mig-parted {where}: {CONFIG_KEY} is larger than {MAX_BYTES} bytes")
    try:
        doc = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError) as exc:
        raise MigPartedError(f"mig-parted {where}: {CONFIG_KEY} is not YAML: {str(exc)[:200]}") from exc
    configs = doc.get("mig-configs") if isinstance(doc, dict) else None
    if not isinstance(configs, dict):
        raise MigPartedError(f"mig-parted {where}: {CONFIG_KEY} has no mig-configs mapping")
    return {str(k): v for k, v in configs.items()}


class MountedConfigs:
    """When each config name was first seen in the mig-parted ConfigMap (monotonic, memory only).

    The MIG manager reads the ConfigMap through a volume, which the kubelet refreshes only after
    its sync period plus cache delay (about a minute by default). A name that the API already
    has may not be in the mounted file yet; labelling a node with it then fails ("selected
    mig-config not present") and burns an attempt. So a name counts as mounted only
    ``delay`` seconds after this controller first saw it. Losing the memory (a restart) only
    makes it wait once more.
    """

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self._seen: dict[tuple[str, str, str], float] = {}

    def read(self, kube: Kube, ref: Mapping[str, Any]) -> frozenset[str]:
        names = config_names(kube, ref)
        where = (str(ref.get("namespace")), str(ref.get("name")))
        now = time.monotonic()
        for key in [k for k in self._seen if k[:2] == where and k[2] not in names]:
            del self._seen[key]  # removed from the ConfigMap: a later return starts over
        for n in names:
            self._seen.setdefault((*where, n), now)
        return names

    def wait_left(self, ref: Mapping[str, Any], config: str) -> float:
        """Seconds until ``config`` (seen by ``read``) is surely in the mounted file."""
        first = self._seen.get((str(ref.get("namespace")), str(ref.get("name")), config))
        if first is None:
            return self.delay
        return max(0.0, first + self.delay - time.monotonic())


def device_plugin_names(kube: Kube, ref: str) -> frozenset[str]:
    """The config names (keys) of the device-plugin ConfigMap ``ref`` (``namespace/name``).

    The device plugin's config-manager selects the file named by ``nvidia.com/device-plugin.config``
    among them and exits on a name that is not there ("specified config ... does not exist",
    NVIDIA/k8s-device-plugin@1b826acc cmd/config-manager/main.go:351-356, :250-252), so the plugin
    never comes back on that node.
    """
    namespace, _, name = ref.partition("/")
    try:
        cm = kube.get_configmap(namespace, name)
    except NotFoundError as exc:
        raise MigPartedError(f"device-plugin ConfigMap {ref} not found") from exc
    data = cm.get("data") or {}
    return frozenset(str(k) for k in data)


# --------------------------------------------------------------------- which GPUs an apply changes

# A node has at most this many GPUs for the per-GPU reasoning below (the assignment's own bound);
# more (or a count that cannot be read) and every GPU counts as changing.
MAX_GPUS = 64
# Distinct device-filter values considered per pair of configs; more and every GPU changes.
MAX_FILTERS = 16
_OTHER = "<no filter matches>"


@dataclass(frozen=True)
class _Entry:
    filters: frozenset[str] | None  # None: no device-filter (every GPU model)
    devices: frozenset[int] | None  # None: devices: all
    enabled: bool
    profiles: tuple[tuple[str, int], ...]  # mig-devices as written, zero counts included


class _Unreadable(Exception):
    """A field mig-parted would not accept."""


def _filters(raw: Any) -> frozenset[str] | None:
    """``device-filter``: None for none (helpers.go:35-37: an empty filter matches every GPU)."""
    if raw is None or raw == "" or raw == []:
        return None
    if isinstance(raw, str):
        return frozenset({raw.strip().upper()})
    if isinstance(raw, list) and all(isinstance(f, str) for f in raw):
        return frozenset(f.strip().upper() for f in raw)
    raise _Unreadable


def _indices(raw: Any) -> frozenset[int] | None:
    """``devices``: None for ``all``, else the GPU indices."""
    if raw == "all":
        return None
    if isinstance(raw, list) and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in raw):
        return frozenset(raw)
    raise _Unreadable


def _profiles(raw: Any) -> tuple[tuple[str, int], ...]:
    """``mig-devices``, zero counts kept (they matter to ``Equals``)."""
    raw = raw or {}
    if not isinstance(raw, Mapping) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in raw.values()
    ):
        raise _Unreadable
    return tuple(sorted((str(k), int(v)) for k, v in raw.items()))


def _entries(spec: Any) -> list[_Entry] | None:
    """A config's entries as mig-parted reads them (api/spec/v1/spec.go:36-41 MigConfigSpec),
    or None where anything is not what mig-parted would accept."""
    if not isinstance(spec, list) or len(spec) > MAX_GPUS:
        return None
    out = []
    try:
        for e in spec:
            if not isinstance(e, Mapping) or not isinstance(e.get("mig-enabled"), bool):
                return None
            enabled = bool(e["mig-enabled"])
            profiles = _profiles(e.get("mig-devices"))
            out.append(
                _Entry(
                    _filters(e.get("device-filter")),
                    _indices(e.get("devices")),
                    enabled,
                    profiles if enabled else (),
                )
            )
    except _Unreadable:
        return None
    return out


def _selected(entries: list[_Entry], gpu: int, device_id: str) -> _Entry | str | None:
    """The entry that applies to GPU ``gpu`` of PCI id ``device_id`` (WalkSelectedMigConfigForEachGPU,
    assert.go:215-248, with helpers.go:24-67); None if none; "many" if several do (each would be
    applied in turn: not reasoned about)."""
    found = [
        e
        for e in entries
        if (e.filters is None or device_id in e.filters) and (e.devices is None or gpu in e.devices)
    ]
    if len(found) > 1:
        return "many"
    return found[0] if found else None


def _equals(current: tuple[tuple[str, int], ...], target: tuple[tuple[str, int], ...]) -> bool:
    """mig-parted's ``MigConfig.Equals`` (pkg/types/mig_config.go:84-97, ``Contains`` :75-80) of
    the devices on a GPU (NVML lists only profiles it has) and the target's mig-devices: a
    zero count in the target makes the lengths differ, so that GPU is set again."""
    have = {p: c for p, c in current if c > 0}
    want = dict(target)
    return len(have) == len(want) and all(want.get(p, 0) > 0 and want[p] == c for p, c in have.items())


# What is on one GPU now: (MIG mode on, profile -> count of the MIG devices on it).
GpuLayout = tuple[bool, tuple[tuple[str, int], ...]]


def changing_gpus(
    configs: Mapping[str, Any],
    current: str | None,
    target: str,
    gpus: int | None,
    seen: Mapping[int, GpuLayout] | None = None,
) -> frozenset[int] | None:
    """The indices of the node's GPUs whose MIG devices mig-parted destroys when it moves the node
    to config ``target``, or None for "every GPU" (anything unknown: the safe answer).

    What is on the GPUs now comes from ``seen`` (GPU index -> layout, as the DRA driver
    publishes it; a GPU missing there is unknown) and from ``current``, the config the MIG manager
    last applied with ``success`` (when the ConfigMap still defines it; a render that dropped it
    leaves ``seen`` alone). Where both say something they must agree, else the GPU counts as
    unknown.

    What decides it is mig-parted's apply (NVIDIA/mig-parted@bd7160f4, run by the MIG manager,
    pkg/mig/reconfigure/reconfigure.go:184-209): ``ApplyMigConfigWithHooks``
    (cmd/nvidia-mig-parted/apply/apply.go:258-292) first asserts the MIG mode of every selected
    GPU; if any differs, ``ApplyMigMode`` (apply/mode.go:56-109) walks every selected GPU and
    clears the MIG configuration of each one in MIG mode (:88-94), and where a mode change is
    left pending it resets all GPUs of the node, walked or not (:119-129, ``ResetAllGPUs``:
    ``nvidia-smi -r`` on every GPU NVML sees, util/device.go:143-155; under WITH_REBOOT a failed
    mode change reboots the node, reconfigure.go:184-203) -- so a mode change anywhere changes
    every GPU of the node. Otherwise ``ApplyMigConfig`` (apply/config.go:46-103) goes GPU
    by GPU and skips a GPU whose MIG devices already equal the config ("Skipping -- already
    set to desired value", :92-95) or whose MIG mode is off (:80-83); a GPU no entry selects is
    never walked. An entry selects a GPU by ``devices`` (``all`` or indices) and by
    ``device-filter`` (PCI device ids, api/spec/v1/helpers.go:24-67). The node's PCI id is not in
    the API, so every id the configs name (and "none of them") is tried: a GPU is unchanged
    only if it is unchanged whichever id the node's GPUs have.
    """
    if target not in configs or gpus is None or not 0 < gpus <= MAX_GPUS:
        return None
    tgt = _entries(configs[target])
    cur = _entries(configs[current]) if current is not None and current in configs else None
    if tgt is None or (cur is None and seen is None):
        return None
    ids = sorted({f for e in (*(cur or []), *tgt) if e.filters is not None for f in e.filters})
    if len(ids) > MAX_FILTERS:
        return None
    devices_change: set[int] = set()
    mode_change = False
    for device_id in (*ids, _OTHER):
        for i in range(gpus):
            want = _selected(tgt, i, device_id)
            if want is None:
                continue  # never walked: left as it is
            have = _now(cur, seen, i, device_id)
            if isinstance(want, str) or have is None:
                # several entries select it, or what is on it now is not known
                mode_change = True
                continue
            if have[0] != want.enabled:
                mode_change = True
            elif want.enabled and not _equals(have[1], want.profiles):
                devices_change.add(i)
    # A mode change may reset every GPU of the node, not only the ones the target walks.
    return frozenset(range(gpus)) if mode_change else frozenset(devices_change)


def _positive(profiles: tuple[tuple[str, int], ...]) -> dict[str, int]:
    return {p: c for p, c in profiles if c > 0}


def _now(
    cur: list[_Entry] | None, seen: Mapping[int, GpuLayout] | None, gpu: int, device_id: str
) -> GpuLayout | None:
    """What is on GPU ``gpu`` now, if known (see :func:`changing_gpus`)."""
    observed = seen.get(gpu) if seen is not None else None
    if cur is None:
        return observed
    entry = _selected(cur, gpu, device_id)
    if isinstance(entry, str):
        return None
    if entry is None:
        return observed  # the current config does not say (under this id)
    said: GpuLayout = (entry.enabled, entry.profiles)
    if seen is None:
        return said
    if (
        observed is None
        or observed[0] != said[0]
        or (said[0] and _positive(observed[1]) != _positive(said[1]))
    ):
        return None
    return observed
