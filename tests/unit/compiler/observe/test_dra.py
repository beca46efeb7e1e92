"""compiler/observe/dra.py: what pods ask for and hold through DRA ResourceClaims, read at the edge.

Objects are shaped as kubernetes/api@10b39a39 ``resource/v1/types.go`` says (ResourceClaimSpec
:1183, DeviceRequest :1254 with ``exactly`` :1277 or ``firstAvailable`` :1302, ExactDeviceRequest
:1306, DeviceSubRequest :1426; AllocationResult ``devices.results`` and ``reservedFor``) and as
migc renders them (compiler/render/dra.py ``claim_spec``), built here by hand.
"""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.observe import dra
from compiler.observe.parse import parse_objects
from compiler.render.dra import claim_spec
from controller.dra import MAX_SLICES
from unit.compiler.observe.test_parse import JSON, _paths

NOW = dt.datetime(2026, 12, 1, 6, 0, tzinfo=dt.UTC)
def claim(
    name: str,
    resources: list[str],
    count: int = 1,
    devices: list[str] | None = None,
    reserved: str = "u-1",
    namespace: str = "search",
) -> dict[str, Any]:
    """A ResourceClaim as the claim controller creates it from migc's template, allocated to
    ``devices`` of node n1 and reserved for pod uid ``reserved`` when ``devices`` is given."""
    obj: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": claim_spec(resources, count),
    }
    if devices is not None:
        results = [{"request": "gpu", "driver": "gpu.nvidia.com", "pool": "n1", "device": d} for d in devices]
        obj["status"] = {
            "allocation": {"devices": {"results": results}},
            "reservedFor": [{"resource": "pods", "name": "p", "uid": reserved}],
        }
    return obj


def pod(
    name: str = "p", claims: tuple[str, ...] = ("p-gpu",), node: str | None = None, uid: str = "u-1"
) -> dict[str, Any]:
    """A pod with one template claim per name in ``claims`` (generated names in its status)."""
    spec: dict[str, Any] = {
        "containers": [
            {"name": "c", "resources": {"claims": [{"name": f"c{i}"} for i in range(len(claims))]}}
        ],
        "resourceClaims": [
            {"name": f"c{i}", "resourceClaimTemplateName": "mig-1g.10gb"} for i in range(len(claims))
        ],
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "search",
            "uid": uid,
            "creationTimestamp": "2026-12-01T05:00:00Z",
        },
        "spec": spec,
        "status": {
            "phase": "Running" if node else "Pending",
            "resourceClaimStatuses": [
                {"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)
            ],
        },
    }


def read(*objects: dict[str, Any]) -> tuple[Any, Any, list[Any], Any]:
    return parse_objects([(o, "snap.json") for o in objects], NOW)


def test_the_constants_repeated_here_are_the_renderers_and_the_controllers() -> None:
    from compiler.render import dra as rendered
    from controller import dra as controller_dra

    assert dra.DRIVER == rendered.DRIVER == controller_dra.DRIVER
    assert dra.MAX_SLICES == MAX_SLICES


def test_the_classes_migc_renders_are_read_back_as_its_resource_names() -> None:
    known = dra.class_resources()
    assert known["mig-1g.10gb.migc.dev"] == "nvidia.com/mig-1g.10gb"
    assert known["mig-1g.10gb-me.migc.dev"] == "nvidia.com/mig-1g.10gb.me"
    assert known["gpu.nvidia.com"] == "nvidia.com/gpu"
    assert "mig.nvidia.com" not in known  # the driver's generic class: the profile is in a selector


def test_a_pending_pod_that_asks_through_its_claim_is_gpu_demand() -> None:
    _, pods, diags, _ = read(pod(), claim("p-gpu", ["1g.10gb"], count=2))
    (p,) = pods
    assert p.pending and p.claimed and p.requests == (("nvidia.com/mig-1g.10gb", 2),)
    assert p.devices is None  # not allocated yet
    assert diags == []


def test_first_available_counts_its_first_alternative_and_says_the_preference() -> None:
    _, pods, _, _ = read(pod(), claim("p-gpu", ["1g.10gb", "2g.20gb"]))
    (p,) = pods
    assert p.requests == (("nvidia.com/mig-1g.10gb", 1),)
    assert p.profile_preference == ("1g.10gb", "2g.20gb")


