"""`migc recommend` on static DRA pools: demand read from ResourceClaims, each change priced per GPU.

On a static DRA node the controller drains only the pods whose claims hold a device on a GPU the
new layout changes (controller/reconciler/drain.py ``per_gpu``, ``_blocks``); recommend charges the
same pods (compiler/recommend/engine.py ``node_disruption`` with ``per_gpu``). The test checks the
two answers against each other on the same objects: which pods go, and which GPUs change (the
controller reads that from the mig-parted configs, recommend from the solver's layouts).

The ResourceSlices are published by the test suite's stand-in for the NVIDIA DRA driver
(tests/controller/emulation.py ``FakeDraDriver.discover``, kubernetes-sigs/dra-driver-nvidia-gpu@
95932046: device names ``gpu-<minor>`` and ``gpu-<minor>-mig-<profile>-<id>-<start>``, the PCI bus
id rising with the minor); claims and pods are shaped as kubernetes/api@10b39a39 resource/v1 and
core/v1 say, built by hand.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from compiler.cli import main
from compiler.exitcodes import ExitCode
from compiler.model import GpuLayout
from compiler.observe import Observation
from compiler.observe.parse import parse_objects
from compiler.recommend import disruption as dis
from compiler.recommend.engine import NodeDisruption, _changing, node_disruption
from compiler.render.dra import claim_spec
from compiler.solve.result import NodeResult, PoolResult, Solution
from controller.claims import HeldCache
from controller.dra import device_gpus
from controller.reconciler import drain
from controller.reconciler.migparted import changing_gpus

sys.path.insert(0, str(Path(__file__).resolve().parent / "controller"))
import emulation  # tests/controller/emulation.py: the controller tests' cluster stand-ins

ROOT = Path(__file__).resolve().parents[1]
NOW = dt.datetime(2026, 12, 1, 6, 0, tzinfo=dt.UTC)
NODE = "east-h100-02"
WHOLE = GpuLayout(False)
SMALL = GpuLayout.of({"1g.10gb": 7})
MIXED = GpuLayout.of({"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2})
SLICES = {"1g.10gb": 1, "2g.20gb": 2, "3g.40gb": 3}


def published(node: str, layout: tuple[GpuLayout, ...]) -> list[dict[str, Any]]:
    """The node's ResourceSlice as the driver publishes it for ``layout`` (one slice, one pool)."""
    labels = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": str(len(layout))}
    raw = {"metadata": {"name": node, "labels": labels}}
    api = SimpleNamespace(
        objects={(emulation.NODES, None, node): SimpleNamespace(raw=raw)},
        mig_manager=SimpleNamespace(applied={node: tuple((g.mig_enabled, g.profiles) for g in layout)}),
    )
    devices = [d for gpu in emulation.FakeDraDriver().discover(api, node) for d in gpu]  # type: ignore[arg-type]
    pool = {"name": node, "generation": 1, "resourceSliceCount": 1}
    spec = {"driver": "gpu.nvidia.com", "nodeName": node, "pool": pool, "devices": devices}
    meta = {"name": f"{node}-gpu.nvidia.com-x"}
    return [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": meta, "spec": spec}]


def claimed_pod(
    name: str, resource: str, devices: list[str] | None, node: str | None = NODE, reserved: bool = True
) -> list[dict[str, Any]]:
    """A pod of tenant search with one claim from migc's template for ``resource`` and the claim,
    allocated to ``devices`` on ``node`` (None: pending, not allocated)."""
    uid = f"uid-{name}"
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "search",
            "uid": uid,
            "creationTimestamp": "2026-12-01T04:00:00Z",
        },
        "spec": {
            "containers": [{"name": "c", "resources": {"claims": [{"name": "migc-gpu"}]}}],
            "resourceClaims": [{"name": "migc-gpu", "resourceClaimTemplateName": "x"}],
        },
        "status": {
            "phase": "Running" if devices is not None else "Pending",
            "resourceClaimStatuses": [{"name": "migc-gpu", "resourceClaimName": f"{name}-gpu"}],
        },
    }
    claim: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"{name}-gpu", "namespace": "search"},
        "spec": claim_spec([resource]),
    }
    if devices is not None:
        pod["spec"]["nodeName"] = node
        pod["status"]["startTime"] = "2026-12-01T05:00:00Z"
        results = [{"request": "gpu", "driver": "gpu.nvidia.com", "pool": node, "device": d} for d in devices]
        claim["status"] = {
            "allocation": {"devices": {"results": results}},
            "reservedFor": [{"resource": "pods", "name": name, "uid": uid if reserved else "uid-other"}],
        }
    return [pod, claim]


