"""Fault injection: disruption budgets, a failing or hanging MIG manager, API errors, dropped
watches, a killed controller, a revision that changes mid-rollout. Every invariant is read from
the emulator's request history or object state."""

from __future__ import annotations

import itertools

import kmock
import pytest
from conftest import (
    Cluster,
    assert_cordons_are_marked,
    assert_mig_config_never_removed,
    assert_only_gpu_pods_evicted,
    assignment,
    max_cordoned,
)
from emulation import CONFIGMAPS, NODES

from controller import state as st

OLD, NEW = "all-1g.10gb", "all-3g.40gb"


def _setup(cluster: Cluster, nodes: list[str], **kw: object) -> dict[str, object]:
    cluster.add_nodes(nodes, OLD)
    cluster.set_assignment(assignment(dict.fromkeys(nodes, OLD)))
    doc = assignment(dict.fromkeys(nodes, NEW), **kw)  # type: ignore[arg-type]
    return doc


def _ann(cluster: Cluster, node: str) -> dict[str, str]:
    return dict(cluster.node(node)["metadata"].get("annotations") or {})


def _cordoned(obj: dict[str, object]) -> bool:
    spec = obj.get("spec") or {}
    assert isinstance(spec, dict)
    return bool(spec.get("unschedulable")) or any(
        t.get("key") == st.TAINT_KEY for t in spec.get("taints") or []
    )


def test_pdb_blocks_eviction_for_a_while_then_drain_completes(cluster: Cluster) -> None:
    doc = _setup(cluster, ["n0", "n1"])
    cluster.add_pod("db-0", "n0", namespace="db")
    refusals = itertools.count()
    # A PodDisruptionBudget that forbids evicting db/db-0 for its first 4 attempts.
    cluster.emu.api.eviction_gate = lambda ns, name: not (name == "db-0" and next(refusals) < 4)
    cluster.start()
    cluster.set_assignment(doc)
    cluster.wait(lambda: cluster.converged({"n0": NEW, "n1": NEW}))

    calls = cluster.controller_calls()
    evictions = [c for c in calls if c.subresource == "eviction"]
    assert [c.refused for c in evictions] == [True] * 4 + [False]  # waited out, retried, never forced
    assert_only_gpu_pods_evicted(calls, {"db/db-0"})
    assert_cordons_are_marked(calls)
    assert_mig_config_never_removed(calls)


def test_pdb_that_never_allows_eviction_fails_the_node_after_the_drain_timeout(cluster: Cluster) -> None:
    doc = _setup(cluster, ["n0"])
    cluster.add_pod("db-0", "n0", namespace="db")
    cluster.emu.api.eviction_gate = lambda ns, name: False
    ctl = cluster.start(drain__grace_timeout=0.05, drain__eviction_timeout=0.3, failures__max_attempts=1)
    cluster.set_assignment(doc)
    cluster.wait(lambda: _ann(cluster, "n0").get(st.PHASE) == "Failed")

    node = cluster.node("n0")
    assert "drain timed out" in node["metadata"]["annotations"][st.LAST_ERROR]
    assert _cordoned(node)  # stays cordoned for a human
    assert node["metadata"]["labels"][st.MIG_CONFIG] == OLD  # never relabelled under a running pod
    pods = [p["metadata"]["name"] for p in cluster.emu.pods() if p["metadata"]["namespace"] != "gpu-operator"]
    assert pods == ["db-0"]  # (the GPU Operator's own operand pods aside)
    calls = cluster.controller_calls()
    assert not [c for c in calls if c.resource == "pods" and c.verb == "delete"]
    assert ctl.metrics.evictions.labels(result="blocked")._value.get() >= 1


def test_gpu_pods_get_the_grace_period_to_finish_before_any_eviction(cluster: Cluster) -> None:
    doc = _setup(cluster, ["n0"])
    cluster.add_pod("job-0", "n0", namespace="batch")
    cluster.start(drain__grace_timeout=60.0)
    cluster.set_assignment(doc)
    cluster.wait(lambda: _ann(cluster, "n0").get(st.PHASE) == "Draining")
    ctl = cluster.running[0].controller
    seen = ctl.passes
    cluster.wait(lambda: ctl.passes >= seen + 5)
    assert not [c for c in cluster.controller_calls() if c.subresource == "eviction"]
    # The job finishes on its own: the drain proceeds without evicting anything.
    cluster.emu.patch(kmock.resource("", "v1", "pods"), "batch", "job-0", {"status": {"phase": "Succeeded"}})
    cluster.wait(lambda: cluster.converged({"n0": NEW}))
    assert not [c for c in cluster.controller_calls() if c.subresource == "eviction"]


