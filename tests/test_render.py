"""Rendering: object validity (Kubernetes, mig-parted, assignment contract), names, quotas, determinism."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import latest_version
from kueue_crds import kueue_errors
from test_render_support import BALANCED, WHOLE, default_solution, policy, solution

from compiler.catalog import load_catalog
from compiler.model import GpuLayout, Quota, Tenant
from compiler.render import manifest_stream, oversized, render
from compiler.render.names import ALL_DISABLED, is_label_value, mig_config_name
from compiler.render.operator import operator_settings
from compiler.render.quota import check_quotas, check_unlimited, hard_limits

ROOT = Path(__file__).resolve().parents[1]
K8S_VERSION = latest_version()
KUEUE_KINDS = {"ClusterQueue", "LocalQueue", "ResourceFlavor"}  # tests/kueue_crds.py validates them


def load_schema(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((ROOT / "schema" / name).read_text(encoding="utf-8")))


def objects(files: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    """Every Kubernetes object file (not the kustomization, the GPU Operator settings, or target patches)."""
    return {
        path: yaml.safe_load(data)
        for path, data in files.items()
        if path.endswith(".yaml")
        and not path.endswith("kustomization.yaml")
        and "/gpu-operator-settings/" not in path
        and "/dra-settings/" not in path  # Helm values and Kueue's Configuration (compiler/render/dra.py)
        and "/patches/" not in path  # partial objects a kustomization merges (tests/test_hami_targets.py)
    }


def check_kueue(obj: dict[str, Any]) -> None:
    """Kueue objects are CRD-typed (kubernetes-validate has no schema): Kueue's own CRDs and webhook."""
    assert kueue_errors(obj) == []


def _pci_device(filter_id: str) -> tuple[int, int]:
    # mig-parted pkg/types/device.go NewDeviceIDFromString: strconv.ParseUint(s, 0, 32), upper 16 bits
    # the PCI device id, lower 16 the vendor.
    value = int(filter_id, 0)
    assert 0 <= value < 2**32
    return value >> 16, value & 0xFFFF


def check_device_filters(mig_configs: dict[str, Any], assignment: dict[str, Any]) -> None:
    """Every config of a pool is pinned to the pool's GPU model, except the model-free all-disabled ones."""
    catalog = load_catalog()
    for pool in assignment["pools"]:
        model = catalog.get(pool["gpuModel"])
        assert model is not None
        used = {n["config"] for n in pool["nodes"]} | set(pool.get("configCounts", {}))
        for name in used:
            entries = mig_configs[name]
            if not any(e["mig-enabled"] for e in entries):
                assert all("device-filter" not in e for e in entries), name
                continue
            for e in entries:
                ids = e["device-filter"] if isinstance(e["device-filter"], list) else [e["device-filter"]]
                assert {_pci_device(i) for i in ids} == {_pci_device(i) for i in model.pci_device_ids}
                assert all(vendor == 0x10DE for _, vendor in map(_pci_device, ids))  # NVIDIA


