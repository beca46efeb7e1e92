"""controller.dra without a cluster: the DraPlan read at the edge, and ResourceSlices counted the
way the scheduler reads them (newest complete generation per pool)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from test_controller_dra import draplan

from controller import dra
from controller.assignment import ConfigSpec

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "dra"


def test_the_packaged_schema_is_the_repository_schema() -> None:
    assert dra.schema() == json.loads((REPO / "schema" / "draplan.schema.json").read_text())


@pytest.mark.parametrize("cluster", ["east", "west"])
def test_the_rendered_draplans_of_the_example_are_accepted(cluster: str) -> None:
    import yaml

    cm = yaml.safe_load((GOLDEN / cluster / "migc-system" / "configmap-migc-dra.yaml").read_text())
    plan = dra.parse(cm["data"]["dra.json"], cluster=cluster)
    if cluster == "east":
        (pool,) = plan.pools
        assert pool.static and pool.nodes["east-h100-02"] == {
            "1g.10gb": 4,
            "2g.20gb": 2,
            "3g.40gb": 2,
            "gpu": 6,
        }
        assert plan.static_pool_of("east-h100-01", ()) is pool
        assert plan.static_pool_of("east-a100-01", ("a100", None)) is None
    else:
        (pool,) = plan.pools
        assert not pool.static and pool.nodes == {}
        labels = {"node.kubernetes.io/instance-type": "p5e.48xlarge"}
        assert plan.dynamic_pool_of("west-h200-07", labels, None) is pool
        assert plan.dynamic_pool_of("west-h200-07", {}, "h200") is pool
        assert plan.dynamic_pool_of("other", {}, "other") is None


def _doc() -> dict[str, Any]:
    return draplan({"h100-0": "dra-all-1g.10gb"}, dynamic_selector={"k": "v"})


def _mutate(path: list[Any], value: Any) -> str:
    doc = _doc()
    cur: Any = doc
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value
    return json.dumps(doc)


HOSTILE = [
    ("{", "not JSON"),
    ("[" * 40 + "]" * 40, "nested deeper than 16"),
    ('{"a": "' + "x" * (1 << 20) + '"}', "bytes, more than the limit"),
    (json.dumps([1, 2]), "(root)"),
    (_mutate(["kind"], "NodeAssignment"), "kind"),
    (_mutate(["revision"], "a" * 64 + "\n"), "revision"),
    (_mutate(["pools", 0, "driver"], "other.example.com"), "driver"),
    (_mutate(["pools", 0, "mig"], "sometimes"), "mig"),
    (_mutate(["pools", 0, "nodes", 0, "devices"], {"1g.10gb\n": 3}), "is not a profile"),
    (_mutate(["pools", 0, "nodes", 0, "devices"], {"1g.10gb": 1e18}), "not a count"),
    (_mutate(["pools", 0, "nodes", 0, "devices"], {"1g.10gb": 2.5}), "integer"),
    (_mutate(["pools", 0, "nodes", 0, "name"], "Not_A_Node"), "not a node name"),
    (_mutate(["pools", 1, "name"], "h100"), "listed twice"),
    (_mutate(["pools", 1, "nodes"], [{"name": "h100-0", "devices": {"gpu": 8}}]), "also in pool"),
    (_mutate(["pools", 1, "selector"], {}), "empty selector"),
    (_mutate(["pools", 0, "nodeLabels"], {"bad key!": "x"}), "not a node label"),
    (_mutate(["pools", 0, "extra"], 1), "Additional properties"),
]


@pytest.mark.parametrize("text, why", HOSTILE, ids=[w for _t, w in HOSTILE])
def test_a_hostile_draplan_is_refused_with_a_reason(text: str, why: str) -> None:
    with pytest.raises(dra.InvalidDraPlanError) as err:
        dra.parse(text)
    assert why in str(err.value) and str(err.value).startswith("dra.json")
    assert len(str(err.value)) < 1200


def test_a_draplan_for_another_cluster_is_refused() -> None:
    with pytest.raises(dra.WrongClusterDraPlanError, match="addressed to cluster 'test'"):
        dra.parse(json.dumps(_doc()), cluster="prod")
    assert dra.parse(json.dumps(_doc()), cluster="test").cluster == "test"


def test_a_dynamic_pool_with_expected_devices_is_refused() -> None:
    doc = _doc()
    doc["pools"][1]["nodes"] = [{"name": "h200-0", "devices": {"gpu": 8}}]
    doc["pools"][1].pop("selector")
    with pytest.raises(dra.InvalidDraPlanError, match="DynamicMIG pool has no layouts"):
        dra.parse(json.dumps(doc))


def test_config_devices_counts_whole_gpus_and_instances() -> None:
    cfg = ConfigSpec(
        "c",
        "mixed",
        "dp",
        {},
        (
            {"migEnabled": False, "profiles": {}},
            {"migEnabled": True, "profiles": {"1g.10gb": 2, "3g.40gb": 1}},
            {"migEnabled": True, "profiles": {"1g.10gb": 3}},
        ),
    )
    assert dra.config_devices(cfg) == {"1g.10gb": 5, "3g.40gb": 1, "gpu": 1}


# ------------------------------------------------------------------------------------ slices


def _device(name: str, profile: str | None) -> dict[str, Any]:
    attrs: dict[str, Any] = {"type": {"string": "mig" if profile else "gpu"}}
    if profile:
        attrs["profile"] = {"string": profile}
    return {"name": name, "attributes": attrs}


def _slice(
    name: str,
    generation: int,
    count: int,
    devices: list[dict[str, Any]],
    *,
    node: str = "n0",
    pool: str = "n0",
) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "driver": dra.DRIVER,
            "nodeName": node,
            "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
            "devices": devices,
        },
    }


OLD = [_device(f"gpu-{i}", None) for i in range(2)]
NEW = [_device("gpu-0-mig-1g10gb-19-0", "1g.10gb"), _device("gpu-0-mig-1g10gb-19-1", "1g.10gb")]


def test_only_the_newest_generation_of_a_pool_counts() -> None:
    slices = [_slice("a", 1, 1, OLD), _slice("b", 2, 1, NEW)]
    seen = dra.published(slices, "n0")
    assert seen.devices == {"1g.10gb": 2} and not seen.problems and seen.generations == {"n0": 2}


def test_an_incomplete_newest_generation_is_not_usable_even_beside_a_complete_older_one() -> None:
    slices = [_slice("a", 1, 2, OLD[:1]), _slice("b", 1, 2, OLD[1:]), _slice("c", 2, 2, NEW)]
    seen = dra.published(slices, "n0")
    assert seen.problems == ("pool 'n0': generation 2 has 1 of 2 slices (being republished)",)
    assert seen.devices == {}


def test_duplicate_device_names_make_a_pool_invalid() -> None:
    seen = dra.published([_slice("a", 1, 2, NEW), _slice("b", 1, 2, NEW[:1])], "n0")
    assert seen.problems and "duplicate device name" in seen.problems[0]


def test_other_nodes_and_drivers_are_ignored_and_pools_add_up() -> None:
    other = _slice("x", 1, 1, OLD, node="n1", pool="n1")
    foreign = copy.deepcopy(_slice("y", 1, 1, OLD))
    foreign["spec"]["driver"] = "example.com/nic"
    second_pool = _slice("z", 7, 1, [_device("gpu-9", None)], pool="extra")
    seen = dra.published([_slice("a", 3, 1, NEW), other, foreign, second_pool], "n0")
    assert seen.devices == {"1g.10gb": 2, "gpu": 1} and seen.slices == 2


def test_qualified_attribute_names_are_read_too() -> None:
    dev = {
        "name": "d",
        "attributes": {"gpu.nvidia.com/type": {"string": "mig"}, "profile": {"string": "2g.20gb"}},
    }
    assert dra.published([_slice("a", 1, 1, [dev])], "n0").devices == {"2g.20gb": 1}


@pytest.mark.parametrize(
    "bad",
    [
        "not an object",
        {"metadata": {"name": "s"}},
        {"spec": {"driver": dra.DRIVER, "nodeName": "n0"}},
        {"spec": {"driver": dra.DRIVER, "nodeName": "n0", "pool": {"name": "n0", "generation": "1"}}},
        {
            "spec": {
                "driver": dra.DRIVER,
                "nodeName": "n0",
                "pool": {"name": "n0", "generation": True, "resourceSliceCount": 1},
            }
        },
        _slice("s", 1, 1, ["not a device"]),  # type: ignore[list-item]
        _slice("s", 1, 1, [_device(f"d{i}", "1g.10gb") for i in range(129)]),
        {
            "spec": {
                "driver": dra.DRIVER,
                "nodeName": "n0",
                "pool": {"name": "n0", "generation": 1, "resourceSliceCount": 0},
            }
        },
    ],
)
def test_a_malformed_slice_is_a_problem_never_an_exception(bad: Any) -> None:
    seen = dra.published([bad, _slice("ok", 1, 1, NEW, pool="ok")], "n0")
    assert seen.devices == {"1g.10gb": 2}  # the good pool still counts
    assert seen.problems


def test_device_diff() -> None:
    assert dra.device_diff({"gpu": 2, "1g.10gb": 3}, {"gpu": 2, "1g.10gb": 2, "vfio": 1}) == {
        "1g.10gb": (3, 2),
        "vfio": (0, 1),
    }
