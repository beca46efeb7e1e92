"""What the NVIDIA GPU Operator must be told, per cluster: ``<cluster>/gpu-operator-settings/``.

These are not Kubernetes objects to apply, so they stay out of the kustomization:

* ``values.yaml`` — Helm values to merge into the GPU Operator release (``helm upgrade … -f``);
* ``clusterpolicy-patch.yaml`` — the same settings as a merge patch of the ClusterPolicy, for an
  operator installed another way (``kubectl patch clusterpolicies.nvidia.com cluster-policy
  --type merge --patch-file …``).

Why each setting (NVIDIA/gpu-operator ``controllers/object_controls.go`` and
``api/nvidia/v1/clusterpolicy_types.go``):

* ``mig.strategy``: the operator passes it to the device plugin and GPU feature discovery as
  ``MIG_STRATEGY`` for the whole cluster, and the environment beats the per-node config file. migc
  advertises every slice as ``nvidia.com/mig-<profile>``, which is ``mixed``; the chart's default
  ``single`` makes the plugin refuse any node with two profiles. A cluster without MIG pools gets
  ``none`` (MPS is refused under any other strategy, see MIGC132).
* ``migManager.config``: the ConfigMap holding migc's mig-parted ``config.yaml``; ``all-disabled`` is
  the config the operator's node labeller gives MIG-capable nodes that have none.
* ``devicePlugin.config``: the ConfigMap of device-plugin configs, chosen per node by the label
  ``nvidia.com/device-plugin.config`` (set by migc-controller); nodes without the label get the
  default, ``migc-whole-gpus`` (whole GPUs, no sharing), which the ConfigMap always holds.
"""

from __future__ import annotations

from typing import Any

from compiler.model import Cluster
from compiler.render.manifests import DEVICE_PLUGIN_CONFIGMAP, MIG_CONFIGMAP
from compiler.render.names import ALL_DISABLED, WHOLE_GPUS_CONFIG

SETTINGS_DIR = "gpu-operator-settings"
VALUES_FILE = f"{SETTINGS_DIR}/values.yaml"
PATCH_FILE = f"{SETTINGS_DIR}/clusterpolicy-patch.yaml"


def mig_strategy(cluster: Cluster) -> str:
    return "mixed" if any(pool.mig for pool in cluster.pools) else "none"


def operator_settings(cluster: Cluster) -> dict[str, Any]:
    """The settings as the Helm chart and the ClusterPolicy ``spec`` both spell them."""
    return {
        "mig": {"strategy": mig_strategy(cluster)},
        "migManager": {"enabled": True, "config": {"name": MIG_CONFIGMAP, "default": ALL_DISABLED}},
        "devicePlugin": {"config": {"name": DEVICE_PLUGIN_CONFIGMAP, "default": WHOLE_GPUS_CONFIG}},
    }


def settings_files(cluster: Cluster) -> list[tuple[str, str, dict[str, Any]]]:
    """``(relative path, usage comment, document)`` for each settings file of the cluster."""
    settings = operator_settings(cluster)
    ns = cluster.gpu_operator_namespace
    here = f"<output>/{cluster.name}"
    return [
        (
            VALUES_FILE,
            f"Helm values for the NVIDIA GPU Operator in namespace {ns}: merge into your release, e.g.\n"
            f"#   helm upgrade --reuse-values -n {ns} gpu-operator nvidia/gpu-operator \\\n"
            f"#     -f {here}/{VALUES_FILE}",
            settings,
        ),
        (
            PATCH_FILE,
            "ClusterPolicy merge patch (the same settings, for an operator not managed with Helm):\n"
            "#   kubectl patch clusterpolicies.nvidia.com cluster-policy --type merge \\\n"
            f"#     --patch-file {here}/{PATCH_FILE}",
            {"spec": settings},
        ),
    ]