def check_operator_settings(
    files: dict[str, bytes],
    cluster: str,
    mig_parted: dict[str, Any],
    device_plugin: dict[str, str],
    assignment: dict[str, Any],
) -> None:
    """The GPU Operator settings name the rendered ConfigMaps and a strategy every node's config agrees with.

    Operator behaviour (NVIDIA/gpu-operator controllers/object_controls.go): ``mig.strategy`` becomes
    the device plugin's MIG_STRATEGY for every node; ``migManager.config.default`` is the mig-parted
    config of unlabelled nodes and ``devicePlugin.config.default`` the plugin config of unlabelled nodes,
    so both must exist in the ConfigMaps they name.
    """
    values = yaml.safe_load(files[f"{cluster}/gpu-operator-settings/values.yaml"])
    patch = yaml.safe_load(files[f"{cluster}/gpu-operator-settings/clusterpolicy-patch.yaml"])
    assert patch == {"spec": values}
    mig_cm = yaml.safe_load(files[f"{cluster}/gpu-operator/configmap-migc-mig-parted-config.yaml"])
    dp_cm = yaml.safe_load(files[f"{cluster}/gpu-operator/configmap-migc-device-plugin-config.yaml"])
    assert values["migManager"]["config"]["name"] == mig_cm["metadata"]["name"]
    assert values["migManager"]["config"]["default"] in mig_parted["mig-configs"]
    assert values["devicePlugin"]["config"]["name"] == dp_cm["metadata"]["name"]
    assert values["devicePlugin"]["config"]["default"] in device_plugin
    strategies = {entry["migStrategy"] for entry in assignment["configs"].values()}
    strategy = values["mig"]["strategy"]
    assert strategy in ("none", "mixed")
    # Under MIG_STRATEGY=mixed a MIG-disabled GPU is still advertised as nvidia.com/gpu
    # (k8s-device-plugin internal/rm/device_map.go buildGPUDeviceMap), so mixed serves every node;
    # none would hide the slices of every MIG node.
    assert "mixed" not in strategies or strategy == "mixed"
    if strategy == "mixed":  # validateFlags: no MPS under mixed (MIGC132 keeps such clusters out)
        bodies = [yaml.safe_load(body) for body in device_plugin.values()]
        assert not any("mps" in (body.get("sharing") or {}) for body in bodies)


def _hami_mig_pools(files: dict[str, bytes], cluster: str) -> list[str]:
    """Pools the rendered HamiPlan keeps the MIG manager off (HAMi's operatingMode: mig), sorted."""
    raw = files.get(f"{cluster}/migc-system/configmap-migc-hami.yaml")
    if raw is None:
        return []
    (text,) = yaml.safe_load(raw)["data"].values()
    plan = json.loads(text)
    return sorted(
        p["name"]
        for p in plan["pools"]
        if p.get("nodeLabels", {}).get("nvidia.com/gpu.deploy.mig-manager") == "false"
    )