CURRENT = (WHOLE,) * 6 + (SMALL, SMALL)


def _node(labels: dict[str, str]) -> dict[str, Any]:
    """NODE as the API serves it: the GPU Operator's labels the controller's per-GPU drain reads."""
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": labels}}


GOOD = {"nvidia.com/gpu.count": "8", "nvidia.com/mig.config": "cur", "nvidia.com/mig.config.state": "success"}


def fleet_objects() -> list[dict[str, Any]]:
    """Five running pods on NODE (GPUs 0-5 whole, 6-7 seven 1g.10gb each) and what each holds."""
    return [
        *claimed_pod("whole-0", "gpu", ["gpu-0"]),  # GPU 0: unchanged below
        *claimed_pod("small-6", "1g.10gb", ["gpu-6-mig-1g10gb-19-0"]),  # GPU 6: unchanged
        *claimed_pod("whole-5", "gpu", ["gpu-5"]),  # GPU 5: re-carved below
        *claimed_pod("stranger", "gpu", ["gpu-1"], reserved=False),  # its claim is not reserved for it
        *claimed_pod("limits", "gpu", ["gpu-2"]),  # asks in its limits too (patched below)
        *published(NODE, CURRENT),
        _node(GOOD),  # its labels as the controller wants them (the tests below spoil them)
    ]


