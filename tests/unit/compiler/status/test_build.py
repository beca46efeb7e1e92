"""compiler/status/build.py: the GPU bars of `migc status` in the two cases the fleet tests never draw.

* a device entry of the NodeAssignment edited by hand into a layout the GPU cannot hold (an A100
  4g.40gb has one placement, memory slice 0: ``placements: [0]``, maxCount 1, in
  compiler/catalog/data/a100-sxm4-80gb.yaml): the instances are drawn side by side, in profile name
  order;
* a pod holding several instances of one profile: it is drawn on as many segments, one after the
  other, and the next pod takes the segment after them.

Both through what a user reads: the ``-o json`` document (status/report.py to_json), the same
values the HTML page draws its bars from.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
import statusfleet as sf

from compiler.cli import main
from compiler.observe.model import Observation
from compiler.observe.parse import parse_objects
from compiler.pipeline.compiled import Compiled, compile_policy
from compiler.status.build import Filters, apply_filters, build_status, stock_equivalent
from compiler.status.report import to_json
from unit.compiler.status.test_report import NODE as HELD
from unit.compiler.status.test_report import POOL, STATUS, TENANT

ROOT = Path(__file__).resolve().parents[4]
NOW = dt.datetime(2026, 12, 1, 6, 0, tzinfo=dt.UTC)
NODE = "gpu-a100-use1-04"  # the only node of its config; GPU 7 holds one 7g.80gb, GPU 2 four 1g.10gb
ONE_G = "nvidia.com/mig-1g.10gb"


@pytest.fixture(autouse=True)
def at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


@pytest.fixture(scope="module")
def compiled() -> Compiled:
    result = compile_policy(["examples/prod"], ROOT / "output")
    assert not result.failed
    return result


def bars(document: dict[str, Any], gpu: int) -> list[tuple[str, float, float, str]]:
    """GPU ``gpu`` of NODE in a status JSON document: (resource, start, width, pod) left to right."""
    (node,) = [n for n in document["nodes"] if n["name"] == NODE]
    slots = node["gpus"][gpu]["slots"]
    return [(s["resource"], s["start"], s["width"], s["pod"]) for s in slots]


def test_a_hand_edited_layout_the_gpu_cannot_hold_is_drawn_side_by_side(compiled: Compiled) -> None:
    doc = sf.prod_assignment()
    config = sf.node_names(doc)[NODE][1]
    edited = copy.deepcopy(doc)
    cfg = edited["configs"][config]
    assert cfg["devices"][7] == {"migEnabled": True, "profiles": {"7g.80gb": 1}}
    # two 4g.40gb on one A100: both would need memory slice 0, so no placement holds them
    cfg["devices"][7]["profiles"] = {"4g.40gb": 2}
    del cfg["resources"]["nvidia.com/mig-7g.80gb"]
    cfg["resources"]["nvidia.com/mig-4g.40gb"] = 2
    cluster = sf.fleet(edited)  # the node advertises both, and one pod (recsys) holds one of them
    nodes, pods, diags, _ = parse_objects([(o, "snap.json") for o in cluster["items"]], NOW)
    obs = Observation(
        taken_at=NOW, source="snapshot snap.json", nodes=nodes, pods=pods, warnings=tuple(diags)
    )
    assert compiled.policy is not None
    status = build_status(
        compiled.policy, compiled.catalog, obs, {"prod-east": edited}, expected_from="output/"
    )
    document = json.loads(to_json(status))
    # each 4g.40gb spans 4 of the 8 memory slices: the first at 0, the next right after it; the pod
    # is shown on the first, the second is free — nothing overlaps, nothing is left out
    pod = "recsys/recsys-gpu-a100-use1-04-mig-4g-40gb-0"
    assert bars(document, 7) == [
        ("nvidia.com/mig-4g.40gb", 0.0, 0.5, pod),
        ("nvidia.com/mig-4g.40gb", 0.5, 0.5, ""),
    ]
    # the GPUs the edit did not touch are drawn from the catalog's placement as before
    assert bars(document, 2)[0] == (
        "nvidia.com/mig-2g.20gb",
        0.0,
        0.25,
        "search/search-gpu-a100-use1-04-mig-2g-20gb-0",
    )


def test_a_pod_holding_several_instances_fills_as_many_segments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = sf.fleet()
    mine = [i for i in cluster["items"] if i["kind"] == "Pod" and i["spec"].get("nodeName") == NODE]
    one_g = sorted(
        (p for p in mine if ONE_G in p["spec"]["containers"][0]["resources"]["limits"]),
        key=lambda p: f"{p['metadata']['namespace']}/{p['metadata']['name']}",
    )
    assert len(one_g) == 19  # 20 x 1g.10gb on the node, one left free
    # three single-instance pods give way to one batch pod holding three (sorted first: fraud/a-…)
    for gone in one_g[-3:]:
        cluster["items"].remove(gone)
    cluster["items"].append(sf.pod("a-batch", "fraud", ONE_G, 3, node=NODE))
    snap = sf.write_snapshot(tmp_path / "snap.json", cluster)
    assert main(sf.status_argv("--snapshot", str(snap), "-o", "json")) == 0
    document = json.loads(capsys.readouterr().out)
    # GPU 2 (2g.20gb at 0, four 1g.10gb, 1g.20gb): the batch pod on the first three 1g.10gb, the pod
    # after it in name order on the fourth
    drawn = [(r, start, pod) for r, start, _, pod in bars(document, 2) if r == ONE_G]
    assert drawn == [
        (ONE_G, 0.25, "fraud/a-batch"),
        (ONE_G, 0.375, "fraud/a-batch"),
        (ONE_G, 0.5, "fraud/a-batch"),
        (ONE_G, 0.625, f"{one_g[0]['metadata']['namespace']}/{one_g[0]['metadata']['name']}"),
    ]
    # every instance is drawn once: 3 for the batch pod, 1 for each other pod, one segment left free
    segments = [pod for g in range(8) for r, _, _, pod in bars(document, g) if r == ONE_G]
    assert segments.count("fraud/a-batch") == 3 and len(segments) == 20 and segments.count("") == 1


# The pure steps of build.py, on hand-made inputs.

WHOLE_8 = {"configs": {"all-disabled-8gpu-whole-gpus": {"devices": [{"migEnabled": False}] * 8}}}


def test_the_operators_stock_all_disabled_is_no_drift_where_migc_assigns_mig_off_too() -> None:
    assert stock_equivalent(WHOLE_8, "all-disabled", "all-disabled-8gpu-whole-gpus")
    mixed = {"configs": {"migc-x": {"devices": [{"migEnabled": False}, {"migEnabled": True}]}}}
    assert not stock_equivalent(mixed, "all-disabled", "migc-x")  # one GPU should have MIG on
    assert not stock_equivalent(WHOLE_8, "migc-other", "all-disabled-8gpu-whole-gpus")  # not the stock label
    assert not stock_equivalent(WHOLE_8, "all-disabled", "all-disabled")  # equal: nothing to excuse
    assert not stock_equivalent(None, "all-disabled", "all-disabled-8gpu-whole-gpus")  # no assignment
    assert not stock_equivalent(WHOLE_8, "all-disabled", "missing-config")


def test_filters_keep_pools_tenants_and_free_nodes_and_leave_cost_fleet_wide() -> None:
    other = dataclasses.replace(HELD, name="b-01", pool="b", free=(), pods=())
    status = dataclasses.replace(
        STATUS, nodes=(HELD, other), pools=(POOL, dataclasses.replace(POOL, name="b"))
    )
    by_pool = apply_filters(status, Filters(pools=("b",)))
    assert [n.name for n in by_pool.nodes] == ["b-01"] and [p.name for p in by_pool.pools] == ["b"]
    assert by_pool.cost == status.cost and by_pool.tenants == status.tenants
    free = apply_filters(status, Filters(free_only=True))
    assert [n.name for n in free.nodes] == ["a100-01"]  # b-01 has nothing free
    nobody = apply_filters(status, Filters(tenants=("vision",)))
    assert nobody.tenants == () and nobody.pending == () and nobody.nodes == ()
    assert apply_filters(status, Filters()) == status
    assert TENANT in apply_filters(status, Filters(tenants=("search",))).tenants
