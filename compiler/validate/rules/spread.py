"""Workload spread (``spec.spread``): a shape the solver can honour on the pools that may serve it.

The solver treats spread as hard constraints (``compiler.solve.milp``); what no layout could ever
satisfy is reported here, at the field, before solving: a spread on a need it cannot apply to, more
nodes or domains than the workload's pools have, and caps that cannot hold its replicas.

Spread is a scheduling constraint, as Kubernetes' ``whenUnsatisfiable: DoNotSchedule`` is: where the
fleet is too small for it (``minNodes`` above the nodes, a cap times the nodes or domains below the
replicas), the solver serves the most replicas the spread allows and the rest stay pending. Under
``unmetDemand: warning`` (the default) those findings are warnings that say how many can be served;
under ``unmetDemand: error`` they stay errors, like any unmet demand. A spread that contradicts
itself whatever the fleet (a percentage under one replica, ``minNodes`` above the replicas, a need
spread cannot apply to) is always an error.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from compiler.diagnostics import Severity
from compiler.model import HOSTNAME_KEY, Share, Spread
from compiler.validate.common import PathT, listing
from compiler.validate.context import (
    Context,
    Obj,
    PoolInfo,
    default_tier,
    isolation,
    spread_applies,
    spread_from_raw,
)
from compiler.validate.registry import needs_fleet, rule

NODE_BY_NODE_NODES = 256  # above this, a per-node spread's node-by-node model is slow (bench/spread.py)


def pool_labels(pool: PoolInfo) -> dict[str, str]:
    """Labels every node of a pool carries: its selector's matchLabels and its ``labels``."""
    raw = pool.raw
    out = {str(k): str(v) for k, v in raw.get("labels", {}).items()}
    selector = raw.get("nodes", {}).get("selector", {}).get("matchLabels", {})
    out.update({str(k): str(v) for k, v in selector.items()})
    return out


@dataclass(frozen=True)
class _Subject:
    """A workload and where its spread comes from: its own ``spec.spread``, or its tier's."""

    w: Obj
    tier: str = ""  # set when the spread is the tier's default

    def report(
        self, ctx: Context, code: str, message: str, field: PathT, key: bool = False, *, fleet: bool = False
    ) -> None:
        """``fleet``: the finding is about the fleet's size, so it follows ``unmetDemand``."""
        if fleet and not strict_unmet(ctx):
            message += (
                "; the replicas it cannot place stay pending (spread is a scheduling constraint; "
                "unmetDemand: error makes this an error)"
            )
        if not self.tier:
            d = self.w.doc.at(code, message, ("spec", "spread", *field), key=key)
        else:
            tiered = "priorityClass" in self.w.spec
            path: PathT = ("spec", "priorityClass") if tiered else ("metadata", "name")
            message += f" (its tier {self.tier}'s spread; set the workload's own spec.spread to override)"
            d = self.w.doc.at(code, message, path)
        ctx.add(replace(d, severity=Severity.WARNING) if fleet and not strict_unmet(ctx) else d)


def strict_unmet(ctx: Context) -> bool:
    """Whether the PartitionPolicy makes unmet demand an error (``unmetDemand: error``)."""
    p = ctx.partition
    return p is not None and p.spec.get("unmetDemand", "warning") == "error"


def _serving_pools(ctx: Context, w: Obj) -> list[PoolInfo] | None:
    """The pools of the workload's cluster it may use and whose GPUs can carry its replicas."""
    spec = w.spec
    cluster = spec.get("cluster", ctx.clusters[0] if len(ctx.clusters) == 1 else None)
    if cluster is None or cluster not in ctx.clusters:
        return None  # workload-placement reports it
    pools = sorted((p for (c, _n), p in ctx.pools.items() if c == cluster), key=lambda p: p.name)
    if "pools" in spec:
        wanted = set(spec["pools"])
        pools = [p for p in pools if p.name in wanted]
    if "gpus" in spec["need"]:
        return [p for p in pools if p.mig or p.sharing_mode == "none"]
    return [p for p in pools if p.mig]


def _usable_nodes(pool: PoolInfo) -> int:
    held = int(pool.raw.get("reserve", {}).get("wholeNodes", 0))
    return max(0, pool.node_count - held)


def _check_kind(ctx: Context, subject: _Subject) -> bool:
    w = subject.w
    need = w.spec["need"]
    if not spread_applies(w.spec):
        what = (
            "a HAMi share"
            if "hami" in need
            else "a time-sliced/MPS share"
            if isolation(w.spec) == "shared"
            else f"{need['gpus']} whole GPUs per replica"
        )
        subject.report(
            ctx,
            "MIGC150",
            f"workload '{w.name}': spread applies to MIG-instance and single-GPU workloads, not to {what}",
            (),
            key=True,
        )
        return False
    return True


def _check_nodes(ctx: Context, subject: _Subject, spread: Spread, pools: list[PoolInfo]) -> None:
    w = subject.w
    replicas = int(w.spec["replicas"])
    nodes = sum(_usable_nodes(p) for p in pools)
    where = f"its pools ({listing(p.name for p in pools)})" if pools else "no pool it may use"
    min_nodes = spread.min_nodes
    if min_nodes > nodes:
        subject.report(
            ctx,
            "MIGC151",
            f"workload '{w.name}': spread.minNodes is {min_nodes}, but {where} have {nodes} node(s) "
            f"that can carry it, so at most {min(nodes, replicas)} of its {replicas} replica(s) can be "
            "served (one a node)",
            ("minNodes",),
            fleet=True,
        )
    elif min_nodes > replicas > 0 and not subject.tier:  # a tier's minNodes: each on its own node
        subject.report(
            ctx,
            "MIGC151",
            f"workload '{w.name}': spread.minNodes is {min_nodes}, more than its {replicas} replica(s)",
            ("minNodes",),
        )
    if spread.max_per_node.is_set and replicas > 0:
        _check_cap(ctx, subject, ("maxPerNode",), spread.max_per_node, replicas, nodes, "node")
    if spread.per_node and nodes > NODE_BY_NODE_NODES:
        subject.report(
            ctx,
            "MIGC156",
            f"workload '{w.name}': its per-node spread makes the solver model {where} node by node, "
            f"{nodes} nodes; expect a slower solve (11 s at 512 nodes in bench/spread.py, 0.05 s "
            "without spread)",
            (),
            key=True,
        )


