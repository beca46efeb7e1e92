"""The recommend engine: rules' ``pools`` (whose GPUs a rule's headroom lands on) and the evidence."""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statusfleet import pod

from compiler.catalog import load_catalog
from compiler.model import CurrentState, Policy, Rule, RuleCondition
from compiler.observe import read_snapshots
from compiler.pipeline import load_and_validate
from compiler.recommend.engine import RuleEffect, capacity, recommend, rule_target, wanted_replicas
from compiler.recommend.history import sample, sized
from compiler.recommend.state import State
from compiler.schemas import kind_schemas
from compiler.solve import solve

NOW = dt.datetime(2026, 12, 1, 6, 0, tzinfo=dt.UTC)
CATALOG = load_catalog()

FLEET = """apiVersion: migc.dev/v1alpha1
kind: Fleet
metadata: {name: f}
spec:
  clusters:
    - name: east
      nodePools:
        - {name: a100, gpuProduct: NVIDIA-A100-SXM4-80GB, gpusPerNode: 2, nodes: {names: [node-a]}}
        - {name: h100, gpuProduct: NVIDIA-H100-80GB-HBM3, gpusPerNode: 2, nodes: {names: [node-h]}}
---
apiVersion: migc.dev/v1alpha1
kind: Tenant
metadata: {name: search}
spec: {namespaces: [search]}
---
apiVersion: migc.dev/v1alpha1
kind: Workload
metadata: {name: bert}
spec: {tenant: search, replicas: 2, need: {profile: 1g.10gb}}
"""
PINNED = """---
apiVersion: migc.dev/v1alpha1
kind: Workload
metadata: {name: bert-a100}
spec: {tenant: search, replicas: 1, pools: [a100], need: {profile: 1g.10gb}}
"""
PARTITION = """---
apiVersion: migc.dev/v1alpha1
kind: PartitionPolicy
metadata: {name: p}
spec:
  mode: dynamic
{spec}  rules:
    - name: small
      when: {pendingPodsGreaterThan: 2}
      prefer: {maximize: 1g.10gb}
{pools}"""


def policy(tmp_path: Path, *, pinned: bool, pools: str = "", spec: str = "") -> Policy:
    scope = f"      pools: {pools}\n" if pools else ""
    part = PARTITION.replace("{pools}", scope).replace("{spec}", spec or "  stabilizationWindow: 1m\n")
    text = FLEET + (PINNED if pinned else "") + part
    (tmp_path / "policy.yaml").write_text(text, encoding="utf-8")
    result, diags = load_and_validate([str(tmp_path / "policy.yaml")])
    assert result is not None, diags
    return result


def rule(pools: tuple[str, ...] = ()) -> Rule:
    return Rule("small", RuleCondition(pending_pods_greater_than=2), "1g.10gb", pools)


DEMAND = {("search", "1g.10gb"): [2, 4]}  # 2 running + 4 pending instances


def test_rule_without_pools_grows_the_first_workload(tmp_path: Path) -> None:
    p = policy(tmp_path, pinned=True)
    wanted, diags, effects = wanted_replicas(p, CATALOG, DEMAND, [(rule(), {"search": 4})])
    # observed 6 vs declared 3: +3 on bert (first by name), and the rule's 4 on bert as well
    assert wanted == {"bert": 2 + 3 + 4}
    assert diags == [] and effects == [RuleEffect("small", "search", "1g.10gb", "bert", 4)]


