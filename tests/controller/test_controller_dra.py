"""Static DRA pools: rolled out through the MIG manager, verified from the DRA driver's
ResourceSlices (DRA does not fill node allocatable); DynamicMIG pools left alone; a bad DraPlan
refused. Against the API emulator, whose DRA kubelet plugin publishes what the emulated MIG
manager applied (emulation.FakeDraDriver), never what the DraPlan says."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from conftest import DEVICE_PLUGIN_CONFIGS, Cluster
from emulation import (
    CONFIGMAPS,
    GPU_CLIENT_KEY,
    GPU_COUNT,
    NODES,
    RESOURCESLICES,
    node_object,
    revision_of,
)
from kubernetes import client

from controller import state as st
from controller.errors import PermanentError
from controller.kube import Kube

# An idle controller (a refused document or a held node leaves nothing in flight) passes once per
# resync, so at FAST's 0.5 s each settle() of n passes waited n/2 s. What shows that nothing happens
# is the number of passes, not the time: the scenarios that settle on a refusal or a hold resync
# every 0.1 s (issue 27).
IDLE_RESYNC = 0.1


H100 = "NVIDIA-H100-80GB-HBM3"
DRIVER = "gpu.nvidia.com"
DEPLOY_DEVICE_PLUGIN = "nvidia.com/gpu.deploy.device-plugin"
POOL_LABEL = "migc.test/pool"
WHOLE = {"migEnabled": False, "profiles": {}}
# What the compiler renders for static DRA pools (tests/golden/dra/east/migc-system/
# configmap-migc-assignment.yaml): the device plugin is off there, so nothing is allocatable.
DRA_CONFIGS: dict[str, dict[str, Any]] = {
    "dra-all-1g.10gb": {
        "devices": [{"migEnabled": True, "profiles": {"1g.10gb": 7}}] * 8,
        "migStrategy": "mixed",
        "devicePluginConfig": "migc-dra-mixed",
        "resources": {"nvidia.com/gpu": 0},
    },
    "dra-6gpu-whole_2gpu-balanced": {
        "devices": [WHOLE] * 6
        + [{"migEnabled": True, "profiles": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}}] * 2,
        "migStrategy": "mixed",
        "devicePluginConfig": "migc-dra-mixed",
        "resources": {"nvidia.com/gpu": 0},
    },
    "all-disabled-dra": {
        "devices": [WHOLE] * 8,
        "migStrategy": "none",
        "devicePluginConfig": "migc-dra",
        "resources": {"nvidia.com/gpu": 0},
    },
}
# The devices each config's layout makes, written out by hand (the DraPlan's "devices").
EXPECTED = {
    "dra-all-1g.10gb": {"1g.10gb": 56},
    "dra-6gpu-whole_2gpu-balanced": {"gpu": 6, "1g.10gb": 4, "2g.20gb": 2, "3g.40gb": 2},
    "all-disabled-dra": {"gpu": 8},
}
DP_CONFIGS = {
    **DEVICE_PLUGIN_CONFIGS,
    "migc-dra": {"version": "v1", "flags": {"migStrategy": "none"}},
    "migc-dra-mixed": {"version": "v1", "flags": {"migStrategy": "mixed"}},
}


def _hash(doc: Mapping[str, Any]) -> str:
    rest = {k: v for k, v in doc.items() if k != "revision"}
    return hashlib.sha256(json.dumps(rest, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def draplan(
    static: Mapping[str, str],
    *,
    dynamic_selector: Mapping[str, str] | None = None,
    expected: Mapping[str, Mapping[str, int]] | None = None,
    cluster: str = "test",
) -> dict[str, Any]:
    """A DraPlan as migc compile renders it (compiler/render/dra.py plan_document)."""
    pools: list[dict[str, Any]] = [
        {
            "name": "h100",
            "gpuModel": "H100-80GB",
            "mig": "static",
            "driver": DRIVER,
            "nodeLabels": {DEPLOY_DEVICE_PLUGIN: "false"},
            "nodes": [
                {"name": n, "devices": dict((expected or {}).get(n) or EXPECTED[c])}
                for n, c in sorted(static.items())
            ],
        }
    ]
    if dynamic_selector is not None:
        pools.append(
            {
                "name": "h200",
                "gpuModel": "H200-141GB",
                "mig": "dynamic",
                "driver": DRIVER,
                "nodeLabels": {DEPLOY_DEVICE_PLUGIN: "false", "nvidia.com/gpu.deploy.mig-manager": "false"},
                "nodes": [],
                "selector": dict(dynamic_selector),
            }
        )
    doc: dict[str, Any] = {
        "apiVersion": "migc.dev/v1alpha1",
        "kind": "DraPlan",
        "cluster": cluster,
        "pools": pools,
    }
    doc["revision"] = _hash(doc)
    return doc


def dra_assignment(
    nodes: Mapping[str, str], *, pool: str = "h100", max_unavailable: int = 2
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "migc.dev/v1alpha1",
        "kind": "NodeAssignment",
        "cluster": "test",
        "revision": "",
        "migConfigMap": {"namespace": "gpu-operator", "name": "migc-mig-parted-config"},
        "configs": {k: v for k, v in DRA_CONFIGS.items() if k in set(nodes.values())},
        "pools": [
            {
                "name": pool,
                "gpuModel": "H100-80GB",
                "maxUnavailable": max_unavailable,
                "maintenanceWindows": [],
                "nodes": [{"name": n, "config": c} for n, c in sorted(nodes.items())],
            }
        ],
    }
    doc["revision"] = revision_of(doc)
    return doc


def set_draplan(cluster: Cluster, doc: Mapping[str, Any] | str) -> None:
    text = doc if isinstance(doc, str) else json.dumps(doc, indent=2, sort_keys=True)
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "migc-dra", "namespace": "migc-system"},
        "data": {"dra.json": text},
    }
    cluster.emu.upsert(CONFIGMAPS, "migc-system", "migc-dra", cm)


def dra_setup(cluster: Cluster, *, client_key: bool = True) -> None:
    """The mig-parted and device-plugin ConfigMaps with the DRA configs, and the driver's kubelet
    plugin DaemonSet: on nodes labelled nvidia.com/gpu.deploy.client=true (what migc renders in
    the driver's values), else -- an operator older than 26.7 -- on the pool's nodes only."""
    from conftest import CONFIGS

    cluster.set_mig_parted({**CONFIGS, **DRA_CONFIGS})
    cluster.set_device_plugin_configs(DP_CONFIGS)
    selector = {GPU_CLIENT_KEY: "true"} if client_key else {POOL_LABEL: "h100"}
    ns, name = cluster.dra.daemonset
    cluster.emu.run(lambda api: api.add_client_daemonset(ns, name, selector, None))


def add_dra_nodes(
    cluster: Cluster, names: list[str], config: str, *, extra: Mapping[str, str] | None = None
) -> None:
    """H100 nodes of a static DRA pool carrying ``config``: device plugin off (the DraPlan's
    nodeLabels), nvidia.com/gpu.deploy.client=true (the GPU Operator sets it on GPU nodes)."""
    for n in names:
        labels = {
            GPU_COUNT: "8",
            st.MIG_CAPABLE: "true",
            st.MIG_CONFIG: config,
            st.MIG_STATE: "success",
            "nvidia.com/gpu.product": H100,
            DEPLOY_DEVICE_PLUGIN: "false",
            GPU_CLIENT_KEY: "true",
            POOL_LABEL: "h100",
            **(extra or {}),
        }
        cluster.emu.upsert(NODES, None, n, node_object(n, labels, {}))


def published_slices(cluster: Cluster, node: str) -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = cluster.emu.run(lambda api: cluster.dra.slices(api, node))
    return found


def slice_devices(cluster: Cluster, node: str) -> dict[str, int]:
    """What the emulated driver publishes for ``node`` now (all its slices, newest generation)."""
    found = published_slices(cluster, node)
    newest = max((o["spec"]["pool"]["generation"] for _n, o in found), default=0)
    out: dict[str, int] = {}
    for _name, obj in found:
        if obj["spec"]["pool"]["generation"] != newest:
            continue
        for d in obj["spec"]["devices"]:
            attrs = d["attributes"]
            key = attrs["profile"]["string"] if attrs["type"]["string"] == "mig" else attrs["type"]["string"]
            out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def history_index(cluster: Cluster, pred: Any) -> int:
    calls = cluster.emu.calls()
    for i, c in enumerate(calls):
        if pred(c):
            return i
    raise AssertionError("no such call")


def uncordoned(node: str) -> Any:
    def pred(c: Any) -> bool:
        spec = (c.body or {}).get("spec") or {} if c.resource == "nodes" and c.verb == "patch" else {}
        return c.name == node and spec.get("unschedulable") is False

    return pred


def wait_published(cluster: Cluster, nodes: list[str]) -> None:
    cluster.wait(lambda: all(n in cluster.dra.sync_window for n in nodes))


# ------------------------------------------------------------------------------- rollout, verify


@pytest.mark.parametrize("wiped", [False, True], ids=["old-slices-linger", "kubelet-wiped-them"])
def test_static_dra_pool_is_rolled_out_and_verified_from_resourceslices(
    cluster: Cluster, wiped: bool
) -> None:
    """While the driver's plugin is down the old layout's slices stay (or, past the kubelet's
    wiping delay, there are none); the node is Done only once the restarted plugin published."""
    cluster.dra.start_delay = 0.4  # discovery + registration of the restarted plugin
    if wiped:
        cluster.dra.wipe_delay = 0.05
    dra_setup(cluster)
    nodes = ["h100-0", "h100-1"]
    add_dra_nodes(cluster, nodes, "dra-all-1g.10gb")
    wait_published(cluster, nodes)
    assert slice_devices(cluster, "h100-0") == {"1g.10gb": 56}
    target = dict.fromkeys(nodes, "dra-6gpu-whole_2gpu-balanced")
    set_draplan(cluster, draplan(target))
    cluster.set_assignment(dra_assignment(target))
    if wiped:
        cluster.mig.gate.clear()  # the MIG manager's apply takes longer than the kubelet's wiping delay
    cluster.start()
    if wiped:
        cluster.wait(lambda: all((n, "wiped", 0) in cluster.dra.published for n in nodes))
        assert slice_devices(cluster, "h100-0") == {}
        cluster.mig.gate.set()
    cluster.wait(lambda: cluster.converged(target))
    for n in nodes:
        # The driver announced the new layout, named its way ...
        assert slice_devices(cluster, n) == EXPECTED["dra-6gpu-whole_2gpu-balanced"]
        names = {d["name"] for _s, o in published_slices(cluster, n) for d in o["spec"]["devices"]}
        assert {
            "gpu-0",
            "gpu-5",
            "gpu-6-mig-2g20gb-14-0",
            "gpu-6-mig-3g40gb-9-4",
            "gpu-7-mig-1g10gb-19-3",
        } <= names
        # ... and the node was uncordoned only after the restarted plugin had published it (the
        # MIG manager's success came start_delay earlier; allocatable said nvidia.com/gpu: 0 all along).
        assert history_index(cluster, uncordoned(n)) > cluster.dra.sync_window[n][1]
        assert ((n, "wiped", 0) in cluster.dra.published) is wiped
    lists = [c for c in cluster.controller_calls() if c.resource == "resourceslices"]
    assert lists and all(c.verb == "list" and c.group == "resource.k8s.io" for c in lists)
    assert {c.params.get("fieldSelector") for c in lists} == {
        f"spec.nodeName={n},spec.driver={DRIVER}" for n in nodes
    }
    assert all(c.params.get("limit") for c in lists)


@pytest.mark.parametrize("fault", ["gpu-off-the-bus", "plugin-not-restarted"])
def test_verification_fails_when_the_driver_publishes_other_geometry(cluster: Cluster, fault: str) -> None:
    """The MIG manager says success, but the slices do not show the layout: a GPU NVML does not
    see any more, or a driver plugin the MIG manager did not pause (its DaemonSet does not select
    nvidia.com/gpu.deploy.client, so it never rediscovers: the old layout's slices stay)."""
    dra_setup(cluster, client_key=fault != "plugin-not-restarted")
    if fault == "gpu-off-the-bus":
        cluster.dra.hidden_gpus["h100-0"] = {7}
    add_dra_nodes(cluster, ["h100-0"], "dra-all-1g.10gb")
    wait_published(cluster, ["h100-0"])
    target = {"h100-0": "dra-6gpu-whole_2gpu-balanced"}
    set_draplan(cluster, draplan(target))
    cluster.set_assignment(dra_assignment(target))
    ctl = cluster.start(failures__max_attempts=1, apply__verify_timeout=1.0)
    cluster.wait(lambda: cluster.phases()["h100-0"] == "Failed")
    node = cluster.node("h100-0")
    error = node["metadata"]["annotations"][st.LAST_ERROR]
    assert "ResourceSlices of gpu.nvidia.com" in error and "do not match" in error, error
    if fault == "gpu-off-the-bus":
        assert "1g.10gb: want 4 have 2, 2g.20gb: want 2 have 1, 3g.40gb: want 2 have 1" in error, error
    else:
        assert "1g.10gb: want 4 have 56" in error and "gpu: want 6 have 0" in error, error
    assert node["spec"]["unschedulable"] is True  # stays cordoned, as any failed verification
    assert node["metadata"]["labels"][st.MIG_STATE] == "success"
    cluster.settle(ctl, 3)


def test_verification_waits_through_a_republished_generation(cluster: Cluster) -> None:
    """The driver hands its devices in two slices; republishing bumps the pool's generation and
    updates the slices one API call apart, so for a while the newest generation has 1 of 2
    slices beside the older generation's other slice. The controller reads it then, and waits."""
    cluster.dra.slices_per_pool = 2
    dra_setup(cluster)
    add_dra_nodes(cluster, ["h100-0"], "dra-all-1g.10gb")
    wait_published(cluster, ["h100-0"])
    assert cluster.dra.published[-1] == ("h100-0", 1, 2)
    cluster.dra.api_delay = 0.6
    target = {"h100-0": "dra-6gpu-whole_2gpu-balanced"}
    set_draplan(cluster, draplan(target))
    cluster.set_assignment(dra_assignment(target))
    cluster.start()
    cluster.wait(lambda: cluster.converged(target))
    assert cluster.dra.published[-1] == ("h100-0", 2, 2)
    first, last = cluster.dra.sync_window["h100-0"]
    calls = cluster.emu.calls()
    during = [
        c for c in calls[first:last] if c.resource == "resourceslices" and c.user_agent.startswith("migc")
    ]
    assert during, "the controller did not look at the slices while the pool was being republished"
    assert history_index(cluster, uncordoned("h100-0")) > last
    assert slice_devices(cluster, "h100-0") == EXPECTED["dra-6gpu-whole_2gpu-balanced"]


def test_draplan_and_assignment_of_different_renders_wait_then_fail(cluster: Cluster) -> None:
    """The DraPlan expects other devices than the target config's layout makes (one document
    synced before the other): the node is not verified; it fails after --verify-timeout."""
    dra_setup(cluster)
    add_dra_nodes(cluster, ["h100-0"], "dra-all-1g.10gb")
    target = {"h100-0": "dra-6gpu-whole_2gpu-balanced"}
    set_draplan(cluster, draplan(target, expected={"h100-0": {"gpu": 8}}))
    cluster.set_assignment(dra_assignment(target))
    cluster.start(failures__max_attempts=1, apply__verify_timeout=1.0)
    cluster.wait(lambda: cluster.phases()["h100-0"] == "Failed")
    error = cluster.node("h100-0")["metadata"]["annotations"][st.LAST_ERROR]
    assert "DraPlan and assignment are of different renders" in error, error


def test_pods_holding_devices_through_resourceclaims_are_drained_first(cluster: Cluster) -> None:
    """On a DRA node a workload asks through spec.resourceClaims, with nothing in its limits: the
    drain must still evict it, or the MIG manager's apply fails on the GPU instance it uses."""
    from conftest import assert_only_gpu_pods_evicted
    from emulation import PODS, pod_object

    dra_setup(cluster)
    add_dra_nodes(cluster, ["h100-0"], "dra-all-1g.10gb")
    pod = pod_object("embedder-0", "h100-0", namespace="search", gpu=None)
    pod["spec"]["resourceClaims"] = [{"name": "migc-gpu", "resourceClaimTemplateName": "migc-embedder"}]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "migc-gpu"}]
    cluster.emu.upsert(PODS, "search", "embedder-0", pod)
    cluster.add_pod("cpu-only", "h100-0", namespace="search", gpu=None)
    target = {"h100-0": "dra-6gpu-whole_2gpu-balanced"}
    set_draplan(cluster, draplan(target))
    cluster.set_assignment(dra_assignment(target))
    cluster.start()
    cluster.wait(lambda: cluster.converged(target))
    assert assert_only_gpu_pods_evicted(cluster.controller_calls(), {"search/embedder-0"}) == {
        "search/embedder-0"
    }
    assert not [n for n, _c, mode in cluster.mig.handled if mode == "failed"]


