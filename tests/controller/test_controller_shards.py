"""The controller rolls out a sharded assignment (issue 26): index and shard ConfigMaps as
``migc compile`` renders them, synced one object at a time as Argo CD or Flux would.

Until every shard the index names is there and of the index's revision, nothing is admitted and
nothing is refused (a sync in progress is not an error); a shard that belongs elsewhere is refused
with the same Event as any invalid assignment."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import CONFIGS, Cluster, assignment
from emulation import CONFIGMAPS

from compiler.render import manifests
from controller.assignment import content_revision

NODES = [f"gpu-{i:02d}" for i in range(6)]
OLD, NEW = "all-1g.10gb", "all-3g.40gb"
# While the shards are incomplete nothing is in flight, so the controller passes once per resync:
# at FAST's 0.5 s, each settle() (8 passes that must change nothing) waited 4 s. The proof is the
# number of passes, not the time, so these tests resync every 0.1 s (issue 27: 8.7 -> ~2 s each).
RESYNC = 0.1


def _sharded(targets: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    doc = assignment(targets, max_unavailable=2)
    doc["revision"] = content_revision(doc)  # the compiler's revision: the hash of the whole document
    objects = manifests.assignment_configmaps(doc)
    assert len(objects) >= 3, "the test assignment was not sharded"
    return objects


def _sync(cluster: Cluster, objects: list[tuple[str, dict[str, Any]]]) -> None:
    for _path, obj in objects:
        cluster.emu.upsert(CONFIGMAPS, "migc-system", obj["metadata"]["name"], obj)


def _node_writes(cluster: Cluster) -> list[Any]:
    return [c for c in cluster.controller_calls() if c.resource == "nodes" and c.verb == "patch"]


def _events(cluster: Cluster) -> list[str]:
    return [str(c.body["reason"]) for c in cluster.controller_calls() if c.resource == "events"]


@pytest.fixture(autouse=True)
def _small_shards(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manifests, "SHARD_BYTES", 600)  # six nodes already need several shards


def test_shards_that_arrive_after_the_index_are_waited_for_then_rolled_out(cluster: Cluster) -> None:
    cluster.add_nodes(NODES, OLD)
    cluster.set_mig_parted(CONFIGS)
    objects = _sharded(dict.fromkeys(NODES, NEW))
    ctl = cluster.start(loop__resync_interval=RESYNC)
    _sync(cluster, objects[:1])  # the index first: its shards are not there yet
    cluster.settle(ctl)
    assert _node_writes(cluster) == [] and _events(cluster) == []
    _sync(cluster, objects[1:2])  # one shard of several
    cluster.settle(ctl)
    assert _node_writes(cluster) == [] and _events(cluster) == []
    _sync(cluster, objects[2:])
    cluster.wait(lambda: cluster.converged(dict.fromkeys(NODES, NEW)), timeout=30)
    assert _events(cluster) == []


def test_an_index_ahead_of_its_shards_admits_nothing_until_they_catch_up(cluster: Cluster) -> None:
    cluster.add_nodes(NODES, OLD)
    cluster.set_mig_parted(CONFIGS)
    old = _sharded(dict.fromkeys(NODES, OLD))
    _sync(cluster, old)
    ctl = cluster.start(loop__resync_interval=RESYNC)
    cluster.settle(ctl)
    assert _node_writes(cluster) == []  # converged already
    new = _sharded(dict.fromkeys(NODES, NEW))
    assert [o["metadata"]["name"] for _, o in new] == [o["metadata"]["name"] for _, o in old]
    _sync(cluster, new[:1])  # the new index, the old shards: they do not add up to its revision
    cluster.settle(ctl)
    assert _node_writes(cluster) == [] and _events(cluster) == []
    _sync(cluster, new[1:])
    cluster.wait(lambda: cluster.converged(dict.fromkeys(NODES, NEW)), timeout=30)


def test_a_shard_of_another_pool_is_refused_and_never_acted_on(cluster: Cluster) -> None:
    cluster.add_nodes(NODES, OLD)
    cluster.set_mig_parted(CONFIGS)
    objects = _sharded(dict.fromkeys(NODES, NEW))
    name = objects[1][1]["metadata"]["name"]
    shard = json.loads(objects[1][1]["data"][manifests.SHARD_KEY])
    shard["pool"] = "h100"
    objects[1][1]["data"][manifests.SHARD_KEY] = json.dumps(shard)
    ctl = cluster.start(loop__resync_interval=RESYNC)
    _sync(cluster, objects)
    cluster.settle(ctl)
    assert _node_writes(cluster) == []
    events = [c for c in cluster.controller_calls() if c.resource == "events"]
    assert [e.body["reason"] for e in events] == ["InvalidAssignment"]
    assert f"{name}/nodes.json: belongs to cluster 'test' pool 'h100'" in events[0].body["message"]
