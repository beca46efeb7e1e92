"""On a static DRA node only the pods on GPUs that change are drained.

mig-parted applies GPU by GPU and leaves a GPU whose MIG devices already equal the target alone
(NVIDIA/mig-parted@bd7160f4 cmd/nvidia-mig-parted/apply/config.go:92-95); its apply fails only on
a changing GPU that a process still uses. On a DRA node the pod's ResourceClaims say which
devices it holds and the driver's ResourceSlices on which GPU each is, so the controller keeps
the pods whose devices are all on GPUs the new layout leaves alone. Against the emulator, whose
MIG manager skips unchanged GPUs and fails the apply on a busy GPU that must change
(emulation.FakeMigManager), and whose ResourceClaims are shaped as the kube-scheduler writes them
(emulation.allocated_claim)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pytest
import yaml
from conftest import CONFIGS, MIG_PARTED, Cluster, assert_only_gpu_pods_evicted, assignment
from emulation import (
    CONFIGMAPS,
    PODS,
    RESOURCECLAIMS,
    RESOURCESLICES,
    Call,
    allocated_claim,
    claimed_pod,
    mig_parted_configmap,
    revision_of,
)
from test_controller_dra import (
    DRA_CONFIGS,
    add_dra_nodes,
    dra_assignment,
    dra_setup,
    draplan,
    published_slices,
    set_draplan,
    wait_published,
)

from controller import state as st

ALL_1G = {"migEnabled": True, "profiles": {"1g.10gb": 7}}
BALANCED = {"migEnabled": True, "profiles": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}}
# The target changes GPU 1 only (the mig-parted entries are per index, as migc renders a mixed layout).
GPU1 = "dra-gpu1-balanced"
GPU1_CONFIG = {
    "devices": [ALL_1G, BALANCED, *[ALL_1G] * 6],
    "migStrategy": "mixed",
    "devicePluginConfig": "migc-dra-mixed",
    "resources": {"nvidia.com/gpu": 0},
}
GPU1_DEVICES = {"1g.10gb": 51, "2g.20gb": 1, "3g.40gb": 1}
NODE = "h100-0"
# The device-plugin twin: GPU 1 changes too, on a node whose pods hold GPUs through their limits.
DP_GPU1 = "gpu1-balanced"
DP_GPU1_CONFIG = {
    "devices": [ALL_1G, BALANCED, *[ALL_1G] * 6],
    "migStrategy": "mixed",
    "devicePluginConfig": "mixed",
    "resources": {"nvidia.com/mig-1g.10gb": 51, "nvidia.com/mig-2g.20gb": 1, "nvidia.com/mig-3g.40gb": 1},
}


def evicted(calls: list[Call]) -> set[str]:
    return {
        f"{c.namespace}/{c.name}"
        for c in calls
        if c.resource == "pods" and c.subresource == "eviction" and c.verb == "create"
    }


def mig_devices_of(cluster: Cluster, node: str, minor: int) -> list[str]:
    """The names of the MIG devices the emulated driver publishes on GPU ``minor`` now."""
    return sorted(
        d["name"]
        for _n, o in published_slices(cluster, node)
        for d in o["spec"]["devices"]
        if d["name"].startswith(f"gpu-{minor}-mig-")
    )


def setup_node(cluster: Cluster) -> None:
    dra_setup(cluster)
    add_dra_nodes(cluster, [NODE], "dra-all-1g.10gb")
    wait_published(cluster, [NODE])


def roll_out(cluster: Cluster, *, keep_current: bool = True, **settings: Any) -> None:
    """Target GPU1 on the node: the DraPlan, the mig-parted ConfigMap (old and new configs, as a
    render that keeps the configs its nodes carry; ``keep_current`` False: one that dropped the
    node's current config), then the assignment."""
    target = {NODE: GPU1}
    set_draplan(cluster, draplan(target, expected={NODE: GPU1_DEVICES}))
    doc = dra_assignment({NODE: "dra-all-1g.10gb"})
    doc["configs"] = {GPU1: GPU1_CONFIG}
    doc["pools"][0]["nodes"] = [{"name": NODE, "config": GPU1}]
    doc["revision"] = revision_of(doc)
    old = DRA_CONFIGS if keep_current else {}
    cluster.set_mig_parted({**CONFIGS, **old, GPU1: GPU1_CONFIG})
    cluster.set_assignment(doc, mig_parted=False)
    cluster.start(**settings)


def add_claimed(
    cluster: Cluster,
    name: str,
    devices: list[str],
    *,
    namespace: str = "ml",
    template: bool = True,
    claim: Mapping[str, Any] | None = None,
) -> None:
    """A running pod holding ``devices`` of the node through one claim (``claim`` overrides the
    claim object; None devices list and no claim object: the claim does not exist)."""
    pod = claimed_pod(name, NODE, f"{name}-gpu", namespace=namespace, template=template)
    if claim is not None:
        cluster.emu.upsert(RESOURCECLAIMS, namespace, f"{name}-gpu", claim)
    elif devices:
        body = allocated_claim(f"{name}-gpu", namespace, NODE, devices, pod=pod)
        cluster.emu.upsert(RESOURCECLAIMS, namespace, f"{name}-gpu", body)
    cluster.emu.upsert(PODS, namespace, name, pod)


def running(cluster: Cluster, namespace: str, name: str) -> bool:
    return cluster.emu.get(PODS, namespace, name) is not None


# ---------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("template", [True, False], ids=["from-template", "named-claim"])
def test_only_the_pods_on_the_changing_gpu_are_drained(
    cluster: Cluster, caplog: pytest.LogCaptureFixture, template: bool
) -> None:
    """The target re-carves GPU 1 only: the pod on GPU 0 runs through the whole rollout and is
    never evicted; the pod on GPU 1 is waited for (the grace), then evicted; the MIG manager's
    apply leaves GPU 0 as it is and succeeds; the node is verified and released."""
    caplog.set_level(logging.INFO)
    setup_node(cluster)
    gpu0, gpu1 = mig_devices_of(cluster, NODE, 0), mig_devices_of(cluster, NODE, 1)
    add_claimed(cluster, "stays", gpu0[:2], template=template)
    add_claimed(cluster, "moves", gpu1[:1], template=template)
    # a grace long enough for several passes over the Draining node even on a loaded machine
    roll_out(cluster, drain__grace_timeout=1.0)
    cluster.wait(lambda: cluster.converged({NODE: GPU1}))
    calls = cluster.controller_calls()
    assert assert_only_gpu_pods_evicted(calls, {"ml/moves"}) == {"ml/moves"}
    assert running(cluster, "ml", "stays") and not running(cluster, "ml", "moves")
    # The MIG manager changed GPU 1 only; nothing failed on the way.
    assert cluster.mig.applied[NODE][0] == (True, (("1g.10gb", 7),))
    assert cluster.mig.applied[NODE][1] == (True, (("1g.10gb", 2), ("2g.20gb", 1), ("3g.40gb", 1)))
    assert NODE not in cluster.mig.errors
    assert mig_devices_of(cluster, NODE, 0) == gpu0  # the kept pod's devices are still there
    # The controller said whom it waited for and whom it kept.
    waited = [r for r in caplog.records if r.getMessage() == "waiting for GPU pods to finish"]
    assert waited and all(r.migc["pods"] == ["ml/moves"] for r in waited)  # type: ignore[attr-defined]
    kept = [r for r in caplog.records if r.getMessage().startswith("not draining pods whose devices")]
    assert kept and kept[0].migc["pods"] == ["ml/stays"]  # type: ignore[attr-defined]
    assert kept[0].migc["changing_gpus"] == [1]  # type: ignore[attr-defined]
    drained = [r for r in caplog.records if r.getMessage().startswith("draining pods that hold devices")]
    assert drained and drained[0].migc["pods"] == [  # type: ignore[attr-defined]
        f"ml/moves: device {gpu1[0]} is on GPU 1, which changes"
    ]
    gets = [c for c in calls if c.resource == "resourceclaims"]
    assert gets and all(c.verb == "get" and c.group == "resource.k8s.io" for c in gets)
    # Each claim read once, though the node was looked at on every pass of the grace period.
    assert sorted((c.namespace, c.name) for c in gets) == [("ml", "moves-gpu"), ("ml", "stays-gpu")]
    assert len(waited) == 1 and cluster.running[0].controller.passes > 3


def _hostile_claims(node: str) -> dict[str, Any]:
    """Claims the controller cannot use, each for a pod that sits on GPU 0 (which stays)."""
    good = allocated_claim("x", "ml", node, ["gpu-0-mig-1g10gb-19-0"])
    unallocated = {**good, "status": {}}
    too_big = allocated_claim("x", "ml", node, ["gpu-0-mig-1g10gb-19-0"] * 33)
    wrong_types = allocated_claim("x", "ml", node, ["gpu-0-mig-1g10gb-19-0"])
    wrong_types["status"]["allocation"]["devices"]["results"] = [{"driver": 7, "pool": [], "device": None}]
    unknown_device = allocated_claim("x", "ml", node, ["gpu-0-mig-1g10gb-19-0", "gpu-9-mig-7g80gb-0-0"])
    other_pool = allocated_claim("x", "ml", node, ["gpu-0-mig-1g10gb-19-0"])
    other_pool["status"]["allocation"]["devices"]["results"][0]["pool"] = "h100-9"
    return {
        "unallocated": unallocated,
        "too-many-results": too_big,
        "malformed-results": wrong_types,
        "unknown-device": unknown_device,
        "device-of-another-pool": other_pool,
        "not-reserved-for-the-pod": good,  # reservedFor lists nobody
        "huge": {**good, "metadata": {**good["metadata"], "annotations": {"x": "y" * (1 << 20)}}},
    }


@pytest.mark.parametrize(
    "fault",
    [
        "missing",
        "forbidden",
        "no-claim-name-yet",
        *_hostile_claims(NODE),
    ],
)
def test_a_pod_whose_claim_cannot_be_read_is_drained(cluster: Cluster, fault: str) -> None:
    """A claim that is gone (404), forbidden (403), not named in the pod's status yet, or hostile
    (unallocated, too big, malformed, naming devices the node does not publish): its pod is
    drained, as every claim pod was before, while a pod on the same unchanged GPU with a good
    claim is kept; the controller never crashes on it."""
    import kmock

    setup_node(cluster)
    gpu0 = mig_devices_of(cluster, NODE, 0)
    add_claimed(cluster, "stays", gpu0[1:2])
    if fault == "missing":
        add_claimed(cluster, "odd", [])
    elif fault == "forbidden":
        add_claimed(cluster, "odd", gpu0[:1])

        def forbid(request: kmock.Request) -> Exception | None:
            if request.resource == RESOURCECLAIMS and request.name == "odd-gpu":
                return kmock.KubernetesError(status=403, reason="Forbidden", message="no")
            return None

        cluster.emu.api.faults.append(forbid)
    elif fault == "no-claim-name-yet":
        add_claimed(cluster, "odd", gpu0[:1])
        pod = cluster.emu.get(PODS, "ml", "odd")
        assert pod is not None
        pod["status"]["resourceClaimStatuses"] = []
        cluster.emu.upsert(PODS, "ml", "odd", pod)
    else:
        claim = _hostile_claims(NODE)[fault]
        claim["metadata"] = {**claim["metadata"], "name": "odd-gpu"}
        add_claimed(cluster, "odd", [], claim=claim)
    roll_out(cluster)
    cluster.wait(lambda: cluster.converged({NODE: GPU1}))
    assert evicted(cluster.controller_calls()) == {"ml/odd"}
    assert running(cluster, "ml", "stays")


def test_a_claim_read_that_fails_for_a_while_is_retried_not_drained(cluster: Cluster) -> None:
    """An API server that answers 500 to claim reads for a while (a TemporaryError): the node's
    step backs off and retries; the pod on the unchanged GPU is not evicted for it."""
    import kmock

    setup_node(cluster)
    add_claimed(cluster, "stays", mig_devices_of(cluster, NODE, 0)[:1])
    add_claimed(cluster, "moves", mig_devices_of(cluster, NODE, 1)[:1])
    refused: list[str] = []

    def flaky(request: kmock.Request) -> Exception | None:
        if request.resource == RESOURCECLAIMS and len(refused) < 5:
            refused.append(str(request.name))
            return kmock.KubernetesError(status=500, reason="InternalError", message="injected")
        return None

    cluster.emu.api.faults.append(flaky)
    roll_out(cluster)
    cluster.wait(lambda: cluster.converged({NODE: GPU1}))
    assert len(refused) == 5
    assert evicted(cluster.controller_calls()) == {"ml/moves"}
    assert running(cluster, "ml", "stays")


@pytest.mark.parametrize("status", [403, 410], ids=["forbidden", "gone"])
def test_slices_that_cannot_be_listed_drain_every_claim_pod(cluster: Cluster, status: int) -> None:
    """The ResourceSlice list fails for good while the node drains (403: a ClusterRole without
    ``list resourceslices``; 410: an expired continue token; too many slices is the same
    PermanentError): which GPU holds which device is not known, so every claim pod is drained,
    as before the per-GPU drain -- the node does not sit cordoned in Draining, retrying a read
    that cannot succeed, with its timeouts never looked at. Once the slices can be read again
    the node is verified and released."""
    import kmock

    setup_node(cluster)
    add_claimed(cluster, "a", mig_devices_of(cluster, NODE, 0)[:1])
    add_claimed(cluster, "b", mig_devices_of(cluster, NODE, 1)[:1])

    def refuse(request: kmock.Request) -> Exception | None:
        if request.resource == RESOURCESLICES and request.action == kmock.action.LIST:
            return kmock.KubernetesError(status=status, reason="Refused", message="injected")
        return None

    cluster.emu.api.faults.append(refuse)
    roll_out(cluster)
    cluster.wait(lambda: evicted(cluster.controller_calls()) == {"ml/a", "ml/b"})
    cluster.emu.api.faults.remove(refuse)
    cluster.wait(lambda: cluster.converged({NODE: GPU1}))


def test_a_mig_parted_configmap_that_cannot_be_read_drains_every_claim_pod(cluster: Cluster) -> None:
    """The mig-parted ConfigMap answers 403 once the node drains (a Role narrowed under a
    running rollout): which GPUs change is not known, so every claim pod is drained after the
    grace -- not a step that fails every pass with the node cordoned in Draining for good."""
    import kmock

    setup_node(cluster)
    add_claimed(cluster, "a", mig_devices_of(cluster, NODE, 0)[:1])
    add_claimed(cluster, "b", mig_devices_of(cluster, NODE, 1)[:1])

    def refuse(request: kmock.Request) -> Exception | None:
        if request.resource == CONFIGMAPS and request.name == MIG_PARTED[1]:
            return kmock.KubernetesError(status=403, reason="Forbidden", message="injected")
        return None

    roll_out(cluster, drain__grace_timeout=1.0)
    cluster.wait(lambda: cluster.phases()[NODE] == "Draining")
    cluster.emu.api.faults.append(refuse)
    cluster.wait(lambda: evicted(cluster.controller_calls()) == {"ml/a", "ml/b"})
    cluster.emu.api.faults.remove(refuse)
    cluster.wait(lambda: cluster.converged({NODE: GPU1}))


def test_a_pod_with_gpus_in_its_limits_on_a_dra_node_is_drained(cluster: Cluster) -> None:
    """Nothing says which GPU a device-plugin style pod has: drained, beside a kept claim pod."""
    setup_node(cluster)
    add_claimed(cluster, "stays", mig_devices_of(cluster, NODE, 0)[:1])
    cluster.add_pod("limits", NODE, namespace="ml", gpu="nvidia.com/mig-1g.10gb")
    roll_out(cluster)
    cluster.wait(lambda: cluster.converged({NODE: GPU1}))
    assert evicted(cluster.controller_calls()) == {"ml/limits"}
    assert running(cluster, "ml", "stays")


def test_a_render_that_dropped_the_current_config_still_drains_per_gpu(cluster: Cluster) -> None:
    """The new render's mig-parted ConfigMap no longer defines the node's current config (migc
    renders only the configs its new assignment uses): what is on the GPUs now comes from the
    driver's ResourceSlices, so the pod on GPU 0 is still kept."""
    setup_node(cluster)
    add_claimed(cluster, "stays", mig_devices_of(cluster, NODE, 0)[:1])
    add_claimed(cluster, "moves", mig_devices_of(cluster, NODE, 1)[:1])
    roll_out(cluster, keep_current=False)
    cluster.wait(lambda: cluster.converged({NODE: GPU1}))
    assert evicted(cluster.controller_calls()) == {"ml/moves"}
    assert running(cluster, "ml", "stays")


def test_a_gpu_the_driver_does_not_publish_drains_every_claim_pod(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """GPU 7 fell off the bus: the driver publishes nothing for it, so what is on it is not
    known (the MIG manager walks it, and may have to switch its MIG mode, which clears every
    GPU): every GPU pod is drained, none is said to be kept."""
    caplog.set_level(logging.INFO)
    cluster.dra.hidden_gpus[NODE] = {7}
    setup_node(cluster)
    add_claimed(cluster, "a", mig_devices_of(cluster, NODE, 0)[:1])
    add_claimed(cluster, "b", mig_devices_of(cluster, NODE, 1)[:1])
    roll_out(cluster)
    cluster.wait(lambda: evicted(cluster.controller_calls()) == {"ml/a", "ml/b"})
    assert not [r for r in caplog.records if r.getMessage().startswith("not draining pods")]


def test_the_emulated_mig_manager_fails_on_a_busy_gpu_that_must_change(cluster: Cluster) -> None:
    """Were the pod on GPU 1 not drained, the apply would fail there (as mig-parted's does: NVML
    refuses to destroy a GPU instance in use); GPU 0 is set first and stays set. The emulator
    shows this on its own: the label changed by hand, no controller running."""
    setup_node(cluster)
    add_claimed(cluster, "moves", mig_devices_of(cluster, NODE, 1)[:1])
    add_claimed(cluster, "stays", mig_devices_of(cluster, NODE, 3)[:1])
    cluster.set_mig_parted({**CONFIGS, **DRA_CONFIGS, GPU1: GPU1_CONFIG, "gpu0-gpu1": _gpu0_gpu1()})
    cluster.label(NODE, {st.MIG_CONFIG: "gpu0-gpu1"})
    cluster.wait(lambda: cluster.node(NODE)["metadata"]["labels"].get(st.MIG_STATE) == "failed")
    error = cluster.mig.errors[NODE]
    assert "GPU 1: error destroying GPU instance: In use by another client (ml/moves)" in error, error
    layout = cluster.mig.applied[NODE]
    assert layout[0] == (True, (("1g.10gb", 2), ("2g.20gb", 1), ("3g.40gb", 1)))  # walked before GPU 1
    assert layout[1] == (True, (("1g.10gb", 7),))
    # With the busy pod gone the same apply succeeds: GPU 3's pod never mattered.
    cluster.emu.run(lambda api: api.remove(PODS, "ml", "moves"))
    cluster.label(NODE, {st.MIG_CONFIG: "dra-all-1g.10gb"})
    cluster.wait(lambda: cluster.node(NODE)["metadata"]["labels"].get(st.MIG_STATE) == "success")
    assert cluster.mig.applied[NODE] == ((True, (("1g.10gb", 7),)),) * 8


def test_the_emulated_mig_manager_counts_gpus_in_pci_order_not_by_minor(cluster: Cluster) -> None:
    """mig-parted's index is the GPU's rank in PCI address order (NVIDIA/mig-parted@bd7160f4
    cmd/nvidia-mig-parted/util/device.go:79-101), the driver's device names carry the minor
    (kubernetes-sigs/dra-driver-nvidia-gpu@95932046 deviceinfo.go:124-126): where the kernel
    gave minors out of bus order they differ. Minors 0 and 1 swapped on the bus: a config that
    changes index 1 re-carves minor 0, so the pod on minor 0 fails the apply, and the one on
    minor 1 never matters. The emulator tells this from its own bus ids, not from a device name."""
    cluster.dra.bus_ids[NODE] = [
        "0000:28:00.0",
        "0000:18:00.0",
        *[f"0000:{0x38 + 0x10 * i:02x}:00.0" for i in range(6)],
    ]
    setup_node(cluster)
    add_claimed(cluster, "on-minor-1", mig_devices_of(cluster, NODE, 1)[:1])
    add_claimed(cluster, "on-minor-0", mig_devices_of(cluster, NODE, 0)[:1])
    cluster.set_mig_parted({**CONFIGS, **DRA_CONFIGS, GPU1: GPU1_CONFIG})
    cluster.label(NODE, {st.MIG_CONFIG: GPU1})
    cluster.wait(lambda: cluster.node(NODE)["metadata"]["labels"].get(st.MIG_STATE) == "failed")
    error = cluster.mig.errors[NODE]
    assert "GPU 1: error destroying GPU instance: In use by another client (ml/on-minor-0)" in error, error
    cluster.emu.run(lambda api: api.remove(PODS, "ml", "on-minor-0"))
    cluster.label(NODE, {st.MIG_CONFIG: "dra-all-1g.10gb"})
    cluster.wait(lambda: cluster.node(NODE)["metadata"]["labels"].get(st.MIG_STATE) == "success")
    before = cluster.mig.applied[NODE]
    cluster.label(NODE, {st.MIG_CONFIG: GPU1})
    # The Run sets `pending` before it applies and `success` after: a changed layout with state
    # `success` is this Run's end, not the previous one's (which a quick look could still see).
    cluster.wait(
        lambda: cluster.mig.applied[NODE] != before
        and cluster.node(NODE)["metadata"]["labels"].get(st.MIG_STATE) == "success"
    )
    balanced = (True, (("1g.10gb", 2), ("2g.20gb", 1), ("3g.40gb", 1)))
    assert cluster.mig.applied[NODE][0] == balanced  # by minor: minor 0 is index 1
    assert cluster.mig.applied[NODE][1] == (True, (("1g.10gb", 7),))


def test_a_gpu_left_out_of_the_slices_drains_every_claim_pod(cluster: Cluster) -> None:
    """GPU minor 3 fell off the bus: NVML sees 7 GPUs, so mig-parted's index 4 is minor 5. A
    (hand-written) target that walks indices 0-2, 4-6 (not 3: minor 4) and re-carves index 4
    changes minor 5, not minor 4: taking minors for indices would keep the pod on minor 5 and
    fail the apply there. The GPU left out makes every index unknown: both pods are drained,
    the apply succeeds, and the GPU no entry walks keeps its layout (assert/assert.go:215-248)."""
    cluster.dra.hidden_gpus[NODE] = {3}
    setup_node(cluster)
    add_claimed(cluster, "on-minor-4", mig_devices_of(cluster, NODE, 4)[:1])
    add_claimed(cluster, "on-minor-5", mig_devices_of(cluster, NODE, 5)[:1])
    skip3 = "dra-skip3-gpu4-balanced"
    spec = [
        {"devices": [0, 1, 2, 5, 6], "mig-enabled": True, "mig-devices": {"1g.10gb": 7}},
        {"devices": [4], "mig-enabled": True, "mig-devices": BAL},
    ]
    target = {NODE: skip3}
    cfg = {**GPU1_CONFIG, "devices": [ALL_1G] * 4 + [BALANCED] + [ALL_1G] * 3}
    set_draplan(cluster, draplan(target, expected={NODE: GPU1_DEVICES}))
    doc = dra_assignment({NODE: "dra-all-1g.10gb"})
    doc["configs"] = {skip3: cfg}
    doc["pools"][0]["nodes"] = [{"name": NODE, "config": skip3}]
    doc["revision"] = revision_of(doc)
    # the mig-parted ConfigMap with the hand-written entries (the controller and the MIG manager
    # read the same text)
    cm = mig_parted_configmap({**CONFIGS, **DRA_CONFIGS}, *MIG_PARTED)
    text = yaml.safe_load(cm["data"]["config.yaml"])
    text["mig-configs"][skip3] = spec
    cm["data"]["config.yaml"] = yaml.safe_dump(text)
    cluster.emu.upsert(CONFIGMAPS, *MIG_PARTED, cm)
    cluster.set_assignment(doc, mig_parted=False)
    cluster.start(drain__grace_timeout=1.0)
    cluster.wait(lambda: evicted(cluster.controller_calls()) == {"ml/on-minor-4", "ml/on-minor-5"})

    def applied() -> bool:
        labels = cluster.node(NODE)["metadata"]["labels"]
        return labels.get(st.MIG_CONFIG) == skip3 and labels.get(st.MIG_STATE) in ("success", "failed")

    cluster.wait(applied)
    assert NODE not in cluster.mig.errors, cluster.mig.errors
    assert cluster.node(NODE)["metadata"]["labels"][st.MIG_STATE] == "success"
    assert cluster.mig.applied[NODE][4] == (True, (("1g.10gb", 7),))  # index 3: not walked
    assert cluster.mig.applied[NODE][5] == (True, tuple(sorted(BAL.items())))  # index 4


def _gpu0_gpu1() -> dict[str, Any]:
    return {
        "devices": [BALANCED, BALANCED, *[ALL_1G] * 6],
        "migStrategy": "mixed",
        "devicePluginConfig": "migc-dra-mixed",
        "resources": {"nvidia.com/gpu": 0},
    }


def test_a_device_plugin_node_is_still_drained_whole(cluster: Cluster) -> None:
    """With the device plugin nothing in the API says which pod has which GPU: every GPU pod of
    the node is drained even where only GPU 1 changes, while the static DRA node of the same
    rollout keeps its pod on GPU 0."""
    setup_node(cluster)
    add_claimed(cluster, "stays", mig_devices_of(cluster, NODE, 0)[:1])
    cluster.add_nodes(["a100-0"], "all-1g.10gb")
    cluster.add_pod("train-0", "a100-0", namespace="ml", gpu="nvidia.com/mig-1g.10gb")
    cluster.add_pod("train-1", "a100-0", namespace="ml", gpu="nvidia.com/mig-1g.10gb")
    set_draplan(cluster, draplan({NODE: GPU1}, expected={NODE: GPU1_DEVICES}))
    dra = dra_assignment({NODE: "dra-all-1g.10gb"})
    dp = assignment({"a100-0": "all-1g.10gb"})
    doc = {
        **dra,
        "configs": {GPU1: GPU1_CONFIG, DP_GPU1: DP_GPU1_CONFIG},
        "pools": [
            {**dra["pools"][0], "nodes": [{"name": NODE, "config": GPU1}]},
            {**dp["pools"][0], "nodes": [{"name": "a100-0", "config": DP_GPU1}]},
        ],
    }
    doc["revision"] = revision_of(doc)
    cluster.set_mig_parted({**CONFIGS, **DRA_CONFIGS, GPU1: GPU1_CONFIG, DP_GPU1: DP_GPU1_CONFIG})
    cluster.set_assignment(doc, mig_parted=False)
    cluster.start()
    cluster.wait(lambda: cluster.converged({NODE: GPU1, "a100-0": DP_GPU1}))
    assert evicted(cluster.controller_calls()) == {"ml/train-0", "ml/train-1"}
    assert running(cluster, "ml", "stays")


# ----------------------------------------------------------------------- which GPUs change (unit)

H100_IDS = ["0x233010DE", "0x233110DE", "0x232210DE", "0x232410DE"]


def _rendered(whole: list[int], mig: dict[tuple[int, ...], dict[str, int]]) -> list[dict[str, Any]]:
    """Entries as migc renders them for an H100 layout (tests/golden/dra/east/gpu-operator/
    configmap-migc-mig-parted-config.yaml): a device-filter on every entry, index lists."""
    out: list[dict[str, Any]] = []
    if whole:
        out.append({"device-filter": H100_IDS, "devices": whole, "mig-enabled": False})
    for devices, profiles in mig.items():
        out.append(
            {
                "device-filter": H100_IDS,
                "devices": list(devices),
                "mig-enabled": True,
                "mig-devices": profiles,
            }
        )
    return out


BAL = {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
SEVEN = {"1g.10gb": 7}
MIGPARTED = {
    "all-disabled": [{"devices": "all", "mig-enabled": False}],
    "six-whole": _rendered([0, 1, 2, 3, 4, 5], {(6, 7): BAL}),
    "six-whole-gpu7": _rendered([0, 1, 2, 3, 4, 5], {(6,): BAL, (7,): SEVEN}),
    "five-whole": _rendered([0, 1, 2, 3, 4], {(5, 6, 7): BAL}),
    "six-whole-gpu7-zero": _rendered([0, 1, 2, 3, 4, 5], {(6,): BAL, (7,): {**BAL, "7g.80gb": 0}}),
    "all-7": [{"devices": "all", "mig-enabled": True, "mig-devices": SEVEN}],
    "all-7-but-1": [
        {"devices": [0, *range(2, 8)], "mig-enabled": True, "mig-devices": SEVEN},
        {"devices": [1], "mig-enabled": True, "mig-devices": BAL},
    ],
    # a hand-written config that walks GPU 0 only, switching its MIG mode off
    "gpu0-off": [{"devices": [0], "mig-enabled": False}],
    "twice": [
        {"devices": "all", "mig-enabled": True, "mig-devices": SEVEN},
        {"devices": [1], "mig-enabled": True, "mig-devices": BAL},
    ],
    "bad-devices": [{"devices": "some", "mig-enabled": True, "mig-devices": SEVEN}],
    "bad-count": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": "7"}}],
    "not-a-list": {"devices": "all"},
}


def _seen(layout: dict[int, dict[str, int] | None]) -> dict[int, tuple[bool, tuple[tuple[str, int], ...]]]:
    return {i: (False, ()) if p is None else (True, tuple(sorted(p.items()))) for i, p in layout.items()}


SIX_WHOLE_SEEN = _seen({**dict.fromkeys(range(6)), 6: BAL, 7: BAL})
ALL_7_SEEN = _seen(dict.fromkeys(range(8), SEVEN))


@pytest.mark.parametrize(
    ("current", "target", "seen", "want"),
    [
        # migc's rendered entries (device-filter on each): only GPU 7 changes ...
        ("six-whole", "six-whole-gpu7", None, {7}),
        ("six-whole", "six-whole-gpu7", SIX_WHOLE_SEEN, {7}),
        # ... also when the render dropped the current config: the slices say what is there
        (None, "six-whole-gpu7", SIX_WHOLE_SEEN, {7}),
        ("gone", "six-whole-gpu7", SIX_WHOLE_SEEN, {7}),
        # a zero count in the target: mig-parted's Equals sees other lengths and sets the GPU again
        ("six-whole", "six-whole-gpu7-zero", SIX_WHOLE_SEEN, {7}),
        # a MIG mode change on GPU 5: ApplyMigMode clears every GPU it walks
        ("six-whole", "five-whole", SIX_WHOLE_SEEN, set(range(8))),
        ("all-disabled", "six-whole", None, set(range(8))),
        # ... and a pending mode change resets every GPU of the node, walked or not
        # (apply/mode.go:119-129 ResetAllGPUs; util/device.go:143-155 nvidia-smi -r on every GPU)
        ("all-7", "gpu0-off", ALL_7_SEEN, set(range(8))),
        # unfiltered per-index entries, as the emulator's ConfigMap has them
        ("all-7", "all-7-but-1", ALL_7_SEEN, {1}),
        ("all-7", "all-7", ALL_7_SEEN, set()),
        # slices and the current config disagree on a GPU: not known, so all
        ("all-7", "all-7-but-1", {**ALL_7_SEEN, 3: (True, (("1g.10gb", 6),))}, set(range(8))),
        # a GPU the slices do not show (fallen off the bus, or MIG on with no device)
        (None, "all-7-but-1", {k: v for k, v in ALL_7_SEEN.items() if k != 5}, set(range(8))),
        # several entries select GPU 1
        ("all-7", "twice", ALL_7_SEEN, set(range(8))),
    ],
)
def test_which_gpus_the_apply_changes(
    current: str | None,
    target: str,
    seen: dict[int, tuple[bool, tuple[tuple[str, int], ...]]] | None,
    want: set[int],
) -> None:
    from controller.reconciler.migparted import changing_gpus

    assert changing_gpus(MIGPARTED, current, target, 8, seen) == frozenset(want)


@pytest.mark.parametrize(
    ("current", "target", "gpus", "seen"),
    [
        ("all-7", "bad-devices", 8, ALL_7_SEEN),
        ("all-7", "bad-count", 8, ALL_7_SEEN),
        ("all-7", "not-a-list", 8, ALL_7_SEEN),
        ("all-7", "missing-target", 8, ALL_7_SEEN),
        ("all-7", "all-7-but-1", None, ALL_7_SEEN),  # no GPU count
        ("all-7", "all-7-but-1", 65, ALL_7_SEEN),  # over the bound
        (None, "all-7-but-1", 8, None),  # nothing says what is there now
    ],
)
def test_unknown_or_unreadable_input_changes_every_gpu(
    current: str | None, target: str, gpus: int | None, seen: Any
) -> None:
    from controller.reconciler.migparted import changing_gpus

    assert changing_gpus(MIGPARTED, current, target, gpus, seen) is None


def test_too_many_device_filters_change_every_gpu() -> None:
    from controller.reconciler.migparted import MAX_FILTERS, changing_gpus

    ids = [f"0x{i:04X}10DE" for i in range(MAX_FILTERS + 1)]
    configs = {"a": [{"device-filter": ids, "devices": "all", "mig-enabled": True, "mig-devices": SEVEN}]}
    assert changing_gpus(configs, "a", "a", 8, ALL_7_SEEN) is None
    assert (
        changing_gpus({"a": [{**configs["a"][0], "device-filter": ids[:2]}]}, "a", "a", 8, ALL_7_SEEN)
        == frozenset()
    )


# ----------------------------------------------------------------------- device -> GPU (unit)


def _slice(
    devices: list[dict[str, Any]], *, generation: int = 1, count: int = 1, name: str = "s0"
) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": "n",
            "pool": {"name": "n", "generation": generation, "resourceSliceCount": count},
            "devices": devices,
        },
    }


def _mig(
    minor: int, profile: str, start: int, *, bus: str | None = None, parent: str | None = None
) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "type": {"string": "mig"},
        "profile": {"string": profile},
        "parentUUID": {"string": parent or f"GPU-{minor}"},
        "uuid": {"string": f"MIG-{minor}-{start}"},
    }
    if bus != "":
        attrs["resource.kubernetes.io/pciBusID"] = {"string": bus or f"0000:{0x18 + 0x10 * minor:02x}:00.0"}
    short = profile.replace(".", "")
    return {"name": f"gpu-{minor}-mig-{short}-19-{start}", "attributes": attrs}