def test_rule_headroom_is_per_tenant_even_without_demand_of_the_profile(tmp_path: Path) -> None:
    (tmp_path / "more.yaml").write_text(
        """apiVersion: migc.dev/v1alpha1
kind: Tenant
metadata: {name: ads}
spec: {namespaces: [ads]}
---
apiVersion: migc.dev/v1alpha1
kind: Workload
metadata: {name: ads-small}
spec: {tenant: ads, replicas: 1, need: {profile: 1g.10gb}}
""",
        encoding="utf-8",
    )
    policy(tmp_path, pinned=False)  # writes policy.yaml
    more, diags = load_and_validate([str(tmp_path / "policy.yaml"), str(tmp_path / "more.yaml")])
    assert more is not None, diags
    # search: its 4 matched pending pods on top of its demand; ads: no demand of 1g.10gb observed,
    # 2 matched pending pods (of another profile) -> 2 more; nothing is counted twice across tenants
    demand = {("search", "1g.10gb"): [2, 4], ("ads", "3g.40gb"): [0, 2]}
    wanted, diags, effects = wanted_replicas(more, CATALOG, demand, [(rule(), {"search": 4, "ads": 2})])
    assert wanted == {"bert": 2 + 4 + 4, "ads-small": 1 + 2}
    assert [d.code for d in diags] == ["MIGC424"]  # ads' 3g.40gb demand: no Workload of ads asks for it
    # without ads-small, ads' headroom has nowhere to go
    tenant_only = (tmp_path / "more.yaml").read_text(encoding="utf-8").split("---")[0]
    (tmp_path / "more.yaml").write_text(tenant_only, encoding="utf-8")
    less, _ = load_and_validate([str(tmp_path / "policy.yaml"), str(tmp_path / "more.yaml")])
    assert less is not None
    wanted, diags, _ = wanted_replicas(less, CATALOG, demand, [(rule(), {"search": 4, "ads": 2})])
    assert wanted == {"bert": 10}
    assert [d.message for d in diags if d.code == "MIGC428"] == [
        "rule small: no Workload of tenant ads asks for 1g.10gb, so its headroom of 2 x 1g.10gb is not "
        "proposed"
    ]
    assert effects == [
        RuleEffect("small", "ads", "1g.10gb", "ads-small", 2),
        RuleEffect("small", "search", "1g.10gb", "bert", 4),
    ]


def test_rule_with_pools_grows_only_a_workload_confined_to_them(tmp_path: Path) -> None:
    p = policy(tmp_path, pinned=True, pools="[a100]")
    wanted, diags, effects = wanted_replicas(p, CATALOG, DEMAND, [(p.partition.rules[0], {"search": 4})])
    assert wanted == {"bert": 5, "bert-a100": 1 + 4}  # bert may land on h100: the headroom goes to bert-a100
    assert diags == [] and effects == [RuleEffect("small", "search", "1g.10gb", "bert-a100", 4)]


def test_rule_with_pools_and_no_workload_there_adds_nothing_and_says_so(tmp_path: Path) -> None:
    p = policy(tmp_path, pinned=True, pools="[h100]")
    wanted, diags, effects = wanted_replicas(p, CATALOG, DEMAND, [(p.partition.rules[0], {"search": 4})])
    assert wanted == {"bert": 5}  # the observed demand only
    assert [d.code for d in diags] == ["MIGC428"]
    assert "no Workload of tenant search asking for 1g.10gb is confined to pools h100" in diags[0].message
    assert effects == [RuleEffect("small", "search", "1g.10gb", "", 0)]


def test_a_workload_without_pools_is_confined_when_only_the_rule_pools_have_the_profile(
    tmp_path: Path,
) -> None:
    p = policy(tmp_path, pinned=False)
    group = [w for w in p.workloads if w.name == "bert"]
    # both pools carve 1g.10gb: bert may land on either
    assert rule_target(p, CATALOG, group, rule(("a100",))) is None
    assert rule_target(p, CATALOG, group, rule(("a100", "h100"))) == group[0]
    assert rule_target(p, CATALOG, group, rule()) == group[0]


def snapshot(tmp_path: Path) -> Path:
    pods = [pod(f"run-{i}", "search", "nvidia.com/mig-1g.10gb", node="node-a") for i in range(2)]
    pods += [pod(f"wait-{i}", "search", "nvidia.com/mig-1g.10gb") for i in range(4)]
    path = tmp_path / "snap.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("pools", "replicas"),
    [("[a100]", {"bert": 5, "bert-a100": 5}), ("", {"bert": 9})],  # headroom 4 on bert-a100, or on bert
)
def test_the_proposal_carves_the_rule_headroom_on_the_rule_pools(
    tmp_path: Path, pools: str, replicas: dict[str, int]
) -> None:
    p = policy(tmp_path, pinned=True, pools=pools)
    obs = read_snapshots((str(snapshot(tmp_path)),), NOW)
    # the same demand two minutes ago: the 1m window is covered, so the replicas follow it
    watched = State(history=(sample(NOW - dt.timedelta(minutes=2), DEMAND),))
    rec = recommend(p, CATALOG, CurrentState(), obs, watched, NOW, time_limit_s=30)
    assert rec.rules == ("small",)
    assert {r.workload: r.new for r in rec.replicas} == replicas
    # solved as proposed: the a100 pool carries every replica of the Workload confined to it
    proposed = replace(
        p, workloads=tuple(replace(w, replicas=replicas.get(w.name, w.replicas)) for w in p.workloads)
    )
    solution = solve(proposed, CATALOG, CurrentState(), time_limit_s=30)
    served = {
        (pool.pool, d.workload): d.served
        for pool in solution.pools
        for d in pool.demand
        if d.resource == "1g.10gb"
    }
    assert served.get(("a100", "bert-a100"), 0) == replicas.get("bert-a100", 1)
    assert served.get(("h100", "bert-a100"), 0) == 0
    assert capacity(solution, "target")["1g.10gb"] >= sum(
        replicas.get(w.name, w.replicas) for w in p.workloads
    )


