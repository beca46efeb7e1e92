"""compiler/plan/snapshot.py: the GPU pods of a cluster snapshot, strictly read, and whom a rollout evicts."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from compiler.plan.data import Eviction
from compiler.plan.snapshot import SnapshotError, evictions_on, parse_snapshot, snapshot_diagnostic


def _pod(name: str, node: str | None, phase: str = "Running", **resources: Any) -> dict[str, Any]:
    container = {"resources": {"limits": resources}}
    return {
        "metadata": {"namespace": "ml", "name": name},
        "spec": {"nodeName": node, "containers": [container, {"name": "sidecar"}]},
        "status": {"phase": phase},
    }


def _kubectl(*pods: dict[str, Any]) -> str:
    return json.dumps({"kind": "List", "items": list(pods)})


def test_kubectl_list_keeps_running_gpu_pods_with_their_nvidia_resources() -> None:
    gpu = _pod("a", "n1", **{"nvidia.com/mig-1g.10gb": "2", "cpu": "4"})
    gpu["spec"]["containers"].append({"resources": {"requests": {"nvidia.com/mig-1g.10gb": 1}}})
    pods = parse_snapshot(
        _kubectl(
            gpu,
            _pod("cpu-only", "n1", cpu="1"),
            _pod("done", "n1", "Succeeded", **{"nvidia.com/gpu": 1}),
            _pod("failed", "n1", "Failed", **{"nvidia.com/gpu": 1}),
            _pod("pending", None, "Pending", **{"nvidia.com/gpu": 1}),  # not on a node: nothing to evict
            _pod("fraction", "n2", **{"nvidia.com/gpu": "500m"}),  # not a whole GPU: skipped
        )
    )
    assert pods == [
        {"namespace": "ml", "name": "a", "node": "n1", "resources": {"nvidia.com/mig-1g.10gb": 3}}
    ]


def test_a_resource_in_requests_and_limits_counts_once() -> None:
    pod = _pod("a", "n1")
    pod["spec"]["containers"][0]["resources"] = {
        "requests": {"nvidia.com/gpu": "2"},
        "limits": {"nvidia.com/gpu": "2"},
    }
    assert parse_snapshot(_kubectl(pod))[0]["resources"] == {"nvidia.com/gpu": 2}


def test_migc_pods_format_is_read_and_bytes_are_accepted() -> None:
    text = json.dumps({"pods": [{"name": "p", "node": "n", "resources": {"nvidia.com/gpu": 1, "cpu": 3}}]})
    expected = [{"namespace": "", "name": "p", "node": "n", "resources": {"nvidia.com/gpu": 1}}]
    assert parse_snapshot(text.encode()) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON"),
        ('{"pods": [{"name": "p", "node": "n", "resources": {"nvidia.com/gpu": NaN}}]}', "NaN is not a JSON"),
        ("[1, 2]", "expected a Kubernetes List with 'items' or an object with 'pods'"),
        ('{"pods": [{"name": "p"}]}', "needs 'name' and 'node'"),
        ('{"pods": [{"name": "p", "node": "n", "resources": {"nvidia.com/gpu": "1m"}}]}', "is not a count"),
        ('{"pods": [{"name": "p", "node": "n", "resources": {"nvidia.com/gpu": true}}]}', "is not a count"),
        ('{"pods": [{"name": "p", "node": "n", "resources": {"nvidia.com/gpu": -1}}]}', "out of range"),
        (
            '{"items": [{"spec": {"nodeName": "n", "containers": {}}}]}',
            "items[0].spec.containers is not a list",
        ),
        ('{"items": [7]}', "items[0] is not an object"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
)
def test_bad_snapshots_say_where(text: str, message: str) -> None:
    with pytest.raises(SnapshotError, match=re.escape(message)):
        parse_snapshot(text)


def test_evictions_are_the_pods_on_changed_nodes_sorted() -> None:
    pods = [
        {
            "namespace": "b",
            "name": "x",
            "node": "n1",
            "resources": {"nvidia.com/mig-2g.20gb": 1, "nvidia.com/gpu": 2},
        },
        {"namespace": "a", "name": "y", "node": "n1", "resources": {}},
        {"namespace": "a", "name": "z", "node": "untouched", "resources": {"nvidia.com/gpu": 1}},
    ]
    assert evictions_on(pods, {("east", "n1")}) == (
        Eviction("east", "n1", "a", "y", ()),
        Eviction("east", "n1", "b", "x", (("nvidia.com/gpu", 2), ("nvidia.com/mig-2g.20gb", 1))),
    )


def test_snapshot_diagnostic_names_the_file_and_the_reason() -> None:
    diag = snapshot_diagnostic("pods.json", SnapshotError("items[0] is not an object"))
    assert (diag.code, diag.file) == ("MIGC304", "pods.json")
    assert diag.message == "cannot read the cluster snapshot: items[0] is not an object"
