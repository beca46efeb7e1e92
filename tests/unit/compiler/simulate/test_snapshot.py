"""compiler/simulate/snapshot.py: the replay's state written as ``migc recommend``'s inputs.

Each file is read back by the reader ``migc recommend`` itself uses (the policy loader and
validation, ``read_current``, the snapshot reader, the state reader) and compared with the objects
written; every policy field the writer does not write is refused (walked over ``dataclasses.fields``);
and ``migc recommend`` on the files prints the same JSON as :func:`compiler.recommend.engine.recommend`
on the objects, once where a change is proposed and once where a gate holds it back.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from compiler.catalog import GpuModel, load_catalog
from compiler.cli import main
from compiler.current import read_current
from compiler.diagnostics import Collector
from compiler.exitcodes import ExitCode
from compiler.model import (
    Cluster,
    CurrentState,
    GpuLayout,
    HamiNeed,
    MaintenanceWindow,
    Need,
    NodePool,
    PartitionPolicy,
    Policy,
    PriorityTier,
    Quota,
    Rule,
    RuleCondition,
    Sharing,
    Spread,
    Target,
    Tenant,
    Workload,
)
from compiler.observe import Observation, read_snapshots
from compiler.observe.model import ObservedNode, ObservedPod, Rollout
from compiler.pipeline import collect_policy
from compiler.recommend.engine import recommend
from compiler.recommend.history import Sample
from compiler.recommend.report import to_json
from compiler.recommend.state import State, read_state
from compiler.simulate import decision as rd
from compiler.simulate.snapshot import (
    DERIVED,
    WRITTEN,
    Inputs,
    SnapshotRefused,
    first_difference,
    write_inputs,
)

CATALOG = load_catalog()
_FOUND = CATALOG.by_product("NVIDIA-A100-SXM4-80GB")
assert _FOUND is not None
MODEL: GpuModel = _FOUND
PRODUCT = "NVIDIA-A100-SXM4-80GB"
NOW = dt.datetime(2026, 12, 1, 6, 0, tzinfo=dt.UTC)
MIG = "nvidia.com/mig-1g.10gb"
GPU = "nvidia.com/gpu"
L7 = GpuLayout.of({"1g.10gb": 7})
MIXED = GpuLayout.of({"3g.40gb": 1, "2g.20gb": 2})
WHOLE = GpuLayout.whole()


def ago(seconds: int) -> dt.datetime:
    return NOW - dt.timedelta(seconds=seconds)


# ------------------------------------------------------------------------------------------ objects


def full_policy() -> Policy:
    """One pool of three 2-GPU A100 nodes; every PartitionPolicy field off its default, and a rule."""
    pool = NodePool(
        name="sim",
        cluster="sim",
        gpu_product=PRODUCT,
        gpu_model=MODEL.model,
        gpus_per_node=2,
        node_names=("node-0", "node-1", "node-2"),
        node_count=3,
        max_unavailable=2,
        idle_surge=1,  # off the default (0), and within every node count the tests give the pool
        price_per_gpu_hour=3.5,
        allocation="dra",  # static DRA: the replay's --drain-scope gpu (compiler/simulate/decision.py)
    )
    tiers = (PriorityTier("gold", 5000, "Paid for."), PriorityTier("bronze", 10))
    part = PartitionPolicy(
        mode="dynamic",
        interval_seconds=300,
        reconfiguration_threshold_pct=12.5,
        stabilization_seconds=1200,
        scale_down_seconds=7200,
        min_dwell_seconds=1800,
        backoff_initial_seconds=60,
        backoff_max_seconds=5400,
        backoff_factor=3.0,
        daily_change_budget=7,
        unmet_demand="error",
        allow_media_extensions=True,
        objective=("gpus", "preference", "disruption"),
        tiers=tiers,
        rules=(
            Rule(
                "small-burst",
                RuleCondition(
                    pending_pods_greater_than=3, max_requested_memory_gb_below=20.0, profile="1g.10gb"
                ),
                "1g.10gb",
                ("sim",),
            ),
        ),
        pricing=((MODEL.model, 3.5),),
    )
    workloads = (
        Workload("gpu-1", "sim", 1, Need(gpus=1), "exclusive", "bronze", "sim"),
        Workload("gpu-2", "sim", 0, Need(gpus=2), "exclusive", "gold", "sim", pools=("sim",)),
        Workload("mig-1g-10gb", "sim", 9, Need(profiles=("1g.10gb",)), "hardware", "bronze", "sim"),
        Workload("mig-any", "sim", 2, Need(profiles=("3g.40gb", "2g.20gb")), "hardware", "gold", "sim"),
    )
    return Policy(
        clusters=(
            Cluster("sim", (pool,), gpu_operator_namespace="nvidia-gpu-operator", kubernetes_version="1.34"),
        ),
        tenants=(Tenant("sim", ("sim", "sim-b"), "bronze", create_namespaces=False),),
        workloads=workloads,
        partition=part,
        fleet_name="replay",
    )


def full_current() -> CurrentState:
    return CurrentState(
        nodes=(
            (("sim", "sim", "node-0"), (L7, MIXED)),
            (("sim", "sim", "node-1"), (WHOLE, L7)),
            (("sim", "sim", "node-2"), (WHOLE, WHOLE)),
        )
    )


def _node(
    name: str, alloc: tuple[tuple[str, int], ...], config: str | None, rollout: Rollout, **kw: Any
) -> ObservedNode:
    labels = {"kubernetes.io/hostname": name, "nvidia.com/gpu.count": "2", "nvidia.com/gpu.product": PRODUCT}
    if config is not None:
        labels["nvidia.com/mig.config"] = config
        labels["nvidia.com/mig.config.state"] = "success"
    return ObservedNode(
        name=name,
        labels=tuple(sorted(labels.items())),
        allocatable=alloc,
        mig_config=config,
        mig_state="success" if config is not None else None,
        applied_config=kw.get("applied"),
        gpu_product=PRODUCT,
        gpu_count=2,
        rollout=rollout,
        unschedulable=kw.get("unschedulable", False),
    )


def full_observation() -> Observation:
    """A node idle, one mid-rollout (cordoned), one Failed; running and pending pods of MIG profiles
    and of whole GPUs, max-wait, a preference, a priority class, a pod without a creation time."""
    nodes = (
        _node("node-0", ((MIG, 7),), "cfg-a", Rollout("Idle")),
        _node(
            "node-1",
            ((GPU, 1), (MIG, 7)),
            "cfg-b",
            Rollout(
                "Draining",
                target_config="cfg-c",
                since=ago(120),
                attempts=1,
                started=ago(300),
                previous_config="cfg-b",
            ),
            unschedulable=True,
        ),
        _node(
            "node-2",
            ((GPU, 2),),
            None,
            Rollout(
                "Failed",
                target_config="cfg-d",
                since=ago(900),
                attempts=3,
                last_error="mig-parted: boom",
                paused=True,
            ),
            applied="all-disabled",
        ),
    )
    pods = [
        ObservedPod("sim", f"run-{i}", "Running", "node-0", ((MIG, 1),), ago(7200), None, started=ago(7100))
        for i in range(3)
    ]
    pods.append(
        ObservedPod("sim", "whole", "Running", "node-2", ((GPU, 2),), ago(5000), None, started=ago(4900))
    )
    pods.append(
        ObservedPod(
            "sim-b", "bound", "Pending", "node-1", ((MIG, 1),), ago(60), None, priority_class="migc-gold"
        )
    )
    pods.append(
        ObservedPod(
            "sim",
            "urgent",
            "Pending",
            None,
            ((MIG, 1),),
            ago(1800),
            1800.0,
            profile_preference=("1g.10gb", "2g.20gb"),
            max_wait_seconds=900,
        )
    )
    pods.append(ObservedPod("sim", "wait-gpu", "Pending", None, ((GPU, 1),), ago(600), 600.0))
    pods.append(ObservedPod("sim-b", "undated", "Pending", None, ((MIG, 2),), None, None))
    pods.append(ObservedPod("sim", "unknown", "Unknown", "node-0", ((MIG, 1),), ago(100), None))
    # pods that ask through a DRA claim (compiler/observe/dra.py), one running on a device of node-0
    held = (("gpu.nvidia.com", "node-0", "gpu-0-mig-1g10gb-19-0"),)
    pods.append(
        ObservedPod(
            "sim",
            "claims",
            "Running",
            "node-0",
            ((MIG, 1),),
            ago(900),
            None,
            started=ago(800),
            claimed=True,
            devices=held,
        )
    )
    pods.append(ObservedPod("sim", "claims-wait", "Pending", None, ((GPU, 1),), ago(60), 60.0, claimed=True))
    pool = {"name": "node-0", "generation": 1, "resourceSliceCount": 1}
    device = {"name": "gpu-0-mig-1g10gb-19-0", "attributes": {"type": {"string": "mig"}}}
    spec = {"driver": "gpu.nvidia.com", "nodeName": "node-0", "pool": pool, "devices": [device]}
    slice_ = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"}}
    slice_["spec"] = spec
    return Observation(
        NOW,
        "hand-made",
        nodes=nodes,
        pods=tuple(sorted(pods, key=lambda p: (p.namespace, p.name))),
        resource_slices=(("node-0", (slice_,)),),
    )


def full_state() -> State:
    return State(
        updated=ago(300),
        history=(
            Sample(ago(900), (("sim", "1g.10gb", 3, 2), ("sim", "gpu", 1, 1))),
            Sample(ago(600), (("sim", "1g.10gb", 3, 3),)),
            Sample(ago(300), (("sim", "1g.10gb", 4, 3), ("sim", "gpu", 1, 0))),
        ),
        last_change=ago(3000),
        changes=(("node-0", ago(7000)), ("node-1", ago(3000))),
        failures=1,
        last_failure=ago(900),
    )


def write(tmp_path: Path, **over: Any) -> Inputs:
    args: dict[str, Any] = {
        "policy": full_policy(),
        "current": full_current(),
        "obs": full_observation(),
        "state": full_state(),
    }
    args.update(over)
    return write_inputs(tmp_path / "snap", args["policy"], args["current"], args["obs"], args["state"])


# ------------------------------------------------------------------------------------------ round trip


def test_the_layout_written(tmp_path: Path) -> None:
    inputs = write(tmp_path)
    root = tmp_path / "snap"
    assert inputs == Inputs(
        root, root / "policy", root / "output", root / "cluster.json", root / "observed-demand.yaml", NOW
    )
    top = sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if "output/" not in str(p.relative_to(root))
    )
    assert top == [
        "cluster.json",
        "observed-demand.yaml",
        "output",
        "policy",
        "policy/fleet.yaml",
        "policy/partition.yaml",
        "policy/tenants.yaml",
        "policy/workloads.yaml",
    ]
    assert (root / "output" / "sim" / "migc-system" / "configmap-migc-assignment.yaml").is_file()
    assert os.listdir(tmp_path) == ["snap"]  # no temporary directory left beside it


def test_policy_reads_back_equal(tmp_path: Path) -> None:
    policy = full_policy()
    inputs = write(tmp_path, policy=policy)
    into = Collector()
    back = collect_policy([inputs.policy], into, CATALOG)
    assert back is not None and not into.has_errors()
    assert back.source_files == tuple(sorted(str(p) for p in inputs.policy.glob("*.yaml")))
    assert replace(back, source_files=()) == policy
    assert first_difference(policy, replace(back, source_files=()), "policy") is None


def test_a_node_count_of_zero_reads_back_as_the_named_nodes(tmp_path: Path) -> None:
    """solver_static builds its NodePool without a node_count; the loader resolves it from the names."""
    policy = full_policy()
    pool = replace(policy.clusters[0].pools[0], node_count=0)
    policy = replace(policy, clusters=(replace(policy.clusters[0], pools=(pool,)),))
    inputs = write(tmp_path, policy=policy)
    back = collect_policy([inputs.policy], Collector(), CATALOG)
    assert back is not None and back.clusters[0].pools[0].node_count == 3


def test_current_reads_back_equal(tmp_path: Path) -> None:
    inputs = write(tmp_path)
    back, diags = read_current(inputs.output, full_policy())
    assert not diags
    assert back == replace(full_current(), backends=((("sim", "sim"), "dra-static"),))
    assert back.nodes == full_current().nodes


def test_nothing_deployed_is_an_empty_output(tmp_path: Path) -> None:
    inputs = write(tmp_path, current=CurrentState())
    assert list(inputs.output.iterdir()) == []
    assert read_current(inputs.output, full_policy()) == (CurrentState(), [])


def test_observation_reads_back_equal(tmp_path: Path) -> None:
    obs = full_observation()
    inputs = write(tmp_path, obs=obs)
    back = read_snapshots([inputs.cluster], obs.taken_at)
    assert back.warnings == ()
    assert back.nodes == obs.nodes
    assert back.pods == obs.pods
    items = json.loads(inputs.cluster.read_text())
    assert items["kind"] == "List" and [i["kind"] for i in items["items"]].count("Node") == 3
    urgent = next(i for i in items["items"] if i["metadata"]["name"] == "urgent")
    assert urgent["metadata"]["creationTimestamp"] == "2026-12-01T05:30:00Z"  # taken_at − pending_seconds
    assert urgent["metadata"]["annotations"]["migc.dev/max-wait-time"] == "900s"


def test_state_reads_back_equal(tmp_path: Path) -> None:
    state = full_state()
    inputs = write(tmp_path, state=state)
    back, diags = read_state(inputs.state, NOW, full_policy().partition)
    assert diags == []
    assert back == state


def test_a_state_never_updated_is_dated_at_the_observation(tmp_path: Path) -> None:
    inputs = write(tmp_path, state=replace(full_state(), updated=None))
    back, _ = read_state(inputs.state, NOW, full_policy().partition)
    assert back == replace(full_state(), updated=NOW)


def test_the_files_are_deterministic(tmp_path: Path) -> None:
    a = write_inputs(tmp_path / "a", full_policy(), full_current(), full_observation(), full_state())
    b = write_inputs(tmp_path / "b", full_policy(), full_current(), full_observation(), full_state())

    def files(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    assert files(a.root) == files(b.root)


# The hand-made objects above set every field of the observation and state types off its default
# somewhere, so the round trips above cover each; a field added to one of these types fails here
# until the objects (and so the round trip) carry it.
def _blank(value: Any) -> bool:
    return (
        value is None or value is False or value in ((), "") or (type(value) in (int, float) and value == 0)
    )


def _set_somewhere(objects: list[Any], kind: type) -> set[str]:
    """The fields of ``kind`` that some object of ``objects`` sets off its default (a field without
    a default: to something other than None, 0, False or empty)."""
    out: set[str] = set()
    for obj in objects:
        for f in dataclasses.fields(kind):
            value = getattr(obj, f.name)
            if f.default is not dataclasses.MISSING:
                off = value != f.default
            elif f.default_factory is not dataclasses.MISSING:
                off = value != f.default_factory()
            else:
                off = not _blank(value)
            if off:
                out.add(f.name)
    return out


def test_the_round_trips_cover_every_field_of_the_cluster_and_state_types() -> None:
    obs, state, current = full_observation(), full_state(), full_current()
    cases: list[tuple[type, list[Any], set[str]]] = [
        (Observation, [obs], {"source", "warnings"}),  # the reader's own
        (ObservedNode, list(obs.nodes), set()),
        (ObservedPod, list(obs.pods), set()),
        (Rollout, [n.rollout for n in obs.nodes], set()),
        (State, [state], {"notes"}),  # not compared: never written, never read
        (Sample, list(state.history), set()),
        (CurrentState, [current], {"hami", "backends"}),  # refused; () reads back as the pool's backend
        (GpuLayout, [g for _, layout in current.nodes for g in layout], set()),
    ]
    for kind, objects, aside in cases:
        every = {f.name for f in dataclasses.fields(kind)}
        assert _set_somewhere(objects, kind) | aside == every, kind.__name__


# ---------------------------------------------------------------------------------------- refusals


POLICY_TYPES: tuple[type, ...] = (
    Policy,
    Cluster,
    NodePool,
    Tenant,
    Workload,
    Need,
    PartitionPolicy,
    PriorityTier,
    Rule,
    RuleCondition,
)

# Every compared field the writer neither writes nor derives, with a value off its default.
REFUSED: dict[tuple[type, str], Any] = {
    (NodePool, "node_selector"): (("pool", "sim"),),
    (NodePool, "maintenance_windows"): (MaintenanceWindow(("Mon",), "01:00", "02:00"),),
    (NodePool, "reserve_whole_gpus"): 1,
    (NodePool, "reserve_whole_nodes"): 1,
    (NodePool, "sharing"): Sharing("time-slicing", 2),
    (NodePool, "labels"): (("team", "a"),),
    (NodePool, "dra_mig"): "dynamic",
    (NodePool, "mig_mode_enabled"): True,
    (Tenant, "guaranteed"): Quota(gpus=1),
    (Tenant, "burst"): Quota(profiles=(("1g.10gb", 2),)),
    (Tenant, "rewrite_gpu_requests"): True,
    (Workload, "target"): Target("apps/v1", "Deployment", "x", "sim"),
    (Workload, "spread"): Spread(min_nodes=2),
    (Need, "gpu_memory_gb"): 10.0,
    (Need, "compute_slices"): 1,
    (Need, "hami"): HamiNeed(memory_mib=1024),
    (PriorityTier, "spread"): Spread(min_nodes=2),
}


def test_every_policy_field_is_written_derived_or_refused() -> None:
    """A field added to a policy type fails here until the writer writes it or the table refuses it."""
    for kind in POLICY_TYPES:
        compared = {f.name for f in dataclasses.fields(kind) if f.compare}
        placed = WRITTEN.get(kind, frozenset()) | DERIVED.get(kind, frozenset())
        refused = {name for k, name in REFUSED if k is kind}
        assert placed.isdisjoint(refused), kind.__name__
        assert placed | refused == compared, kind.__name__


def test_the_policy_round_trip_sets_every_written_field_off_its_default() -> None:
    """So test_policy_reads_back_equal proves each written field is written, not left at a default
    the loader would have produced anyway (``mig`` is derived from the model; ``source_files`` set
    by the loader)."""
    policy = full_policy()
    part = policy.partition
    objects: dict[type, list[Any]] = {
        Policy: [policy],
        Cluster: list(policy.clusters),
        NodePool: [p for c in policy.clusters for p in c.pools],
        Tenant: list(policy.tenants),
        Workload: list(policy.workloads),
        Need: [w.need for w in policy.workloads],
        PartitionPolicy: [part],
        PriorityTier: list(part.tiers),
        Rule: list(part.rules),
        RuleCondition: [r.when for r in part.rules],
    }
    assert set(objects) == set(POLICY_TYPES)
    for kind, objs in objects.items():
        placed = WRITTEN.get(kind, frozenset()) | DERIVED.get(kind, frozenset())
        assert placed - _set_somewhere(objs, kind) <= {"mig", "source_files"}, kind.__name__


def _replace_first(policy: Policy, kind: type, change: Callable[[Any], Any]) -> Policy:
    """``policy`` with the first object of ``kind`` in it changed."""
    c, pool, part = policy.clusters[0], policy.clusters[0].pools[0], policy.partition
    if kind is NodePool:
        return replace(policy, clusters=(replace(c, pools=(change(pool),)),))
    if kind is Tenant:
        return replace(policy, tenants=(change(policy.tenants[0]), *policy.tenants[1:]))
    if kind is Workload:
        return replace(policy, workloads=(change(policy.workloads[0]), *policy.workloads[1:]))
    if kind is Need:
        w = policy.workloads[2]
        return replace(
            policy, workloads=(*policy.workloads[:2], replace(w, need=change(w.need)), *policy.workloads[3:])
        )
    if kind is PriorityTier:
        return replace(policy, partition=replace(part, tiers=(change(part.tiers[0]), *part.tiers[1:])))
    raise AssertionError(kind)


def _by_name(key: tuple[type, str]) -> tuple[str, str]:
    return key[0].__name__, key[1]


REFUSED_KEYS: list[tuple[type, str]] = sorted(REFUSED, key=_by_name)


@pytest.mark.parametrize(("kind", "name"), REFUSED_KEYS)
def test_an_unwritten_field_is_refused_by_name(tmp_path: Path, kind: type, name: str) -> None:
    policy = _replace_first(full_policy(), kind, lambda obj: replace(obj, **{name: REFUSED[kind, name]}))
    with pytest.raises(SnapshotRefused, match=rf"\b{kind.__name__}\.{name}\b"):
        write(tmp_path, policy=policy)
    assert not (tmp_path / "snap").exists()
    assert os.listdir(tmp_path) == []


def test_a_policy_that_does_not_validate_is_refused(tmp_path: Path) -> None:
    policy = replace(full_policy(), workloads=(replace(full_policy().workloads[0], tenant="nobody"),))
    with pytest.raises(SnapshotRefused, match="the policy does not read back"):
        write(tmp_path, policy=policy)


def test_a_derived_field_that_disagrees_is_refused(tmp_path: Path) -> None:
    """The pool's price is the Fleet's pricing of its model: another price cannot be written."""
    pool = replace(full_policy().clusters[0].pools[0], price_per_gpu_hour=9.0)
    policy = _replace_first(full_policy(), NodePool, lambda _: pool)
    with pytest.raises(
        SnapshotRefused, match=r"clusters\[0\]\.pools\[0\]\.price_per_gpu_hour: 9\.0 is read back as 3\.5"
    ):
        write(tmp_path, policy=policy)


def _pods(change: Callable[[ObservedPod], ObservedPod], name: str = "urgent") -> Observation:
    obs = full_observation()
    return replace(obs, pods=tuple(change(p) if p.name == name else p for p in obs.pods))


@pytest.mark.parametrize(
    ("obs", "message"),
    [
        (_pods(lambda p: replace(p, created=ago(1000))), "needs created = taken_at − pending_seconds"),
        (_pods(lambda p: replace(p, created=None)), "needs created = taken_at − pending_seconds"),
        (_pods(lambda p: replace(p, pending_seconds=1800.5, created=None)), "not a whole number"),
        (_pods(lambda p: replace(p, pending_seconds=30.0), "whole"), r"obs\.pods\[\d\]\.pending_seconds"),
        (_pods(lambda p: replace(p, started=ago(10).replace(microsecond=5))), "only whole seconds"),
        (
            _pods(
                lambda p: replace(
                    p, created=p.created.replace(tzinfo=None) if p.created else None, pending_seconds=None
                ),
                "whole",
            ),
            "zone-aware",
        ),
        (_pods(lambda p: replace(p, requests=(("nvidia.com/mig-9g.99gb", 1),))), "MIGC402"),
        (
            _pods(lambda p: replace(p, max_wait_seconds=0)),
            "MIGC401 pod sim/urgent: migc.dev/max-wait-time=.0s. is not a duration",
        ),
        (_pods(lambda p: replace(p, phase="Succeeded")), "obs.pods"),
        (_pods(lambda p: replace(p, profile_preference=("fast",))), "MIGC401"),
        (replace(full_observation(), pods=tuple(reversed(full_observation().pods))), "obs.pods"),
        (
            replace(full_observation(), nodes=(replace(full_observation().nodes[0], mig_config="other"),)),
            "label nvidia.com/mig.config is 'cfg-a' but the node's field says 'other'",
        ),
        (
            replace(
                full_observation(), nodes=(replace(full_observation().nodes[0], allocatable=((GPU, 0),)),)
            ),
            r"allocatable: \(\('nvidia.com/gpu', 0\),\) is read back as \(\)",
        ),
    ],
)
def test_an_observation_that_would_not_read_back_is_refused(
    tmp_path: Path, obs: Observation, message: str
) -> None:
    with pytest.raises(SnapshotRefused, match=message):
        write(tmp_path, obs=obs)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    ("state", "message"),
    [
        # the newest sample older than three intervals: the reader drops the history (MIGC421)
        (replace(full_state(), history=(Sample(ago(5000), (("sim", "1g.10gb", 1, 1),)),)), "MIGC421"),
        (replace(full_state(), changes=(("node-1", ago(3000)), ("node-0", ago(7000)))), r"state\.changes"),
        (replace(full_state(), changes=(("node-0", ago(100_000)),)), r"state\.changes"),  # over a day old
        (replace(full_state(), history=(Sample(ago(60), (("Sim!", "1g.10gb", 1, 0),)),)), "schema refuses"),
        (replace(full_state(), updated=ago(1).replace(microsecond=1)), "only whole seconds"),
    ],
)
def test_a_state_that_would_not_read_back_is_refused(tmp_path: Path, state: State, message: str) -> None:
    with pytest.raises(SnapshotRefused, match=message):
        write(tmp_path, state=state)


@pytest.mark.parametrize(
    ("current", "message"),
    [
        (CurrentState(nodes=((("sim", "sim", "node-9"), (L7, L7)),)), "no node of the policy's pools"),
        (CurrentState(nodes=((("sim", "sim", "node-0"), ()),)), "has no GPU layouts"),
        (CurrentState(hami=((("sim", "sim", "node-0", 0, "w"), 1),)), "HAMi shares"),
        (replace(full_current(), backends=((("sim", "sim"), "device-plugin"),)), r"current\.backends"),
    ],
)
def test_deployed_layouts_that_would_not_read_back_are_refused(
    tmp_path: Path, current: CurrentState, message: str
) -> None:
    with pytest.raises(SnapshotRefused, match=message):
        write(tmp_path, current=current)
    assert os.listdir(tmp_path) == []


def test_a_destination_that_is_not_new_or_empty_is_refused(tmp_path: Path) -> None:
    dest = tmp_path / "snap"
    dest.mkdir()
    (dest / "keep.txt").write_text("mine")
    with pytest.raises(SnapshotRefused, match="is not empty"):
        write(tmp_path)
    assert os.listdir(dest) == ["keep.txt"]
    (dest / "keep.txt").unlink()
    os.symlink(dest, tmp_path / "link")
    with pytest.raises(SnapshotRefused, match="symbolic link"):
        write_inputs(tmp_path / "link", full_policy(), full_current(), full_observation(), full_state())
    assert os.listdir(dest) == []
    (tmp_path / "file").write_text("")
    with pytest.raises(SnapshotRefused, match="not a directory"):
        write_inputs(tmp_path / "file", full_policy(), full_current(), full_observation(), full_state())
    assert write(tmp_path).root == dest  # an empty directory is used
    assert sorted(os.listdir(tmp_path)) == ["file", "link", "snap"]


# ------------------------------------------------------------------------------------------ the CLI


def cli_case(blocked: bool) -> tuple[Policy, CurrentState, Observation, State]:
    """Two 2-GPU A100 nodes: node-0 carries seven 1g.10gb (all running), node-1 two idle whole GPUs;
    eight 1g.10gb pods have waited an hour through three samples. Carving node-1 evicts nothing, so
    a change is proposed; ``blocked``: node-1 changed 20 minutes ago, and minDwell holds it back."""
    pool = NodePool(
        name="sim",
        cluster="sim",
        gpu_product=PRODUCT,
        gpu_model=MODEL.model,
        gpus_per_node=2,
        node_names=("node-0", "node-1"),
        node_count=2,
    )
    part = PartitionPolicy(mode="dynamic")
    tier = part.tiers[-1].name
    policy = Policy(
        clusters=(Cluster("sim", (pool,)),),
        tenants=(Tenant("sim", ("sim",), tier),),
        workloads=(
            Workload("gpu-1", "sim", 1, Need(gpus=1), "exclusive", tier, "sim"),
            Workload("mig-1g-10gb", "sim", 7, Need(profiles=("1g.10gb",)), "hardware", tier, "sim"),
        ),
        partition=part,
        fleet_name="replay",
    )
    current = CurrentState(
        nodes=((("sim", "sim", "node-0"), (L7, WHOLE)), (("sim", "sim", "node-1"), (WHOLE, WHOLE)))
    )
    nodes = (
        _node("node-0", ((GPU, 1), (MIG, 7)), "cfg-a", Rollout("Idle")),
        _node("node-1", ((GPU, 2),), "all-disabled", Rollout("Idle")),
    )
    pods = [
        ObservedPod("sim", f"run-{i}", "Running", "node-0", ((MIG, 1),), ago(7200), None, started=ago(7000))
        for i in range(7)
    ]
    pods += [
        ObservedPod("sim", f"wait-{i}", "Pending", None, ((MIG, 1),), ago(3600), 3600.0) for i in range(8)
    ]
    obs = Observation(NOW, "replay", nodes=nodes, pods=tuple(sorted(pods, key=lambda p: p.name)))
    history = tuple(Sample(ago(s), (("sim", "1g.10gb", 7, 8),)) for s in (1800, 1200, 600))
    state = State(updated=ago(600), history=history)
    if blocked:
        state = replace(state, changes=(("node-1", ago(1200)),), last_change=ago(1200))
    return policy, current, obs, state


@pytest.mark.parametrize(("blocked", "code"), [(False, ExitCode.DRIFT), (True, ExitCode.OK)])
def test_recommend_on_the_files_prints_the_decision_on_the_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], blocked: bool, code: int
) -> None:
    policy, current, obs, state = cli_case(blocked)
    rec = recommend(policy, CATALOG, current, obs, state, obs.taken_at)
    assert rec.proposed_change is not blocked
    assert rec.replicas and rec.nodes  # the same change is weighed either way
    gates = {g.name: g.passed for g in rec.gates}
    assert gates["minDwell"] is not blocked and gates["disruption"]
    inputs = write_inputs(tmp_path / "snap", policy, current, obs, state)
    capsys.readouterr()
    assert main([*inputs.recommend_args(), "-o", "json"]) == code
    printed = capsys.readouterr().out
    assert printed == to_json(rec)
    assert json.loads(printed)["replicas"] == [{"workload": "mig-1g-10gb", "from": 7, "to": 15}]


def test_recommend_on_the_full_objects_prints_the_same_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every PartitionPolicy field off its default, a rule, a Failed node and one mid-rollout."""
    policy, current, obs, state = full_policy(), full_current(), full_observation(), full_state()
    rec = recommend(policy, CATALOG, current, obs, state, NOW)
    inputs = write_inputs(tmp_path / "snap", policy, current, obs, state)
    capsys.readouterr()
    code = main([*inputs.recommend_args(), "-o", "json"])
    assert code == (ExitCode.DRIFT if rec.proposed_change else ExitCode.OK)
    assert capsys.readouterr().out == to_json(rec)