def _whole(minor: int, bus: str | None = None) -> dict[str, Any]:
    return {
        "name": f"gpu-{minor}",
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": f"GPU-{minor}"},
            "resource.kubernetes.io/pciBusID": {"string": bus or f"0000:{0x18 + 0x10 * minor:02x}:00.0"},
        },
    }


def test_devices_are_placed_on_their_gpus_from_the_newest_complete_generation() -> None:
    from controller.dra import device_gpus

    old = _slice([_mig(0, "7g.80gb", 0)], generation=1, name="old")
    new = _slice([_whole(0), _mig(1, "1g.10gb", 0), _mig(1, "1g.10gb", 1)], generation=2, name="new")
    got = device_gpus([old, new], "n", 2)
    assert got.problem is None
    assert got.gpus == {
        ("n", "gpu-0"): 0,
        ("n", "gpu-1-mig-1g10gb-19-0"): 1,
        ("n", "gpu-1-mig-1g10gb-19-1"): 1,
    }
    assert got.layouts == {0: (False, ()), 1: (True, (("1g.10gb", 2),))}


@pytest.mark.parametrize(
    ("slices", "why"),
    [
        ([_slice([_whole(0)], generation=2, count=2)], "being republished"),
        ([_slice([_whole(0, "0000:99:00.0"), _whole(1, "0000:18:00.0")])], "do not rise"),
        ([_slice([_mig(0, "1g.10gb", 0), _mig(0, "1g.10gb", 1, bus="0000:99:00.0")])], "different PCI"),
        ([_slice([_mig(0, "1g.10gb", 0), _mig(0, "1g.10gb", 1, parent="GPU-x")])], "different PCI"),
        ([_slice([_mig(0, "1g.10gb", 0, bus="")])], "no resource.kubernetes.io/pciBusID"),
        ([_slice([_whole(8)])], "the node has 8 GPUs"),
        ([_slice([{**_whole(0), "name": "nvidia-0"}])], "not named as the driver names"),
        ([_slice([_whole(0), _mig(0, "1g.10gb", 0)])], "both whole and with MIG devices"),
        ([_slice([_whole(0), _whole(0)])], "duplicate device name"),
        ([_slice([{"name": "gpu-0"}])], "without a name or attributes"),
        ([{"spec": "x"}], "has no spec"),
    ],
)
def test_a_device_that_does_not_read_right_places_nothing(slices: list[Any], why: str) -> None:
    from controller.dra import device_gpus

    got = device_gpus(slices, "n", 8)
    assert got.gpus == {} and got.problem is not None and why in got.problem, got.problem