def assert_valid_tree(files: dict[str, bytes], versions: Sequence[str] = ()) -> None:
    """Every object valid for the latest Kubernetes kubernetes-validate ships and for ``versions``."""
    migparted = load_schema("mig-parted-v1.schema.json")
    assignment_schema = load_schema("assignment.schema.json")
    capacity_schema = load_schema("capacity.schema.json")
    for path, obj in objects(files).items():
        if obj["kind"] in KUEUE_KINDS:
            check_kueue(obj)
        else:
            for version in sorted({K8S_VERSION, *versions}):
                kubernetes_validate.validate(obj, version, strict=True)
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "migc"
        assert "app.kubernetes.io/instance" not in labels
        assert path.rsplit("/", 1)[1] == f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"
    for path, data in files.items():
        assert data.endswith(b"\n") and not data.endswith(b"\n\n") and b"\r" not in data
        if path.endswith(".yaml"):
            assert data.startswith(b"# Code generated by migc ")
            assert b"DO NOT EDIT.\n" in data.split(b"\n", 1)[0] + b"\n"
    clusters = {p.split("/", 1)[0] for p in files}
    for cluster in clusters:
        cm = yaml.safe_load(files[f"{cluster}/gpu-operator/configmap-migc-mig-parted-config.yaml"])
        config = yaml.safe_load(cm["data"]["config.yaml"])
        errors = list(migparted.iter_errors(config))
        assert not errors, errors[0].message
        assert ALL_DISABLED in config["mig-configs"]
        doc = json.loads(
            yaml.safe_load(files[f"{cluster}/migc-system/configmap-migc-assignment.yaml"])["data"][
                "assignment.json"
            ]
        )
        errors = list(assignment_schema.iter_errors(doc))
        assert not errors, errors[0].message
        capacity_cm = yaml.safe_load(files[f"{cluster}/migc-system/configmap-migc-capacity.yaml"])
        capacity = json.loads(capacity_cm["data"]["capacity.json"])
        errors = list(capacity_schema.iter_errors(capacity))
        assert not errors, errors[0].message
        # Bound to the assignment rendered with it, and only pool-level aggregates (far below 1 MiB).
        assert capacity["cluster"] == cluster and capacity["assignmentRevision"] == doc["revision"]
        # The same pools, but for those HAMi carves itself (operatingMode: mig): the controller must
        # not touch them, so they are in no assignment, while the report still says what they serve.
        assigned = [p["name"] for p in doc["pools"]]
        reported = [p["name"] for p in capacity["pools"]]
        assert [n for n in reported if n not in assigned] == _hami_mig_pools(files, cluster)
        assert [n for n in reported if n in assigned] == assigned
        assert len(capacity_cm["data"]["capacity.json"]) < 64 * 1024
        for pool in capacity["pools"]:
            assert all(0 <= d["served"] <= d["requested"] for d in pool["demand"])
            served: dict[str, int] = {}
            for d in pool["demand"]:
                served[d["resource"]] = served.get(d["resource"], 0) + d["served"]
            for resource, n in served.items():
                if resource != "gpu":  # time-sliced pools serve shares of whole GPUs
                    assert n <= pool["capacity"].get(resource, 0), (pool["name"], resource)
        body = {k: v for k, v in doc.items() if k != "revision"}
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert doc["revision"] == hashlib.sha256(canonical.encode()).hexdigest()
        check_device_filters(config["mig-configs"], doc)
        for name, entry in doc["configs"].items():
            # Every GPU of the node is covered by exactly one mig-parted entry, with the assigned layout.
            entries = config["mig-configs"][name]
            gpus = len(entry["devices"])
            seen: dict[int, dict[str, Any]] = {}
            for e in entries:
                indices = range(gpus) if e["devices"] == "all" else e["devices"]
                for i in indices:
                    assert i not in seen and 0 <= i < gpus
                    seen[i] = e
            assert sorted(seen) == list(range(gpus))
            for i, device in enumerate(entry["devices"]):
                assert seen[i]["mig-enabled"] == device["migEnabled"]
                assert seen[i].get("mig-devices", {}) == device["profiles"]
            assert is_label_value(name)
        dp = yaml.safe_load(files[f"{cluster}/gpu-operator/configmap-migc-device-plugin-config.yaml"])["data"]
        for entry in doc["configs"].values():
            plugin = yaml.safe_load(dp[entry["devicePluginConfig"]])
            assert plugin["flags"]["migStrategy"] == entry["migStrategy"]
            if entry["migStrategy"] != "none":
                assert "mps" not in plugin.get("sharing", {})
        check_operator_settings(files, cluster, config, dp, doc)
        kustomization = yaml.safe_load(files[f"{cluster}/kustomization.yaml"])
        listed = {f"{cluster}/{p}" for p in kustomization["resources"]}
        expected = {
            p for p in files if p.startswith(cluster + "/") and not p.startswith(f"{cluster}/patches/")
        } - {
            f"{cluster}/kustomization.yaml",
            f"{cluster}/.migc-index.json",
            f"{cluster}/gpu-operator-settings/values.yaml",
            f"{cluster}/gpu-operator-settings/clusterpolicy-patch.yaml",
            f"{cluster}/dra-settings/dra-driver-values.yaml",  # DRA pools: settings, not objects
            f"{cluster}/dra-settings/kueue-configuration.yaml",
        }
        assert listed == expected
        index = json.loads(files[f"{cluster}/.migc-index.json"])
        for rel, digest in index["files"].items():
            assert hashlib.sha256(files[f"{cluster}/{rel}"]).hexdigest() == digest


@pytest.mark.parametrize("kueue", [False, True])
def test_every_rendered_object_is_valid(kueue: bool) -> None:
    files = render(policy(), default_solution(), load_catalog(), with_kueue=kueue)
    assert_valid_tree(files)
    kinds = {obj["kind"] for obj in objects(files).values()}
    expected = {
        "ConfigMap",
        "Namespace",
        "ResourceQuota",
        "PriorityClass",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    }
    assert kinds == (expected | KUEUE_KINDS if kueue else expected)