DOCS = Path(__file__).resolve().parents[4] / "docs" / "recommend.md"


def test_every_partition_policy_field_has_a_row_saying_where_it_acts() -> None:
    """docs/recommend.md's field table covers every field of the schema, and the tests it cites exist."""
    spec = kind_schemas()["PartitionPolicy"]["properties"]["spec"]["properties"]
    text = DOCS.read_text(encoding="utf-8")
    table = text[text.index("## Where every PartitionPolicy field takes effect") :]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    firsts = " ".join(row.split("|")[1] for row in rows)
    rule = spec["rules"]["items"]["properties"]
    wanted = [f"`{k}`" for k in spec if k != "rules"]  # rules: one row per rule field
    wanted += [f"`rules[].{k}" for k in rule]  # `rules[].when` (...), `rules[].prefer.maximize`
    wanted += [f"`{k}`" for k in (*rule["when"]["properties"], *spec["backoff"]["properties"])]
    for name in wanted:
        assert name in firsts, f"{name} has no row in {DOCS.name}"
    root = DOCS.parents[1]
    for ref in re.findall(r"(tests/[\w/]+\.py)::(\w+)", table):
        assert re.search(rf"^def {ref[1]}", (root / ref[0]).read_text(encoding="utf-8"), re.MULTILINE), ref


# Each gate wired into recommend() (tests/unit/compiler/recommend/test_gates.py tests the gate functions
# alone): the same observation passes every gate, and each policy field or remembered fact blocks its own.

LATER = NOW + dt.timedelta(minutes=20)
HOUR_AGO = NOW - dt.timedelta(hours=1)


def _two_runs(
    policy_: Policy, tmp_path: Path, state: State, disruption: str = "expected"
) -> tuple[bool, dict[str, bool]]:
    obs = read_snapshots((str(snapshot(tmp_path)),), NOW)
    first = recommend(
        policy_, CATALOG, CurrentState(), obs, state, NOW, time_limit_s=30, disruption=disruption
    )
    assert not first.proposed_change  # first seen now: the window holds it back
    second = recommend(
        policy_, CATALOG, CurrentState(), obs, first.state, LATER, time_limit_s=30, disruption=disruption
    )
    return second.proposed_change, {gate.name: gate.passed for gate in second.gates}


def test_the_gain_threshold_blocks_without_the_disruption_rule(tmp_path: Path) -> None:
    p = policy(tmp_path, pinned=False, spec="  stabilizationWindow: 1m\n  reconfigurationThreshold: 100\n")
    proposed, gates = _two_runs(p, tmp_path, State(), disruption="off")
    assert not proposed and "disruption" not in gates
    assert [name for name, ok in gates.items() if not ok] == ["threshold"]


@pytest.mark.parametrize(
    ("field", "state", "blocked"),
    [
        ("", State(), None),
        # with the disruption rule (default) the threshold asks the GPU-time saved to be 2x what the
        # change destroys; the gain threshold itself: test_the_gain_threshold_blocks_without_...
        ("  reconfigurationThreshold: 100\n", State(), "disruption"),
        ("  stabilizationWindow: 1h\n", State(), "stabilizationWindow"),
        ("  dailyChangeBudget: 2\n", State(changes=(("x", HOUR_AGO),)), "dailyChangeBudget"),
        ("  minDwell: 2h\n", State(changes=(("node-a", HOUR_AGO),)), "minDwell"),
        ("  backoff: {initial: 1h}\n", State(failures=1, last_failure=NOW), "backoff"),
        ("  backoff: {initial: 10m}\n", State(failures=1, last_failure=NOW), None),  # over by LATER
    ],
)
def test_each_gate_blocks_the_proposal_in_recommend(
    tmp_path: Path, field: str, state: State, blocked: str | None
) -> None:
    window = "" if "stabilizationWindow" in field else "  stabilizationWindow: 1m\n"
    p = policy(tmp_path, pinned=False, spec=window + field)
    proposed, gates = _two_runs(p, tmp_path, state)
    assert proposed == (blocked is None)
    assert [name for name, ok in gates.items() if not ok] == ([blocked] if blocked else [])