def observe(objects: list[dict[str, Any]]) -> tuple[Observation, dict[str, dict[str, Any]]]:
    for o in objects:
        if o["kind"] == "Pod" and o["metadata"]["name"] == "limits":
            o["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    nodes, pods, diags, slices = parse_objects([(o, "snap.json") for o in objects], NOW)
    assert diags == []
    obs = Observation(NOW, "test", nodes, pods, resource_slices=slices)
    raw = {o["metadata"]["name"]: o for o in objects if o["kind"] in ("Pod", "ResourceClaim")}
    return obs, raw


def solution(new: tuple[GpuLayout, ...], current: tuple[GpuLayout, ...] = CURRENT) -> Solution:
    changed = tuple(i for i, (a, b) in enumerate(zip(new, current, strict=True)) if a != b)
    node = NodeResult(NODE, new, current, changed)
    return Solution(pools=(PoolResult("east", "h100", "H100-80GB-HBM3", (node,), (), (), True),))


def config(layout: tuple[GpuLayout, ...]) -> list[dict[str, Any]]:
    """A mig-parted config for ``layout``, one entry per GPU index (as migc renders a node's)."""
    out: list[dict[str, Any]] = []
    for i, g in enumerate(layout):
        entry: dict[str, Any] = {"devices": [i], "mig-enabled": g.mig_enabled}
        if g.mig_enabled:
            entry["mig-devices"] = dict(g.profiles)
        out.append(entry)
    return out


def controller_drains(raw: dict[str, dict[str, Any]], new: tuple[GpuLayout, ...]) -> set[str]:
    """The pods the controller's per-GPU drain sends away for the change CURRENT → ``new``: its own
    ``_blocks`` on its own reading of claims and slices, the GPUs changing as mig-parted decides
    from the two configs (``changing_gpus``)."""

    class Claims:
        def get_resource_claim(self, namespace: str, name: str, *, max_bytes: int = 0) -> dict[str, Any]:
            return raw[name]

    configs = {"cur": config(CURRENT), "new": config(new)}
    changing = changing_gpus(configs, "cur", "new", len(new))
    assert changing is not None
    located = device_gpus(published(NODE, CURRENT), NODE, len(new))
    ctx = SimpleNamespace(claims=HeldCache(), kube=Claims())
    pods = [o for o in raw.values() if o["kind"] == "Pod" and o["spec"].get("nodeName") == NODE]
    return {
        p["metadata"]["name"]
        for p in pods
        if drain._blocks(ctx, p, "gpu.nvidia.com", located.gpus, changing) is not None  # type: ignore[arg-type]
    }


def charged(obs: Observation, new: tuple[GpuLayout, ...], per_gpu: bool = True) -> NodeDisruption:
    """recommend's price of the change CURRENT → ``new`` of NODE (static DRA when ``per_gpu``)."""
    scope = {("east", "h100")} if per_gpu else set()
    (d,) = node_disruption(solution(new), obs, NOW, SLICES, 1800.0, 60.0, 0.0, scope)
    return d


@pytest.mark.parametrize(
    "new",
    [
        (WHOLE,) * 5 + (SMALL, SMALL, SMALL),  # GPU 5 re-carved: whole-5 and the unknown ones go
        (WHOLE,) * 6 + (MIXED, SMALL),  # GPU 6 re-carved: small-6 goes, whole-0 stays
        (SMALL,) + (WHOLE,) * 5 + (SMALL, SMALL),  # GPU 0 turns MIG on: mig-parted clears every GPU
    ],
)
def test_recommend_charges_exactly_the_pods_the_controller_drains(new: tuple[GpuLayout, ...]) -> None:
    obs, raw = observe(fleet_objects())
    goes = controller_drains(raw, new)
    changing = _changing(solution(new).pools[0].nodes[0])
    d = charged(obs, new)
    assert d.scope == "gpu" and d.running == 5 and d.drained == len(goes)
    # the price is change_cost over exactly those pods: rebuild it from the pods the controller drains
    e, grace = 3600.0, 1800.0  # every pod started at 05:00
    # GPUs each holds ("limits": one in its limits and one through its claim)
    held = {"whole-0": 1.0, "small-6": 1 / 7, "whole-5": 1.0, "stranger": 1.0, "limits": 2.0}
    assert d.loss == pytest.approx(sum(held[p] * dis.expected_loss(e, grace) for p in goes))
    kept = sum(f for p, f in held.items() if p not in goes)
    assert d.outage == pytest.approx((8 - kept) * 60.0 * len(changing))
    assert {"stranger", "limits"} <= goes  # what cannot be told is drained, as the controller does
    # at node scope (the device plugin) every running pod is charged
    node = charged(obs, new, per_gpu=False)
    assert node.scope == "node" and node.drained == 5 and node.loss == pytest.approx(
        sum(held.values()) * dis.expected_loss(e, grace)
    )


def test_without_the_drivers_slices_every_pod_is_charged() -> None:
    """Slices missing (or not readable) for the node: which GPU a device sits on is not known, and the
    controller drains every GPU pod (drain.py ``_where``); recommend charges them all too."""
    objects = [o for o in fleet_objects() if o["kind"] != "ResourceSlice"]
    obs, _ = observe(objects)
    d = charged(obs, (WHOLE,) * 5 + (SMALL, SMALL, SMALL))
    assert d.scope == "gpu" and d.drained == 5


def _drop(path: Path, start: str, end: str) -> None:
    """Remove the lines of ``path`` from the one starting with ``start`` up to (not including) ``end``."""
    text = path.read_text()
    a = text.index(start)
    path.write_text(text[:a] + text[text.index(end, a) :])


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/dra, east on DRA only (its device-plugin a100 pool and the ranker Workload removed:
    recommend sizes demand per tenant and profile across a cluster's pools, docs/recommend.md), mode
    dynamic."""
    base = tmp_path_factory.mktemp("dra")
    shutil.copytree(ROOT / "examples" / "dra", base / "pol")
    _drop(base / "pol" / "fleet.yaml", "        - name: a100", "        - name: h100")
    ranker = "apiVersion: migc.dev/v1alpha1\nkind: Workload\nmetadata:\n  name: ranker"
    _drop(base / "pol" / "workloads.yaml", ranker, "---")
    tenants = base / "pol" / "tenants.yaml"
    more = tenants.read_text().replace("burst: {profiles: {1g.10gb: 14,", "burst: {profiles: {1g.10gb: 40,")
    tenants.write_text(more)
    (base / "pol" / "partition.yaml").write_text(
        "apiVersion: migc.dev/v1alpha1\nkind: PartitionPolicy\nmetadata: {name: default}\n"
        "spec: {mode: dynamic, stabilizationWindow: 10m}\n"
    )
    assert main(["compile", str(base / "pol"), "--out", str(base / "out")]) == 0
    return base


def test_pending_pods_that_ask_through_claims_are_demand_recommend_sizes_for(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The example's static DRA pool (east/h100, 14 x 1g.10gb deployed): twenty search pods asking
    1g.10gb through migc's claim template wait, none asks in its limits. recommend counts them (they
    were invisible before) and proposes capacity for them once the window has passed; the change of
    an h100 node is priced per GPU (``scope: gpu``), and nothing runs there to drain."""
    shutil.copytree(compiled, tmp_path / "c")
    base = tmp_path / "c"
    items: list[dict[str, Any]] = []
    for i in range(20):
        items += claimed_pod(f"wait-{i}", "1g.10gb", None)
    (base / "snap.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))

    def run(at: str, *more: str) -> int:
        argv = ["recommend", str(base / "pol"), "--snapshot", str(base / "snap.json"), "--against"]
        return main([*argv, str(base / "out"), "--now", f"2026-12-01T{at}:00Z", *more])

    assert run("06:00") == ExitCode.OK  # the window starts
    capsys.readouterr()
    assert run("06:11", "--dry-run", "-o", "json") == ExitCode.DRIFT
    doc = json.loads(capsys.readouterr().out)
    demand = {(w["tenant"], w["profile"]): w for w in doc["demand"]}
    assert demand[("search", "1g.10gb")]["pending"] == 20
    assert doc["capacity"]["proposed"]["1g.10gb"] >= 20 > doc["capacity"]["current"]["1g.10gb"]
    nodes = {n["node"]: n for n in doc["disruption"]["nodes"]}
    assert nodes and all(n["scope"] == "gpu" for name, n in nodes.items() if "h100" in name)
    assert all(n["drained"] == 0 for n in nodes.values())  # nothing runs: nothing to drain

RECARVE_6 = (WHOLE,) * 6 + (MIXED, SMALL)  # GPU 6 re-carved, no mode change: small-6, stranger, limits go


def test_a_node_the_controller_reads_right_is_priced_per_gpu() -> None:
    """With the GPU Operator's labels as the controller wants them (drain.py ``_where``, ``_changing``)
    the per-GPU price stands: the node object changes nothing when it is in order."""
    obs, raw = observe(fleet_objects())
    assert charged(obs, RECARVE_6).drained == len(controller_drains(raw, RECARVE_6)) == 3


@pytest.mark.parametrize(
    "labels",
    [
        # the MIG manager's last apply did not succeed: what is on the GPUs is not known, and the
        # controller drains every GPU pod (controller/reconciler/drain.py _changing: state != success)
        {**GOOD, "nvidia.com/mig.config.state": "failed"},
        {**GOOD, "nvidia.com/mig.config.state": "pending"},
        # no GPU count: the controller cannot map devices to GPUs (drain.py _where: "no ... label")
        {k: v for k, v in GOOD.items() if k != "nvidia.com/gpu.count"},
        # GFD counts 4 GPUs where the pool says 8: device_gpus with the label's count refuses the
        # slices (a minor past the count), so every pod is drained
        {**GOOD, "nvidia.com/gpu.count": "4"},
    ],
)
def test_a_node_whose_state_the_controller_does_not_trust_charges_every_pod(labels: dict[str, str]) -> None:
    obs, _ = observe([*fleet_objects(), _node(labels)])
    d = charged(obs, RECARVE_6)
    assert d.scope == "gpu" and d.drained == d.running == 5


def test_slices_that_disagree_with_the_deployed_layout_charge_every_pod() -> None:
    """The node is mid-rollout: the driver publishes GPU 7 as MIXED while the deployed render says
    SMALL. The controller then takes GPU 7's layout as unknown (migparted.changing_gpus ``_now``:
    the config and the slices disagree), counts it a mode change, re-carving every GPU, and drains
    every pod; recommend must not charge only the pods of GPU 6."""
    actual = (WHOLE,) * 6 + (SMALL, MIXED)
    objects = [o for o in fleet_objects() if o["kind"] != "ResourceSlice"]
    obs, _ = observe([*objects, *published(NODE, actual)])
    located = device_gpus(published(NODE, actual), NODE, 8)
    assert located.problem is None
    cfg = {"cur": config(CURRENT), "new": config(RECARVE_6)}
    assert changing_gpus(cfg, "cur", "new", 8, located.layouts) == frozenset(range(8))  # the controller: all
    d = charged(obs, RECARVE_6)
    assert d.drained == d.running == 5