def test_gpu_operator_settings_per_cluster() -> None:
    files = render(policy(), default_solution(), load_catalog())
    values = yaml.safe_load(files["east/gpu-operator-settings/values.yaml"])
    assert values == {
        "mig": {"strategy": "mixed"},
        "migManager": {
            "enabled": True,
            "config": {"name": "migc-mig-parted-config", "default": "all-disabled"},
        },
        "devicePlugin": {"config": {"name": "migc-device-plugin-config", "default": "migc-whole-gpus"}},
    }
    kustomization = yaml.safe_load(files["east/kustomization.yaml"])
    assert not [p for p in kustomization["resources"] if "settings" in p]
    assert b"gpu-operator-settings" not in manifest_stream(files)
    # A cluster without MIG pools needs no MIG strategy (and MPS would be refused under any other).
    pol = policy()
    no_mig = dataclasses.replace(
        pol,
        clusters=tuple(
            dataclasses.replace(c, pools=tuple(dataclasses.replace(p, mig=False) for p in c.pools))
            for c in pol.clusters
        ),
    )
    assert operator_settings(no_mig.clusters[0])["mig"] == {"strategy": "none"}


def test_mig_parted_config_content() -> None:
    files = render(policy(), default_solution(), load_catalog())
    cm = yaml.safe_load(files["east/gpu-operator/configmap-migc-mig-parted-config.yaml"])
    assert cm["metadata"]["namespace"] == "gpu-operator"
    config = yaml.safe_load(cm["data"]["config.yaml"])["mig-configs"]
    balanced = "migc-a100-sxm4-80gb-1x3g.40gb-1x2g.20gb-2x1g.10gb"
    a100 = ["0x20B210DE", "0x20B510DE"]  # catalog: A100-SXM4-80GB and A100-80GB-PCIe
    assert config[balanced] == [
        {
            "device-filter": a100,
            "devices": "all",
            "mig-enabled": True,
            "mig-devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
        }
    ]
    mixed = "migc-a100-sxm4-80gb-6gpu-7x1g.10gb_2gpu-whole"
    assert config[mixed] == [
        {
            "device-filter": a100,
            "devices": [0, 1, 2, 3, 4, 5],
            "mig-enabled": True,
            "mig-devices": {"1g.10gb": 7},
        },
        {"device-filter": a100, "devices": [6, 7], "mig-enabled": False},
    ]
    # model-independent: applies to any GPU, so the GPU Operator's default works on every node
    assert config[ALL_DISABLED] == [{"devices": "all", "mig-enabled": False}]
    text = cm["data"]["config.yaml"]
    assert "# A100-SXM4-80GB (8 GPUs; pools a100): gpu 0-5: 7x 1g.10gb; gpu 6-7: MIG disabled" in text


def test_assignment_pools_named_and_selector() -> None:
    files = render(policy(), default_solution(), load_catalog())
    doc = json.loads(
        yaml.safe_load(files["east/migc-system/configmap-migc-assignment.yaml"])["data"]["assignment.json"]
    )
    pools = {p["name"]: p for p in doc["pools"]}
    assert [n["name"] for n in pools["a100"]["nodes"]] == ["a100-01", "a100-02"]
    assert pools["a100"]["maintenanceWindows"] == [
        {"days": ["Sat", "Sun"], "start": "02:00", "end": "06:00", "timezone": "UTC"}
    ]
    assert pools["h200"]["nodes"] == []
    assert pools["h200"]["selector"] == {"node.kubernetes.io/instance-type": "p5e.48xlarge"}
    assert pools["h200"]["configCounts"] == {"migc-h200-141gb-1x7g.141gb": 2}
    l40 = doc["configs"][pools["l40s"]["nodes"][0]["config"]]
    assert l40["devicePluginConfig"] == "migc-time-slicing-4"
    assert l40["resources"] == {"nvidia.com/gpu": 16}
    mixed = doc["configs"]["migc-a100-sxm4-80gb-6gpu-7x1g.10gb_2gpu-whole"]
    assert mixed["migStrategy"] == "mixed"
    assert mixed["resources"] == {"nvidia.com/gpu": 2, "nvidia.com/mig-1g.10gb": 42}