def test_a_state_with_no_history_read_as_stale_is_the_same_state(tmp_path: Path) -> None:
    """The reader marks it stale (a note, not compared) and has no history to drop."""
    state = State(updated=ago(86_400), changes=(("node-0", ago(86_500)),), last_change=ago(86_500))
    inputs = write(tmp_path, state=state)
    back, diags = read_state(inputs.state, NOW, full_policy().partition)
    assert back == state and back.notes == ("stale",) and [d.code for d in diags] == ["MIGC421"]


def test_several_pools_of_several_models_read_back_equal(tmp_path: Path) -> None:
    h100 = CATALOG.by_product("NVIDIA-H100-80GB-HBM3")
    assert h100 is not None
    policy = full_policy()
    a100 = policy.clusters[0].pools[0]
    other = NodePool(
        name="hopper",
        cluster="sim",
        gpu_product="NVIDIA-H100-80GB-HBM3",
        gpu_model=h100.model,
        gpus_per_node=1,
        node_names=("node-h0",),
        node_count=1,
    )
    policy = replace(
        policy,
        clusters=(replace(policy.clusters[0], pools=(other, a100)),),
        workloads=(
            *policy.workloads,
            Workload(
                "mig-h100", "sim", 1, Need(profiles=("1g.10gb",)), "hardware", "bronze", "sim", ("hopper",)
            ),
        ),
    )
    h1 = GpuLayout.of({"1g.10gb": 7})
    current = replace(full_current(), nodes=(*full_current().nodes, (("sim", "hopper", "node-h0"), (h1,))))
    current = replace(current, nodes=tuple(sorted(current.nodes)))
    inputs = write(tmp_path, policy=policy, current=current)
    back = collect_policy([inputs.policy], Collector(), CATALOG)
    assert back is not None and replace(back, source_files=()) == policy
    read, diags = read_current(inputs.output, policy)
    assert not diags and read.nodes == current.nodes