def test_mig_manager_failed_backs_off_retries_once_then_waits_for_a_human(cluster: Cluster) -> None:
    doc = _setup(cluster, ["n0", "n1"])
    cluster.mig.per_node["n0"] = "failed"
    ctl = cluster.start(failures__backoff=0.1, loop__resync_interval=0.05)
    cluster.set_assignment(doc)
    cluster.wait(lambda: _ann(cluster, "n0").get(st.ATTEMPTS) == "2" and cluster.converged({"n1": NEW}))

    seen = ctl.passes
    cluster.wait(lambda: ctl.passes >= seen + 10)
    ann = _ann(cluster, "n0")
    assert ann[st.PHASE] == "Failed" and st.RETRY_AFTER not in ann
    assert [h for h in cluster.mig.handled if h[0] == "n0"] == [("n0", NEW, "failed")] * 2  # one retry only
    assert _cordoned(cluster.node("n0"))
    events = [c for c in cluster.controller_calls() if c.resource == "events" and c.verb == "create"]
    assert [e.body["reason"] for e in events] == ["MigReconfigurationFailed"] * 2
    assert {e.body["involvedObject"]["name"] for e in events} == {"n0"}
    assert ctl.metrics.reconfigurations.labels(pool="a100", result="failed")._value.get() == 2

    # A human fixed the cause and asks for a retry.
    cluster.mig.per_node["n0"] = "success"
    cluster.annotate("n0", {st.RETRY: "true"})
    cluster.wait(lambda: cluster.converged({"n0": NEW, "n1": NEW}))
    assert st.RETRY not in _ann(cluster, "n0")
    assert_cordons_are_marked(cluster.controller_calls())
    assert_mig_config_never_removed(cluster.controller_calls())  # two retries, the label stayed


def test_mig_manager_hang_times_out_into_failed(cluster: Cluster) -> None:
    doc = _setup(cluster, ["n0"])
    cluster.mig.mode = "hang"
    cluster.start(apply__apply_timeout=0.3, failures__max_attempts=1)
    cluster.set_assignment(doc)
    cluster.wait(lambda: _ann(cluster, "n0").get(st.PHASE) == "Failed")
    node = cluster.node("n0")
    assert "did not finish" in node["metadata"]["annotations"][st.LAST_ERROR]
    assert node["metadata"]["labels"][st.MIG_STATE] == "pending"
    assert _cordoned(node)


def test_rollback_annotation_returns_a_failed_node_to_its_previous_config(cluster: Cluster) -> None:
    doc = _setup(cluster, ["n0"])
    cluster.mig.decide = lambda node, config, attempt: "failed" if config == NEW else "success"
    ctl = cluster.start(failures__max_attempts=1, loop__resync_interval=0.05)
    cluster.set_assignment(doc)
    cluster.wait(lambda: _ann(cluster, "n0").get(st.PHASE) == "Failed")
    cluster.annotate("n0", {st.ROLLBACK: "true"})
    cluster.wait(lambda: cluster.converged({"n0": OLD}))

    ann = _ann(cluster, "n0")
    assert ann[st.HELD_REVISION] == doc["revision"] and st.ROLLBACK not in ann
    seen = ctl.passes
    cluster.wait(lambda: ctl.passes >= seen + 10)
    assert cluster.converged({"n0": OLD})  # held: the same revision is not retried behind the human's back
    assert ctl.metrics.drift._value.get() == 1
    assert ctl.metrics.reconfigurations.labels(pool="a100", result="rolled-back")._value.get() == 1


def test_conflicts_and_server_errors_on_patches_are_retried(cluster: Cluster) -> None:
    nodes = [f"n{i}" for i in range(6)]
    doc = _setup(cluster, nodes, max_unavailable=2)
    counter = itertools.count()

    def flaky(request: kmock.Request) -> Exception | None:
        if request.resource == NODES and request.action == kmock.action.UPDATE:
            k = next(counter)
            if k % 4 == 0:
                return kmock.KubernetesError(status=409, reason="Conflict", message="injected conflict")
            if k % 4 == 1:
                return kmock.KubernetesError(status=500, reason="InternalError", message="injected 500")
        return None

    cluster.emu.api.faults.append(flaky)
    cluster.start()
    cluster.set_assignment(doc)
    cluster.wait(lambda: cluster.converged(dict.fromkeys(nodes, NEW)), timeout=30)
    calls = cluster.controller_calls()
    refused = [c for c in calls if c.resource == "nodes" and c.verb == "patch" and c.refused]
    assert len(refused) >= len(nodes)
    assert max_cordoned(calls) <= 2
    assert_cordons_are_marked(calls)
    assert_mig_config_never_removed(calls)


def test_dropped_watches_are_re_established(cluster: Cluster) -> None:
    doc = _setup(cluster, ["n0", "n1"])
    # Relisting only every 60 s: finishing in seconds proves a re-established watch woke the loop.
    ctl = cluster.start(loop__resync_interval=60.0)
    cluster.wait(lambda: ctl.passes >= 1 and len([c for c in cluster.emu.calls() if c.verb == "watch"]) >= 2)
    fail_next_watch = iter([True])
    cluster.emu.api.faults.append(
        lambda r: (
            kmock.KubernetesError(status=500, reason="InternalError", message="watch refused")
            if r.params.get("watch") == "true" and r.resource == CONFIGMAPS and next(fail_next_watch, False)
            else None
        )
    )
    cluster.emu.drop_watches(CONFIGMAPS)
    cluster.emu.drop_watches(NODES)
    cluster.wait(
        lambda: len([c for c in cluster.emu.calls() if c.verb == "watch" and c.resource == "configmaps"]) >= 3
    )
    cluster.set_assignment(doc)
    cluster.wait(lambda: cluster.converged({"n0": NEW, "n1": NEW}))
    watches = [c for c in cluster.controller_calls() if c.verb == "watch"]
    assert [c.refused for c in watches if c.resource == "configmaps"][:3] == [False, True, False]


