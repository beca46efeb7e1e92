"""Workload spread (issue 14): the solver honours it exactly, the plan shows it and warns.

The held-out case: on two H100 nodes, 18 critical inference slices all landed on one node (one
node's maintenance removed all of them); with ``spread`` they are split. Small cases are checked
against an exhaustive search over every per-node layout, which also proves the spread answer is
still optimal on the levels (served per tier, then GPUs).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
import subprocess
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from test_solve_support import CLUSTER, as_current, policy, pool, profile_need, served, workload

from compiler.catalog import load_catalog
from compiler.catalog.layouts import enumerate_layouts
from compiler.cli import main
from compiler.model import (
    CurrentState,
    GpuLayout,
    NodePool,
    Objective,
    PartitionPolicy,
    Policy,
    Share,
    Spread,
    Target,
    Workload,
)
from compiler.pipeline import load_and_validate
from compiler.render import render
from compiler.solve import solve
from compiler.solve.result import Solution

CAT = load_catalog()
TWO_NODE = Path(__file__).parent / "data" / "spread" / "two-node"


def _two_node() -> Policy:
    pol, diags = load_and_validate([TWO_NODE])
    assert pol is not None, diags
    return pol


def _without_spread(pol: Policy) -> Policy:
    plain = tuple(dataclasses.replace(w, spread=None) for w in pol.workloads)
    return dataclasses.replace(pol, workloads=plain)


def _instances(sol: Solution, profile: str) -> dict[str, int]:
    """Instances of ``profile`` per node of the solution's layouts."""
    return {n.name: sum(g.counts().get(profile, 0) for g in n.gpus) for p in sol.pools for n in p.nodes}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _per_node(sol: Solution, name: str) -> dict[str, int]:
    return {node: c for p in sol.pools for w, node, c in p.spread if w == name}


def test_two_node_held_out_case_is_split_and_plan_shows_it(capsys: pytest.CaptureFixture[str]) -> None:
    pol = _two_node()
    plain = solve(_without_spread(pol), CAT)
    # the reported behaviour: every inference slice on one node
    assert min(_instances(plain, "1g.10gb").values()) == 0
    sol = solve(pol, CAT)
    assert served(sol, "inference") == 18 and served(sol, "notebooks") == 4
    per_node = _per_node(sol, "inference")
    assert per_node == {"h100-a": 9, "h100-b": 9}
    carried = _instances(sol, "1g.10gb")
    assert all(per_node[n] <= carried[n] for n in per_node)  # the layouts really carry them
    # spreading costs no GPU here: both answers use the 5 GPUs the demand needs
    assert sum(p.gpus_used for p in sol.pools) == sum(p.gpus_used for p in plain.pools) == 5
    assert not [d for d in sol.diagnostics if d.code.startswith("MIGC20")]

    code, out, err = _run(capsys, "plan", str(TWO_NODE), "--from-scratch")
    assert code == 0, err
    assert "edge/inference (maxPerNode 50%): 18 of 18 served; per node h100-a 9, h100-b 9" in out
    assert "MIGC256" not in err  # maxUnavailable 1: one node down takes 9, what one node may hold
    _code, md, _err = _run(capsys, "plan", str(TWO_NODE), "--from-scratch", "-o", "markdown")
    assert "| edge | inference | maxPerNode 50% | 18 of 18 served; per node h100-a 9, h100-b 9 |" in md
    _code, js, _err = _run(capsys, "plan", str(TWO_NODE), "--from-scratch", "-o", "json")
    row = json.loads(js)["spread"][0]
    assert row["perNode"] == [
        {"pool": "h100", "node": "h100-a", "replicas": 9},
        {"pool": "h100", "node": "h100-b", "replicas": 9},
    ]
    assert row["maintenanceWaves"] == [{"pool": "h100", "maxUnavailable": 1, "replicas": 9}]


def test_plan_warns_when_a_maintenance_wave_takes_more_than_one_node_may_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy_dir = tmp_path / "p"
    shutil.copytree(TWO_NODE, policy_dir)
    fleet = policy_dir / "fleet.yaml"
    fleet.write_text(fleet.read_text().replace("maxUnavailable: 1", "maxUnavailable: 2"))
    code, _out, err = _run(capsys, "plan", str(policy_dir), "--from-scratch")
    assert code == 0, err
    assert (
        "MIGC256 warning: workload inference (cluster edge): pool h100's maxUnavailable 2 lets one "
        "maintenance wave take down nodes holding 18 of its 18 served replicas; its spread "
        "(maxPerNode 50%) lets one node hold 9"
    ) in err