@pytest.mark.parametrize(
    ("need", "key"),
    [
        ("{profile: 1g.10gb}", ("search", "1g.10gb")),
        ("{profiles: [2g.20gb, 1g.10gb]}", ("search", "2g.20gb")),
        # compile resolves a memory need to the smallest fitting profile of the first pool (a100)
        ("{gpuMemoryGB: 9}", ("search", "1g.10gb")),
        ("{gpuMemoryGB: 15}", ("search", "1g.20gb")),
        ("{computeSlices: 3}", ("search", "3g.40gb")),
        ("{gpus: 1}", ("search", "gpu")),
    ],
)
def test_every_need_form_compile_accepts_is_sized(tmp_path: Path, need: str, key: tuple[str, str]) -> None:
    """Issue 25 item 2: a Workload written as need.gpuMemoryGB (or any other form compile accepts)
    is sized by the pods asking for the profile compile resolves it to, never left at 0."""
    text = FLEET.replace("need: {profile: 1g.10gb}", f"need: {need}")
    (tmp_path / "policy.yaml").write_text(text, encoding="utf-8")
    pol, diags = load_and_validate([str(tmp_path / "policy.yaml")])
    assert pol is not None, diags
    served = {d.resource for p in solve(pol, CATALOG).pools for d in p.demand if d.workload == "bert"}
    assert served == {key[1]}, served  # the profile compile serves it with
    wanted, diags, _ = wanted_replicas(pol, CATALOG, {key: [2, 4]})
    assert wanted == {"bert": 6} and [d.code for d in diags] == []


BIG = """---
apiVersion: migc.dev/v1alpha1
kind: Workload
metadata: {name: big}
spec: {tenant: search, replicas: 4, need: {profile: 7g.80gb}}
"""


def test_a_remembered_7g_peak_is_cut_to_the_room_the_pods_waiting_now_leave(tmp_path: Path) -> None:
    """compiler/recommend/history.py ``capped`` in recommend (``surplus="last"``, issue 22 item 3):
    the fleet has 4 GPUs (28 slices); 30 minutes ago 4 × 7g.80gb ran (the scaleDownWindow remembers
    them, and the Workload still declares 4); now nothing of them runs and 2 + 4 1g.10gb pods run
    and wait. The current demand takes 6 slices; only 3 × 7g fit in the 22 left, so the Workload is
    sized at 3, not kept at the remembered 4 against the pods that wait."""
    text = FLEET + BIG + PARTITION.replace("{pools}", "").replace("{spec}", "  stabilizationWindow: 1m\n")
    (tmp_path / "policy.yaml").write_text(text, encoding="utf-8")
    p, diags = load_and_validate([str(tmp_path / "policy.yaml")])
    assert p is not None, diags
    obs = read_snapshots((str(snapshot(tmp_path)),), NOW)
    history = (
        sample(NOW - dt.timedelta(minutes=30), {("search", "7g.80gb"): [4, 0]}),
        sample(NOW - dt.timedelta(minutes=2), DEMAND),
    )
    state = State(history=history)
    rec = recommend(p, CATALOG, CurrentState(), obs, state, NOW, time_limit_s=30, surplus="last")
    assert {r.workload: r.new for r in rec.replicas}.get("big") == 3
    # the default ("kept", bench/RESULTS.md Round 9): the Workload keeps its 4 declared replicas
    rec = recommend(p, CATALOG, CurrentState(), obs, state, NOW, time_limit_s=30)
    assert "big" not in {r.workload for r in rec.replicas}
    assert sized(4, None, True, 0, 0, (4, False)) == 4  # what "last" sizes before the cut
    for bad in ("keep", "busy"):  # "busy" needs the nodes' state: migc simulate's alone
        with pytest.raises(ValueError, match=f"surplus '{bad}'"):
            recommend(p, CATALOG, CurrentState(), obs, state, NOW, time_limit_s=30, surplus=bad)