def test_a_static_dra_node_without_its_draplan_labels_is_held_until_labelled(cluster: Cluster) -> None:
    """Still running the device plugin (no nvidia.com/gpu.deploy.device-plugin=false): the node is
    not cordoned, with an Event, until it carries the labels the DraPlan names."""
    dra_setup(cluster)
    add_dra_nodes(cluster, ["h100-0"], "dra-all-1g.10gb", extra={DEPLOY_DEVICE_PLUGIN: "true"})
    target = {"h100-0": "dra-6gpu-whole_2gpu-balanced"}
    set_draplan(cluster, draplan(target))
    cluster.set_assignment(dra_assignment(target))
    ctl = cluster.start(loop__resync_interval=IDLE_RESYNC)
    cluster.wait(
        lambda: any(
            (c.body or {}).get("reason") == "DraNodeLabelsMissing" for c in cluster.controller_calls()
        )
    )
    cluster.settle(ctl, 4)
    assert not [c for c in cluster.controller_calls() if c.resource == "nodes" and c.verb == "patch"]
    cluster.label("h100-0", {DEPLOY_DEVICE_PLUGIN: "false"})
    cluster.wait(lambda: cluster.converged(target))


def test_an_assignment_synced_before_its_draplan_holds_the_dra_nodes_until_it_comes(cluster: Cluster) -> None:
    """A GitOps sync may apply the assignment before the DraPlan. A DRA config expects nothing
    allocatable, so without the DraPlan nothing could verify the node's new layout: it is not
    cordoned (Event DraPlanMissing) until the DraPlan arrives, then rolled out and verified from
    ResourceSlices."""
    dra_setup(cluster)
    add_dra_nodes(cluster, ["h100-0"], "dra-all-1g.10gb")
    wait_published(cluster, ["h100-0"])
    target = {"h100-0": "dra-6gpu-whole_2gpu-balanced"}
    cluster.set_assignment(dra_assignment(target))
    ctl = cluster.start(loop__resync_interval=IDLE_RESYNC)
    cluster.wait(
        lambda: any((c.body or {}).get("reason") == "DraPlanMissing" for c in cluster.controller_calls())
    )
    cluster.settle(ctl, 4)
    assert not [c for c in cluster.controller_calls() if c.resource == "nodes" and c.verb == "patch"]
    assert slice_devices(cluster, "h100-0") == EXPECTED["dra-all-1g.10gb"]
    set_draplan(cluster, draplan(target))
    cluster.wait(lambda: cluster.converged(target))
    assert slice_devices(cluster, "h100-0") == EXPECTED["dra-6gpu-whole_2gpu-balanced"]
    listed = [c for c in cluster.controller_calls() if c.resource == "resourceslices"]
    assert listed, "verified without reading the ResourceSlices"


