"""controller/dra.py: the DraPlan as the controller reads it, and ResourceSlices counted the way
the scheduler counts them (kubernetes/kubernetes@030880a5 staging/src/k8s.io/dynamic-resource-
allocation/structured/internal/stable/pools_stable.go:99-153: only the newest generation of a
pool counts, it is incomplete without all its slices, a device name twice makes it invalid)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from controller import dra
from controller.assignment import ConfigSpec
from controller.errors import InvalidAssignmentError, WrongClusterError

REV = "a" * 64


def _plan(*pools: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "migc.dev/v1alpha1",
        "kind": "DraPlan",
        "cluster": "test",
        "revision": REV,
        "pools": list(pools),
    }


def _pool(
    name: str, mig: str = "static", nodes: dict[str, dict[str, int]] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "gpuModel": "A100-SXM4-80GB",
        "mig": mig,
        "driver": dra.DRIVER,
        "nodeLabels": {"nvidia.com/gpu.deploy.device-plugin": "false"},
        "nodes": [{"name": n, "devices": d} for n, d in (nodes or {}).items()],
        **extra,
    }


def _slice(
    node: str, pool: str, generation: int, count: int, *devices: tuple[str, str | None]
) -> dict[str, Any]:
    """A resource.k8s.io/v1 ResourceSlice; each device (name, profile or None for a whole GPU)."""
    listed = []
    for name, profile in devices:
        attrs: dict[str, Any] = {"type": {"string": "mig" if profile else "gpu"}}
        if profile:
            attrs["profile"] = {"string": profile}
        listed.append({"name": name, "attributes": attrs})
    return {
        "metadata": {"name": f"{node}-{pool}-{generation}"},
        "spec": {
            "driver": dra.DRIVER,
            "nodeName": node,
            "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
            "devices": listed,
        },
    }


def test_parse_a_static_and_a_dynamic_pool() -> None:
    text = json.dumps(
        _plan(
            _pool("a100", nodes={"n0": {"3g.40gb": 2, "1g.10gb": 3}}),
            _pool("h100", mig="dynamic", selector={"pool": "h100"}),
        )
    )
    plan = dra.parse(text, cluster="test")
    a, h = plan.pools
    assert a.static and not h.static
    assert a.nodes["n0"] == {"1g.10gb": 3, "3g.40gb": 2}
    assert plan.pool("a100") is a and plan.pool(None) is None and plan.pool("nope") is None
    assert h.selects({"pool": "h100", "x": "y"}) and not h.selects({"pool": "a100"}) and not a.selects({})
    # The static pool that lists a node wins; else the pool named for it, if that one is static.
    assert plan.static_pool_of("n0", ("h100",)) is a
    assert plan.static_pool_of("n9", ("h100", "a100")) is a
    assert plan.static_pool_of("n9", ("h100",)) is None
    assert plan.dynamic_pool_of("n5", {"pool": "h100"}, None) is h
    assert plan.dynamic_pool_of("n5", {}, "h100") is h
    assert plan.dynamic_pool_of("n0", {}, "a100") is None


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        (
            _plan(_pool("a", nodes={"n0": {"gpu": 1}}), _pool("b", nodes={"n0": {"gpu": 1}})),
            "also in pool 'a'",
        ),
        (_plan(_pool("a"), _pool("a")), "listed twice"),
        (_plan(_pool("a", mig="dynamic", nodes={"n0": {"gpu": 1}})), "DynamicMIG pool has no layouts"),
        (_plan(_pool("a", selector={})), "empty selector"),
        (
            _plan(_pool("a", selector={"x": "y"}, nodes={"n0": {"gpu": 1}})),
            "either named nodes or a selector",
        ),
        (_plan(_pool("a", nodes={"n0": {"1g.10gb\n": 1}})), "1g.10gb"),
        (_plan(_pool("a", nodes={"n0": {"gpu": 449}})), "not a count of 1 to 448"),
        (_plan(_pool("a", nodes={"N_0": {"gpu": 1}})), "not a node name"),
        (_plan(_pool("bad name")), "not a pool name"),
        ({**_plan(), "revision": "a" * 63 + "\n"}, "revision"),
        ({**_plan(), "extra": 1}, "(root)"),
    ],
)
def test_parse_refuses(doc: dict[str, Any], match: str) -> None:
    with pytest.raises(dra.InvalidDraPlanError, match=match.replace("(", r"\(").replace(")", r"\)")):
        dra.parse(json.dumps(doc))


def test_parse_bounds_and_cluster() -> None:
    with pytest.raises(dra.InvalidDraPlanError, match="nested deeper than 16"):
        dra.parse("[" * 17 + "]" * 17)
    dra.parse_document(_plan())  # an empty plan is valid
    with pytest.raises(dra.InvalidDraPlanError, match="not JSON"):
        dra.parse("{")
    with pytest.raises(dra.WrongClusterDraPlanError, match="serves cluster 'prod'"):
        dra.parse(json.dumps(_plan()), cluster="prod")
    assert issubclass(dra.WrongClusterDraPlanError, WrongClusterError)
    assert issubclass(dra.InvalidDraPlanError, InvalidAssignmentError)


def test_config_devices_and_dra_configs() -> None:
    cfg = ConfigSpec(
        "mixed-dra",
        "mixed",
        "migc-dra-mixed",
        {},
        (
            {"migEnabled": True, "profiles": {"3g.40gb": 1, "1g.10gb": 4}},
            {"migEnabled": True, "profiles": {"1g.10gb": 7}},
            {"migEnabled": False, "profiles": {}},
        ),
    )
    assert dra.config_devices(cfg) == {"1g.10gb": 11, "3g.40gb": 1, "gpu": 1}
    assert list(dra.config_devices(cfg)) == ["1g.10gb", "3g.40gb", "gpu"]
    assert dra.is_dra_config(cfg)
    assert not dra.is_dra_config(ConfigSpec("x", "mixed", "mixed", {}, ()))


def test_device_diff() -> None:
    assert dra.device_diff({"1g.10gb": 2}, {"1g.10gb": 2}) == {}
    assert dra.device_diff({"1g.10gb": 2, "gpu": 1}, {"1g.10gb": 1, "3g.40gb": 1}) == {
        "1g.10gb": (2, 1),
        "3g.40gb": (0, 1),
        "gpu": (1, 0),
    }


def test_published_counts_the_newest_complete_generation() -> None:
    slices = [
        _slice("n0", "p", 1, 1, ("g0", None)),  # an older generation: ignored
        _slice("n0", "p", 2, 2, ("m0", "1g.10gb"), ("m1", "1g.10gb")),
        _slice("n0", "p", 2, 2, ("m2", "3g.40gb")),
        _slice("n1", "p", 3, 1, ("x", None)),  # another node
        {
            **_slice("n0", "q", 1, 1, ("y", None)),
            "spec": {**_slice("n0", "q", 1, 1)["spec"], "driver": "other"},
        },
    ]
    seen = dra.published(slices, "n0")
    assert seen.devices == {"1g.10gb": 2, "3g.40gb": 1}
    assert seen.problems == () and seen.slices == 3 and seen.generations == {"p": 2}


def test_published_reports_unusable_pools_and_slices() -> None:
    incomplete = dra.published([_slice("n0", "p", 2, 2, ("m0", "1g.10gb"))], "n0")
    assert incomplete.devices == {} and "generation 2 has 1 of 2 slices" in incomplete.problems[0]
    twice = dra.published(
        [_slice("n0", "p", 1, 2, ("m0", "1g.10gb")), _slice("n0", "p", 1, 2, ("m0", "1g.10gb"))], "n0"
    )
    assert twice.devices == {} and "duplicate device name 'm0'" in twice.problems[0]
    broken = _slice("n0", "p", 1, 1)
    broken["spec"]["pool"]["generation"] = "1"
    junk = dra.published(["nonsense", {"metadata": {"name": "s"}}, broken], "n0")
    assert junk.devices == {} and len(junk.problems) == 3
    assert junk.problems[0] == "a ResourceSlice that is not an object"
    untyped = _slice("n0", "p", 1, 1, ("d", None))
    untyped["spec"]["devices"][0]["attributes"] = {
        f"{dra.DRIVER}/type": {"string": "mig"},
        "profile": {"string": "2g.20gb"},
    }
    assert dra.published([untyped], "n0").devices == {"2g.20gb": 1}  # qualified and unqualified names
    copy_ = copy.deepcopy(untyped)
    copy_["spec"]["devices"][0]["attributes"] = {}
    assert dra.published([copy_], "n0").devices == {"<no type>": 1}
