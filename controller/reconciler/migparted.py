"""Which configs the GPU Operator's MIG manager can apply: the mig-parted ConfigMap's config names.

The MIG manager reads ``nvidia.com/mig.config`` and looks the value up under ``mig-configs`` in
the ``config.yaml`` key of the ConfigMap it mounts (NVIDIA mig-parted, ``api/spec/v1``). A label
naming a config that is not there leaves the node failed *after* it was cordoned and drained, so
the controller checks before it touches a node.
"""

from __future__ import annotations

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
