"""compiler/render/dra.py: DRA device classes, claims, quota keys, the DraPlan and its diagnostics.
tests/test_dra_render.py validates the objects of examples/dra against the Kubernetes schemas."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import replace
from pathlib import Path

import jsonschema
from test_render_support import default_solution, policy

from compiler.catalog import load_catalog
from compiler.model import Cluster, DraMig, Need, Policy, Target
from compiler.render.dra import (
    alternatives,
    claim_spec,
    class_name,
    device_classes,
    dra_diagnostics,
    expected_devices,
    node_labels,
    plan_document,
    quota_key,
    selector,
    slug,
)
from compiler.render.emit import canonical_json
from compiler.solve.result import ServedDemand, Solution

CATALOG = load_catalog()
SCHEMA = Path(__file__).resolve().parents[4] / "schema" / "draplan.schema.json"


def _policy(dra_mig: DraMig = "static") -> Policy:
    base = policy()
    (cluster,) = base.clusters
    pools = tuple(
        replace(p, allocation="dra", dra_mig=dra_mig) if p.name == "a100" else p for p in cluster.pools
    )
    return replace(base, clusters=(Cluster("east", pools),))


def test_names_and_keys_of_a_profile() -> None:
    assert slug("1g.10gb+me") == "1g.10gb-me"
    assert class_name("1g.10gb+me") == "mig-1g.10gb-me.migc.dev"
    assert class_name("gpu") == "gpu.nvidia.com"  # the driver's own class for whole GPUs
    assert quota_key("2g.20gb") == "mig-2g.20gb.migc.dev.deviceclass.resource.k8s.io/devices"
    assert selector("1g.10gb") == (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig' && "
        "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"
    )
    classes = dict(device_classes(["gpu", "3g.40gb", "1g.10gb"]))
    assert sorted(classes) == [
        "dra/deviceclass-mig-1g.10gb.migc.dev.yaml",
        "dra/deviceclass-mig-3g.40gb.migc.dev.yaml",
    ]


def test_one_alternative_is_exact_several_are_first_available() -> None:
    assert claim_spec(["1g.10gb"], 2) == {
        "devices": {
            "requests": [
                {
                    "name": "gpu",
                    "exactly": {
                        "deviceClassName": "mig-1g.10gb.migc.dev",
                        "allocationMode": "ExactCount",
                        "count": 2,
                    },
                }
            ]
        }
    }
    (request,) = claim_spec(["2g.20gb", "1g.10gb+me"])["devices"]["requests"]
    assert [(a["name"], a["deviceClassName"]) for a in request["firstAvailable"]] == [
        ("2g-20gb", "mig-2g.20gb.migc.dev"),
        ("1g-10gb-me", "mig-1g.10gb-me.migc.dev"),
    ]


def test_alternatives_keep_the_preference_order_else_the_most_served_first() -> None:
    pol = _policy()
    cluster = pol.clusters[0]
    bert = next(w for w in pol.workloads if w.name == "bert")
    preferring = replace(bert, need=Need(profiles=("2g.20gb", "bogus", "1g.10gb")))
    assert alternatives(preferring, {"1g.10gb": 8}, CATALOG, cluster) == ["2g.20gb", "1g.10gb"]
    by_memory = replace(bert, need=Need(gpu_memory_gb=10))
    assert alternatives(by_memory, {"1g.10gb": 3, "2g.20gb": 5, "1g.20gb": 5}, CATALOG, cluster) == [
        "1g.20gb",
        "2g.20gb",
        "1g.10gb",
    ]
    many = {f"p{i}": 1 for i in range(12)}
    assert len(alternatives(by_memory, many, CATALOG, cluster)) == 8  # FirstAvailableDeviceRequestMaxSize


def test_the_plan_lists_devices_per_node_matches_its_schema_and_hashes_itself() -> None:
    pol = _policy()
    doc = plan_document(pol.clusters[0], default_solution())
    jsonschema.validate(doc, json.loads(SCHEMA.read_text(encoding="utf-8")))
    (pool,) = doc["pools"]
    assert pool["nodeLabels"] == {"nvidia.com/gpu.deploy.device-plugin": "false"}
    # a100-01: 8 GPUs x (2 x 1g.10gb + 2g.20gb + 3g.40gb); a100-02: 6 x 7 x 1g.10gb + 2 whole GPUs
    assert pool["nodes"] == [
        {"name": "a100-01", "devices": {"1g.10gb": 16, "2g.20gb": 8, "3g.40gb": 8}},
        {"name": "a100-02", "devices": {"1g.10gb": 42, "gpu": 2}},
    ]
    unhashed = copy.deepcopy(doc)
    del unhashed["revision"]
    assert doc["revision"] == hashlib.sha256(canonical_json(unhashed).encode("utf-8")).hexdigest()


def test_dynamic_pools_keep_the_mig_manager_off_and_list_no_devices() -> None:
    pol = _policy("dynamic")
    (pool,) = pol.clusters[0].pools[:1]
    assert node_labels(pool) == {
        "nvidia.com/gpu.deploy.device-plugin": "false",
        "nvidia.com/gpu.deploy.mig-manager": "false",
    }
    assert plan_document(pol.clusters[0], default_solution())["pools"][0]["nodes"] == []
    assert expected_devices(pool, Solution(pools=())) == {}


def test_a_prioritized_claim_is_diagnosed_for_quota_and_kueue() -> None:
    pol = _policy()
    bert = next(w for w in pol.workloads if w.name == "bert")
    target = Target("apps/v1", "Deployment", "bert", "search")
    # 12 replicas preferring 1g.10gb then 2g.20gb; search's burst allows 12 x 1g.10gb but 2 x 2g.20gb
    pref = replace(bert, replicas=12, target=target, need=Need(profiles=("1g.10gb", "2g.20gb")))
    pol = replace(pol, workloads=tuple(pref if w.name == "bert" else w for w in pol.workloads))
    base = default_solution()
    served = (ServedDemand("search", "bert", "1g.10gb", 12, 12, "high"),)
    sol = Solution(pools=tuple(replace(p, demand=served) if p.pool == "a100" else p for p in base.pools))
    codes = [d.code for d in dra_diagnostics(pol, sol, CATALOG)]
    assert codes == ["MIGC331", "MIGC332"]
    assert dra_diagnostics(policy(), sol, CATALOG) == []  # no DRA pool
