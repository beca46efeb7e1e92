"""compiler/render/operator.py: what the GPU Operator is told per cluster, as Helm values and as a
ClusterPolicy merge patch holding the same settings."""

from __future__ import annotations

from dataclasses import replace

from test_render_support import pools

from compiler.model import Cluster
from compiler.render.manifests import DEVICE_PLUGIN_CONFIGMAP, MIG_CONFIGMAP
from compiler.render.operator import PATCH_FILE, VALUES_FILE, mig_strategy, operator_settings, settings_files


def test_strategy_is_mixed_with_any_mig_pool_and_none_without() -> None:
    a100, h200, l40s = pools()
    assert mig_strategy(Cluster("east", (a100, l40s))) == "mixed"
    assert mig_strategy(Cluster("east", (l40s,))) == "none"  # MPS is refused under any other strategy
    assert mig_strategy(Cluster("east", (replace(h200, mig=False),))) == "none"


def test_settings_name_migcs_configmaps_and_their_defaults() -> None:
    settings = operator_settings(Cluster("east", pools()))
    assert settings == {
        "mig": {"strategy": "mixed"},
        "migManager": {"enabled": True, "config": {"name": MIG_CONFIGMAP, "default": "all-disabled"}},
        "devicePlugin": {"config": {"name": DEVICE_PLUGIN_CONFIGMAP, "default": "migc-whole-gpus"}},
    }


def test_values_and_patch_carry_the_same_settings_and_say_how_to_apply_them() -> None:
    cluster = replace(Cluster("east", pools()), gpu_operator_namespace="nvidia")
    (values_path, values_how, values), (patch_path, patch_how, patch) = settings_files(cluster)
    assert (values_path, patch_path) == (VALUES_FILE, PATCH_FILE)
    assert values_path == "gpu-operator-settings/values.yaml"
    assert patch == {"spec": values} and values == operator_settings(cluster)
    assert "helm upgrade --reuse-values -n nvidia gpu-operator" in values_how
    assert f"-f <output>/east/{VALUES_FILE}" in values_how
    assert "kubectl patch clusterpolicies.nvidia.com cluster-policy --type merge" in patch_how