def test_a_gpu_missing_from_the_slices_leaves_every_index_unknown() -> None:
    """mig-parted's GPU index is the rank of the GPU's PCI address among the GPUs NVML opens
    (NVIDIA/mig-parted@bd7160f4 cmd/nvidia-mig-parted/util/device.go:79-101, go-nvlib nvpci.go
    :235-237 sorts by address). A GPU the driver does not publish (MIG on with no device,
    nvlib.go:330-333, or fallen off the bus) may sit anywhere in that order: here minor 1 is
    missing, and were its bus id 0000:08:00.0 minor 0 would be index 1, not 0. So with a GPU
    missing no published minor is known to be its index."""
    from controller.dra import device_gpus

    got = device_gpus([_slice([_whole(0), _mig(2, "1g.10gb", 0)])], "n", 3)
    assert got.gpus == {} and got.problem is not None and "GPU 1 is not published" in got.problem, got
    # all three published: placed
    assert device_gpus([_slice([_whole(0), _whole(1), _mig(2, "1g.10gb", 0)])], "n", 3).problem is None


def test_a_gpu_published_in_two_pools_places_nothing() -> None:
    """The driver publishes a node's devices in one pool named after the node
    (kubernetes-sigs/dra-driver-nvidia-gpu@95932046 cmd/gpu-kubelet-plugin/driver.go:489-493).
    A second pool with devices of the same GPU (left over, or forged) would be counted with the
    first: GPU 1 re-carved to 1g.10gb x2 + 2g.20gb, a stale pool still showing its 3g.40gb, and
    together they read as the balanced layout, so a target of that layout looked like it left
    GPU 1 alone while mig-parted (which sees the real three devices) re-carves it."""
    from controller.dra import device_gpus

    real = _slice([_whole(0), _mig(1, "1g.10gb", 0), _mig(1, "1g.10gb", 1), _mig(1, "2g.20gb", 2)])
    stale = _slice([_mig(1, "3g.40gb", 4)], name="old-pool")
    stale["spec"]["pool"]["name"] = "n-old"
    got = device_gpus([real, stale], "n", 2)
    assert got.gpus == {} and got.problem is not None and "GPU 1" in got.problem and "pools" in got.problem


