"""compiler/simulate/decision.py: the replay's state as migc recommend observes a cluster."""

from __future__ import annotations

import datetime as dt

import pytest

from compiler.catalog import load_catalog
from compiler.model import GpuLayout, PartitionPolicy
from compiler.simulate import decision as rd

CATALOG = load_catalog()
A100 = CATALOG.by_product("NVIDIA-A100-SXM4-80GB")
assert A100 is not None
FULL = "7g.80gb"
EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def test_a_full_profile_instance_is_a_whole_gpu_and_back() -> None:
    assert rd.gpu_layout({FULL: 1}, FULL) == GpuLayout.whole()
    assert rd.layout_of(GpuLayout.whole(), FULL) == {FULL: 1}
    mixed = {"3g.40gb": 2, "1g.10gb": 1}
    assert rd.gpu_layout(mixed, FULL) == GpuLayout.of(mixed)
    assert rd.layout_of(GpuLayout.of(mixed), FULL) == mixed
    # MIG on with no instance (mig-parted's all-enabled) serves nothing, zero counts are dropped
    assert rd.layout_of(GpuLayout.of({}), FULL) == {}
    assert rd.gpu_layout({"1g.10gb": 0}, FULL) == GpuLayout.of({})


def test_the_current_state_keys_each_node_and_keeps_gpu_order() -> None:
    target = [{"1g.10gb": 7}, {FULL: 1}, {"3g.40gb": 2}, {}]
    state = rd.current_state(target, 2, FULL)
    nodes = dict(state.nodes)
    assert list(nodes) == [("sim", "sim", "node-0"), ("sim", "sim", "node-1")]
    assert nodes[("sim", "sim", "node-0")] == (GpuLayout.of({"1g.10gb": 7}), GpuLayout.whole())
    assert nodes[("sim", "sim", "node-1")] == (GpuLayout.of({"3g.40gb": 2}), GpuLayout.of({}))
    # and the proposal's node layouts land on the same global GPU indices
    back = rd.layouts_of([(n, lay) for (_, _, n), lay in state.nodes], 2, FULL)
    assert back == dict(enumerate(target))


def test_the_policy_has_one_workload_per_profile_and_whole_gpus_exclusive() -> None:
    assert A100 is not None
    part = PartitionPolicy(mode="dynamic")
    policy = rd.replay_policy(A100, 3, 8, 2, part, {"1g.10gb": 5, "gpu": 2, "3g.40gb": 0})
    (cluster,) = policy.clusters
    (pool,) = cluster.pools
    assert pool.node_names == ("node-0", "node-1", "node-2")
    assert (pool.gpus_per_node, pool.max_unavailable, pool.gpu_model) == (8, 2, A100.model)
    by = {w.name: w for w in policy.workloads}
    assert sorted(by) == ["gpu", "mig-1g-10gb", "mig-3g-40gb"]
    assert by["gpu"].need.gpus == 1 and by["gpu"].isolation == "exclusive" and by["gpu"].replicas == 2
    assert by["mig-1g-10gb"].need.profiles == ("1g.10gb",) and by["mig-1g-10gb"].replicas == 5
    assert {w.tenant for w in policy.workloads} == {"sim"} and policy.tenants[0].namespaces == ("sim",)
    assert policy.partition is part