def test_an_allocated_first_available_request_counts_the_alternative_the_scheduler_chose() -> None:
    """Once allocated, a ``firstAvailable`` request holds the sub-request the scheduler picked, named in
    each result as ``<main request>/<subrequest>`` (kubernetes/api@10b39a39 resource/v1/types.go
    :2041-2050): a running pod that got its second choice holds a 2g.20gb, not the 1g.10gb it asked
    first (what recommend counts as running demand and prices as lost)."""
    got = claim("p-gpu", ["1g.10gb", "2g.20gb"], devices=["gpu-3-mig-2g20gb-14-0"])
    second = got["spec"]["devices"]["requests"][0]["firstAvailable"][1]
    second["count"] = 2
    results = got["status"]["allocation"]["devices"]["results"]
    one = {"request": f"gpu/{second['name']}", "driver": "gpu.nvidia.com", "pool": "n1"}
    results[:] = [one | {"device": "gpu-3-mig-2g20gb-14-0"}, one | {"device": "gpu-4-mig-2g20gb-14-0"}]
    _, pods, diags, _ = read(pod(node="n1"), got)
    (p,) = pods
    assert diags == [] and p.requests == (("nvidia.com/mig-2g.20gb", 2),)
    assert p.profile_preference == ("1g.10gb", "2g.20gb")  # what it asked, in order
    # a result naming no sub-request of the claim: the first alternative, as before allocation
    for r in results:
        r["request"] = "gpu/no-such"
    _, pods, _, _ = read(pod(node="n1"), got)
    assert pods[0].requests == (("nvidia.com/mig-1g.10gb", 1),)


def test_a_running_pod_holds_the_devices_allocated_and_reserved_for_it() -> None:
    devices = ["gpu-3-mig-1g10gb-19-0"]
    _, pods, _, _ = read(pod(node="n1"), claim("p-gpu", ["1g.10gb"], devices=devices))
    (p,) = pods
    assert p.devices == (("gpu.nvidia.com", "n1", "gpu-3-mig-1g10gb-19-0"),)
    # reserved for another pod: not the claim this pod runs with, what it holds is unknown
    _, pods, _, _ = read(pod(node="n1"), claim("p-gpu", ["1g.10gb"], devices=devices, reserved="u-9"))
    assert pods[0].devices is None and pods[0].requests == (("nvidia.com/mig-1g.10gb", 1),)


def test_a_claim_missing_from_the_observation_leaves_what_the_pod_holds_unknown() -> None:
    both = pod(node="n1", claims=("p-gpu", "p-nic"))
    _, pods, _, _ = read(both, claim("p-gpu", ["1g.10gb"], devices=["gpu-0"]))
    assert pods[0].devices is None  # the second claim is not there: the controller would drain it


def test_pods_whose_claims_the_snapshot_lacks_are_one_warning_saying_how_to_take_it() -> None:
    """``kubectl get pods,nodes -A -o json`` of a DRA cluster holds no ResourceClaim: every pod that
    asks through claims would drop out of status and recommend without a word. One MIGC402 says how
    many, the first one, and the command that takes a snapshot with the claims."""
    waiting = [pod(f"w{i}", (f"w{i}-gpu",), uid=f"u-{i}") for i in range(3)]
    _, pods, diags, _ = read(*waiting)
    assert pods == ()
    (d,) = diags
    assert d.code == "MIGC402" and d.file == "snap.json"
    assert "pod search/w0 and 2 more" in d.message and "ResourceClaim search/w0-gpu" in d.message
    assert "kubectl get pods,nodes,resourceclaims,resourceslices -A -o json" in d.message
    # the claims there: no warning
    _, pods, diags, _ = read(*waiting, *(claim(f"w{i}-gpu", ["1g.10gb"]) for i in range(3)))
    assert len(pods) == 3 and diags == []


