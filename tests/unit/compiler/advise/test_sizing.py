"""compiler/advise/sizing.py: the one-model policy each sizing row solves, and a row's counts on a
demand small enough to count by hand.

The policy is tests/test_render_support.py's cluster ``east``: ``bert`` (search, hardware isolation,
1g.10gb) and ``notebooks`` (research, shared, 6 replicas of one GPU); its l40s pool time-slices x4.
"""

from __future__ import annotations

from dataclasses import replace

from test_render_support import policy

from compiler.advise.sizing import MAIN_POOL, SHARED_POOL, size_cluster, size_model, synthetic_policy
from compiler.catalog import load_catalog
from compiler.model import Need, PartitionPolicy, Policy, Quota

CATALOG = load_catalog()
A100 = CATALOG.get("A100-SXM4-80GB")
L40S = CATALOG.get("L40S")


def _policy(bert_replicas: int = 8) -> Policy:
    p = policy()
    workloads = tuple(replace(w, replicas=bert_replicas) if w.name == "bert" else w for w in p.workloads)
    return replace(p, workloads=workloads)


def test_on_a_mig_model_isolated_work_goes_to_one_mig_pool_and_shared_work_beside_it() -> None:
    assert A100 is not None
    p = _policy()
    synthetic, per_node = synthetic_policy(p, CATALOG, p.clusters[0], A100)
    assert per_node == 8  # the A100 pool's nodes
    pools = {x.name: x for x in synthetic.clusters[0].pools}
    assert sorted(pools) == [MAIN_POOL, SHARED_POOL]
    main, shared = pools[MAIN_POOL], pools[SHARED_POOL]
    assert main.mig and main.gpu_model == "A100-SXM4-80GB"
    assert main.total_gpus == 16  # one GPU per isolated replica (8) plus one spare node of 8
    assert not shared.mig and (shared.sharing.mode, shared.sharing.replicas) == ("time-slicing", 4)
    assert shared.total_gpus == 16  # ceil(6 / 4) = 2 GPUs plus a spare node: 10 GPUs -> 2 nodes of 8
    by_name = {w.name: w for w in synthetic.workloads}
    assert by_name["bert"].pools == (MAIN_POOL,) and by_name["bert"].need == Need(profiles=("1g.10gb",))
    assert by_name["notebooks"].pools == (SHARED_POOL,)
    # the demand is sized, not the policy: no quotas, no pricing, no rules
    assert all(t.guaranteed == Quota() and t.burst == Quota() for t in synthetic.tenants)
    assert synthetic.partition.pricing == () and synthetic.partition.rules == ()


def test_on_a_model_without_mig_an_isolated_replica_takes_a_whole_gpu() -> None:
    assert L40S is not None
    p = _policy()
    synthetic, per_node = synthetic_policy(p, CATALOG, p.clusters[0], L40S)
    assert per_node == 4  # the cluster's L40S pool has 4 GPUs per node
    main = next(x for x in synthetic.clusters[0].pools if x.name == MAIN_POOL)
    assert not main.mig
    bert = next(w for w in synthetic.workloads if w.name == "bert")
    # 1g.10gb (10 GB) fits the L40S's 48 GB: one exclusive whole GPU per replica
    assert bert.need == Need(gpus=1) and bert.isolation == "exclusive"


def test_a_row_counts_the_optimum_the_baselines_and_the_savings() -> None:
    assert A100 is not None
    p = _policy(bert_replicas=12)
    row = size_model(p, CATALOG, p.clusters[0], A100, 3.5, time_limit_s=10)
    # 12 x 1g.10gb: an A100-80GB holds at most 7 -> 2 GPUs; 6 notebooks at 4 per GPU -> 2 GPUs
    assert (row.gpus, row.replicas_served, row.replicas_wanted, row.complete) == (4, 18, 18, True)
    assert row.nodes == 2  # one node of the MIG pool, one of the shared pool
    # all-balanced A100 (2 x 1g.10gb + 2g.20gb + 3g.40gb: 4 slots for a 1g.10gb) -> 3 GPUs, + 2 shared
    assert row.balanced_gpus == 5
    assert row.whole_gpus == 18  # one GPU per pod
    assert row.cost_per_hour == 14.0
    assert row.balanced_saving_per_hour == 3.5 and row.whole_saving_per_hour == 49.0


def test_no_priced_model_is_no_sizing_and_a_note() -> None:
    p = replace(_policy(), partition=PartitionPolicy())
    sizing = size_cluster(p, CATALOG, p.clusters[0])
    assert sizing.rows == () and [f.code for f in sizing.findings] == ["MIGC523"]


def test_the_cheapest_complete_row_is_first_and_cited() -> None:
    p = replace(_policy(), partition=PartitionPolicy(pricing=(("L40S", 1.0), ("A100-SXM4-80GB", 3.5))))
    told: list[str] = []
    sizing = size_cluster(p, CATALOG, p.clusters[0], time_limit_s=10, progress=told.append)
    assert len(told) == 2 and told[0].startswith("sizing cluster east on L40S (1 of 2")
    # L40S: 8 whole GPUs for bert + 2 time-sliced = 10 GPUs at $1 = $10/h;
    # A100: 2 MIG GPUs + 2 shared = 4 GPUs at $3.50 = $14/h
    assert [(r.gpu_model, r.gpus, r.cost_per_hour) for r in sizing.rows] == [
        ("L40S", 10, 10.0),
        ("A100-SXM4-80GB", 4, 14.0),
    ]
    codes = [f.code for f in sizing.findings]
    assert codes == ["MIGC501", "MIGC520", "MIGC522"]  # L40S has no MIG for bert's isolated replicas
    assert sizing.findings[1].message.startswith("cheapest: 10 x L40S (3 node(s) of 4) at $10.00/h")