def test_all_disabled_variants_get_distinct_names() -> None:
    # An 8-GPU whole A100 node next to the 4-GPU time-sliced L40S node: same mig-parted layout
    # name, different GPU counts and device-plugin configs.
    sol = solution({"a100-01": (WHOLE,) * 8, "a100-02": (BALANCED,) * 8})
    files = render(policy(), sol, load_catalog())
    assert_valid_tree(files)
    doc = json.loads(
        yaml.safe_load(files["east/migc-system/configmap-migc-assignment.yaml"])["data"]["assignment.json"]
    )
    names = sorted(n for n in doc["configs"] if n.startswith(ALL_DISABLED))
    assert names == ["all-disabled-4gpu-time-slicing-4", "all-disabled-8gpu-whole-gpus"]


def test_long_config_name_falls_back_to_hash_with_readable_comment() -> None:
    catalog = load_catalog()
    layout = (
        GpuLayout.of({"1g.10gb": 7}),
        GpuLayout.of({"3g.40gb": 2}),
        GpuLayout.of({"2g.20gb": 3, "1g.10gb": 1}),
        GpuLayout.whole(),
    ) * 2
    name = mig_config_name(catalog.get("A100-SXM4-80GB"), "A100-SXM4-80GB", layout)
    assert is_label_value(name) and name.startswith("migc-a100-sxm4-80gb-") and len(name) == 30
    sol = solution({"a100-01": layout, "a100-02": layout})
    files = render(policy(), sol, catalog)
    assert_valid_tree(files)
    text = yaml.safe_load(files["east/gpu-operator/configmap-migc-mig-parted-config.yaml"])["data"][
        "config.yaml"
    ]
    assert "gpu 0: 7x 1g.10gb; gpu 1: 2x 3g.40gb; gpu 2: 3x 2g.20gb + 1x 1g.10gb; gpu 3: MIG disabled" in text
    assert f"  {name}:\n" in text


def test_quota_objects_use_burst_else_guaranteed() -> None:
    tenant = Tenant(
        "t",
        ("t",),
        "high",
        guaranteed=Quota(profiles=(("1g.10gb+me", 1), ("2g.20gb", 2)), gpus=1),
        burst=Quota(profiles=(("2g.20gb", 5),)),
    )
    assert hard_limits(tenant) == {"1g.10gb+me": 1, "2g.20gb": 5, "gpu": 1}
    files = render(policy(), default_solution(), load_catalog())
    quota = yaml.safe_load(files["east/tenants/search/search-dev/resourcequota-migc-gpu.yaml"])
    assert quota["spec"]["hard"] == {
        "requests.nvidia.com/mig-1g.10gb": "12",
        "requests.nvidia.com/mig-2g.20gb": "2",
    }
    assert quota["metadata"]["annotations"]["migc.dev/guaranteed"] == "1g.10gb=8"
    # Per-pod limits are an admission policy per tenant (tests/unit/compiler/render/test_admission.py),
    # no LimitRange.
    assert not [p for p in files if "limitrange" in p]
    # research does not own its namespace: quota yes, Namespace object no.
    assert "east/tenants/research/research/resourcequota-migc-gpu.yaml" in files
    assert "east/tenants/research/namespace-research.yaml" not in files
    ns = yaml.safe_load(files["east/tenants/search/namespace-search.yaml"])
    assert ns["metadata"]["annotations"]["argocd.argoproj.io/sync-options"] == "Prune=false"