def test_the_dra_config_names_the_controller_knows_are_the_ones_migc_renders() -> None:
    """controller.dra.DRA_DEVICE_PLUGIN_CONFIGS marks a config as a DRA pool's: in the rendered
    examples/dra every config of a DRA pool's node carries one of them and no other config does."""
    import yaml

    from controller.dra import DRA_DEVICE_PLUGIN_CONFIGS

    seen_dra = seen_other = 0
    for cluster_dir in sorted((GOLDEN_EAST.parent).iterdir()):
        path = cluster_dir / "migc-system/configmap-migc-assignment.yaml"
        dra_path = cluster_dir / "migc-system/configmap-migc-dra.yaml"
        if not path.exists():
            continue
        doc = json.loads(yaml.safe_load(path.read_text(encoding="utf-8"))["data"]["assignment.json"])
        dra_nodes: set[str] = set()
        if dra_path.exists():
            plan = json.loads(yaml.safe_load(dra_path.read_text(encoding="utf-8"))["data"]["dra.json"])
            dra_nodes = {n["name"] for p in plan["pools"] if p["mig"] == "static" for n in p["nodes"]}
        for pool in doc["pools"]:
            for node in pool["nodes"]:
                dp = doc["configs"][node["config"]]["devicePluginConfig"]
                if node["name"] in dra_nodes:
                    assert dp in DRA_DEVICE_PLUGIN_CONFIGS, (node, dp)
                    seen_dra += 1
                else:
                    assert dp not in DRA_DEVICE_PLUGIN_CONFIGS, (node, dp)
                    seen_other += 1
    assert seen_dra and seen_other