def test_compile_then_check_is_a_fixpoint_with_spread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "out"
    code, _out, err = _run(capsys, "compile", str(TWO_NODE), "--out", str(out_dir))
    assert code == 0, err
    code, _out, err = _run(capsys, "compile", str(TWO_NODE), "--out", str(out_dir), "--check")
    assert code == 0, err


def test_resolve_against_own_result_keeps_every_node() -> None:
    """Solved again from its own layouts (per-node kept variables), nothing changes."""
    pol = _two_node()
    first = solve(pol, CAT)
    again = solve(pol, CAT, as_current(first))
    assert not [n.name for p in again.pools for n in p.nodes if n.changed]
    assert _per_node(again, "inference") == {"h100-a": 9, "h100-b": 9}


def test_greedy_fallback_says_it_does_not_enforce_spread() -> None:
    pol = _two_node()
    sol = solve(pol, CAT, method="greedy")
    codes = [(d.code, d.message) for d in sol.diagnostics if d.code == "MIGC206"]
    assert codes == [
        (
            "MIGC206",
            "workload inference (cluster edge): pool(s) h100 were laid out by the greedy fallback, which "
            "does not enforce spread (maxPerNode 50%); its replicas may not be spread as asked",
        )
    ]
    # and it indeed did not comply: first-fit put every slice on one node
    assert min(_instances(sol, "1g.10gb").values()) == 0
    assert not [d for d in solve(pol, CAT).diagnostics if d.code == "MIGC206"]


def test_spread_that_costs_replicas_is_reported() -> None:
    """A critical 4g.24gb takes one of two single-GPU A30 nodes; a low workload asking for two
    nodes can then hold one replica (every replica on its own node while fewer than minNodes are
    served), where four would fit without the spread."""
    pools = [pool("a30", "A30-24GB", nodes=2, gpus_per_node=1)]
    big = workload("big", profile_need("4g.24gb"), 1, tier="critical", tenant_name="t0")
    small = dataclasses.replace(
        workload("small", profile_need("1g.6gb"), 4, tier="low"), spread=Spread(min_nodes=2)
    )
    sol = solve(policy(pools, [big, small]), CAT)
    assert served(sol, "big") == 1 and served(sol, "small") == 1
    found = [d.message for d in sol.diagnostics if d.code == "MIGC205"]
    assert found == [
        "workload small (cluster c1): its spread (minNodes 2) holds 1 of its 4 replicas; without the "
        "spread the fleet would serve 4"
    ]


def test_max_per_domain_splits_over_zones() -> None:
    east = dataclasses.replace(pool("east", nodes=1), labels=(("topology.kubernetes.io/zone", "east"),))
    west = dataclasses.replace(
        pool("west", nodes=1), node_selector=(("topology.kubernetes.io/zone", "west"),)
    )
    lab = pool("lab", nodes=1)  # no zone label: never serves the zoned workload
    w = dataclasses.replace(
        workload("zoned", profile_need("1g.10gb"), 8),
        spread=Spread(topology_key="topology.kubernetes.io/zone", max_per_domain=Share(percent=50)),
    )
    sol = solve(policy([east, west, lab], [w]), CAT)
    per_pool = {p.pool: sum(d.served for d in p.demand if d.workload == "zoned") for p in sol.pools}
    assert per_pool == {"east": 4, "lab": 0, "west": 4}
    plain = solve(policy([east, west, lab], [dataclasses.replace(w, spread=None)]), CAT)
    assert sorted(sum(d.served for d in p.demand) for p in plain.pools) == [0, 0, 8]


# -- exhaustive search on small cases ----------------------------------------------------------


def _best_spread(avail: Sequence[int], replicas: int, spread: Spread) -> int:
    """Most replicas placeable with ``avail[j]`` instances on node j, under the spread."""
    for s in range(min(replicas, sum(avail)), 0, -1):
        cap = spread.max_per_node.cap(s) if spread.max_per_node.is_set else s
        fits = sum(min(a, cap) for a in avail) >= s
        if spread.min_nodes > 1:
            fits = fits and sum(1 for a in avail if min(a, cap) > 0) >= min(spread.min_nodes, s)
        if fits:
            return s
    return 0