def _replay_inputs(wait: int, *, phase: int = 0, budget: int = 0) -> tuple[Policy, CurrentState, object]:
    from compiler.model import PartitionPolicy
    from compiler.simulate import decision as rd

    a100 = CATALOG.by_product("NVIDIA-A100-SXM4-80GB")
    assert a100 is not None
    part = PartitionPolicy(mode="dynamic", daily_change_budget=budget)
    policy = rd.replay_policy(a100, 1, 8, 1, part, {"gpu": 0, "1g.10gb": 0})
    current = rd.current_state([{"1g.10gb": 7}] * 8, 8, "7g.80gb")
    start = int(NOW.timestamp())
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    obs = rd.observation(epoch, start, [(phase, None)], [], [rd.Waiting("w", "gpu", 1, wait, None)])
    return policy, current, obs


@pytest.mark.parametrize(
    ("wait", "phase", "changed_ago", "budget", "blocked_by"),
    [
        (60, 0, None, 0, "disruption"),  # 60 GPU-s at most < the cheapest change: 8 GPUs x 60 s x 1.2
        (86_400, 0, None, 0, None),  # a day's wait could beat it: the solve decides
        (86_400, 1, None, 0, "rollout"),  # a node still draining blocks every proposal
        (86_400, 0, 600, 0, "minDwell"),  # the only node changed 10 minutes ago
        (86_400, 0, 7200, 1, "dailyChangeBudget"),  # the day's one change is spent
        (86_400, 0, 7200, 2, None),  # one left: the solve decides
    ],
)
def test_held_before_solve_blocks_only_what_no_proposal_passes(
    wait: int, phase: int, changed_ago: int | None, budget: int, blocked_by: str | None
) -> None:
    """``recommend(lazy=True)`` skips the solve exactly when a gate holds every proposal back, and
    decides as the full evaluation does either way."""
    from compiler.observe import Observation

    policy, current, obs = _replay_inputs(wait, phase=phase, budget=budget)
    assert isinstance(obs, Observation)
    history = State()
    for k in range(3):  # a covered window: the pod was pending in every sample
        at = NOW - dt.timedelta(minutes=30 - 15 * k)
        history = recommend(policy, CATALOG, current, replace(obs, taken_at=at), history, at).state
    history = replace(history, changes=(), last_change=None)  # the samples only, no change made
    if changed_ago is not None:
        when = NOW - dt.timedelta(seconds=changed_ago)
        history = replace(history, changes=(("node-0", when),), last_change=when)
    lazy = recommend(policy, CATALOG, current, obs, history, NOW, lazy=True)
    full = recommend(policy, CATALOG, current, obs, history, NOW)
    assert lazy.proposed_change == full.proposed_change and lazy.state == full.state
    # the evidence before the solve is the full evaluation's too (it had none of it)
    before = ("demand", "replicas", "rules", "rule_effects", "window", "since", "covered", "keep")
    assert [getattr(lazy, k) for k in before] == [getattr(full, k) for k in before]
    solved = bool(lazy.current)
    assert solved == (blocked_by is None)
    if blocked_by is not None:
        assert [g.name for g in lazy.gates if not g.passed] == [blocked_by]
        assert not full.proposed_change
        assert blocked_by in [g.name for g in full.gates if not g.passed]
    else:
        assert full.proposed_change  # the cases the solve decides do propose: not vacuous


