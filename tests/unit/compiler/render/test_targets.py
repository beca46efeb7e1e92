"""compiler/render/targets.py: the patches that make a target's pods request what the solution
reserved. tests/test_hami_targets.py runs ``kubectl kustomize`` on them; here, the objects."""

from __future__ import annotations

from dataclasses import replace

from test_render_support import default_solution, policy

from compiler.model import Policy, Share, Spread, Target, Workload
from compiler.render.targets import (
    QUEUE_LABEL,
    WORKLOAD_LABEL,
    resolved_resources,
    spread_constraints,
    strategic_patch,
    target_diagnostics,
    target_files,
)
from compiler.solve.result import ServedDemand, Solution

DEPLOY = Target("apps/v1", "Deployment", "bert", "search")


def _bert(target: Target = DEPLOY, spread: Spread | None = None) -> Workload:
    bert = next(w for w in policy().workloads if w.name == "bert")
    return replace(bert, target=target, spread=spread)


def _with(*workloads: Workload) -> Policy:
    names = {w.name for w in workloads}
    pol = policy()
    return replace(pol, workloads=(*workloads, *(w for w in pol.workloads if w.name not in names)))


def _served(*rows: ServedDemand) -> Solution:
    base = default_solution()
    return Solution(pools=tuple(replace(p, demand=rows) if p.pool == "a100" else p for p in base.pools))


def test_the_most_served_resource_is_requested_and_the_rest_reported() -> None:
    sol = _served(
        ServedDemand("search", "bert", "2g.20gb", 8, 3, "high"),
        ServedDemand("search", "bert", "1g.10gb", 8, 5, "high"),
    )
    assert resolved_resources(_bert(), sol) == ({"nvidia.com/mig-1g.10gb": "1"}, ["2g.20gb"])
    assert resolved_resources(_bert(), _served()) == ({}, [])  # nothing served


def test_a_strategic_patch_sets_priority_limits_and_queue() -> None:
    bert = _bert(target=replace(DEPLOY, container="server"))
    patch = strategic_patch(bert, {"nvidia.com/mig-1g.10gb": "1"}, {}, with_kueue=True)
    assert patch["metadata"] == {"name": "bert", "namespace": "search", "labels": {QUEUE_LABEL: "migc"}}
    assert patch["spec"]["template"] == {
        "metadata": {"labels": {QUEUE_LABEL: "migc"}},
        "spec": {
            "priorityClassName": "migc-high",
            "containers": [{"name": "server", "resources": {"limits": {"nvidia.com/mig-1g.10gb": "1"}}}],
        },
    }
    cron = replace(bert, target=replace(DEPLOY, kind="CronJob", api_version="batch/v1"))
    assert "jobTemplate" in strategic_patch(cron, {}, {}, with_kueue=False)["spec"]


def test_spread_constraints_prefer_one_entry_per_key() -> None:
    assert spread_constraints(_bert()) == []
    both = _bert(
        spread=Spread(max_per_node=Share(count=2), topology_key="zone", max_per_domain=Share(count=4))
    )
    constraints = spread_constraints(both)
    assert [c["topologyKey"] for c in constraints] == ["kubernetes.io/hostname", "zone"]
    assert all(c["whenUnsatisfiable"] == "ScheduleAnyway" and c["maxSkew"] == 1 for c in constraints)
    assert constraints[0]["labelSelector"] == {"matchLabels": {WORKLOAD_LABEL: "bert"}}
    domain_only = _bert(spread=Spread(topology_key="zone", max_per_domain=Share(count=4)))
    assert [c["topologyKey"] for c in spread_constraints(domain_only)] == ["zone"]


def test_without_a_container_the_first_containers_limits_come_from_replacements() -> None:
    pol = _with(_bert())
    sol = _served(ServedDemand("search", "bert", "1g.10gb", 8, 8, "high"))
    files, diags = target_files(pol, pol.clusters[0], sol, with_kueue=False)
    assert diags == []
    assert sorted(files) == [
        "patches/search/deployment-bert-limits.yaml",
        "patches/search/deployment-bert.yaml",
        "patches/search/kustomization.yaml",
    ]
    limits = files["patches/search/deployment-bert-limits.yaml"]
    assert isinstance(limits, dict)
    assert limits["limits"] == {"nvidia.com/mig-1g.10gb": "1"}
    assert limits["metadata"]["annotations"] == {"config.kubernetes.io/local-config": "true"}
    component = files["patches/search/kustomization.yaml"]
    assert isinstance(component, dict)
    assert component["resources"] == ["deployment-bert-limits.yaml"]
    (replacement,) = component["replacements"]
    (target,) = replacement["targets"]
    # keys with dots or slashes go in brackets (kyaml's path splitter)
    assert target["fieldPaths"] == [
        "spec.template.spec.containers.0.resources.limits.[nvidia.com/mig-1g.10gb]"
    ]
    assert target["select"] == {
        "group": "apps",
        "version": "v1",
        "kind": "Deployment",
        "name": "bert",
        "namespace": "search",
    }
    assert target["options"] == {"create": True}


def test_unserved_and_split_targets_are_diagnosed() -> None:
    pol = _with(_bert())
    (unserved,) = target_diagnostics(pol, _served())
    assert unserved.code == "MIGC318" and "no patch for Deployment search/bert" in unserved.message
    split = _served(
        ServedDemand("search", "bert", "1g.10gb", 8, 5, "high"),
        ServedDemand("search", "bert", "2g.20gb", 8, 3, "high"),
    )
    (note,) = target_diagnostics(pol, split)
    assert note.code == "MIGC317"
    assert note.message == (
        "workload bert is served by nvidia.com/mig-1g.10gb, 2g.20gb; its patch requests "
        "nvidia.com/mig-1g.10gb, the most served"
    )
