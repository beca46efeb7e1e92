"""A large node assignment is sharded into ConfigMaps that each fit what the API server and
client-side apply accept, stays diff-friendly, and is read back (by ``plan`` and the controller's
own ``assemble``) as the one assignment it is."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_render_support import default_solution, policy

from compiler.catalog import load_catalog
from compiler.current import read_current
from compiler.render import manifests, render
from compiler.render.writer import write_tree
from controller.assignment import assemble, content_revision, parse_document, shard_names
from controller.errors import IncompleteAssignmentError, InvalidAssignmentError

CONFIGS = {
    "migc-a100-80gb-7x1g.10gb": {
        "devices": [{"migEnabled": True, "profiles": {"1g.10gb": 7}}] * 8,
        "migStrategy": "mixed",
        "devicePluginConfig": "migc-mixed",
        "resources": {"nvidia.com/mig-1g.10gb": 56},
    },
    "migc-a100-80gb-2x3g.40gb": {
        "devices": [{"migEnabled": True, "profiles": {"3g.40gb": 2}}] * 8,
        "migStrategy": "mixed",
        "devicePluginConfig": "migc-mixed",
        "resources": {"nvidia.com/mig-3g.40gb": 16},
    },
}


def _doc(nodes: int, *, pools: int = 2) -> dict[str, Any]:
    """A logical assignment of ``nodes`` named nodes per pool, with its content-hash revision."""
    names = sorted(CONFIGS)
    doc: dict[str, Any] = {
        "apiVersion": "migc.dev/v1alpha1",
        "kind": "NodeAssignment",
        "cluster": "big",
        "migConfigMap": {"namespace": "gpu-operator", "name": "migc-mig-parted-config"},
        "configs": CONFIGS,
        "pools": [
            {
                "name": f"pool-{p}",
                "gpuModel": "A100-SXM4-80GB",
                "maxUnavailable": 10,
                "maintenanceWindows": [],
                "nodes": [
                    {"name": f"gpu-{p}-{i:05d}.rack-{i % 40:02d}.example.internal", "config": names[i % 2]}
                    for i in range(nodes)
                ],
            }
            for p in range(pools)
        ],
    }
    doc["revision"] = content_revision(doc)
    return doc


def _texts(objects: list[tuple[str, dict[str, Any]]]) -> tuple[str, dict[str, str | None]]:
    index = objects[0][1]["data"][manifests.ASSIGNMENT_KEY]
    shards = {obj["metadata"]["name"]: obj["data"][manifests.SHARD_KEY] for _, obj in objects[1:]}
    return index, dict(shards)


def test_a_small_assignment_stays_one_configmap() -> None:
    doc = _doc(20)
    objects = manifests.assignment_configmaps(doc)
    assert len(objects) == 1
    text = objects[0][1]["data"][manifests.ASSIGNMENT_KEY]
    assert shard_names(text) == ()
    assert assemble(text, {}) == json.loads(text)


def test_a_large_assignment_is_sharded_within_bounds_and_reads_back_whole() -> None:
    doc = _doc(4000)
    single = manifests.assignment_configmap(doc)[1]["data"][manifests.ASSIGNMENT_KEY]
    assert len(single.encode()) > manifests.SHARD_BYTES  # the case this is for
    objects = manifests.assignment_configmaps(doc)
    assert len(objects) > 2
    for path, obj in objects:
        (value,) = obj["data"].values()
        assert len(value.encode()) <= manifests.SHARD_BYTES, path
        assert path == f"migc-system/configmap-{obj['metadata']['name']}.yaml"
    index, shards = _texts(objects)
    assembled = assemble(index, shards)
    assert assembled == doc  # the revision included: it is the hash of the whole
    assignment = parse_document(assembled, cluster="big")
    assert sum(len(p.named) for p in assignment.pools) == 8000


def test_changing_one_node_touches_one_shard_and_the_index() -> None:
    doc = _doc(4000)
    before = dict(manifests.assignment_configmaps(doc))
    changed = copy.deepcopy(doc)
    node = changed["pools"][1]["nodes"][1234]
    node["config"] = sorted(CONFIGS)[0] if node["config"] != sorted(CONFIGS)[0] else sorted(CONFIGS)[1]
    changed["revision"] = content_revision(changed)
    after = dict(manifests.assignment_configmaps(changed))
    assert before.keys() == after.keys()
    differing = sorted(p for p in before if before[p] != after[p])
    assert len(differing) == 2 and manifests.ASSIGNMENT_PATH in differing, differing


def test_adding_a_node_touches_one_shard_while_the_shard_count_holds() -> None:
    doc = _doc(4000)
    before = dict(manifests.assignment_configmaps(doc))
    grown = copy.deepcopy(doc)
    grown["pools"][0]["nodes"].append({"name": "gpu-node-0-new", "config": sorted(CONFIGS)[0]})
    grown["pools"][0]["nodes"].sort(key=lambda n: n["name"])
    grown["revision"] = content_revision(grown)
    after = dict(manifests.assignment_configmaps(grown))
    assert before.keys() == after.keys()
    assert len([p for p in before if before[p] != after[p]]) == 2


def test_a_missing_or_stale_shard_is_incomplete_and_a_foreign_one_is_invalid() -> None:
    doc = _doc(4000)
    index, shards = _texts(manifests.assignment_configmaps(doc))
    first = next(iter(shards))
    with pytest.raises(IncompleteAssignmentError, match="not there yet"):
        assemble(index, {**shards, first: None})
    # A shard of another revision (the sync has applied the index but not this shard yet).
    changed = copy.deepcopy(doc)
    for n in changed["pools"][0]["nodes"]:
        n["config"] = sorted(CONFIGS)[0]
    changed["revision"] = content_revision(changed)
    new_index, new_shards = _texts(manifests.assignment_configmaps(changed))
    assert new_shards.keys() == shards.keys()
    stale = {**new_shards, **{k: v for k, v in shards.items() if k.startswith("migc-assignment-pool-0")}}
    with pytest.raises(IncompleteAssignmentError, match="different revisions"):
        assemble(new_index, stale)
    foreign = json.loads(str(shards[first]))
    foreign["pool"] = "pool-9"
    with pytest.raises(InvalidAssignmentError, match="belongs to"):
        assemble(index, {**shards, first: json.dumps(foreign)})


def test_compile_writes_shards_that_plan_reads_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = render(policy(), default_solution(), load_catalog())
    monkeypatch.setattr(manifests, "SHARD_BYTES", 1024)  # shard the small test fleet
    sharded = render(policy(), default_solution(), load_catalog())
    shard_files = sorted(p for p in sharded if "configmap-migc-assignment-" in p)
    assert shard_files, "the assignment was not sharded"
    kustomization = yaml.safe_load(sharded["east/kustomization.yaml"])
    for path in shard_files:
        assert path.removeprefix("east/") in kustomization["resources"]
    plain, sharded_state = tmp_path / "plain", tmp_path / "sharded"
    write_tree(files, plain)
    write_tree(sharded, sharded_state)
    a, da = read_current(plain, policy())
    b, db = read_current(sharded_state, policy())
    assert da == db == []
    assert a.as_dict() == b.as_dict() and len(a.as_dict()) == 5
    # A shard file removed by hand: the previous state cannot be read, and plan says so.
    (sharded_state / shard_files[0]).unlink()
    _state, diagnostics = read_current(sharded_state, policy())
    assert [d.code for d in diagnostics] == ["MIGC303"]
    assert f"shard {Path(shard_files[0]).name}: No such file" in diagnostics[0].message