def test_the_working_directory_when_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    inputs = write_inputs(Path("."), full_policy(), full_current(), full_observation(), full_state())
    assert inputs.root == tmp_path / "here" and inputs.state.is_file()
    assert sorted(os.listdir(tmp_path)) == ["here"]


def replay_shaped() -> tuple[Policy, CurrentState, Observation, State]:
    """The objects as the replay builds them for recommend (the lead's compiler/simulate/decision.py
    shape): a NodePool without node_count, nodes that show only the controller's phase (no labels,
    no allocatable), every pod in one namespace with whole-second times, the first evaluation's
    empty state. Four 1-GPU nodes: node-0 1g.10gb x7 (all running), node-1 draining, node-2 Failed,
    node-3 a whole GPU one pod of nvidia.com/gpu: 1 runs on; pending 1g and 2-GPU pods."""
    part = PartitionPolicy(mode="dynamic", stabilization_seconds=60, min_dwell_seconds=600)
    policy = rd.replay_policy(MODEL, 4, 1, 1, part, {"gpu": 1, "1g.10gb": 14})
    current = CurrentState(
        nodes=tuple((("sim", "sim", f"node-{n}"), (lay,)) for n, lay in enumerate((L7, L7, MIXED, WHOLE)))
    )

    def bare(name: str, rollout: Rollout) -> ObservedNode:
        return ObservedNode(name, (), (), None, None, None, None, None, rollout)

    nodes = (
        bare("node-0", Rollout("Idle")),
        bare("node-1", Rollout("Draining")),
        bare("node-2", Rollout("Failed", since=ago(400))),
        bare("node-3", Rollout("Idle")),
    )
    pods = [
        ObservedPod(
            "sim", f"openb-pod-{i:04d}", "Running", "node-0", ((MIG, 1),), ago(900), None, started=ago(800)
        )
        for i in range(7)
    ]
    pods.append(
        ObservedPod(
            "sim", "openb-pod-0100", "Running", "node-3", ((GPU, 1),), ago(500), None, started=ago(450)
        )
    )
    pods += [
        ObservedPod(
            "sim",
            f"openb-pod-02{i:02d}",
            "Pending",
            None,
            ((MIG, 1),),
            ago(1200),
            1200.0,
            max_wait_seconds=600,
        )
        for i in range(5)
    ]
    pods.append(ObservedPod("sim", "openb-pod-0300", "Pending", None, ((GPU, 2),), ago(60), 60.0))
    obs = Observation(NOW, "replay", nodes=nodes, pods=tuple(sorted(pods, key=lambda p: p.name)))
    return policy, current, obs, State()