def _oracle(p: NodePool, w: Workload, v: Workload) -> tuple[int, int, int]:
    """(W served, V served, GPUs) lexicographically best over every layout of every GPU of every node:
    W (higher tier, with spread) first, then V, then fewest MIG GPUs."""
    model = CAT.get(p.gpu_model)
    assert model is not None and w.spread is not None
    options = [GpuLayout.whole(), *enumerate_layouts(model)]
    per_node = list(itertools.combinations_with_replacement(options, p.gpus_per_node))
    wq, vq = w.need.profiles[0], v.need.profiles[0]
    best = (-1, -1, 0)
    for combo in itertools.product(per_node, repeat=len(p.node_names)):
        avail = [sum(g.counts().get(wq, 0) for g in node) for node in combo]
        v_inst = sum(g.counts().get(vq, 0) for node in combo for g in node)
        gpus = sum(1 for node in combo for g in node if g.mig_enabled)
        key = (_best_spread(avail, w.replicas, w.spread), min(v.replicas, v_inst), -gpus)
        best = max(best, key)
    return best[0], best[1], -best[2]


CASES = [
    # (nodes, GPUs per node, W replicas, W spread, V replicas)
    (2, 2, 6, Spread(max_per_node=Share(count=2)), 3),
    (2, 2, 7, Spread(max_per_node=Share(percent=50)), 2),
    (3, 1, 5, Spread(max_per_node=Share(percent=40)), 2),
    (3, 1, 3, Spread(min_nodes=3), 3),
    (2, 2, 8, Spread(min_nodes=2, max_per_node=Share(count=5)), 4),
    (3, 1, 4, Spread(min_nodes=2, max_per_node=Share(percent=60)), 1),
]


@pytest.mark.parametrize(("nodes", "gpn", "replicas", "spread", "other"), CASES)
def test_spread_is_honoured_and_optimal_against_exhaustive_search(
    nodes: int, gpn: int, replicas: int, spread: Spread, other: int
) -> None:
    p = pool("a30", "A30-24GB", nodes=nodes, gpus_per_node=gpn)
    w = dataclasses.replace(
        workload("w", profile_need("1g.6gb"), replicas, tier="critical", tenant_name="t0"), spread=spread
    )
    v = workload("v", profile_need("2g.12gb"), other, tier="low")
    sol = solve(policy([p], [w, v]), CAT)
    got = (served(sol, "w"), served(sol, "v"), sum(r.gpus_used for r in sol.pools))
    assert got == _oracle(p, w, v)
    # the answer itself respects the spread, on instances its layouts really carry
    per_node = _per_node(sol, "w")
    carried = _instances(sol, "1g.6gb")
    assert sum(per_node.values()) == got[0]
    assert all(c <= carried[n] for n, c in per_node.items())
    if spread.max_per_node.is_set:
        assert max(per_node.values(), default=0) <= spread.max_per_node.cap(got[0])
    if spread.min_nodes:
        assert len([c for c in per_node.values() if c]) >= min(spread.min_nodes, got[0])


def test_bench_spread_rows_on_four_nodes() -> None:
    """bench/spread.py's row for 4 nodes: spread costs no GPU there and caps every node at 50%."""
    from bench.spread import rows

    without, with_spread = rows([4])
    assert with_spread[1] == "with (minNodes 2, maxPerNode 50%)"
    assert with_spread[2] == without[2]  # GPUs used
    served = int(with_spread[3].split("/")[0])
    assert served == int(with_spread[3].split("/")[1])
    assert 0 < int(with_spread[5]) <= served // 2
    assert without[5] == "-" and int(without[6]) > served // 2  # without spread one node carries most


def _oracle_with_current(
    p: NodePool, w: Workload, v: Workload, current: dict[str, tuple[GpuLayout, ...]], gpus_first: bool
) -> tuple[int, int, int, int, int]:
    """As ``_oracle``, then, in the objective order, fewest GPUs and the disruption levels against
    ``current``: most nodes left exactly as deployed, then fewest GPUs changed (per node, deployed
    GPUs whose layout the node no longer carries)."""
    model = CAT.get(p.gpu_model)
    assert model is not None and w.spread is not None
    options = [GpuLayout.whole(), *enumerate_layouts(model)]
    per_node = list(itertools.combinations_with_replacement(options, p.gpus_per_node))
    wq, vq = w.need.profiles[0], v.need.profiles[0]
    best: tuple[int, int, int, int, int] | None = None
    for combo in itertools.product(per_node, repeat=len(p.node_names)):
        avail = [sum(g.counts().get(wq, 0) for g in node) for node in combo]
        v_inst = sum(g.counts().get(vq, 0) for node in combo for g in node)
        gpus = sum(1 for node in combo for g in node if g.mig_enabled)
        kept = changed = 0
        for name, node in zip(p.node_names, combo, strict=True):
            cur, new = Counter(current[name]), Counter(node)
            kept += cur == new
            changed += sum(max(0, c - new[lay]) for lay, c in cur.items())
        head = (_best_spread(avail, w.replicas, w.spread), min(v.replicas, v_inst))
        key = (*head, -gpus, kept, -changed) if gpus_first else (*head, kept, -changed, -gpus)
        best = key if best is None else max(best, key)
    assert best is not None
    if gpus_first:
        return best[0], best[1], -best[2], best[3], -best[4]
    return best[0], best[1], -best[4], best[2], -best[3]