def test_kueue_queues_nominal_and_borrowing() -> None:
    files = render(policy(), default_solution(), load_catalog(), with_kueue=True)
    cq = yaml.safe_load(files["east/tenants/search/clusterqueue-migc-search.yaml"])
    groups = {g["coveredResources"][0]: g["flavors"][0]["resources"][0] for g in cq["spec"]["resourceGroups"]}
    assert groups["nvidia.com/mig-1g.10gb"] == {
        "name": "nvidia.com/mig-1g.10gb",
        "nominalQuota": 8,
        "borrowingLimit": 4,
    }
    assert groups["nvidia.com/mig-2g.20gb"]["nominalQuota"] == 0
    assert cq["spec"]["cohortName"] == "migc-east"
    lq = yaml.safe_load(files["east/tenants/search/search-dev/localqueue-migc.yaml"])
    assert lq["spec"]["clusterQueue"] == "migc-search"
    assert "east/kueue/resourceflavor-mig-1g.10gb.yaml" in files


def test_priority_classes_per_tier() -> None:
    files = render(policy(), default_solution(), load_catalog())
    values = {
        yaml.safe_load(data)["metadata"]["name"]: yaml.safe_load(data)["value"]
        for path, data in files.items()
        if "/cluster/priorityclass-" in path
    }
    assert values == {"migc-critical": 1_000_000, "migc-high": 100_000, "migc-low": 1_000}


def test_render_is_deterministic_and_order_independent() -> None:
    catalog = load_catalog()
    first = render(policy(), default_solution(), catalog, with_kueue=True)
    again = render(policy(), default_solution(), catalog, with_kueue=True)
    assert first == again
    base = policy()
    shuffled = type(base)(
        clusters=base.clusters,
        tenants=tuple(reversed(base.tenants)),
        workloads=tuple(reversed(base.workloads)),
        partition=base.partition,
        fleet_name=base.fleet_name,
        source_files=base.source_files,
    )
    sol = default_solution()
    shuffled_sol = type(sol)(pools=tuple(reversed(sol.pools)))
    assert render(shuffled, shuffled_sol, catalog, with_kueue=True) == first
    assert list(first) == sorted(first)


def test_manifest_stream_holds_only_objects() -> None:
    files = render(policy(), default_solution(), load_catalog())
    docs = list(yaml.safe_load_all(manifest_stream(files)))
    assert len(docs) == len(files) - 4  # kustomization, index, two GPU Operator settings files
    assert all("kind" in d and d["kind"] != "Kustomization" for d in docs)
    assert docs[0]["kind"] == "ConfigMap" and docs[0]["metadata"]["name"] == "migc-assignment"
    assert manifest_stream(files, "nope") == b""


def test_guarantees_above_capacity_are_errors_naming_tenants() -> None:
    base = policy()
    greedy = Tenant(
        "greedy",
        ("greedy",),
        "high",
        guaranteed=Quota(profiles=(("1g.10gb", 60),), gpus=5),
        burst=Quota(profiles=(("1g.10gb", 200),)),
    )
    pol = type(base)(
        clusters=base.clusters,
        tenants=(greedy, *base.tenants),
        workloads=base.workloads,
        partition=base.partition,
        source_files=base.source_files,
    )
    diagnostics = check_quotas(pol, default_solution(), load_catalog())
    by_code = {d.code: d for d in diagnostics}
    # Capacity: 8 GPUs x 2 (balanced) + 6 x 7 = 58 1g.10gb; 2 whole A100 + 4 L40S x 4 replicas = 18 whole.
    assert "MIGC250" in by_code
    message = by_code["MIGC250"].message
    assert "guaranteed 68 1g.10gb instances (greedy 60, search 8)" in message
    assert "provides 58 and can honour 58 of them: short by 10" in message
    assert "MIGC251" not in by_code  # 5 + 2 whole GPUs fit into 18
    assert by_code["MIGC255"].severity.name == "WARNING" and "greedy" in by_code["MIGC255"].message


def test_guarantees_that_fit_give_no_diagnostics() -> None:
    assert check_quotas(policy(), default_solution(), load_catalog()) == []