GOLDEN_EAST = Path(__file__).resolve().parents[1] / "golden" / "dra" / "east"


def test_the_rendered_dra_example_rolls_out_in_the_emulator(cluster: Cluster) -> None:
    """examples/dra's cluster east as migc compile renders it (tests/golden/dra/east): its A100
    pool on the device plugin, verified from allocatable, and its static DRA H100 pool, verified
    from the ResourceSlices the emulated driver publishes; every node starts at all-disabled."""
    import yaml

    for rel in (
        "gpu-operator/configmap-migc-mig-parted-config.yaml",
        "gpu-operator/configmap-migc-device-plugin-config.yaml",
        "migc-system/configmap-migc-dra.yaml",
        "migc-system/configmap-migc-assignment.yaml",
    ):
        obj = yaml.safe_load((GOLDEN_EAST / rel).read_text(encoding="utf-8"))
        cluster.emu.upsert(CONFIGMAPS, obj["metadata"]["namespace"], obj["metadata"]["name"], obj)
    ns, name = cluster.dra.daemonset
    cluster.emu.run(lambda api: api.add_client_daemonset(ns, name, {GPU_CLIENT_KEY: "true"}, None))
    doc = json.loads(
        yaml.safe_load((GOLDEN_EAST / "migc-system/configmap-migc-assignment.yaml").read_text())["data"][
            "assignment.json"
        ]
    )
    targets = {n["name"]: n["config"] for p in doc["pools"] for n in p["nodes"]}
    for n in targets:
        labels = {
            GPU_COUNT: "8",
            st.MIG_CAPABLE: "true",
            st.MIG_CONFIG: "all-disabled",
            st.MIG_STATE: "success",
        }
        if "h100" in n:
            labels.update(
                {"nvidia.com/gpu.product": H100, DEPLOY_DEVICE_PLUGIN: "false", GPU_CLIENT_KEY: "true"}
            )
            resources: dict[str, int] = {}
        else:
            labels["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB"
            resources = {"nvidia.com/gpu": 8}
        cluster.emu.upsert(NODES, None, n, node_object(n, labels, resources))
    wait_published(cluster, ["east-h100-01", "east-h100-02"])
    cluster.start()
    cluster.wait(lambda: cluster.converged(targets), timeout=40)
    plan = yaml.safe_load((GOLDEN_EAST / "migc-system/configmap-migc-dra.yaml").read_text())["data"][
        "dra.json"
    ]
    for entry in json.loads(plan)["pools"][0]["nodes"]:
        assert slice_devices(cluster, entry["name"]) == entry["devices"]
    listed = {c.params["fieldSelector"] for c in cluster.controller_calls() if c.resource == "resourceslices"}
    assert listed == {f"spec.nodeName=east-h100-0{i},spec.driver={DRIVER}" for i in (1, 2)}
    alloc = cluster.node("east-a100-02")["status"]["allocatable"]
    assert (alloc["nvidia.com/mig-1g.10gb"], alloc["nvidia.com/mig-2g.20gb"]) == ("10", "2")


# ------------------------------------------------------------------------------- DynamicMIG pools


DYNAMIC = {"node.kubernetes.io/instance-type": "p5e.48xlarge"}


def test_dynamic_pool_is_left_alone(cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    dra_setup(cluster)
    add_dra_nodes(cluster, ["h100-0"], "dra-all-1g.10gb")
    add_dra_nodes(cluster, ["h200-0", "h200-1"], "all-disabled-dra", extra=DYNAMIC)
    target = {"h100-0": "dra-6gpu-whole_2gpu-balanced"}
    set_draplan(cluster, draplan(target, dynamic_selector=DYNAMIC))
    cluster.set_assignment(dra_assignment(target))
    ctl = cluster.start(loop__resync_interval=IDLE_RESYNC)
    cluster.wait(lambda: cluster.converged(target))
    cluster.settle(ctl, 4)
    touched = {c.name for c in cluster.controller_calls() if c.resource == "nodes" and c.verb == "patch"}
    assert touched == {"h100-0"}
    gauge = ctl.metrics.registry.get_sample_value
    assert (gauge("migc_dra_pools", {"mig": "static"}), gauge("migc_dra_pools", {"mig": "dynamic"})) == (1, 1)
    said = [r for r in caplog.records if r.getMessage().startswith("DRA pool uses the driver's DynamicMIG")]
    assert [r.migc["pool"] for r in said] == ["h200"]  # type: ignore[attr-defined]  # logs.log's extra


def test_an_assignment_that_gives_a_dynamic_pool_node_a_layout_is_held(cluster: Cluster) -> None:
    """The compiler never assigns a DynamicMIG node; if the two documents disagree the node is
    not touched (the driver destroys MIG devices it did not create at start), with an Event."""
    dra_setup(cluster)
    add_dra_nodes(cluster, ["h200-0"], "all-disabled-dra", extra=DYNAMIC)
    set_draplan(cluster, draplan({}, dynamic_selector=DYNAMIC))
    cluster.set_assignment(dra_assignment({"h200-0": "dra-all-1g.10gb"}, pool="h200x"))
    ctl = cluster.start(loop__resync_interval=IDLE_RESYNC)
    cluster.wait(
        lambda: any(
            c.resource == "events" and (c.body or {}).get("reason") == "DraDynamicPool"
            for c in cluster.controller_calls()
        )
    )
    cluster.settle(ctl, 4)
    assert not [c for c in cluster.controller_calls() if c.resource == "nodes" and c.verb == "patch"]
    assert cluster.node("h200-0")["metadata"]["labels"][st.MIG_CONFIG] == "all-disabled-dra"


# ------------------------------------------------------------------------------- hostile DraPlans


def _deep(n: int) -> str:
    return '{"a":' * n + "1" + "}" * n


@pytest.mark.parametrize(
    "text, why",
    [
        ("{broken", "not JSON"),
        (_deep(40), "nested deeper"),
        (json.dumps({**draplan({"h100-0": "dra-all-1g.10gb"}), "kind": "Other"}), "kind"),
        (json.dumps(draplan({"h100-0": "dra-all-1g.10gb"}, cluster="other")), "addressed to cluster"),
        ("x" * (1 << 20 | 1), "bytes, more than the limit"),
    ],
)
def test_a_hostile_draplan_is_refused_and_holds_admission(
    cluster: Cluster, text: str, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    dra_setup(cluster)
    add_dra_nodes(cluster, ["h100-0"], "dra-all-1g.10gb")
    target = {"h100-0": "dra-6gpu-whole_2gpu-balanced"}
    set_draplan(cluster, text)
    cluster.set_assignment(dra_assignment(target))
    ctl = cluster.start(api__cluster="test", loop__resync_interval=IDLE_RESYNC)
    cluster.wait(
        lambda: any(
            c.resource == "events" and (c.body or {}).get("reason") == "InvalidDraPlan"
            for c in cluster.controller_calls()
        )
    )
    cluster.settle(ctl, 4)
    (event,) = [c.body for c in cluster.controller_calls() if c.resource == "events"]
    assert why in event["message"], event["message"]
    assert event["involvedObject"]["name"] == "migc-dra"
    reason = "dra-wrong-cluster" if why == "addressed to cluster" else "dra-invalid"
    assert ctl.metrics.registry.get_sample_value("migc_assignment_refusals_total", {"reason": reason}) == 1
    assert not [c for c in cluster.controller_calls() if c.resource == "nodes" and c.verb == "patch"]
    refused = [r for r in caplog.records if r.getMessage().startswith("DraPlan refused")]
    assert len(refused) == 1 and why in refused[0].migc["error"]  # type: ignore[attr-defined]
    assert not [
        r for r in caplog.records if r.exc_info or r.getMessage().startswith(("pass failed", "step failed"))
    ]
    # Fixed: the rollout goes ahead.
    set_draplan(cluster, draplan(target))
    cluster.wait(lambda: cluster.converged(target))


# ------------------------------------------------------------------------------- the emulated API


def _kube(cluster: Cluster) -> Kube:
    cfg = client.Configuration()
    cfg.host = cluster.emu.url
    return Kube(client.ApiClient(cfg))


def test_the_emulated_api_lists_resourceslices_like_the_real_one(cluster: Cluster) -> None:
    cluster.dra.slices_per_pool = 3
    dra_setup(cluster)
    add_dra_nodes(cluster, ["h100-0", "h100-1"], "dra-all-1g.10gb")
    wait_published(cluster, ["h100-0", "h100-1"])
    kube = _kube(cluster)
    got = kube.list_resource_slices("h100-0", DRIVER, page=2)
    assert sorted(o["metadata"]["name"][:5] for o in got) == ["00000", "00001", "00002"]
    assert {o["spec"]["nodeName"] for o in got} == {"h100-0"}
    pages = [c for c in cluster.emu.calls() if c.resource == "resourceslices"]
    assert [bool(c.params.get("continue")) for c in pages] == [False, True]
    with pytest.raises(PermanentError, match="more than 2 slices"):
        kube.list_resource_slices("h100-0", DRIVER, page=1, max_pages=2)
    # Only metadata.name, spec.nodeName and spec.driver can be selected on.
    api = client.ResourceV1Api(kube.api_client)
    with pytest.raises(client.ApiException) as err:
        api.list_resource_slice(field_selector="spec.pool.name=h100-0")
    assert err.value.status == 400 and "field label not supported: spec.pool.name" in str(err.value.body)


def test_the_kubelet_wipes_a_stopped_plugins_slices(cluster: Cluster) -> None:
    """The old layout's slices outlive the plugin's pod until the kubelet's wiping delay."""
    cluster.dra.wipe_delay = 0.3
    dra_setup(cluster)
    add_dra_nodes(cluster, ["h100-0"], "dra-all-1g.10gb")
    wait_published(cluster, ["h100-0"])
    cluster.label("h100-0", {GPU_CLIENT_KEY: "false"})  # the plugin's DaemonSet leaves the node
    assert slice_devices(cluster, "h100-0") == {"1g.10gb": 56}  # still there at once
    cluster.wait(lambda: ("h100-0", "wiped", 0) in cluster.dra.published)
    assert published_slices(cluster, "h100-0") == []
    assert not [
        o for (r, _ns, _n), o in cluster.emu.api.objects.items() if r == RESOURCESLICES and not o.deleted
    ]
