"""compiler/render/manifests.py: mig-parted configs named by content, the device-plugin configs,
the resources the controller verifies, and the NodeAssignment."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import replace
from pathlib import Path

import jsonschema
import yaml
from test_render_support import BALANCED, SEVEN_SMALL, WHOLE, default_solution, policy, pools, solution

from compiler.catalog import load_catalog
from compiler.model import Cluster, HamiSettings, Sharing
from compiler.render.emit import canonical_json
from compiler.render.manifests import (
    assignment_document,
    collect_configs,
    device_plugin_configmap,
    expected_resources,
    metadata,
    mig_parted_text,
    node_device_plugin_config,
)

CATALOG = load_catalog()
A100, H200, L40S = pools()
SCHEMA = Path(__file__).resolve().parents[4] / "schema" / "assignment.schema.json"


def test_metadata_carries_migcs_labels_sorted() -> None:
    meta = metadata("x", "ns", extra_labels={"migc.dev/tenant": "t"}, annotations={"b": "2", "a": "1"})
    assert meta == {
        "name": "x",
        "namespace": "ns",
        "labels": {
            "app.kubernetes.io/managed-by": "migc",
            "app.kubernetes.io/part-of": "migc",
            "migc.dev/tenant": "t",
        },
        "annotations": {"a": "1", "b": "2"},
    }
    assert "namespace" not in metadata("cluster-scoped")


def test_expected_resources_per_kind_of_node() -> None:
    layout = (BALANCED, SEVEN_SMALL, WHOLE)
    assert expected_resources(A100, layout) == {
        "nvidia.com/gpu": 1,
        "nvidia.com/mig-1g.10gb": 2 + 7,
        "nvidia.com/mig-2g.20gb": 1,
        "nvidia.com/mig-3g.40gb": 1,
    }
    assert expected_resources(L40S, (WHOLE,) * 4) == {"nvidia.com/gpu": 16}  # time-sliced ×4
    hami = replace(L40S, sharing=Sharing("hami", 1, HamiSettings(split_count=10)))
    assert expected_resources(hami, (WHOLE,) * 4) == {"nvidia.com/gpu": 40}  # splitCount vGPUs per GPU
    assert expected_resources(replace(A100, allocation="dra"), layout) == {"nvidia.com/gpu": 0}


def test_device_plugin_configs_always_hold_the_whole_gpu_default() -> None:
    assert node_device_plugin_config(A100, (BALANCED,)) == "migc-mig-mixed"
    assert node_device_plugin_config(L40S, (WHOLE,)) == "migc-time-slicing-4"
    _, cm = device_plugin_configmap(Cluster("east", pools()), ["migc-time-slicing-4", "migc-mig-mixed"])
    assert sorted(cm["data"]) == ["migc-mig-mixed", "migc-time-slicing-4", "migc-whole-gpus"]
    sliced = yaml.safe_load(cm["data"]["migc-time-slicing-4"])
    assert sliced == {
        "version": "v1",
        "flags": {"migStrategy": "none"},
        "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}},
    }
    assert yaml.safe_load(cm["data"]["migc-mig-mixed"])["flags"] == {"migStrategy": "mixed"}


def test_one_config_per_node_layout_and_suffixes_where_one_name_covers_variants() -> None:
    configs = collect_configs(Cluster("east", pools()), default_solution(), CATALOG)
    by_pool = {cfg.pools: cfg for cfg in configs.values()}
    assert sorted(cfg.name for cfg in configs.values()) == sorted(configs)
    assert by_pool[("l40s",)].name == "all-disabled"  # the only all-disabled variant
    assert sum(1 for c in configs.values() if c.pools == ("a100",)) == 2  # two a100 node layouts
    # all-disabled on 8-GPU plain nodes and on 4-GPU time-sliced ones: two variants, named apart
    whole = solution({"a100-01": (WHOLE,) * 8, "a100-02": (WHOLE,) * 8})
    names = sorted(c.name for c in collect_configs(Cluster("east", pools()), whole, CATALOG).values())
    assert "all-disabled-4gpu-time-slicing-4" in names and "all-disabled-8gpu-whole-gpus" in names


def test_mig_parted_config_pins_entries_to_the_model_and_keeps_all_disabled() -> None:
    configs = collect_configs(Cluster("east", pools()), default_solution(), CATALOG)
    doc = yaml.safe_load(mig_parted_text(configs, CATALOG))
    assert doc["version"] == "v1"
    assert doc["mig-configs"]["all-disabled"] == [{"devices": "all", "mig-enabled": False}]
    a100 = CATALOG.get("A100-SXM4-80GB")
    assert a100 is not None
    (mixed,) = [n for n, c in configs.items() if c.layout == (SEVEN_SMALL,) * 6 + (WHOLE,) * 2]
    entries = doc["mig-configs"][mixed]
    ids = list(a100.pci_device_ids) if len(a100.pci_device_ids) > 1 else a100.pci_device_ids[0]
    assert entries == [
        {
            "device-filter": ids,
            "devices": [0, 1, 2, 3, 4, 5],
            "mig-enabled": True,
            "mig-devices": {"1g.10gb": 7},
        },
        {"device-filter": ids, "devices": [6, 7], "mig-enabled": False},
    ]


def test_the_assignment_matches_its_schema_and_hashes_its_content() -> None:
    cluster = policy().clusters[0]
    configs = collect_configs(cluster, default_solution(), CATALOG)
    doc = assignment_document(cluster, default_solution(), configs)
    jsonschema.validate(doc, json.loads(SCHEMA.read_text(encoding="utf-8")))
    pools_by_name = {p["name"]: p for p in doc["pools"]}
    assert [n["name"] for n in pools_by_name["a100"]["nodes"]] == ["a100-01", "a100-02"]
    h200 = pools_by_name["h200"]  # chosen by label selector: counts per config, no node names
    assert h200["nodes"] == [] and sum(h200["configCounts"].values()) == 2
    assert h200["selector"] == {"node.kubernetes.io/instance-type": "p5e.48xlarge"}
    unhashed = copy.deepcopy(doc)
    del unhashed["revision"]
    assert doc["revision"] == hashlib.sha256(canonical_json(unhashed).encode("utf-8")).hexdigest()