def test_a_pod_that_asks_in_its_limits_too_is_not_claimed() -> None:
    mixed = pod(node="n1")
    mixed["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    _, pods, _, _ = read(mixed, claim("p-gpu", ["1g.10gb"], devices=["gpu-3-mig-1g10gb-19-0"]))
    (p,) = pods
    assert not p.claimed and p.devices is None  # the device plugin says nothing of which GPU
    assert p.requests == (("nvidia.com/gpu", 1), ("nvidia.com/mig-1g.10gb", 1))


def test_another_drivers_claim_is_no_gpu_demand() -> None:
    nic = claim("p-gpu", ["1g.10gb"])
    nic["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "rdma.example.com"
    _, pods, diags, _ = read(pod(), nic)
    assert pods == () and diags == []


def test_what_cannot_be_counted_is_a_warning_never_a_guess() -> None:
    generic = claim("p-gpu", ["1g.10gb"])
    generic["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "mig.nvidia.com"
    every = claim("q-gpu", ["1g.10gb"])
    every["spec"]["devices"]["requests"][0]["exactly"] |= {"allocationMode": "All", "count": 0}
    huge = claim("r-gpu", ["1g.10gb"], count=10**9)
    _, pods, diags, _ = read(
        pod(), generic, pod("q", ("q-gpu",), uid="u-2"), every, pod("r", ("r-gpu",), uid="u-3"), huge
    )
    assert pods == ()
    messages = " | ".join(d.message for d in diags)
    assert {d.code for d in diags} == {"MIGC402"}
    for said in ("mig.nvidia.com", "allocationMode 'All'", "count '1000000000'"):
        assert said in messages


def _direct(p: dict[str, Any], *names: str) -> dict[str, Any]:
    """``p`` naming the ResourceClaims ``names`` directly (``resourceClaimName``), no template."""
    p["spec"]["resourceClaims"] = [{"name": f"c{i}", "resourceClaimName": n} for i, n in enumerate(names)]
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": f"c{i}"} for i in range(len(names))]
    p["status"].pop("resourceClaimStatuses", None)
    return p


def _asked(pods: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in pods:
        for k, v in p.requests:
            out[k] = out.get(k, 0) + v
    return out


def test_a_claim_several_pods_share_is_demand_once() -> None:
    """A ResourceClaim named directly by several pods is allocated once and its devices shared
    (kubernetes/api@10b39a39 resource/v1/types.go:1902-1920: ``reservedFor`` lists the pods allowed
    to use it, at most 256): its requests are demand once, not once per pod, and a pod naming
    the same claim twice asks for it once. The running pod that holds it counts it."""
    held = ["gpu-0-mig-1g10gb-19-0", "gpu-0-mig-1g10gb-19-1"]
    shared = claim("shared", ["1g.10gb"], count=2, devices=held)
    shared["status"]["reservedFor"] = [{"resource": "pods", "name": n, "uid": f"u-{n}"} for n in "ab"]
    a = _direct(pod("a", node="n1", uid="u-a"), "shared", "shared")
    b = _direct(pod("b", node="n1", uid="u-b"), "shared")
    c = _direct(pod("c", uid="u-c"), "shared")  # waits for the claim's next reservation
    _, pods, diags, _ = read(c, b, a, shared)
    assert diags == []
    assert _asked(pods) == {"nvidia.com/mig-1g.10gb": 2}
    (owner,) = pods
    assert owner.name == "a" and not owner.pending and owner.devices is not None
    # two pods sharing one claim, neither scheduled: one allocation serves both
    x, y = _direct(pod("x", uid="u-x"), "s2"), _direct(pod("y", uid="u-y"), "s2")
    _, pods, _, _ = read(x, y, claim("s2", ["3g.40gb"]))
    assert _asked(pods) == {"nvidia.com/mig-3g.40gb": 1}


def test_a_bad_claim_many_pods_name_is_one_warning() -> None:
    """What a claim asks for is read once per claim: a malformed one named by many pods (or many
    times by one) is one MIGC402, not one per pod and reference (a snapshot's size would otherwise
    be multiplied in warnings and work)."""
    every = claim("every", ["1g.10gb"])
    every["spec"]["devices"]["requests"][0]["exactly"] |= {"allocationMode": "All"}
    generic = claim("generic", ["1g.10gb"])
    generic["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "mig.nvidia.com"
    pods = [_direct(pod(f"p{i}", uid=f"u-{i}"), *(["every", "generic"] * 4)) for i in range(5)]
    _, observed, diags, _ = read(*pods, every, generic)
    assert observed == ()
    assert [d.code for d in diags] == ["MIGC402", "MIGC402"]
    assert "ResourceClaim search/every request 0: allocationMode 'All'" in diags[0].message
    assert "mig.nvidia.com" in diags[1].message and "ResourceClaim search/generic" in diags[1].message
    assert "more" not in diags[1].message  # one claim asks for the generic class, once


def test_the_drivers_slices_are_kept_per_node_and_bounded() -> None:
    def rs(name: str, node: str, driver: str = "gpu.nvidia.com") -> dict[str, Any]:
        pool = {"name": node, "generation": 1, "resourceSliceCount": 1}
        return {
            "kind": "ResourceSlice",
            "metadata": {"name": name},
            "spec": {"driver": driver, "nodeName": node, "pool": pool},
        }

    _, _, diags, slices = read(rs("a", "n1"), rs("b", "n2"), rs("c", "n1", "rdma.example.com"))
    assert [(node, [s["metadata"]["name"] for s in got]) for node, got in slices] == [
        ("n1", ["a"]),
        ("n2", ["b"]),
    ]
    _, _, diags, slices = read(*(rs(f"s{i}", "n1") for i in range(MAX_SLICES + 3)))
    assert len(slices[0][1]) == MAX_SLICES
    assert [d.code for d in diags] == ["MIGC402"] and "more than 256 ResourceSlices" in diags[0].message


SAMPLE = [
    [pod(node="n1"), claim("p-gpu", ["1g.10gb", "2g.20gb"], devices=["gpu-3-mig-1g10gb-19-0"])],
    [pod(), claim("p-gpu", ["3g.40gb"], count=2)],
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_value_anywhere_in_a_pod_or_its_claim_is_survived(data: st.DataObject) -> None:
    objs = copy.deepcopy(data.draw(st.sampled_from(SAMPLE)))
    which = data.draw(st.integers(0, len(objs) - 1))
    path = data.draw(st.sampled_from(_paths(objs[which])[1:]))
    target = objs[which]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = data.draw(JSON)
    _, pods, diags, _ = read(*objs)
    assert len(pods) <= 1
    assert all(d.code in ("MIGC401", "MIGC402") for d in diags)
    for p in pods:
        assert all(0 < n <= 1024 for _, n in p.requests)