# ----------------------------------------------------------------------- claims (unit)


def test_claim_names_come_from_the_spec_or_the_pods_status() -> None:
    from controller.claims import claim_names

    pod = claimed_pod("p", "n", "p-gpu-x7k2q")
    assert claim_names(pod) == ["p-gpu-x7k2q"]
    assert claim_names(claimed_pod("p", "n", "shared", template=False)) == ["shared"]
    pod["status"]["resourceClaimStatuses"] = []
    assert "no ResourceClaim name" in str(claim_names(pod))
    pod["spec"]["resourceClaims"] = [{"name": "gpu"}] * 33
    assert "at most 32" in str(claim_names(pod))


def test_allocation_results_are_read_only_when_shaped_right() -> None:
    from controller.claims import Device, allocated

    pod = claimed_pod("p", "n", "c")
    claim = allocated_claim("c", "default", "n", ["gpu-0-mig-1g10gb-19-0"], pod=pod)
    uid = pod["metadata"]["uid"]
    assert allocated(claim, uid) == (Device("gpu.nvidia.com", "n", "gpu-0-mig-1g10gb-19-0"),)
    assert allocated(claim, "someone-else") == "not reserved for this pod"
    assert allocated({"status": {}}, None) == "not allocated"
    assert "at most 32" in str(allocated(allocated_claim("c", "d", "n", ["gpu-0"] * 33), None))
    broken = allocated_claim("c", "d", "n", ["gpu-0"])
    broken["status"]["allocation"]["devices"]["results"][0]["device"] = "x" * 254
    assert "without driver, pool and device" in str(allocated(broken, None))
