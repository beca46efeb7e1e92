"""Which configs the GPU Operator's MIG manager can apply: the mig-parted ConfigMap's config names.

The MIG manager reads ``nvidia.com/mig.config`` and looks the value up under ``mig-configs`` in
the ``config.yaml`` key of the ConfigMap it mounts (NVIDIA mig-parted, ``api/spec/v1``). A label
naming a config that is not there leaves the node failed *after* it was cordoned and drained, so
the controller checks before it touches a node.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
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
    return frozenset(str(k) for k in configs)


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