def _check_cap(
    ctx: Context,
    subject: _Subject,
    path: PathT,
    share: Share,
    replicas: int,
    places: int,
    unit: str,
) -> None:
    """A cap of ``share`` (a count, or a percent of those served) per node/domain, ``places`` of them."""
    w = subject.w
    count, percent = share.count, share.percent
    fleet = True
    if percent and percent * replicas < 100:
        fleet = False  # whatever the fleet: not even one replica fits the percentage
        message = (
            f"{percent}% of its {replicas} replica(s) is less than one replica per {unit}, so no replica "
            "could be served"
        )
    elif percent and percent * places < 100:
        message = (
            f"at most {percent}% per {unit} on {places} {unit}(s) can never place every served replica, "
            "so none of its replicas can be served"
        )
    elif count and count * places < replicas:
        message = (
            f"at most {count} per {unit} on {places} {unit}(s) holds {count * places} of its {replicas} "
            "replicas"
        )
    else:
        return
    code = "MIGC152" if unit == "node" else "MIGC155"
    subject.report(ctx, code, f"workload '{w.name}': {message}", path, fleet=fleet)


def _check_domains(ctx: Context, subject: _Subject, spread: Spread, pools: list[PoolInfo]) -> None:
    w = subject.w
    key = spread.topology_key
    path: PathT = ("topologyKey",)
    carrying = [p for p in pools if key in pool_labels(p)]
    if not carrying:
        keys = sorted({k for p in pools for k in pool_labels(p)})
        if key == HOSTNAME_KEY:
            extra = "; for one domain per node use spread.maxPerNode"
        else:
            extra = f"; they carry {', '.join(keys)}" if keys else "; they carry no labels"
        subject.report(
            ctx,
            "MIGC153",
            f"workload '{w.name}': no node of its pools ({listing(p.name for p in pools)}) carries the "
            f"label {key} (a pool's nodes carry its selector's matchLabels and its labels){extra}",
            path,
        )
        return
    lacking = [p.name for p in pools if p not in carrying]
    if lacking:
        subject.report(
            ctx,
            "MIGC154",
            f"workload '{w.name}': pool(s) {listing(lacking)} do not carry the label {key}; they "
            "will not serve it (the scheduler keeps pods with a topology spread off nodes without "
            "the key)",
            path,
        )
    replicas = int(w.spec["replicas"])
    if replicas > 0:
        domains = len({pool_labels(p)[key] for p in carrying})
        _check_cap(ctx, subject, ("maxPerDomain",), spread.max_per_domain, replicas, domains, "domain")


class _TierSpreads:
    """The tier and tier ``spread`` of workloads that set none, with tenants and tiers looked up by
    name (a scan of every tenant per workload was 0.25 s at 500 tenants and 1,500 workloads)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.tenants: dict[str, Obj] = {}
        for t in ctx.tenants:
            self.tenants.setdefault(t.name, t)  # the first of a duplicate name, as a scan finds it
        self.spreads: dict[str, Spread | None] = {}
        for tier in ctx.tiers:
            self.spreads.setdefault(tier.name, tier.spread)

    def of(self, w: Obj) -> tuple[str, Spread] | None:
        tier = w.spec.get("priorityClass")
        if tier is None:
            tenant = self.tenants.get(w.spec["tenant"])
            if tenant is None:
                return None  # workload-tenant reports it
            tier = tenant.spec["priorityClass"] if "priorityClass" in tenant.spec else default_tier(self.ctx)
        spread = self.spreads.get(tier) if isinstance(tier, str) else None
        return None if spread is None else (str(tier), spread)


@rule(
    "workload-spread",
    codes=("MIGC150", "MIGC151", "MIGC152", "MIGC153", "MIGC154", "MIGC155", "MIGC156"),
    when=needs_fleet,
)
def check_spread(ctx: Context) -> None:
    """A workload's spread applies to its need and can be met on the pools that may serve it."""
    tier_spreads: _TierSpreads | None = None
    for w in ctx.workloads:
        spread = spread_from_raw(w.spec.get("spread"))
        subject = _Subject(w)
        if spread is None:
            if tier_spreads is None:
                tier_spreads = _TierSpreads(ctx)
            from_tier = tier_spreads.of(w) if spread_applies(w.spec) else None
            if from_tier is None:
                continue  # a tier's spread covers only the workloads it can apply to
            subject = _Subject(w, from_tier[0])
            spread = from_tier[1]
        elif not _check_kind(ctx, subject):
            continue
        pools = _serving_pools(ctx, w)
        if pools is None:
            continue  # no cluster: workload-placement reports it
        if spread.topology_key:
            _check_domains(ctx, subject, spread, pools)
            pools = [p for p in pools if spread.topology_key in pool_labels(p)]
        if pools:
            _check_nodes(ctx, subject, spread, pools)