def test_whole_gpu_shortfall_counts_reserve_and_sharing() -> None:
    base = policy()
    a100, h200, l40s = base.clusters[0].pools
    cluster = dataclasses.replace(
        base.clusters[0], pools=(dataclasses.replace(a100, reserve_whole_gpus=2), h200, l40s)
    )
    research = Tenant("research", ("research",), "low", guaranteed=Quota(gpus=17), burst=Quota(gpus=17))
    pol = dataclasses.replace(base, clusters=(cluster,), tenants=(research,))
    # Whole GPUs: a100-02 has 2, both reserved; the L40S node has 4 GPUs time-sliced 4 ways = 16.
    diagnostics = check_quotas(pol, default_solution(), load_catalog())
    assert sorted(d.code for d in diagnostics) == ["MIGC251", "MIGC255"]
    assert "guaranteed 17 whole GPUs (research 17)" in diagnostics[0].message
    assert "provides 16 and can honour 16 of them: short by 1" in diagnostics[0].message
    assert diagnostics[0].path == "$.spec.guaranteed.gpus"
    pol_ok = dataclasses.replace(pol, tenants=(dataclasses.replace(research, guaranteed=Quota(gpus=16)),))
    assert [d.code for d in check_quotas(pol_ok, default_solution(), load_catalog())] == ["MIGC255"]


def test_guarantees_spread_over_the_clusters_each_tenant_runs_in() -> None:
    """search runs only in east, research in both: research's guarantee may use west, search's may not."""
    base = policy()
    east = base.clusters[0]
    west = dataclasses.replace(
        east, name="west", pools=tuple(dataclasses.replace(p, cluster="west") for p in east.pools)
    )
    sol = default_solution()
    both = type(sol)(pools=sol.pools + tuple(dataclasses.replace(p, cluster="west") for p in sol.pools))
    notebooks_west = dataclasses.replace(base.workloads[1], name="notebooks-west", cluster="west")
    research, search = base.tenants
    # Whole GPUs: east 2 + 16 shares, west the same. research needs 30: only fits using both clusters.
    pol = dataclasses.replace(
        base,
        clusters=(east, west),
        workloads=(*base.workloads, notebooks_west),
        tenants=(dataclasses.replace(research, guaranteed=Quota(gpus=30), burst=Quota(gpus=30)), search),
    )
    assert check_quotas(pol, both, load_catalog()) == []
    # search is only in east (58 1g.10gb there); asking 100 fails although west has 58 more.
    greedy_search = dataclasses.replace(search, guaranteed=Quota(profiles=(("1g.10gb", 100),)), burst=Quota())
    diagnostics = check_quotas(
        dataclasses.replace(pol, tenants=(pol.tenants[0], greedy_search)), both, load_catalog()
    )
    assert [d.code for d in diagnostics] == ["MIGC250"]
    assert diagnostics[0].message.startswith("cluster east: tenants are guaranteed 100 1g.10gb instances")
    assert "short by 42" in diagnostics[0].message


def test_config_names_are_label_values_for_every_catalog_profile() -> None:
    catalog = load_catalog()
    for model in catalog.models:
        for prof in model.profiles:
            name = mig_config_name(model, model.model, (GpuLayout.of({prof.name: 1}),) * 8)
            assert is_label_value(name), name
            assert "+" not in name
            if prof.name.endswith("+me"):
                assert name.endswith(".me"), name
    a100 = catalog.get("A100-SXM4-80GB")
    assert mig_config_name(a100, "A100-SXM4-80GB", (GpuLayout.of({}),) * 2) == "migc-a100-sxm4-80gb-mig-empty"
    assert mig_config_name(a100, "A100-SXM4-80GB", (GpuLayout.whole(),) * 8) == ALL_DISABLED