A30 = {
    "4g": GpuLayout.of({"4g.24gb": 1}),
    "1g": GpuLayout.of({"1g.6gb": 4}),
    "2g": GpuLayout.of({"2g.12gb": 2}),
    "mix": GpuLayout.of({"1g.6gb": 2, "2g.12gb": 1}),
    "whole": GpuLayout.whole(),
}
CURRENT_CASES = [
    # (W replicas, W spread, V replicas, deployed layouts of node 0 and node 1)
    (4, Spread(max_per_node=Share(count=2)), 2, (("1g", "1g"), ("whole", "whole"))),
    (6, Spread(max_per_node=Share(percent=50)), 1, (("1g", "2g"), ("mix", "4g"))),
    (3, Spread(min_nodes=2), 2, (("2g", "2g"), ("1g", "whole"))),
    (5, Spread(min_nodes=2, max_per_node=Share(count=4)), 3, (("mix", "mix"), ("1g", "2g"))),
]


@pytest.mark.slow
@pytest.mark.parametrize("order", [("disruption", "gpus"), ("gpus", "disruption")])
@pytest.mark.parametrize(("replicas", "spread", "other", "deployed"), CURRENT_CASES)
def test_spread_with_deployed_state_is_optimal_on_disruption_against_exhaustive_search(
    replicas: int,
    spread: Spread,
    other: int,
    deployed: tuple[tuple[str, str], ...],
    order: tuple[Objective, ...],
) -> None:
    """The node-by-node model's GPU, kept-node and changed-GPU levels against brute force, in both
    objective orders (the default puts disruption first)."""
    p = pool("a30", "A30-24GB", nodes=2, gpus_per_node=2)
    w = dataclasses.replace(
        workload("w", profile_need("1g.6gb"), replicas, tier="critical", tenant_name="t0"), spread=spread
    )
    v = workload("v", profile_need("2g.12gb"), other, tier="low")
    current = {name: tuple(A30[k] for k in lays) for name, lays in zip(p.node_names, deployed, strict=True)}
    state = CurrentState(nodes=tuple(((CLUSTER, "a30", n), lay) for n, lay in sorted(current.items())))
    sol = solve(policy([p], [w, v], partition=PartitionPolicy(objective=order)), CAT, state)
    nodes = [n for r in sol.pools for n in r.nodes]
    got = (
        served(sol, "w"),
        served(sol, "v"),
        sum(r.gpus_used for r in sol.pools),
        sum(1 for n in nodes if not n.changed),
        sum(len(n.changed_gpus) for n in nodes),
    )
    assert got == _oracle_with_current(p, w, v, current, gpus_first=order[0] == "gpus")
    per_node = _per_node(sol, "w")
    carried = _instances(sol, "1g.6gb")
    assert sum(per_node.values()) == got[0]
    assert all(c <= carried[n] for n, c in per_node.items())


def test_tier_spread_is_the_default_of_its_workloads(tmp_path: Path) -> None:
    """The two-node case with the spread on the critical tier instead of the workload."""
    policy_dir = tmp_path / "p"
    shutil.copytree(TWO_NODE, policy_dir)
    workloads = policy_dir / "workloads.yaml"
    workloads.write_text(workloads.read_text().replace('  spread:\n    maxPerNode: "50%"\n', ""))
    (policy_dir / "partition.yaml").write_text(
        "apiVersion: migc.dev/v1alpha1\nkind: PartitionPolicy\nmetadata: {name: default}\nspec:\n"
        "  priorityTiers:\n"
        '    - {name: critical, value: 1000000, spread: {maxPerNode: "50%"}}\n'
        "    - {name: low, value: 1000}\n"
    )
    pol, diags = load_and_validate([policy_dir])
    assert pol is not None and not diags
    spreads = {w.name: w.spread for w in pol.workloads}
    assert spreads == {"inference": Spread(max_per_node=Share(percent=50)), "notebooks": None}
    assert _per_node(solve(pol, CAT), "inference") == {"h100-a": 9, "h100-b": 9}


_APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: inference, namespace: serving}
spec:
  selector: {matchLabels: {app: inference}}
  template:
    metadata: {labels: {app: inference}}
    spec:
      containers:
      - {name: main, image: app}
"""


def test_the_target_patch_asks_the_scheduler_to_spread_the_pods(tmp_path: Path) -> None:
    pol = _two_node()
    target = Target("apps/v1", "Deployment", "inference", "serving", "main")
    pol = dataclasses.replace(
        pol,
        workloads=tuple(
            dataclasses.replace(w, target=target) if w.name == "inference" else w for w in pol.workloads
        ),
    )
    files = render(pol, solve(pol, CAT), CAT, source_label="x")
    patch = yaml.safe_load(files["edge/patches/serving/deployment-inference-main.yaml"])
    pod = patch["spec"]["template"]
    assert pod["metadata"]["labels"] == {"migc.dev/workload": "inference"}
    # a preference: DoNotSchedule would count nodes without the MIG resource as empty domains
    assert pod["spec"]["topologySpreadConstraints"] == [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"migc.dev/workload": "inference"}},
        }
    ]
    notebooks = [p for p in files if "notebooks" in p]
    assert not notebooks  # no target, no patch; and a workload without spread gets no constraint
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return
    out = tmp_path / "out"
    for rel, data in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    app = tmp_path / "app"
    app.mkdir()
    (app / "deploy.yaml").write_text(_APP)
    (app / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [deploy.yaml]\n"
        "components: [../out/edge/patches/serving]\n"
    )
    done = subprocess.run([kubectl, "kustomize", str(app)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    deploy = yaml.safe_load(done.stdout)
    template = deploy["spec"]["template"]
    assert template["metadata"]["labels"] == {"app": "inference", "migc.dev/workload": "inference"}
    assert template["spec"]["topologySpreadConstraints"][0]["topologyKey"] == "kubernetes.io/hostname"
    kubernetes_validate.validate(deploy, "1.31.0", strict=True)


def _unsatisfiable(tmp_path: Path, unmet: str | None) -> Path:
    """The two-node case with a cap of 6 per node for 18 replicas: the fleet holds 12 of them."""
    policy_dir = tmp_path / f"p-{unmet}"
    shutil.copytree(TWO_NODE, policy_dir)
    workloads = policy_dir / "workloads.yaml"
    workloads.write_text(workloads.read_text().replace('maxPerNode: "50%"', "maxPerNode: 6"))
    if unmet is not None:
        (policy_dir / "partition.yaml").write_text(
            "apiVersion: migc.dev/v1alpha1\nkind: PartitionPolicy\nmetadata: {name: default}\n"
            f"spec:\n  unmetDemand: {unmet}\n"
        )
    return policy_dir


@pytest.mark.parametrize("unmet", [None, "warning"])
def test_an_unsatisfiable_spread_serves_what_it_allows_and_warns_at_the_spread(
    tmp_path: Path, unmet: str | None
) -> None:
    """Issue 26: spread is a scheduling constraint (DoNotSchedule): 6 per node on 2 nodes serves
    12 of 18 replicas, the other 6 stay pending; a warning at spread.maxPerNode says so."""
    pol, diags = load_and_validate([_unsatisfiable(tmp_path, unmet)])
    assert pol is not None
    (d,) = [d for d in diags if d.code == "MIGC152"]
    assert str(d.severity) == "warning" and d.file.endswith("workloads.yaml")
    assert (d.path, d.line, d.col) == ("$.spec.spread.maxPerNode", 11, 17)
    assert "holds 12 of its 18 replicas" in d.message and "stay pending" in d.message
    assert _per_node(solve(pol, CAT), "inference") == {"h100-a": 6, "h100-b": 6}
    assert main(["compile", str(tmp_path / f"p-{unmet}"), "--out", str(tmp_path / "out")]) == 0


def test_an_unsatisfiable_spread_is_an_error_under_unmet_demand_error(tmp_path: Path) -> None:
    pol, diags = load_and_validate([_unsatisfiable(tmp_path, "error")])
    assert pol is None
    (d,) = [d for d in diags if d.code == "MIGC152"]
    assert str(d.severity) == "error" and "stay pending" not in d.message