def test_the_observation_dates_pods_as_the_api_server_would() -> None:
    obs = rd.observation(
        EPOCH,
        10_000,
        [(0, None), (3, 9_000.0), (1, None)],
        [rd.Running("run-a", 2, "gpu", 2, 8_000, 120)],
        [rd.Waiting("wait-b", "1g.10gb", 1, 600, 900)],
    )
    assert obs.taken_at == EPOCH + dt.timedelta(seconds=10_000)
    phases = {n.name: (n.rollout.phase, n.rollout.since) for n in obs.nodes}
    assert phases == {
        "node-0": ("Idle", None),
        "node-1": ("Failed", EPOCH + dt.timedelta(seconds=9_000)),
        "node-2": ("Draining", None),
    }
    run, wait = obs.pods
    assert (run.namespace, run.node, run.phase, run.requests) == (
        "sim",
        "node-2",
        "Running",
        (("nvidia.com/gpu", 2),),
    )
    # startTime − creationTimestamp is the wait of this attempt
    assert run.started == EPOCH + dt.timedelta(seconds=8_000)
    assert run.created == EPOCH + dt.timedelta(seconds=7_880)
    # a pending pod's wait follows from its creationTimestamp, as recommend's reader counts it
    assert wait.pending and wait.requests == (("nvidia.com/mig-1g.10gb", 1),)
    assert wait.pending_seconds == 600.0 and wait.created == obs.taken_at - dt.timedelta(seconds=600)
    assert wait.max_wait_seconds == 900 and wait.waited_too_long is False


def test_the_memoised_solver_solves_equal_inputs_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []

    def fake(policy: object, catalog: object, current: object, limit: float) -> object:
        calls.append(policy)
        return ("solution", len(calls))

    monkeypatch.setattr(rd, "exact", fake)
    assert A100 is not None
    solve = rd.memo_solver()
    part = PartitionPolicy(mode="dynamic")
    a = rd.replay_policy(A100, 1, 8, 1, part, {"1g.10gb": 3})
    b = rd.replay_policy(A100, 1, 8, 1, part, {"1g.10gb": 4})
    cur = rd.current_state([{}] * 8, 8, FULL)
    first = solve(a, CATALOG, cur, 60.0)
    assert solve(rd.replay_policy(A100, 1, 8, 1, part, {"1g.10gb": 3}), CATALOG, cur, 60.0) is first
    assert solve(b, CATALOG, cur, 60.0) != first
    assert len(calls) == 2


def test_pods_of_several_whole_gpus_are_a_tenant_whose_workload_needs_them_on_one_node() -> None:
    """recommend counts whole-GPU demand per (tenant, gpu) in GPUs: a pod of 8 GPUs counted as 8 x
    ``need.gpus: 1`` let the solver spread them over two nodes, and the pod never ran. Pods of k
    GPUs are Tenant ``sim-xk`` with Workload ``gpu-xk`` of ``need.gpus: k``."""
    assert A100 is not None
    assert rd.demand_name(FULL, FULL, 8) == "gpu-x8" and rd.demand_name(FULL, FULL) == "gpu"
    assert rd.demand_name("1g.10gb", FULL, 1) == "1g.10gb"
    part = PartitionPolicy(mode="dynamic")
    policy = rd.replay_policy(A100, 2, 8, 1, part, {"gpu": 2, "gpu-x8": 1, "1g.10gb": 3})
    by = {w.name: w for w in policy.workloads}
    assert sorted(by) == ["gpu", "gpu-x8", "mig-1g-10gb"]
    assert (by["gpu-x8"].need.gpus, by["gpu-x8"].tenant, by["gpu-x8"].replicas) == (8, "sim-x8", 1)
    assert by["gpu-x8"].isolation == "exclusive"
    assert (by["gpu"].need.gpus, by["gpu"].tenant) == (1, "sim")
    assert [(t.name, t.namespaces) for t in policy.tenants] == [("sim", ("sim",)), ("sim-x8", ("sim-x8",))]
    obs = rd.observation(
        EPOCH,
        100,
        [(0, None), (0, None)],
        [rd.Running("big", 1, "gpu-x8", 8, 50, 10)],
        [rd.Waiting("one", "gpu", 1, 30, None)],
    )
    one, big = obs.pods  # ordered as recommend's reader orders them: (namespace, name)
    assert (big.namespace, big.requests) == ("sim-x8", (("nvidia.com/gpu", 8),))
    assert (one.namespace, one.requests) == ("sim", (("nvidia.com/gpu", 1),))