def test_an_assignment_above_the_configmap_limit_is_sharded_and_other_configmaps_are_reported() -> None:
    base = policy()
    a100 = base.clusters[0].pools[0]
    names = tuple(f"gpu-node-{i:05d}" for i in range(9000))
    cluster = dataclasses.replace(base.clusters[0], pools=(dataclasses.replace(a100, node_names=names),))
    pol = dataclasses.replace(base, clusters=(cluster,))
    sol = type(default_solution())(
        pools=(
            dataclasses.replace(
                default_solution().pools[0],
                nodes=tuple(dataclasses.replace(default_solution().pools[0].nodes[0], name=n) for n in names),
            ),
        )
    )
    files = render(pol, sol, load_catalog())
    # 9,000 named nodes: one ConfigMap would hold over 1 MiB, so the nodes are sharded (issue 26)
    # and no rendered ConfigMap is over the limit.
    assert len([p for p in files if "/configmap-migc-assignment-" in p]) > 1
    assert oversized(files) == []
    assert oversized(render(policy(), default_solution(), load_catalog())) == []
    # Any other ConfigMap over the limit is still reported, at its file.
    big = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  k: " + "x" * ((1 << 20) + 1) + "\n"
    diagnostics = oversized({**files, "east/cluster/configmap-x.yaml": big.encode()})
    assert [(d.code, d.file) for d in diagnostics] == [("MIGC306", "east/cluster/configmap-x.yaml")]


def test_served_resources_outside_the_quota_are_reported() -> None:
    pol = policy()
    assert [d.code for d in check_unlimited(pol, default_solution())] == []
    # search is served 1g.10gb (bert); a quota naming only 2g.20gb leaves that use unlimited.
    narrowed = tuple(
        dataclasses.replace(t, guaranteed=Quota(), burst=Quota(profiles=(("2g.20gb", 2),)))
        if t.name == "search"
        else t
        for t in pol.tenants
    )
    diags = check_unlimited(dataclasses.replace(pol, tenants=narrowed), default_solution())
    assert [(d.code, d.severity.name) for d in diags] == [("MIGC310", "WARNING")]
    assert diags[0].message == (
        "cluster east: tenant search is served nvidia.com/mig-1g.10gb, not named in its quota, so no "
        "ResourceQuota or per-pod limit covers it"
    )


def test_500_tenants_over_the_quota_capacity_get_two_short_diagnostics() -> None:
    """500 tenants each guaranteed 10 GB of GPU memory (fine alone) and a 1g.10gb burst no workload
    makes the solver provision: one MIGC252 and one MIGC255 with the names summarised, not 500."""
    from test_solve_support import policy as solve_policy
    from test_solve_support import pool

    from compiler.solve import solve

    tenants = [
        Tenant(
            name=f"t{i:03d}",
            namespaces=(f"t{i:03d}",),
            priority_tier="high",
            guaranteed=Quota(gpu_memory_gb=10 + (i == 7)),
            burst=Quota(profiles=(("1g.10gb", 1),)),
        )
        for i in range(500)
    ]
    pol = solve_policy([pool(nodes=2)], [], tenants=tenants)
    catalog = load_catalog()
    diagnostics = check_quotas(pol, solve(pol, catalog), catalog)
    assert [d.code for d in diagnostics] == ["MIGC252", "MIGC255"]
    memory, burst = diagnostics
    assert memory.message.startswith(
        "cluster c1: 500 tenants are guaranteed 5001 GB of GPU memory (t007 11, t000 10,"
    )
    assert "t009 10 … and 490 more) but the solved layout provides 1280" in memory.message
    assert burst.message == (
        "cluster c1: 500 tenants may burst to up to 1 1g.10gb instances (t000 1, t001 1, t002 1, t003 1, "
        "t004 1, t005 1, t006 1, t007 1, t008 1, t009 1 … and 490 more) but the solved layout provides only 0"
    )
    assert sum(len(d.message) + len(d.hint) for d in diagnostics) < 1000
    # up to ten tenants are still named one by one
    few = dataclasses.replace(pol, tenants=pol.tenants[:10])
    assert [d.code for d in check_quotas(few, solve(few, catalog), catalog)] == ["MIGC255"] * 10
