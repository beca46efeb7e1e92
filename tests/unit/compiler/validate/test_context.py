"""compiler/validate/context.py: what rules read from the Context: pools indexed with their
partitioning resolved, tiers, spread and isolation defaults, and the declared-codes guard."""

from __future__ import annotations

import pytest
from validate_support import context, fleet, partition, workload

from compiler.diagnostics import make
from compiler.model import PartitionPolicy, Share, Spread
from compiler.validate.context import default_tier, isolation, spread_applies, spread_from_raw, tier_names

POOLS = """\
- name: a100
  gpuProduct: NVIDIA-A100-SXM4-80GB
  gpusPerNode: 8
  nodes: {names: [n1, n2]}
  reserve: {wholeGpus: 2, wholeNodes: 1}
- name: l40s
  gpuProduct: NVIDIA-L40S
  gpusPerNode: 4
  nodes: {selector: {matchLabels: {p: l}}, count: 3}
- name: shared
  gpuProduct: NVIDIA-H100-80GB-HBM3
  gpusPerNode: 8
  nodes: {names: [h1]}
  sharing: {mode: hami}
- name: huge
  gpuProduct: NVIDIA-H100-80GB-HBM3
  gpusPerNode: 8
  nodes: {names: [h2]}
  reserve: {wholeNodes: 5}
"""


def test_pools_are_indexed_with_their_partitioning() -> None:
    ctx = context(fleet(POOLS))
    a100, l40s, shared, huge = ctx.pool_list
    assert (a100.partitioning, a100.mig, a100.total_gpus, a100.partitionable_gpus()) == ("mig", True, 16, 6)
    assert (l40s.partitioning, l40s.mig, l40s.node_count, l40s.total_gpus) == ("none", False, 3, 12)
    assert (shared.partitioning, shared.mig, shared.sharing_mode) == ("none", False, "hami")  # HAMi's GPUs
    assert huge.partitionable_gpus() == 8  # an impossible reserve (MIGC112) does not cascade
    assert ctx.pools[("c", "l40s")] is l40s and ctx.clusters == ["c"]
    assert a100.path == ("spec", "clusters", 0, "nodePools", 0)


def test_tiers_are_the_policys_or_the_defaults() -> None:
    ctx = context(fleet())
    assert tier_names(ctx) == [t.name for t in PartitionPolicy().tiers]
    ctx = context(
        fleet(),
        partition(
            "priorityTiers:\n  - {name: gold, value: 9}\n  - {name: tin, value: 1}\n"
            "  - {name: lead, value: 1}"
        ),
    )
    assert tier_names(ctx) == ["gold", "tin", "lead"]
    assert default_tier(ctx) == "lead"  # the lowest value, ties by name


def test_a_rule_may_add_only_the_codes_it_declares() -> None:
    ctx = context(fleet())
    ctx.allowed_codes, ctx.running = frozenset({"MIGC100"}), "pool-hardware"
    ctx.add(make("MIGC100", "ok"))
    with pytest.raises(
        ValueError, match="validation rule pool-hardware reported MIGC101, which it does not declare"
    ):
        ctx.add(make("MIGC101", "not mine"))
    assert [d.code for d in ctx.diags] == ["MIGC100"]


def test_spread_from_raw_reads_counts_and_percentages() -> None:
    assert spread_from_raw(None) is None
    assert spread_from_raw(
        {"minNodes": 2, "maxPerNode": "50%", "topologyKey": "zone", "maxPerDomain": 3}
    ) == Spread(
        min_nodes=2, max_per_node=Share(percent=50), topology_key="zone", max_per_domain=Share(count=3)
    )


@pytest.mark.parametrize(
    ("spec", "iso", "applies"),
    [
        ({"need": {"profile": "1g.10gb"}}, "hardware", True),
        ({"need": {"gpus": 1}}, "exclusive", True),
        ({"need": {"gpus": 2}}, "exclusive", False),  # spread covers single-GPU replicas only
        ({"need": {"hami": {"memory": "1Gi"}}}, "shared", False),
        ({"need": {"gpus": 1}, "isolation": "shared"}, "shared", False),
    ],
)
def test_isolation_defaults_from_the_need(spec: dict[str, object], iso: str, applies: bool) -> None:
    assert (isolation(spec), spread_applies(spec)) == (iso, applies)


def test_obj_names_and_locates_its_document() -> None:
    ctx = context(fleet(), workload("w"))
    (w,) = ctx.workloads
    assert w.name == "w" and w.spec["tenant"] == "t"
    span = w.span(("spec", "tenant"))
    assert (span.file, span.path) == ("f1.yaml", "$.spec.tenant") and (span.line, span.col) == (
        5,
        11,
    )  # the value of "  tenant: t"
    assert w.where() == "f1.yaml:3"