def test_a_node_change_younger_than_a_long_min_dwell_is_remembered(tmp_path: Path) -> None:
    """minDwell 48 h: a node changed 30 h ago may not change yet, at this evaluation and at the next
    one. The state written back (in memory, as migc simulate keeps it, and in the state file) kept
    only the last day's changes, so the next evaluation saw the node as never changed and passed
    minDwell a day early."""
    from compiler.model import PartitionPolicy
    from compiler.recommend.state import change_horizon, prepare_state, read_state

    policy, current, obs = _replay_inputs(86_400)
    from compiler.observe import Observation

    assert isinstance(obs, Observation)
    policy = replace(policy, partition=PartitionPolicy(mode="dynamic", min_dwell_seconds=2 * 86_400))
    history = State()
    for k in range(3):  # a covered window: the pod was pending in every sample
        at = NOW - dt.timedelta(minutes=30 - 15 * k)
        history = recommend(policy, CATALOG, current, replace(obs, taken_at=at), history, at).state
    when = NOW - dt.timedelta(hours=30)
    history = replace(history, changes=(("node-0", when),), last_change=when)
    first = recommend(policy, CATALOG, current, obs, history, NOW)
    assert not first.proposed_change
    assert [g.name for g in first.gates if not g.passed] == ["minDwell"]
    assert ("node-0", when) in first.state.changes  # in memory
    later = NOW + dt.timedelta(minutes=15)
    data, check, _ = prepare_state(
        tmp_path / "s.yaml", first.state, later, keep_seconds=change_horizon(policy.partition)
    )
    (tmp_path / "s.yaml").write_bytes(data)
    check(data)
    from_file, _ = read_state(tmp_path / "s.yaml", later, policy.partition)
    assert ("node-0", when) in from_file.changes  # and in the file
    for state in (first.state, from_file):
        nxt = recommend(policy, CATALOG, current, replace(obs, taken_at=later), state, later)
        assert not nxt.proposed_change
        assert "minDwell" in [g.name for g in nxt.gates if not g.passed]
    # a day's minDwell keeps the day's changes only, as before
    assert change_horizon(PartitionPolicy(min_dwell_seconds=3600)) == 86_400


# ---- benefit_bound: the pending GPU-time any proposal could end, before the solve ----------------

SLICES = {"1g.10gb": 1, "3g.40gb": 3, "gpu": 7}


def _best_benefit(
    waits: dict[str, list[float]], demand: dict[str, int], deployed: dict[str, int], gpus: int
) -> float:
    """The most :func:`pending_benefit` over every capacity the slices of ``gpus`` GPUs allow (at most 7
    per GPU; ``after`` per profile enumerated), i.e. over every proposal a solver could return."""
    import itertools

    from compiler.recommend.engine import pending_benefit

    names = sorted(SLICES)
    ranges = [range(7 * gpus // SLICES[p] + 1) for p in names]
    best = 0.0
    for after in itertools.product(*ranges):
        if sum(a * SLICES[p] for a, p in zip(after, names, strict=True)) <= 7 * gpus:
            got, _ = pending_benefit(waits, demand, deployed, dict(zip(names, after, strict=True)), SLICES)
            best = max(best, got)
    return best


waits_st = st.lists(st.integers(0, 5000), max_size=6).map(lambda w: sorted(map(float, w), reverse=True))


@settings(max_examples=150, deadline=None)
@given(
    waits=st.fixed_dictionaries({p: waits_st for p in SLICES}),
    running=st.fixed_dictionaries({p: st.integers(0, 4) for p in SLICES}),
    deployed=st.fixed_dictionaries({p: st.integers(0, 8) for p in SLICES}),
    gpus=st.integers(1, 2),
)
def test_benefit_bound_is_never_below_what_a_proposal_serves(
    waits: dict[str, list[float]], running: dict[str, int], deployed: dict[str, int], gpus: int
) -> None:
    """The bound recommend's lazy evaluation holds a proposal back by must be at least the benefit of
    every proposal the fleet's slices allow, or the replay (and ``migc recommend``) would skip a solve
    whose proposal passes the disruption rule."""
    from compiler.recommend.engine import benefit_bound

    demand = {p: running[p] + len(waits[p]) for p in SLICES}
    bound = benefit_bound(waits, demand, deployed, SLICES, gpus)
    assert bound >= _best_benefit(waits, demand, deployed, gpus) - 1e-6


def test_benefit_bound_counts_only_what_the_slices_can_serve() -> None:
    """One GPU running 7 x 1g.10gb (all deployed), 10 whole-GPU pods waiting 1,000 s each: serving every
    one would end 10,000 GPU-s, but one GPU serves one of them, and only by giving up the 1g instances
    (the bound does not count that loss; the disruption rule does): at most 1,000 GPU-s. Nothing
    waiting: 0."""
    from compiler.recommend.engine import benefit_bound

    waits = {"gpu": [1000.0] * 10}
    demand = {"gpu": 10, "1g.10gb": 7}
    deployed = {"1g.10gb": 7}
    assert benefit_bound(waits, demand, deployed, SLICES, 1) == pytest.approx(1000.0)
    assert _best_benefit(waits, demand, deployed, 1) == pytest.approx(1000.0)
    assert benefit_bound({}, demand, deployed, SLICES, 1) == 0.0