def test_recommend_on_a_replay_shaped_snapshot_prints_the_decision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy, current, obs, state = replay_shaped()
    rec = recommend(policy, CATALOG, current, obs, state, NOW)
    inputs = write_inputs(tmp_path / "snap", policy, current, obs, state)
    capsys.readouterr()
    code = main([*inputs.recommend_args(), "-o", "json"])
    assert code == (ExitCode.DRIFT if rec.proposed_change else ExitCode.OK)
    assert capsys.readouterr().out == to_json(rec)
    assert not rec.proposed_change and "rollout" in {x.name for x in rec.gates if not x.passed}
    # the next evaluation starts from the state this one returned, as the replay's does; node-1's
    # rollout is over, and now the change is proposed
    done = tuple(replace(n, rollout=Rollout("Idle")) if n.name == "node-1" else n for n in obs.nodes)
    later = replace(obs, taken_at=NOW + dt.timedelta(seconds=900), nodes=done)
    later = replace(
        later,
        pods=tuple(
            replace(p, pending_seconds=p.pending_seconds + 900) if p.pending_seconds is not None else p
            for p in later.pods
        ),
    )
    rec2 = recommend(policy, CATALOG, current, later, rec.state, later.taken_at)
    assert rec2.proposed_change
    again = write_inputs(tmp_path / "snap2", policy, current, later, rec.state)
    capsys.readouterr()
    assert main([*again.recommend_args(), "-o", "json"]) == (
        ExitCode.DRIFT if rec2.proposed_change else ExitCode.OK
    )
    assert capsys.readouterr().out == to_json(rec2)


def test_several_clusters_read_back_equal(tmp_path: Path) -> None:
    policy = full_policy()
    a100 = policy.clusters[0].pools[0]
    east = replace(a100, cluster="east", node_names=("east-0",), node_count=1, max_unavailable=1)
    policy = replace(
        policy,
        clusters=(replace(policy.clusters[0], name="east", pools=(east,)), policy.clusters[0]),
        workloads=(
            *policy.workloads,
            Workload("mig-east", "sim", 3, Need(profiles=("1g.10gb",)), "hardware", "bronze", "east"),
        ),
    )
    current = replace(full_current(), nodes=((("east", "sim", "east-0"), (L7, WHOLE)), *full_current().nodes))
    inputs = write(tmp_path, policy=policy, current=current)
    assert sorted(os.listdir(inputs.output)) == ["east", "sim"]
    back = collect_policy([inputs.policy], Collector(), CATALOG)
    assert back is not None and replace(back, source_files=()) == policy
    read, diags = read_current(inputs.output, policy)
    assert not diags and read.nodes == current.nodes