@pytest.mark.slow
@pytest.mark.parametrize("kill_after", [2, 7, 13])
def test_killed_mid_rollout_and_restarted_resumes_without_repeating_steps(
    cluster: Cluster, kill_after: int
) -> None:
    nodes = [f"n{i}" for i in range(8)]
    doc = _setup(cluster, nodes, max_unavailable=3)
    a = cluster.start(leader__identity="ctl-a")
    writes = itertools.count(1)

    def kill_a(request: kmock.Request) -> None:
        # Let the request through, then kill the process before it can make another one.
        if request.resource == NODES and request.action == kmock.action.UPDATE and next(writes) == kill_after:
            cluster.kill(a)

    cluster.emu.api.faults.append(lambda r: kill_a(r))
    cluster.set_assignment(doc)
    cluster.wait(lambda: not cluster.running[0].thread.is_alive())

    # After the kill: no node is cordoned without migc's record of it.
    for name, obj in cluster.emu.nodes().items():
        if _cordoned(obj):
            assert (obj["metadata"].get("annotations") or {}).get(st.PHASE) not in (None, "Idle"), name
    cluster.emu.api.faults.clear()
    cluster.start(leader__identity="ctl-b")  # a new replica: waits for ctl-a's Lease to expire, then resumes
    cluster.wait(lambda: cluster.converged(dict.fromkeys(nodes, NEW)), timeout=30)

    calls = cluster.controller_calls()
    assert max_cordoned(calls) <= 3
    assert_cordons_are_marked(calls)
    assert_mig_config_never_removed(calls)
    cordons = [
        str(c.name)
        for c in calls
        if c.verb == "patch"
        and c.resource == "nodes"
        and not c.refused
        and ((c.body.get("metadata") or {}).get("annotations") or {}).get(st.PHASE) == "Cordoned"
    ]
    assert sorted(cordons) == nodes  # each node cordoned exactly once across both lifetimes
    labels = [
        str(c.name)
        for c in calls
        if c.verb == "patch"
        and c.resource == "nodes"
        and not c.refused
        and ((c.body.get("metadata") or {}).get("labels") or {}).get(st.MIG_CONFIG) == NEW
    ]
    assert sorted(labels) == nodes  # each node relabelled exactly once
    holders = [
        c.body["spec"]["holderIdentity"] for c in calls if c.resource == "leases" and c.verb == "patch"
    ]
    assert "ctl-b" in holders


def test_revision_changing_mid_rollout_retargets(cluster: Cluster) -> None:
    nodes = [f"n{i}" for i in range(6)]
    doc1 = _setup(cluster, nodes, max_unavailable=2)
    cluster.mig.gate.clear()  # the MIG manager holds the first batch in Applying
    ctl = cluster.start()
    cluster.set_assignment(doc1)
    cluster.wait(lambda: list(cluster.phases().values()).count("Applying") == 2)
    doc2 = assignment(dict.fromkeys(nodes, "all-balanced"), max_unavailable=2)
    cluster.set_assignment(doc2)
    cluster.settle(ctl, 3)
    cluster.mig.gate.set()
    cluster.wait(lambda: cluster.converged(dict.fromkeys(nodes, "all-balanced")), timeout=30)

    calls = cluster.controller_calls()
    assert max_cordoned(calls) <= 2
    assert_cordons_are_marked(calls)
    assert_mig_config_never_removed(calls)
    relabels: dict[str, list[str]] = {}
    cordons: dict[str, int] = {}
    for c in calls:
        if c.verb != "patch" or c.resource != "nodes" or c.refused:
            continue
        meta = c.body.get("metadata") or {}
        if (meta.get("labels") or {}).get(st.MIG_CONFIG):
            relabels.setdefault(str(c.name), []).append(meta["labels"][st.MIG_CONFIG])
        if (meta.get("annotations") or {}).get(st.PHASE) == "Cordoned":
            cordons[str(c.name)] = cordons.get(str(c.name), 0) + 1
    in_flight = [n for n, seq in relabels.items() if seq[0] == NEW]
    assert len(in_flight) == 2, "the first batch was applying the first revision"
    for n in in_flight:  # finished the step, then re-targeted without being released in between
        assert relabels[n] == [NEW, "all-balanced"] and cordons[n] == 1
    for n in set(nodes) - set(in_flight):  # not started yet: went straight to the new target
        assert relabels[n] == ["all-balanced"]
